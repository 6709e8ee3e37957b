// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/*
 * The ceiling for the fast path's benchmark: an XDP program that answers every
 * xkv UDP request on IPv4 with the same fixed reply, without parsing the
 * command or looking anything up. It does the same packet work as a real hit
 * (swap, shrink, write header and reply, both checksums), so the gap between
 * it and xdp_get_fastpath is the cost of parsing, lookup and the seqlock.
 * Benchmark use only: attach with `ip link set dev DEV xdpgeneric obj ...`.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xkv_abi.h"

#define ETH_P_IP 0x0800

/* "$5\r\nhello\r\n" padded to a multiple of 4 for bpf_csum_diff. */
static const char fixed_reply[12] = "$5\r\nhello\r\n";
#define REPLY_LEN 11

static __always_inline __u16 fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

SEC("xdp")
int xdp_fixed_reply(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct xkv_udp_hdr *h;
	__u32 udp_len = sizeof(*udp) + sizeof(*h) + REPLY_LEN, sum;
	struct {
		__be32 src, dst;
		__u8 zero, proto;
		__be16 len;
	} pseudo;
	__u8 mac[6];
	__be32 a;
	__u16 port;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > end || h->magic != bpf_htons(XKV_UDP_MAGIC) ||
	    (h->flags & XKV_F_REPLY) || bpf_ntohs(udp->len) < udp_len)
		return XDP_PASS;
	if (bpf_xdp_adjust_tail(ctx, (int)(sizeof(*eth) + sizeof(*ip) + udp_len) -
					     (int)bpf_xdp_get_buff_len(ctx)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > end)
		return XDP_ABORTED;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	ip->tot_len = bpf_htons(sizeof(*ip) + udp_len);
	ip->check = 0;
	ip->check = fold(bpf_csum_diff(NULL, 0, (void *)ip, sizeof(*ip), 0));
	port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->len = bpf_htons(udp_len);
	udp->check = 0;
	h->flags = XKV_F_REPLY | XKV_F_KERNEL;
	h->cmd_len = bpf_htons(REPLY_LEN);
	h->value_len = bpf_htonl(5);
	h->token = 0;
	if (bpf_xdp_store_bytes(ctx, sizeof(*eth) + sizeof(*ip) + sizeof(*udp) + sizeof(*h),
				(void *)fixed_reply, REPLY_LEN))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	ip = data + sizeof(struct ethhdr);
	udp = (void *)(ip + 1);
	if ((void *)udp + sizeof(*udp) + sizeof(struct xkv_udp_hdr) > end)
		return XDP_ABORTED;
	pseudo.src = ip->saddr;
	pseudo.dst = ip->daddr;
	pseudo.zero = 0;
	pseudo.proto = IPPROTO_UDP;
	pseudo.len = bpf_htons(udp_len);
	sum = bpf_csum_diff(NULL, 0, (void *)&pseudo, sizeof(pseudo), 0);
	sum = bpf_csum_diff(NULL, 0, (void *)udp, sizeof(*udp) + sizeof(struct xkv_udp_hdr), sum);
	sum = bpf_csum_diff(NULL, 0, (void *)fixed_reply, sizeof(fixed_reply), sum);
	udp->check = fold(sum) ?: 0xffff;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
