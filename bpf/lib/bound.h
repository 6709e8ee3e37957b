/* SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only) */
#ifndef XKV_BPF_BOUND_H
#define XKV_BPF_BOUND_H

/*
 * xkv_bound(x, lo, hi): x clamped to [lo, hi] (constants) by instructions the
 * verifier sees, on the register that the next use gets. Linux 6.1's verifier
 * (Debian 12's kernel) learns no lower bound from "x != 0" and forgets the
 * range of a byte swap, so it refuses a helper's size or a packet offset that
 * newer kernels accept; tests/kernel/run.sh checks the program on 6.1. Where
 * the code already limits x the clamp changes nothing, and clang cannot drop
 * it, as it would a C comparison it can prove redundant.
 */
#define xkv_bound(x, lo, hi)                                                                       \
	({                                                                                         \
		__u64 __xkv_v = (x);                                                               \
		asm volatile("if %0 >= %1 goto +1\n\t%0 = %1\n\t"                                  \
			     "if %0 <= %2 goto +1\n\t%0 = %2"                                      \
			     : "+r"(__xkv_v)                                                       \
			     : "i"(lo), "i"(hi));                                                  \
		__xkv_v;                                                                           \
	})

#endif
