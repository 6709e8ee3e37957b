/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lazyfree: freeing big values and flushed databases off the command path,
 * on the background job pool (bgjob.h), with Redis's rule for what is big.
 *
 * The free effort of a value is about the number of allocations freeing it
 * takes (Redis's lazyfreeGetFreeEffort): the nodes of a quicklist, the
 * elements of a hash table set or hash, of a skiplist, the nodes of a
 * stream; 1 for everything held in one allocation. A value whose effort is
 * above LAZYFREE_THRESHOLD goes to the pool; smaller ones are freed at once,
 * which is cheaper than a hand-over.
 *
 * Counters as Redis counts them (INFO): lazyfree_pending_objects, values and
 * keys handed to the pool and not yet freed; lazyfreed_objects, those freed
 * there since start or CONFIG RESETSTAT. Atomics, from any thread.
 *
 * What is handed over must be detached first: no longer reachable from the
 * keyspace (its entry unlinked or its database's tables replaced) and its
 * change already signalled, so no hook and no other thread can reach it.
 */
#ifndef XKV_LAZYFREE_H
#define XKV_LAZYFREE_H

#include <stdbool.h>
#include <stdint.h>

#include "object.h"

#define LAZYFREE_THRESHOLD 64

/* Frees the value o holds (o is left holding nothing): on the pool if lazy
 * and its effort is above the threshold, else now. */
void lazyfree_obj(struct obj *o, bool lazy);

/* Hands fn(arg) to the pool, counting `objects` pending until it has run and
 * then freed. fn owns arg. */
typedef void lazyfree_fn(void *arg);
void lazyfree_submit(lazyfree_fn *fn, void *arg, uint64_t objects);

uint64_t lazyfree_pending_objects(void);
uint64_t lazyfree_freed_objects(void);
/* CONFIG RESETSTAT. */
void lazyfree_reset_stats(void);

#endif
