// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdb_vset: vector sets in Redis 8's RDB form, the record of its
 * "vectorset" module type (RDB_TYPE_MODULE_2, encoding version 0), so a
 * file written by Redis 8.8 loads here and ours load there. The graph is
 * saved, node by node with its links by id, and loaded back as it was.
 *
 * Body, each value behind a module opcode (2: unsigned, 5: string; 0 ends):
 *   dim, count, quant | M << 8 (and ours, which Redis ignores: the metric
 *   << 24 and the front end's EF_CONSTRUCTION << 32), flags (1: projection,
 *   2: attributes),
 *   [projection: input dim, the matrix as one string],
 *   per node: name, [attributes or ""], vector bytes, nparams, params:
 *     id, level | 1 << 24, per level: nlinks, max links, ids..., worst,
 *     then range << 32 | l2 (float bits).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "rdb.h"
#include "t_vset.h"

#define RDB_TYPE_MODULE_2 7 /* module value, opcodes between values */
#define OP_EOF 0
#define OP_UINT 2
#define OP_STRING 5
#define FLAG_PROJ 1
#define FLAG_ATTRS 2

/* The 64-bit id of module type "vectorset", encoding version 0. */
static uint64_t module_id(void)
{
	static const char set[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *name = "vectorset";
	uint64_t id = 0;

	for (int i = 0; i < 9; i++)
		id = (id << 6) | (uint64_t)(strchr(set, name[i]) - set);
	return id << 10;
}

static void put_uint(struct rdb_buf *b, uint64_t v)
{
	rdb_save_len(b, OP_UINT);
	rdb_save_len(b, v);
}

static void put_str(struct rdb_buf *b, const void *p, size_t len)
{
	rdb_save_len(b, OP_STRING);
	rdb_save_string(b, p, len, false);
}

static size_t raw_bytes(const struct vhnsw *h)
{
	return h->quant == VHNSW_Q8 ? h->dim : vhnsw_vec_bytes(h);
}

void rdb_save_vset(struct rdb_buf *b, const struct obj *o)
{
	struct vset *v = vset_of(o);
	struct vhnsw *h = v->h;

	rdb_put_byte(b, RDB_TYPE_MODULE_2);
	rdb_save_len(b, module_id());
	vhnsw_read_lock(h);
	put_uint(b, h->dim);
	put_uint(b, h->count);
	put_uint(b, (h->quant & 0xff) | ((h->m & 0xffff) << 8) | ((uint32_t)h->metric << 24) |
			    (v->ef_build != 200 ? (uint64_t)v->ef_build << 32 : 0));
	put_uint(b, (v->proj ? FLAG_PROJ : 0) | (v->nattrs ? FLAG_ATTRS : 0));
	if (v->proj) {
		put_uint(b, v->proj_in);
		put_str(b, v->proj, sizeof(float) * v->proj_in * h->dim);
	}
	for (struct vhnsw_node *n = h->head; n; n = n->next) {
		const struct vset_elem *e = n->value;
		uint32_t l2, range, np = 3;

		put_str(b, e->name, e->len);
		if (v->nattrs)
			put_str(b, e->attr ? e->attr : "", e->attr ? e->alen : 0);
		put_str(b, n->vec, raw_bytes(h));
		for (uint32_t l = 0; l <= n->level; l++)
			np += 3 + n->nlinks[l];
		put_uint(b, np);
		put_uint(b, n->id);
		put_uint(b, (n->level & 0xff) | (1u << 24));
		for (uint32_t l = 0; l <= n->level; l++) {
			uint32_t worst = 0, bits;
			float wd = 0;

			put_uint(b, n->nlinks[l]);
			put_uint(b, vhnsw_cap(h, l));
			for (uint32_t i = 0; i < n->nlinks[l]; i++) {
				float d = vhnsw_distance(h, n, n->links[l][i]);

				put_uint(b, n->links[l][i]->id);
				if (d > wd) {
					wd = d;
					worst = i;
				}
			}
			memcpy(&bits, &wd, 4);
			put_uint(b, ((uint64_t)bits << 32) | worst);
		}
		memcpy(&l2, &n->l2, 4);
		memcpy(&range, &n->range, 4);
		put_uint(b, ((uint64_t)range << 32) | l2);
	}
	vhnsw_unlock(h);
	rdb_save_len(b, OP_EOF);
}

static int get_uint(struct rdb_reader *r, uint64_t *v)
{
	uint64_t op;

	if (rdb_read_len(r, &op) || op != OP_UINT)
		return -EINVAL;
	return rdb_read_len(r, v);
}

static int get_str(struct rdb_reader *r, char **p, size_t *len)
{
	uint64_t op;

	if (rdb_read_len(r, &op) || op != OP_STRING)
		return -EINVAL;
	return rdb_read_string(r, p, len);
}

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct vhnsw_node *const *)a)->id, y = (*(struct vhnsw_node *const *)b)->id;

	return x < y ? -1 : x > y;
}

static struct vhnsw_node *by_id(struct vhnsw_node **s, uint64_t n, uint64_t id)
{
	uint64_t a = 0, b = n;

	while (a < b) {
		uint64_t m = (a + b) / 2;

		if (s[m]->id < id)
			a = m + 1;
		else
			b = m;
	}
	return a < n && s[a]->id == id ? s[a] : NULL;
}

/* Links are kept as ids in the link arrays until every node is in. */
static int load_nodes(struct rdb_reader *r, struct vset *v, uint64_t count, bool attrs)
{
	struct vhnsw *h = v->h;
	size_t vb = vhnsw_vec_bytes(h);
	uint64_t *vec = xcalloc(1, vb);

	for (uint64_t k = 0; k < count; k++) {
		char *name = NULL, *attr = NULL, *raw = NULL;
		size_t nlen, alen = 0, rlen;
		uint64_t np, id, lv, x, idx = 0, *params = NULL;
		struct vset_elem *e;
		struct vhnsw_node *n;
		float l2, range;
		uint32_t bits;

		if (get_str(r, &name, &nlen) || (attrs && get_str(r, &attr, &alen)) ||
		    get_str(r, &raw, &rlen) || rlen != raw_bytes(h) || get_uint(r, &np) || np < 3 ||
		    np > 1u << 20 || vset_find(v, name, nlen))
			goto bad;
		params = xmalloc(np * sizeof(*params));
		for (uint64_t i = 0; i < np; i++)
			if (get_uint(r, &params[i]))
				goto bad;
		id = params[idx++];
		lv = params[idx++];
		if ((lv >> 24) > 1 || (lv & 0xff) > VHNSW_MAX_LEVEL)
			goto bad;
		memcpy(vec, raw, rlen);
		x = params[np - 1];
		bits = (uint32_t)x;
		memcpy(&l2, &bits, 4);
		bits = (uint32_t)(x >> 32);
		memcpy(&range, &bits, 4);
		e = vset_elem_add(v, name, nlen);
		if (alen) {
			e->attr = attr;
			e->alen = alen;
			attr = NULL;
			v->nattrs++;
		}
		n = vhnsw_load_node(h, vec, l2, range, id, (uint32_t)(lv & 0xff), e);
		e->node = n;
		for (uint32_t l = 0; l <= n->level; l++) {
			uint64_t nl;

			if (idx + 2 > np - 1)
				goto bad;
			nl = params[idx];
			idx += 2;
			if (idx + nl + ((lv >> 24) ? 1 : 0) > np - 1)
				goto bad;
			for (uint64_t i = 0; i < nl; i++, idx++)
				if (n->nlinks[l] < vhnsw_cap(h, l))
					n->links[l][n->nlinks[l]++] =
						(struct vhnsw_node *)(uintptr_t)params[idx];
			if (lv >> 24)
				idx++;
		}
		xfree(params);
		xfree(name);
		xfree(raw);
		xfree(attr);
		continue;
	bad:
		xfree(params);
		xfree(name);
		xfree(raw);
		xfree(attr);
		xfree(vec);
		return -EINVAL;
	}
	xfree(vec);
	return 0;
}

/* Ids to pointers; a link to no node, or at a level the node lacks, is a
 * corrupt file. */
static int resolve(struct vhnsw *h)
{
	struct vhnsw_node **s = xmalloc((h->count ? h->count : 1) * sizeof(*s));
	uint64_t n = 0;
	int rc = 0;

	for (struct vhnsw_node *x = h->head; x; x = x->next)
		s[n++] = x;
	qsort(s, n, sizeof(*s), id_cmp);
	for (struct vhnsw_node *x = h->head; x && !rc; x = x->next)
		for (uint32_t l = 0; l <= x->level && !rc; l++)
			for (uint32_t i = 0; i < x->nlinks[l]; i++) {
				struct vhnsw_node *t =
					by_id(s, n, (uint64_t)(uintptr_t)x->links[l][i]);

				if (!t || t == x || t->level < l) {
					rc = -EINVAL;
					/* Leave no id behind for the free path. */
					for (struct vhnsw_node *y = h->head; y; y = y->next)
						memset(y->nlinks, 0,
						       (y->level + 1) * sizeof(uint32_t));
					break;
				}
				x->links[l][i] = t;
			}
	xfree(s);
	return rc;
}

int rdb_load_vset(struct rdb_reader *r, struct obj *out)
{
	uint64_t id, dim, count, conf, flags, pin = 0, op;
	struct obj o;
	struct vset *v;
	bool ok;

	if (rdb_read_len(r, &id) || id != module_id())
		return -EINVAL;
	if (get_uint(r, &dim) || get_uint(r, &count) || get_uint(r, &conf) || get_uint(r, &flags))
		return -EINVAL;
	if (!dim || dim > VSET_MAX_DIM || (conf & 0xff) > VHNSW_BIN ||
	    ((conf >> 24) & 0xff) > VHNSW_IP)
		return -EINVAL;
	o = vset_new((uint32_t)dim, (enum vhnsw_quant)(conf & 0xff),
		     (enum vhnsw_metric)((conf >> 24) & 0xff),
		     (conf >> 8) & 0xffff ? (uint32_t)((conf >> 8) & 0xffff) : VHNSW_DEFAULT_M,
		     &ok);
	if (!ok)
		return -EINVAL;
	v = vset_of(&o);
	if (conf >> 32)
		v->ef_build = (uint32_t)(conf >> 32);
	if (flags & FLAG_PROJ) {
		char *m;
		size_t len;

		if (get_uint(r, &pin) || !pin || pin > VSET_MAX_DIM || pin < dim ||
		    get_str(r, &m, &len))
			goto bad;
		if (len != sizeof(float) * pin * dim) {
			xfree(m);
			goto bad;
		}
		v->proj = (float *)m;
		v->proj_in = (uint32_t)pin;
	}
	if (load_nodes(r, v, count, flags & FLAG_ATTRS) || resolve(v->h) || rdb_read_len(r, &op) ||
	    op != OP_EOF)
		goto bad;
	*out = o;
	return 0;
bad:
	obj_free(&o);
	return -EINVAL;
}
