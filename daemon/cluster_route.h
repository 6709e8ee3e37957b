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

struct client;
struct command;

/* The dispatcher's check, in cluster mode only, before c's command cmd
 * runs or is queued: true to serve it; false after replying with the
 * redirect (a transaction being queued is flagged to fail, an EXEC's is
 * discarded). c is not our master (the dispatcher skips it). */
bool cluster_route(struct client *c, struct command *cmd);

#endif
