/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obuf: client-output-buffer-limit, Redis's limits on a client's pending
 * reply bytes, per class: replica for a replica (repl.h), pubsub while the
 * client is subscribed to anything, normal otherwise. A replica's RDB file
 * is queued without a check, as Redis does not count it; the stream after
 * it is checked with the file's unsent bytes still counted. Past the hard limit a client is closed at
 * once; past the soft limit, once it has stayed there longer than the soft
 * seconds. Zero means no limit.
 *
 * Called on the client's own worker whenever its pending replies grow by a
 * reply block (reply.c) or by a pub/sub message (pubsub.c): the cost is a
 * few loads per block, never per reply.
 */
#ifndef XKV_OBUF_H
#define XKV_OBUF_H

#include <stdbool.h>

struct client;

/* Checks c's pending replies against its class's limits. Over them, c is
 * marked CLIENT_CLOSE_ASAP (its replies are dropped) and its worker is asked
 * to close it even if a send is stuck. Returns true if c is being closed. */
bool obuf_check(struct client *c);

#endif
