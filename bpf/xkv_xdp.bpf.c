// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/*
 * xdp_get_fastpath: answers small GET hits over UDP from the daemon's cache,
 * inside the kernel, before the packet reaches any socket.
 *
 * A request is Ethernet / IPv4 (no options) or IPv6 (no extension headers) /
 * UDP to xkv_port / struct xkv_udp_hdr / exactly one RESP "GET key", or one
 * "MGET key..." of at most XKV_MGET_MAX_KEYS keys that all hit. On a hit the
 * packet is turned into the reply in place (addresses and ports swapped,
 * shrunk, the cached reply copied in, lengths and checksums fixed) and sent
 * back with XDP_TX. Anything else passes to the daemon unchanged (XDP_PASS),
 * counted by reason: the program fails open.
 *
 * Coherence: values live in kv_slots, written in place by the daemon under a
 * per-slot seqlock. The program copies a slot to per-CPU scratch memory and
 * checks the sequence before and after, and that the slot still holds the
 * requested key, before it touches the packet, so a torn or replaced value is
 * never sent. kv_index (key hash -> slot) may lag a slot's reuse, and two
 * keys may share a hash: the key check catches both. An MGET reads every
 * slot's sequence, copies them all, then checks every sequence again: all the
 * slots held their copied values together at the moment of the last first
 * read, so the reply is one snapshot, as the daemon's would be.
 *
 * Security: the kernel answers nothing the daemon would refuse. A frame is
 * answered only when it is unicast to the receiving interface's own MAC and
 * to an address the daemon listens on there (kv_local), from a unicast
 * source in kv_allow that is loopback only on a loopback device (and only
 * 127.0.0.1 or ::1 in protected mode), with the server's token when it
 * requires a password; in cluster mode, only for keys of a slot this node
 * owns, and an MGET only if its keys share a slot (else MOVED, ASK or
 * CROSSSLOT is the daemon's to give).
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

/* "*<keys + 1>\r\n$4\r\nMGET\r\n" with a one-digit count. */
#define MGET_PREFIX_LEN 14
/* One key's bulk string at its shortest: "$0\r\n\r\n". */
#define BULK_MIN_LEN 6
/* What the head parser loads: the prefix with an array count of up to
 * MGET_COUNT_DIGITS digits, enough to tell a too-long MGET from a stranger. */
#define MGET_COUNT_DIGITS 6
#define MGET_HEAD_LOAD (MGET_PREFIX_LEN + MGET_COUNT_DIGITS - 1)
_Static_assert(XKV_MGET_MAX_KEYS >= 1 && XKV_MGET_MAX_KEYS <= 8,
	       "the MGET parser and the reply's \"*n\\r\\n\" take a one-digit count");

/* Load-time knobs, set by the daemon through skel->rodata. */
const volatile __u16 xkv_port = 6379;
const volatile __u32 xkv_abi_version = XKV_ABI_VERSION;
const volatile __u64 xkv_hash_seed;   /* of xkv_key_hash(), chosen by the daemon */
const volatile __u8 xkv_cluster_mode; /* cluster-enabled: check xkv_owned_slots */

/* Written by the daemon through the skeleton's mapped .bss, no syscalls. */
__u64 xkv_heartbeat_ns; /* CLOCK_MONOTONIC of the daemon's last heartbeat */
/* The access rule, rewritten by the daemon before a CONFIG SET that changes
 * it is answered. The flags are one word, read once per packet; the token is
 * stored before XKV_ACCESS_TOKEN is set and cleared after, aligned loads and
 * stores of these sizes are single-copy atomic, and a token of 0 is refused
 * whatever is read: a packet meets the old rule, the new one, or a refusal. */
__u32 xkv_access; /* enum xkv_access_flag */
__u64 xkv_token;  /* with XKV_ACCESS_TOKEN, the token required (never 0) */
/* Cluster mode: the slots this node owns (xkv_abi.h). A bit is cleared
 * before the node stops owning its slot: a packet that reads it set was
 * answered while the node still owned the key, as a TCP GET would be. */
__u64 xkv_owned_slots[XKV_OWNED_WORDS];

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

/* Ingress ifindex -> the interface's own MAC, whether it is loopback, and
 * the unicast addresses the daemon listens on there; written by the daemon
 * on attach and detach and every second. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XKV_MAX_IFINDEX);
	__type(key, __u32);
	__type(value, struct xkv_local);
} kv_local SEC(".maps");

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
	__u32 fence;		     /* target of seq_rmb()'s atomic, this CPU's own */
	/* GET: one slot's reply. MGET: "*n\r\n", then each key's reply. */
	__u8 reply[XKV_MGET_MAX_REPLY];
	/* MGET: each key's slot and its sequence when it was copied. */
	__u32 mget_idx[XKV_MGET_MAX_KEYS];
	__u32 mget_seq[XKV_MGET_MAX_KEYS];
	__u32 mget_cluster_slot; /* cluster mode: the first key's hash slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} kv_scratch SEC(".maps");

/*
 * Makes clang forget what it knows of v, so that the bounds test after it is
 * made on the very register then used as an offset or a size. Otherwise clang
 * may test a zero-extended copy, fuse two tests into one range check, or drop
 * a test it has proven, and the verifier follows none of these. v is 64 bits
 * wide, so that no zero-extension comes between the test and the use.
 */
#define verifier_bound(v) asm volatile("" : "+r"(v))

/* A packet damaged after it was already rewritten: drop, never pass. */
#define SERVE_ABORT 1000
/* serve() answered an MGET (0: a GET). */
#define SERVE_MGET_HIT 1001

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

/* Who sent a request, to whom, with what. */
struct peer {
	struct xkv_allow_key src; /* kv_allow's key */
	__u32 dst4;		  /* be: IPv4 destination */
	__u64 dst6[2];		  /* IPv6 destination, in memory order */
	__u64 token;		  /* the header's, as 8 raw bytes */
};

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
 * The seqlock reader's read barrier (the kernel's smp_rmb()): loads before it
 * are ordered before loads after it, as seen by the daemon's stores.
 *
 * clang 14 has no load-acquire for BPF (BPF_LOAD_ACQ needs LLVM 21), and the
 * BPF ISA has no fence instruction. On x86 none is needed: TSO never
 * reorders a load with a later load, so, as in the kernel, smp_rmb() is only
 * a compiler barrier there. Elsewhere (arm64) we use the one fully ordered
 * operation BPF has: an atomic that returns a value. The BPF memory model
 * (LKMM's, as the JITs implement it: x86 "lock xadd", arm64 LDADDAL or an
 * LL/SC loop and DMB ISH, powerpc sync on both sides since 6.10) makes every
 * value-returning atomic a full barrier. It is aimed at this CPU's own
 * scratch word, so no cache line is shared by it.
 */
#if defined(__TARGET_ARCH_x86)
static __always_inline void seq_rmb(struct scratch *sc)
{
	asm volatile("" ::: "memory");
}
#else
static __always_inline void seq_rmb(struct scratch *sc)
{
	__u32 old = __sync_fetch_and_add(&sc->fence, 0);

	/* Using the old value keeps it the fetching, ordered form: an atomic
	 * add whose result is unused becomes BPF_ADD without BPF_FETCH, which
	 * the arm64 JIT emits as a relaxed STADD. */
	asm volatile("" ::"r"(old) : "memory");
}
#endif

/*
 * Finds the slot holding sc's key, live at `now`, and reads its sequence
 * (even: no write in progress) into *seq and its index into *idx. Returns the
 * slot, or NULL with the miss reason in *why. What it read is only good if
 * *seq is unchanged afterwards.
 */
static __always_inline struct xkv_slot *find_slot(struct scratch *sc, __u64 now, __u32 *idx,
						  __u32 *seq, int *why)
{
	__u64 hash = xkv_key_hash(sc->key, sc->key_len, xkv_hash_seed);
	struct xkv_slot *slot;
	__u32 *i;

	i = bpf_map_lookup_elem(&kv_index, &hash);
	if (!i) {
		*why = -XKV_MISS_NOT_CACHED;
		return NULL;
	}
	*idx = *i;
	slot = bpf_map_lookup_elem(&kv_slots, i);
	if (!slot) {
		*why = -XKV_MISS_NOT_CACHED;
		return NULL;
	}
	*seq = *(volatile __u32 *)&slot->seq;
	*why = -XKV_MISS_TORN;
	if (*seq & 1)
		return NULL;
	seq_rmb(sc);
	if (!same_key(slot, sc))
		return NULL;
	if (slot->expire_ns && now >= slot->expire_ns) {
		*why = -XKV_MISS_EXPIRED;
		return NULL;
	}
	if (xkv_cluster_mode) {
		__u32 cs = slot->cluster_slot & (XKV_CLUSTER_SLOTS - 1);
		__u64 word = *(volatile __u64 *)&xkv_owned_slots[cs / 64];

		if (!(word & (1ULL << (cs % 64)))) {
			*why = -XKV_MISS_NOT_OWNER;
			return NULL;
		}
	}
	return slot;
}

/*
 * Copies the slot for sc's key into sc->reply under the seqlock. Returns the
 * reply length, or a negative miss reason.
 *
 * The reader's half of the seqlock (the daemon's is fastpath_slot_write()):
 * read seq; smp_rmb(); read the slot; smp_rmb(); read seq again. If both
 * reads saw the same even value, no write overlapped the copy: the daemon
 * makes seq odd and then (release fence) writes, and writes and then
 * (store-release) makes it even, so a copy that saw any byte of a write saw
 * seq change. volatile keeps each seq read a single load the compiler cannot
 * move or repeat (READ_ONCE()).
 */
static __noinline int copy_slot(struct scratch *sc, __u32 room, __u64 now)
{
	struct xkv_slot *slot;
	__u32 idx, seq, len;
	int why;

	slot = find_slot(sc, now, &idx, &seq, &why);
	if (!slot)
		return why;
	len = slot->reply_len;
	if (len < 1 || len > XKV_MAX_REPLY)
		return -XKV_MISS_TORN;
	if (len > room)
		return -XKV_MISS_NO_ROOM;
	sc->reply_csum = slot->reply_csum;
	sc->value_len = slot->value_len;
	if (bpf_probe_read_kernel(sc->reply, len, slot->reply) < 0)
		return -XKV_MISS_TORN;
	seq_rmb(sc);
	if (*(volatile __u32 *)&slot->seq != seq)
		return -XKV_MISS_TORN;
	/* For the daemon's LRU/LFU and CLOCK. Saturating, so a hot slot's line is
	 * written a bounded number of times between two collections and stays
	 * shared between CPUs otherwise. */
	if (slot->hits < XKV_SLOT_HITS_MAX)
		__sync_fetch_and_add(&slot->hits, 1);
	return (int)len;
}

/*
 * MGET. Its per-key work runs in global subprograms, which the verifier
 * checks once each rather than once per key of the loop in serve_mget().
 * Every one checks its pointers: a global subprogram may be called with NULL.
 */

/*
 * Parses the head of the command at cmd: "*<keys + 1>\r\n$4\r\nMGET\r\n" in
 * any case, with 1..XKV_MGET_MAX_KEYS keys. Returns the number of keys, or a
 * miss reason (XKV_MISS_TOO_MANY_KEYS for an MGET of more).
 */
static __always_inline bool mget_name_at(const __u8 *q)
{
	return q[0] == '\r' && q[1] == '\n' && q[2] == '$' && q[3] == '4' && q[4] == '\r' &&
	       q[5] == '\n' && (q[6] | 0x20) == 'm' && (q[7] | 0x20) == 'g' &&
	       (q[8] | 0x20) == 'e' && (q[9] | 0x20) == 't' && q[10] == '\r' && q[11] == '\n';
}

__noinline int mget_parse_head(struct xdp_md *ctx, __u32 cmd, __u32 cmd_len)
{
	__u8 p[MGET_HEAD_LOAD] = {};

	if (!ctx || cmd_len < MGET_PREFIX_LEN + BULK_MIN_LEN)
		return -XKV_MISS_MALFORMED;
	/* The shortest MGET is longer than this load, which cannot fail on one. */
	if (bpf_xdp_load_bytes(ctx, cmd, p, sizeof(p)) < 0)
		return -XKV_MISS_MALFORMED;
	if (p[0] != '*' || !is_digit(p[1]) || p[1] == '0')
		return -XKV_MISS_MALFORMED;
		/* The count's digits p[1..d], then the name: unrolled, so that every
	 * offset is a constant; bounded by what was loaded. */
#pragma unroll
	for (__u32 d = 1; d <= MGET_COUNT_DIGITS; d++) {
		if (is_digit(p[1 + d]))
			continue;
		if (!mget_name_at(p + 1 + d))
			return -XKV_MISS_MALFORMED;
		if (d > 1 || p[1] - '0' - 1 > XKV_MGET_MAX_KEYS)
			return -XKV_MISS_TOO_MANY_KEYS;
		/* "*1": MGET without a key, which only the daemon answers (an error). */
		if (p[1] == '1')
			return -XKV_MISS_MALFORMED;
		return p[1] - '0' - 1;
	}
	return -XKV_MISS_MALFORMED;
}

/*
 * Parses the bulk string at pos (no further than end; both offsets from the
 * packet's start) as a key, into sc->key and sc->key_len. Returns the offset
 * just past it, or a miss reason.
 */
__noinline int mget_parse_key(struct xdp_md *ctx, struct scratch *sc, __u32 pos, __u32 end)
{
	__u8 p[BULK_MIN_LEN] = {}, tail[2];
	__u32 digits, key_len, key_off;
	__u64 n;

	if (!ctx || !sc || pos > end || end - pos < BULK_MIN_LEN)
		return -XKV_MISS_MALFORMED;
	if (bpf_xdp_load_bytes(ctx, pos, p, sizeof(p)) < 0)
		return -XKV_MISS_MALFORMED;
	if (p[0] != '$' || !is_digit(p[1]))
		return -XKV_MISS_MALFORMED;
	/* As in parse_get(): 1 to 3 digits, no leading zero. The offsets are
	 * constants: clang would address p[digits + 2] in a way the verifier
	 * refuses (an OR on the stack pointer). */
	if (p[2] == '\r' && p[3] == '\n') {
		digits = 1;
		key_len = p[1] - '0';
	} else if (is_digit(p[2]) && p[3] == '\r' && p[4] == '\n' && p[1] != '0') {
		digits = 2;
		key_len = (p[1] - '0') * 10 + (p[2] - '0');
	} else if (is_digit(p[2]) && is_digit(p[3]) && p[4] == '\r' && p[5] == '\n' &&
		   p[1] != '0') {
		digits = 3;
		key_len = (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
	} else if (is_digit(p[2]) && is_digit(p[3]) && is_digit(p[4])) {
		return -XKV_MISS_KEY_TOO_LONG;
	} else {
		return -XKV_MISS_MALFORMED;
	}
	if (key_len > XKV_MAX_KEY)
		return -XKV_MISS_KEY_TOO_LONG;
	key_off = pos + digits + 3;
	if (key_off + key_len + 2 > end)
		return -XKV_MISS_MALFORMED;
	if (bpf_xdp_load_bytes(ctx, key_off + key_len, tail, 2) < 0 || tail[0] != '\r' ||
	    tail[1] != '\n')
		return -XKV_MISS_MALFORMED;
	__builtin_memset(sc->key, 0, sizeof(sc->key));
	sc->key_len = key_len;
	/* Tested again for the verifier, which cannot follow clang's proof. */
	n = key_len;
	verifier_bound(n);
	if (n > XKV_MAX_KEY)
		return -XKV_MISS_KEY_TOO_LONG;
	if (n > 0 && bpf_xdp_load_bytes(ctx, key_off, sc->key, xkv_bound(n, 1, XKV_MAX_KEY)) < 0)
		return -XKV_MISS_MALFORMED;
	return (int)(key_off + key_len + 2);
}

/* The ones' complement sum of a run of 16-bit words, folded to 16 bits. */
static __always_inline __u32 csum_fold16(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u32)s;
}

/*
 * Copies the slot of sc's key, the key_nr-th of the MGET, to sc->reply + off
 * and adds its checksum to sc->reply_csum; its index and sequence go to
 * sc->mget_idx/mget_seq for serve_mget()'s final check, which alone makes the
 * copy good. The whole reply must fit in room bytes. Returns the slot reply's
 * length, or a miss reason.
 */
__noinline int mget_copy_slot(struct scratch *sc, __u64 key_nr, __u64 off, __u64 room, __u64 now)
{
	struct xkv_slot *slot;
	__u32 idx, seq, len, sum;
	int why;

	verifier_bound(key_nr);
	if (!sc || key_nr >= XKV_MGET_MAX_KEYS)
		return -XKV_MISS_MALFORMED;
	/* Eight replies and the head always fit: this bound is for the verifier. */
	verifier_bound(off);
	if (off > XKV_MGET_MAX_REPLY - XKV_MAX_REPLY)
		return -XKV_MISS_NO_ROOM;
	slot = find_slot(sc, now, &idx, &seq, &why);
	if (!slot)
		return why;
	/* As Redis Cluster: the keys of one MGET must share a slot. */
	if (xkv_cluster_mode) {
		if (key_nr == 0)
			sc->mget_cluster_slot = slot->cluster_slot;
		else if (sc->mget_cluster_slot != slot->cluster_slot)
			return -XKV_MISS_CROSSSLOT;
	}
	len = slot->reply_len;
	if (len < 1 || len > XKV_MAX_REPLY)
		return -XKV_MISS_TORN;
	if (off + len > room)
		return -XKV_MISS_NO_ROOM;
	sum = csum_fold16(slot->reply_csum);
	if (bpf_probe_read_kernel(sc->reply + xkv_bound(off, 0, XKV_MGET_MAX_REPLY - XKV_MAX_REPLY),
				  xkv_bound(len, 1, XKV_MAX_REPLY), slot->reply) < 0)
		return -XKV_MISS_TORN;
	/* The slot's sum pairs its bytes from an even offset; from an odd one
	 * every pair is swapped, and so is the ones' complement sum (RFC 1071). */
	if (off & 1)
		sum = ((sum & 0xff) << 8) | (sum >> 8);
	sc->reply_csum += sum;
	sc->mget_idx[key_nr] = idx;
	sc->mget_seq[key_nr] = seq;
	return (int)len;
}

/* With a password required, only the server's token proves it; 0, the
 * unset default, never does. */
static __always_inline bool token_ok(__u32 access, __u64 token)
{
	if (!(access & XKV_ACCESS_TOKEN))
		return true;
	return token && token == xkv_token;
}

/* Finds our request in the packet. */
static __always_inline int parse_headers(struct xdp_md *ctx, struct get_request *req,
					 struct peer *p)
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
		p->src.prefixlen = 128;
		p->src.addr[10] = 0xff;
		p->src.addr[11] = 0xff;
		__builtin_memcpy(&p->src.addr[12], &ip->saddr, 4);
		p->dst4 = ip->daddr;
		req->v6 = false;
		req->l4 = sizeof(*eth) + sizeof(*ip);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return -XKV_MISS_NOT_OURS;
		p->src.prefixlen = 128;
		__builtin_memcpy(p->src.addr, &ip6->saddr, 16);
		__builtin_memcpy(p->dst6, &ip6->daddr, 16);
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
	p->token = h->token;
	return 0;
}

/*
 * Is the frame for this interface, and for the daemon? Its destination IP
 * must be one of the addresses kv_local lists for the ingress interface,
 * which are only unicast addresses the daemon listens on, and its
 * destination MAC must be the interface's own: that refuses broadcast and
 * multicast frames, and frames meant for another host, and it makes the
 * reply's source MAC (the two are swapped) the interface's own. A group
 * source MAC would make the reply a broadcast. Returns the interface's
 * entry, or NULL.
 */
static __always_inline const struct xkv_local *check_destination(struct xdp_md *ctx,
								 const struct peer *p, bool v6)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 ifindex = ctx->ingress_ifindex;
	const struct xkv_local *l;
	struct ethhdr *eth = data;
	__u32 n;

	l = bpf_map_lookup_elem(&kv_local, &ifindex);
	if (!l || (void *)(eth + 1) > end || (eth->h_source[0] & 1))
		return NULL;
	if (*(__u32 *)eth->h_dest != *(const __u32 *)l->mac ||
	    *(__u16 *)&eth->h_dest[4] != *(const __u16 *)&l->mac[4])
		return NULL;
	/* Bounded by XKV_LOCAL_ADDRS; usually one or two turns. */
	if (!v6) {
		n = l->n4;
		for (__u32 i = 0; i < XKV_LOCAL_ADDRS && i < n; i++)
			if (l->addr4[i] == p->dst4)
				return l;
	} else {
		n = l->n6;
		for (__u32 i = 0; i < XKV_LOCAL_ADDRS && i < n; i++)
			if (l->addr6[i][0] == p->dst6[0] && l->addr6[i][1] == p->dst6[1])
				return l;
	}
	return NULL;
}

/*
 * Is the source one the daemon would answer on this interface? Only unicast
 * senders (a reply goes back to the source); loopback ones (127.0.0.0/8,
 * ::1) only on a loopback device, where the kernel itself put them; no
 * IPv4-mapped source in IPv6 at all, which the stack drops too (RFC 4291
 * 2.5.5.2) and which would otherwise match kv_allow's IPv4 entries; and in
 * protected mode only 127.0.0.1 and ::1, as the daemon's TCP and UDP.
 */
static __always_inline bool check_source(const struct peer *p, bool v6, const struct xkv_local *l,
					 __u32 access)
{
	const __u8 *a = p->src.addr;
	bool loopback, exact;
	__u32 w[4];

	__builtin_memcpy(w, a, sizeof(w));
	if (!v6) {
		/* 0.0.0.0/8, and 224.0.0.0 up: multicast, reserved, broadcast. */
		if (a[12] == 0 || a[12] >= 224)
			return false;
		loopback = a[12] == 127;
		exact = w[3] == bpf_htonl(0x7f000001);
	} else {
		if (a[0] == 0xff || (!w[0] && !w[1] && w[2] == bpf_htonl(0xffff)))
			return false;
		if (!w[0] && !w[1] && !w[2] && (w[3] == 0 || w[3] == bpf_htonl(1))) {
			if (!w[3])
				return false; /* :: */
			loopback = exact = true;
		} else {
			loopback = exact = false;
		}
	}
	if (loopback && !l->loopback)
		return false;
	return !(access & XKV_ACCESS_LOOPBACK_ONLY) || exact;
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
	if (len > sizeof(sc->reply) ||
	    bpf_xdp_store_bytes(ctx, req->l4 + sizeof(*udp) + sizeof(*h), sc->reply,
				xkv_bound(len, 1, sizeof(sc->reply))) < 0)
		return SERVE_ABORT;
	return 0;
}

/*
 * Serves the command as an MGET whose every key hits, copying the reply to
 * sc->reply: its length, or a miss reason. The reply is one snapshot: every
 * slot's sequence is read before any is checked again.
 */
static __noinline int serve_mget(struct xdp_md *ctx, const struct get_request *req,
				 struct scratch *sc, __u64 now)
{
	__u32 room = req->udp_len - sizeof(struct udphdr) - sizeof(struct xkv_udp_hdr);
	__u32 pos = req->cmd + MGET_PREFIX_LEN, end = req->cmd + req->cmd_len, off = 4;
	int nkeys, r;

	nkeys = mget_parse_head(ctx, req->cmd, req->cmd_len);
	if (nkeys < 0)
		return nkeys;
	if (room < off)
		return -XKV_MISS_NO_ROOM;
	sc->reply[0] = '*';
	sc->reply[1] = '0' + nkeys;
	sc->reply[2] = '\r';
	sc->reply[3] = '\n';
	sc->reply_csum = *(__u16 *)&sc->reply[0] + *(__u16 *)&sc->reply[2];
	sc->value_len = 0;
	/* Bounded by XKV_MGET_MAX_KEYS; each turn calls the global subprograms. */
	for (__u32 i = 0; i < XKV_MGET_MAX_KEYS; i++) {
		if (i >= (__u32)nkeys)
			break;
		r = mget_parse_key(ctx, sc, pos, end);
		if (r < 0)
			return r;
		pos = (__u32)r;
		r = mget_copy_slot(sc, i, off, room, now);
		if (r < 0)
			return r;
		off += (__u32)r;
	}
	/* Exactly one command: it must end right after the last key. */
	if (pos != end)
		return -XKV_MISS_MALFORMED;
	/* Every copy is ordered before every second read of a sequence. */
	seq_rmb(sc);
	for (__u32 i = 0; i < XKV_MGET_MAX_KEYS; i++) {
		struct xkv_slot *slot;

		if (i >= (__u32)nkeys)
			break;
		slot = bpf_map_lookup_elem(&kv_slots, &sc->mget_idx[i]);
		if (!slot || *(volatile __u32 *)&slot->seq != sc->mget_seq[i])
			return -XKV_MISS_TORN;
	}
	/* Each key's hit, for the daemon's LRU/LFU and CLOCK, as in copy_slot(). */
	for (__u32 i = 0; i < XKV_MGET_MAX_KEYS; i++) {
		struct xkv_slot *slot;

		if (i >= (__u32)nkeys)
			break;
		slot = bpf_map_lookup_elem(&kv_slots, &sc->mget_idx[i]);
		if (slot && slot->hits < XKV_SLOT_HITS_MAX)
			__sync_fetch_and_add(&slot->hits, 1);
	}
	return (int)off;
}

static __always_inline int serve(struct xdp_md *ctx)
{
	const struct xkv_local *local;
	struct get_request req = {};
	struct peer peer = {};
	struct scratch *sc;
	__u32 zero = 0, room, access;
	__u64 now;
	int r;

	r = parse_headers(ctx, &req, &peer);
	if (r < 0)
		return r;
	access = *(volatile __u32 *)&xkv_access;
	if (!token_ok(access, peer.token))
		return -XKV_MISS_BAD_TOKEN;
	/* The default user's ACL restricts something: the daemon checks it. */
	if (access & XKV_ACCESS_DAEMON)
		return -XKV_MISS_ACL;
	now = bpf_ktime_get_ns();
	if (now - xkv_heartbeat_ns > XKV_HEARTBEAT_MAX_AGE_NS)
		return -XKV_MISS_STALE_DAEMON;
	local = check_destination(ctx, &peer, req.v6);
	if (!local)
		return -XKV_MISS_NOT_LOCAL;
	if (!check_source(&peer, req.v6, local, access) ||
	    !bpf_map_lookup_elem(&kv_allow, &peer.src))
		return -XKV_MISS_DENIED;
	sc = bpf_map_lookup_elem(&kv_scratch, &zero);
	if (!sc)
		return -XKV_MISS_MALFORMED;
	r = parse_get(ctx, &req, sc);
	if (r == -XKV_MISS_MALFORMED) {
		/* Not a GET: maybe an MGET. */
		__u64 len;

		r = serve_mget(ctx, &req, sc, now);
		if (r < 0)
			return r;
		/* "*n\r\n" and at most every key's reply, said again for the
		 * verifier, in two tests with two reasons that clang cannot
		 * fuse into one range check. */
		len = (__u32)r;
		verifier_bound(len);
		if (len < 4)
			return -XKV_MISS_MALFORMED;
		if (len > XKV_MGET_MAX_REPLY)
			return -XKV_MISS_NO_ROOM;
		return write_reply(ctx, &req, sc, len) ?: SERVE_MGET_HIT;
	}
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
	count(r == SERVE_MGET_HIT ? XKV_STAT_MGET_HIT : XKV_STAT_HIT);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
