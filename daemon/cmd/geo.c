// SPDX-License-Identifier: BSD-3-Clause
/*
 * The geo family: GEOADD, GEOPOS, GEODIST, GEOHASH, GEORADIUS(_RO),
 * GEORADIUSBYMEMBER(_RO), GEOSEARCH, GEOSEARCHSTORE.
 *
 * A geo set is a sorted set whose scores are 52-bit geohashes (geo.h), so
 * every sorted set command works on it. Searches scan the score ranges of at
 * most nine geohash boxes and keep the members inside the shape, in the
 * order Redis finds them; ASC/DESC sort them by distance.
 *
 * Locking is the dispatcher's, from the key specs: GEORADIUS's STORE key is
 * found by its keyword spec, as Redis's movablekeys.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "notify.h"
#include "geo.h"
#include "mem.h"
#include "t_zset.h"
#include "util.h"

/* A member found by a search. Its bytes are the source set's, valid until
 * that set changes. */
struct geo_point {
	double xy[2], dist, score;
	const char *m;
	size_t len;
};

struct geo_points {
	struct geo_point *v;
	size_t n, cap;
};

/* A double as Redis's getDoubleFromObjectOrReply reads it; err or Redis's
 * default message otherwise. */
static bool arg_double(struct client *c, int i, double *out, const char *err)
{
	const struct arg *a = &c->argv[i];

	if (!memchr(a->p, '\0', a->len) && str_to_d(a->p, a->len, out))
		return true;
	reply_error(c, err ? err : ERR_NOT_FLOAT);
	return false;
}

static bool arg_lonlat(struct client *c, int i, double *xy)
{
	if (!arg_double(c, i, &xy[0], NULL) || !arg_double(c, i + 1, &xy[1], NULL))
		return false;
	if (xy[0] < GEO_LONG_MIN || xy[0] > GEO_LONG_MAX || xy[1] < GEO_LAT_MIN ||
	    xy[1] > GEO_LAT_MAX) {
		reply_errorf(c, "invalid longitude,latitude pair %f,%f", xy[0], xy[1]);
		return false;
	}
	return true;
}

/* Metres per unit, or -1 after replying. */
static double arg_unit(struct client *c, int i)
{
	static const struct {
		const char *name;
		double metres;
	} units[] = { { "m", 1 }, { "km", 1000 }, { "ft", 0.3048 }, { "mi", 1609.34 } };

	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (arg_is(c, i, units[k].name))
			return units[k].metres;
	reply_error(c, "unsupported unit provided. please use M, KM, FT, MI");
	return -1;
}

static bool arg_radius(struct client *c, int i, struct geo_shape *shape)
{
	if (!arg_double(c, i, &shape->radius, "need numeric radius"))
		return false;
	if (shape->radius < 0) {
		reply_error(c, "radius cannot be negative");
		return false;
	}
	shape->box = false;
	return (shape->conversion = arg_unit(c, i + 1)) >= 0;
}

static bool arg_box(struct client *c, int i, struct geo_shape *shape)
{
	if (!arg_double(c, i, &shape->width, "need numeric width") ||
	    !arg_double(c, i + 1, &shape->height, "need numeric height"))
		return false;
	if (shape->height < 0 || shape->width < 0) {
		reply_error(c, "height or width cannot be negative");
		return false;
	}
	shape->box = true;
	return (shape->conversion = arg_unit(c, i + 2)) >= 0;
}

/* A member's position; false if absent or its score is not a position. */
static bool member_position(const struct obj *z, const struct arg *m, double *xy)
{
	double score;

	return zset_score(z, m->p, m->len, &score) && geo_decode_score(score, xy);
}

/* A distance with four decimals, rounded as Redis 8 rounds it (the scaled
 * value to the nearest integer). */
static void reply_distance(struct client *c, double d)
{
	char buf[64];
	long long v = llrint(d * 10000);
	int len = snprintf(buf, sizeof(buf), "%s%lld.%04lld", v < 0 ? "-" : "", llabs(v / 10000),
			   llabs(v % 10000));

	reply_bulk(c, buf, (size_t)len);
}

void cmd_geoadd(struct client *c)
{
	unsigned flags = 0;
	bool ch = false;
	long long added = 0, updated = 0;
	double *xy;
	struct entry *e;
	int i = 2, n;

	for (; i < c->argc; i++) {
		if (arg_is(c, i, "nx"))
			flags |= ZADD_NX;
		else if (arg_is(c, i, "xx"))
			flags |= ZADD_XX;
		else if (arg_is(c, i, "ch"))
			ch = true;
		else
			break;
	}
	n = c->argc - i;
	if (n % 3 || ((flags & ZADD_NX) && (flags & ZADD_XX))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	n /= 3;
	/* Every position is checked before anything changes, as ZADD's scores are. */
	xy = xmalloc((size_t)(n ? n : 1) * 2 * sizeof(*xy));
	for (int k = 0; k < n; k++)
		if (!arg_lonlat(c, i + 3 * k, &xy[2 * k]))
			goto out;
	if (n == 0) {
		/* ZADD's own check on what GEOADD hands it: no pairs at all. */
		reply_error(c, ERR_SYNTAX);
		goto out;
	}
	e = key_find(c, 1);
	if (e && !entry_is(c, e, OBJ_ZSET))
		goto out;
	if (!e) {
		if (flags & ZADD_XX) {
			reply_int(c, 0);
			goto out;
		}
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, zset_new(1, c->argv[i + 2].len));
	}
	for (int k = 0; k < n; k++) {
		const struct arg *m = &c->argv[i + 3 * k + 2];
		double score = (double)geo_score(xy[2 * k], xy[2 * k + 1]);

		switch (zset_add(&e->val, score, m->p, m->len, flags, NULL)) {
		case ZADD_ADDED:
			added++;
			break;
		case ZADD_UPDATED:
			updated++;
			break;
		default:
			break;
		}
	}
	/* GEOADD is ZADD to Redis, events included. */
	command_dirty((uint64_t)(added + updated)); /* as the ZADD Redis runs */
	if (added || updated) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_ZSET, "zadd", 1);
	}
	reply_int(c, ch ? added + updated : added);
out:
	xfree(xy);
}

/* ---- searches ------------------------------------------------------------------------- */

enum geo_search_flag {
	SEARCH_COORDS = 1 << 0,	   /* GEORADIUS: around longitude, latitude */
	SEARCH_MEMBER = 1 << 1,	   /* GEORADIUSBYMEMBER: around a member */
	SEARCH_NOSTORE = 1 << 2,   /* the _RO forms: no STORE */
	SEARCH_GEOSEARCH = 1 << 3, /* GEOSEARCH's FROM.../BY... syntax */
	SEARCH_STORE = 1 << 4,	   /* GEOSEARCHSTORE */
};

enum geo_sort { SORT_NONE, SORT_ASC, SORT_DESC };

struct geo_query {
	struct geo_shape shape;
	bool withdist, withhash, withcoord, any, storedist;
	bool frommember, fromlonlat, byradius, bybox;
	enum geo_sort sort;
	long long count;
	int store; /* argv index of the destination, or 0 */
};

/* Appends the members of z with scores in [min, max) that lie inside the
 * shape; stops at limit results (0: no limit). */
static void points_in_range(const struct obj *z, uint64_t min, uint64_t max,
			    const struct geo_shape *shape, struct geo_points *out, size_t limit)
{
	struct zscore_range r = { .min = (double)min, .max = (double)max, .maxex = true };
	struct zset_iter it;
	struct zset_elem el;
	size_t first, end;

	zset_score_span(z, &r, &first, &end);
	zset_iter_init(&it, z, first, false);
	for (size_t rank = first; rank < end && zset_iter_next(&it, &el); rank++) {
		struct geo_point p;

		if (!geo_decode_score(el.score, p.xy) || !geo_within(shape, p.xy, &p.dist))
			continue;
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 8;
			out->v = xrealloc(out->v, out->cap * sizeof(*out->v));
		}
		p.score = el.score;
		p.m = el.m;
		p.len = el.len;
		out->v[out->n++] = p;
		if (limit && out->n >= limit)
			return;
	}
}

static int by_distance_asc(const void *a, const void *b)
{
	const struct geo_point *x = a, *y = b;

	return x->dist > y->dist ? 1 : x->dist == y->dist ? 0 : -1;
}

static int by_distance_desc(const void *a, const void *b)
{
	return -by_distance_asc(a, b);
}

/* Parses the options after base; z is the source set (NULL if missing:
 * then FROMMEMBER is parsed but not resolved). false after replying. */
static bool parse_query(struct client *c, int base, unsigned flags, const struct obj *z,
			struct geo_query *q)
{
	for (int i = base; i < c->argc; i++) {
		int left = c->argc - i - 1; /* arguments after this one */

		if (arg_is(c, i, "withdist")) {
			q->withdist = true;
		} else if (arg_is(c, i, "withhash")) {
			q->withhash = true;
		} else if (arg_is(c, i, "withcoord")) {
			q->withcoord = true;
		} else if (arg_is(c, i, "any")) {
			q->any = true;
		} else if (arg_is(c, i, "asc")) {
			q->sort = SORT_ASC;
		} else if (arg_is(c, i, "desc")) {
			q->sort = SORT_DESC;
		} else if (arg_is(c, i, "count") && left >= 1) {
			if (!arg_ll(c, i + 1, &q->count))
				return false;
			if (q->count <= 0) {
				reply_error(c, "COUNT must be > 0");
				return false;
			}
			i++;
		} else if ((arg_is(c, i, "store") || arg_is(c, i, "storedist")) && left >= 1 &&
			   !(flags & (SEARCH_NOSTORE | SEARCH_GEOSEARCH))) {
			q->storedist = arg_is(c, i, "storedist");
			q->store = ++i;
		} else if (arg_is(c, i, "storedist") && (flags & SEARCH_STORE)) {
			q->storedist = true;
		} else if (arg_is(c, i, "frommember") && left >= 1 && (flags & SEARCH_GEOSEARCH) &&
			   !q->fromlonlat) {
			if (z && !member_position(z, &c->argv[i + 1], q->shape.xy)) {
				reply_error(c, "could not decode requested zset member");
				return false;
			}
			q->frommember = true;
			i++;
		} else if (arg_is(c, i, "fromlonlat") && left >= 2 && (flags & SEARCH_GEOSEARCH) &&
			   !q->frommember) {
			if (!arg_lonlat(c, i + 1, q->shape.xy))
				return false;
			q->fromlonlat = true;
			i += 2;
		} else if (arg_is(c, i, "byradius") && left >= 2 && (flags & SEARCH_GEOSEARCH) &&
			   !q->bybox) {
			if (!arg_radius(c, i + 1, &q->shape))
				return false;
			q->byradius = true;
			i += 2;
		} else if (arg_is(c, i, "bybox") && left >= 3 && (flags & SEARCH_GEOSEARCH) &&
			   !q->byradius) {
			if (!arg_box(c, i + 1, &q->shape))
				return false;
			q->bybox = true;
			i += 3;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	if (q->store && (q->withdist || q->withhash || q->withcoord)) {
		reply_errorf(c,
			     "%s is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
			     flags & SEARCH_STORE ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS");
		return false;
	}
	if ((flags & SEARCH_GEOSEARCH) && !(q->frommember || q->fromlonlat)) {
		reply_errorf(c, "exactly one of FROMMEMBER or FROMLONLAT can be specified for %s",
			     c->argv[0].p);
		return false;
	}
	if ((flags & SEARCH_GEOSEARCH) && !(q->byradius || q->bybox)) {
		reply_errorf(c, "exactly one of BYRADIUS and BYBOX can be specified for %s",
			     c->argv[0].p);
		return false;
	}
	if (q->any && !q->count) {
		reply_error(c, "the ANY argument requires COUNT argument");
		return false;
	}
	return true;
}

/* Writes the results to argv[q->store] (deleting it when there are none). */
static void store_points(struct client *c, const struct geo_query *q, const struct geo_points *pts,
			 size_t n, const char *event)
{
	const struct arg *dst = &c->argv[q->store];
	size_t maxlen = 0;
	struct obj z;

	if (!n) {
		struct entry *d = key_find(c, q->store);

		if (d) {
			db_delete(c->db, d);
			notify_arg(c, NOTIFY_GENERIC, "del", q->store);
		}
		reply_int(c, 0);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (pts->v[i].len > maxlen)
			maxlen = pts->v[i].len;
	/* Built whole before it replaces the destination, which may be the source. */
	z = zset_new(n, maxlen);
	for (size_t i = 0; i < n; i++) {
		const struct geo_point *p = &pts->v[i];

		zset_add(&z, q->storedist ? p->dist / q->shape.conversion : p->score, p->m, p->len,
			 0, NULL);
	}
	db_set(c->db, dst->p, dst->len, z, false);
	notify_arg(c, NOTIFY_ZSET, event, q->store);
	reply_int(c, (long long)n);
}

static void reply_points(struct client *c, const struct geo_query *q, const struct geo_points *pts,
			 size_t n)
{
	int extra = q->withdist + q->withhash + q->withcoord;

	reply_array(c, (long)n);
	for (size_t i = 0; i < n; i++) {
		const struct geo_point *p = &pts->v[i];

		if (extra)
			reply_array(c, extra + 1);
		reply_bulk(c, p->m, p->len);
		if (q->withdist)
			reply_distance(c, p->dist / q->shape.conversion);
		if (q->withhash)
			reply_int(c, (long long)p->score);
		if (q->withcoord) {
			reply_array(c, 2);
			reply_double(c, p->xy[0]);
			reply_double(c, p->xy[1]);
		}
	}
}

static void search_generic(struct client *c, int src, unsigned flags)
{
	struct geo_query q = { .store = flags & SEARCH_STORE ? 1 : 0 };
	struct geo_points pts = { 0 };
	uint64_t min[9], max[9];
	const struct obj *z = NULL;
	struct entry *e;
	int base, nboxes;
	size_t n;

	e = key_find_read(c, src);
	if (e && !entry_is(c, e, OBJ_ZSET))
		return;
	z = e ? &e->val : NULL;
	if (flags & SEARCH_COORDS) {
		base = 6;
		if (!arg_lonlat(c, 2, q.shape.xy) || !arg_radius(c, 4, &q.shape))
			return;
	} else if (flags & SEARCH_MEMBER) {
		base = 5;
		if (z) {
			if (!member_position(z, &c->argv[2], q.shape.xy)) {
				reply_error(c, "could not decode requested zset member");
				return;
			}
			if (!arg_radius(c, 3, &q.shape))
				return;
		}
	} else {
		base = flags & SEARCH_STORE ? 3 : 2;
	}
	if (!parse_query(c, base, flags, z, &q))
		return;
	if (!z) {
		if (q.store)
			store_points(c, &q, &pts, 0, NULL);
		else
			reply_array(c, 0);
		return;
	}
	/* COUNT alone means the nearest ones. */
	if (q.count && q.sort == SORT_NONE && !q.any)
		q.sort = SORT_ASC;

	nboxes = geo_search_boxes(&q.shape, min, max);
	for (int i = 0; i < nboxes; i++) {
		size_t limit = q.any ? (size_t)q.count : 0;

		if (limit && pts.n >= limit)
			break;
		points_in_range(z, min[i], max[i], &q.shape, &pts, limit);
	}
	n = q.count && (size_t)q.count < pts.n ? (size_t)q.count : pts.n;
	if (q.sort != SORT_NONE)
		qsort(pts.v, pts.n, sizeof(*pts.v),
		      q.sort == SORT_ASC ? by_distance_asc : by_distance_desc);
	if (q.store)
		store_points(c, &q, &pts, n,
			     flags & SEARCH_STORE ? "geosearchstore" : "georadiusstore");
	else
		reply_points(c, &q, &pts, n);
	xfree(pts.v);
}

void cmd_georadius(struct client *c)
{
	search_generic(c, 1, SEARCH_COORDS);
}

void cmd_georadiusbymember(struct client *c)
{
	search_generic(c, 1, SEARCH_MEMBER);
}

void cmd_georadius_ro(struct client *c)
{
	search_generic(c, 1, SEARCH_COORDS | SEARCH_NOSTORE);
}

void cmd_georadiusbymember_ro(struct client *c)
{
	search_generic(c, 1, SEARCH_MEMBER | SEARCH_NOSTORE);
}

void cmd_geosearch(struct client *c)
{
	search_generic(c, 1, SEARCH_GEOSEARCH);
}

void cmd_geosearchstore(struct client *c)
{
	search_generic(c, 2, SEARCH_GEOSEARCH | SEARCH_STORE);
}

/* ---- positions ------------------------------------------------------------------------ */

void cmd_geohash(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (e && !entry_is(c, e, OBJ_ZSET))
		return;
	reply_array(c, c->argc - 2);
	for (int j = 2; j < c->argc; j++) {
		double score;
		char buf[12];

		if (e && zset_score(&e->val, c->argv[j].p, c->argv[j].len, &score) &&
		    geo_hash_string(score, buf))
			reply_bulk(c, buf, 11);
		else
			reply_null(c);
	}
}

void cmd_geopos(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (e && !entry_is(c, e, OBJ_ZSET))
		return;
	reply_array(c, c->argc - 2);
	for (int j = 2; j < c->argc; j++) {
		double xy[2];

		if (e && member_position(&e->val, &c->argv[j], xy)) {
			reply_array(c, 2);
			reply_double(c, xy[0]);
			reply_double(c, xy[1]);
		} else {
			reply_null_array(c);
		}
	}
}

void cmd_geodist(struct client *c)
{
	double to_metres = 1, a[2], b[2];
	struct entry *e;

	if (c->argc == 5) {
		if ((to_metres = arg_unit(c, 4)) < 0)
			return;
	} else if (c->argc > 5) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find_read(c, 1);
	if (!e) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_ZSET))
		return;
	if (!member_position(&e->val, &c->argv[2], a) || !member_position(&e->val, &c->argv[3], b))
		reply_null(c);
	else
		reply_distance(c, geo_distance(a[0], a[1], b[0], b[1]) / to_metres);
}
