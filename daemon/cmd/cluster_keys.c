// SPDX-License-Identifier: BSD-3-Clause
/*
 * The data plane's commands of cluster mode: CLUSTER COUNTKEYSINSLOT and
 * GETKEYSINSLOT over the per-slot key index (O(keys listed), every shard of
 * database 0 held by the dispatcher), and ASKING, READONLY, READWRITE, the
 * connection flags the redirect decision reads (cluster_route.c).
 */
#include "../cluster.h"
#include "../commands.h"

#define ERR_NO_CLUSTER "This instance has cluster support disabled"

void cmd_cluster_countkeysinslot(struct client *c)
{
	long long slot;

	if (!cluster_enabled()) {
		reply_error(c, ERR_NO_CLUSTER);
		return;
	}
	if (!arg_ll(c, 2, &slot))
		return;
	if (slot < 0 || slot >= CLUSTER_SLOTS) {
		reply_error(c, "Invalid slot");
		return;
	}
	/* Redis 8: a slot this node may not serve counts no key. */
	if (!cluster_can_access_slot((uint16_t)slot)) {
		reply_int(c, 0);
		return;
	}
	reply_int(c, (long long)db_slot_count(0, (unsigned)slot));
}

void cmd_cluster_getkeysinslot(struct client *c)
{
	long long slot, max;
	uint64_t n;
	struct entry *e;

	if (!cluster_enabled()) {
		reply_error(c, ERR_NO_CLUSTER);
		return;
	}
	if (!arg_ll(c, 2, &slot) || !arg_ll(c, 3, &max))
		return;
	if (slot < 0 || slot >= CLUSTER_SLOTS || max < 0) {
		reply_error(c, "Invalid slot or number of keys");
		return;
	}
	if (!cluster_can_access_slot((uint16_t)slot)) {
		reply_array(c, 0);
		return;
	}
	n = db_slot_count(0, (unsigned)slot);
	if ((uint64_t)max < n)
		n = (uint64_t)max;
	/* Expired keys are listed until reclaimed, as Redis lists them. */
	reply_array(c, (long)n);
	e = db_slot_first(0, (unsigned)slot);
	for (uint64_t i = 0; i < n && e; i++, e = db_slot_next(e))
		reply_bulk(c, e->key, entry_klen(e));
}

void cmd_asking(struct client *c)
{
	if (!cluster_enabled()) {
		reply_error(c, ERR_NO_CLUSTER);
		return;
	}
	c->flags |= CLIENT_ASKING;
	reply_ok(c);
}

void cmd_readonly(struct client *c)
{
	if (!cluster_enabled()) {
		reply_error(c, ERR_NO_CLUSTER);
		return;
	}
	c->flags |= CLIENT_READONLY;
	reply_ok(c);
}

void cmd_readwrite(struct client *c)
{
	if (!cluster_enabled()) {
		reply_error(c, ERR_NO_CLUSTER);
		return;
	}
	c->flags &= ~CLIENT_READONLY;
	reply_ok(c);
}
