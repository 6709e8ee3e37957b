/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster_ctl: the control plane's own shared state, between its three
 * files: nodes.conf (cluster_config.c), the bus (cluster_bus.c) and the
 * CLUSTER commands (cmd/cluster.c). Everything here is under cluster_lock()
 * (cluster.h) unless said otherwise. The data plane does not include it.
 */
#ifndef XKV_CLUSTER_CTL_H
#define XKV_CLUSTER_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

struct text;

#define CLUSTER_PORT_INCR 10000
#define CLUSTER_MSG_TYPES 11 /* PING .. PUBLISHSHARD */

/* A failure report: `from` said the node was PFAIL or FAIL at `time`. */
struct cluster_fail_report {
	struct cluster_node *from;
	int64_t time;
};

/* node->bus: what the control plane knows of a node beyond cluster.h. */
struct cluster_node_bus {
	int64_t ctime;	       /* created (handshake timeout) */
	int64_t ping_sent;     /* ms of the unanswered ping, or 0 */
	int64_t pong_received; /* ms of the last pong */
	int64_t data_received; /* ms of the last message on any link */
	int64_t fail_time;     /* ms FAIL was set */
	int64_t repl_offset;
	char human_nodename[256];
	struct cluster_link *link;    /* outbound, toward the node */
	struct cluster_link *inbound; /* accepted from the node */
	struct cluster_fail_report *reports;
	unsigned nreports;
};

struct cluster_ctl {
	uint64_t current_epoch;
	uint64_t last_vote_epoch;
	uint64_t sent[CLUSTER_MSG_TYPES], received[CLUSTER_MSG_TYPES];
	uint64_t links_buffer_limit_exceeded;
	int size; /* masters serving at least one slot */
	/* Work left for the end of the bus thread's turn. */
	bool todo_save, todo_state;
	unsigned char dirty_slots[CLUSTER_SLOTS / 8]; /* lost slots whose keys go */
};

extern struct cluster_ctl cluster_ctl;

static inline struct cluster_node_bus *cluster_nb(const struct cluster_node *n)
{
	return n->bus;
}

/* ---- nodes.conf (cluster_config.c) ---- */

/* Locks the file, loads it if present (else writes it): 0, or -1 logged. */
int cluster_config_start(void);
/* Rewrites nodes.conf atomically (temporary file, fsync, rename, fsync of
 * the directory): 0 or -errno (logged). */
int cluster_config_save(bool durable);
/* One line of CLUSTER NODES (for_file adds nodes.conf's aux fields), no
 * newline. */
void cluster_describe_node(struct text *t, const struct cluster_node *n, bool for_file);
/* CLUSTER NODES: every node but those in handshake when for_file. */
void cluster_describe_nodes(struct text *t, bool for_file);
const char *cluster_flags_string(uint32_t flags, char *buf, size_t size);

/* ---- the view of the cluster (cluster_state.c; the node delete: cluster_bus.c) ---- */

uint64_t cluster_rand(void);
/* Bit s of bits[s / 8] (as 1 << (s % 8)) set for each slot n owns. */
void cluster_node_slots_bitmap(const struct cluster_node *n, unsigned char *bits);
/* A failure report about n from a primary, or its withdrawal. */
void cluster_report_add(struct cluster_node *n, struct cluster_node *from);
void cluster_report_del(struct cluster_node *n, struct cluster_node *from);
/* PFAIL -> FAIL if a majority of the primaries report n (a FAIL goes out). */
void cluster_mark_failing_if_needed(struct cluster_node *n);
/* n answers again: FAIL is cleared when Redis would. */
void cluster_clear_failure_if_needed(struct cluster_node *n);
/* The sender, a primary, has our config epoch: the greater id takes a new one. */
void cluster_epoch_collision(struct cluster_node *sender);
/* sender claims the slots of bits at epoch: it gets those held with an older one. */
void cluster_update_slots_with(struct cluster_node *sender, uint64_t epoch,
			       const unsigned char *bits);

/* A node's bus state, allocated with it; NULL on ENOMEM (node unlinked). */
struct cluster_node *cluster_ctl_node_new(const char *name, uint32_t flags);
/* Forgets node: closes its links and drops its reports, then cluster_node_forget. */
void cluster_ctl_node_delete(struct cluster_node *n);
unsigned cluster_node_count(void);
unsigned cluster_node_slots(const struct cluster_node *n);
/* The config epoch a node shows: its primary's for a replica. */
uint64_t cluster_node_epoch(const struct cluster_node *n);
bool cluster_node_is_master(const struct cluster_node *n);
/* Recomputes cluster_state and size (Redis's clusterUpdateState). */
void cluster_update_state(void);
/* Bumps myself's config epoch past every other if it is not already the
 * greatest or unique: true if changed (BUMPEPOCH, SETSLOT NODE myself). */
bool cluster_bump_epoch(void);
/* Starts a handshake with ip:port@cport; -EINVAL for a bad address. */
int cluster_start_handshake(const char *ip, int port, int cport);
/* A node forgotten by CLUSTER FORGET is not re-added for a minute. */
void cluster_blacklist_add(const char *name);
bool cluster_blacklist_has(const char *name, size_t len);
void cluster_blacklist_clear(void);
/* The blacklist's live entries, for the forgotten node extension. */
unsigned cluster_blacklist_count(void);
void cluster_blacklist_get(unsigned i, char name[CLUSTER_NAMELEN], uint64_t *ttl_s);
/* CLUSTER RESET. */
void cluster_reset(bool hard);
/* Fills the CLUSTER LINKS reply. */
struct client;
void cluster_reply_links(struct client *c);
/* Failure reports about n still valid. */
unsigned cluster_fail_reports_count(struct cluster_node *n);
/* Every node learns our new configuration soon (a PONG to each). */
void cluster_broadcast_pong(void);
/* Wakes the bus thread (new nodes to connect to). */
void cluster_bus_wake(void);
/* A FAIL message about failing to every node. */
void cluster_bus_send_fail(const struct cluster_node *failing);
/* Sets myself's announced address from the configuration. */
void cluster_update_myself_announced(void);
/* Bus links to other nodes (INFO clients' cluster_connections). */
unsigned cluster_link_count(void);

/* ---- the bus (cluster_bus.c), outside the lock ---- */

int cluster_bus_start(void);
void cluster_bus_stop(void);
/* PUBLISH and SPUBLISH reach the other nodes (SPUBLISH: the shard's). */
void cluster_bus_publish(bool shard, const char *ch, size_t chlen, const char *msg, size_t msglen);

/* ---- the bus parser, exposed for the unit test and fuzzer ---- */

/* 0 if buf[0..len) is a well-formed bus message of its type (one whole
 * message, totlen == len), -EBADMSG otherwise. */
int cluster_msg_validate(const unsigned char *buf, size_t len);
/* Validates buf and processes it as a message read from an inbound link
 * (nothing is sent, nodes.conf not written): validate's result. */
int cluster_bus_feed(const unsigned char *buf, size_t len);

/* ---- the data plane's keys, as far as the control plane needs them ---- */

/* Keys of slot in database 0 (takes the slot's shard lock: never call it
 * holding cluster_lock). */
uint64_t cluster_slot_keys_count(uint16_t slot);

#endif
