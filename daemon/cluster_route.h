/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster_route: cluster mode's redirect decision, Redis's getNodeByQuery
 * and clusterRedirectClient. Every command that names keys or shard
 * channels (by its key specs; EXEC by its queue's) is served here only if
 * all of them hash to one slot that this node serves; otherwise the client
 * gets -MOVED, -ASK, -CROSSSLOT, -TRYAGAIN or -CLUSTERDOWN as Redis 8.8
 * answers. Reads the slot table lock-free (cluster.h); takes a shard lock
 * only to see whether a key of a slot being migrated is still here.
 */
#ifndef XKV_CLUSTER_ROUTE_H
#define XKV_CLUSTER_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

struct client;
struct command;

/* The dispatcher's check, in cluster mode only, before c's command cmd
 * runs or is queued: true to serve it; false after replying with the
 * redirect (a transaction being queued is flagged to fail, an EXEC's is
 * discarded). c is not our master (the dispatcher skips it). */
bool cluster_route(struct client *c, struct command *cmd);

/* The same decision for a GET or MGET that came over UDP (c a stand-in
 * holding its arguments): true to serve it; else the error to answer, its
 * '-' included, in buf. */
bool cluster_route_udp(struct client *c, char *buf, size_t size);

/* For a client blocked (BLPOP & co.) on key, checked by its worker's
 * cron as Redis's clusterRedirectBlockedClientIfNeeded: true while this
 * node still serves the key's slot (or imports it); else the error that
 * unblocks it (-MOVED, -CLUSTERDOWN) in buf. */
bool cluster_route_blocked(const struct client *c, const char *key, size_t len, char *buf,
			   size_t size);

/* A script's call of cmd with argv, for the script caller ran (Redis's
 * scriptVerifyClusterState): true to run it; else the error in buf. *slot
 * is the script's slot so far (its declared keys', -1: none), which every
 * call with keys must share unless cross_slot_ok (allow-cross-slot-keys,
 * or a script without a shebang). */
struct arg;
bool cluster_route_script(const struct client *caller, struct command *cmd, int argc,
			  const struct arg *argv, int *slot, bool cross_slot_ok, char *buf,
			  size_t size);

#endif
