/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster: this node's view of a Redis Cluster — the nodes it knows and who
 * owns each of the 16384 hash slots — shared by the two halves of cluster
 * mode, which depend on it and not on each other:
 *
 *  - the control plane (the cluster bus, nodes.conf, CLUSTER ADDSLOTS /
 *    SETSLOT / MEET ...) changes the view, always under cluster_lock();
 *  - the data plane (the redirect decision of every keyed command, the
 *    per-slot key index, MIGRATE, the kernel cache's slot bitmap) reads it
 *    on every command, without a lock: slot fields are atomic pointers.
 *
 * Lifetime. A node, once created, is never freed while the process runs
 * (CLUSTER FORGET and RESET only unlink it and mark it CLUSTER_NODE_FORGOTTEN),
 * so a pointer the data plane loaded from a slot stays readable. Its address
 * fields may change under the lock; a reader copies them with
 * cluster_node_endpoint().
 *
 * Ordering. A slot's owner changes only through cluster_slot_set_owner(),
 * which tells the slot listener before this node stops owning a slot and
 * after it starts (the kernel cache stops answering for a slot before any
 * other node may write it).
 */
#ifndef XKV_CLUSTER_H
#define XKV_CLUSTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h" /* CLUSTER_SLOTS */

#define CLUSTER_NAMELEN 40 /* hex characters of a node id or shard id */
#define CLUSTER_IPLEN 46   /* INET6_ADDRSTRLEN */

/* Redis's node flags (cluster_legacy.h), the same bits, so the bus carries
 * them unchanged. */
enum cluster_node_flag {
	CLUSTER_NODE_MASTER = 1u << 0,
	CLUSTER_NODE_SLAVE = 1u << 1,
	CLUSTER_NODE_PFAIL = 1u << 2,
	CLUSTER_NODE_FAIL = 1u << 3,
	CLUSTER_NODE_MYSELF = 1u << 4,
	CLUSTER_NODE_HANDSHAKE = 1u << 5,
	CLUSTER_NODE_NOADDR = 1u << 6,
	CLUSTER_NODE_MEET = 1u << 7,
	CLUSTER_NODE_MIGRATE_TO = 1u << 8,
	CLUSTER_NODE_NOFAILOVER = 1u << 9,
	CLUSTER_NODE_EXTENSIONS_SUPPORTED = 1u << 10,
	/* Ours, never sent: unlinked by FORGET or RESET, kept for readers. */
	CLUSTER_NODE_FORGOTTEN = 1u << 31,
};

struct cluster_node {
	char name[CLUSTER_NAMELEN + 1];	    /* under cluster_lock once linked */
	char shard_id[CLUSTER_NAMELEN + 1]; /* under cluster_lock */
	_Atomic uint32_t flags;		    /* enum cluster_node_flag */
	uint64_t config_epoch;		    /* under cluster_lock */
	/* Where clients and the bus reach it; under cluster_lock. */
	char ip[CLUSTER_IPLEN];
	char hostname[256];
	uint16_t port;			/* clients (TCP) */
	uint16_t pport;			/* clients over TLS: always 0 here */
	uint16_t cport;			/* the cluster bus */
	struct cluster_node *replicaof; /* under cluster_lock; NULL for a primary */
	struct cluster_node *next;	/* the list of known nodes, under cluster_lock */
	void *bus;			/* the control plane's own per-node state */
};

/* One slot as the data plane reads it. NULL: nobody / not migrating. */
struct cluster_slot {
	struct cluster_node *_Atomic owner;
	struct cluster_node *_Atomic migrating_to;   /* SETSLOT MIGRATING, on the owner */
	struct cluster_node *_Atomic importing_from; /* SETSLOT IMPORTING, on the target */
};

/* ---- set up (main) ---------------------------------------------------------------------------- */

/* When cluster-enabled: creates myself (a fresh random id; the control plane
 * replaces it with nodes.conf's). 0 or -errno. */
int cluster_init(void);
/* cluster-enabled yes, fixed at start. */
bool cluster_enabled(void);

/* ---- the data plane's reads (any thread, no lock) --------------------------------------------- */

/* What the data plane reads on every command of a cluster node; written
 * only by cluster.c. In the header so that the reads below inline: they are
 * on the path of every keyed command (docs/benchmarks.md, the slot check's
 * cost). */
struct cluster_view {
	struct cluster_node *_Atomic myself;
	_Atomic bool state_ok;
	struct cluster_slot slots[CLUSTER_SLOTS];
};
extern struct cluster_view cluster_view;

static inline struct cluster_node *cluster_myself(void)
{
	return atomic_load_explicit(&cluster_view.myself, memory_order_acquire);
}

static inline const struct cluster_slot *cluster_slot(uint16_t slot)
{
	return &cluster_view.slots[slot % CLUSTER_SLOTS];
}

bool cluster_owns_slot(uint16_t slot);

/* cluster_state:ok (every slot served, as cluster-require-full-coverage
 * asks); the control plane decides it. */
static inline bool cluster_state_ok(void)
{
	return atomic_load_explicit(&cluster_view.state_ok, memory_order_acquire);
}
/* "ip:port" (or the hostname, as cluster-preferred-endpoint-type says) of
 * node for a MOVED or ASK reply; returns the length written, NUL included
 * when it fits. Takes cluster_lock: never call it holding the lock (from a
 * slot listener). */
size_t cluster_node_endpoint(const struct cluster_node *node, char *buf, size_t size);

/* ---- the control plane's writes (hold cluster_lock) ------------------------------------------- */

void cluster_lock(void);
void cluster_unlock(void);
/* A node with a fresh random id (or name, when not NULL), linked into the
 * list; NULL on ENOMEM. */
struct cluster_node *cluster_node_create(const char *name, uint32_t flags);
/* Unlinks node (not myself) and drops it from every slot; it stays readable. */
void cluster_node_forget(struct cluster_node *node);
/* The first known node, then node->next; forgotten nodes are not listed. */
struct cluster_node *cluster_nodes_first(void);
struct cluster_node *cluster_node_lookup(const char *name, size_t len);
void cluster_slot_set_owner(uint16_t slot, struct cluster_node *owner);
void cluster_slot_set_migrating(uint16_t slot, struct cluster_node *to);
void cluster_slot_set_importing(uint16_t slot, struct cluster_node *from);
void cluster_set_state_ok(bool ok);
/* Makes n (linked, flagged CLUSTER_NODE_MYSELF by the caller) this node:
 * nodes.conf's myself replaces the fresh one cluster_init made. */
void cluster_set_myself(struct cluster_node *n);

/* ---- the data plane's services to the control plane (cluster_keys.c) ------------------------ */

/* Deletes every key of slot (database 0) through the per-slot index, as
 * Redis's clusterDelKeysInSlot when a slot is lost; returns how many. Takes
 * the slot's shard lock: call it holding neither cluster_lock nor a shard
 * lock. */
int cluster_slot_keys_delete(uint16_t slot);
/* May this node list the keys of slot (COUNTKEYSINSLOT, GETKEYSINSLOT): it
 * or its primary owns the slot, or it imports it (Redis's
 * clusterCanAccessKeysInSlot). */
bool cluster_can_access_slot(uint16_t slot);

/* ---- the data plane's hook (registered once before the workers start) ------------------------- */

/* Called under cluster_lock when this node starts (owned) or is about to stop
 * owning slot, before the change is visible (stop) or after (start): the
 * kernel cache's slot bitmap, the shard channels' subscribers. A listener
 * must take only leaf locks. Added under cluster_lock (at most 4). */
typedef void cluster_slot_listener(uint16_t slot, bool owned);
void cluster_add_slot_listener(cluster_slot_listener *fn);

#endif
