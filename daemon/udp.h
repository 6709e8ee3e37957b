/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp: the daemon's end of the UDP protocol (docs/udp-protocol.md). Each
 * worker has its own SO_REUSEPORT socket per bind address and answers what
 * the kernel fast path passed on: GET and MGET (from db 0) and PING; anything else gets
 * an error telling the client to use TCP. A reply is never larger than its
 * request: a value that does not fit is announced with XKV_F_TRUNCATED and
 * its length, so the client can retry padded or over TCP.
 */
#ifndef XKV_UDP_H
#define XKV_UDP_H

struct worker;

/* Opens w's UDP sockets on udp-port (none when it is 0). 0 or -1 (logged). */
int udp_open(struct worker *w);
void udp_close(struct worker *w);
/* Answers every datagram waiting on fd, in batches. */
void udp_serve(struct worker *w, int fd);

#endif
