// SPDX-License-Identifier: GPL-2.0-only
/* A pass-through XDP program for the peer end of a veth pair: in native mode
 * a veth drops XDP_TX frames unless its peer runs an XDP program. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass_all(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
