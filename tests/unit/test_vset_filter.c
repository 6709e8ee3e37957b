// SPDX-License-Identifier: GPL-2.0-only
/*
 * FILTER expressions (daemon/vset_filter.c) against what Redis 8.8 does:
 * vset_filter_cases.h holds, for 1,301 expressions (300 written, 1,000
 * random), either the error text redis-server 8.8.0 replied or which of 36
 * attribute strings it matched (tools/record-vset-filter.py recorded it with
 * VSIM ... TRUTH FILTER). The hand-written tests below pin the rules the table cannot
 * show: lengths and embedded NULs, no attributes, deep programs, reuse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vset_filter.h"

#include "kselftest_harness.h"
#include "vset_filter_cases.h"

#define NATTRS (sizeof(vf_attrs) / sizeof(vf_attrs[0]))

static int match_str(const struct vfilter *f, const char *json)
{
	return vfilter_match(f, json, json ? strlen(json) : 0);
}

/* 1 or 0 for a valid expression, -1 when it does not compile. */
static int eval(const char *expr, const char *json)
{
	struct vfilter *f;
	const char *err;
	int r;

	if (vfilter_compile(expr, strlen(expr), &f, &err))
		return -1;
	r = match_str(f, json);
	vfilter_free(f);
	return r;
}

TEST(replies_match_redis_88)
{
	int bad = 0;

	ASSERT_LE(NATTRS, 64);
	for (size_t i = 0; i < sizeof(vf_cases) / sizeof(vf_cases[0]); i++) {
		const struct vf_case *c = &vf_cases[i];
		struct vfilter *f = NULL;
		const char *err = NULL;
		int ret = vfilter_compile(c->expr, strlen(c->expr), &f, &err);

		if (c->err) {
			if (ret != -EINVAL || strcmp(err, c->err)) {
				TH_LOG("%s: want error \"%s\", got %d \"%s\"", c->expr, c->err, ret,
				       ret ? err : "");
				bad++;
			}
			if (!ret)
				vfilter_free(f);
			continue;
		}
		if (ret) {
			TH_LOG("%s: want it to compile, got \"%s\"", c->expr, err);
			bad++;
			continue;
		}
		for (size_t a = 0; a < NATTRS; a++) {
			int want = (c->mask >> a) & 1, got = match_str(f, vf_attrs[a]);

			if (want != got) {
				TH_LOG("%s over %s: redis %d, ours %d", c->expr,
				       vf_attrs[a] ? vf_attrs[a] : "(none)", want, got);
				bad++;
			}
		}
		vfilter_free(f);
	}
	ASSERT_EQ(0, bad);
}

TEST(no_attributes_never_match)
{
	struct vfilter *f;
	const char *err;

	ASSERT_EQ(0, vfilter_compile("1", 1, &f, &err));
	ASSERT_EQ(0, vfilter_match(f, NULL, 0));
	ASSERT_EQ(1, vfilter_match(f, "{}", 2));
	/* Any bytes are attributes: a constant true holds even for bad JSON. */
	ASSERT_EQ(1, vfilter_match(f, "x", 1));
	vfilter_free(f);
}

TEST(length_bounds_the_json)
{
	struct vfilter *f;
	const char *err;
	const char *json = "{\"a\": 12345}";

	ASSERT_EQ(0, vfilter_compile(".a == 123", 9, &f, &err));
	/* The value is cut where len ends: 123 without the rest. */
	ASSERT_EQ(1, vfilter_match(f, json, 9));
	ASSERT_EQ(0, vfilter_match(f, json, strlen(json)));
	ASSERT_EQ(0, vfilter_match(f, json, 3));
	ASSERT_EQ(0, vfilter_match(f, json, 0));
	vfilter_free(f);
}

TEST(expression_stops_at_nul)
{
	struct vfilter *f;
	const char *err;

	/* Redis reads the argument as a C string; the error's position is
	 * still checked against the full length. */
	ASSERT_EQ(0, vfilter_compile("1 == 1\0garbage", 14, &f, &err));
	ASSERT_EQ(1, match_str(f, "{}"));
	vfilter_free(f);
	ASSERT_EQ(-EINVAL, vfilter_compile("foo\0bar", 7, &f, &err));
	ASSERT_STREQ("syntax error in FILTER expression near: ", err);
	ASSERT_EQ(-EINVAL, vfilter_compile("foo", 3, &f, &err));
	ASSERT_STREQ("syntax error in FILTER expression near: foo", err);
	ASSERT_EQ(-EINVAL, vfilter_compile("1 +", 3, &f, NULL));
}

TEST(json_string_with_nul_converts_to_its_prefix)
{
	/* strtod stops at the NUL as it does in Redis. */
	static const char json[] = "{\"s\": \"5\0x\"}";
	struct vfilter *f;
	const char *err;

	ASSERT_EQ(0, vfilter_compile(".s == 5", 7, &f, &err));
	ASSERT_EQ(1, vfilter_match(f, json, sizeof(json) - 1));
	vfilter_free(f);
}

TEST(deep_programs_and_long_values)
{
	char *expr = malloc(400000), *json = malloc(300000);
	size_t n = 0;

	/* 20000 nested parentheses and a 40000-operand sum need the heap stack. */
	for (int i = 0; i < 20000; i++)
		expr[n++] = '(';
	expr[n++] = '1';
	for (int i = 0; i < 20000; i++)
		expr[n++] = ')';
	expr[n] = '\0';
	ASSERT_EQ(1, eval(expr, "{}"));
	n = 0;
	for (int i = 0; i < 40000; i++)
		n += sprintf(expr + n, "%s.a", i ? " + " : "");
	sprintf(expr + n, " == 40000");
	ASSERT_EQ(1, eval(expr, "{\"a\": 1}"));
	/* Right-associative powers keep every operand on the stack. */
	n = 0;
	for (int i = 0; i < 5000; i++)
		n += sprintf(expr + n, "%s1", i ? " ** " : "");
	ASSERT_EQ(1, eval(expr, "{}"));
	/* 100000 nested arrays are checked without recursion. */
	n = sprintf(json, "{\"a\": [1, ");
	for (int i = 0; i < 100000; i++)
		json[n++] = '[';
	for (int i = 0; i < 100000; i++)
		json[n++] = ']';
	n += sprintf(json + n, "]}");
	ASSERT_EQ(1, eval("1 in .a", json));
	ASSERT_EQ(1, eval("0 in .a", json));
	json[n - 3] = ' '; /* one bracket short: not an array, no match */
	ASSERT_EQ(0, eval("1 in .a", json));
	/* 256 characters of string do not convert to a number, 255 do. */
	n = sprintf(json, "{\"s\": \"");
	memset(json + n, '1', 255);
	sprintf(json + n + 255, "\"}");
	ASSERT_EQ(1, eval(".s > 1e250", json));
	memset(json + n, '1', 256);
	sprintf(json + n + 256, "\"}");
	ASSERT_EQ(1, eval(".s == 0", json));
	free(expr);
	free(json);
}

TEST(a_filter_is_reusable)
{
	struct vfilter *f;
	const char *err;
	const char *expr = ".tags == 0 and \"b\" in .tags and .name == 'x\\\"y'";

	ASSERT_EQ(0, vfilter_compile(expr, strlen(expr), &f, &err));
	for (int i = 0; i < 1000; i++) {
		/* The literal keeps its backslash; JSON loses it. */
		ASSERT_EQ(1, match_str(f, "{\"tags\": [\"a\", \"b\"], \"name\": \"x\\\\\\\"y\"}"));
		ASSERT_EQ(0, match_str(f, "{\"tags\": [\"a\", \"b\"], \"name\": \"x\\\"y\"}"));
		ASSERT_EQ(0, match_str(f, "{\"tags\": [\"a\"], \"name\": \"x\\\\\\\"y\"}"));
	}
	vfilter_free(f);
	vfilter_free(NULL);
}

TEST_HARNESS_MAIN
