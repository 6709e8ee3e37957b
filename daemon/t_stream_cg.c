// SPDX-License-Identifier: BSD-3-Clause
/*
 * t_stream_cg: consumer groups, consumers and PELs (see t_stream_cg.h).
 */
#include <string.h>

#include "mem.h"
#include "t_stream_cg.h"

struct stream_cgroups {
	struct stream_group **v; /* by name */
	size_t n;
};

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r)
		return r;
	return alen < blen ? -1 : alen > blen;
}

/* ---- PEL arrays ---- */

size_t stream_pel_seek(const struct stream_pel *pel, const struct stream_id *id)
{
	size_t lo = 0, hi = pel->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (stream_id_cmp(&pel->v[mid]->id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct stream_nack *stream_pel_find(const struct stream_pel *pel, const struct stream_id *id,
				    size_t *at)
{
	size_t i;

	/* Deliveries append: look at the tail first. */
	if (pel->n && stream_id_cmp(&pel->v[pel->n - 1]->id, id) < 0)
		i = pel->n;
	else
		i = stream_pel_seek(pel, id);
	if (at)
		*at = i;
	return i < pel->n && !stream_id_cmp(&pel->v[i]->id, id) ? pel->v[i] : NULL;
}

static void pel_insert(struct stream_pel *pel, struct stream_nack *n)
{
	size_t at;

	stream_pel_find(pel, &n->id, &at);
	if (pel->n == pel->cap) {
		pel->cap = pel->cap ? pel->cap * 2 : 8;
		pel->v = xrealloc(pel->v, pel->cap * sizeof(*pel->v));
	}
	memmove(pel->v + at + 1, pel->v + at, (pel->n - at) * sizeof(*pel->v));
	pel->v[at] = n;
	pel->n++;
}

static void pel_erase(struct stream_pel *pel, const struct stream_id *id)
{
	size_t at;

	if (!stream_pel_find(pel, id, &at))
		return;
	memmove(pel->v + at, pel->v + at + 1, (pel->n - at - 1) * sizeof(*pel->v));
	pel->n--;
	if (!pel->n) {
		xfree(pel->v);
		pel->v = NULL;
		pel->cap = 0;
	}
}

/* ---- the time order ---- */

static void time_insert_after(struct stream_group *g, struct stream_nack *after,
			      struct stream_nack *n)
{
	n->prev = after;
	n->next = after ? after->next : g->time_head;
	if (n->next)
		n->next->prev = n;
	else
		g->time_tail = n;
	if (after)
		after->next = n;
	else
		g->time_head = n;
}

static void time_unlink(struct stream_group *g, struct stream_nack *n)
{
	if (n == g->nack_tail)
		g->nack_tail = n->prev;
	if (n->prev)
		n->prev->next = n->next;
	else
		g->time_head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		g->time_tail = n->prev;
	n->prev = n->next = NULL;
}

/* By delivery time, from the tail (times are mostly now), never inside the
 * NACK zone. */
static void time_insert_sorted(struct stream_group *g, struct stream_nack *n)
{
	struct stream_nack *cur = g->time_tail;

	if (!cur || n->delivery_time >= cur->delivery_time) {
		time_insert_after(g, cur, n);
		return;
	}
	while (cur != g->nack_tail && cur->delivery_time > n->delivery_time)
		cur = cur->prev;
	time_insert_after(g, cur, n);
}

void stream_nack_touch(struct stream_group *g, struct stream_nack *n, int64_t when)
{
	time_unlink(g, n);
	n->delivery_time = when;
	time_insert_sorted(g, n);
}

void stream_nack_release(struct stream_group *g, struct stream_nack *n)
{
	stream_nack_assign(n, NULL);
	time_unlink(g, n);
	n->delivery_time = 0;
	time_insert_after(g, g->nack_tail, n);
	g->nack_tail = n;
}

size_t stream_group_nacked(const struct stream_group *g)
{
	size_t k = 0;

	if (!g->nack_tail)
		return 0;
	for (const struct stream_nack *n = g->time_head; n; n = n->next) {
		k++;
		if (n == g->nack_tail)
			break;
	}
	return k;
}

struct stream_nack *stream_nack_add(struct stream_group *g, struct stream_consumer *c,
				    const struct stream_id *id, int64_t now)
{
	struct stream_nack *n = xmalloc(sizeof(*n));

	n->id = *id;
	n->delivery_time = now;
	n->delivery_count = 1;
	n->consumer = c;
	n->prev = n->next = NULL;
	pel_insert(&g->pel, n);
	if (c)
		pel_insert(&c->pel, n);
	time_insert_sorted(g, n);
	return n;
}

void stream_nack_assign(struct stream_nack *n, struct stream_consumer *c)
{
	if (n->consumer == c)
		return;
	if (n->consumer)
		pel_erase(&n->consumer->pel, &n->id);
	n->consumer = c;
	if (c)
		pel_insert(&c->pel, n);
}

void stream_nack_remove(struct stream_group *g, struct stream_nack *n)
{
	if (n->consumer)
		pel_erase(&n->consumer->pel, &n->id);
	pel_erase(&g->pel, &n->id);
	time_unlink(g, n);
	xfree(n);
}

/* ---- groups and consumers ---- */

static struct stream_cgroups *groups_of(const struct obj *o)
{
	return *stream_cg_slot(o);
}

struct stream_group **stream_groups(const struct obj *o, size_t *n)
{
	struct stream_cgroups *cg = groups_of(o);

	*n = cg ? cg->n : 0;
	return cg ? cg->v : NULL;
}

/* The index of name among the groups, or where it would go. */
static size_t group_seek(const struct stream_cgroups *cg, const char *name, size_t len, bool *found)
{
	size_t lo = 0, hi = cg ? cg->n : 0;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = name_cmp(cg->v[mid]->name, cg->v[mid]->len, name, len);

		if (!r) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct stream_group *stream_group_find(const struct obj *o, const char *name, size_t len)
{
	struct stream_cgroups *cg = groups_of(o);
	bool found;
	size_t at = group_seek(cg, name, len, &found);

	return found ? cg->v[at] : NULL;
}

struct stream_group *stream_group_create(struct obj *o, const char *name, size_t len,
					 const struct stream_id *last_id, long long entries_read)
{
	struct stream_cgroups **slot = stream_cg_slot(o);
	struct stream_group *g;
	bool found;
	size_t at;

	if (!*slot) {
		*slot = xmalloc(sizeof(**slot));
		memset(*slot, 0, sizeof(**slot));
	}
	at = group_seek(*slot, name, len, &found);
	if (found)
		return NULL;
	g = xmalloc(sizeof(*g));
	memset(g, 0, sizeof(*g));
	g->name = xstrndup(name, len);
	g->len = len;
	g->last_id = *last_id;
	g->entries_read = entries_read;
	(*slot)->v = xrealloc((*slot)->v, ((*slot)->n + 1) * sizeof(*(*slot)->v));
	memmove((*slot)->v + at + 1, (*slot)->v + at, ((*slot)->n - at) * sizeof(*(*slot)->v));
	(*slot)->v[at] = g;
	(*slot)->n++;
	return g;
}

static void consumer_free(struct stream_consumer *c)
{
	xfree(c->pel.v);
	xfree(c->name);
	xfree(c);
}

static void group_free(struct stream_group *g)
{
	for (size_t i = 0; i < g->pel.n; i++)
		xfree(g->pel.v[i]);
	xfree(g->pel.v);
	for (size_t i = 0; i < g->nconsumers; i++)
		consumer_free(g->consumers[i]);
	xfree(g->consumers);
	xfree(g->name);
	xfree(g);
}

void stream_group_destroy(struct obj *o, struct stream_group *g)
{
	struct stream_cgroups **slot = stream_cg_slot(o);
	bool found;
	size_t at = group_seek(*slot, g->name, g->len, &found);

	if (!found)
		return;
	memmove((*slot)->v + at, (*slot)->v + at + 1, ((*slot)->n - at - 1) * sizeof(*(*slot)->v));
	(*slot)->n--;
	group_free(g);
}

static size_t consumer_seek(const struct stream_group *g, const char *name, size_t len, bool *found)
{
	size_t lo = 0, hi = g->nconsumers;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = name_cmp(g->consumers[mid]->name, g->consumers[mid]->len, name, len);

		if (!r) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct stream_consumer *stream_consumer_find(const struct stream_group *g, const char *name,
					     size_t len)
{
	bool found;
	size_t at = consumer_seek(g, name, len, &found);

	return found ? g->consumers[at] : NULL;
}

struct stream_consumer *stream_consumer_create(struct stream_group *g, const char *name, size_t len,
					       int64_t now)
{
	bool found;
	size_t at = consumer_seek(g, name, len, &found);
	struct stream_consumer *c;

	if (found)
		return NULL;
	c = xmalloc(sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->name = xstrndup(name, len);
	c->len = len;
	c->seen_time = now;
	c->active_time = -1;
	g->consumers = xrealloc(g->consumers, (g->nconsumers + 1) * sizeof(*g->consumers));
	memmove(g->consumers + at + 1, g->consumers + at,
		(g->nconsumers - at) * sizeof(*g->consumers));
	g->consumers[at] = c;
	g->nconsumers++;
	return c;
}

size_t stream_consumer_delete(struct stream_group *g, struct stream_consumer *c)
{
	size_t pending = c->pel.n, at;
	bool found;

	/* Its NACKs leave the group's PEL too. */
	while (c->pel.n)
		stream_nack_remove(g, c->pel.v[c->pel.n - 1]);
	at = consumer_seek(g, c->name, c->len, &found);
	if (found) {
		memmove(g->consumers + at, g->consumers + at + 1,
			(g->nconsumers - at - 1) * sizeof(*g->consumers));
		g->nconsumers--;
	}
	consumer_free(c);
	return pending;
}

void stream_group_set_last(struct obj *o, struct stream_group *g, const struct stream_id *id)
{
	(void)o;
	g->last_id = *id;
}

/* ---- references ---- */

bool stream_entry_referenced(const struct obj *o, const struct stream_id *id)
{
	size_t n;
	struct stream_group **v = stream_groups(o, &n);

	for (size_t i = 0; i < n; i++)
		if (stream_id_cmp(&v[i]->last_id, id) < 0 || stream_pel_find(&v[i]->pel, id, NULL))
			return true;
	return false;
}

void stream_entry_unreference(struct obj *o, const struct stream_id *id)
{
	size_t n;
	struct stream_group **v = stream_groups(o, &n);

	for (size_t i = 0; i < n; i++) {
		struct stream_nack *nack = stream_pel_find(&v[i]->pel, id, NULL);

		if (nack)
			stream_nack_remove(v[i], nack);
	}
}

/* ---- lag ---- */

static bool id_zero(const struct stream_id *id)
{
	return !id->ms && !id->seq;
}

bool stream_has_tombstones_after(const struct obj *o, const struct stream_id *start)
{
	struct stream_id maxdel = stream_max_deleted(o), zero = { 0, 0 };

	if (!stream_len(o) || id_zero(&maxdel))
		return false;
	if (!start)
		start = &zero;
	return stream_id_cmp(start, &maxdel) <= 0;
}

long long stream_estimate_read(const struct obj *o, const struct stream_id *id)
{
	uint64_t added = stream_entries_added(o), len = stream_len(o);
	struct stream_id last = stream_last_id(o), maxdel = stream_max_deleted(o),
			 first = stream_first_id(o);
	int cmp_last, cmp_first;

	if (!added)
		return 0;
	if (!len && stream_id_cmp(id, &last) < 1)
		return (long long)added;
	if (!id_zero(id) && stream_id_cmp(id, &maxdel) < 0)
		return STREAM_ENTRIES_READ_INVALID;
	cmp_last = stream_id_cmp(id, &last);
	if (!cmp_last)
		return (long long)added;
	if (cmp_last > 0)
		return STREAM_ENTRIES_READ_INVALID;
	cmp_first = stream_id_cmp(id, &first);
	if (id_zero(&maxdel) || stream_id_cmp(&maxdel, &first) < 0) {
		if (cmp_first < 0)
			return (long long)(added - len);
		if (!cmp_first)
			return (long long)(added - len + 1);
	}
	return STREAM_ENTRIES_READ_INVALID;
}

bool stream_group_lag(const struct obj *o, const struct stream_group *g, long long *lag)
{
	uint64_t added = stream_entries_added(o), len = stream_len(o);
	struct stream_id maxdel = stream_max_deleted(o), first = stream_first_id(o);
	long long read;

	if (!added || !len) {
		*lag = 0;
		return true;
	}
	if (stream_id_cmp(&g->last_id, &first) < 0 && stream_id_cmp(&maxdel, &first) < 0) {
		*lag = (long long)len;
		return true;
	}
	if (g->entries_read != STREAM_ENTRIES_READ_INVALID &&
	    !stream_has_tombstones_after(o, &g->last_id)) {
		*lag = (long long)added - g->entries_read;
		return true;
	}
	read = stream_estimate_read(o, &g->last_id);
	if (read == STREAM_ENTRIES_READ_INVALID)
		return false;
	*lag = (long long)added - read;
	return true;
}

/* ---- the stream's operations ---- */

void stream_cg_free(struct stream_cgroups *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->n; i++)
		group_free(cg->v[i]);
	xfree(cg->v);
	xfree(cg);
}

struct stream_cgroups *stream_cg_dup(const struct stream_cgroups *cg)
{
	struct stream_cgroups *d;

	if (!cg)
		return NULL;
	d = xmalloc(sizeof(*d));
	d->n = cg->n;
	d->v = xmalloc((cg->n ? cg->n : 1) * sizeof(*d->v));
	for (size_t i = 0; i < cg->n; i++) {
		const struct stream_group *g = cg->v[i];
		struct stream_group *h = xmalloc(sizeof(*h));

		memset(h, 0, sizeof(*h));
		h->name = xstrndup(g->name, g->len);
		h->len = g->len;
		h->last_id = g->last_id;
		h->entries_read = g->entries_read;
		for (size_t k = 0; k < g->nconsumers; k++) {
			const struct stream_consumer *c = g->consumers[k];
			struct stream_consumer *e = stream_consumer_create(h, c->name, c->len, 0);

			e->seen_time = c->seen_time;
			e->active_time = c->active_time;
		}
		/* In time order, the NACK zone kept, so the copy's order is the
		 * original's. */
		for (const struct stream_nack *n = g->time_head; n; n = n->next) {
			struct stream_consumer *c =
				n->consumer ? stream_consumer_find(h, n->consumer->name,
								   n->consumer->len)
					    : NULL;
			struct stream_nack *m = stream_nack_add(h, c, &n->id, n->delivery_time);

			m->delivery_count = n->delivery_count;
			time_unlink(h, m);
			time_insert_after(h, h->time_tail, m);
			if (n == g->nack_tail)
				h->nack_tail = m;
		}
		d->v[i] = h;
	}
	return d;
}

size_t stream_cg_mem(const struct stream_cgroups *cg)
{
	size_t bytes;

	if (!cg)
		return 0;
	bytes = xusable((void *)cg) + (cg->v ? xusable(cg->v) : 0);
	for (size_t i = 0; i < cg->n; i++) {
		const struct stream_group *g = cg->v[i];

		bytes += xusable((void *)g) + xusable(g->name);
		bytes += g->pel.v ? xusable(g->pel.v) : 0;
		if (g->pel.n)
			bytes += g->pel.n * xusable(g->pel.v[0]);
		bytes += g->consumers ? xusable(g->consumers) : 0;
		for (size_t k = 0; k < g->nconsumers; k++) {
			const struct stream_consumer *c = g->consumers[k];

			bytes += xusable((void *)c) + xusable(c->name) +
				 (c->pel.v ? xusable(c->pel.v) : 0);
		}
	}
	return bytes;
}
