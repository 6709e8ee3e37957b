// SPDX-License-Identifier: GPL-2.0-only
/*
 * The UDP token rule (access.c) through CONFIG SET, as udp.c asks it: the
 * derived token's known answer, 0 never accepted with a password, and each
 * change in force as soon as config_set_pairs() returns.
 */
#include <stdint.h>
#include <string.h>

#include "access.h"
#include "config.h"

#include "kselftest_harness.h"

static void set(struct __test_metadata *_metadata, const char *name, const char *value)
{
	const char *pairs[2] = { name, value };
	size_t lens[2] = { strlen(name), strlen(value) };
	char err[256] = "";

	ASSERT_EQ(0, config_set_pairs(pairs, lens, 1, true, err, sizeof(err))) TH_LOG("%s", err);
}

static uint64_t token_of(const uint8_t bytes[8])
{
	uint64_t t;

	memcpy(&t, bytes, 8);
	return t;
}

FIXTURE(access)
{
	int unused;
};

FIXTURE_SETUP(access)
{
	config_init();
	access_update();
}

FIXTURE_TEARDOWN(access)
{
	config_free();
}

/* SHA-256("xkv-fastpath-token:s3cret") begins 24 62 fd 31 24 e9 8c bb
 * (python3 hashlib, docs/udp-protocol.md). */
TEST_F(access, derived_token_known_answer)
{
	static const uint8_t want[8] = { 0x24, 0x62, 0xfd, 0x31, 0x24, 0xe9, 0x8c, 0xbb };
	uint64_t t = 0;

	ASSERT_EQ(0, access_derive_token("s3cret", 6, &t));
	ASSERT_EQ(0, memcmp(&t, want, 8));
}

TEST_F(access, no_password_ignores_the_token)
{
	ASSERT_TRUE(access_udp_token_ok(0));
	ASSERT_TRUE(access_udp_token_ok(42));
}

TEST_F(access, password_needs_its_token_never_zero)
{
	static const uint8_t s3cret[8] = { 0x24, 0x62, 0xfd, 0x31, 0x24, 0xe9, 0x8c, 0xbb };
	uint64_t derived;

	set(_metadata, "requirepass", "s3cret");
	ASSERT_FALSE(access_udp_token_ok(0));
	ASSERT_FALSE(access_udp_token_ok(42));
	ASSERT_TRUE(access_udp_token_ok(token_of(s3cret)));
	/* A new password: the old token fails at once. */
	set(_metadata, "requirepass", "n3w");
	ASSERT_FALSE(access_udp_token_ok(token_of(s3cret)));
	/* fastpath-token set: it, in host order, and not the derived one. */
	set(_metadata, "fastpath-token", "1234567890123");
	ASSERT_TRUE(access_udp_token_ok(1234567890123ULL));
	ASSERT_FALSE(access_udp_token_ok(0));
	ASSERT_EQ(0, access_derive_token("n3w", 3, &derived));
	ASSERT_FALSE(access_udp_token_ok(derived));
	/* Back to 0: derived again. */
	set(_metadata, "fastpath-token", "0");
	ASSERT_TRUE(access_udp_token_ok(derived));
	ASSERT_FALSE(access_udp_token_ok(0));
	set(_metadata, "requirepass", "");
	ASSERT_TRUE(access_udp_token_ok(0));
}

TEST_HARNESS_MAIN
