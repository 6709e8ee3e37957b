// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stream type (t_stream.h): ID parsing, formatting and ordering; appends
 * with automatic, partial and explicit IDs; ranges both ways across nodes;
 * deletion flags and max-deleted-entry-id; trimming by MAXLEN and MINID,
 * exact and approximate (whole nodes) with LIMIT; IDMP; deep copies; and the
 * memory per entry of a 5-field stream against Redis's listpack encoding.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_stream.h"

#include "kselftest_harness.h"

static void node_limits(long long entries, long long bytes)
{
	config.stream_node_max_entries = entries;
	config.stream_node_max_bytes = bytes;
	config.stream_idmp_duration = 100;
	config.stream_idmp_maxsize = 100;
}

/* Appends one entry of pairs "f1","v1",... with the given ID (NULL: auto). */
static int add(struct obj *o, const struct stream_id *id, bool seq_given, int64_t now,
	       struct stream_id *out, int npairs, const char *const *kv)
{
	const char *f[8], *v[8];
	size_t fl[8], vl[8];

	for (int i = 0; i < npairs; i++) {
		f[i] = kv[2 * i];
		v[i] = kv[2 * i + 1];
		fl[i] = strlen(f[i]);
		vl[i] = strlen(v[i]);
	}
	return stream_append(o, f, fl, v, vl, (uint64_t)npairs, id, seq_given, now, out);
}

static int add_ms(struct obj *o, uint64_t ms, uint64_t seq)
{
	static const char *const kv[] = { "a", "1", "b", "2" };
	struct stream_id id = { ms, seq }, out;

	return add(o, &id, true, 0, &out, 2, kv);
}

struct ids {
	struct stream_id v[1024];
	size_t n;
};

static bool collect(void *ctx, struct stream_entry *e)
{
	struct ids *r = ctx;

	r->v[r->n++] = e->id;
	return true;
}

TEST(id_parse_and_format)
{
	struct stream_id id;
	bool given;
	char buf[STREAM_ID_STR_SIZE];

	ASSERT_EQ(0, stream_id_parse("5-3", 3, 0, true, &id, NULL));
	ASSERT_EQ(5u, id.ms);
	ASSERT_EQ(3u, id.seq);
	ASSERT_EQ(0, stream_id_parse("7", 1, UINT64_MAX, true, &id, NULL));
	ASSERT_EQ(UINT64_MAX, id.seq);
	ASSERT_EQ(0, stream_id_parse("9-*", 3, 0, true, &id, &given));
	ASSERT_FALSE(given);
	ASSERT_EQ(-EINVAL, stream_id_parse("9-*", 3, 0, true, &id, NULL));
	ASSERT_EQ(-EINVAL, stream_id_parse("+", 1, 0, true, &id, NULL));
	ASSERT_EQ(0, stream_id_parse("+", 1, 0, false, &id, NULL));
	ASSERT_EQ(UINT64_MAX, id.ms);
	ASSERT_EQ(-EINVAL, stream_id_parse("-1", 2, 0, false, &id, NULL));
	ASSERT_EQ(-EINVAL, stream_id_parse("1-2-3", 5, 0, false, &id, NULL));
	ASSERT_EQ(-EINVAL, stream_id_parse("18446744073709551616", 20, 0, false, &id, NULL));
	ASSERT_EQ(0, stream_id_parse("18446744073709551615-18446744073709551615", 41, 0, true, &id,
				     NULL));
	ASSERT_EQ(41, stream_id_str(buf, &id));
	ASSERT_STREQ("18446744073709551615-18446744073709551615", buf);
	ASSERT_EQ(-ERANGE, stream_id_incr(&id));
	id = (struct stream_id){ 1, 0 };
	ASSERT_EQ(0, stream_id_decr(&id));
	ASSERT_EQ(0u, id.ms);
	ASSERT_EQ(UINT64_MAX, id.seq);
	ASSERT_EQ(-ERANGE, stream_id_decr(&(struct stream_id){ 0, 0 }));
	ASSERT_EQ(-1, stream_id_cmp(&(struct stream_id){ 1, 9 }, &(struct stream_id){ 2, 0 }));
	ASSERT_EQ(1, stream_id_cmp(&(struct stream_id){ 2, 1 }, &(struct stream_id){ 2, 0 }));
}

TEST(append_ids)
{
	static const char *const kv[] = { "f", "v" };
	struct obj o;
	struct stream_id out, id = { 5, 0 };

	node_limits(100, 4096);
	o = stream_new();
	ASSERT_EQ(0, add(&o, NULL, false, 1000, &out, 1, kv));
	ASSERT_EQ(1000u, out.ms);
	ASSERT_EQ(0u, out.seq);
	/* The clock behind the last ID: the sequence goes on. */
	ASSERT_EQ(0, add(&o, NULL, false, 999, &out, 1, kv));
	ASSERT_EQ(1000u, out.ms);
	ASSERT_EQ(1u, out.seq);
	/* ms-*: the next sequence in that millisecond. */
	id.ms = 1000;
	ASSERT_EQ(0, add(&o, &id, false, 0, &out, 1, kv));
	ASSERT_EQ(2u, out.seq);
	id.ms = 2000;
	ASSERT_EQ(0, add(&o, &id, false, 0, &out, 1, kv));
	ASSERT_EQ(0u, out.seq);
	id = (struct stream_id){ 2000, 0 };
	ASSERT_EQ(-EDOM, add(&o, &id, true, 0, &out, 1, kv));
	ASSERT_EQ(4u, stream_len(&o));
	ASSERT_EQ(4u, stream_entries_added(&o));
	ASSERT_EQ(2000u, stream_last_id(&o).ms);
	obj_free(&o);
}

TEST(ranges_across_nodes_both_ways)
{
	struct obj o;
	struct ids r = { 0 };
	struct stream_id lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX }, first;

	node_limits(7, 4096);
	o = stream_new();
	for (uint64_t i = 1; i <= 100; i++)
		ASSERT_EQ(0, add_ms(&o, i, i % 3));
	ASSERT_EQ(100u, stream_range(&o, &lo, &hi, false, 0, collect, &r));
	for (size_t i = 0; i < 100; i++)
		ASSERT_EQ(i + 1, r.v[i].ms);
	r.n = 0;
	ASSERT_EQ(100u, stream_range(&o, &lo, &hi, true, 0, collect, &r));
	for (size_t i = 0; i < 100; i++)
		ASSERT_EQ(100 - i, r.v[i].ms);
	/* A window with a count, each way. */
	lo = (struct stream_id){ 20, 0 };
	hi = (struct stream_id){ 40, UINT64_MAX };
	r.n = 0;
	ASSERT_EQ(5u, stream_range(&o, &lo, &hi, false, 5, collect, &r));
	ASSERT_EQ(20u, r.v[0].ms);
	ASSERT_EQ(24u, r.v[4].ms);
	r.n = 0;
	ASSERT_EQ(21u, stream_range(&o, &lo, &hi, true, 0, collect, &r));
	ASSERT_EQ(40u, r.v[0].ms);
	ASSERT_EQ(20u, r.v[20].ms);
	ASSERT_TRUE(stream_first(&o, &first));
	ASSERT_EQ(1u, first.ms);
	ASSERT_TRUE(stream_last(&o, &first));
	ASSERT_EQ(100u, first.ms);
	obj_free(&o);
}

struct entries {
	struct stream_entry v[8];
	size_t n;
};

static bool keep(void *ctx, struct stream_entry *e)
{
	struct entries *r = ctx;

	r->v[r->n++] = *e;
	return true;
}

/* An entry's pairs as "f=v f=v" into buf. */
static const char *pairs(struct stream_entry *e, char *buf, size_t size)
{
	const char *f, *v;
	size_t fl, vl, n = 0;

	buf[0] = '\0';
	while (stream_entry_next(e, &f, &fl, &v, &vl) && n < size)
		n += (size_t)snprintf(buf + n, size - n, "%s%.*s=%.*s", n ? " " : "", (int)fl, f,
				      (int)vl, v);
	return buf;
}

TEST(fields_master_and_own)
{
	static const char *const a[] = { "x", "1", "y", "2" }, *const b[] = { "z", "3" };
	static const char *const c[] = { "x", "", "y", "22222" };
	struct obj o;
	struct stream_id out, lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX };
	struct entries r = { 0 };
	char buf[64];

	node_limits(100, 4096);
	o = stream_new();
	ASSERT_EQ(0, add(&o, NULL, false, 1, &out, 2, a));
	ASSERT_EQ(0, add(&o, NULL, false, 2, &out, 1, b));
	ASSERT_EQ(0, add(&o, NULL, false, 3, &out, 2, c));
	ASSERT_EQ(3u, stream_range(&o, &lo, &hi, true, 0, keep, &r));
	ASSERT_EQ(2u, r.v[0].nfields);
	ASSERT_STREQ("x= y=22222", pairs(&r.v[0], buf, sizeof(buf)));
	ASSERT_STREQ("z=3", pairs(&r.v[1], buf, sizeof(buf)));
	ASSERT_STREQ("x=1 y=2", pairs(&r.v[2], buf, sizeof(buf)));
	obj_free(&o);
}

TEST(delete_flags_and_max_deleted)
{
	struct obj o;
	struct stream_id id = { 5, 0 }, first, lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX };
	struct ids r = { 0 };

	node_limits(3, 4096);
	o = stream_new();
	for (uint64_t i = 1; i <= 9; i++)
		ASSERT_EQ(0, add_ms(&o, i, 0));
	ASSERT_TRUE(stream_delete(&o, &id));
	ASSERT_FALSE(stream_delete(&o, &id));
	ASSERT_EQ(5u, stream_max_deleted(&o).ms);
	id.ms = 1;
	ASSERT_TRUE(stream_delete(&o, &id));
	ASSERT_TRUE(stream_first(&o, &first));
	ASSERT_EQ(2u, first.ms);
	ASSERT_EQ(5u, stream_max_deleted(&o).ms);
	ASSERT_EQ(7u, stream_range(&o, &lo, &hi, false, 0, collect, &r));
	ASSERT_EQ(2u, r.v[0].ms);
	ASSERT_EQ(6u, r.v[3].ms);
	/* A node emptied by deletes goes; the rest reads on. */
	for (uint64_t i = 4; i <= 6; i++) {
		id.ms = i;
		stream_delete(&o, &id);
	}
	r.n = 0;
	ASSERT_EQ(5u, stream_range(&o, &lo, &hi, true, 0, collect, &r));
	ASSERT_EQ(9u, r.v[0].ms);
	ASSERT_EQ(2u, r.v[4].ms);
	obj_free(&o);
}

TEST(trim_exact_and_approx)
{
	struct obj o;
	struct stream_id minid = { 0, 0 }, first;

	node_limits(10, 4096);
	o = stream_new();
	for (uint64_t i = 1; i <= 95; i++)
		ASSERT_EQ(0, add_ms(&o, i, 0));
	/* ~ drops whole nodes only: 95 -> 85 is one node, 80 stops at 85. */
	ASSERT_EQ(10u, stream_trim(&o, STREAM_TRIM_MAXLEN, 80, &minid, true, 0, NULL));
	ASSERT_EQ(85u, stream_len(&o));
	/* LIMIT caps the work: no node fits in 5. */
	ASSERT_EQ(0u, stream_trim(&o, STREAM_TRIM_MAXLEN, 0, &minid, true, 5, NULL));
	ASSERT_EQ(20u, stream_trim(&o, STREAM_TRIM_MAXLEN, 0, &minid, true, 25, NULL));
	ASSERT_EQ(65u, stream_len(&o));
	/* = goes inside a node. */
	ASSERT_EQ(3u, stream_trim(&o, STREAM_TRIM_MAXLEN, 62, &minid, false, 0, NULL));
	ASSERT_TRUE(stream_first(&o, &first));
	ASSERT_EQ(34u, first.ms);
	minid.ms = 50;
	ASSERT_EQ(16u, stream_trim(&o, STREAM_TRIM_MINID, 0, &minid, false, 0, NULL));
	ASSERT_TRUE(stream_first(&o, &first));
	ASSERT_EQ(50u, first.ms);
	/* MINID ~: whole nodes whose last ID is below minid (the node of 41-50
	 * holds only 50 now, and goes whole). */
	minid.ms = 75;
	ASSERT_EQ(21u, stream_trim(&o, STREAM_TRIM_MINID, 0, &minid, true, 0, NULL));
	ASSERT_EQ(25u, stream_len(&o));
	ASSERT_EQ(25u, stream_trim(&o, STREAM_TRIM_MAXLEN, 0, &minid, false, 0, NULL));
	ASSERT_EQ(0u, stream_len(&o));
	ASSERT_FALSE(stream_first(&o, &first));
	ASSERT_EQ(95u, stream_last_id(&o).ms);
	obj_free(&o);
}

TEST(idmp_and_dup)
{
	struct obj o, d;
	struct stream_id id = { 7, 1 }, got;

	node_limits(100, 4096);
	config.stream_idmp_maxsize = 2;
	o = stream_new();
	ASSERT_EQ(0, add_ms(&o, 7, 1));
	stream_idmp_insert(&o, "p", 1, "i1", 2, &id);
	ASSERT_TRUE(stream_idmp_find(&o, "p", 1, "i1", 2, 50000, &got));
	ASSERT_EQ(7u, got.ms);
	ASSERT_FALSE(stream_idmp_find(&o, "q", 1, "i1", 2, 50000, &got));
	stream_idmp_insert(&o, "p", 1, "i2", 2, &id);
	stream_idmp_insert(&o, "p", 1, "i3", 2, &id);
	/* maxsize 2: the oldest went. */
	ASSERT_FALSE(stream_idmp_find(&o, "p", 1, "i1", 2, 50000, &got));
	d = obj_dup(&o);
	ASSERT_TRUE(stream_idmp_find(&d, "p", 1, "i3", 2, 50000, &got));
	ASSERT_EQ(1u, stream_len(&d));
	/* Past the duration (100 s after the entry's ms) nothing is kept. */
	ASSERT_FALSE(stream_idmp_find(&o, "p", 1, "i3", 2, 7 + 100 * 1000, &got));
	obj_free(&o);
	obj_free(&d);
}

/* Redis 8.8 listpack bytes for an entry of 5 master fields with values of
 * vlen bytes: flags, ms-delta, seq-delta (each 1 byte + 1 backlen), values
 * (1 + vlen + 1), lp-count (2). */
TEST(memory_per_entry_at_most_redis)
{
	static const char *const kv[] = { "name",  "alice", "city",  "paris", "age",
					  "forty", "role",  "admin", "team",  "blue1" };
	struct obj o;
	struct stream_id out;
	size_t before, per, redis = 2 + 2 + 2 + 5 * (1 + 5 + 1) + 2;

	node_limits(100, 4096);
	o = stream_new();
	ASSERT_EQ(0, add(&o, NULL, false, 1, &out, 5, kv));
	before = obj_mem(&o);
	for (int i = 0; i < 99; i++)
		ASSERT_EQ(0, add(&o, NULL, false, 1, &out, 5, kv));
	per = (obj_mem(&o) - before) / 99;
	ASSERT_LE(per, redis);
	obj_free(&o);
}

TEST_HARNESS_MAIN
