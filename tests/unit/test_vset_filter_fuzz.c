// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzer for FILTER expressions (daemon/vset_filter.c): random expressions
 * built from the language's tokens plus stray bytes, compiled and run over
 * random, often broken, JSON. Both live in heap buffers of their exact
 * length with no terminator, so the sanitizer build catches any read past
 * either. It checks the contract (0 or -EINVAL, the error's prefix, matches
 * of 0 or 1, the same answer twice) rather than values, which the recorded
 * Redis cases of test_vset_filter.c pin.
 *
 * VFILTER_FUZZ_ITERS (default 20000, bounded for make test) and
 * VFILTER_FUZZ_SEED set the run; `make fuzz-vfilter` runs 1M under ASan.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vset_filter.h"

#include "kselftest_harness.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*: deterministic for a seed, good enough for choices. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % n;
}

static const char *const fields[] = { "a", "b", "year", "name", "tags", "x", "k-1", "n" };

static const char *const expr_tokens[] = {
	"(",  ")",     "!",   "not ",	 "**",	       "*",  "/",    "%",      "+",
	"-",  ">",     ">=",  "<",	 "<=",	       "==", "!=",   " in ",   " and ",
	"&&", " or ",  "||",  "null",	 "1",	       "0",  "-3",   "2.5",    "1e3",
	"1e", "1.2.3", "'s'", "\"foo\"", "\"a\\\"b\"", "\"", "'",    "[1, 2]", "[\"a\", 3]",
	"[]", "[1,",   "[",   "]",	 ".",	       "..", "true", "=",      "&",
	"|",  " ",     "\t",  "\\",	 "\xe9",       "@",  ",",
};

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A mostly well-formed expression of depth d, or token soup. */
static void gen_expr(struct buf *b, int d)
{
	static const char *const binops[] = { " + ",  " - ",   " * ",  " / ",  " % ",  " ** ",
					      " > ",  " >= ",  " < ",  " <= ", " == ", " != ",
					      " in ", " and ", " && ", " or ", " || " };
	char num[32];
	int k = d > 4 ? rnd(4) : rnd(9);

	switch (k) {
	case 0:
		snprintf(num, sizeof(num), "%d", (int)rnd(2000) - 1000);
		puts_(b, num);
		break;
	case 1:
		puts_(b, ".");
		puts_(b, fields[rnd(sizeof(fields) / sizeof(fields[0]))]);
		break;
	case 2:
		puts_(b, expr_tokens[rnd(sizeof(expr_tokens) / sizeof(expr_tokens[0]))]);
		break;
	case 3:
		puts_(b, rnd(2) ? "\"foo\"" : "'b'");
		break;
	case 4:
		puts_(b, "(");
		gen_expr(b, d + 1);
		puts_(b, ")");
		break;
	case 5:
		puts_(b, rnd(2) ? "!" : "not ");
		gen_expr(b, d + 1);
		break;
	default:
		gen_expr(b, d + 1);
		puts_(b, binops[rnd(sizeof(binops) / sizeof(binops[0]))]);
		gen_expr(b, d + 1);
		break;
	}
}

static void gen_json_value(struct buf *b, int d)
{
	static const char *const scalars[] = { "1",	  "-2.5",     "1e3",	    "+5",
					       "1abc",	  "true",     "false",	    "null",
					       "trueish", "\"foo\"",  "\"a\\\"b\"", "\"\"",
					       "\"10\"",  "\"x\\n\"", "{}",	    "{\"y\": 1}",
					       "-",	  "" };
	int n;

	if (d > 3 || rnd(3)) {
		puts_(b, scalars[rnd(sizeof(scalars) / sizeof(scalars[0]))]);
		return;
	}
	puts_(b, "[");
	n = rnd(5);
	for (int i = 0; i < n; i++) {
		if (i)
			puts_(b, rnd(8) ? ", " : " ");
		gen_json_value(b, d + 1);
	}
	if (rnd(8))
		puts_(b, "]");
}

static void gen_json(struct buf *b)
{
	int n = rnd(6);

	puts_(b, rnd(16) ? "{" : "[");
	for (int i = 0; i < n; i++) {
		if (i)
			puts_(b, rnd(10) ? ", " : " ");
		puts_(b, "\"");
		puts_(b, fields[rnd(sizeof(fields) / sizeof(fields[0]))]);
		puts_(b, rnd(12) ? "\": " : "\" ");
		gen_json_value(b, 0);
	}
	if (rnd(10))
		puts_(b, "}");
}

/* Random byte edits: flips, deletions, truncation. */
static void mutate(struct buf *b)
{
	int n = rnd(4) ? 0 : 1 + rnd(3);

	for (int i = 0; i < n && b->len; i++) {
		size_t at = rnd(b->len);

		switch (rnd(3)) {
		case 0:
			b->p[at] = (char)rnd(256);
			break;
		case 1:
			memmove(b->p + at, b->p + at + 1, b->len - at - 1);
			b->len--;
			break;
		default:
			b->len = at;
			break;
		}
	}
}

/* An exact-size copy, so that a read past the end is a sanitizer report. */
static char *exact(const struct buf *b)
{
	char *p = malloc(b->len ? b->len : 1);

	memcpy(p, b->p, b->len);
	return p;
}

/* A fixture only for its timeout: 1M runs under ASan on a busy machine can
 * take minutes, past the harness's default 30 s. */
FIXTURE(fuzz){};
FIXTURE_SETUP(fuzz)
{
}
FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, random_expressions_and_json, 3600)
{
	const char *iters_env = getenv("VFILTER_FUZZ_ITERS"),
		   *seed_env = getenv("VFILTER_FUZZ_SEED");
	unsigned long iters = iters_env ? strtoul(iters_env, NULL, 10) : 20000;
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : 16;
	static const char prefix[] = "syntax error in FILTER expression near: ";
	unsigned long compiled = 0, matched = 0;
	struct buf e = { 0 }, j = { 0 };

	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (unsigned long it = 0; it < iters; it++) {
		struct vfilter *f = NULL, *g = NULL;
		const char *err = NULL;
		char *ep, *jp;
		int r1, r2, r3;

		e.len = j.len = 0;
		gen_expr(&e, 0);
		mutate(&e);
		gen_json(&j);
		mutate(&j);
		ep = exact(&e);
		jp = exact(&j);
		r1 = vfilter_compile(ep, e.len, &f, &err);
		ASSERT_TRUE(r1 == 0 || r1 == -EINVAL);
		if (r1) {
			ASSERT_EQ(0, strncmp(err, prefix, sizeof(prefix) - 1));
			ASSERT_EQ(-EINVAL, vfilter_compile(ep, e.len, &g, NULL));
		} else {
			compiled++;
			ASSERT_EQ(0, vfilter_compile(ep, e.len, &g, &err));
			r2 = vfilter_match(f, jp, j.len);
			r3 = vfilter_match(g, jp, j.len);
			ASSERT_TRUE(r2 == 0 || r2 == 1);
			ASSERT_EQ(r2, r3);
			ASSERT_EQ(0, vfilter_match(f, NULL, 0));
			/* Every prefix of the JSON is also a valid input. */
			ASSERT_TRUE(vfilter_match(f, jp, rnd(j.len + 1)) <= 1);
			matched += r2;
			vfilter_free(f);
			vfilter_free(g);
		}
		free(ep);
		free(jp);
	}
	TH_LOG("seed %llu: %lu expressions, %lu compiled, %lu matches", (unsigned long long)seed,
	       iters, compiled, matched);
	/* The generator must reach both sides of the compiler and the matcher. */
	ASSERT_GT(compiled, iters / 10);
	ASSERT_LT(compiled, iters);
	ASSERT_GT(matched, 0);
	free(e.p);
	free(j.p);
}

TEST_HARNESS_MAIN
