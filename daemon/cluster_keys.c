// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_keys: what the per-slot key index (store.h, db_slot_*) gives
 * cluster mode: a lost slot's keys deleted without scanning the keyspace,
 * and the keys a node may list.
 */
#include "cluster.h"
#include "cluster_ctl.h"
#include "store.h"

int cluster_slot_keys_delete(uint16_t slot)
{
	unsigned shard = slot % STORE_SHARDS;
	struct entry *e;
	int n = 0;

	if (!store_slot_index())
		return 0;
	store_shard_lock(0, shard);
	/* As Redis's clusterDelKeysInSlot: every hook hears of it (WATCH,
	 * blocked clients, the kernel cache, tracking), a "del" event, and a DEL
	 * (UNLINK with lazyfree-lazy-server-del) in the propagation stream. */
	while ((e = db_slot_first(0, slot % CLUSTER_SLOTS))) {
		db_remove(0, e, DB_CHANGE_SLOT_LOST);
		n++;
	}
	store_shard_unlock(0, shard);
	return n;
}

bool cluster_can_access_slot(uint16_t slot)
{
	const struct cluster_slot *s = cluster_slot(slot);
	struct cluster_node *me = cluster_myself(), *primary;

	if (!cluster_enabled())
		return true;
	if (atomic_load_explicit(&s->importing_from, memory_order_acquire))
		return true;
	if (!me)
		return false;
	primary = __atomic_load_n(&me->replicaof, __ATOMIC_ACQUIRE);
	if ((atomic_load_explicit(&me->flags, memory_order_relaxed) & CLUSTER_NODE_SLAVE) &&
	    primary)
		return atomic_load_explicit(&s->owner, memory_order_acquire) == primary;
	return atomic_load_explicit(&s->owner, memory_order_acquire) == me;
}

uint64_t cluster_slot_keys_count(uint16_t slot)
{
	uint64_t n;

	store_shard_lock(0, slot % STORE_SHARDS);
	n = db_slot_count(0, slot % CLUSTER_SLOTS);
	store_shard_unlock(0, slot % STORE_SHARDS);
	return n;
}
