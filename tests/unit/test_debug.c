// SPDX-License-Identifier: GPL-2.0-only
/*
 * DEBUG DIGEST's building blocks (sha1.h, debug.h): SHA-1 against the FIPS
 * 180 test vectors, and scores formatted as Redis 8's fpconv_dtoa writes
 * them (the strings a zset's digest hashes; the digests themselves are
 * compared with redis-server in tests/integration/test_debug.py).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "debug.h"
#include "sha1.h"

#include "kselftest_harness.h"

static void hex(const uint8_t d[SHA1_LEN], char out[2 * SHA1_LEN + 1])
{
	for (int i = 0; i < SHA1_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

TEST(sha1_test_vectors)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	uint8_t d[SHA1_LEN];
	char got[2 * SHA1_LEN + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sha1(cases[i].in, strlen(cases[i].in), d);
		hex(d, got);
		ASSERT_STREQ(cases[i].want, got);
	}
}

/* A million 'a's fed in uneven pieces: the block boundary handling. */
TEST(sha1_streamed_in_pieces)
{
	char chunk[2048];
	struct sha1 s;
	uint8_t d[SHA1_LEN];
	char got[2 * SHA1_LEN + 1];
	size_t left = 1000000;

	memset(chunk, 'a', sizeof(chunk));
	sha1_init(&s);
	for (size_t n = 1; left; n = n % 997 + 61) {
		size_t k = n < left ? n : left;

		sha1_update(&s, chunk, k);
		left -= k;
	}
	sha1_final(&s, d);
	hex(d, got);
	ASSERT_STREQ("34aa973cd4c4daa4f61eeb2bdbad27316534016f", got);
}

TEST(scores_as_fpconv_writes_them)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0, "0" },
		{ -0.0, "-0" },
		{ 1, "1" },
		{ 2.5, "2.5" },
		{ -3, "-3" },
		{ 0.1, "0.1" },
		{ -0.25, "-0.25" },
		{ 0.0001, "0.0001" },
		{ 1e-7, "1e-7" },
		{ 1.5e-7, "1.5e-7" },
		{ 123456.789, "123456.789" },
		{ 12345678, "12345678" },
		{ 1e7, "10000000" },
		{ 1e8, "1e+8" },
		{ 1e21, "1e+21" },
		{ 1e300, "1e+300" },
		{ 3.141592653589793, "3.141592653589793" },
		{ INFINITY, "inf" },
		{ -INFINITY, "-inf" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int len = debug_fmt_double(cases[i].v, buf);

		ASSERT_STREQ(cases[i].want, buf) TH_LOG("%.17g", cases[i].v);
		ASSERT_EQ((int)strlen(cases[i].want), len);
	}
}

TEST_HARNESS_MAIN
