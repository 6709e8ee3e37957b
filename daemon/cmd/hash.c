// SPDX-License-Identifier: BSD-3-Clause
/*
 * The hash family: field reads and writes, counters, HSCAN and HRANDFIELD as
 * in Redis 7.0; field expiry (HEXPIRE and friends, HTTL and friends, HPERSIST)
 * as in Redis 7.4; HGETDEL, HGETEX and HSETEX as in Redis 8.0.
 *
 * Lazy field expiry as Redis 8.8's, command by command: HGET, HMGET, HEXISTS,
 * HSTRLEN, HSETNX, HINCRBY(FLOAT), HGETDEL, HGETEX and HSETEX reclaim the
 * fields they name that are past their deadlines, and only those, before they
 * read the hash (lookup_named); the key goes when that leaves it empty.
 * HRANDFIELD reclaims every due field (lookup). HGETALL, HKEYS, HVALS, HSCAN,
 * HTTL and HPERSIST skip expired fields without reclaiming them; HSET, HDEL
 * and HEXPIRE treat them as present (HSET overwrites one as an update, HDEL
 * counts it); HLEN, like INFO keysizes, counts them until reclaimed. Handlers run
 * with the key's shard locked (see commands.h), so the entry stays valid until
 * they return unless they delete it themselves.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "notify.h"
#include "mem.h"
#include "propagate.h"
#include "t_hash.h"
#include "util.h"

/* The largest deadline the field-expiry commands accept: Redis's
 * HFE_MAX_ABS_TIME_MSEC, 2^46 - 1 ms (the year 4199). */
#define HFE_MAX_MS ((1ll << 46) - 1)

#define ERR_FIELDS_MISSING "Mandatory argument FIELDS is missing or not at the right position"
#define ERR_NUMFIELDS "Number of fields must be a positive integer"
#define ERR_NUMFIELDS_MATCH "The `numfields` parameter must match the number of arguments"
#define ERR_ONE_EXPIRY "Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"

/* Adds field a to l when subkey notifications want the fields (want). */
static void note(struct field_list *l, bool want, const struct arg *a)
{
	if (want)
		field_list_push(l, a->p, a->len);
}

/* The event for the hash at argv[1] with the fields in l, then frees l. */
static void notify_hash(struct client *c, const char *event, struct field_list *l)
{
	notify_keyspace_fields(NOTIFY_HASH, event, c->argv[1].p, c->argv[1].len, c->db, l);
	field_list_free(l);
}

/*
 * Lazily expired fields in the order Redis reports them: Redis expires the
 * fields a command names, one by one in argument order, so the ones named
 * come first in that order (the rest, which xkvd reclaims at once, after).
 * Bounded: a huge hash keeps the order it expired in.
 */
static void order_as_argv(const struct client *c, struct field_list *l)
{
	uint32_t at = 0;

	if ((uint64_t)l->n * (uint64_t)c->argc > 1u << 20)
		return;
	for (int i = 2; i < c->argc && at < l->n; i++) {
		for (uint32_t j = at; j < l->n; j++) {
			struct field_ref t = l->v[j];

			if (t.len != c->argv[i].len || memcmp(t.p, c->argv[i].p, t.len))
				continue;
			memmove(&l->v[at + 1], &l->v[at], (j - at) * sizeof(t));
			l->v[at++] = t;
			break;
		}
	}
}

/* Which fields a lookup reclaims: n of them from argv[first], step apart
 * (step 2 for field/value pairs); n < 0 for every due field. */
struct named {
	int first, step, n;
};

#define NAMED_ALL ((struct named){ 0, 0, -1 })
#define NAMED_NONE ((struct named){ 0, 0, 0 })

/* True if hf is not past its deadline (or DEBUG SET-ALLOW-ACCESS-EXPIRED
 * shows expired fields): for the commands that skip expired fields without
 * reclaiming them, as Redis's do. */
static bool field_live(const struct hash_field *hf, int64_t now)
{
	return hf->expire == HASH_NO_EXPIRE || hf->expire >= now ||
	       __atomic_load_n(&store_allow_access_expired, __ATOMIC_RELAXED);
}

/* Reclaims the fields nm names whose deadlines have passed; their names go to
 * names (argv outlives it). Returns how many. */
static uint64_t expire_named(struct client *c, struct obj *o, struct named nm,
			     struct field_list *names)
{
	int64_t now = store_now();
	uint64_t gone = 0;

	for (int i = 0; i < nm.n; i++) {
		const struct arg *f = &c->argv[nm.first + i * nm.step];
		struct hash_field hf;

		if (!hash_get(o, f->p, f->len, &hf) || hf.expire == HASH_NO_EXPIRE ||
		    hf.expire >= now)
			continue;
		hash_delete(o, f->p, f->len);
		if (names)
			field_list_push(names, f->p, f->len);
		gone++;
	}
	return gone;
}

static uint64_t reclaim(struct client *c, struct entry *e, struct named nm,
			struct field_list *names)
{
	if (__atomic_load_n(&store_allow_access_expired, __ATOMIC_RELAXED))
		return 0;
	if (nm.n < 0) {
		uint64_t gone = hash_expire_due(&e->val, store_now(), names);

		if (gone && names)
			order_as_argv(c, names);
		return gone;
	}
	return expire_named(c, &e->val, nm, names);
}

/*
 * Where a command's "FIELDS numfields field ..." list is, from argv[from] on,
 * for the reclaim that comes before its arguments are parsed: none (n = 0)
 * if it is not well formed; the parse that follows says why.
 */
static struct named fields_named(const struct client *c, int from, int step)
{
	for (int i = from; i + 1 < c->argc; i++) {
		long long n;

		if (strcasecmp(c->argv[i].p, "fields"))
			continue;
		if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &n) || n <= 0 ||
		    n > (c->argc - i - 2) / step)
			break;
		return (struct named){ i + 2, step, (int)n };
	}
	return (struct named){ 0, 0, 0 };
}

/*
 * Finds the hash at argv[1] and reclaims the expired fields nm names. Returns
 * false after replying WRONGTYPE; otherwise *out is the entry, or NULL if the
 * key is missing or has just lost its last field.
 */
static bool lookup_named(struct client *c, bool read, struct named nm, struct entry **out)
{
	struct entry *e = read ? key_find_read(c, 1) : key_find(c, 1);
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list names = { 0 };
	uint64_t gone;

	*out = NULL;
	if (!e)
		return true;
	if (!entry_is(c, e, OBJ_HASH))
		return false;
	gone = nm.n ? reclaim(c, e, nm, want ? &names : NULL) : 0;
	if (gone) {
		db_count_expired_fields(c->db, e, gone);
		/* As Redis's lazy field expiry, field by field: "hexpired" while
		 * fields remain, "del" for the one whose expiry empties the hash
		 * (so a lone last field gives only "del"). */
		if (!hash_len(&e->val) && names.n) {
			struct field_ref *last = &names.v[--names.n];

			if (last->owned)
				xfree((void *)last->p);
		}
		if (gone > 1 || hash_len(&e->val))
			notify_hash(c, "hexpired", &names);
		field_list_free(&names);
		if (!hash_len(&e->val)) {
			db_delete(c->db, e);
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
			return true;
		}
		db_changed(c->db, e);
	}
	*out = e;
	return true;
}

/* lookup_named() reclaiming every due field: for the whole-hash readers. */
static bool lookup(struct client *c, bool read, struct entry **out)
{
	return lookup_named(c, read, NAMED_ALL, out);
}

/* The fields of one command: argv[2] (and every step-th after it). */
static struct named fields_from(const struct client *c, int step, bool all)
{
	return (struct named){ 2, step, all ? (c->argc - 2) / step : 1 };
}

/*
 * lookup() for HSETEX, which may set fields next: as Redis's HSETEX, a hash
 * emptied by the expiry of its fields reports them "hexpired", not "del";
 * the key goes (quietly) and HSETEX makes a new one if it sets anything.
 */
static bool lookup_for_set(struct client *c, struct named nm, struct entry **out)
{
	struct entry *e = key_find(c, 1);
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list names = { 0 };
	uint64_t gone;

	*out = NULL;
	if (!e)
		return true;
	if (!entry_is(c, e, OBJ_HASH))
		return false;
	gone = reclaim(c, e, nm, want ? &names : NULL);
	if (gone) {
		db_count_expired_fields(c->db, e, gone);
		notify_hash(c, "hexpired", &names);
		if (!hash_len(&e->val)) {
			db_delete(c->db, e);
			return true;
		}
		db_changed(c->db, e);
	}
	*out = e;
	return true;
}

/* Adds the hash at argv[1], which must be absent. */
static struct entry *create(struct client *c)
{
	return db_add(c->db, c->argv[1].p, c->argv[1].len, hash_new());
}

/* After an in-place change: an emptied hash is deleted, as Redis does. Then
 * Redis's events: ev1 with the fields l1, ev2 with l2 (either event may be
 * NULL; both lists are freed), and "del" for a deleted key. */
static void changed(struct client *c, struct entry *e, const char *ev1, struct field_list *l1,
		    const char *ev2, struct field_list *l2)
{
	bool empty = !hash_len(&e->val);

	if (empty)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	if (ev1)
		notify_hash(c, ev1, l1);
	if (ev2)
		notify_hash(c, ev2, l2);
	field_list_free(l1);
	field_list_free(l2);
	if (empty)
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
}

static bool field_get(const struct entry *e, const struct arg *f, struct hash_field *hf)
{
	return e && hash_get(&e->val, f->p, f->len, hf);
}

/* The value of field argv[i] as a bulk, or a null. */
static void reply_field(struct client *c, const struct entry *e, int i)
{
	struct hash_field hf;

	if (field_get(e, &c->argv[i], &hf))
		reply_bulk(c, hf.v, hf.vlen);
	else
		reply_null(c);
}

/* ---- HSET, HSETNX, HGET, HMGET, HDEL and the other field commands ----------------------------- */

static void hset_generic(struct client *c, bool hmset)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	long long created = 0;
	struct entry *e;

	/* The arity says "at least one pair"; only here can it say "pairs". */
	if (c->argc % 2 == 1) {
		reply_errorf(c, "wrong number of arguments for '%s' command",
			     hmset ? "hmset" : "hset");
		return;
	}
	if (!lookup_named(c, false, NAMED_NONE, &e))
		return;
	if (!e)
		e = create(c);
	for (int i = 2; i < c->argc; i += 2) {
		const struct arg *f = &c->argv[i], *v = &c->argv[i + 1];

		created += hash_set(&e->val, f->p, f->len, v->p, v->len, 0);
		note(&fl, want, f);
	}
	command_dirty((uint64_t)(c->argc - 2) / 2); /* each pair, set or new */
	db_changed(c->db, e);
	notify_hash(c, "hset", &fl);
	if (hmset)
		reply_ok(c);
	else
		reply_int(c, created);
}

void cmd_hset(struct client *c)
{
	hset_generic(c, false);
}

void cmd_hmset(struct client *c)
{
	hset_generic(c, true);
}

void cmd_hsetnx(struct client *c)
{
	const struct arg *f = &c->argv[2], *v = &c->argv[3];
	struct entry *e;

	if (!lookup_named(c, false, fields_from(c, 1, false), &e))
		return;
	if (e && hash_exists(&e->val, f->p, f->len)) {
		reply_int(c, 0);
		return;
	}
	if (!e)
		e = create(c);
	struct field_list fl = { 0 };

	hash_set(&e->val, f->p, f->len, v->p, v->len, 0);
	db_changed(c->db, e);
	note(&fl, config_notify_subkeys(NOTIFY_HASH), f);
	notify_hash(c, "hset", &fl);
	reply_int(c, 1);
}

void cmd_hget(struct client *c)
{
	struct entry *e;

	if (lookup_named(c, true, fields_from(c, 1, false), &e))
		reply_field(c, e, 2);
}

void cmd_hmget(struct client *c)
{
	struct entry *e;

	/* A missing key is an empty hash: a null per field. */
	if (!lookup_named(c, true, fields_from(c, 1, true), &e))
		return;
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++)
		reply_field(c, e, i);
}

void cmd_hdel(struct client *c)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	long long deleted = 0;
	struct entry *e;

	if (!lookup_named(c, false, NAMED_NONE, &e))
		return;
	if (e) {
		for (int i = 2; i < c->argc; i++) {
			if (!hash_delete(&e->val, c->argv[i].p, c->argv[i].len))
				continue;
			deleted++;
			note(&fl, want, &c->argv[i]);
		}
		command_dirty((uint64_t)deleted);
		if (deleted)
			changed(c, e, "hdel", &fl, NULL, NULL);
	}
	reply_int(c, deleted);
}

void cmd_hlen(struct client *c)
{
	struct entry *e;

	/* Fields past their deadline count until reclaimed, as in Redis. */
	if (lookup_named(c, true, NAMED_NONE, &e))
		reply_int(c, e ? (long long)hash_len(&e->val) : 0);
}

void cmd_hstrlen(struct client *c)
{
	struct hash_field hf;
	struct entry *e;

	if (lookup_named(c, true, fields_from(c, 1, false), &e))
		reply_int(c, field_get(e, &c->argv[2], &hf) ? (long long)hf.vlen : 0);
}

void cmd_hexists(struct client *c)
{
	struct hash_field hf;
	struct entry *e;

	if (lookup_named(c, true, fields_from(c, 1, false), &e))
		reply_int(c, field_get(e, &c->argv[2], &hf));
}

/* HGETALL (a map), HKEYS and HVALS (arrays). */
static void getall_generic(struct client *c, bool fields, bool values)
{
	int64_t now = store_now();
	struct hash_iter it;
	struct hash_field hf;
	struct entry *e;
	uint64_t n;

	if (!lookup_named(c, true, NAMED_NONE, &e))
		return;
	n = e ? hash_len(&e->val) : 0;
	if (e && hash_has_expire(&e->val) && hash_next_expire(&e->val) < now) {
		hash_iter_init(&it, &e->val);
		while (hash_iter_next(&it, &hf))
			n -= !field_live(&hf, now);
	}
	if (fields && values)
		reply_map(c, (long)n);
	else
		reply_array(c, (long)n);
	if (!e)
		return;
	hash_iter_init(&it, &e->val);
	while (hash_iter_next(&it, &hf)) {
		if (!field_live(&hf, now))
			continue;
		if (fields)
			reply_bulk(c, hf.f, hf.flen);
		if (values)
			reply_bulk(c, hf.v, hf.vlen);
	}
}

void cmd_hgetall(struct client *c)
{
	getall_generic(c, true, true);
}

void cmd_hkeys(struct client *c)
{
	getall_generic(c, true, false);
}

void cmd_hvals(struct client *c)
{
	getall_generic(c, false, true);
}

/* ---- HINCRBY, HINCRBYFLOAT ------------------------------------------------------------------ */

/* Sets field argv[2] of the hash at argv[1] (created if missing) to buf,
 * keeping the field's deadline as Redis 7.4 does for counters. */
static void set_counter(struct client *c, struct entry *e, const char *buf, size_t len,
			const char *event)
{
	const struct arg *f = &c->argv[2];
	struct field_list fl = { 0 };

	if (!e)
		e = create(c);
	hash_set(&e->val, f->p, f->len, buf, len, HASH_SET_KEEPTTL);
	db_changed(c->db, e);
	note(&fl, config_notify_subkeys(NOTIFY_HASH), f);
	notify_hash(c, event, &fl);
}

void cmd_hincrby(struct client *c)
{
	char buf[LL_STR_SIZE + 1];
	long long by, v = 0;
	struct hash_field hf;
	struct entry *e;

	if (!arg_ll(c, 3, &by) || !lookup_named(c, false, fields_from(c, 1, false), &e))
		return;
	if (field_get(e, &c->argv[2], &hf) && !str_to_ll(hf.v, hf.vlen, &v)) {
		reply_error(c, "hash value is not an integer");
		return;
	}
	if ((by < 0 && v < 0 && by < LLONG_MIN - v) || (by > 0 && v > 0 && by > LLONG_MAX - v)) {
		reply_error(c, ERR_OVERFLOW);
		return;
	}
	v += by;
	set_counter(c, e, buf, (size_t)ll_to_str(buf, v), "hincrby");
	reply_int(c, v);
}

void cmd_hincrbyfloat(struct client *c)
{
	const struct arg *arg = &c->argv[3];
	long double by, v = 0;
	char buf[LD_STR_SIZE];
	struct hash_field hf;
	struct entry *e;
	int len;

	if (!str_to_ld(arg->p, arg->len, &by)) {
		reply_error(c, ERR_NOT_FLOAT);
		return;
	}
	if (isnan(by) || isinf(by)) {
		reply_error(c, "value is NaN or Infinity");
		return;
	}
	if (!lookup_named(c, false, fields_from(c, 1, false), &e))
		return;
	if (field_get(e, &c->argv[2], &hf) && !str_to_ld(hf.v, hf.vlen, &v)) {
		reply_error(c, "hash value is not a float");
		return;
	}
	v += by;
	if (isnan(v) || isinf(v)) {
		reply_error(c, "increment would produce NaN or Infinity");
		return;
	}
	len = ld_to_str(buf, sizeof(buf), v);
	set_counter(c, e, buf, (size_t)len, "hincrbyfloat");
	/* The result, not the float arithmetic, and the field's deadline kept. */
	if (propagate_enabled()) {
		struct arg set[7] = { PROP_STR("HSETEX"),  c->argv[1],	  PROP_STR("KEEPTTL"),
				      PROP_STR("FIELDS"),  PROP_STR("1"), c->argv[2],
				      { buf, (size_t)len } };

		propagate_rewrite(7, set);
	}
	reply_bulk(c, buf, (size_t)len);
}

/* ---- HRANDFIELD ----------------------------------------------------------------------------- */

/* One pick: the field, and with values its value (RESP3 pairs them). */
static void reply_pick(struct client *c, const struct hash_field *hf, bool withvalues)
{
	if (withvalues && c->resp > 2)
		reply_array(c, 2);
	reply_bulk(c, hf->f, hf->flen);
	if (withvalues)
		reply_bulk(c, hf->v, hf->vlen);
}

/* A set of field pointers (open addressing), to pick distinct fields. */
struct ptrset {
	const void **slots;
	size_t mask;
};

static bool ptrset_add(struct ptrset *s, const void *p)
{
	size_t i = (size_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 7) & s->mask;

	for (; s->slots[i]; i = (i + 1) & s->mask)
		if (s->slots[i] == p)
			return false;
	s->slots[i] = p;
	return true;
}

/* Distinct random fields, count of them, fewer than the hash holds. */
static void hrandfield_distinct(struct client *c, const struct obj *o, uint64_t count,
				bool withvalues)
{
	uint64_t size = hash_len(o);
	struct hash_field hf;

	if (o->enc == ENC_LISTPACK) {
		/* Selection sampling: each field is taken with probability
		 * needed / remaining, so the picks keep listpack order. */
		uint64_t needed = count, remaining = size;
		struct hash_iter it;

		hash_iter_init(&it, o);
		while (needed && hash_iter_next(&it, &hf)) {
			if (hash_rand() % remaining-- < needed) {
				reply_pick(c, &hf, withvalues);
				needed--;
			}
		}
	} else if (count * 3 > size) {
		/* Close to the whole hash: copy it, drop random fields. */
		struct hash_field *all = xmalloc(sizeof(*all) * size);
		struct hash_iter it;
		uint64_t n = 0;

		hash_iter_init(&it, o);
		while (hash_iter_next(&it, &all[n]))
			n++;
		while (n > count) {
			uint64_t drop = hash_rand() % n;

			all[drop] = all[--n];
		}
		for (uint64_t i = 0; i < n; i++)
			reply_pick(c, &all[i], withvalues);
		xfree(all);
	} else {
		/* A small share of a big hash: pick until enough are new. */
		struct hash_sampler s;
		struct ptrset seen;
		size_t slots = 16;

		while (slots < count * 2)
			slots *= 2;
		seen.slots = xcalloc(slots, sizeof(*seen.slots));
		seen.mask = slots - 1;
		hash_sampler_init(&s, o);
		for (uint64_t added = 0; added < count;) {
			hash_sampler_pick(&s, hash_rand(), &hf);
			if (ptrset_add(&seen, hf.f)) {
				reply_pick(c, &hf, withvalues);
				added++;
			}
		}
		hash_sampler_free(&s);
		xfree(seen.slots);
	}
}

static void hrandfield_count(struct client *c, long long l, bool withvalues)
{
	uint64_t count = l >= 0 ? (uint64_t)l : (uint64_t)-l, size, n;
	struct hash_field hf;
	struct entry *e;

	if (!lookup(c, true, &e))
		return;
	if (!e || count == 0) {
		reply_array(c, 0);
		return;
	}
	size = hash_len(&e->val);

	/* A negative count allows repeats and answers in random order. */
	if (l < 0 || count == 1) {
		struct hash_sampler s;

		reply_array(c, (long)(withvalues && c->resp == 2 ? count * 2 : count));
		hash_sampler_init(&s, &e->val);
		while (count--) {
			hash_sampler_pick(&s, hash_rand(), &hf);
			reply_pick(c, &hf, withvalues);
		}
		hash_sampler_free(&s);
		return;
	}
	n = count < size ? count : size;
	reply_array(c, (long)(withvalues && c->resp == 2 ? n * 2 : n));
	if (count >= size) {
		struct hash_iter it;

		hash_iter_init(&it, &e->val);
		while (hash_iter_next(&it, &hf))
			reply_pick(c, &hf, withvalues);
		return;
	}
	hrandfield_distinct(c, &e->val, count, withvalues);
}

void cmd_hrandfield(struct client *c)
{
	struct hash_sampler s;
	struct hash_field hf;
	struct entry *e;

	if (c->argc >= 3) {
		bool withvalues = false;
		long long l;

		if (!arg_ll(c, 2, &l))
			return;
		if (l < -LLONG_MAX) {
			reply_errorf(c, "value is out of range, value must between %lld and %lld",
				     -LLONG_MAX, LLONG_MAX);
			return;
		}
		if (c->argc > 4 || (c->argc == 4 && !arg_is(c, 3, "withvalues"))) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		if (c->argc == 4) {
			withvalues = true;
			/* The reply holds twice as many elements. */
			if (l < -LLONG_MAX / 2 || l > LLONG_MAX / 2) {
				reply_error(c, "value is out of range");
				return;
			}
		}
		hrandfield_count(c, l, withvalues);
		return;
	}
	if (!lookup(c, true, &e))
		return;
	if (!e) {
		reply_null(c);
		return;
	}
	hash_sampler_init(&s, &e->val);
	hash_sampler_pick(&s, hash_rand(), &hf);
	reply_bulk(c, hf.f, hf.flen);
	hash_sampler_free(&s);
}

/* ---- HSCAN ---------------------------------------------------------------------------------- */

struct scan_acc {
	struct hash_field *v;
	size_t n, cap;
	uint64_t elements; /* what the step collected, filter aside (COUNT) */
	int64_t now;	   /* expired fields are skipped */
	bool novalues;
};

static void scan_collect(void *ctx, const struct hash_field *hf)
{
	struct scan_acc *acc = ctx;

	if (!field_live(hf, acc->now))
		return;
	if (acc->n == acc->cap) {
		acc->cap = acc->cap ? acc->cap * 2 : 16;
		acc->v = xrealloc(acc->v, acc->cap * sizeof(*acc->v));
	}
	acc->v[acc->n++] = *hf;
	acc->elements += acc->novalues ? 1 : 2;
}

void cmd_hscan(struct client *c)
{
	struct scan_acc acc = { .now = store_now() };
	const char *pat = NULL;
	long long count = 10;
	uint64_t cursor, budget;
	size_t plen = 0, nout = 0;
	char buf[LL_STR_SIZE + 1];
	struct entry *e;

	if (!str_to_cursor(c->argv[2].p, &cursor)) {
		reply_error(c, "invalid cursor");
		return;
	}
	if (!lookup_named(c, true, NAMED_NONE, &e))
		return;
	if (!e) {
		reply_array(c, 2);
		reply_bulk(c, "0", 1);
		reply_array(c, 0);
		return;
	}
	for (int i = 3; i < c->argc;) {
		bool has_val = i + 1 < c->argc;

		if (has_val && arg_is(c, i, "count")) {
			if (!arg_ll(c, i + 1, &count))
				return;
			if (count < 1) {
				reply_error(c, ERR_SYNTAX);
				return;
			}
			i += 2;
		} else if (has_val && arg_is(c, i, "match")) {
			pat = c->argv[i + 1].p;
			plen = c->argv[i + 1].len;
			i += 2;
		} else if (arg_is(c, i, "novalues")) {
			acc.novalues = true;
			i++;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (pat && plen == 1 && pat[0] == '*')
		pat = NULL;

	/* As Redis: at most ten buckets per element asked for. */
	budget = (uint64_t)count > UINT64_MAX / 10 ? UINT64_MAX : (uint64_t)count * 10;
	do
		cursor = hash_scan(&e->val, cursor, scan_collect, &acc);
	while (cursor && --budget && acc.elements < (uint64_t)count);

	for (size_t i = 0; i < acc.n; i++)
		if (!pat || glob_match(pat, plen, acc.v[i].f, acc.v[i].flen, false))
			acc.v[nout++] = acc.v[i];
	reply_array(c, 2);
	reply_bulk(c, buf, (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cursor));
	reply_array(c, (long)(acc.novalues ? nout : nout * 2));
	for (size_t i = 0; i < nout; i++) {
		reply_bulk(c, acc.v[i].f, acc.v[i].flen);
		if (!acc.novalues)
			reply_bulk(c, acc.v[i].v, acc.v[i].vlen);
	}
	xfree(acc.v);
}

/* ---- field expiry (Redis 7.4) ----------------------------------------------------------------- */

/*
 * Reads the deadline argument argv[i] (seconds or ms, added to base: the
 * clock for relative forms, 0 for absolute ones) with Redis's bounds. Errors
 * name cmd.
 */
static bool parse_deadline(struct client *c, int i, bool seconds, int64_t base, const char *cmd,
			   int64_t *when)
{
	long long v;

	if (!arg_ll(c, i, &v))
		return false;
	if (v < 0) {
		reply_error(c, "invalid expire time, must be >= 0");
		return false;
	}
	if (seconds) {
		if (v > HFE_MAX_MS / 1000)
			goto invalid;
		v *= 1000;
	}
	if (v > HFE_MAX_MS - base)
		goto invalid;
	*when = v + base;
	return true;

invalid:
	reply_errorf(c, "invalid expire time in '%s' command", cmd);
	return false;
}

/*
 * Checks "FIELDS numfields field..." with the FIELDS token at argv[at] and the
 * fields running to the end of the arguments. Returns the count, or 0 after
 * replying the error (numerr for a count that is not a positive integer).
 */
static long long parse_fields(struct client *c, int at, const char *numerr)
{
	long long n;

	if (at >= c->argc || !arg_is(c, at, "fields")) {
		reply_error(c, ERR_FIELDS_MISSING);
		return 0;
	}
	if (at + 1 >= c->argc || !str_to_ll(c->argv[at + 1].p, c->argv[at + 1].len, &n) || n < 1) {
		reply_error(c, numerr);
		return 0;
	}
	if (n != c->argc - at - 2) {
		reply_error(c, ERR_NUMFIELDS_MATCH);
		return 0;
	}
	return n;
}

/* Per-field replies of HEXPIRE and friends. */
enum {
	HFE_NO_FIELD = -2,
	HFE_NOT_MET = 0,
	HFE_SET = 1,
	HFE_DELETED = 2,
};

enum hfe_cond { COND_NONE, COND_NX, COND_XX, COND_GT, COND_LT };

/* Would cond let a deadline replace cur (HASH_NO_EXPIRE counting as
 * infinite)? */
static bool cond_met(enum hfe_cond cond, int64_t cur, int64_t when)
{
	switch (cond) {
	case COND_NX:
		return cur == HASH_NO_EXPIRE;
	case COND_XX:
		return cur != HASH_NO_EXPIRE;
	case COND_GT:
		return cur != HASH_NO_EXPIRE && when > cur;
	case COND_LT:
		return cur == HASH_NO_EXPIRE || when < cur;
	default:
		return true;
	}
}

/*
 * HEXPIRE's arguments after the deadline, as Redis 8.8 reads them: FIELDS
 * numfields field... and at most one of NX XX GT LT, in any order. On
 * success *first and *n give the fields.
 */
static bool hexpire_args(struct client *c, enum hfe_cond *cond, int *first, int *n)
{
	static const char *const conds[] = {
		[COND_NX] = "nx",
		[COND_XX] = "xx",
		[COND_GT] = "gt",
		[COND_LT] = "lt",
	};
	int nconds = 0;
	long long v;

	*first = -1;
	for (int i = 3; i < c->argc; i++) {
		int k;

		if (arg_is(c, i, "fields")) {
			if (*first != -1) {
				reply_error(c, "FIELDS keyword specified multiple times");
				return false;
			}
			if (i >= c->argc - 2) {
				reply_error(c, "FIELDS requires at least numfields and one field "
					       "argument");
				return false;
			}
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &v) || v < 1 ||
			    v > INT_MAX) {
				reply_error(c, "Parameter `numFields` should be greater than 0");
				return false;
			}
			if (v > c->argc - i - 2) {
				reply_error(c, "wrong number of arguments");
				return false;
			}
			*first = i + 2;
			*n = (int)v;
			i = *first + *n - 1;
			continue;
		}
		for (k = COND_NX; k <= COND_LT && !arg_is(c, i, conds[k]); k++)
			;
		if (k > COND_LT) {
			reply_errorf(c, "unknown argument: %s", c->argv[i].p);
			return false;
		}
		*cond = (enum hfe_cond)k;
		nconds++;
	}
	if (*first == -1) {
		reply_error(c, "missing FIELDS argument");
		return false;
	}
	if (nconds > 1) {
		reply_error(c, "Multiple condition flags specified");
		return false;
	}
	return true;
}

static void hexpire_generic(struct client *c, bool relative, bool seconds, const char *cmd)
{
	enum hfe_cond cond = COND_NONE;
	int64_t now = store_now(), when;
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	uint64_t dirty = 0;
	struct entry *e;
	int first, n;

	if (!lookup_named(c, false, NAMED_NONE, &e) ||
	    !parse_deadline(c, 2, seconds, relative ? now : 0, cmd, &when) ||
	    !hexpire_args(c, &cond, &first, &n))
		return;
	if (e)
		hash_mark_ex(&e->val);

	reply_array(c, n);
	for (int i = first; i < first + n; i++) {
		const struct arg *f = &c->argv[i];
		struct hash_field hf;

		if (!field_get(e, f, &hf)) {
			reply_int(c, HFE_NO_FIELD);
		} else if (!cond_met(cond, hf.expire, when)) {
			reply_int(c, HFE_NOT_MET);
		} else if (when <= now) {
			/* A deadline already reached deletes the field. */
			hash_delete(&e->val, f->p, f->len);
			dirty++;
			note(&fl, want, f);
			reply_int(c, HFE_DELETED);
		} else {
			hash_set_expire(&e->val, f->p, f->len, when);
			dirty++;
			note(&fl, want, f);
			reply_int(c, HFE_SET);
		}
	}
	command_dirty(dirty); /* each field deleted or set, as Redis */
	if (dirty) {
		/* One deadline for every field: all deleted or all set. */
		changed(c, e, when <= now ? "hdel" : "hexpire", &fl, NULL, NULL);
		propagate_deadline(c->argc, c->argv, "HPEXPIREAT", 2, false, when);
	}
}

void cmd_hexpire(struct client *c)
{
	hexpire_generic(c, true, true, "hexpire");
}

void cmd_hpexpire(struct client *c)
{
	hexpire_generic(c, true, false, "hpexpire");
}

void cmd_hexpireat(struct client *c)
{
	hexpire_generic(c, false, true, "hexpireat");
}

void cmd_hpexpireat(struct client *c)
{
	hexpire_generic(c, false, false, "hpexpireat");
}

/* HTTL and friends: -2 no such field, -1 no deadline, else the time left
 * (relative) or the deadline, seconds rounded up as Redis does. */
static void httl_generic(struct client *c, bool relative, bool seconds)
{
	int64_t base = relative ? store_now() : 0;
	struct entry *e;

	if (!lookup_named(c, true, NAMED_NONE, &e) || !parse_fields(c, 2, ERR_NUMFIELDS))
		return;
	reply_array(c, c->argc - 4);
	for (int i = 4; i < c->argc; i++) {
		struct hash_field hf;
		int64_t t;

		if (!field_get(e, &c->argv[i], &hf) || !field_live(&hf, store_now())) {
			reply_int(c, HFE_NO_FIELD);
			continue;
		}
		if (hf.expire == HASH_NO_EXPIRE) {
			reply_int(c, -1);
			continue;
		}
		t = hf.expire - base;
		reply_int(c, seconds ? (t + 999) / 1000 : t);
	}
}

void cmd_httl(struct client *c)
{
	httl_generic(c, true, true);
}

void cmd_hpttl(struct client *c)
{
	httl_generic(c, true, false);
}

void cmd_hexpiretime(struct client *c)
{
	httl_generic(c, false, true);
}

void cmd_hpexpiretime(struct client *c)
{
	httl_generic(c, false, false);
}

void cmd_hpersist(struct client *c)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	bool dirty = false;
	struct entry *e;

	if (!lookup_named(c, false, NAMED_NONE, &e) || !parse_fields(c, 2, ERR_NUMFIELDS))
		return;
	reply_array(c, c->argc - 4);
	for (int i = 4; i < c->argc; i++) {
		const struct arg *f = &c->argv[i];
		struct hash_field hf;

		if (!field_get(e, f, &hf) || !field_live(&hf, store_now())) {
			reply_int(c, HFE_NO_FIELD);
		} else if (hf.expire == HASH_NO_EXPIRE) {
			reply_int(c, -1);
		} else {
			hash_set_expire(&e->val, f->p, f->len, HASH_NO_EXPIRE);
			dirty = true;
			note(&fl, want, f);
			reply_int(c, 1);
		}
	}
	if (dirty)
		changed(c, e, "hpersist", &fl, NULL, NULL);
}

/* ---- HGETDEL, HGETEX, HSETEX (Redis 8.0) ------------------------------------------------------ */

void cmd_hgetdel(struct client *c)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	uint64_t deleted = 0;
	struct entry *e;

	if (!lookup_named(c, false, fields_named(c, 2, 1), &e) ||
	    !parse_fields(c, 2, ERR_NUMFIELDS))
		return;
	reply_array(c, c->argc - 4);
	for (int i = 4; i < c->argc; i++) {
		const struct arg *f = &c->argv[i];
		struct hash_field hf;

		if (!field_get(e, f, &hf)) {
			reply_null(c);
			continue;
		}
		reply_bulk(c, hf.v, hf.vlen);
		hash_delete(&e->val, f->p, f->len);
		deleted++;
		note(&fl, want, f);
	}
	command_dirty(deleted);
	if (deleted) {
		/* Redis propagates HDEL key field... (every field named). */
		propagate_renamed_from(c->argc, c->argv, "HDEL", 4);
		changed(c, e, "hdel", &fl, NULL, NULL);
	}
}

/* Expiry options of HGETEX and HSETEX. */
enum {
	OPT_EX = 1u << 0,
	OPT_PX = 1u << 1,
	OPT_EXAT = 1u << 2,
	OPT_PXAT = 1u << 3,
	OPT_PERSIST = 1u << 4,
	OPT_KEEPTTL = 1u << 5,
	OPT_FNX = 1u << 6,
	OPT_FXX = 1u << 7,
};

#define OPT_DEADLINE (OPT_EX | OPT_PX | OPT_EXAT | OPT_PXAT)

static const struct {
	const char *word;
	unsigned opt;
} expire_words[] = {
	{ "ex", OPT_EX },
	{ "px", OPT_PX },
	{ "exat", OPT_EXAT },
	{ "pxat", OPT_PXAT },
};

/* Which of EX, PX, EXAT and PXAT argv[i] is, or 0. */
static unsigned expire_word(const struct client *c, int i)
{
	for (size_t k = 0; k < sizeof(expire_words) / sizeof(expire_words[0]); k++)
		if (arg_is(c, i, expire_words[k].word))
			return expire_words[k].opt;
	return 0;
}

/* Reads the deadline argv[i] of option opt (one of OPT_DEADLINE). */
static bool option_deadline(struct client *c, int i, unsigned opt, const char *cmd, int64_t *when)
{
	int64_t base = opt & (OPT_EX | OPT_PX) ? store_now() : 0;

	return parse_deadline(c, i, opt & (OPT_EX | OPT_EXAT), base, cmd, when);
}

/* Applies a deadline to an existing field: one already reached deletes it. */
static void field_deadline(struct entry *e, const struct arg *f, int64_t when)
{
	if (when <= store_now())
		hash_delete(&e->val, f->p, f->len);
	else
		hash_set_expire(&e->val, f->p, f->len, when);
}

/*
 * HGETEX's and HSETEX's options and FIELDS block, in any order, as Redis 8.8
 * parses them: each option is checked (and its deadline read) as it comes.
 * On success *first and *n give the fields (pairs for HSETEX) and *when_at
 * the deadline's index (0: none).
 */
static bool hfe_options(struct client *c, bool setex, unsigned *opts, int64_t *when, int *first,
			int *n, int *when_at)
{
	const char *cmd = setex ? "hsetex" : "hgetex";
	int per_field = setex ? 2 : 1;
	long long v;

	*opts = 0;
	*first = -1;
	for (int i = 2; i < c->argc; i++) {
		unsigned opt = expire_word(c, i);

		if (arg_is(c, i, "fields")) {
			if (*first != -1) {
				reply_error(c, "FIELDS keyword specified multiple times");
				return false;
			}
			if (i + 1 >= c->argc) {
				reply_errorf(c, "wrong number of arguments for '%s' command", cmd);
				return false;
			}
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &v) || v < 1 ||
			    v > INT_MAX) {
				reply_error(c, "invalid number of fields");
				return false;
			}
			if (i + 2 + v * per_field > c->argc) {
				reply_error(c, "wrong number of arguments");
				return false;
			}
			*first = i + 2;
			*n = (int)v;
			i = *first + *n * per_field - 1;
		} else if (opt) {
			if (*opts & (OPT_DEADLINE | OPT_KEEPTTL | OPT_PERSIST))
				goto one_expiry;
			if (i >= c->argc - 1) {
				reply_error(c, "missing expire time");
				return false;
			}
			if (!option_deadline(c, ++i, opt, cmd, when))
				return false;
			*when_at = i;
			*opts |= opt;
		} else if (!setex && arg_is(c, i, "persist")) {
			if (*opts & (OPT_DEADLINE | OPT_PERSIST))
				goto one_expiry;
			*opts |= OPT_PERSIST;
		} else if (setex && arg_is(c, i, "keepttl")) {
			if (*opts & (OPT_DEADLINE | OPT_KEEPTTL))
				goto one_expiry;
			*opts |= OPT_KEEPTTL;
		} else if (setex && (arg_is(c, i, "fnx") || arg_is(c, i, "fxx"))) {
			if (*opts & (OPT_FNX | OPT_FXX)) {
				reply_error(c, "Only one of FXX or FNX arguments can be specified");
				return false;
			}
			*opts |= arg_is(c, i, "fnx") ? OPT_FNX : OPT_FXX;
		} else {
			reply_errorf(c, "unknown argument: %s", c->argv[i].p);
			return false;
		}
	}
	if (*first == -1) {
		reply_error(c, "missing FIELDS argument");
		return false;
	}
	return true;

one_expiry:
	reply_error(c,
		    setex ? ERR_ONE_EXPIRY
			  : "Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified");
	return false;
}

void cmd_hgetex(struct client *c)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list fl = { 0 };
	uint64_t dirty = 0;
	int64_t when = 0;
	struct entry *e;
	int first, n, when_at = 0;
	unsigned opt;

	if (!lookup_named(c, false, fields_named(c, 2, 1), &e) ||
	    !hfe_options(c, false, &opt, &when, &first, &n, &when_at))
		return;
	if (e && opt)
		hash_mark_ex(&e->val);

	reply_array(c, n);
	for (int i = first; i < first + n; i++) {
		const struct arg *f = &c->argv[i];
		struct hash_field hf;

		if (!field_get(e, f, &hf)) {
			reply_null(c);
			continue;
		}
		reply_bulk(c, hf.v, hf.vlen);
		if (opt == OPT_PERSIST && hf.expire != HASH_NO_EXPIRE) {
			hash_set_expire(&e->val, f->p, f->len, HASH_NO_EXPIRE);
			dirty++;
			note(&fl, want, f);
		} else if (opt & OPT_DEADLINE) {
			field_deadline(e, f, when);
			dirty++;
			note(&fl, want, f);
		}
	}
	command_dirty(dirty); /* each field whose deadline changed, as Redis */
	if (dirty) {
		changed(c, e,
			opt == OPT_PERSIST    ? "hpersist"
			: when <= store_now() ? "hdel"
					      : "hexpire",
			&fl, NULL, NULL);
		if (opt & OPT_DEADLINE)
			propagate_deadline(c->argc, c->argv, NULL, when_at, true, when);
	}
}

void cmd_hsetex(struct client *c)
{
	bool want = config_notify_subkeys(NOTIFY_HASH);
	struct field_list set = { 0 }, ex = { 0 };
	unsigned opts;
	int64_t when = 0;
	struct entry *e;
	int first, n, when_at = 0, end;

	if (!hfe_options(c, true, &opts, &when, &first, &n, &when_at) ||
	    !lookup_for_set(c, (struct named){ first, 2, n }, &e))
		return;
	end = first + 2 * n;
	if (!e && (opts & OPT_FXX)) {
		reply_int(c, 0);
		return;
	}
	/* FNX: none of the fields may exist; FXX: all of them must. */
	if (e && (opts & (OPT_FNX | OPT_FXX))) {
		for (int i = first; i < end; i += 2) {
			bool exists = hash_exists(&e->val, c->argv[i].p, c->argv[i].len);

			if (exists != !!(opts & OPT_FXX)) {
				reply_int(c, 0);
				return;
			}
		}
	}
	if (!e)
		e = create(c);
	if (opts & OPT_DEADLINE)
		hash_mark_ex(&e->val);
	for (int i = first; i < end; i += 2) {
		const struct arg *f = &c->argv[i], *v = &c->argv[i + 1];

		hash_set(&e->val, f->p, f->len, v->p, v->len,
			 opts & (OPT_DEADLINE | OPT_KEEPTTL) ? HASH_SET_KEEPTTL : 0);
		note(&set, want, f);
		if (opts & OPT_DEADLINE) {
			field_deadline(e, f, when);
			note(&ex, want, f);
		}
	}
	reply_int(c, 1);
	command_dirty((uint64_t)n); /* each field set, as Redis */
	changed(c, e, "hset", &set,
		!(opts & OPT_DEADLINE) ? NULL
		: when <= store_now()  ? "hdel"
				       : "hexpire",
		&ex);
	if (opts & OPT_DEADLINE)
		propagate_deadline(c->argc, c->argv, NULL, when_at, true, when);
}
