// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hash type (t_hash.h): listpack order and updates, conversion to a hash
 * table at both thresholds (and never back), field deadlines and their
 * reclaiming in both encodings, iteration, SCAN across resizes, random picks,
 * deep copies, and a large hash.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_hash.h"

#include "kselftest_harness.h"

static void limits(long long entries, long long value)
{
	config.hash_max_listpack_entries = entries;
	config.hash_max_listpack_value = value;
}

static bool set(struct obj *o, const char *f, const char *v)
{
	return hash_set(o, f, strlen(f), v, strlen(v), 0);
}

/* The value of f as a C string in buf, or NULL if absent. */
static const char *get(const struct obj *o, const char *f, char *buf, size_t size)
{
	struct hash_field hf;

	if (!hash_get(o, f, strlen(f), &hf))
		return NULL;
	snprintf(buf, size, "%.*s", (int)hf.vlen, hf.v);
	return buf;
}

static int64_t expire_of(const struct obj *o, const char *f)
{
	struct hash_field hf;

	if (!hash_get(o, f, strlen(f), &hf))
		return -2;
	return hf.expire;
}

/* The fields in iteration order, "f=v" joined by spaces, into buf. */
static const char *dump(const struct obj *o, char *buf, size_t size)
{
	struct hash_iter it;
	struct hash_field hf;
	size_t n = 0;

	buf[0] = '\0';
	hash_iter_init(&it, o);
	while (hash_iter_next(&it, &hf) && n < size)
		n += snprintf(buf + n, size - n, "%s%.*s=%.*s", n ? " " : "", (int)hf.flen, hf.f,
			      (int)hf.vlen, hf.v);
	return buf;
}

TEST(listpack_order_and_updates)
{
	char buf[256];
	struct obj o;

	limits(128, 64);
	o = hash_new();
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(0, hash_len(&o));
	ASSERT_TRUE(set(&o, "a", "1"));
	ASSERT_TRUE(set(&o, "b", "2"));
	ASSERT_TRUE(set(&o, "c", "3"));
	/* An update keeps the field's place, whatever the new value's size. */
	ASSERT_FALSE(set(&o, "b", "a much longer value than before"));
	ASSERT_FALSE(set(&o, "a", ""));
	ASSERT_STREQ("a= b=a much longer value than before c=3", dump(&o, buf, sizeof(buf)));
	ASSERT_EQ(3, hash_len(&o));
	ASSERT_TRUE(hash_delete(&o, "b", 1));
	ASSERT_FALSE(hash_delete(&o, "b", 1));
	ASSERT_TRUE(set(&o, "b", "new"));
	ASSERT_STREQ("a= c=3 b=new", dump(&o, buf, sizeof(buf)));
	ASSERT_STREQ("3", get(&o, "c", buf, sizeof(buf)));
	ASSERT_EQ(NULL, get(&o, "zz", buf, sizeof(buf)));
	ASSERT_TRUE(hash_exists(&o, "a", 1));
	ASSERT_FALSE(hash_exists(&o, "", 0));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	obj_free(&o);
}

TEST(binary_fields_and_values)
{
	static const char f[] = "f\0\r\n\xff", v[] = "\0\0v\0";
	struct hash_field hf;
	struct obj o;

	limits(128, 64);
	o = hash_new();
	ASSERT_TRUE(hash_set(&o, f, sizeof(f), v, sizeof(v), 0));
	ASSERT_TRUE(hash_set(&o, "", 0, "", 0, 0));
	ASSERT_FALSE(hash_exists(&o, f, 1));
	ASSERT_TRUE(hash_get(&o, f, sizeof(f), &hf));
	ASSERT_EQ(sizeof(v), hf.vlen);
	ASSERT_EQ(0, memcmp(v, hf.v, sizeof(v)));
	ASSERT_TRUE(hash_get(&o, "", 0, &hf));
	ASSERT_EQ(0, hf.vlen);
	obj_free(&o);
}

TEST(convert_at_entries_threshold)
{
	char name[16], buf[64];
	struct obj o;

	limits(4, 64);
	o = hash_new();
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_TRUE(set(&o, name, name));
	}
	/* Exactly at the threshold: still packed; updates do not convert. */
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_FALSE(set(&o, "f0", "x"));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_TRUE(set(&o, "f4", "y"));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_EQ(5, hash_len(&o));
	ASSERT_STREQ("x", get(&o, "f0", buf, sizeof(buf)));
	ASSERT_STREQ("f3", get(&o, "f3", buf, sizeof(buf)));
	/* Never back, even when emptied down to one field. */
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_TRUE(hash_delete(&o, name, strlen(name)));
	}
	ASSERT_EQ(1, hash_len(&o));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	obj_free(&o);

	/* A threshold of 0 converts on the first field, as Redis does. */
	limits(0, 64);
	o = hash_new();
	ASSERT_TRUE(set(&o, "a", "1"));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	obj_free(&o);
}

TEST(convert_at_value_threshold)
{
	char at[9] = "12345678", over[10] = "123456789", buf[64];
	struct obj o;

	limits(128, 8);
	o = hash_new();
	ASSERT_TRUE(set(&o, at, at));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	/* A value one byte over converts, even for an existing field. */
	ASSERT_FALSE(set(&o, at, over));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_STREQ(over, get(&o, at, buf, sizeof(buf)));
	obj_free(&o);

	/* So does a field name one byte over. */
	o = hash_new();
	ASSERT_TRUE(set(&o, "a", "1"));
	ASSERT_TRUE(set(&o, over, "v"));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_STREQ("1", get(&o, "a", buf, sizeof(buf)));
	ASSERT_STREQ("v", get(&o, over, buf, sizeof(buf)));
	obj_free(&o);
}

TEST(conversion_keeps_deadlines)
{
	char name[16];
	struct obj o;

	limits(3, 64);
	o = hash_new();
	set(&o, "a", "1");
	set(&o, "b", "2");
	set(&o, "c", "3");
	ASSERT_TRUE(hash_set_expire(&o, "b", 1, 5000));
	ASSERT_TRUE(hash_set_expire(&o, "c", 1, 3000));
	ASSERT_FALSE(hash_set_expire(&o, "zz", 2, 3000));
	ASSERT_EQ(3000, hash_next_expire(&o));
	set(&o, "d", "4");
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_EQ(HASH_NO_EXPIRE, expire_of(&o, "a"));
	ASSERT_EQ(5000, expire_of(&o, "b"));
	ASSERT_EQ(3000, expire_of(&o, "c"));
	ASSERT_EQ(3000, hash_next_expire(&o));
	/* Deadline 3000 is still live at 3000 and gone at 3001. */
	ASSERT_EQ(0, hash_expire_due(&o, 3000, NULL));
	ASSERT_EQ(1, hash_expire_due(&o, 3001, NULL));
	ASSERT_EQ(-2, expire_of(&o, "c"));
	ASSERT_EQ(5000, hash_next_expire(&o));
	ASSERT_EQ(3, hash_len(&o));
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%c", 'a' + i);
		hash_set_expire(&o, name, 1, 100);
	}
	ASSERT_EQ(2, hash_expire_due(&o, 200, NULL));
	ASSERT_EQ(1, hash_len(&o));
	ASSERT_EQ(HASH_NO_EXPIRE, hash_next_expire(&o));
	obj_free(&o);
}

/* Field deadlines in one encoding; large picks the hash table. */
static void deadlines(struct __test_metadata *_metadata, bool large)
{
	char buf[64];
	struct obj o;

	limits(large ? 0 : 128, 64);
	o = hash_new();
	set(&o, "a", "1");
	set(&o, "b", "2");
	set(&o, "c", "3");
	set(&o, "d", "4");
	ASSERT_EQ(large ? ENC_HASHTABLE : ENC_LISTPACK, o.enc);
	ASSERT_EQ(HASH_NO_EXPIRE, hash_next_expire(&o));
	ASSERT_EQ(0, hash_expire_due(&o, INT64_MAX, NULL));

	ASSERT_TRUE(hash_set_expire(&o, "a", 1, 1000));
	ASSERT_TRUE(hash_set_expire(&o, "b", 1, 2000));
	ASSERT_TRUE(hash_set_expire(&o, "c", 1, 3000));
	ASSERT_EQ(1000, hash_next_expire(&o));
	/* Moving a deadline later, and removing the earliest one. */
	ASSERT_TRUE(hash_set_expire(&o, "a", 1, 2500));
	ASSERT_EQ(2000, hash_next_expire(&o));
	ASSERT_TRUE(hash_set_expire(&o, "b", 1, HASH_NO_EXPIRE));
	ASSERT_EQ(HASH_NO_EXPIRE, expire_of(&o, "b"));
	ASSERT_EQ(2500, hash_next_expire(&o));
	/* Nothing is due before 2500, even with a stale bound. */
	ASSERT_EQ(0, hash_expire_due(&o, 2100, NULL));
	ASSERT_EQ(4, hash_len(&o));
	ASSERT_STREQ("2", get(&o, "b", buf, sizeof(buf)));

	/* An update drops the deadline unless asked to keep it. */
	ASSERT_FALSE(hash_set(&o, "c", 1, "33", 2, HASH_SET_KEEPTTL));
	ASSERT_EQ(3000, expire_of(&o, "c"));
	ASSERT_FALSE(set(&o, "a", "11"));
	ASSERT_EQ(HASH_NO_EXPIRE, expire_of(&o, "a"));
	ASSERT_EQ(3000, hash_next_expire(&o));

	ASSERT_EQ(1, hash_expire_due(&o, 3001, NULL));
	ASSERT_EQ(3, hash_len(&o));
	ASSERT_EQ(NULL, get(&o, "c", buf, sizeof(buf)));
	ASSERT_EQ(HASH_NO_EXPIRE, hash_next_expire(&o));

	/* Every field due: the hash empties (the caller deletes the key). */
	hash_set_expire(&o, "a", 1, 10);
	hash_set_expire(&o, "b", 1, 20);
	hash_set_expire(&o, "d", 1, 30);
	ASSERT_EQ(2, hash_expire_due(&o, 21, NULL));
	ASSERT_STREQ("4", get(&o, "d", buf, sizeof(buf)));
	ASSERT_EQ(1, hash_expire_due(&o, 31, NULL));
	ASSERT_EQ(0, hash_len(&o));
	ASSERT_EQ(HASH_NO_EXPIRE, hash_next_expire(&o));
	/* An emptied hash takes new fields again. */
	ASSERT_TRUE(set(&o, "e", "5"));
	ASSERT_EQ(1, hash_len(&o));
	obj_free(&o);
}

TEST(deadlines_listpack)
{
	deadlines(_metadata, false);
}

TEST(deadlines_hashtable)
{
	deadlines(_metadata, true);
}

/* Deleting fields with deadlines keeps the survivors' deadlines right. */
TEST(delete_fields_with_deadlines)
{
	char name[16];
	struct obj o;

	for (int large = 0; large < 2; large++) {
		limits(large ? 0 : 128, 64);
		o = hash_new();
		for (int i = 0; i < 20; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			set(&o, name, "v");
			hash_set_expire(&o, name, strlen(name), 1000 + (i * 7) % 20);
		}
		for (int i = 0; i < 20; i += 3) {
			snprintf(name, sizeof(name), "f%d", i);
			ASSERT_TRUE(hash_delete(&o, name, strlen(name)));
		}
		for (int i = 0; i < 20; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			ASSERT_EQ(i % 3 ? 1000 + (i * 7) % 20 : -2, expire_of(&o, name));
		}
		/* f3 (1001) and f6 (1002) were deleted: f1 (1007) is next. */
		ASSERT_EQ(1007, hash_next_expire(&o));
		ASSERT_EQ(13, hash_len(&o));
		ASSERT_EQ(13, hash_expire_due(&o, 2000, NULL));
		obj_free(&o);
	}
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Random deadlines on a large hash: each reclaim removes exactly the fields
 * a brute-force count says are due, and the heap's minimum is the true one. */
TEST(hashtable_deadline_heap)
{
	enum { N = 5000 };
	static int64_t when[N];
	char name[16];
	uint64_t seed = 42;
	struct obj o;

	limits(128, 64);
	o = hash_new();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		set(&o, name, "v");
		when[i] = -1;
	}
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	for (int round = 0; round < 3 * N; round++) {
		int i = (int)(lcg(&seed) % N);

		if (when[i] == -2)
			continue;
		snprintf(name, sizeof(name), "f%d", i);
		when[i] = lcg(&seed) % 4 ? (int64_t)(lcg(&seed) % 100000) : HASH_NO_EXPIRE;
		ASSERT_TRUE(hash_set_expire(&o, name, strlen(name), when[i]));
	}
	for (int64_t now = 0; now <= 100000; now += 7919) {
		uint64_t due = 0, left = 0;
		int64_t min = INT64_MAX;

		for (int i = 0; i < N; i++) {
			if (when[i] >= 0 && when[i] < now) {
				due++;
				when[i] = -2;
			} else if (when[i] != -2) {
				left++;
				if (when[i] >= 0 && when[i] < min)
					min = when[i];
			}
		}
		ASSERT_EQ(due, hash_expire_due(&o, now, NULL));
		ASSERT_EQ(left, hash_len(&o));
		ASSERT_EQ(min == INT64_MAX ? HASH_NO_EXPIRE : min, hash_next_expire(&o));
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_EQ(when[i] == -2 ? -2 : when[i], expire_of(&o, name));
	}
	obj_free(&o);
}

/* Values growing and shrinking in place or by moving the node, with the node
 * in the deadline heap. */
TEST(hashtable_value_resize)
{
	static char big[5000];
	struct hash_field hf;
	char name[16];
	struct obj o;

	limits(0, 64);
	memset(big, 'x', sizeof(big));
	o = hash_new();
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		set(&o, name, "v");
		hash_set_expire(&o, name, strlen(name), 1000 + i);
	}
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 50; i++) {
			size_t len = (round % 2 ? 1 : 4000) + (size_t)i;

			snprintf(name, sizeof(name), "f%d", i);
			ASSERT_FALSE(hash_set(&o, name, strlen(name), big, len, HASH_SET_KEEPTTL));
			ASSERT_TRUE(hash_get(&o, name, strlen(name), &hf));
			ASSERT_EQ(len, hf.vlen);
		}
		for (int i = 0; i < 50; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			ASSERT_TRUE(hash_get(&o, name, strlen(name), &hf));
			ASSERT_EQ(1000 + i, hf.expire);
		}
	}
	ASSERT_EQ(1000, hash_next_expire(&o));
	ASSERT_EQ(50, hash_expire_due(&o, 2000, NULL));
	obj_free(&o);
}

/* The number in a field named "f<n>" (fields are not NUL-terminated). */
static int field_no(const struct hash_field *hf)
{
	int n = 0;

	for (size_t i = 1; i < hf->flen; i++)
		n = n * 10 + (hf->f[i] - '0');
	return n;
}

static void count_field(void *ctx, const struct hash_field *hf)
{
	unsigned *seen = ctx;

	seen[field_no(hf)]++;
}

/* HSCAN returns every field present for the whole scan, even when the table
 * grows between calls; a listpack comes back whole with cursor 0. */
TEST(scan_across_resizes)
{
	enum { N = 1000 };
	static unsigned seen[3 * N];
	uint64_t cursor = 0;
	char name[16];
	struct obj o;
	int added = N;

	limits(128, 64);
	o = hash_new();
	set(&o, "f0", "v");
	set(&o, "f1", "v");
	ASSERT_EQ(0, hash_scan(&o, 12345, count_field, seen));
	ASSERT_EQ(1, seen[0]);
	ASSERT_EQ(1, seen[1]);
	memset(seen, 0, sizeof(seen));
	for (int i = 2; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		set(&o, name, "v");
	}
	do {
		cursor = hash_scan(&o, cursor, count_field, seen);
		if (added < 3 * N) {
			snprintf(name, sizeof(name), "f%d", added++);
			set(&o, name, "v");
		}
	} while (cursor);
	for (int i = 0; i < N; i++)
		ASSERT_LE(1, seen[i]);
	obj_free(&o);
}

TEST(iteration_visits_each_once)
{
	enum { N = 3000 };
	static unsigned seen[N];
	struct hash_iter it;
	struct hash_field hf;
	char name[16];
	struct obj o;
	uint64_t n = 0;

	limits(128, 64);
	o = hash_new();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		set(&o, name, name);
	}
	hash_iter_init(&it, &o);
	while (hash_iter_next(&it, &hf)) {
		int i = field_no(&hf);

		ASSERT_EQ(hf.flen, hf.vlen);
		ASSERT_EQ(0, memcmp(hf.f, hf.v, hf.flen));
		seen[i]++;
		n++;
	}
	ASSERT_EQ(N, n);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(1, seen[i]);
	obj_free(&o);
}

TEST(sampler_picks_live_fields)
{
	struct hash_sampler s;
	struct hash_field hf;
	unsigned hits[10] = { 0 };
	char name[16];
	struct obj o;

	for (int large = 0; large < 2; large++) {
		limits(large ? 0 : 128, 64);
		o = hash_new();
		for (int i = 0; i < 10; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			set(&o, name, name + 1);
		}
		memset(hits, 0, sizeof(hits));
		hash_sampler_init(&s, &o);
		for (int k = 0; k < 2000; k++) {
			int i;

			hash_sampler_pick(&s, hash_rand(), &hf);
			i = field_no(&hf);
			ASSERT_EQ('0' + i, hf.v[0]);
			hits[i]++;
		}
		hash_sampler_free(&s);
		/* Every field comes up; none is wildly favoured. */
		for (int i = 0; i < 10; i++)
			ASSERT_LT(20, hits[i]);
		obj_free(&o);
	}
}

TEST(dup_is_deep)
{
	char buf[64];
	struct obj o, copy;

	for (int large = 0; large < 2; large++) {
		limits(large ? 0 : 128, 64);
		o = hash_new();
		set(&o, "a", "1");
		set(&o, "b", "2");
		hash_set_expire(&o, "b", 1, 777);
		copy = obj_dup(&o);
		ASSERT_EQ(o.enc, copy.enc);
		ASSERT_EQ(OBJ_HASH, copy.type);
		set(&o, "a", "changed");
		hash_delete(&o, "b", 1);
		ASSERT_STREQ("1", get(&copy, "a", buf, sizeof(buf)));
		ASSERT_EQ(777, expire_of(&copy, "b"));
		ASSERT_EQ(777, hash_next_expire(&copy));
		ASSERT_LT(0, obj_mem(&copy));
		ASSERT_STREQ(large ? "hashtable" : "listpackex", obj_encoding_name(&copy));
		ASSERT_STREQ("hash", obj_type_name(&copy));
		obj_free(&o);
		obj_free(&copy);
	}
}

/* A large hash: lookups stay hashed, and deleting everything empties it. */
TEST(large_hash)
{
	enum { N = 100000 };
	char name[16], buf[32];
	size_t mem_full;
	struct obj o;

	limits(128, 64);
	o = hash_new();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_TRUE(set(&o, name, name + 1));
	}
	ASSERT_EQ(N, hash_len(&o));
	mem_full = obj_mem(&o);
	for (int i = 0; i < N; i += 997) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_STREQ(name + 1, get(&o, name, buf, sizeof(buf)));
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_TRUE(hash_delete(&o, name, strlen(name)));
	}
	ASSERT_EQ(0, hash_len(&o));
	ASSERT_GT(mem_full / 100, obj_mem(&o));
	obj_free(&o);
}

/* The names of the expired fields, copied, for the subkey notifications:
 * both encodings, a name the freed field no longer backs. */
TEST(expired_field_names)
{
	for (int ht = 0; ht < 2; ht++) {
		struct obj o = hash_new();
		struct field_list names = { 0 };
		bool seen_a = false, seen_c = false;

		limits(128, 64);
		ASSERT_TRUE(set(&o, "a", "v"));
		ASSERT_TRUE(set(&o, "b", "v"));
		ASSERT_TRUE(set(&o, "c", "v"));
		for (int i = 0; ht && i < 300; i++) {
			char name[16];

			snprintf(name, sizeof(name), "x%d", i);
			ASSERT_TRUE(set(&o, name, "v"));
		}
		ASSERT_EQ(ht ? ENC_HASHTABLE : ENC_LISTPACK, o.enc);
		hash_set_expire(&o, "a", 1, 10);
		hash_set_expire(&o, "c", 1, 20);
		ASSERT_EQ(2, hash_expire_due(&o, 100, &names));
		ASSERT_EQ(2, names.n);
		for (uint32_t i = 0; i < names.n; i++) {
			ASSERT_EQ(1, names.v[i].len);
			ASSERT_TRUE(names.v[i].owned);
			seen_a |= names.v[i].p[0] == 'a';
			seen_c |= names.v[i].p[0] == 'c';
		}
		ASSERT_TRUE(seen_a && seen_c);
		field_list_free(&names);
		ASSERT_EQ(0, names.n);
		ASSERT_EQ(0, hash_expire_due(&o, 200, &names));
		ASSERT_EQ(0, names.n);
		obj_free(&o);
	}
}

TEST_HARNESS_MAIN
