/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libxkv: a small client for xkv's UDP GET and MGET (docs/udp-protocol.md),
 * with the TCP fallback every UDP client needs.
 *
 * A GET or MGET goes out as one datagram padded to the largest reply the caller
 * accepts (a reply is never larger than its request). It is answered by the
 * kernel (XDP) on a cache hit, else by the daemon's UDP socket. Lost datagrams
 * are retried with a fresh request id; a value too large for the padding is
 * asked for again padded to fit (up to the largest UDP datagram), and whatever
 * UDP cannot answer (no answer at all, a value too large, NOAUTH because the
 * token is missing or wrong) is asked over TCP, with AUTH when a password is
 * set. Other commands go over TCP only (xkv__command), or over UDP on request
 * (xkv__udp_command, for GET, MGET and PING). In a cluster, GET and MGET
 * follow MOVED (the slot remembered) and ASK to the node named, through a
 * client of that node the struct xkv keeps.
 *
 * Errors: functions that return int return 0 (or a documented positive value)
 * or a negative errno; -EREMOTEIO means the server answered with an error
 * reply, whose text xkv__errmsg() returns. Constructors return NULL and set
 * errno.
 *
 * Threads: a struct xkv is one client with its own sockets and buffers; use
 * one per thread, or serialize the calls.
 */
#ifndef XKV_LIBXKV_H
#define XKV_LIBXKV_H

#include <stddef.h>
#include <stdint.h>

struct xkv;

/* How a reply arrived (the `how` out-parameter). */
enum xkv_via {
	XKV_VIA_KERNEL = 1, /* UDP, answered by the XDP program */
	XKV_VIA_DAEMON_UDP, /* UDP, answered by the daemon */
	XKV_VIA_TCP,	    /* the TCP fallback */
};

#define XKV_DEFAULT_PADDING 1200	/* bytes of request datagram (header included) */
#define XKV_DEFAULT_TIMEOUT_MS 200	/* per UDP attempt */
#define XKV_DEFAULT_RETRIES 2		/* UDP attempts after the first */
#define XKV_DEFAULT_TCP_TIMEOUT_MS 5000 /* connect, and each TCP reply */
/* The largest datagram libxkv sends: the largest UDP payload over IPv4. */
#define XKV_MAX_DATAGRAM 65507

/*
 * A client of host:port (a name or a numeric IPv4/IPv6 address; every address
 * it resolves to is tried in turn). token is the server's fastpath-token when
 * it has one set, else 0: a password set with xkv__set_password() then gives
 * the token derived from it, which a server with requirepass and no
 * fastpath-token expects. Nothing is sent yet. Returns NULL
 * with errno set (EINVAL, ENOMEM, EHOSTUNREACH when the name does not resolve).
 * The caller frees it with xkv__free().
 */
struct xkv *xkv__new(const char *host, uint16_t port, uint64_t token);
void xkv__free(struct xkv *x);

/* The size of a GET or MGET request datagram, header included
 * (24..XKV_MAX_DATAGRAM); a longer command makes a longer datagram. Returns 0
 * or -EINVAL. */
int xkv__set_padding(struct xkv *x, size_t bytes);
/* How long each UDP attempt waits for its reply (> 0). 0 or -EINVAL. */
int xkv__set_timeout_ms(struct xkv *x, int ms);
/* UDP attempts after the first (>= 0) before falling back to TCP. 0 or -EINVAL. */
int xkv__set_retries(struct xkv *x, int retries);
/* The TCP connect and reply timeout (> 0). 0 or -EINVAL. */
int xkv__set_tcp_timeout_ms(struct xkv *x, int ms);
/* The requirepass password sent with AUTH on each new TCP connection (copied;
 * NULL for none); UDP requests then carry the token derived from it, unless
 * xkv__new() was given a fastpath-token. 0, -ENOMEM or -EIO. */
int xkv__set_password(struct xkv *x, const char *password);
/* The UDP token a server derives from its password when fastpath-token is 0:
 * the first 8 bytes of SHA-256("xkv-fastpath-token:" password), in *token's
 * memory as sent on the wire. 0 or -EIO. */
int xkv__derive_token(const char *password, size_t len, uint64_t *token);

/*
 * GET key[0..klen). Returns 0 on a hit, with *value a malloc'd copy of the
 * value (vlen bytes plus a terminating NUL that *vlen does not count) that
 * the caller frees; 1 if the key does not exist; a negative errno on error
 * (-EREMOTEIO for an error reply such as WRONGTYPE or NOAUTH). how, if not
 * NULL, receives an enum xkv_via when a reply arrived.
 */
int xkv__get(struct xkv *x, const char *key, size_t klen, char **value, size_t *vlen,
	     unsigned *how);

/*
 * MGET keys[0..nkeys) (klens[i] bytes each; klens NULL for C strings), nkeys
 * >= 1. Returns 0 with values[i] a malloc'd copy of key i's value (vlens[i]
 * bytes plus a NUL) that the caller frees, or NULL where the key does not
 * exist or holds another type (as MGET answers); a negative errno on error,
 * with every values[i] NULL. Over UDP first, padded like a GET; whatever UDP
 * does not answer with the array (no answer, a reply too large for a
 * datagram, any error reply) is asked over TCP. how as for xkv__get.
 */
int xkv__mget(struct xkv *x, int nkeys, const char *const *keys, const size_t *klens, char **values,
	      size_t *vlens, unsigned *how);

/*
 * Sends argv[0..argc) (lens[i] bytes each; lens NULL for C strings) over TCP
 * and reads one reply. Returns 0 with *reply the raw RESP reply (malloc'd,
 * rlen bytes plus a NUL; the caller frees it), error replies included, or a
 * negative errno when no reply arrived.
 */
int xkv__command(struct xkv *x, int argc, const char **argv, const size_t *lens, char **reply,
		 size_t *rlen);

/*
 * Like xkv__command, but in one datagram, with the UDP timeout, retries and
 * padding, and no TCP fallback (the UDP endpoint serves GET, MGET and PING
 * only).
 * Returns -ETIMEDOUT if nothing answered, -EMSGSIZE if the command or its
 * reply does not fit a datagram.
 */
int xkv__udp_command(struct xkv *x, int argc, const char **argv, const size_t *lens, char **reply,
		     size_t *rlen, unsigned *how);

/* What the last failed call saw: the server's error reply (without its '-'
 * and CRLF) or a description of a local failure. Owned by x, valid until the
 * next call; "" when there is none. */
const char *xkv__errmsg(const struct xkv *x);

/* "kernel", "daemon udp", "tcp", or "?". */
const char *xkv__via_name(unsigned how);

#endif
