// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stream consumer groups (t_stream_cg.h): groups and consumers in name
 * order, the PEL arrays (sorted, shared NACKs, assignment, removal), the
 * delivery-time order with its NACK zone, entry references (ACKED, DELREF),
 * a trim that keeps referenced entries, lag and entries-read estimates as
 * Redis 8.8 computes them, and deep copies.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "object.h"
#include "t_stream.h"
#include "t_stream_cg.h"

#include "kselftest_harness.h"

static struct obj stream_of(int n)
{
	struct obj o;
	const char *f[1] = { "f" }, *v[1] = { "v" };
	size_t l[1] = { 1 };

	config.stream_node_max_entries = 100;
	config.stream_node_max_bytes = 4096;
	config.stream_idmp_duration = 100;
	config.stream_idmp_maxsize = 100;
	o = stream_new();
	for (int i = 1; i <= n; i++) {
		struct stream_id id = { (uint64_t)i, 1 }, out;

		if (stream_append(&o, f, l, v, l, 1, &id, true, 0, &out))
			break;
	}
	return o;
}

static struct stream_id sid(uint64_t ms)
{
	return (struct stream_id){ ms, 1 };
}

TEST(groups_and_consumers_in_name_order)
{
	struct obj o = stream_of(3);
	struct stream_id zero = { 0, 0 };
	struct stream_group **v, *g;
	size_t n;

	ASSERT_NE(NULL, stream_group_create(&o, "b", 1, &zero, 0));
	ASSERT_NE(NULL, stream_group_create(&o, "a", 1, &zero, 0));
	ASSERT_NE(NULL, stream_group_create(&o, "ab", 2, &zero, 0));
	ASSERT_EQ(NULL, stream_group_create(&o, "a", 1, &zero, 0));
	v = stream_groups(&o, &n);
	ASSERT_EQ(3u, n);
	ASSERT_EQ(0, memcmp(v[0]->name, "a", 1));
	ASSERT_EQ(0, memcmp(v[1]->name, "ab", 2));
	ASSERT_EQ(0, memcmp(v[2]->name, "b", 1));
	g = stream_group_find(&o, "ab", 2);
	ASSERT_NE(NULL, stream_consumer_create(g, "z", 1, 5));
	ASSERT_NE(NULL, stream_consumer_create(g, "y", 1, 5));
	ASSERT_EQ(NULL, stream_consumer_create(g, "y", 1, 5));
	ASSERT_EQ(0, memcmp(g->consumers[0]->name, "y", 1));
	ASSERT_EQ(-1, g->consumers[0]->active_time);
	stream_group_destroy(&o, stream_group_find(&o, "a", 1));
	ASSERT_EQ(NULL, stream_group_find(&o, "a", 1));
	obj_free(&o);
}

TEST(pel_shared_between_group_and_consumer)
{
	struct obj o = stream_of(5);
	struct stream_id zero = { 0, 0 }, id;
	struct stream_group *g = stream_group_create(&o, "g", 1, &zero, 0);
	struct stream_consumer *a = stream_consumer_create(g, "a", 1, 0);
	struct stream_consumer *b = stream_consumer_create(g, "b", 1, 0);

	for (uint64_t ms = 5; ms >= 1; ms--) {
		id = sid(ms);
		stream_nack_add(g, ms % 2 ? a : b, &id, (int64_t)ms * 10);
	}
	ASSERT_EQ(5u, g->pel.n);
	for (size_t i = 0; i + 1 < g->pel.n; i++)
		ASSERT_LT(stream_id_cmp(&g->pel.v[i]->id, &g->pel.v[i + 1]->id), 0);
	ASSERT_EQ(3u, a->pel.n);
	ASSERT_EQ(2u, b->pel.n);
	/* Time order: oldest delivery first. */
	ASSERT_EQ(1u, g->time_head->id.ms);
	ASSERT_EQ(5u, g->time_tail->id.ms);
	id = sid(3);
	stream_nack_assign(stream_pel_find(&g->pel, &id, NULL), b);
	ASSERT_EQ(2u, a->pel.n);
	ASSERT_EQ(3u, b->pel.n);
	stream_nack_touch(g, stream_pel_find(&g->pel, &id, NULL), 1000);
	ASSERT_EQ(3u, g->time_tail->id.ms);
	/* XNACK: unowned, at the head, FIFO among the NACKed. */
	id = sid(4);
	stream_nack_release(g, stream_pel_find(&g->pel, &id, NULL));
	id = sid(2);
	stream_nack_release(g, stream_pel_find(&g->pel, &id, NULL));
	ASSERT_EQ(2u, stream_group_nacked(g));
	ASSERT_EQ(4u, g->time_head->id.ms);
	ASSERT_EQ(2u, g->nack_tail->id.ms);
	ASSERT_EQ(NULL, g->time_head->consumer);
	ASSERT_EQ(1u, b->pel.n);
	/* A later delivery time never goes inside the zone. */
	id = sid(1);
	stream_nack_touch(g, stream_pel_find(&g->pel, &id, NULL), 0);
	ASSERT_EQ(1u, g->nack_tail->next->id.ms);
	ASSERT_EQ(2u, stream_consumer_delete(g, a));
	ASSERT_EQ(3u, g->pel.n);
	stream_nack_remove(g, g->pel.v[0]);
	ASSERT_EQ(2u, g->pel.n);
	obj_free(&o);
}

TEST(references)
{
	struct obj o = stream_of(10);
	struct stream_id last = sid(4), id;
	struct stream_group *g = stream_group_create(&o, "g", 1, &last, 4);
	struct stream_consumer *c = stream_consumer_create(g, "c", 1, 0);

	id = sid(2);
	stream_nack_add(g, c, &id, 0);
	ASSERT_TRUE(stream_entry_referenced(&o, &id));
	id = sid(3);
	ASSERT_FALSE(stream_entry_referenced(&o, &id));
	id = sid(5);
	ASSERT_TRUE(stream_entry_referenced(&o, &id)); /* not delivered yet */
	id = sid(2);
	stream_entry_unreference(&o, &id);
	ASSERT_EQ(0u, g->pel.n);
	ASSERT_FALSE(stream_entry_referenced(&o, &id));
	obj_free(&o);
}

static bool acked_only(struct obj *o, const struct stream_id *id)
{
	return !stream_entry_referenced(o, id);
}

TEST(trim_keeps_referenced_entries)
{
	struct obj o = stream_of(10);
	struct stream_id last = sid(4), id, minid = { 0, 0 };
	struct stream_group *g = stream_group_create(&o, "g", 1, &last, 4);
	struct stream_consumer *c = stream_consumer_create(g, "c", 1, 0);

	id = sid(2);
	stream_nack_add(g, c, &id, 0);
	ASSERT_EQ(3u, stream_trim(&o, STREAM_TRIM_MAXLEN, 0, &minid, false, 0, acked_only));
	ASSERT_EQ(7u, stream_len(&o));
	ASSERT_TRUE(stream_exists(&o, &id));
	id = sid(1);
	ASSERT_FALSE(stream_exists(&o, &id));
	obj_free(&o);
}

TEST(lag_as_redis)
{
	struct obj o = stream_of(10);
	struct stream_id zero = { 0, 0 }, id;
	struct stream_group *g = stream_group_create(&o, "g", 1, &zero, 0);
	long long lag;

	ASSERT_TRUE(stream_group_lag(&o, g, &lag));
	ASSERT_EQ(10, lag);
	id = sid(3);
	stream_group_set_last(&o, g, &id);
	g->entries_read = 3;
	ASSERT_TRUE(stream_group_lag(&o, g, &lag));
	ASSERT_EQ(7, lag);
	/* A tombstone after the last ID: the counter cannot be trusted. */
	id = sid(6);
	ASSERT_TRUE(stream_delete(&o, &id));
	ASSERT_FALSE(stream_group_lag(&o, g, &lag));
	id = sid(10);
	ASSERT_EQ(10, stream_estimate_read(&o, &id));
	id = sid(1);
	ASSERT_EQ(STREAM_ENTRIES_READ_INVALID, stream_estimate_read(&o, &id));
	g->entries_read = STREAM_ENTRIES_READ_INVALID;
	id = sid(10);
	stream_group_set_last(&o, g, &id);
	ASSERT_TRUE(stream_group_lag(&o, g, &lag));
	ASSERT_EQ(0, lag);
	obj_free(&o);
}

TEST(copies_are_deep)
{
	struct obj o = stream_of(4), d;
	struct stream_id zero = { 0, 0 }, id = sid(2);
	struct stream_group *g = stream_group_create(&o, "g", 1, &zero, 0), *h;
	struct stream_consumer *c = stream_consumer_create(g, "c", 1, 7);

	stream_nack_add(g, c, &id, 55)->delivery_count = 9;
	id = sid(3);
	stream_nack_release(g, stream_nack_add(g, c, &id, 60));
	d = obj_dup(&o);
	h = stream_group_find(&d, "g", 1);
	ASSERT_NE(NULL, h);
	ASSERT_NE(g, h);
	ASSERT_EQ(2u, h->pel.n);
	ASSERT_EQ(9u, h->pel.v[0]->delivery_count);
	ASSERT_EQ(55, h->pel.v[0]->delivery_time);
	ASSERT_EQ(h->consumers[0], h->pel.v[0]->consumer);
	ASSERT_EQ(1u, stream_group_nacked(h));
	ASSERT_EQ(3u, h->time_head->id.ms);
	obj_free(&o);
	ASSERT_EQ(1u, h->consumers[0]->pel.n);
	obj_free(&d);
}

TEST_HARNESS_MAIN
