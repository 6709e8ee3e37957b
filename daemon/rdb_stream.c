// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdb_stream: streams in Redis 8.8's RDB form (RDB_TYPE_STREAM_LISTPACKS_5),
 * and every older stream form read.
 *
 * Each node becomes the listpack Redis keeps per radix-tree node, under its
 * 16-byte big-endian master ID:
 *   live, deleted, master field count, master fields ..., 0,
 *   then per entry: flags, ms - master.ms, seq - master.seq,
 *   [field count, field, value ...] or (SAMEFIELDS) value ..., element count.
 * Then the counters, the groups (name, last ID, entries read, the PEL with
 * delivery times and counts, the consumers with their times and PEL IDs,
 * the IDs of NACKed entries) and IDMP (settings, producers, counters).
 */
#include <errno.h>
#include <string.h>

#include "mem.h"
#include "rdb.h"
#include "t_stream.h"
#include "t_stream_cg.h"

enum {
	RDB_TYPE_STREAM_LISTPACKS = 15,
	RDB_TYPE_STREAM_LISTPACKS_2 = 19,
	RDB_TYPE_STREAM_LISTPACKS_3 = 21,
	RDB_TYPE_STREAM_LISTPACKS_4 = 26,
	RDB_TYPE_STREAM_LISTPACKS_5 = 27,
};

bool rdb_stream_type(uint8_t t)
{
	return t == RDB_TYPE_STREAM_LISTPACKS || t == RDB_TYPE_STREAM_LISTPACKS_2 ||
	       t == RDB_TYPE_STREAM_LISTPACKS_3 || t == RDB_TYPE_STREAM_LISTPACKS_4 ||
	       t == RDB_TYPE_STREAM_LISTPACKS_5;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void put_raw_id(struct rdb_buf *b, const struct stream_id *id)
{
	unsigned char k[16];

	put_be64(k, id->ms);
	put_be64(k + 8, id->seq);
	rdb_buf_put(b, k, sizeof(k));
}

/* ---- saving ---- */

struct save_ctx {
	struct rdb_buf *out;
	bool compress, open;
	struct stream_id master;
	struct rdb_lp lp;
};

static void save_flush(struct save_ctx *x)
{
	if (x->open)
		rdb_lp_save(&x->lp, x->out, x->compress);
	x->open = false;
}

static void save_node(void *ctx, const struct stream_id *master, uint64_t live, uint64_t deleted,
		      uint64_t nmaster, const char *const *mf, const size_t *mflen)
{
	struct save_ctx *x = ctx;
	unsigned char k[16];

	save_flush(x);
	put_be64(k, master->ms);
	put_be64(k + 8, master->seq);
	rdb_save_string(x->out, k, sizeof(k), false);
	x->master = *master;
	rdb_lp_init(&x->lp);
	x->open = true;
	rdb_lp_int(&x->lp, (int64_t)live);
	rdb_lp_int(&x->lp, (int64_t)deleted);
	rdb_lp_int(&x->lp, (int64_t)nmaster);
	for (uint64_t i = 0; i < nmaster; i++)
		rdb_lp_str(&x->lp, mf[i], mflen[i]);
	rdb_lp_int(&x->lp, 0);
}

static void save_item(void *ctx, unsigned flags, struct stream_entry *e)
{
	struct save_ctx *x = ctx;
	bool same = flags & STREAM_ITEM_SAMEFIELDS;
	uint64_t nf = e->nfields;
	const char *f, *v;
	size_t flen, vlen;

	rdb_lp_int(&x->lp, (int64_t)flags);
	rdb_lp_int(&x->lp, (int64_t)(e->id.ms - x->master.ms));
	rdb_lp_int(&x->lp, (int64_t)(e->id.seq - x->master.seq));
	if (!same)
		rdb_lp_int(&x->lp, (int64_t)nf);
	while (stream_entry_next(e, &f, &flen, &v, &vlen)) {
		if (!same)
			rdb_lp_str(&x->lp, f, flen);
		rdb_lp_str(&x->lp, v, vlen);
	}
	rdb_lp_int(&x->lp, (int64_t)(same ? nf + 3 : 2 * nf + 4));
}

static void save_id(struct rdb_buf *b, const struct stream_id *id)
{
	rdb_save_len(b, id->ms);
	rdb_save_len(b, id->seq);
}

static void save_pel(struct rdb_buf *b, const struct stream_pel *pel, bool nacks)
{
	rdb_save_len(b, pel->n);
	for (size_t i = 0; i < pel->n; i++) {
		put_raw_id(b, &pel->v[i]->id);
		if (!nacks)
			continue;
		rdb_put_le(b, (uint64_t)pel->v[i]->delivery_time, 8);
		rdb_save_len(b, pel->v[i]->delivery_count);
	}
}

/* compat: Redis 7.0's form (STREAM_LISTPACKS_2): no active time, no NACK
 * zone (those entries stay in the group's PEL, owned by no consumer). */
static void save_group(struct rdb_buf *b, const struct stream_group *g, bool compat)
{
	size_t nacked = 0;

	rdb_save_string(b, g->name, g->len, false);
	save_id(b, &g->last_id);
	rdb_save_len(b, (uint64_t)g->entries_read);
	save_pel(b, &g->pel, true);
	rdb_save_len(b, g->nconsumers);
	for (size_t i = 0; i < g->nconsumers; i++) {
		const struct stream_consumer *c = g->consumers[i];

		rdb_save_string(b, c->name, c->len, false);
		rdb_put_le(b, (uint64_t)c->seen_time, 8);
		if (!compat)
			rdb_put_le(b, (uint64_t)c->active_time, 8);
		save_pel(b, &c->pel, false);
	}
	if (compat)
		return;
	/* The NACK zone, in its order. */
	nacked = stream_group_nacked(g);
	rdb_save_len(b, nacked);
	for (const struct stream_nack *n = g->time_head; nacked--; n = n->next)
		put_raw_id(b, &n->id);
}

struct idmp_save {
	struct rdb_buf *b;
	bool compress;
};

static void save_producer(void *ctx, const char *pid, size_t plen, size_t n,
			  const struct stream_id *const *ids, const char *const *iids,
			  const size_t *ilens)
{
	struct idmp_save *x = ctx;

	rdb_save_string(x->b, pid, plen, x->compress);
	rdb_save_len(x->b, n);
	for (size_t i = 0; i < n; i++) {
		rdb_save_string(x->b, iids[i], ilens[i], x->compress);
		save_id(x->b, ids[i]);
	}
}

static void count_producer(void *ctx, const char *pid, size_t plen, size_t n,
			   const struct stream_id *const *ids, const char *const *iids,
			   const size_t *ilens)
{
	(void)pid, (void)plen, (void)n, (void)ids, (void)iids, (void)ilens;
	(*(size_t *)ctx)++;
}

void rdb_save_stream(struct rdb_buf *b, const struct obj *o, bool compress)
{
	struct save_ctx x = { .out = b, .compress = compress };
	struct stream_id id;
	struct stream_group **g;
	struct stream_idmp_info im;
	struct idmp_save is = { b, compress };
	size_t ng, np = 0;
	int64_t now = now_ms();

	/* For a replica that may be Redis 7.0 (rdb_save_compat): type 19, which
	 * every Redis since 7.0 reads; it has no idempotency records. */
	rdb_put_byte(b,
		     rdb_save_compat ? RDB_TYPE_STREAM_LISTPACKS_2 : RDB_TYPE_STREAM_LISTPACKS_5);
	rdb_save_len(b, stream_node_count(o));
	stream_walk_nodes(o, save_node, save_item, &x);
	save_flush(&x);
	rdb_save_len(b, stream_len(o));
	id = stream_last_id(o);
	save_id(b, &id);
	id = stream_first_id(o);
	save_id(b, &id);
	id = stream_max_deleted(o);
	save_id(b, &id);
	rdb_save_len(b, stream_entries_added(o));
	g = stream_groups(o, &ng);
	rdb_save_len(b, ng);
	for (size_t i = 0; i < ng; i++)
		save_group(b, g[i], rdb_save_compat);
	if (rdb_save_compat)
		return;
	stream_idmp_info(o, &im);
	rdb_save_len(b, im.duration);
	rdb_save_len(b, im.maxsize);
	stream_idmp_walk(o, now, count_producer, &np);
	rdb_save_len(b, np);
	stream_idmp_walk(o, now, save_producer, &is);
	rdb_save_len(b, im.added);
	rdb_save_len(b, im.duplicates);
}

/* ---- loading ---- */

static int load_raw_id(struct rdb_reader *r, struct stream_id *id)
{
	if (rdb_need(r, 16))
		return -EINVAL;
	id->ms = get_be64(r->p + r->off);
	id->seq = get_be64(r->p + r->off + 8);
	r->off += 16;
	return 0;
}

static int load_id(struct rdb_reader *r, struct stream_id *id)
{
	return rdb_read_len(r, &id->ms) || rdb_read_len(r, &id->seq) ? -EINVAL : 0;
}

/* The next listpack element as an integer. */
static int lp_next_int(struct rdb_pack *k, int64_t *v)
{
	struct rdb_ent e;

	if (rdb_pack_next(k, &e) != 1)
		return -EINVAL;
	if (!e.is_int) {
		long long ll;

		if (!str_to_ll(e.s, e.len, &ll))
			return -EINVAL;
		*v = ll;
		return 0;
	}
	*v = e.v;
	return 0;
}

/* The next element's bytes, copied into a fresh buffer. */
static int lp_next_str(struct rdb_pack *k, char **p, size_t *len)
{
	struct rdb_ent e;
	const char *s;

	if (rdb_pack_next(k, &e) != 1)
		return -EINVAL;
	s = rdb_ent_str(&e, len);
	*p = xmalloc(*len + 1);
	memcpy(*p, s, *len);
	return 0;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xfree(v[i]);
}

/* One node's listpack into o. */
static int load_node(struct obj *o, const struct stream_id *master, const char *lp, size_t len)
{
	struct rdb_pack k;
	int64_t live, deleted, nmaster, flags, dms, dseq, nf, cnt;
	char **mf = NULL, **f = NULL, **v = NULL;
	size_t *mflen = NULL, *flen = NULL, *vlen = NULL, cap = 0;
	int rc = -EINVAL;
	int64_t seen = 0;

	if (rdb_pack_open(&k, lp, len, false) || lp_next_int(&k, &live) ||
	    lp_next_int(&k, &deleted) || lp_next_int(&k, &nmaster) || live <= 0 || deleted < 0 ||
	    nmaster <= 0 || nmaster > (int64_t)len)
		return -EINVAL;
	mf = xcalloc((size_t)nmaster, sizeof(*mf));
	mflen = xcalloc((size_t)nmaster, sizeof(*mflen));
	for (int64_t i = 0; i < nmaster; i++)
		if (lp_next_str(&k, &mf[i], &mflen[i]))
			goto out;
	if (lp_next_int(&k, &cnt) || cnt != 0)
		goto out;
	if (stream_load_node(o, master, (const char *const *)mf, mflen, (uint64_t)nmaster))
		goto out;
	for (;;) {
		struct rdb_ent e;
		struct stream_id id;
		bool same;
		int r = rdb_pack_next(&k, &e);
		size_t n = 0;

		if (r == 0)
			break;
		if (r < 0)
			goto out;
		flags = e.is_int ? e.v : -1;
		if (flags < 0 || flags > 3 || lp_next_int(&k, &dms) || lp_next_int(&k, &dseq))
			goto out;
		same = flags & STREAM_ITEM_SAMEFIELDS;
		if (same) {
			nf = nmaster;
		} else if (lp_next_int(&k, &nf) || nf <= 0 || nf > (int64_t)len) {
			goto out;
		}
		if ((size_t)nf > cap) {
			cap = (size_t)nf;
			f = xrealloc(f, cap * sizeof(*f));
			v = xrealloc(v, cap * sizeof(*v));
			flen = xrealloc(flen, cap * sizeof(*flen));
			vlen = xrealloc(vlen, cap * sizeof(*vlen));
		}
		for (; n < (size_t)nf; n++) {
			if (same) {
				f[n] = xmalloc(mflen[n] + 1);
				memcpy(f[n], mf[n], mflen[n]);
				flen[n] = mflen[n];
			} else if (lp_next_str(&k, &f[n], &flen[n])) {
				break;
			}
			if (lp_next_str(&k, &v[n], &vlen[n])) {
				xfree(f[n]);
				break;
			}
		}
		if (n < (size_t)nf || lp_next_int(&k, &cnt)) {
			free_strs(f, n);
			free_strs(v, n);
			goto out;
		}
		id.ms = master->ms + (uint64_t)dms;
		id.seq = master->seq + (uint64_t)dseq;
		r = stream_load_entry(o, &id, flags & STREAM_ITEM_DELETED, (const char *const *)f,
				      flen, (const char *const *)v, vlen, (uint64_t)nf);
		free_strs(f, n);
		free_strs(v, n);
		if (r)
			goto out;
		seen += !(flags & STREAM_ITEM_DELETED);
	}
	rc = seen == live ? 0 : -EINVAL;
out:
	free_strs(mf, (size_t)nmaster);
	xfree(mf);
	xfree(mflen);
	xfree(f);
	xfree(v);
	xfree(flen);
	xfree(vlen);
	return rc;
}

static int load_group(struct rdb_reader *r, uint8_t t, struct obj *o)
{
	char *name;
	size_t len;
	struct stream_id last;
	uint64_t er = (uint64_t)-1, n;
	struct stream_group *g;

	if (rdb_read_string(r, &name, &len))
		return -EINVAL;
	if (load_id(r, &last) || (t >= RDB_TYPE_STREAM_LISTPACKS_2 && rdb_read_len(r, &er))) {
		xfree(name);
		return -EINVAL;
	}
	if (t < RDB_TYPE_STREAM_LISTPACKS_2)
		er = (uint64_t)stream_estimate_read(o, &last);
	g = stream_group_create(o, name, len, &last, (long long)er);
	xfree(name);
	if (!g || rdb_read_len(r, &n))
		return -EINVAL;
	while (n--) {
		struct stream_id id;
		uint64_t when, count;
		struct stream_nack *k;

		if (load_raw_id(r, &id) || rdb_read_le(r, 8, &when) || rdb_read_len(r, &count) ||
		    stream_pel_find(&g->pel, &id, NULL))
			return -EINVAL;
		k = stream_nack_add(g, NULL, &id, (int64_t)when);
		k->delivery_count = count;
	}
	if (rdb_read_len(r, &n))
		return -EINVAL;
	while (n--) {
		struct stream_consumer *c;
		uint64_t seen, active, m;

		if (rdb_read_string(r, &name, &len))
			return -EINVAL;
		c = stream_consumer_create(g, name, len, 0);
		xfree(name);
		if (!c || rdb_read_le(r, 8, &seen))
			return -EINVAL;
		active = seen;
		if (t >= RDB_TYPE_STREAM_LISTPACKS_3 && rdb_read_le(r, 8, &active))
			return -EINVAL;
		c->seen_time = (int64_t)seen;
		c->active_time = (int64_t)active;
		if (rdb_read_len(r, &m))
			return -EINVAL;
		while (m--) {
			struct stream_id id;
			struct stream_nack *k;

			if (load_raw_id(r, &id) || !(k = stream_pel_find(&g->pel, &id, NULL)) ||
			    k->consumer)
				return -EINVAL;
			stream_nack_assign(k, c);
		}
	}
	if (t >= RDB_TYPE_STREAM_LISTPACKS_5) {
		if (rdb_read_len(r, &n))
			return -EINVAL;
		while (n--) {
			struct stream_id id;
			struct stream_nack *k;

			if (load_raw_id(r, &id) || !(k = stream_pel_find(&g->pel, &id, NULL)) ||
			    k->consumer)
				return -EINVAL;
			stream_nack_release(g, k);
		}
	}
	return 0;
}

static int load_idmp(struct rdb_reader *r, struct obj *o)
{
	uint64_t duration, maxsize, np, added, dups;
	int64_t horizon;

	if (rdb_read_len(r, &duration) || rdb_read_len(r, &maxsize) || rdb_read_len(r, &np))
		return -EINVAL;
	/* Redis's CONFIG_STREAM_IDMP_* ranges. */
	if (duration < 1 || duration > 86400 || maxsize < 1 || maxsize > 10000)
		return -EINVAL;
	stream_idmp_load(o, duration, maxsize, 0, 0);
	horizon = now_ms() - (int64_t)duration * 1000;
	while (np--) {
		char *pid;
		size_t plen;
		uint64_t n;

		if (rdb_read_string(r, &pid, &plen))
			return -EINVAL;
		if (rdb_read_len(r, &n)) {
			xfree(pid);
			return -EINVAL;
		}
		while (n--) {
			char *iid;
			size_t ilen;
			struct stream_id id;

			if (rdb_read_string(r, &iid, &ilen)) {
				xfree(pid);
				return -EINVAL;
			}
			if (load_id(r, &id)) {
				xfree(iid);
				xfree(pid);
				return -EINVAL;
			}
			if ((int64_t)id.ms > horizon)
				stream_idmp_insert(o, pid, plen, iid, ilen, &id);
			xfree(iid);
		}
		xfree(pid);
	}
	if (rdb_read_len(r, &added) || rdb_read_len(r, &dups))
		return -EINVAL;
	stream_idmp_load(o, duration, maxsize, added, dups);
	return 0;
}

int rdb_load_stream(struct rdb_reader *r, uint8_t t, struct obj *out)
{
	struct obj o = stream_new();
	uint64_t nodes, length, added, ng;
	struct stream_id last, first = { 0, 0 }, maxdel = { 0, 0 };

	if (rdb_read_len(&*r, &nodes))
		goto bad;
	while (nodes--) {
		char *key, *lp;
		size_t klen, lplen;
		struct stream_id master;
		int rc;

		if (rdb_read_string(r, &key, &klen))
			goto bad;
		if (klen != 16) {
			xfree(key);
			goto bad;
		}
		master.ms = get_be64((const unsigned char *)key);
		master.seq = get_be64((const unsigned char *)key + 8);
		xfree(key);
		if (rdb_read_string(r, &lp, &lplen))
			goto bad;
		rc = load_node(&o, &master, lp, lplen);
		xfree(lp);
		if (rc)
			goto bad;
	}
	if (rdb_read_len(r, &length) || load_id(r, &last))
		goto bad;
	added = length;
	if (t >= RDB_TYPE_STREAM_LISTPACKS_2) {
		if (load_id(r, &first) || load_id(r, &maxdel) || rdb_read_len(r, &added))
			goto bad;
	}
	if (stream_load_done(&o, length, &last, &first, &maxdel, added))
		goto bad;
	if (t < RDB_TYPE_STREAM_LISTPACKS_2) {
		stream_first(&o, &first);
		stream_load_done(&o, length, &last, &first, &maxdel, added);
	}
	if (rdb_read_len(r, &ng))
		goto bad;
	while (ng--)
		if (load_group(r, t, &o))
			goto bad;
	if (t >= RDB_TYPE_STREAM_LISTPACKS_4 && load_idmp(r, &o))
		goto bad;
	*out = o;
	return 0;
bad:
	obj_free(&o);
	return -EINVAL;
}
