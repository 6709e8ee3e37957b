// SPDX-License-Identifier: BSD-3-Clause
/*
 * The vector-set commands of Redis 8 (V*), on t_vset.h, with Redis 8.8's
 * syntax, replies and error strings.
 *
 * Searches and the neighbour search of VADD run with the key's shard lock
 * dropped (shard_drop/shard_take): the set is pinned by a reference and
 * the graph's rwlock keeps it consistent, so a long VSIM never stalls the
 * other keys of its shard and two workers search one set at once. The rule
 * (docs/vectors.md): a VSIM sees every VADD that was acknowledged before it
 * started, since an acknowledged VADD has linked its node under the graph's
 * exclusive lock. Inside MULTI, scripts or a nested call the lock is kept.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "exec_ctx.h"
#include "mem.h"
#include "t_vset.h"
#include "util.h"
#include "vset_filter.h"

#define VSET_DEFAULT_EF_BUILD 200
#define VSET_DEFAULT_EF_SEARCH 100
#define VSET_DEFAULT_COUNT 10
#define VSET_MAX_EF 1000000

/* ---- the shard lock during searches -------------------------------------- */

/* May this command let go of its key's shard lock for a while? */
static bool shard_droppable(void)
{
	return exec_ctx_top && !exec_ctx_top->outer && !exec_ctx_flags() && !store_locks_held;
}

static void shard_drop(struct client *c)
{
	store_shard_unlock(c->db, key_shard(c->argv[1].p, c->argv[1].len));
}

static void shard_take(struct client *c)
{
	store_shard_lock(c->db, key_shard(c->argv[1].p, c->argv[1].len));
}

/* ---- arguments ------------------------------------------------------------ */

static bool word_is(const struct arg *a, const char *w)
{
	return !strcasecmp(a->p, w) && strlen(w) == a->len;
}

static bool arg_long(const struct arg *a, long long *v)
{
	return str_to_ll(a->p, a->len, v);
}

/*
 * [REDUCE dim] FP32 blob | VALUES n v1 .. vn from argv[i]: the vector (owned,
 * xmalloc'd) and its dimension, the reduction asked, and how many arguments
 * it took. NULL: "invalid vector specification".
 */
static float *parse_vector(struct client *c, int i, bool allow_reduce, uint32_t *dim,
			   uint32_t *reduce, int *used)
{
	const struct arg *av = c->argv;
	int start = i;
	float *v;

	*reduce = 0;
	if (allow_reduce && c->argc > i + 2 && word_is(&av[i], "REDUCE")) {
		long long r;

		if (!arg_long(&av[i + 1], &r) || r <= 0)
			return NULL;
		*reduce = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
		i += 2;
	}
	if (i >= c->argc)
		return NULL;
	if (word_is(&av[i], "FP32")) {
		if (c->argc < i + 2)
			return NULL;
		if (av[i + 1].len % 4 || av[i + 1].len < 4 || av[i + 1].len / 4 > VSET_MAX_DIM)
			return NULL;
		*dim = (uint32_t)(av[i + 1].len / 4);
		v = xmalloc(av[i + 1].len);
		memcpy(v, av[i + 1].p, av[i + 1].len);
		i += 2;
	} else if (word_is(&av[i], "VALUES")) {
		long long n;

		if (c->argc < i + 2)
			return NULL;
		if (!arg_long(&av[i + 1], &n) || n < 1 || n > VSET_MAX_DIM || c->argc < i + 2 + n)
			return NULL;
		v = xmalloc((size_t)n * sizeof(float));
		for (long long j = 0; j < n; j++) {
			double d;

			if (!str_to_d(av[i + 2 + j].p, av[i + 2 + j].len, &d)) {
				xfree(v);
				return NULL;
			}
			v[j] = (float)d;
		}
		*dim = (uint32_t)n;
		i += 2 + (int)n;
	} else {
		return NULL;
	}
	if (*reduce && *reduce > *dim) {
		xfree(v);
		return NULL;
	}
	*used = i - start;
	return v;
}

/* The vector set at argv[1], or NULL: missing (*e NULL) or WRONGTYPE
 * replied (returns false). */
static bool vset_lookup(struct client *c, bool write, struct entry **e, struct vset **v)
{
	*e = write ? key_find(c, 1) : key_find_read(c, 1);
	*v = NULL;
	if (!*e)
		return true;
	if (!entry_is(c, *e, OBJ_VSET))
		return false;
	*v = vset_of(&(*e)->val);
	return true;
}

/* Redis's arity error for a module command: the name as typed. */
static bool argc_max(struct client *c, int max)
{
	if (c->argc <= max)
		return true;
	reply_errorf(c, "wrong number of arguments for '%s' command", c->argv[0].p);
	return false;
}

static void reply_elem(struct client *c, const struct vset_elem *e)
{
	reply_bulk(c, e->name, e->len);
}

/* ---- VADD ------------------------------------------------------------------ */

struct vadd_args {
	float *vec;
	uint32_t dim, reduce;
	const struct arg *ele, *attr;
	long long ef, m;
	int quant;
	bool cas;
};

static bool vadd_parse(struct client *c, struct vadd_args *a)
{
	int used, j;

	memset(a, 0, sizeof(*a));
	a->ef = VSET_DEFAULT_EF_BUILD;
	a->m = VHNSW_DEFAULT_M;
	a->quant = VHNSW_Q8;
	a->vec = parse_vector(c, 2, true, &a->dim, &a->reduce, &used);
	if (!a->vec) {
		reply_error(c, "invalid vector specification");
		return false;
	}
	if (c->argc - 2 - used < 1) {
		reply_errorf(c, "wrong number of arguments for '%s' command", c->argv[0].p);
		goto fail;
	}
	a->ele = &c->argv[2 + used];
	for (j = 2 + used + 1; j < c->argc; j++) {
		const struct arg *o = &c->argv[j];

		if (word_is(o, "CAS")) {
			a->cas = true;
		} else if (word_is(o, "EF") && j + 1 < c->argc) {
			if (!arg_long(&c->argv[j + 1], &a->ef) || a->ef <= 0 ||
			    a->ef > VSET_MAX_EF) {
				reply_error(c, "invalid EF");
				goto fail;
			}
			j++;
		} else if (word_is(o, "M") && j + 1 < c->argc) {
			if (!arg_long(&c->argv[j + 1], &a->m) || a->m < VHNSW_MIN_M ||
			    a->m > VHNSW_MAX_M) {
				reply_error(c, "invalid M");
				goto fail;
			}
			j++;
		} else if (word_is(o, "SETATTR") && j + 1 < c->argc) {
			a->attr = &c->argv[++j];
		} else if (word_is(o, "NOQUANT")) {
			a->quant = VHNSW_NOQUANT;
		} else if (word_is(o, "BIN")) {
			a->quant = VHNSW_BIN;
		} else if (word_is(o, "Q8")) {
			a->quant = VHNSW_Q8;
		} else {
			reply_error(c, "invalid option after element");
			goto fail;
		}
	}
	return true;
fail:
	xfree(a->vec);
	return false;
}

/* Checks a's vector against the existing set v and projects it (a->vec
 * becomes v's dimension); false with the error replied. */
static bool vadd_fit(struct client *c, struct vset *v, struct vadd_args *a)
{
	float *p;

	if (v->h->quant != a->quant) {
		reply_error(c, "asked quantization mismatch with existing vector set");
		return false;
	}
	if (v->h->m != a->m) {
		reply_error(c, "asked M value mismatch with existing vector set");
		return false;
	}
	if ((!v->proj && v->h->dim != a->dim) || (v->proj && v->h->dim != a->reduce)) {
		reply_errorf(c, "Vector dimension mismatch - got %d but set has %d", (int)a->dim,
			     (int)v->h->dim);
		return false;
	}
	if (a->reduce && !v->proj) {
		reply_error(c, "cannot add projection to existing set without projection");
		return false;
	}
	if (!v->proj)
		return true;
	if (a->dim != v->proj_in) {
		reply_errorf(
			c, "Input dimension mismatch for projection - got %d but projection expects %d",
			(int)a->dim, (int)v->proj_in);
		return false;
	}
	p = xmalloc(v->h->dim * sizeof(float));
	vset_project(v, a->vec, p);
	xfree(a->vec);
	a->vec = p;
	a->dim = v->h->dim;
	return true;
}

/* Links a new element into v (prep: the neighbour search done without the
 * shard lock, or NULL). A new element keeps even an empty SETATTR, as Redis
 * does; on an update an empty one clears the attributes. */
static void vadd_insert(struct vset *v, struct vadd_args *a, struct vhnsw_query *q,
			struct vhnsw_prep *prep, bool update)
{
	struct vset_elem *e = vset_elem_add(v, a->ele->p, a->ele->len);

	if (a->attr && (a->attr->len || !update)) {
		e->attr = xstrndup(a->attr->p, a->attr->len);
		e->alen = a->attr->len;
		v->nattrs++;
	}
	e->node = vhnsw_commit(v->h, prep, q, (uint32_t)a->ef, e);
}

/*
 * Adds a->ele to v (the key's entry e) or gives it the new vector: 1 added,
 * 0 updated, -EAGAIN if the key changed while the shard lock was let go
 * (nothing done: run the command again).
 */
static int vadd_apply(struct client *c, struct entry *e, struct vset *v, struct vadd_args *a)
{
	struct vhnsw_prep *prep = NULL;
	struct vset_elem *old;
	struct vhnsw_query q;

	vhnsw_query_init(v->h, a->vec, &q);
	old = vset_find(v, a->ele->p, a->ele->len);
	if (old) {
		/* An update: the node is made again with the new vector; the
		 * attributes stay unless SETATTR says otherwise. */
		char *attr = old->attr;
		size_t alen = old->alen;

		old->attr = NULL;
		if (attr)
			v->nattrs--;
		vset_elem_remove(v, old);
		vadd_insert(v, a, &q, NULL, true);
		old = vset_find(v, a->ele->p, a->ele->len);
		if (!a->attr && attr) {
			old->attr = attr;
			old->alen = alen;
			v->nattrs++;
		} else {
			xfree(attr);
		}
		db_changed(c->db, e);
		return 0;
	}
	if (v->h->count && shard_droppable()) {
		/* The neighbour search, the slow half, without the shard lock;
		 * then the set must still be the key's and the name still new. */
		vset_get(v);
		shard_drop(c);
		prep = vhnsw_prepare(v->h, &q, (uint32_t)a->ef);
		shard_take(c);
		e = key_find(c, 1);
		if (!e || e->val.type != OBJ_VSET || vset_of(&e->val) != v ||
		    vset_find(v, a->ele->p, a->ele->len)) {
			vset_put(v);
			vhnsw_prep_free(prep);
			vhnsw_query_free(&q);
			return -EAGAIN;
		}
		vset_put(v);
	}
	vadd_insert(v, a, &q, prep, false);
	vhnsw_prep_free(prep);
	db_changed(c->db, e);
	return 1;
}

void cmd_vadd(struct client *c)
{
	struct vadd_args a;
	struct entry *e;
	struct vset *v;
	int rc;

	if (c->argc < 5) {
		reply_errorf(c, "wrong number of arguments for '%s' command", c->argv[0].p);
		return;
	}
	if (!vadd_parse(c, &a))
		return;
	if (!vset_lookup(c, true, &e, &v))
		goto out;
	if (!v) {
		bool ok;
		struct obj o = vset_new(a.reduce ? a.reduce : a.dim, a.quant, VHNSW_COSINE,
					(uint32_t)a.m, &ok);

		if (!ok) {
			reply_error(c, "unable to create a Vector Set: system resources issue?");
			goto out;
		}
		v = vset_of(&o);
		if (a.reduce) {
			float *p = xmalloc(a.reduce * sizeof(float));

			v->proj = vset_projection(a.dim, a.reduce);
			v->proj_in = a.dim;
			vset_project(v, a.vec, p);
			xfree(a.vec);
			a.vec = p;
			a.dim = a.reduce;
		}
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, o);
	} else if (!vadd_fit(c, v, &a)) {
		goto out;
	}
	rc = vadd_apply(c, e, v, &a);
	if (rc == -EAGAIN) {
		/* It changed meanwhile: run again from the start. */
		xfree(a.vec);
		cmd_vadd(c);
		return;
	}
	reply_bool(c, rc);
out:
	xfree(a.vec);
}

/* ---- VSIM ------------------------------------------------------------------ */

struct vsim_args {
	long long count, ef, filter_ef;
	double epsilon;
	bool withscores, withattribs, truth;
	bool distances;		/* VSIM.SEARCH: scores are the metric's distances */
	struct vfilter *filter; /* FILTER's, owned; or NULL */
};

/* The filter's test of one element: its attributes against the expression. */
static int vsim_accept(void *value, void *arg)
{
	const struct vset_elem *e = value;

	return vfilter_match(arg, e->attr, e->attr ? e->alen : 0);
}

static void vsim_reply(struct client *c, const struct vsim_args *a, struct vhnsw_result *r,
		       uint32_t n)
{
	bool map = c->resp == 3 && (a->withscores || a->withattribs);
	uint32_t k = 0;

	while (k < n && k < (uint64_t)a->count && !(r[k].dist / 2 > a->epsilon))
		k++;
	if (map)
		reply_map(c, k);
	else
		reply_array(c, (long)k * (1 + a->withscores + a->withattribs));
	for (uint32_t i = 0; i < k; i++) {
		const struct vset_elem *e = r[i].node->value;

		reply_elem(c, e);
		if (c->resp == 3 && a->withscores && a->withattribs)
			reply_array(c, 2);
		if (a->withscores)
			reply_double(c, a->distances ? r[i].dist : 1.0 - r[i].dist / 2.0);
		if (a->withattribs) {
			if (e->attr)
				reply_bulk(c, e->attr, e->alen);
			else
				reply_null(c);
		}
	}
}

static bool vsim_options(struct client *c, int j, struct vsim_args *a)
{
	for (; j < c->argc; j++) {
		const struct arg *o = &c->argv[j];
		bool more = j + 1 < c->argc;

		if (word_is(o, "WITHSCORES")) {
			a->withscores = true;
		} else if (word_is(o, "WITHATTRIBS")) {
			a->withattribs = true;
		} else if (word_is(o, "TRUTH")) {
			a->truth = true;
		} else if (word_is(o, "NOTHREAD")) {
			/* Searches never take a thread of their own here. */
		} else if (word_is(o, "COUNT") && more) {
			if (!arg_long(&c->argv[++j], &a->count) || a->count <= 0) {
				reply_error(c, "invalid COUNT");
				return false;
			}
		} else if (word_is(o, "EPSILON") && more) {
			if (!str_to_d(c->argv[j + 1].p, c->argv[j + 1].len, &a->epsilon) ||
			    a->epsilon <= 0) {
				reply_error(c, "invalid EPSILON");
				return false;
			}
			j++;
		} else if (word_is(o, "EF") && more) {
			if (!arg_long(&c->argv[++j], &a->ef) || a->ef <= 0 || a->ef > VSET_MAX_EF) {
				reply_error(c, "invalid EF");
				return false;
			}
		} else if (word_is(o, "FILTER") && more) {
			const char *err;

			vfilter_free(a->filter);
			a->filter = NULL;
			if (vfilter_compile(c->argv[j + 1].p, c->argv[j + 1].len, &a->filter,
					    &err)) {
				reply_error(c, err);
				return false;
			}
			j++;
		} else if (word_is(o, "FILTER-EF") && more) {
			if (!arg_long(&c->argv[++j], &a->filter_ef) || a->filter_ef <= 0) {
				reply_error(c, "invalid FILTER-EF");
				return false;
			}
		} else {
			reply_error(c, "syntax error in VSIM command");
			return false;
		}
	}
	return true;
}

/*
 * The search and its reply, with the shard lock let go when it may be: the
 * reference keeps v alive and the graph's shared lock keeps it whole.
 */
static void vsim_run(struct client *c, struct vset *v, const float *vec, struct vsim_args *a)
{
	struct vhnsw_result *res;
	struct vhnsw_query q;
	bool dropped = shard_droppable();
	uint32_t n, ef;

	ef = a->ef ? (uint32_t)a->ef : VSET_DEFAULT_EF_SEARCH;
	if ((uint64_t)a->count > ef)
		ef = a->count > VSET_MAX_EF ? VSET_MAX_EF : (uint32_t)a->count;
	vhnsw_query_init(v->h, vec, &q);
	vset_get(v);
	if (dropped)
		shard_drop(c);
	vhnsw_read_lock(v->h);
	/* Inserts may be linking meanwhile (they hold the shared lock too). */
	n = (uint32_t)__atomic_load_n(&v->h->count, __ATOMIC_RELAXED);
	if (ef > n)
		ef = n;
	res = xmalloc((ef ? ef : 1) * sizeof(*res));
	if (a->filter)
		n = vhnsw_search_filter(
			v->h, &q, ef, ef, a->truth, vsim_accept, a->filter,
			a->filter_ef ? (uint64_t)a->filter_ef : (uint64_t)a->count * 100, res);
	else
		n = vhnsw_search(v->h, &q, ef, ef, a->truth, res);
	vsim_reply(c, a, res, n);
	vhnsw_unlock(v->h);
	if (dropped)
		shard_take(c);
	vset_put(v);
	xfree(res);
	vhnsw_query_free(&q);
}

void cmd_vsim(struct client *c)
{
	struct vsim_args a = { .count = VSET_DEFAULT_COUNT, .epsilon = 2.0 };
	struct entry *e;
	struct vset *v;
	float *vec = NULL;
	uint32_t dim = 0, reduce;
	int used = 0;

	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v) {
		reply_array(c, 0);
		return;
	}
	if (word_is(&c->argv[2], "ELE")) {
		struct vset_elem *el = vset_find(v, c->argv[3].p, c->argv[3].len);

		if (!el) {
			reply_error(c, "element not found in set");
			return;
		}
		vec = xmalloc(v->h->dim * sizeof(float));
		vhnsw_node_vector(v->h, el->node, vec);
		dim = v->h->dim;
		used = 2;
	} else {
		vec = parse_vector(c, 2, false, &dim, &reduce, &used);
		if (!vec) {
			reply_error(c, "invalid vector specification");
			return;
		}
		if (v->proj && dim != v->h->dim) {
			float *p;

			if (dim != v->proj_in) {
				reply_errorf(c,
					     "Input dimension mismatch for projection - got %d but "
					     "projection expects %d",
					     (int)dim, (int)v->proj_in);
				goto out;
			}
			p = xmalloc(v->h->dim * sizeof(float));
			vset_project(v, vec, p);
			xfree(vec);
			vec = p;
			dim = v->h->dim;
		}
	}
	if (dim != v->h->dim) {
		reply_errorf(c, "Vector dimension mismatch - got %d but set has %d", (int)dim,
			     (int)v->h->dim);
		goto out;
	}
	if (!vsim_options(c, 2 + used, &a))
		goto out;
	vsim_run(c, v, vec, &a);
out:
	vfilter_free(a.filter);
	xfree(vec);
}

/* ---- small commands --------------------------------------------------------- */

void cmd_vdim(struct client *c)
{
	struct entry *e;
	struct vset *v;

	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v)
		reply_error(c, "key does not exist");
	else
		reply_int(c, v->h->dim);
}

void cmd_vcard(struct client *c)
{
	struct entry *e;
	struct vset *v;

	if (vset_lookup(c, false, &e, &v))
		reply_int(c, v ? (long long)v->h->count : 0);
}

void cmd_vrem(struct client *c)
{
	struct vset_elem *el;
	struct entry *e;
	struct vset *v;

	if (!vset_lookup(c, true, &e, &v))
		return;
	if (!v || !(el = vset_find(v, c->argv[2].p, c->argv[2].len))) {
		reply_bool(c, 0);
		return;
	}
	vset_elem_remove(v, el);
	if (!v->h->count)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	reply_bool(c, 1);
}

void cmd_vismember(struct client *c)
{
	struct entry *e;
	struct vset *v;

	if (vset_lookup(c, false, &e, &v))
		reply_bool(c, v && vset_find(v, c->argv[2].p, c->argv[2].len));
}

void cmd_vemb(struct client *c)
{
	bool raw = false;
	struct vset_elem *el;
	struct entry *e;
	struct vset *v;

	for (int j = 3; j < c->argc; j++) {
		if (!strcasecmp(c->argv[j].p, "raw") && c->argv[j].len == 3) {
			raw = true;
		} else {
			reply_error(c, "invalid option");
			return;
		}
	}
	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v || !(el = vset_find(v, c->argv[2].p, c->argv[2].len))) {
		reply_null(c);
		return;
	}
	if (raw) {
		static const char *const names[] = { "f32", "int8", "bin" };
		static const size_t bytes_dim[] = { 4, 1, 0 };
		size_t bytes = bytes_dim[v->h->quant] * v->h->dim;
		bool q8 = v->h->quant == VHNSW_Q8;

		if (v->h->quant == VHNSW_BIN)
			bytes = (v->h->dim + 63) / 64 * 8;
		reply_array(c, 3 + q8);
		reply_status(c, names[v->h->quant]);
		reply_bulk(c, el->node->vec, bytes);
		reply_double(c, el->node->l2);
		if (q8)
			reply_double(c, el->node->range);
	} else {
		float *vec = xmalloc(v->h->dim * sizeof(float));

		vhnsw_node_vector(v->h, el->node, vec);
		reply_array(c, v->h->dim);
		for (uint32_t i = 0; i < v->h->dim; i++)
			reply_double(c, vec[i]);
		xfree(vec);
	}
}

void cmd_vsetattr(struct client *c)
{
	struct vset_elem *el;
	struct entry *e;
	struct vset *v;

	if (!vset_lookup(c, true, &e, &v))
		return;
	if (!v || !(el = vset_find(v, c->argv[2].p, c->argv[2].len))) {
		reply_bool(c, 0);
		return;
	}
	vset_set_attr(v, el, c->argv[3].p, c->argv[3].len);
	db_changed(c->db, e);
	reply_bool(c, 1);
}

void cmd_vgetattr(struct client *c)
{
	struct vset_elem *el;
	struct entry *e;
	struct vset *v;

	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v || !(el = vset_find(v, c->argv[2].p, c->argv[2].len)) || !el->attr)
		reply_null(c);
	else
		reply_bulk(c, el->attr, el->alen);
}

void cmd_vlinks(struct client *c)
{
	bool withscores = false;
	struct vset_elem *el;
	struct vhnsw_node *n;
	struct entry *e;
	struct vset *v;

	if (!argc_max(c, 4))
		return;
	if (c->argc == 4) {
		if (!word_is(&c->argv[3], "WITHSCORES")) {
			reply_errorf(c, "wrong number of arguments for '%s' command", c->argv[0].p);
			return;
		}
		withscores = true;
	}
	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v || !(el = vset_find(v, c->argv[2].p, c->argv[2].len))) {
		reply_null(c);
		return;
	}
	n = el->node;
	reply_array(c, n->level + 1);
	for (int l = (int)n->level; l >= 0; l--) {
		if (withscores)
			reply_map(c, n->nlinks[l]);
		else
			reply_array(c, n->nlinks[l]);
		for (uint32_t i = 0; i < n->nlinks[l]; i++) {
			reply_elem(c, n->links[l][i]->value);
			if (withscores)
				reply_double(c,
					     1.0f - vhnsw_distance(v->h, n, n->links[l][i]) / 2.0f);
		}
	}
}

void cmd_vinfo(struct client *c)
{
	static const char *const quant[] = { "f32", "int8", "bin" };
	struct entry *e;
	struct vset *v;

	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v) {
		reply_null_array(c);
		return;
	}
	reply_map(c, 9);
	reply_status(c, "quant-type");
	reply_status(c, quant[v->h->quant]);
	reply_status(c, "hnsw-m");
	reply_int(c, v->h->m);
	reply_status(c, "vector-dim");
	reply_int(c, v->h->dim);
	reply_status(c, "projection-input-dim");
	reply_int(c, v->proj_in);
	reply_status(c, "size");
	reply_int(c, (long long)v->h->count);
	reply_status(c, "max-level");
	reply_int(c, v->h->max_level);
	reply_status(c, "attributes-count");
	reply_int(c, (long long)v->nattrs);
	reply_status(c, "vset-uid");
	reply_int(c, (long long)v->uid);
	reply_status(c, "hnsw-max-node-uid");
	reply_int(c, (long long)v->h->last_id);
}

static uint64_t rand64(void)
{
	return ((uint64_t)random() << 33) ^ ((uint64_t)random() << 11) ^ (uint64_t)random();
}

void cmd_vrandmember(struct client *c)
{
	long long count = 1, want;
	bool with_count = c->argc == 3;
	struct entry *e;
	struct vset *v;

	if (!argc_max(c, 3))
		return;
	if (with_count) {
		if (!arg_long(&c->argv[2], &count)) {
			reply_error(c, "COUNT value is not an integer");
			return;
		}
		if (!count) {
			reply_array(c, 0);
			return;
		}
	}
	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v || !v->h->count) {
		if (with_count)
			reply_array(c, 0);
		else
			reply_null(c);
		return;
	}
	if (!with_count) {
		reply_elem(c, vhnsw_random(v->h, rand64())->value);
		return;
	}
	want = count < 0 ? (count == LLONG_MIN ? LLONG_MAX : -count) : count;
	if (count > 0 && want > (long long)v->h->count)
		want = (long long)v->h->count;
	if (count < 0) {
		reply_array(c, want);
		for (long long i = 0; i < want; i++)
			reply_elem(c, vhnsw_random(v->h, rand64())->value);
	} else if (want <= (long long)v->h->count / 5) {
		/* Few of many: random picks, duplicates dropped by a mark. */
		struct vhnsw_node **got = xcalloc((size_t)want, sizeof(*got));
		long long n = 0;

		reply_array(c, want);
		while (n < want) {
			struct vhnsw_node *x = vhnsw_random(v->h, rand64());
			bool dup = false;

			for (long long i = 0; i < n && !dup; i++)
				dup = got[i] == x;
			if (dup)
				continue;
			got[n++] = x;
			reply_elem(c, x->value);
		}
		xfree(got);
	} else {
		/* Many: a run of the insertion list from a random start. */
		struct vhnsw_node *x = vhnsw_random(v->h, rand64());

		reply_array(c, want);
		for (long long i = 0; i < want; i++) {
			if (!x)
				x = v->h->head;
			reply_elem(c, x->value);
			x = x->next;
		}
	}
}

/* ---- VRANGE ----------------------------------------------------------------- */

struct range_op {
	bool incl, min, max;
	const char *p;
	size_t len;
};

static bool range_parse(const struct arg *a, struct range_op *op)
{
	memset(op, 0, sizeof(*op));
	if (!a->len)
		return false;
	if (a->len == 1 && a->p[0] == '-') {
		op->min = true;
		return true;
	}
	if (a->len == 1 && a->p[0] == '+') {
		op->max = true;
		return true;
	}
	if ((a->p[0] != '[' && a->p[0] != '(') || a->len < 2)
		return false;
	op->incl = a->p[0] == '[';
	op->p = a->p + 1;
	op->len = a->len - 1;
	return true;
}

/* Whether e is past the end bound hi. */
static bool range_past(const struct vset_elem *e, const struct range_op *hi)
{
	int cmp;

	if (hi->max)
		return false;
	cmp = vset_name_cmp(e->name, e->len, hi->p, hi->len);
	return hi->incl ? cmp > 0 : cmp >= 0;
}

void cmd_vrange(struct client *c)
{
	struct vset_range_it it, walk;
	struct range_op lo, hi;
	long long count = -1, n = 0;
	struct vset_elem *el;
	struct entry *e;
	struct vset *v;

	if (!argc_max(c, 5))
		return;
	if (c->argc == 5 && !arg_long(&c->argv[4], &count)) {
		reply_error(c, "invalid COUNT value");
		return;
	}
	if (!range_parse(&c->argv[2], &lo)) {
		reply_error(c, "invalid start range format");
		return;
	}
	if (!range_parse(&c->argv[3], &hi)) {
		reply_error(c, "invalid end range format");
		return;
	}
	if (lo.max || hi.min) {
		reply_error(c, "'-' can only be used as first argument, '+' only as second");
		return;
	}
	if (!vset_lookup(c, false, &e, &v))
		return;
	if (!v) {
		reply_array(c, 0);
		return;
	}
	vset_range_start(v, lo.min ? NULL : lo.p, lo.len, lo.incl, &it);
	/* Count first (the array header comes first), then walk again. */
	walk = it;
	while ((count < 0 || n < count) && (el = vset_range_next(&walk)) && !range_past(el, &hi))
		n++;
	reply_array(c, n);
	for (long long i = 0; i < n; i++)
		reply_elem(c, vset_range_next(&it));
}

/* ---- the HotKV-style front end: VSIM.CREATEINDEX / VSIM.SET / VSIM.SEARCH -- */

struct word_choice {
	const char *word; /* NULL ends a list */
	int value;
};

/* The value of the word a names in a NULL-ended list (any case); false if
 * none. */
static bool word_pick(const struct arg *a, const struct word_choice *list, int *value)
{
	for (; list->word; list++)
		if (word_is(a, list->word)) {
			*value = list->value;
			return true;
		}
	return false;
}

void cmd_vsim_createindex(struct client *c)
{
	long long dim = 0, m = VHNSW_DEFAULT_M, efc = VSET_DEFAULT_EF_BUILD;
	int choice;
	enum vhnsw_metric metric = VHNSW_COSINE;
	enum vhnsw_quant quant = VHNSW_NOQUANT;
	struct obj o;
	bool ok;

	for (int j = 2; j < c->argc; j += 2) {
		const struct arg *o = &c->argv[j], *val = &c->argv[j + 1];

		if (j + 1 >= c->argc) {
			reply_error(c, "syntax error");
			return;
		}
		if (word_is(o, "DIM")) {
			if (!arg_long(val, &dim) || dim < 1 || dim > VSET_MAX_DIM) {
				reply_error(c, "invalid DIM");
				return;
			}
		} else if (word_is(o, "METRIC")) {
			static const struct word_choice metrics[] = { { "COSINE", VHNSW_COSINE },
								      { "L2", VHNSW_L2 },
								      { "IP", VHNSW_IP },
								      { 0 } };

			if (!word_pick(val, metrics, &choice)) {
				reply_error(c, "invalid METRIC");
				return;
			}
			metric = (enum vhnsw_metric)choice;
		} else if (word_is(o, "M")) {
			if (!arg_long(val, &m) || m < VHNSW_MIN_M || m > VHNSW_MAX_M) {
				reply_error(c, "invalid M");
				return;
			}
		} else if (word_is(o, "EF_CONSTRUCTION")) {
			if (!arg_long(val, &efc) || efc <= 0 || efc > VSET_MAX_EF) {
				reply_error(c, "invalid EF_CONSTRUCTION");
				return;
			}
		} else if (word_is(o, "TYPE")) {
			static const struct word_choice types[] = { { "FLOAT32", VHNSW_NOQUANT },
								    { "INT8", VHNSW_Q8 },
								    { "BIN", VHNSW_BIN },
								    { 0 } };

			if (!word_pick(val, types, &choice)) {
				reply_error(c, "invalid TYPE");
				return;
			}
			quant = (enum vhnsw_quant)choice;
		} else {
			reply_error(c, "syntax error");
			return;
		}
	}
	if (!dim) {
		reply_error(c, "DIM is required");
		return;
	}
	if (metric != VHNSW_COSINE && quant != VHNSW_NOQUANT) {
		reply_error(c, "METRIC L2 and IP need TYPE FLOAT32");
		return;
	}
	if (key_find(c, 1)) {
		reply_error(c, "index already exists");
		return;
	}
	o = vset_new((uint32_t)dim, quant, metric, (uint32_t)m, &ok);
	vset_of(&o)->ef_build = (uint32_t)efc;
	db_changed(c->db, db_add(c->db, c->argv[1].p, c->argv[1].len, o));
	reply_ok(c);
}

/* The index at argv[1] for VSIM.SET: NULL with the error replied. */
static struct vset *index_of(struct client *c, struct entry **e)
{
	*e = key_find(c, 1);
	if (!*e) {
		reply_error(c, "no such index");
		return NULL;
	}
	return entry_is(c, *e, OBJ_VSET) ? vset_of(&(*e)->val) : NULL;
}

/* A FP32 blob argument for index v, projected if v has REDUCE's matrix;
 * NULL with the error replied. */
static float *index_vector(struct client *c, const struct vset *v, const struct arg *blob)
{
	uint32_t dim = (uint32_t)(blob->len / 4), want = v->proj ? v->proj_in : v->h->dim;
	float *vec, *p;

	if (blob->len % 4 || !blob->len || blob->len / 4 > VSET_MAX_DIM) {
		reply_error(c, "invalid vector specification");
		return NULL;
	}
	if (dim != want) {
		reply_errorf(c, "Vector dimension mismatch - got %d but set has %d", (int)dim,
			     (int)want);
		return NULL;
	}
	vec = xmalloc(blob->len);
	memcpy(vec, blob->p, blob->len);
	if (!v->proj)
		return vec;
	p = xmalloc(v->h->dim * sizeof(float));
	vset_project(v, vec, p);
	xfree(vec);
	return p;
}

void cmd_vsim_set(struct client *c)
{
	struct vadd_args a = { 0 };
	struct entry *e;
	struct vset *v;
	int rc;

	if (!word_is(&c->argv[3], "FP32") ||
	    !(c->argc == 5 || (c->argc == 7 && word_is(&c->argv[5], "ATTR")))) {
		reply_error(c, "syntax error");
		return;
	}
	if (!(v = index_of(c, &e)) || !(a.vec = index_vector(c, v, &c->argv[4])))
		return;
	a.ele = &c->argv[2];
	a.attr = c->argc == 7 ? &c->argv[6] : NULL;
	a.ef = v->ef_build;
	rc = vadd_apply(c, e, v, &a);
	xfree(a.vec);
	if (rc == -EAGAIN)
		cmd_vsim_set(c);
	else
		reply_int(c, rc);
}

void cmd_vsim_search(struct client *c)
{
	struct vsim_args a = { .epsilon = INFINITY, .distances = true };
	struct entry *e;
	struct vset *v;
	float *vec = NULL;
	bool have_k = false;

	for (int j = 4; j < c->argc; j++) {
		const struct arg *o = &c->argv[j];
		bool more = j + 1 < c->argc;

		if (word_is(o, "K") && more) {
			if (!arg_long(&c->argv[++j], &a.count) || a.count <= 0 ||
			    a.count > VSET_MAX_EF) {
				reply_error(c, "invalid K");
				goto out;
			}
			have_k = true;
		} else if (word_is(o, "EF") && more) {
			if (!arg_long(&c->argv[++j], &a.ef) || a.ef <= 0 || a.ef > VSET_MAX_EF) {
				reply_error(c, "invalid EF");
				goto out;
			}
		} else if (word_is(o, "FILTER") && more) {
			const char *err;

			vfilter_free(a.filter);
			a.filter = NULL;
			if (vfilter_compile(c->argv[j + 1].p, c->argv[j + 1].len, &a.filter,
					    &err)) {
				reply_error(c, err);
				goto out;
			}
			j++;
		} else if (word_is(o, "WITHSCORES")) {
			a.withscores = true;
		} else if (word_is(o, "WITHATTRIBS")) {
			a.withattribs = true;
		} else {
			reply_error(c, "syntax error");
			goto out;
		}
	}
	if (!word_is(&c->argv[2], "FP32") || !have_k) {
		reply_error(c, "syntax error");
		goto out;
	}
	if (!vset_lookup(c, false, &e, &v))
		goto out;
	if (!v) {
		reply_array(c, 0);
		goto out;
	}
	if (!(vec = index_vector(c, v, &c->argv[3])))
		goto out;
	vsim_run(c, v, vec, &a);
out:
	vfilter_free(a.filter);
	xfree(vec);
}
