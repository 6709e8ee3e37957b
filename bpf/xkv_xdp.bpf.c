// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/*
 * xdp_get_fastpath: answers small GET hits over UDP from the daemon's cache,
 * inside the kernel, before the packet reaches any socket.
 *
 * A request is Ethernet / IPv4 (no options) or IPv6 (no extension headers) /
 * UDP to xkv_port / struct xkv_udp_hdr / exactly one RESP "GET key". On a hit
 * the packet is turned into the reply in place (addresses and ports swapped,
 * shrunk, the cached reply copied in, lengths and checksums fixed) and sent
 * back with XDP_TX. Anything else passes to the daemon unchanged (XDP_PASS),
 * counted by reason: the program fails open.
 *
 * Coherence: values live in kv_slots, written in place by the daemon under a
 * per-slot seqlock. The program copies a slot to per-CPU scratch memory and
 * checks the sequence before and after, and that the slot still holds the
 * requested key, before it touches the packet, so a torn or replaced value is
 * never sent. kv_index (key hash -> slot) may lag a slot's reuse, and two
 * keys may share a hash: the key check catches both.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/bound.h"
#include "xkv_abi.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IP_FRAGMENT_MASK 0x3fff /* MF flag and fragment offset */

/* "*2\r\n$3\r\nGET\r\n$" then the key length, "\r\n", the key, "\r\n". */
#define GET_PREFIX_LEN 14
#define GET_MIN_LEN 19 /* with an empty key: "...$0\r\n\r\n" */

/* Load-time knobs, set by the daemon through skel->rodata. */
const volatile __u16 xkv_port = 6379;
const volatile __u32 xkv_abi_version = XKV_ABI_VERSION;
const volatile __u64 xkv_hash_seed; /* of xkv_key_hash(), chosen by the daemon */

/* Written by the daemon through the skeleton's mapped .bss, no syscalls. */
__u64 xkv_heartbeat_ns; /* CLOCK_MONOTONIC of the daemon's last heartbeat */
__u32 xkv_token_required;
__u64 xkv_token;

/* xkv_key_hash(key) -> slot index; written by the daemon on admission and
 * eviction only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XKV_DEFAULT_SLOTS);
	__type(key, __u64);
	__type(value, __u32);
} kv_index SEC(".maps");

/* The value slab, mmap'd and written in place by the daemon (seqlocked). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XKV_DEFAULT_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xkv_slot);
} kv_slots SEC(".maps");

/* Per-CPU counters, one per enum xkv_stat; read by the daemon and bpftool. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XKV_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} kv_stats SEC(".maps");

/* Source networks allowed to be answered; written by the daemon at start. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 256);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xkv_allow_key);
	__type(value, __u8);
} kv_allow SEC(".maps");

/* Where a slot is copied and checked before the packet is touched. */
struct scratch {
	__u64 key[XKV_KEY_WORDS]; /* the requested key, zero-padded */
	__u32 key_len;
	__u32 reply_csum, value_len; /* copied from the slot with the reply */
	__u32 pad;
	__u8 reply[XKV_MAX_REPLY];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} kv_scratch SEC(".maps");

/* A packet damaged after it was already rewritten: drop, never pass. */
#define SERVE_ABORT 1000

static __always_inline void count(__u32 stat)
{
	__u64 *n = bpf_map_lookup_elem(&kv_stats, &stat);

	if (n)
		*n += 1;
}

/*
 * Checksums are summed inline rather than with bpf_csum_diff(): the headers
 * are a few constant-size runs of 32-bit words, and a helper call per run
 * cost more than the adds. Adding 32-bit words in memory order into 64 bits
 * and folding gives the ones' complement sum of the 16-bit words in memory
 * order, as the kernel's csum_partial() does, so the result is stored as is.
 */
static __always_inline __u64 sum_words(const void *p, int nwords, __u64 sum)
{
	const __u32 *w = p;

	/* nwords is a constant at every call site: unrolled. */
#pragma unroll
	for (int i = 0; i < nwords; i++)
		sum += w[i];
	return sum;
}

static __always_inline __u16 csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

static __always_inline bool is_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

/* Where the parts of a request are, as offsets from the packet start. */
struct get_request {
	__u32 l4;      /* UDP header */
	__u32 udp_len; /* from the UDP header */
	__u32 cmd;     /* first RESP byte */
	__u32 cmd_len;
	bool v6;
};

/* Parses the command at req->cmd as exactly one "GET key" into sc->key. */
static __noinline int parse_get(struct xdp_md *ctx, const struct get_request *req,
				struct scratch *sc)
{
	__u8 p[GET_PREFIX_LEN + 6] = {};
	__u32 digits, key_len, key_off;
	__u8 tail[2];

	if (req->cmd_len < GET_MIN_LEN)
		return -XKV_MISS_MALFORMED;
	if (bpf_xdp_load_bytes(ctx, req->cmd, p, sizeof(p) - 1) < 0)
		return -XKV_MISS_MALFORMED;
	if (p[0] != '*' || p[1] != '2' || p[2] != '\r' || p[3] != '\n' || p[4] != '$' ||
	    p[5] != '3' || p[6] != '\r' || p[7] != '\n')
		return -XKV_MISS_MALFORMED;
	/* The command name in any case. */
	if ((p[8] | 0x20) != 'g' || (p[9] | 0x20) != 'e' || (p[10] | 0x20) != 't')
		return -XKV_MISS_MALFORMED;
	if (p[11] != '\r' || p[12] != '\n' || p[13] != '$' || !is_digit(p[14]))
		return -XKV_MISS_MALFORMED;
	/* 1 to 3 digits: XKV_MAX_KEY has three. A leading zero is not canonical. */
	if (p[15] == '\r') {
		digits = 1;
		key_len = p[14] - '0';
	} else if (is_digit(p[15]) && p[16] == '\r' && p[14] != '0') {
		digits = 2;
		key_len = (p[14] - '0') * 10 + (p[15] - '0');
	} else if (is_digit(p[15]) && is_digit(p[16]) && p[17] == '\r' && p[14] != '0') {
		digits = 3;
		key_len = (p[14] - '0') * 100 + (p[15] - '0') * 10 + (p[16] - '0');
	} else if (is_digit(p[15]) && is_digit(p[16]) && is_digit(p[17])) {
		return -XKV_MISS_KEY_TOO_LONG;
	} else {
		return -XKV_MISS_MALFORMED;
	}
	if (p[GET_PREFIX_LEN + digits + 1] != '\n')
		return -XKV_MISS_MALFORMED;
	if (key_len > XKV_MAX_KEY)
		return -XKV_MISS_KEY_TOO_LONG;
	key_off = GET_PREFIX_LEN + digits + 2;
	/* Exactly one command: it must end right after the key's CRLF. */
	if (req->cmd_len != key_off + key_len + 2)
		return -XKV_MISS_MALFORMED;
	if (bpf_xdp_load_bytes(ctx, req->cmd + key_off + key_len, tail, 2) < 0 || tail[0] != '\r' ||
	    tail[1] != '\n')
		return -XKV_MISS_MALFORMED;

	__builtin_memset(sc->key, 0, sizeof(sc->key));
	sc->key_len = key_len;
	if (key_len > 0 && key_len <= XKV_MAX_KEY &&
	    bpf_xdp_load_bytes(ctx, req->cmd + key_off, sc->key,
			       xkv_bound(key_len, 1, XKV_MAX_KEY)) < 0)
		return -XKV_MISS_MALFORMED;
	return 0;
}

/* Does the slot hold exactly sc's key? Both are zero-padded, so comparing
 * the words in use, 8 bytes at a time, is enough. */
static __always_inline bool same_key(const struct xkv_slot *slot, const struct scratch *sc)
{
	const __u64 *a = (const __u64 *)slot->key;

	if (slot->key_len != sc->key_len)
		return false;
	/* Bounded by the key size: at most XKV_KEY_WORDS turns. */
	for (__u32 i = 0; i < XKV_KEY_WORDS && i * 8 < sc->key_len; i++)
		if (a[i] != sc->key[i])
			return false;
	return true;
}

/*
 * Copies the slot for sc's key into sc->reply under the seqlock. Returns the
 * reply length, or a negative miss reason.
 */
static __noinline int copy_slot(struct scratch *sc, __u32 room, __u64 now)
{
	__u64 hash = xkv_key_hash(sc->key, sc->key_len, xkv_hash_seed);
	struct xkv_slot *slot;
	__u32 *idx, seq, len;

	idx = bpf_map_lookup_elem(&kv_index, &hash);
	if (!idx)
		return -XKV_MISS_NOT_CACHED;
	slot = bpf_map_lookup_elem(&kv_slots, idx);
	if (!slot)
		return -XKV_MISS_NOT_CACHED;
	seq = *(volatile __u32 *)&slot->seq;
	if (seq & 1)
		return -XKV_MISS_TORN;
	asm volatile("" ::: "memory");
	if (!same_key(slot, sc))
		return -XKV_MISS_TORN;
	if (slot->expire_ns && now >= slot->expire_ns)
		return -XKV_MISS_EXPIRED;
	len = slot->reply_len;
	if (len < 1 || len > XKV_MAX_REPLY)
		return -XKV_MISS_TORN;
	if (len > room)
		return -XKV_MISS_NO_ROOM;
	sc->reply_csum = slot->reply_csum;
	sc->value_len = slot->value_len;
	if (bpf_probe_read_kernel(sc->reply, len, slot->reply) < 0)
		return -XKV_MISS_TORN;
	asm volatile("" ::: "memory");
	if (*(volatile __u32 *)&slot->seq != seq)
		return -XKV_MISS_TORN;
	/* For the daemon's CLOCK; written only when clear, to keep the line shared. */
	if (!slot->referenced)
		slot->referenced = 1;
	return (int)len;
}

/* Finds our request in the packet. */
static __always_inline int parse_headers(struct xdp_md *ctx, struct get_request *req,
					 struct xkv_allow_key *src)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct xkv_udp_hdr *h;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end)
		return -XKV_MISS_NOT_OURS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5 ||
		    (ip->frag_off & bpf_htons(IP_FRAGMENT_MASK)))
			return -XKV_MISS_NOT_OURS;
		src->prefixlen = 128;
		src->addr[10] = 0xff;
		src->addr[11] = 0xff;
		__builtin_memcpy(&src->addr[12], &ip->saddr, 4);
		req->v6 = false;
		req->l4 = sizeof(*eth) + sizeof(*ip);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return -XKV_MISS_NOT_OURS;
		src->prefixlen = 128;
		__builtin_memcpy(src->addr, &ip6->saddr, 16);
		req->v6 = true;
		req->l4 = sizeof(*eth) + sizeof(*ip6);
	} else {
		return -XKV_MISS_NOT_OURS;
	}
	udp = data + req->l4;
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(xkv_port))
		return -XKV_MISS_NOT_OURS;
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > end)
		return -XKV_MISS_MALFORMED;
	if (h->magic != bpf_htons(XKV_UDP_MAGIC) || h->version != XKV_UDP_VERSION ||
	    (h->flags & XKV_F_REPLY))
		return -XKV_MISS_NOT_OURS;
	req->udp_len = xkv_bound(bpf_ntohs(udp->len), 0, 0xffff);
	req->cmd = req->l4 + sizeof(*udp) + sizeof(*h);
	req->cmd_len = xkv_bound(bpf_ntohs(h->cmd_len), 0, 0xffff);
	if (req->udp_len < sizeof(*udp) + sizeof(*h) || data + req->l4 + req->udp_len > end ||
	    req->cmd_len > req->udp_len - sizeof(*udp) - sizeof(*h))
		return -XKV_MISS_MALFORMED;
	if (xkv_token_required && h->token != xkv_token)
		return -XKV_MISS_BAD_TOKEN;
	return 0;
}

/*
 * Turns the request into the reply: the packet shrinks to the reply's size,
 * addresses and ports are swapped, and the lengths and checksums are set.
 */
static __noinline int write_reply(struct xdp_md *ctx, const struct get_request *req,
				  struct scratch *sc, __u32 len)
{
	__u32 udp_len = sizeof(struct udphdr) + sizeof(struct xkv_udp_hdr) + len;
	void *data, *end;
	struct ethhdr *eth;
	struct udphdr *udp;
	struct xkv_udp_hdr *h;
	__u8 mac[6];
	__u64 sum;
	__u16 port;

	/* The frame may carry Ethernet padding beyond the IP packet: cut it too. */
	if (bpf_xdp_adjust_tail(ctx, (int)(req->l4 + udp_len) - (int)bpf_xdp_get_buff_len(ctx)) < 0)
		return -XKV_MISS_NO_ROOM;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return SERVE_ABORT;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);

	/* The pseudo-header's addresses: swapping them does not change their sum. */
	if (req->v6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct in6_addr a;

		if ((void *)(ip6 + 1) > end)
			return SERVE_ABORT;
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->payload_len = bpf_htons(udp_len);
		sum = sum_words(&ip6->saddr, 8, 0);
		udp = (void *)(ip6 + 1);
	} else {
		struct iphdr *ip = (void *)(eth + 1);
		__be32 a;

		if ((void *)(ip + 1) > end)
			return SERVE_ABORT;
		a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		ip->tot_len = bpf_htons(sizeof(*ip) + udp_len);
		ip->check = 0;
		ip->check = csum_fold(sum_words(ip, sizeof(*ip) / 4, 0));
		sum = sum_words(&ip->saddr, 2, 0);
		udp = (void *)(ip + 1);
	}
	/* The rest of the pseudo-header: protocol and length, in network order. */
	sum += bpf_htons(IPPROTO_UDP) + bpf_htons(udp_len);
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > end)
		return SERVE_ABORT;
	port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->len = bpf_htons(udp_len);
	udp->check = 0;
	h->flags = XKV_F_REPLY | XKV_F_KERNEL;
	h->cmd_len = bpf_htons(len);
	h->reserved = 0;
	h->value_len = bpf_htonl(sc->value_len);
	h->token = 0;
	/* Sum the headers now: the reply's own sum was computed by the daemon,
	 * so the value is never looped over, and the headers are not touched by
	 * the copy below. */
	sum = sum_words(udp, (sizeof(*udp) + sizeof(*h)) / 4, sum);
	sum += sc->reply_csum;
	udp->check = csum_fold(sum) ?: 0xffff;
	if (len > XKV_MAX_REPLY ||
	    bpf_xdp_store_bytes(ctx, req->l4 + sizeof(*udp) + sizeof(*h), sc->reply,
				xkv_bound(len, 1, XKV_MAX_REPLY)) < 0)
		return SERVE_ABORT;
	return 0;
}

static __always_inline int serve(struct xdp_md *ctx)
{
	struct xkv_allow_key src = {};
	struct get_request req = {};
	struct scratch *sc;
	__u32 zero = 0, room;
	__u64 now;
	int r;

	r = parse_headers(ctx, &req, &src);
	if (r < 0)
		return r;
	now = bpf_ktime_get_ns();
	if (now - xkv_heartbeat_ns > XKV_HEARTBEAT_MAX_AGE_NS)
		return -XKV_MISS_STALE_DAEMON;
	if (!bpf_map_lookup_elem(&kv_allow, &src))
		return -XKV_MISS_DENIED;
	sc = bpf_map_lookup_elem(&kv_scratch, &zero);
	if (!sc)
		return -XKV_MISS_MALFORMED;
	r = parse_get(ctx, &req, sc);
	if (r < 0)
		return r;
	/* The reply may use all of the request's UDP payload after the header. */
	room = req.udp_len - sizeof(struct udphdr) - sizeof(struct xkv_udp_hdr);
	r = copy_slot(sc, room, now);
	if (r < 0)
		return r;
	return write_reply(ctx, &req, sc, (__u32)r);
}

SEC("xdp")
int xdp_get_fastpath(struct xdp_md *ctx)
{
	int r = serve(ctx);

	if (r == SERVE_ABORT) {
		count(XKV_MISS_MALFORMED);
		return XDP_ABORTED;
	}
	if (r < 0) {
		count((__u32)-r);
		return XDP_PASS;
	}
	count(XKV_STAT_HIT);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
