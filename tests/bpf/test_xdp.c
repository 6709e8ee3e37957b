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
/* BPF_PROG_TEST_RUN runs XDP as received on the namespace's lo, ifindex 1;
 * kv_local says what that interface is, so a test can make it a veth. */
#define IFINDEX 1
static const uint8_t IF_MAC[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t PEER_MAC[6] = { 0x02, 0, 0, 0, 0, 0x02 };

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
	uint8_t bytes[3072]; /* BPF_PROG_TEST_RUN takes up to a page, less head and tail room */
	size_t len;
	size_t l4; /* UDP header offset */
};

struct request_spec {
	bool v6;
	uint32_t saddr4;	     /* host order; 0: 127.0.0.1 */
	uint32_t daddr4;	     /* host order; 0: 127.0.0.1 */
	const char *saddr6, *daddr6; /* NULL: ::1 */
	const uint8_t *dmac, *smac;  /* NULL: IF_MAC, PEER_MAC */
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
	memcpy(eth->h_dest, rs->dmac ? rs->dmac : IF_MAC, 6);
	memcpy(eth->h_source, rs->smac ? rs->smac : PEER_MAC, 6);
	if (rs->v6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->payload_len = htons((uint16_t)(sizeof(*udp) + payload));
		ip6->nexthdr = rs->proto ? rs->proto : IPPROTO_UDP;
		ip6->hop_limit = 64;
		inet_pton(AF_INET6, rs->saddr6 ? rs->saddr6 : "::1", &ip6->saddr);
		inet_pton(AF_INET6, rs->daddr6 ? rs->daddr6 : "::1", &ip6->daddr);
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
		ip->daddr = htonl(rs->daddr4 ? rs->daddr4 : 0x7f000001);
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

/* Every test runs twice: as a plain server, and in cluster mode owning every
 * slot, where the answers must be the same; the cluster_* tests check what
 * cluster mode adds (and skip in the plain run). */
FIXTURE_VARIANT(xdp)
{
	bool cluster;
};

FIXTURE_VARIANT_ADD(xdp, plain){
	.cluster = false,
};

FIXTURE_VARIANT_ADD(xdp, cluster){
	.cluster = true,
};

static void cache(FIXTURE_DATA(xdp) * self, uint32_t idx, const char *key, const char *value,
		  size_t vlen, uint64_t expire_ns)
{
	uint64_t k = fastpath_index_key(key, strlen(key), HASH_SEED);

	fastpath_slot_write(&self->slots[idx], key, strlen(key), 0, value, vlen, expire_ns);
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

/* Says that `addr` is one the daemon listens on, on interface IFINDEX,
 * which is (or is not) a loopback device. */
static void local(FIXTURE_DATA(xdp) * self, const char *addr, bool v6, bool loopback)
{
	int fd = bpf_map__fd(self->skel->maps.kv_local);
	uint32_t key = IFINDEX;
	struct xkv_local v;

	bpf_map_lookup_elem(fd, &key, &v);
	memcpy(v.mac, IF_MAC, 6);
	v.loopback = loopback;
	if (!addr) {
		v.n4 = v.n6 = 0;
	} else if (v6) {
		inet_pton(AF_INET6, addr, v.addr6[v.n6++]);
	} else {
		inet_pton(AF_INET, addr, &v.addr4[v.n4++]);
	}
	bpf_map_update_elem(fd, &key, &v, BPF_ANY);
}

FIXTURE_SETUP(xdp)
{
	static char big[XKV_MAX_VALUE + 1];

	self->skel = xkv_xdp__open();
	ASSERT_NE(NULL, self->skel);
	self->skel->rodata->xkv_port = PORT;
	self->skel->rodata->xkv_hash_seed = HASH_SEED;
	self->skel->rodata->xkv_cluster_mode = variant->cluster;
	bpf_map__set_max_entries(self->skel->maps.kv_index, NSLOTS);
	bpf_map__set_max_entries(self->skel->maps.kv_slots, NSLOTS);
	ASSERT_EQ(0, xkv_xdp__load(self->skel));
	self->slots = mmap(NULL, NSLOTS * sizeof(struct xkv_slot), PROT_READ | PROT_WRITE,
			   MAP_SHARED, bpf_map__fd(self->skel->maps.kv_slots), 0);
	ASSERT_NE(MAP_FAILED, self->slots);
	self->prog_fd = bpf_program__fd(self->skel->progs.xdp_get_fastpath);
	self->skel->bss->xkv_heartbeat_ns = mono_ns();
	if (variant->cluster)
		memset(self->skel->bss->xkv_owned_slots, 0xff,
		       sizeof(self->skel->bss->xkv_owned_slots));
	allow(self, "127.0.0.0", false, 96 + 8);
	allow(self, "::1", true, 128);
	local(self, "127.0.0.1", false, true);
	local(self, "::1", true, true);

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

/* Checks a kernel reply carrying reply[0..n) and value_len, byte by byte. */
static void expect_reply(struct __test_metadata *_metadata, const struct packet *in,
			 const struct packet *out, bool v6, const char *reply, int n,
			 size_t value_len)
{
	const struct udphdr *udp = (const void *)(out->bytes + out->l4);
	const struct udphdr *udp_in = (const void *)(in->bytes + in->l4);
	const struct xkv_udp_hdr *h = (const void *)(udp + 1);

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
	ASSERT_EQ(value_len, ntohl(h->value_len));
	ASSERT_EQ(0, h->token);
	ASSERT_EQ(0, memcmp(h + 1, reply, (size_t)n));
}

/* Checks a kernel reply to a GET for `value`, byte by byte. */
static void expect_hit(struct __test_metadata *_metadata, const struct packet *in,
		       const struct packet *out, bool v6, const char *value, size_t vlen)
{
	char reply[XKV_MAX_REPLY];
	int n = snprintf(reply, sizeof(reply), "$%zu\r\n", vlen);

	memcpy(reply + n, value, vlen);
	memcpy(reply + n + vlen, "\r\n", 2);
	n += (int)vlen + 2;
	expect_reply(_metadata, in, out, v6, reply, n, vlen);
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

	self->skel->bss->xkv_access = XKV_ACCESS_TOKEN;
	self->skel->bss->xkv_token = TOKEN;
	expect_pass(_metadata, self, &bad, XKV_MISS_BAD_TOKEN);
	build(&in, &good);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "hello", 5);
}

/* The issue 11 defect: requirepass with fastpath-token unset left the
 * kernel's token 0, and a request's 0 matched it. */
TEST_F(xdp, token_zero_never_proves_a_password)
{
	struct request_spec zero = { .cmd = GET(1) "k\r\n", .pad_to = 64 };

	self->skel->bss->xkv_access = XKV_ACCESS_TOKEN;
	self->skel->bss->xkv_token = 0;
	expect_pass(_metadata, self, &zero, XKV_MISS_BAD_TOKEN);
	self->skel->bss->xkv_token = TOKEN;
	{
		struct packet in, out;

		build(&in, &zero);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out));
		ASSERT_EQ(2, stat(self, XKV_MISS_BAD_TOKEN));
	}
	/* Without a password the token is ignored. */
	self->skel->bss->xkv_access = 0;
	{
		struct request_spec any = { .cmd = GET(1) "k\r\n", .pad_to = 64, .token = 42 };
		struct packet in, out;

		build(&in, &any);
		ASSERT_EQ(XDP_TX, run(self, &in, &out));
	}
}

/* A default user whose ACL restricts anything: the kernel answers nothing,
 * GET or MGET, with or without a password; the daemon checks the ACL. */
TEST_F(xdp, restricted_default_user_leaves_everything_to_the_daemon)
{
	struct request_spec get = { .cmd = GET(1) "k\r\n", .pad_to = 64, .token = TOKEN };
	struct request_spec mget = { .cmd = "*2\r\n$4\r\nMGET\r\n$1\r\nk\r\n",
				     .pad_to = 64,
				     .token = TOKEN };
	struct packet in, out;

	self->skel->bss->xkv_access = XKV_ACCESS_DAEMON;
	expect_pass(_metadata, self, &get, XKV_MISS_ACL);
	build(&in, &mget);
	ASSERT_EQ(XDP_PASS, run(self, &in, &out));
	ASSERT_EQ(2, stat(self, XKV_MISS_ACL));
	self->skel->bss->xkv_token = TOKEN;
	self->skel->bss->xkv_access = XKV_ACCESS_TOKEN | XKV_ACCESS_DAEMON;
	build(&in, &get);
	ASSERT_EQ(XDP_PASS, run(self, &in, &out));
	ASSERT_EQ(3, stat(self, XKV_MISS_ACL));
	/* Open again: the kernel answers. */
	self->skel->bss->xkv_access = XKV_ACCESS_TOKEN;
	build(&in, &get);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "hello", 5);
}

/* Makes the test's interface a veth with 10.0.0.1 and fd00::1, from which
 * 10.0.0.0/24 and fd00::/64 are allowed (as fastpath-allow would). */
static void make_veth(FIXTURE_DATA(xdp) * self)
{
	local(self, NULL, false, false);
	local(self, "127.0.0.1", false, false);
	local(self, "::1", true, false);
	local(self, "10.0.0.1", false, false);
	local(self, "fd00::1", true, false);
	allow(self, "10.0.0.0", false, 96 + 24);
	allow(self, "fd00::", true, 64);
}

TEST_F(xdp, loopback_sources_only_on_loopback)
{
	static const struct request_spec spoofed[] = {
		{ .cmd = GET(1) "k\r\n", .pad_to = 64 }, /* 127.0.0.1 -> 127.0.0.1 */
		{ .cmd = GET(1) "k\r\n", .pad_to = 64, .daddr4 = 0x0a000001 }, /* -> 10.0.0.1 */
		{ .cmd = GET(1) "k\r\n", .pad_to = 64, .saddr4 = 0x7f000005, .daddr4 = 0x0a000001 },
		{ .v6 = true, .cmd = GET(1) "k\r\n", .pad_to = 64 }, /* ::1 -> ::1 */
		{ .v6 = true, .cmd = GET(1) "k\r\n", .pad_to = 64, .daddr6 = "fd00::1" },
	};
	struct request_spec from_peer = {
		.cmd = GET(1) "k\r\n", .pad_to = 64, .saddr4 = 0x0a000002, .daddr4 = 0x0a000001
	};
	struct packet in, out;

	make_veth(self);
	for (size_t i = 0; i < sizeof(spoofed) / sizeof(spoofed[0]); i++) {
		build(&in, &spoofed[i]);
		EXPECT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("spoofed %zu", i);
	}
	ASSERT_EQ(sizeof(spoofed) / sizeof(spoofed[0]), stat(self, XKV_MISS_DENIED));
	ASSERT_EQ(0, stat(self, XKV_STAT_HIT));
	/* The peer's own address is answered, from the interface's MAC. */
	build(&in, &from_peer);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "hello", 5);
	ASSERT_EQ(0, memcmp(out.bytes + 6, IF_MAC, 6));
	ASSERT_EQ(0, memcmp(out.bytes, PEER_MAC, 6));
}

/* IPv4-mapped sources in IPv6 would match kv_allow's IPv4 entries; the
 * stack drops them, and so does the program, on loopback too. */
TEST_F(xdp, ipv4_mapped_sources_never)
{
	static const char *const sources[] = { "::ffff:127.0.0.1", "::ffff:10.0.0.2" };

	for (int lo = 1; lo >= 0; lo--) {
		if (!lo)
			make_veth(self);
		for (size_t i = 0; i < 2; i++) {
			struct request_spec rs = { .v6 = true,
						   .cmd = GET(1) "k\r\n",
						   .pad_to = 64,
						   .saddr6 = sources[i],
						   .daddr6 = lo ? "::1" : "fd00::1" };
			struct packet in, out;

			build(&in, &rs);
			EXPECT_EQ(XDP_PASS, run(self, &in, &out))
			TH_LOG("%s lo %d", sources[i], lo);
		}
	}
	ASSERT_EQ(4, stat(self, XKV_MISS_DENIED));
}

TEST_F(xdp, only_our_unicast_destinations)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t mcast4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	static const uint8_t mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 0x09 };
	const struct request_spec cases[] = {
		/* Another host's destination IP, and local ones the daemon is not on. */
		{ .saddr4 = 0x0a000002, .daddr4 = 0x01020304 },
		{ .saddr4 = 0x0a000002, .daddr4 = 0x7f000002 },
		/* Broadcast and multicast IP, with our MAC or a group MAC. */
		{ .saddr4 = 0x0a000002, .daddr4 = 0xffffffff },
		{ .saddr4 = 0x0a000002, .daddr4 = 0x0a0000ff },
		{ .saddr4 = 0x0a000002, .daddr4 = 0xffffffff, .dmac = bcast },
		{ .saddr4 = 0x0a000002, .daddr4 = 0xe0000001, .dmac = mcast4 },
		{ .v6 = true, .saddr6 = "fd00::2", .daddr6 = "ff02::1", .dmac = mcast6 },
		{ .v6 = true, .saddr6 = "fd00::2", .daddr6 = "fd00::9" },
		/* Our IP in a frame to a group or another host's MAC. */
		{ .saddr4 = 0x0a000002, .daddr4 = 0x0a000001, .dmac = bcast },
		{ .saddr4 = 0x0a000002, .daddr4 = 0x0a000001, .dmac = mcast4 },
		{ .v6 = true, .saddr6 = "fd00::2", .daddr6 = "fd00::1", .dmac = mcast6 },
		{ .saddr4 = 0x0a000002, .daddr4 = 0x0a000001, .dmac = other },
		/* From a group MAC: the reply would be a broadcast. */
		{ .saddr4 = 0x0a000002, .daddr4 = 0x0a000001, .smac = bcast },
	};
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct packet in, out;

	make_veth(self);
	for (size_t i = 0; i < n; i++) {
		struct request_spec rs = cases[i];

		rs.cmd = GET(1) "k\r\n";
		rs.pad_to = 64;
		build(&in, &rs);
		EXPECT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("case %zu", i);
		EXPECT_EQ(0, memcmp(in.bytes, out.bytes, in.len)) TH_LOG("case %zu", i);
	}
	ASSERT_EQ(n, stat(self, XKV_MISS_NOT_LOCAL));
	ASSERT_EQ(0, stat(self, XKV_STAT_HIT));
}

TEST_F(xdp, unknown_interface_answers_nothing)
{
	static const struct xkv_local none;
	struct request_spec rs = { .cmd = GET(1) "k\r\n", .pad_to = 64 };
	uint32_t key = IFINDEX;

	ASSERT_EQ(0, bpf_map_update_elem(bpf_map__fd(self->skel->maps.kv_local), &key, &none,
					 BPF_ANY));
	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_LOCAL);
}

TEST_F(xdp, non_unicast_sources_never)
{
	static const uint32_t sources[] = { 0x00000000, 0x00000001, 0xe0000001, 0xf0000001,
					    0xffffffff };
	struct packet in, out;

	/* fastpath-allow 0.0.0.0/0 ::/0 still refuses them. */
	allow(self, "0.0.0.0", false, 96);
	allow(self, "::", true, 0);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		struct request_spec rs = { .cmd = GET(1) "k\r\n",
					   .pad_to = 64,
					   .saddr4 = sources[i] };

		build(&in, &rs);
		if (!sources[i])
			((struct iphdr *)(in.bytes + sizeof(struct ethhdr)))->saddr = 0;
		EXPECT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("source %08x", sources[i]);
	}
	for (int i = 0; i < 2; i++) {
		struct request_spec rs = { .v6 = true,
					   .cmd = GET(1) "k\r\n",
					   .pad_to = 64,
					   .saddr6 = i ? "ff02::1" : "::" };

		build(&in, &rs);
		EXPECT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("v6 source %d", i);
	}
	ASSERT_EQ(sizeof(sources) / sizeof(sources[0]) + 2, stat(self, XKV_MISS_DENIED));
}

/* protected-mode yes without a password: 127.0.0.1 and ::1 only, whatever
 * kv_allow says, as the daemon's TCP and UDP. */
TEST_F(xdp, protected_mode_is_loopback_only)
{
	struct request_spec lo4 = { .cmd = GET(1) "k\r\n", .pad_to = 64 };
	struct request_spec lo6 = { .v6 = true, .cmd = GET(1) "k\r\n", .pad_to = 64 };
	struct request_spec other_lo = { .cmd = GET(1) "k\r\n",
					 .pad_to = 64,
					 .saddr4 = 0x7f000002 };
	struct packet in, out;

	self->skel->bss->xkv_access = XKV_ACCESS_LOOPBACK_ONLY;
	build(&in, &lo4);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	build(&in, &lo6);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_pass(_metadata, self, &other_lo, XKV_MISS_DENIED);
	make_veth(self);
	{
		struct request_spec peer = { .cmd = GET(1) "k\r\n",
					     .pad_to = 64,
					     .saddr4 = 0x0a000002,
					     .daddr4 = 0x0a000001 };

		build(&in, &peer);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out));
		ASSERT_EQ(2, stat(self, XKV_MISS_DENIED));
		self->skel->bss->xkv_access = 0;
		build(&in, &peer);
		ASSERT_EQ(XDP_TX, run(self, &in, &out));
	}
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
	fastpath_slot_write(&self->slots[0], "x", 1, 0, "other", 5, 0);
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

		fastpath_slot_write(&self->slots[idx], cases[i].cached, cases[i].cached_len, 0, "v",
				    1, 0);
		ASSERT_EQ(0, bpf_map_update_elem(index_fd, &k, &idx, BPF_ANY));
		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("case %u", i);
		ASSERT_EQ(i + 1, stat(self, XKV_MISS_TORN));
		/* Indexed under its own hash, the asked key is served. */
		fastpath_slot_write(&self->slots[idx], cases[i].asked, cases[i].asked_len, 0, "w",
				    1, 0);
		build(&in, &rs);
		ASSERT_EQ(XDP_TX, run(self, &in, &out)) TH_LOG("case %u", i);
		expect_hit(_metadata, &in, &out, false, "w", 1);
	}
}

/* The daemon feeds a slot's hits to its key's LRU/LFU: every hit counts, up
 * to the cap, and nothing else does. */
TEST_F(xdp, hits_are_counted_up_to_the_cap)
{
	struct request_spec hit = { .cmd = GET(1) "k\r\n", .pad_to = 64 };
	struct request_spec expired = { .cmd = GET(4) "gone\r\n", .pad_to = 64 };
	struct request_spec no_room = { .cmd = GET(3) "max\r\n", .pad_to = 64 };
	struct packet in, out;

	ASSERT_EQ(0, self->slots[0].hits);
	build(&in, &hit);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(XDP_TX, run(self, &in, &out));
	ASSERT_EQ(3, self->slots[0].hits);
	expect_pass(_metadata, self, &expired, XKV_MISS_EXPIRED);
	expect_pass(_metadata, self, &no_room, XKV_MISS_NO_ROOM);
	ASSERT_EQ(0, self->slots[1].hits);
	ASSERT_EQ(0, self->slots[2].hits);
	/* Saturates: a hot slot's line is written a bounded number of times. */
	self->slots[0].hits = XKV_SLOT_HITS_MAX - 1;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(XDP_TX, run(self, &in, &out));
	ASSERT_EQ(XKV_SLOT_HITS_MAX, self->slots[0].hits);
	/* Taken by the daemon, it counts again from zero. */
	self->slots[0].hits = 0;
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	ASSERT_EQ(1, self->slots[0].hits);
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
		fastpath_slot_write(r->slot, "k", 1, 0, (r->writes & 1) ? b : a, sizeof(a), 0);
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

/* ---- MGET ---------------------------------------------------------------------- */

/* Writes "MGET keys..." as RESP into buf; returns its length. */
static size_t mget_cmd(char *buf, size_t size, int nkeys, const char *const *keys)
{
	size_t n = (size_t)snprintf(buf, size, "*%d\r\n$4\r\nMGET\r\n", nkeys + 1);

	for (int i = 0; i < nkeys; i++)
		n += (size_t)snprintf(buf + n, size - n, "$%zu\r\n%s\r\n", strlen(keys[i]),
				      keys[i]);
	return n;
}

/* The kernel's reply to an MGET of keys that all hit: the array, value_len 0. */
static void expect_mget_hit(struct __test_metadata *_metadata, const struct packet *in,
			    const struct packet *out, bool v6, int nvalues,
			    const char *const *values)
{
	static char reply[XKV_MGET_MAX_REPLY];
	int n = snprintf(reply, sizeof(reply), "*%d\r\n", nvalues);

	for (int i = 0; i < nvalues; i++) {
		size_t vlen = strlen(values[i]);

		n += snprintf(reply + n, sizeof(reply) - (size_t)n, "$%zu\r\n", vlen);
		memcpy(reply + n, values[i], vlen);
		memcpy(reply + n + vlen, "\r\n", 2);
		n += (int)vlen + 2;
	}
	expect_reply(_metadata, in, out, v6, reply, n, 0);
}

TEST_F(xdp, mget_hits)
{
	/* "odd"'s reply has an odd length: the next value starts at an odd offset,
	 * where its stored checksum must be byte-swapped. */
	static const char *const keys[] = { "k", "odd", "k", "odd", "odd" };
	static const char *const values[] = { "hello", "abc", "hello", "abc", "abc" };
	char cmd[256];
	struct request_spec rs = { .cmd = cmd, .pad_to = 128 };
	struct packet in, out;

	for (int v6 = 0; v6 <= 1; v6++) {
		for (int nkeys = 1; nkeys <= 5; nkeys++) {
			rs.v6 = v6;
			mget_cmd(cmd, sizeof(cmd), nkeys, keys);
			build(&in, &rs);
			ASSERT_EQ(XDP_TX, run(self, &in, &out)) TH_LOG("%d keys", nkeys);
			expect_mget_hit(_metadata, &in, &out, v6, nkeys, values);
		}
	}
	ASSERT_EQ(10, stat(self, XKV_STAT_MGET_HIT));
	ASSERT_EQ(0, stat(self, XKV_STAT_HIT));
}

TEST_F(xdp, mget_lower_case_and_most_keys)
{
	static const char *const keys[] = { "k", "odd", "k", "odd", "k", "odd", "k", "odd" };
	static const char *const values[] = { "hello", "abc", "hello", "abc",
					      "hello", "abc", "hello", "abc" };
	char cmd[256];
	struct request_spec rs = { .cmd = cmd, .pad_to = 200 };
	struct packet in, out;

	_Static_assert(XKV_MGET_MAX_KEYS == 8, "keys[] holds XKV_MGET_MAX_KEYS keys");
	mget_cmd(cmd, sizeof(cmd), XKV_MGET_MAX_KEYS, keys);
	memcpy(cmd + 8, "mGeT", 4);
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_mget_hit(_metadata, &in, &out, false, XKV_MGET_MAX_KEYS, values);
}

TEST_F(xdp, mget_large_values_and_longest_key)
{
	static char big[XKV_MAX_VALUE + 1], key[XKV_MAX_KEY + 1];
	const char *keys[] = { "max", key, "max" };
	const char *values[] = { big, "at-limit", big };
	char cmd[512];
	struct request_spec rs = { .cmd = cmd, .pad_to = 2200 };
	struct packet in, out;

	memset(big, 'v', XKV_MAX_VALUE);
	memset(key, 'a', XKV_MAX_KEY);
	cache(self, 4, key, "at-limit", 8, 0);
	mget_cmd(cmd, sizeof(cmd), 3, keys);
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_mget_hit(_metadata, &in, &out, false, 3, values);
}

TEST_F(xdp, mget_partial_hit_passes)
{
	static const char *const missing[] = { "k", "nope", "odd" };
	static const char *const expired[] = { "k", "odd", "gone" };
	char cmd[256];
	struct request_spec rs = { .cmd = cmd, .pad_to = 128 };

	mget_cmd(cmd, sizeof(cmd), 3, missing);
	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_CACHED);
	mget_cmd(cmd, sizeof(cmd), 3, expired);
	expect_pass(_metadata, self, &rs, XKV_MISS_EXPIRED);
}

TEST_F(xdp, mget_reply_larger_than_request_passes)
{
	/* "*2\r\n" + 2 x "$5\r\nhello\r\n": 26 bytes of reply, 36 of command. Values
	 * larger than their keys make the reply outgrow an unpadded request. */
	static const char *const keys[] = { "k", "k" }, *const values[] = { "hello", "hello" };
	static const char *const big[] = { "max", "max" };
	char cmd[256];
	size_t n = mget_cmd(cmd, sizeof(cmd), 2, keys);
	struct request_spec rs = { .cmd = cmd, .pad_to = 24 + 26 };
	struct packet in, out;

	ASSERT_LT(26, n); /* the command alone has room for the reply */
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_mget_hit(_metadata, &in, &out, false, 2, values);

	/* 4 + 2 x 1033 bytes of reply: one byte short passes, an exact fit is answered. */
	mget_cmd(cmd, sizeof(cmd), 2, big);
	rs.pad_to = 24 + 4 + 2 * 1033 - 1;
	expect_pass(_metadata, self, &rs, XKV_MISS_NO_ROOM);
	rs.pad_to++;
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	ASSERT_EQ(1, stat(self, XKV_MISS_NO_ROOM));
}

TEST_F(xdp, mget_malformed_passes)
{
	static const struct {
		const char *cmd;
		uint32_t reason;
	} cases[] = {
		{ "*3\r\n$4\r\nMGET\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED }, /* a key short */
		{ "*2\r\n$4\r\nMGET\r\n$1\r\nk\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED }, /* one more */
		{ "*1\r\n$4\r\nMGET\r\n", XKV_MISS_MALFORMED },			      /* no key */
		{ "*1\r\n$4\r\nMGET\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*02\r\n$4\r\nMGET\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\r\n$01\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\r\n$2\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\r\n$1\r\nk\n\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\r\n+1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGEX\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$5\r\nMGETS\r\n$1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\n\n$1\r\nk\r\n", XKV_MISS_MALFORMED },
		{ "*3\r\n$4\r\nMGET\r\n$1\r\nk\r\n$1\r\nk\r\nxx", XKV_MISS_MALFORMED },
		{ "*3\r\n$4\r\nMGET\r\n$1\r\nk\r\n" GET(1) "k\r\n", XKV_MISS_MALFORMED },
		{ "*2\r\n$4\r\nMGET\r\n$5\r\nk\r\n", XKV_MISS_MALFORMED }, /* cut short */
		{ "*2\r\n$4\r\nMGET\r\n$1234\r\nk\r\n", XKV_MISS_KEY_TOO_LONG },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct request_spec rs = { .cmd = cases[i].cmd, .pad_to = 128 };
		uint64_t before = stat(self, cases[i].reason);
		struct packet in, out;

		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out)) TH_LOG("case %zu", i);
		ASSERT_EQ(in.len, out.len);
		ASSERT_EQ(0, memcmp(in.bytes, out.bytes, in.len));
		ASSERT_EQ(before + 1, stat(self, cases[i].reason)) TH_LOG("case %zu", i);
	}
	ASSERT_EQ(0, stat(self, XKV_STAT_MGET_HIT));
}

TEST_F(xdp, mget_key_over_the_limit)
{
	char cmd[512], key[XKV_MAX_KEY + 2];
	const char *keys[] = { "k", key };
	struct request_spec rs = { .cmd = cmd, .pad_to = 400 };

	memset(key, 'a', sizeof(key) - 1);
	key[XKV_MAX_KEY + 1] = '\0';
	mget_cmd(cmd, sizeof(cmd), 2, keys);
	expect_pass(_metadata, self, &rs, XKV_MISS_KEY_TOO_LONG);
}

TEST_F(xdp, mget_too_many_keys_passes)
{
	static const char *keys[100];
	static char cmd[1024];
	struct request_spec rs = { .cmd = cmd, .pad_to = 1200 };

	for (int i = 0; i < 100; i++)
		keys[i] = "k";
	mget_cmd(cmd, sizeof(cmd), XKV_MGET_MAX_KEYS + 1, keys);
	expect_pass(_metadata, self, &rs, XKV_MISS_TOO_MANY_KEYS);
	mget_cmd(cmd, sizeof(cmd), 100, keys);
	{
		struct packet in, out;

		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out));
		ASSERT_EQ(2, stat(self, XKV_MISS_TOO_MANY_KEYS));
	}
}

TEST_F(xdp, mget_torn_slot_passes)
{
	static const char *const keys[] = { "odd", "k" };
	char cmd[256];
	struct request_spec rs = { .cmd = cmd, .pad_to = 128 };

	mget_cmd(cmd, sizeof(cmd), 2, keys);
	/* The second key's slot is being written. */
	self->slots[0].seq++;
	expect_pass(_metadata, self, &rs, XKV_MISS_TORN);
	self->slots[0].seq++;
	/* Its index names a slot that now holds another key. */
	fastpath_slot_write(&self->slots[0], "x", 1, 0, "other", 5, 0);
	{
		struct packet in, out;

		build(&in, &rs);
		ASSERT_EQ(XDP_PASS, run(self, &in, &out));
		ASSERT_EQ(2, stat(self, XKV_MISS_TORN));
	}
}

/*
 * Two slots rewritten in order, "a" then "b", with the same version each
 * round: at every moment a's version is b's or one more. An MGET a b that
 * copied a, then saw both rewritten, then copied b would send b newer than a;
 * the final check of every sequence must send only whole snapshots.
 */
struct pair_rewriter {
	struct xkv_slot *a, *b;
	volatile bool stop;
	uint64_t version;
};

#define PAIR_VALUE 512

static void pair_value(char *v, uint64_t version)
{
	for (int i = 0; i < PAIR_VALUE; i += 8)
		snprintf(v + i, 9, "%08llu", (unsigned long long)(version % 100000000));
}

static void *rewrite_pair(void *arg)
{
	struct pair_rewriter *r = arg;
	char v[PAIR_VALUE + 1];

	while (!r->stop) {
		uint64_t next = r->version + 1;

		pair_value(v, next);
		fastpath_slot_write(r->a, "a", 1, 0, v, PAIR_VALUE, 0);
		for (volatile int spin = 0; spin < 200; spin++)
			;
		fastpath_slot_write(r->b, "b", 1, 0, v, PAIR_VALUE, 0);
		__atomic_store_n(&r->version, next, __ATOMIC_RELEASE);
		for (volatile int spin = 0; spin < 200; spin++)
			;
	}
	return NULL;
}

/* The version a PAIR_VALUE-byte value holds, or -1 if it mixes two. */
static long long pair_version(const char *v)
{
	for (int i = 8; i < PAIR_VALUE; i++)
		if (v[i] != v[i % 8])
			return -1;
	return strtoll((char[9]){ v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0 }, NULL, 10);
}

TEST_F(xdp, mget_replies_are_snapshots)
{
	static const char *const keys[] = { "a", "b" };
	const size_t bulk = strlen("$512\r\n") + PAIR_VALUE + 2;
	struct pair_rewriter r = { .a = &self->slots[8], .b = &self->slots[9] };
	uint64_t hits = 0, passes = 0;
	char cmd[64], v[PAIR_VALUE + 1];
	struct request_spec rs = { .cmd = cmd, .pad_to = 1200 };
	struct packet in, out;
	pthread_t thread;

	pair_value(v, 0);
	cache(self, 8, "a", v, PAIR_VALUE, 0);
	cache(self, 9, "b", v, PAIR_VALUE, 0);
	mget_cmd(cmd, sizeof(cmd), 2, keys);
	build(&in, &rs);
	ASSERT_EQ(0, pthread_create(&thread, NULL, rewrite_pair, &r));
	for (int i = 0; i < 100000; i++) {
		const struct xkv_udp_hdr *h;
		const char *reply;
		long long va, vb;
		int action;

		if (i % 1000 == 0)
			self->skel->bss->xkv_heartbeat_ns = mono_ns();
		action = run(self, &in, &out);
		if (action == XDP_PASS) {
			passes++;
			continue;
		}
		ASSERT_EQ(XDP_TX, action);
		h = (const void *)(out.bytes + out.l4 + sizeof(struct udphdr));
		ASSERT_EQ(4 + 2 * bulk, ntohs(h->cmd_len));
		reply = (const char *)(h + 1);
		ASSERT_EQ(0, memcmp(reply, "*2\r\n$512\r\n", 10));
		va = pair_version(reply + 10);
		vb = pair_version(reply + 4 + bulk + 6);
		ASSERT_LE(0, va) TH_LOG("run %d: a is torn", i);
		ASSERT_LE(0, vb) TH_LOG("run %d: b is torn", i);
		/* a is written first: b is a's version or one less, never newer. */
		ASSERT_TRUE(va == vb || va == vb + 1)
		TH_LOG("run %d: a at %lld, b at %lld", i, va, vb);
		ASSERT_EQ(0, udp_check(&out, false));
		hits++;
	}
	r.stop = true;
	pthread_join(thread, NULL);
	TH_LOG("%llu hits, %llu passed as torn, %llu rewrites", (unsigned long long)hits,
	       (unsigned long long)passes, (unsigned long long)r.version);
	ASSERT_LT(0, hits);
	ASSERT_EQ(passes, stat(self, XKV_MISS_TORN));
}

/* ---- cluster mode ------------------------------------------------------------ */

/* Caches key (value "v") in slab slot idx as a key of cluster slot cs. */
static void cache_in_slot(FIXTURE_DATA(xdp) * self, uint32_t idx, const char *key, uint16_t cs)
{
	uint64_t k = fastpath_index_key(key, strlen(key), HASH_SEED);

	fastpath_slot_write(&self->slots[idx], key, strlen(key), cs, "v", 1, 0);
	bpf_map_update_elem(bpf_map__fd(self->skel->maps.kv_index), &k, &idx, BPF_ANY);
}

static void set_owned(FIXTURE_DATA(xdp) * self, uint16_t cs, bool owned)
{
	__u64 *w = &self->skel->bss->xkv_owned_slots[cs / 64];

	*w = owned ? *w | 1ull << (cs % 64) : *w & ~(1ull << (cs % 64));
}

TEST_F(xdp, cluster_answers_only_owned_slots)
{
	struct request_spec rs = { .cmd = GET(2) "ck\r\n", .pad_to = 64 };
	struct packet in, out;

	if (!variant->cluster)
		SKIP(return, "cluster mode only");
	/* The last slot and the last bit of a word, where an off-by-one shows. */
	cache_in_slot(self, 10, "ck", XKV_CLUSTER_SLOTS - 1);
	set_owned(self, XKV_CLUSTER_SLOTS - 1, false);
	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_OWNER);
	/* Its neighbours' bits say nothing about it. */
	set_owned(self, XKV_CLUSTER_SLOTS - 2, true);
	build(&in, &rs);
	ASSERT_EQ(XDP_PASS, run(self, &in, &out));
	ASSERT_EQ(2, stat(self, XKV_MISS_NOT_OWNER));
	set_owned(self, XKV_CLUSTER_SLOTS - 1, true);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_hit(_metadata, &in, &out, false, "v", 1);
	/* Slot 0, the first bit. */
	cache_in_slot(self, 11, "c0", 0);
	set_owned(self, 0, false);
	rs.cmd = GET(2) "c0\r\n";
	build(&in, &rs);
	ASSERT_EQ(XDP_PASS, run(self, &in, &out));
	ASSERT_EQ(3, stat(self, XKV_MISS_NOT_OWNER));
}

TEST_F(xdp, cluster_mget_keys_must_share_a_slot)
{
	static const char *const same[] = { "ca", "cb", "ca" };
	static const char *const mixed[] = { "ca", "cc" };
	static const char *const values[] = { "v", "v", "v" };
	char cmd[256];
	struct request_spec rs = { .cmd = cmd, .pad_to = 128 };
	struct packet in, out;

	if (!variant->cluster)
		SKIP(return, "cluster mode only");
	cache_in_slot(self, 10, "ca", 100);
	cache_in_slot(self, 11, "cb", 100);
	cache_in_slot(self, 12, "cc", 101);
	mget_cmd(cmd, sizeof(cmd), 3, same);
	build(&in, &rs);
	ASSERT_EQ(XDP_TX, run(self, &in, &out));
	expect_mget_hit(_metadata, &in, &out, false, 3, values);
	mget_cmd(cmd, sizeof(cmd), 2, mixed);
	expect_pass(_metadata, self, &rs, XKV_MISS_CROSSSLOT);
	/* A shared slot this node does not own: not ours to answer. */
	set_owned(self, 100, false);
	mget_cmd(cmd, sizeof(cmd), 3, same);
	expect_pass(_metadata, self, &rs, XKV_MISS_NOT_OWNER);
}

TEST_HARNESS_MAIN
