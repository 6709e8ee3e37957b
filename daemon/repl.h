/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl: the server's replication identity, as INFO replication reports it.
 *
 * There is no replication yet: the server is always a master with no
 * replicas, its offset stays 0 and it keeps no backlog. What exists is the
 * replication ID Redis gives every master (40 random hex digits, new at each
 * start) and the secondary ID a promoted replica would inherit (all zeros,
 * offset -1 until then). DEBUG CHANGE-REPL-ID draws a new ID.
 *
 * Threads: the IDs are guarded by a leaf lock; readers copy them out.
 */
#ifndef XKV_REPL_H
#define XKV_REPL_H

#define REPL_ID_LEN 40

/* Copies the IDs (NUL-terminated) into id and id2. */
void repl_ids(char id[REPL_ID_LEN + 1], char id2[REPL_ID_LEN + 1]);
/* A new random primary ID; the secondary one is cleared (Redis's
 * changeReplicationId + clearReplicationId2). */
void repl_change_id(void);

/* Redis's checkGoodReplicasStatus: writes are allowed unless
 * min-replicas-to-write and min-replicas-max-lag are set, and there are
 * never replicas here. */
#include <stdbool.h>
bool repl_good_replicas(void);

#endif
