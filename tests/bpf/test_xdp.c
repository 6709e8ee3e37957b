// SPDX-License-Identifier: GPL-2.0-only
/*
 * The XDP fast path under BPF_PROG_TEST_RUN: crafted packets in, the action
 * and every byte out checked, checksums recomputed independently here. Each
 * run is single (repeat = 1): a repeat would rerun on the rewritten buffer.
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/types.h>
#include <linux/udp.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kselftest_harness.h"

#include "fastpath.h"
#include "xkv_abi.h"
#include "xkv_xdp.skel.h"

#define PORT 6379
#define NSLOTS 16
#define HASH_SEED 0x5eed5eed12345678ULL
#define TOKEN 0x1122334455667788ULL

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* RFC 1071 sum, written independently of the daemon's. */
static uint32_t sum16(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

struct packet {
	uint8_t bytes[2048];
	size_t len;
	size_t l4; /* UDP header offset */
};

struct request_spec {
	bool v6;
	uint32_t saddr4; /* host order */
	uint16_t dport;
	uint8_t proto;
	const char *cmd; /* RESP, sent as is */
	size_t cmd_len;	 /* 0: strlen(cmd) */
	size_t pad_to;	 /* UDP payload size, at least header + command */
	uint64_t token;
	uint16_t magic;
};

static void build(struct packet *pk, const struct request_spec *rs)
{
	size_t cmd_len = rs->cmd_len ? rs->cmd_len : strlen(rs->cmd);
	size_t payload = sizeof(struct xkv_udp_hdr) + cmd_len;
	struct ethhdr *eth = (void *)pk->bytes;
	struct udphdr *udp;
	struct xkv_udp_hdr *h;

	if (rs->pad_to > payload)
		payload = rs->pad_to;
	memset(pk, 0, sizeof(*pk));
	memcpy(eth->h_dest, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(eth->h_source, "\x02\x00\x00\x00\x00\x02", 6);
	if (rs->v6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->payload_len = htons((uint16_t)(sizeof(*udp) + payload));
		ip6->nexthdr = rs->proto ? rs->proto : IPPROTO_UDP;
		ip6->hop_limit = 64;
		inet_pton(AF_INET6, "::1", &ip6->saddr);
		inet_pton(AF_INET6, "::1", &ip6->daddr);
		pk->l4 = sizeof(*eth) + sizeof(*ip6);
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + sizeof(*udp) + payload));
		ip->ttl = 64;
		ip->protocol = rs->proto ? rs->proto : IPPROTO_UDP;
		ip->saddr = htonl(rs->saddr4 ? rs->saddr4 : 0x7f000001);
		ip->daddr = htonl(0x7f000001);
		ip->check = htons((uint16_t)~fold(sum16(ip, sizeof(*ip), 0)));
		pk->l4 = sizeof(*eth) + sizeof(*ip);
	}
	udp = (void *)(pk->bytes + pk->l4);
	udp->source = htons(40000);
	udp->dest = htons(rs->dport ? rs->dport : PORT);
	udp->len = htons((uint16_t)(sizeof(*udp) + payload));
	h = (void *)(udp + 1);
	h->magic = htons(rs->magic ? rs->magic : XKV_UDP_MAGIC);
	h->version = XKV_UDP_VERSION;
	h->request_id = htonl(0xabcdef01);
	h->cmd_len = htons((uint16_t)cmd_len);
	h->token = rs->token;
	memcpy(h + 1, rs->cmd, cmd_len);
	pk->len = pk->l4 + sizeof(*udp) + payload;
}

/* Recomputes the UDP checksum of a packet (0 if it is right). */
static uint16_t udp_check(const struct packet *pk, bool v6)
{
	const struct udphdr *udp = (const void *)(pk->bytes + pk->l4);
	uint16_t len = ntohs(udp->len);
	uint32_t sum;

	if (v6) {
		const struct ipv6hdr *ip6 = (const void *)(pk->bytes + sizeof(struct ethhdr));

		sum = sum16(&ip6->saddr, 32, 0);
		sum += len + IPPROTO_UDP;
	} else {
		const struct iphdr *ip = (const void *)(pk->bytes + sizeof(struct ethhdr));

		sum = sum16(&ip->saddr, 8, 0);
		sum += len + IPPROTO_UDP;
	}
	return (uint16_t)~fold(sum16(udp, len, sum));
}

FIXTURE(xdp)
{
	struct xkv_xdp *skel;
	struct xkv_slot *slots;
	int prog_fd;
};

static void cache(FIXTURE_DATA(xdp) * self, uint32_t idx, const char *key, const char *value,
		  size_t vlen, uint64_t expire_ns)
{
	uint64_t k = fastpath_index_key(key, strlen(key), HASH_SEED);

	fastpath_slot_write(&self->slots[idx], key, strlen(key), value, vlen, expire_ns);
	bpf_map_update_elem(bpf_map__fd(self->skel->maps.kv_index), &k, &idx, BPF_ANY);
}

static void allow(FIXTURE_DATA(xdp) * self, const char *addr, bool v6, uint32_t bits)
{
	struct xkv_allow_key k = { .prefixlen = bits };
	uint8_t one = 1;

	if (v6) {
		inet_pton(AF_INET6, addr, k.addr);
	} else {
		k.addr[10] = k.addr[11] = 0xff;
		inet_pton(AF_INET, addr, &k.addr[12]);
	}
	bpf_map_update_elem(bpf_map__fd(self->skel->maps.kv_allow), &k, &one, BPF_ANY);
}

FIXTURE_SETUP(xdp)
{
	static char big[XKV_MAX_VALUE + 1];

	self->skel = xkv_xdp__open();
	ASSERT_NE(NULL, self->skel);
	self->skel->rodata->xkv_port = PORT;
	self->skel->rodata->xkv_hash_seed = HASH_SEED;
	bpf_map__set_max_entries(self->skel->maps.kv_index, NSLOTS);
	bpf_map__set_max_entries(self->skel->maps.kv_slots, NSLOTS);
	ASSERT_EQ(0, xkv_xdp__load(self->skel));
	self->slots = mmap(NULL, NSLOTS * sizeof(struct xkv_slot), PROT_READ | PROT_WRITE,
			   MAP_SHARED, bpf_map__fd(self->skel->maps.kv_slots), 0);
	ASSERT_NE(MAP_FAILED, self->slots);
	self->prog_fd = bpf_program__fd(self->skel->progs.xdp_get_fastpath);
	self->skel->bss->xkv_heartbeat_ns = mono_ns();
	allow(self, "127.0.0.0", false, 96 + 8);
	allow(self, "::1", true, 128);

	memset(big, 'v', sizeof(big));
	cache(self, 0, "k", "hello", 5, 0);
	cache(self, 1, "gone", "old", 3, 1); /* a deadline long past */
	cache(self, 2, "max", big, XKV_MAX_VALUE, 0);
	cache(self, 3, "odd", "abc", 3, 0);
}

FIXTURE_TEARDOWN(xdp)
{
	munmap(self->slots, NSLOTS * sizeof(struct xkv_slot));
	xkv_xdp__destroy(self->skel);
}

static int run(FIXTURE_DATA(xdp) * self, struct packet *in, struct packet *out)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in->bytes, .data_size_in = (__u32)in->len,
		    .data_out = out->bytes, .data_size_out = sizeof(out->bytes), .repeat = 1);

	if (bpf_prog_test_run_opts(self->prog_fd, &opts) < 0)
		return -1;
	out->len = opts.data_size_out;
	out->l4 = in->l4;
	return (int)opts.retval;
}

static uint64_t stat(FIXTURE_DATA(xdp) * self, uint32_t which)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t values[ncpus], sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(self->skel->maps.kv_stats), &which, values))
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += values[i];
	return sum;
}

#define GET(key) "*2\r\n$3\r\nGET\r\n$" #key "\r\n"

/* Checks a kernel reply to a GET for `value`, byte by byte. */
static void expect_hit(struct __test_metadata *_metadata, const struct packet *in,
		       const struct packet *out, bool v6, const char *value, size_t vlen)
{
	const struct udphdr *udp = (const void *)(out->bytes + out->l4);
	const struct udphdr *udp_in = (const void *)(in->bytes + in->l4);
	const struct xkv_udp_hdr *h = (const void *)(udp + 1);
	char reply[XKV_MAX_REPLY];
	int n = snprintf(reply, sizeof(reply), "$%zu\r\n", vlen);

	memcpy(reply + n, value, vlen);
	memcpy(reply + n + vlen, "\r\n", 2);
	n += (int)vlen + 2;
	ASSERT_EQ(out->l4 + sizeof(*udp) + sizeof(*h) + (size_t)n, out->len);
	/* Ethernet and IP addresses swapped. */
	ASSERT_EQ(0, memcmp(out->bytes, in->bytes + 6, 6));
	ASSERT_EQ(0, memcmp(out->bytes + 6, in->bytes, 6));
	if (v6) {
		const struct ipv6hdr *ip6 = (const void *)(out->bytes + sizeof(struct ethhdr));

		ASSERT_EQ(sizeof(*udp) + sizeof(*h) + (size_t)n, ntohs(ip6->payload_len));
	} else {
		const struct iphdr *ip = (const void *)(out->bytes + sizeof(struct ethhdr));
		const struct iphdr *ip_in = (const void *)(in->bytes + sizeof(struct ethhdr));

		ASSERT_EQ(ip_in->saddr, ip->daddr);
		ASSERT_EQ(ip_in->daddr, ip->saddr);
		ASSERT_EQ(sizeof(*ip) + sizeof(*udp) + sizeof(*h) + (size_t)n, ntohs(ip->tot_len));
		ASSERT_EQ(0xffff, fold(sum16(ip, sizeof(*ip), 0)));
	}
	ASSERT_EQ(udp_in->source, udp->dest);
	ASSERT_EQ(udp_in->dest, udp->source);
	ASSERT_EQ(sizeof(*udp) + sizeof(*h) + (size_t)n, ntohs(udp->len));
	ASSERT_NE(0, udp->check);
	ASSERT_EQ(0, udp_check(out, v6));
	ASSERT_EQ(XKV_UDP_MAGIC, ntohs(h->magic));
	ASSERT_EQ(XKV_F_REPLY | XKV_F_KERNEL, h->flags);
	ASSERT_EQ(0xabcdef01, ntohl(h->request_id));
	ASSERT_EQ(n, ntohs(h->cmd_len));
	ASSERT_EQ(vlen, ntohl(h->value_len));
	ASSERT_EQ(0, h->token);
	ASSERT_EQ(0, memcmp(h + 1, reply, (size_t)n));
}

TEST_F(xdp, hit_ipv4)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 64 };
	struct packet in, out;

	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "hello", 5);
	ASSERT_EQ(1, stat(self, XKV_STAT_HIT));
}

TEST_F(xdp, hit_ipv6_lower_case)
{
	struct request_spec rs = { .v6 = true,
				   .cmd = "*2\r\n$3\r\nget\r\n$1\r\nk\r\n",
				   .pad_to = 64 };
	struct packet in, out;

	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, true, "hello", 5);
}

TEST_F(xdp, hit_odd_length_and_mixed_case)
{
	struct request_spec rs = { .cmd = "*2\r\n$3\r\ngEt\r\n$3\r\nodd\r\n", .pad_to = 61 };
	struct packet in, out;

	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "abc", 3);
}

TEST_F(xdp, hit_largest_value)
{
	static char big[XKV_MAX_VALUE];
	struct request_spec rs = { .cmd = GET(3) "max\r\n", .pad_to = 1200 };
	struct packet in, out;

	memset(big, 'v', sizeof(big));
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, big, sizeof(big));
}

/* One request that must pass to the daemon unchanged, counted as `reason`. */
static void expect_pass(struct __test_metadata *_metadata, FIXTURE_DATA(xdp) * self,
			const struct request_spec *rs, uint32_t reason)
{
	struct packet in, out;

	build(&in, rs);
	ASSERT_EQ(XDP_PASS, run(self, &in, &out));
	ASSERT_EQ(in.len, out.len);
	ASSERT_EQ(0, memcmp(in.bytes, out.bytes, in.len));
	ASSERT_EQ(1, stat(self, reason));
}

TEST_F(xdp, miss_not_cached)
{
	struct request_spec rs = { .cmd = GET(4) "nope\r\n", .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_CACHED);
}

TEST_F(xdp, miss_expired)
{
	struct request_spec rs = { .cmd = GET(4) "gone\r\n", .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_EXPIRED);
}

TEST_F(xdp, wrong_port)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .dport = 6380, .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_OURS);
}

TEST_F(xdp, not_udp)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .proto = IPPROTO_TCP, .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_OURS);
}

TEST_F(xdp, not_our_magic)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .magic = 0x1234, .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_OURS);
}

TEST_F(xdp, two_commands_in_one_datagram)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n" GET(1) "k\r\n", .pad_to = 128 };

	expect_pass(_metadata, self, &rs, XKV_MISS_MALFORMED);
}

TEST_F(xdp, other_commands_and_forms)
{
	static const char *const cmds[] = {
		"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",  "*3\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$01\r\nk\r\n", "*2\r\n$3\r\nGET\r\n$2\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\n\n",  "GET k\r\n",
		"*2\r\n$4\r\nGETX\r\n$1\r\nk\r\n",
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct request_spec rs = { .cmd = cmds[i], .pad_to = 64 };
		struct packet in, out;

		build(&in, &rs);
		EXPECT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("command %zu", i);
	}
	ASSERT_EQ(sizeof(cmds) / sizeof(cmds[0]), stat(self, XKV_MISS_MALFORMED));
}

TEST_F(xdp, truncated_at_every_length)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 64 };
	struct packet full, in, out;
	uint64_t passed = 0;

	build(&full, &rs);
	/* Every prefix of the frame, including ones that cut the headers. */
	for (size_t len = 1; len < full.len; len++) {
		in = full;
		in.len = len;
		if (len < 14)
			continue; /* shorter than Ethernet: the kernel refuses to run it */
		ASSERT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("length %zu", len);
		passed++;
	}
	ASSERT_EQ(0, stat(self, XKV_STAT_HIT));
	ASSERT_LT(0, passed);
}

TEST_F(xdp, key_at_and_over_the_limit)
{
	char cmd[512], key[XKV_MAX_KEY + 2];
	struct request_spec rs = { .cmd = cmd, .pad_to = 400 };
	struct packet in, out;
	static const char value[] = "at-limit";

	memset(key, 'a', sizeof(key));
	key[XKV_MAX_KEY] = '\0';
	cache(self, 4, key, value, sizeof(value) - 1, 0);
	snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", XKV_MAX_KEY, key);
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, value, sizeof(value) - 1);

	key[XKV_MAX_KEY] = 'a';
	key[XKV_MAX_KEY + 1] = '\0';
	snprintf(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", XKV_MAX_KEY + 1, key);
	expect_pass(_metadata, self, &rs, XKV_MISS_KEY_TOO_LONG);
}

TEST_F(xdp, reply_would_not_fit)
{
	/* 24 + 11 reply bytes needed, 24 + 20 command bytes sent: fits. One less
	 * byte of room than the reply needs must pass. */
	struct request_spec rs = { .cmd = GET(3) "max\r\n", .pad_to = 24 + 1000 };

	expect_pass(_metadata, self, &rs, XKV_MISS_NO_ROOM);
}

TEST_F(xdp, source_outside_the_allowlist)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .saddr4 = 0x0a000001, .pad_to = 64 };

	expect_pass(_metadata, self, &rs, XKV_MISS_DENIED);
}

TEST_F(xdp, token_required)
{
	struct request_spec bad = { .cmd = GET(1) "k\r\n", .pad_to = 64, .token = 42 };
	struct request_spec good = { .cmd = GET(1) "k\r\n", .pad_to = 64, .token = TOKEN };
	struct packet in, out;

	self->skel->bss->xkv_token_required = 1;
	self->skel->bss->xkv_token = TOKEN;
	expect_pass(_metadata, self, &bad, XKV_MISS_BAD_TOKEN);
	build(&in, &good);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "hello", 5);
}

TEST_F(xdp, stale_daemon_answers_nothing)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 64 };

	self->skel->bss->xkv_heartbeat_ns = mono_ns() - 2 * XKV_HEARTBEAT_MAX_AGE_NS;
	expect_pass(_metadata, self, &rs, XKV_MISS_STALE_DAEMON);
}

TEST_F(xdp, slot_being_written_or_reused)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 64 };

	/* An odd sequence: a write is in progress. */
	self->slots[0].seq++;
	expect_pass(_metadata, self, &rs, XKV_MISS_TORN);
	self->slots[0].seq++;
	/* The index still points at slot 0, which now holds another key. */
	fastpath_slot_write(&self->slots[0], "x", 1, "other", 5, 0);
	{
		struct packet in, out;

		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out));
		ASSERT_EQ(2, stat(self, XKV_MISS_TORN));
	}
}

/*
 * What a hash collision in kv_index would do: the entry for an uncached key
 * names a slot that holds another key. Keys that differ only in their last
 * word, or only in length (a trailing NUL pads like zero), must never be
 * answered from each other's slot.
 */
TEST_F(xdp, shared_hash_never_confuses_keys)
{
	static const struct {
		const char *cached, *asked, *cmd;
		size_t cached_len, asked_len, cmd_len;
	} cases[] = {
		{ "0123456789abcdefX", "0123456789abcdefY",
		  "*2\r\n$3\r\nGET\r\n$17\r\n0123456789abcdefY\r\n", 17, 17, 0 },
		{ "ab", "ab\0", "*2\r\n$3\r\nGET\r\n$3\r\nab\0\r\n", 2, 3, 22 },
	};
	int index_fd = bpf_map__fd(self->skel->maps.kv_index);

	for (uint32_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct request_spec rs = { .cmd = cases[i].cmd,
					   .cmd_len = cases[i].cmd_len,
					   .pad_to = 64 };
		uint64_t k = fastpath_index_key(cases[i].asked, cases[i].asked_len, HASH_SEED);
		uint32_t idx = 4 + i;
		struct packet in, out;

		fastpath_slot_write(&self->slots[idx], cases[i].cached, cases[i].cached_len, "v", 1,
				    0);
		ASSERT_EQ(0, bpf_map_update_elem(index_fd, &k, &idx, BPF_ANY));
		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("case %u", i);
		ASSERT_EQ(i + 1, stat(self, XKV_MISS_TORN));
		/* Indexed under its own hash, the asked key is served. */
		fastpath_slot_write(&self->slots[idx], cases[i].asked, cases[i].asked_len, "w", 1,
				    0);
		build(&in, &rs);
		ASSERT_EQ(XDP_TX, run(self, &in, &out)) TH_LOG("case %u", i);
		expect_hit(_metadata, &in, &out, false, "w", 1);
	}
}

struct rewriter {
	struct xkv_slot *slot;
	volatile bool stop;
	uint64_t writes;
};

/* Rewrites the slot between two patterns as fast as it can. */
static void *rewrite(void *arg)
{
	static char a[XKV_MAX_VALUE], b[XKV_MAX_VALUE];
	struct rewriter *r = arg;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	while (!r->stop) {
		fastpath_slot_write(r->slot, "k", 1, (r->writes & 1) ? b : a, sizeof(a), 0);
		r->writes++;
		/* A short pause so reads also land between writes, not only in them. */
		for (volatile int spin = 0; spin < 500; spin++)
			;
	}
	return NULL;
}

TEST_F(xdp, torn_reads_never_reach_the_wire)
{
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 1200 };
	struct rewriter r = { .slot = &self->slots[0] };
	/* Fewer under software emulation (tests/kernel/run.sh), to finish in time. */
	int runs = getenv("XKV_TORN_RUNS") ? atoi(getenv("XKV_TORN_RUNS")) : 200000;
	uint64_t hits = 0, passes = 0;
	struct packet in, out;
	pthread_t thread;

	build(&in, &rs);
	ASSERT_EQ(0, pthread_create(&thread, NULL, rewrite, &r));
	/* Start once the slot holds a pattern, not the fixture's "hello". */
	while (!__atomic_load_n(&r.writes, __ATOMIC_RELAXED))
		;
	for (int i = 0; i < runs; i++) {
		const struct xkv_udp_hdr *h;
		const char *value;
		int action, mixed;

		/* Every run: under emulation or load 1,000 runs can outlast the
		 * heartbeat's second, and a stale-daemon pass is not a torn one. */
		self->skel->bss->xkv_heartbeat_ns = mono_ns();
		action = run(self, &in, &out);
		if (action == XDP_PASS) {
			passes++;
			continue;
		}
		ASSERT_EQ(XDP_TX, action);
		h = (const void *)(out.bytes + out.l4 + sizeof(struct udphdr));
		ASSERT_EQ(strlen("$1024\r\n") + XKV_MAX_VALUE + 2, ntohs(h->cmd_len));
		value = (const char *)(h + 1) + strlen("$1024\r\n");
		/* One pattern, whole: the first byte decides which. */
		mixed = -1;
		for (int j = 1; j < XKV_MAX_VALUE && mixed < 0; j++)
			if (value[j] != value[0])
				mixed = j;
		ASSERT_EQ(-1, mixed) TH_LOG("run %d mixed the patterns at byte %d", i, mixed);
		ASSERT_EQ(0, udp_check(&out, false));
		hits++;
	}
	r.stop = true;
	pthread_join(thread, NULL);
	TH_LOG("%llu hits, %llu passed as torn, %llu rewrites", (unsigned long long)hits,
	       (unsigned long long)passes, (unsigned long long)r.writes);
	ASSERT_LT(0, hits);
	/* Every miss was the seqlock or key check at work, nothing else. */
	ASSERT_EQ(passes, stat(self, XKV_MISS_TORN));
}

TEST_HARNESS_MAIN
