// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCP experiment of docs/fastpath.md ("TCP in the kernel: why not (yet)"):
 * can a sockmap program answer a RESP GET inside the kernel, on a connection
 * an unmodified client opened? Not a fast path: a reproducer, driven by
 * repro.c, that answers every request with a reply of the request's length
 * plus reply_delta bytes.
 *
 * Requests are "*2\r\n$3\r\nGET\r\n$<n>\r\n<key>\r\n" with a one-digit n, so
 * a request is 19 + n bytes; a reply is "$<len>\r\n" then len 'v's and "\r\n",
 * with a two-digit len.
 *
 * - sk_skb: the server's socket is in sock_map at 0. get_parser (optional:
 *   the stream parser) cuts the stream into requests; get_verdict rewrites the
 *   skb's requests into replies (bpf_skb_change_tail + store) and redirects it
 *   to the same socket's egress, back to the client.
 * - sk_msg: the client's own socket is in sock_map at 1. get_msg, on the
 *   client's sendmsg, replaces its GETs by replies (pop/push) and redirects
 *   them to the client's ingress; anything else (cmd_pass) goes to the wire.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "lib/bound.h"

#define MAX_REQS 4
#define MAX_REPLY 106 /* "$99\r\n" + 99 + "\r\n" */
#define REQ_MIN 15    /* up to the key length's digit */

const volatile int reply_delta;

/* What the programs saw, for the driver. */
__u64 parser_runs, verdict_runs, rewritten, msg_runs, msg_answered, msg_passed;

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sock_map SEC(".maps");

struct buf {
	__u8 b[512];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct buf);
} scratch SEC(".maps");

static const char prefix[REQ_MIN - 1] = "*2\r\n$3\r\nGET\r\n$";
static const char ping[14] = "*1\r\n$4\r\nPING\r\n";

/* The length of the GET request in p (REQ_MIN bytes), or 0 if it is not one. */
static __always_inline __u32 req_len(const __u8 *p)
{
	for (int i = 0; i < REQ_MIN - 1; i++)
		if (p[i] != prefix[i])
			return 0;
	if (p[REQ_MIN - 1] < '1' || p[REQ_MIN - 1] > '9')
		return 0;
	return 19 + (p[REQ_MIN - 1] - '0');
}

/* Writes the reply to a request of req bytes at out; returns its length or 0. */
static __always_inline __u32 put_reply(volatile __u8 *out, __u32 req)
{
	int total = (int)req + reply_delta;
	__u32 vlen;

	if (total < 17 || total > MAX_REPLY)
		return 0;
	vlen = (__u32)total - 7;
	out[0] = '$';
	out[1] = '0' + vlen / 10;
	out[2] = '0' + vlen % 10;
	out[3] = '\r';
	out[4] = '\n';
	for (int i = 0; i < 99; i++) {
		if (i == vlen)
			break;
		out[5 + i] = 'v';
	}
	out[(5 + vlen) & 127] = '\r';
	out[(6 + vlen) & 127] = '\n';
	return total;
}

SEC("sk_skb/stream_parser")
int get_parser(struct __sk_buff *skb)
{
	__u8 p[REQ_MIN];
	__u32 n;

	__sync_fetch_and_add(&parser_runs, 1);
	if (skb->len < REQ_MIN || bpf_skb_load_bytes(skb, 0, p, sizeof(p)) < 0)
		return 0; /* more bytes, please */
	n = req_len(p);
	if (n)
		return (int)n;
	/* A PING is a message of its own, for the server. */
	for (int i = 0; i < (int)sizeof(ping); i++)
		if (p[i] != ping[i])
			return (int)skb->len;
	return sizeof(ping);
}

SEC("sk_skb/stream_verdict")
int get_verdict(struct __sk_buff *skb)
{
	__u32 zero = 0, off = 0, out = 0, len = skb->len;
	struct buf *buf = bpf_map_lookup_elem(&scratch, &zero);
	__u8 p[REQ_MIN];

	__sync_fetch_and_add(&verdict_runs, 1);
	if (!buf)
		return SK_DROP;
	/* Every request in the skb (a parsed message is exactly one). */
	for (int i = 0; i < MAX_REQS; i++) {
		__u32 n, r;

		if (off == len)
			break;
		if (bpf_skb_load_bytes(skb, off, p, sizeof(p)) < 0)
			return SK_PASS;
		n = req_len(p);
		if (!n || off + n > len || out > (MAX_REQS - 1) * MAX_REPLY)
			return SK_PASS;
		r = put_reply(buf->b + out, n);
		if (!r)
			return SK_PASS;
		off += n;
		out += r;
	}
	if (off != len || out == 0 || out > MAX_REQS * MAX_REPLY)
		return SK_PASS;
	if (bpf_skb_change_tail(skb, out, 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, buf->b, xkv_bound(out, 1, MAX_REQS * MAX_REPLY), 0) < 0)
		return SK_DROP;
	__sync_fetch_and_add(&rewritten, 1);
	return bpf_sk_redirect_map(skb, &sock_map, 0, 0);
}

SEC("sk_msg")
int get_msg(struct sk_msg_md *msg)
{
	__u32 len = msg->size, n, r, vlen;
	__u8 *data, *end;
	__u8 p[REQ_MIN];

	__sync_fetch_and_add(&msg_runs, 1);
	if (len < REQ_MIN || bpf_msg_pull_data(msg, 0, REQ_MIN, 0) < 0)
		goto pass;
	data = msg->data;
	end = msg->data_end;
	if (data + REQ_MIN > end)
		goto pass;
	__builtin_memcpy(p, data, REQ_MIN);
	n = req_len(p);
	if (!n) {
		/* A PING goes to the server alone; what follows is judged next. */
		for (int i = 0; i < (int)sizeof(ping); i++)
			if (p[i] != ping[i])
				goto pass;
		bpf_msg_apply_bytes(msg, sizeof(ping));
		goto pass;
	}
	if (n > len)
		goto pass;
	r = (__u32)((int)n + reply_delta);
	vlen = r - 7;
	if (r < 17 || r > MAX_REPLY)
		goto pass;
	if (r > n && bpf_msg_push_data(msg, n, r - n, 0) < 0)
		return SK_DROP;
	if (r < n && bpf_msg_pop_data(msg, r, n - r, 0) < 0)
		return SK_DROP;
	/* Only the first request (now its reply) is this verdict's; the rest
	 * is judged next. */
	bpf_msg_apply_bytes(msg, r);
	if (bpf_msg_pull_data(msg, 0, r, 0) < 0)
		return SK_DROP;
	data = msg->data;
	end = msg->data_end;
	for (int i = 0; i < MAX_REPLY; i++) {
		__u8 c = 'v';

		if (i >= r)
			break;
		if (data + i + 1 > end)
			return SK_DROP;
		if (i == 0)
			c = '$';
		else if (i == 1)
			c = '0' + vlen / 10;
		else if (i == 2)
			c = '0' + vlen % 10;
		else if (i == 3 || i == r - 2)
			c = '\r';
		else if (i == 4 || i == r - 1)
			c = '\n';
		data[i] = c;
	}
	__sync_fetch_and_add(&msg_answered, 1);
	return bpf_msg_redirect_map(msg, &sock_map, 1, BPF_F_INGRESS);
pass:
	__sync_fetch_and_add(&msg_passed, 1);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
