// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cluster bus parser (cluster_bus.c): messages built here byte by byte
 * at Redis 7's offsets (cluster_legacy.h) are accepted whole and refused
 * when any length in them lies; then a fuzzer mutates valid messages
 * (PING with gossip and extensions, FAIL, PUBLISH, UPDATE, the failover
 * types) and feeds them through validation and processing, from a known
 * sender, so that a malformed message can only be refused, never crash.
 * XKV_FUZZ_ITERS sets the number of mutations (default 100000). A sender
 * that lies about its epochs takes no slot it has no right to.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "config.h"
#include "log.h"
#include "mem.h"

#include "kselftest_harness.h"

#define HDR 2256
#define SENDER "0123456789abcdef0123456789abcdef01234567"
#define OTHER "fedcba9876543210fedcba9876543210fedcba98"

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static size_t header(unsigned char *m, uint16_t type, size_t len)
{
	memset(m, 0, HDR);
	memcpy(m, "RCmb", 4);
	put32(m + 4, (uint32_t)len);
	put16(m + 8, 1);
	put16(m + 10, 7000);
	put16(m + 12, type);
	memcpy(m + 40, SENDER, 40);
	m[80] = 0xff; /* claims slots 0-7 */
	put16(m + 2248, 17000);
	put16(m + 2250, CLUSTER_NODE_MASTER);
	return len;
}

/* A PING with two gossip entries and three extensions (hostname, shard id,
 * forgotten node). */
static size_t ping(unsigned char *m)
{
	size_t len = HDR + 2 * 104 + 16 + 48 + 56;
	unsigned char *p = m + HDR;

	header(m, 0, len);
	put16(m + 14, 2);
	put16(m + 2214, 3);
	m[2253] = 1 << 2;
	memcpy(p, OTHER, 40);
	memcpy(p + 48, "127.0.0.1", 9);
	put16(p + 94, 7001);
	put16(p + 96, 17001);
	put16(p + 98, CLUSTER_NODE_MASTER | CLUSTER_NODE_PFAIL);
	p += 104;
	memcpy(p, SENDER, 40);
	put16(p + 98, CLUSTER_NODE_MASTER);
	p += 104;
	put32(p, 16);
	put16(p + 4, 0);
	memcpy(p + 8, "host", 5);
	p += 16;
	put32(p, 48);
	put16(p + 4, 3);
	memcpy(p + 8, OTHER, 40);
	p += 48;
	put32(p, 56);
	put16(p + 4, 2);
	memcpy(p + 8, "ffffffffffffffffffffffffffffffffffffffff", 40);
	return len;
}

static unsigned char buf[HDR + 4096];

static void __attribute__((constructor)) setup(void)
{
	struct cluster_node *me, *sender;

	config_init();
	log_set_level(LOG_NOTHING); /* a fuzzed node logs at every turn */
	config.cluster_enabled = 1;
	cluster_init();
	me = cluster_myself();
	me->bus = xcalloc(1, sizeof(struct cluster_node_bus));
	cluster_lock();
	sender = cluster_ctl_node_new(SENDER, CLUSTER_NODE_MASTER);
	sender->port = 7000;
	cluster_unlock();
}

TEST(valid_messages_accepted)
{
	size_t len = ping(buf);

	ASSERT_EQ(0, cluster_msg_validate(buf, len));
	ASSERT_EQ(0, cluster_bus_feed(buf, len));
	len = header(buf, 3, HDR + 40); /* FAIL */
	memcpy(buf + HDR, OTHER, 40);
	ASSERT_EQ(0, cluster_msg_validate(buf, len));
	len = header(buf, 4, HDR + 8 + 3 + 5); /* PUBLISH */
	put32(buf + HDR, 3);
	put32(buf + HDR + 4, 5);
	memcpy(buf + HDR + 8, "chnhello", 8);
	ASSERT_EQ(0, cluster_bus_feed(buf, len));
	len = header(buf, 7, HDR + 8 + 40 + 2048); /* UPDATE */
	ASSERT_EQ(0, cluster_msg_validate(buf, len));
	for (uint16_t t = 5; t <= 8; t += 1) {
		if (t == 7)
			continue;
		ASSERT_EQ(0, cluster_msg_validate(buf, header(buf, t, HDR)));
	}
	/* Another protocol version is ignored, not refused. */
	header(buf, 0, HDR);
	put16(buf + 8, 2);
	ASSERT_EQ(1, cluster_msg_validate(buf, HDR));
	/* An unknown type has no length rule. */
	ASSERT_EQ(0, cluster_msg_validate(buf, header(buf, 42, HDR + 10)));
}

/* A PING from the known sender claiming only `slot`, with these epochs. */
static size_t claim(unsigned char *m, unsigned slot, uint64_t current, uint64_t config_epoch)
{
	size_t len = header(m, 0, HDR);

	m[80] = 0;
	m[80 + slot / 8] = (unsigned char)(1u << (slot % 8));
	put64(m + 16, current);
	put64(m + 24, config_epoch);
	return len;
}

/* Redis's rule (clusterUpdateSlotsConfigWith): a claim wins a slot only with
 * a greater config epoch than the owner's; an equal one is a collision that
 * the node with the smaller name resolves by taking a new epoch
 * (clusterHandleConfigEpochCollision). */
TEST(lying_epochs_take_no_slot)
{
	const unsigned slot = 200;
	struct cluster_node *me = cluster_myself(), *sender;
	uint64_t mine;

	cluster_lock();
	sender = cluster_node_lookup(SENDER, 40);
	ASSERT_NE(NULL, sender);
	if (cluster_ctl.current_epoch < 5)
		cluster_ctl.current_epoch = 5;
	me->config_epoch = cluster_ctl.current_epoch;
	mine = me->config_epoch;
	cluster_slot_set_owner(slot, me);
	cluster_unlock();

	/* An older config epoch, however new its current epoch. */
	ASSERT_EQ(0, cluster_bus_feed(buf, claim(buf, slot, mine + 100, mine - 1)));
	ASSERT_EQ(me, atomic_load(&cluster_slot(slot)->owner));
	ASSERT_EQ(mine + 100, cluster_ctl.current_epoch);

	/* The same config epoch: not taken; the smaller name moves on. */
	mine = me->config_epoch;
	ASSERT_EQ(0, cluster_bus_feed(buf, claim(buf, slot, cluster_ctl.current_epoch, mine)));
	ASSERT_EQ(me, atomic_load(&cluster_slot(slot)->owner));
	if (memcmp(me->name, SENDER, 40) < 0) {
		ASSERT_GT(me->config_epoch, mine);
	} else {
		ASSERT_EQ(mine, me->config_epoch);
	}

	/* A greater one takes it, as in Redis: the epoch is the only proof. */
	mine = me->config_epoch;
	ASSERT_EQ(0, cluster_bus_feed(buf, claim(buf, slot, mine + 1, mine + 1)));
	ASSERT_EQ(sender, atomic_load(&cluster_slot(slot)->owner));
}

TEST(lying_lengths_refused)
{
	size_t len = ping(buf);

	/* Every truncation of a good PING. */
	for (size_t cut = 0; cut < len; cut++) {
		put32(buf + 4, (uint32_t)cut);
		ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, cut)) TH_LOG("cut %zu", cut);
	}
	ping(buf);
	put32(buf + 4, (uint32_t)len + 1);
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len)); /* totlen != read */
	ping(buf);
	memcpy(buf, "RCmX", 4);
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len));
	ping(buf);
	put16(buf + 14, 3); /* one gossip entry more than sent */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len));
	ping(buf);
	put32(buf + HDR + 208, 12); /* extension length not a multiple of 8 */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len));
	ping(buf);
	put32(buf + HDR + 208, 0); /* an extension shorter than its header */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len));
	ping(buf);
	put16(buf + 2214, 4); /* one extension more than sent */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, len));
	header(buf, 3, HDR); /* FAIL without its node */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, HDR));
	header(buf, 4, HDR + 8 + 4);
	put32(buf + HDR, 0xffffffffu); /* a channel longer than the message */
	put32(buf + HDR + 4, 0xffffffffu);
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, HDR + 12));
	header(buf, 7, HDR + 100); /* UPDATE without its bitmap */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, HDR + 100));
	header(buf, 5, HDR + 8); /* AUTH_REQUEST with a body */
	ASSERT_EQ(-EBADMSG, cluster_msg_validate(buf, HDR + 8));
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A fixture only for its timeout: 1M mutations under ASan on a busy machine
 * take longer than the harness's default 30 s (make fuzz-cluster-bus). */
FIXTURE(fuzz){};
FIXTURE_SETUP(fuzz)
{
}
FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, mutations_never_crash, 3600)
{
	const char *env = getenv("XKV_FUZZ_ITERS");
	long iters = env ? atol(env) : 100000;
	long accepted = 0, refused = 0;

	for (long i = 0; i < iters; i++) {
		size_t len;
		unsigned kind = (unsigned)(next_rand() % 5);
		unsigned flips = 1 + (unsigned)(next_rand() % 8);

		switch (kind) {
		case 0:
			len = ping(buf);
			break;
		case 1:
			len = header(buf, 3, HDR + 40);
			memcpy(buf + HDR, OTHER, 40);
			break;
		case 2:
			len = header(buf, 10, HDR + 16);
			put32(buf + HDR, 4);
			put32(buf + HDR + 4, 4);
			break;
		case 3:
			len = header(buf, 7, HDR + 8 + 40 + 2048);
			memcpy(buf + HDR + 8, SENDER, 40);
			break;
		default:
			len = header(buf, (uint16_t)(5 + next_rand() % 4), HDR);
			break;
		}
		/* Bytes flipped anywhere, counts and lengths most of all. */
		for (unsigned f = 0; f < flips; f++) {
			size_t at;

			switch (next_rand() % 4) {
			case 0:
				at = 12 + next_rand() % 4; /* type, count */
				break;
			case 1:
				at = HDR + next_rand() % (len - HDR + 1);
				break;
			case 2:
				at = 2214 + next_rand() % 2; /* extensions */
				break;
			default:
				at = next_rand() % len;
				break;
			}
			if (at < len && at >= 8) /* keep the signature and totlen */
				buf[at] = (unsigned char)next_rand();
		}
		/* Mostly from the known sender, gossiping about a known address:
		 * every new name or address would add a node, which is never
		 * freed (cluster.h). */
		if (next_rand() % 16) {
			memcpy(buf + 40, SENDER, 40);
			if (kind == 0) {
				memset(buf + HDR + 48, 0, 46);
				memcpy(buf + HDR + 48, "127.0.0.1", 9);
				put16(buf + HDR + 94, 7001);
				put16(buf + HDR + 96, 17001);
			}
		}
		/* Now and then a length that does not match what was read. */
		if (next_rand() % 16 == 0)
			len -= next_rand() % (len - HDR + 1);
		if (cluster_bus_feed(buf, len) == 0)
			accepted++;
		else
			refused++;
	}
	TH_LOG("%ld mutations: %ld accepted, %ld refused", iters, accepted, refused);
	ASSERT_EQ(iters, accepted + refused);
	ASSERT_GT(refused, 0);
}

TEST_HARNESS_MAIN
