/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xkv_abi.h: the one definition of everything the kernel fast path and the
 * daemon share: the UDP protocol header, the cache's map layouts, limits,
 * statistics counters and miss reasons.
 *
 * Contract: no includes; fixed-width types only, explicit padding, every size
 * asserted. It compiles after vmlinux.h (BPF) and after <linux/types.h> (user
 * space). Fields marked "be" are big-endian (network order); all others are in
 * host order. Bump XKV_ABI_VERSION on any change: the loader checks that the
 * object it loads was built against the same version.
 */
#ifndef XKV_ABI_H
#define XKV_ABI_H

#define XKV_ABI_VERSION 8

/* ---- UDP protocol (docs/udp-protocol.md) ------------------------------------ */

#define XKV_UDP_MAGIC 0x584b /* "XK" */
#define XKV_UDP_VERSION 1

enum xkv_udp_flag {
	XKV_F_REPLY = 1 << 0,	  /* set on every reply */
	XKV_F_TRUNCATED = 1 << 1, /* the value did not fit: value_len tells its size */
	XKV_F_KERNEL = 1 << 2,	  /* answered by the XDP program, not the daemon */
};

/*
 * Every datagram starts with this header. A request is followed by cmd_len
 * bytes of one RESP command, then padding up to the largest reply the client
 * accepts: a reply is never larger than its request datagram. A reply carries
 * the request's id and cmd_len bytes of one RESP reply.
 */
struct xkv_udp_hdr {
	__u16 magic;	  /* be: XKV_UDP_MAGIC */
	__u8 version;	  /* XKV_UDP_VERSION */
	__u8 flags;	  /* enum xkv_udp_flag */
	__u32 request_id; /* chosen by the client, echoed */
	__u16 cmd_len;	  /* be: bytes of RESP after the header */
	__u16 reserved;	  /* zero */
	__u32 value_len;  /* be: with XKV_F_TRUNCATED, the full value's length */
	__u64 token;	  /* with requirepass: the server's token (see below), else 0 */
};
_Static_assert(sizeof(struct xkv_udp_hdr) == 24, "xkv_udp_hdr is 24 bytes");

/*
 * The token a server with requirepass wants in xkv_udp_hdr.token: its
 * fastpath-token when that is set (non-zero; a __u64 in the server's host
 * order), else derived from the password: the first 8 bytes of
 * SHA-256(XKV_TOKEN_CONTEXT password), sent as those raw bytes. 0 is never
 * accepted when a password is required.
 */
#define XKV_TOKEN_CONTEXT "xkv-fastpath-token:"

/* The program's xkv_access word: the rule the daemon's UDP side follows too.
 * One word, read once per packet, so a packet never meets half of a rule. */
enum xkv_access_flag {
	XKV_ACCESS_TOKEN = 1 << 0,	   /* requirepass: only xkv_token is answered */
	XKV_ACCESS_LOOPBACK_ONLY = 1 << 1, /* protected mode: 127.0.0.1 and ::1 only */
	XKV_ACCESS_DAEMON = 1 << 2,	   /* the default user's ACL restricts it: the
					    * daemon answers every request */
};

/* ---- Cache layout ------------------------------------------------------------ */

#define XKV_MAX_KEY 128	   /* longest key the kernel serves */
#define XKV_MAX_VALUE 1024 /* longest value the kernel serves */
/* "$1024\r\n" + value + "\r\n", rounded up to keep struct xkv_slot 8-aligned */
#define XKV_MAX_REPLY 1048
#define XKV_DEFAULT_SLOTS 65536

/*
 * The most keys of one MGET the kernel answers (the daemon answers any
 * number). Eight keeps both counts one digit, "*9" in the request and "*8" in
 * the reply, so the request's head and the reply's "*n\r\n" have fixed
 * shapes; it bounds the program's per-key loop (the verifier walks it once a
 * key); and the per-CPU copy of the reply stays near 8 KiB.
 */
#define XKV_MGET_MAX_KEYS 8
/* "*8\r\n" and one cached reply per key */
#define XKV_MGET_MAX_REPLY (4 + XKV_MGET_MAX_KEYS * XKV_MAX_REPLY)

/*
 * kv_index is keyed by a 64-bit hash of the key, not by the key itself: the
 * kernel then hashes and compares 8 bytes per lookup instead of a 132-byte
 * zero-padded key, and the key bytes it must check anyway are in the slot.
 * The words hashed are the key zero-padded to a multiple of 8 bytes, read in
 * host order, with the key's length mixed in; the seed is chosen at random by
 * the daemon at load (the program's rodata xkv_hash_seed), so which keys
 * collide cannot be known from outside. A collision costs only a miss: two
 * keys with one hash share one index entry, the daemon admits the first
 * (BPF_NOEXIST) and the other stays daemon-served.
 */
#define XKV_KEY_WORDS (XKV_MAX_KEY / 8)

static inline __u64 xkv_key_hash(const __u64 *words, __u32 len, __u64 seed)
{
	__u64 h = seed ^ ((__u64)len * 0x9e3779b97f4a7c15ULL);

	/* Bounded by the key size: at most XKV_KEY_WORDS turns, one per word in use. */
	for (__u32 i = 0; i < XKV_KEY_WORDS && i * 8 < len; i++) {
		h ^= words[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 32);
}

/*
 * One slot of the kv_slots array (BPF_F_MMAPABLE): written in place by the
 * daemon under the seqlock `seq` (odd while a write is in progress), read by
 * the program, which checks seq before and after copying and that the slot
 * still holds the requested key.
 */
struct xkv_slot {
	__u32 seq;
	__u16 key_len;	  /* 0: empty */
	__u16 reply_len;  /* bytes of reply[] in use */
	__u64 expire_ns;  /* CLOCK_MONOTONIC deadline, 0 for none */
	__u32 reply_csum; /* ones' complement sum of reply[] as 16-bit words in memory order */
	__u32 value_len;
	__u32 hits; /* kernel hits since the daemon last collected them (XKV_SLOT_HITS_MAX) */
	__u16 cluster_slot; /* the key's Redis Cluster hash slot (cluster mode's bitmap) */
	__u16 reserved;
	__u8 key[XKV_MAX_KEY];
	__u8 reply[XKV_MAX_REPLY]; /* the preformatted RESP reply: "$<n>\r\n<value>\r\n" */
};
_Static_assert(sizeof(struct xkv_slot) == 1208, "xkv_slot is 1208 bytes");

/*
 * The program counts its hits on a slot in `hits` up to this, and the daemon
 * takes the count (exchanging it with 0) to touch the key's LRU clock and LFU
 * counter as that many accesses would, and for its CLOCK. Bounded so a hot
 * slot's line is written at most this many times between two collections:
 * LRU needs one hit, and the LFU counter is logarithmic.
 */
#define XKV_SLOT_HITS_MAX 255

/* ---- Statistics (the kv_stats per-CPU array, one counter per index) ------------ */

/*
 * Every packet the program sees ends in exactly one of these. The miss
 * reasons are the negative returns of the program's helpers (-XKV_MISS_*).
 */
enum xkv_stat {
	XKV_STAT_HIT = 0,
	XKV_MISS_NOT_OURS,	/* not UDP to our port, or not our magic */
	XKV_MISS_MALFORMED,	/* our port, but not exactly one well-formed GET or MGET */
	XKV_MISS_KEY_TOO_LONG,	/* longer than XKV_MAX_KEY */
	XKV_MISS_NOT_CACHED,	/* its hash is not in kv_index (for MGET: any key's) */
	XKV_MISS_EXPIRED,	/* cached, past its deadline */
	XKV_MISS_TORN,		/* the slot changed during the copy, or holds another key */
	XKV_MISS_DENIED,	/* source refused: outside the allowlist, not unicast,
				* loopback off a loopback device, or protected mode */
	XKV_MISS_BAD_TOKEN,	/* AUTH required and the token does not match */
	XKV_MISS_NO_ROOM,	/* the reply would be larger than the request */
	XKV_MISS_STALE_DAEMON,	/* the daemon's heartbeat is too old */
	XKV_MISS_NOT_LOCAL,	/* destination MAC or IP not this interface's own, or
				* an address the daemon does not listen on */
	XKV_STAT_MGET_HIT,	/* an MGET answered (XKV_STAT_HIT counts GETs) */
	XKV_MISS_TOO_MANY_KEYS, /* an MGET of more than XKV_MGET_MAX_KEYS keys */
	XKV_MISS_NOT_OWNER,	/* cluster mode: the key's slot is not this node's (MOVED/ASK) */
	XKV_MISS_CROSSSLOT,	/* cluster mode: an MGET's keys in more than one slot */
	XKV_MISS_ACL,		/* XKV_ACCESS_DAEMON: the default user's ACL is checked there */
	XKV_STAT_COUNT,
};

/* Key of the allowlist LPM trie: IPv4 sources are mapped into ::ffff:0:0/96. */
struct xkv_allow_key {
	__u32 prefixlen;
	__u8 addr[16];
};
_Static_assert(sizeof(struct xkv_allow_key) == 20, "xkv_allow_key is 20 bytes");

/*
 * One entry of kv_local, the array indexed by ingress ifindex: what the
 * daemon listens on at that interface. The program answers only frames to
 * `mac` and to one of the addresses, so a reply always leaves from the
 * interface's own addresses; loopback sources only where loopback is set.
 * n4 = n6 = 0: nothing is answered there. An array, not a hash keyed by
 * (ifindex, address): its lookup is inlined, a few instructions per packet.
 */
#define XKV_MAX_IFINDEX 4096 /* kv_local entries: higher ifindexes are daemon-served */
#define XKV_LOCAL_ADDRS 8    /* addresses of each family per interface */

struct xkv_local {
	__u8 mac[6];   /* the interface's own unicast MAC (all zero on lo) */
	__u8 loopback; /* 1 on a loopback device (IFF_LOOPBACK) */
	__u8 n4;       /* addr4[] in use */
	__u8 n6;       /* addr6[] in use */
	__u8 reserved[7];
	__u32 addr4[XKV_LOCAL_ADDRS];	 /* be */
	__u64 addr6[XKV_LOCAL_ADDRS][2]; /* the 16 bytes, in memory order */
};
_Static_assert(sizeof(struct xkv_local) == 176, "xkv_local is 176 bytes");

/*
 * Cluster mode: the program answers a key only if this node owns its slot,
 * bit (slot % 64) of word (slot / 64) of the program's xkv_owned_slots, which
 * the daemon clears before it stops owning a slot and sets after it starts.
 */
#define XKV_CLUSTER_SLOTS 16384
#define XKV_OWNED_WORDS (XKV_CLUSTER_SLOTS / 64)

/* The program answers nothing once the daemon's heartbeat is older than this. */
#define XKV_HEARTBEAT_MAX_AGE_NS 1000000000ULL

#endif
