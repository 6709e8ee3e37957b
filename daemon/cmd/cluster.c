// SPDX-License-Identifier: BSD-3-Clause
/*
 * CLUSTER: the control plane's subcommands, with Redis 8.8's replies and
 * errors. Each takes cluster_lock for what it reads or changes, never
 * holding it while it counts or deletes keys (shard locks come first).
 * A change is saved to nodes.conf before the reply, as Redis does in
 * beforeSleep, and sent to the other nodes with a PONG.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "store.h"
#include "text.h"
#include "util.h"

static const char *const help[] = {
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MYID",
	"    Return the node id.",
	"MYSHARDID",
	"    Return the node's shard id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> "
	"<slot> ...",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SLOT-STATS",
	"    Return an array of slot usage statistics for slots assigned to the current node.",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current "
	"node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of "
	"a link",
	"MIGRATION IMPORT <start-slot end-slot [start-slot end-slot ...]> |",
	"          STATUS [ID <task-id> | ALL] | CANCEL [ID <task-id> | ALL]",
	"    Start, monitor and cancel slot migration.",
	"HELP",
	"    Print this help.",
	NULL,
};

static const char *const msg_names[CLUSTER_MSG_TYPES] = {
	"ping",	    "pong",   "meet",	 "fail",   "publish",	   "auth-req",
	"auth-ack", "update", "mfstart", "module", "publishshard",
};

/* False (and the reply sent) when cluster mode is off. */
static bool enabled_or_reply(struct client *c)
{
	if (cluster_enabled())
		return true;
	reply_error(c, "This instance has cluster support disabled");
	return false;
}

/* Saves and tells the other nodes, after a change (under the lock). As
 * Redis, only a change of epoch is fsynced before the reply: slot
 * assignments are written (and renamed into place) but not synced, which is
 * what lets redis-cli --cluster reshard move a slot in a few round trips
 * rather than a few disk flushes. */
static void changed(bool durable)
{
	cluster_update_state();
	if (cluster_config_save(durable) < 0)
		log_warning("Fatal: can't update cluster config file.");
	cluster_broadcast_pong();
}

/* A slot argument, or -1 with the reply sent. */
static int slot_or_reply(struct client *c, const struct arg *a)
{
	long long v;

	if (!str_to_ll(a->p, a->len, &v) || v < 0 || v >= CLUSTER_SLOTS) {
		reply_error(c, "Invalid or out of range slot");
		return -1;
	}
	return (int)v;
}

static struct cluster_node *lookup_arg(const struct arg *a)
{
	return cluster_node_lookup(a->p, a->len);
}

void cmd_cluster_help(struct client *c)
{
	if (enabled_or_reply(c))
		reply_help(c, help);
}

void cmd_cluster_info(struct client *c)
{
	struct cluster_node *me;
	struct text t = { 0 };
	int assigned = 0, ok = 0, pfail = 0, fail = 0;
	uint64_t sent = 0, recv = 0;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	me = cluster_myself();
	for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
		struct cluster_node *n = atomic_load(&cluster_slot((uint16_t)j)->owner);
		uint32_t f;

		if (!n)
			continue;
		assigned++;
		f = atomic_load(&n->flags);
		if (f & CLUSTER_NODE_FAIL)
			fail++;
		else if (f & CLUSTER_NODE_PFAIL)
			pfail++;
		else
			ok++;
	}
	text_printf(&t,
		    "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\n"
		    "cluster_slots_pfail:%d\r\ncluster_slots_fail:%d\r\ncluster_known_nodes:%u\r\n"
		    "cluster_size:%d\r\ncluster_current_epoch:%llu\r\ncluster_my_epoch:%llu\r\n",
		    cluster_state_ok() ? "ok" : "fail", assigned, ok, pfail, fail,
		    cluster_node_count(), cluster_ctl.size,
		    (unsigned long long)cluster_ctl.current_epoch,
		    (unsigned long long)cluster_node_epoch(me));
	for (int i = 0; i < CLUSTER_MSG_TYPES; i++) {
		if (!cluster_ctl.sent[i])
			continue;
		sent += cluster_ctl.sent[i];
		text_printf(&t, "cluster_stats_messages_%s_sent:%llu\r\n", msg_names[i],
			    (unsigned long long)cluster_ctl.sent[i]);
	}
	text_printf(&t, "cluster_stats_messages_sent:%llu\r\n", (unsigned long long)sent);
	for (int i = 0; i < CLUSTER_MSG_TYPES; i++) {
		if (!cluster_ctl.received[i])
			continue;
		recv += cluster_ctl.received[i];
		text_printf(&t, "cluster_stats_messages_%s_received:%llu\r\n", msg_names[i],
			    (unsigned long long)cluster_ctl.received[i]);
	}
	text_printf(&t, "cluster_stats_messages_received:%llu\r\n", (unsigned long long)recv);
	text_printf(&t, "total_cluster_links_buffer_limit_exceeded:%llu\r\n",
		    (unsigned long long)cluster_ctl.links_buffer_limit_exceeded);
	cluster_unlock();
	/* Atomic slot migration (Redis 8.4) does not run here: its counters
	 * stay 0. */
	text_printf(&t, "cluster_slot_migration_active_tasks:0\r\n"
			"cluster_slot_migration_active_trim_running:0\r\n"
			"cluster_slot_migration_active_trim_current_job_keys:0\r\n"
			"cluster_slot_migration_active_trim_current_job_trimmed:0\r\n"
			"cluster_slot_migration_stats_active_trim_started:0\r\n"
			"cluster_slot_migration_stats_active_trim_completed:0\r\n"
			"cluster_slot_migration_stats_active_trim_cancelled:0\r\n");
	reply_verbatim(c, t.p, t.len);
	xfree(t.p);
}

void cmd_cluster_myid(struct client *c)
{
	char name[CLUSTER_NAMELEN];

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	memcpy(name, cluster_myself()->name, CLUSTER_NAMELEN);
	cluster_unlock();
	reply_bulk(c, name, CLUSTER_NAMELEN);
}

void cmd_cluster_myshardid(struct client *c)
{
	char sid[CLUSTER_NAMELEN];

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	memcpy(sid, cluster_myself()->shard_id, CLUSTER_NAMELEN);
	cluster_unlock();
	reply_bulk(c, sid, CLUSTER_NAMELEN);
}

void cmd_cluster_nodes(struct client *c)
{
	struct text t = { 0 };

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	cluster_describe_nodes(&t, false);
	cluster_unlock();
	reply_verbatim(c, t.p ? t.p : "", t.len);
	xfree(t.p);
}

void cmd_cluster_keyslot(struct client *c)
{
	if (enabled_or_reply(c))
		reply_int(c, key_slot(c->argv[2].p, c->argv[2].len));
}

/* One node of CLUSTER SLOTS: endpoint, port, id, then the other endpoints. */
static void reply_slot_node(struct client *c, const struct cluster_node *n)
{
	long type = config.cluster_preferred_endpoint_type;
	bool host = n->hostname[0] != '\0';
	long extra = (type != 0) + (type != 1 && host);

	reply_array(c, 4);
	if (type == 0)
		reply_bulk_cstr(c, n->ip);
	else if (type == 1)
		reply_bulk_cstr(c, host ? n->hostname : "?");
	else
		reply_null(c);
	reply_int(c, n->port);
	reply_bulk(c, n->name, CLUSTER_NAMELEN);
	reply_map(c, extra);
	if (type != 0) {
		reply_bulk_cstr(c, "ip");
		reply_bulk_cstr(c, n->ip);
	}
	if (type != 1 && host) {
		reply_bulk_cstr(c, "hostname");
		reply_bulk_cstr(c, n->hostname);
	}
}

static bool replica_available(const struct cluster_node *r)
{
	return !(atomic_load(&r->flags) & CLUSTER_NODE_FAIL) && cluster_nb(r)->repl_offset != 0;
}

void cmd_cluster_slots(struct client *c)
{
	long ranges = 0;
	struct cluster_node *prev = NULL;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
		struct cluster_node *n = atomic_load(&cluster_slot((uint16_t)j)->owner);

		if (n && n != prev)
			ranges++;
		prev = n;
	}
	reply_array(c, ranges);
	for (unsigned j = 0; j < CLUSTER_SLOTS;) {
		struct cluster_node *n = atomic_load(&cluster_slot((uint16_t)j)->owner);
		unsigned end = j;
		long nrep = 0;

		while (end + 1 < CLUSTER_SLOTS &&
		       atomic_load(&cluster_slot((uint16_t)(end + 1))->owner) == n)
			end++;
		if (n) {
			for (struct cluster_node *r = cluster_nodes_first(); r; r = r->next)
				nrep += r->replicaof == n && replica_available(r);
			reply_array(c, 3 + nrep);
			reply_int(c, j);
			reply_int(c, end);
			reply_slot_node(c, n);
			for (struct cluster_node *r = cluster_nodes_first(); r; r = r->next)
				if (r->replicaof == n && replica_available(r))
					reply_slot_node(c, r);
		}
		j = end + 1;
	}
	cluster_unlock();
}

static void reply_shard_node(struct client *c, const struct cluster_node *n)
{
	long type = config.cluster_preferred_endpoint_type;
	bool slave = atomic_load(&n->flags) & CLUSTER_NODE_SLAVE;
	int64_t off = cluster_nb(n)->repl_offset;
	const char *endpoint = type == 0   ? n->ip
			       : type == 1 ? (n->hostname[0] ? n->hostname : "?")
					   : "";
	long fields = 6 + (n->port != 0) + (n->pport != 0) + (n->hostname[0] != '\0');

	reply_map(c, fields);
	reply_bulk_cstr(c, "id");
	reply_bulk(c, n->name, CLUSTER_NAMELEN);
	if (n->port) {
		reply_bulk_cstr(c, "port");
		reply_int(c, n->port);
	}
	if (n->pport) {
		reply_bulk_cstr(c, "tls-port");
		reply_int(c, n->pport);
	}
	reply_bulk_cstr(c, "ip");
	reply_bulk_cstr(c, n->ip);
	reply_bulk_cstr(c, "endpoint");
	reply_bulk_cstr(c, endpoint);
	if (n->hostname[0]) {
		reply_bulk_cstr(c, "hostname");
		reply_bulk_cstr(c, n->hostname);
	}
	reply_bulk_cstr(c, "role");
	reply_bulk_cstr(c, slave ? "replica" : "master");
	reply_bulk_cstr(c, "replication-offset");
	reply_int(c, off);
	reply_bulk_cstr(c, "health");
	reply_bulk_cstr(c, (atomic_load(&n->flags) & CLUSTER_NODE_FAIL) ? "fail"
			   : slave && off == 0				? "loading"
									: "online");
}

/* Is n the first node of its shard in the list (so each shard is listed once)? */
static bool first_of_shard(const struct cluster_node *n)
{
	for (struct cluster_node *p = cluster_nodes_first(); p != n; p = p->next)
		if (!(atomic_load(&p->flags) & CLUSTER_NODE_HANDSHAKE) &&
		    !memcmp(p->shard_id, n->shard_id, CLUSTER_NAMELEN))
			return false;
	return true;
}

void cmd_cluster_shards(struct client *c)
{
	long nshards = 0;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if (!(atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE) && first_of_shard(n))
			nshards++;
	reply_array(c, nshards);
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		struct cluster_node *master = NULL;
		long members = 0, pairs = 0;

		if ((atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE) || !first_of_shard(n))
			continue;
		for (struct cluster_node *p = n; p; p = p->next) {
			if ((atomic_load(&p->flags) & CLUSTER_NODE_HANDSHAKE) ||
			    memcmp(p->shard_id, n->shard_id, CLUSTER_NAMELEN))
				continue;
			members++;
			if (!master && !(atomic_load(&p->flags) & CLUSTER_NODE_FAIL))
				master = p->replicaof ? p->replicaof : p;
		}
		reply_map(c, 2);
		reply_bulk_cstr(c, "slots");
		for (int pass = 0; pass < 2; pass++) {
			if (pass)
				reply_array(c, pairs * 2);
			for (unsigned j = 0; master && j < CLUSTER_SLOTS;) {
				unsigned end = j;

				if (atomic_load(&cluster_slot((uint16_t)j)->owner) != master) {
					j++;
					continue;
				}
				while (end + 1 < CLUSTER_SLOTS &&
				       atomic_load(&cluster_slot((uint16_t)(end + 1))->owner) ==
					       master)
					end++;
				if (pass) {
					reply_int(c, j);
					reply_int(c, end);
				} else {
					pairs++;
				}
				j = end + 1;
			}
		}
		if (!master)
			reply_array(c, 0);
		reply_bulk_cstr(c, "nodes");
		reply_array(c, members);
		for (struct cluster_node *p = n; p; p = p->next)
			if (!(atomic_load(&p->flags) & CLUSTER_NODE_HANDSHAKE) &&
			    !memcmp(p->shard_id, n->shard_id, CLUSTER_NAMELEN))
				reply_shard_node(c, p);
	}
	cluster_unlock();
}

/* ADDSLOTS, DELSLOTS and their RANGE forms: every slot checked, then all
 * changed. */
static void slots_change(struct client *c, bool del, bool ranges)
{
	unsigned char *seen;
	struct cluster_node *me;

	if (!enabled_or_reply(c))
		return;
	if (ranges && c->argc % 2 == 1) {
		reply_errorf(c, "wrong number of arguments for 'cluster|%s' command",
			     del ? "delslotsrange" : "addslotsrange");
		return;
	}
	if (!ranges)
		for (int j = 2; j < c->argc; j++)
			if (slot_or_reply(c, &c->argv[j]) < 0)
				return;
	seen = xcalloc(CLUSTER_SLOTS, 1);
	cluster_lock();
	me = cluster_myself();
	for (int j = 2; j < c->argc; j += ranges ? 2 : 1) {
		int start = slot_or_reply(c, &c->argv[j]), end;

		if (start < 0)
			goto out;
		end = ranges ? slot_or_reply(c, &c->argv[j + 1]) : start;
		if (end < 0)
			goto out;
		if (start > end) {
			reply_errorf(c, "start slot number %d is greater than end slot number %d",
				     start, end);
			goto out;
		}
		for (int s = start; s <= end; s++) {
			struct cluster_node *o = atomic_load(&cluster_slot((uint16_t)s)->owner);

			if (del && !o) {
				reply_errorf(c, "Slot %d is already unassigned", s);
				goto out;
			}
			if (!del && o) {
				reply_errorf(c, "Slot %d is already busy", s);
				goto out;
			}
			if (seen[s]++ == 1) {
				reply_errorf(c, "Slot %d specified multiple times", s);
				goto out;
			}
		}
	}
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++) {
		if (!seen[s])
			continue;
		cluster_slot_set_importing((uint16_t)s, NULL);
		if (del)
			cluster_slot_set_migrating((uint16_t)s, NULL);
		cluster_slot_set_owner((uint16_t)s, del ? NULL : me);
	}
	changed(false);
	reply_ok(c);
out:
	cluster_unlock();
	xfree(seen);
}

void cmd_cluster_addslots(struct client *c)
{
	slots_change(c, false, false);
}

void cmd_cluster_delslots(struct client *c)
{
	slots_change(c, true, false);
}

void cmd_cluster_addslotsrange(struct client *c)
{
	slots_change(c, false, true);
}

void cmd_cluster_delslotsrange(struct client *c)
{
	slots_change(c, true, true);
}

void cmd_cluster_flushslots(struct client *c)
{
	struct cluster_node *me;

	if (!enabled_or_reply(c))
		return;
	if (db_size(0) != 0) {
		reply_error(c, "DB must be empty to perform CLUSTER FLUSHSLOTS.");
		return;
	}
	cluster_lock();
	me = cluster_myself();
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		if (atomic_load(&cluster_slot((uint16_t)s)->owner) == me)
			cluster_slot_set_owner((uint16_t)s, NULL);
	changed(false);
	cluster_unlock();
	reply_ok(c);
}

static void reply_setslot_syntax(struct client *c)
{
	reply_error(c, "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
}

void cmd_cluster_setslot(struct client *c)
{
	struct cluster_node *me, *n = NULL, *owner;
	const char *action;
	uint64_t keys = 0;
	bool lost = false, epoch_bumped = false;
	int slot;

	if (!enabled_or_reply(c))
		return;
	if (atomic_load(&cluster_myself()->flags) & CLUSTER_NODE_SLAVE) {
		reply_error(c, "Please use SETSLOT only with masters.");
		return;
	}
	slot = slot_or_reply(c, &c->argv[2]);
	if (slot < 0)
		return;
	action = c->argv[3].p;
	/* Counted before the lock (shard locks come first); a key written in
	 * between is the data plane's to redirect. */
	if (!strcasecmp(action, "node") && c->argc == 5)
		keys = cluster_slot_keys_count((uint16_t)slot);
	cluster_lock();
	me = cluster_myself();
	owner = atomic_load(&cluster_slot((uint16_t)slot)->owner);
	if ((!strcasecmp(action, "migrating") || !strcasecmp(action, "importing") ||
	     !strcasecmp(action, "node")) &&
	    c->argc == 5) {
		bool migrating = !strcasecmp(action, "migrating");
		bool importing = !strcasecmp(action, "importing");

		if (migrating && owner != me) {
			reply_errorf(c, "I'm not the owner of hash slot %u", slot);
			goto out;
		}
		if (importing && owner == me) {
			reply_errorf(c, "I'm already the owner of hash slot %u", slot);
			goto out;
		}
		n = lookup_arg(&c->argv[4]);
		if (!n) {
			if (migrating || importing)
				reply_errorf(c, "I don't know about node %s", c->argv[4].p);
			else
				reply_errorf(c, "Unknown node %s", c->argv[4].p);
			goto out;
		}
		if (atomic_load(&n->flags) & CLUSTER_NODE_SLAVE) {
			reply_error(c, "Target node is not a master");
			goto out;
		}
		if (migrating) {
			cluster_slot_set_migrating((uint16_t)slot, n);
		} else if (importing) {
			cluster_slot_set_importing((uint16_t)slot, n);
		} else {
			if (owner == me && n != me && keys) {
				reply_errorf(c,
					     "Can't assign hashslot %d to a different node while I "
					     "still hold keys for this hash slot.",
					     slot);
				goto out;
			}
			if (!keys && atomic_load(&cluster_slot((uint16_t)slot)->migrating_to))
				cluster_slot_set_migrating((uint16_t)slot, NULL);
			lost = owner == me && n != me;
			cluster_slot_set_owner((uint16_t)slot, n);
			if (n == me && atomic_load(&cluster_slot((uint16_t)slot)->importing_from)) {
				/* A slot moved by hand: a new epoch, so that the
				 * cluster takes our word for it. */
				epoch_bumped = cluster_bump_epoch();
				if (epoch_bumped)
					log_notice("configEpoch updated after importing slot %d",
						   slot);
				cluster_slot_set_importing((uint16_t)slot, NULL);
			}
		}
	} else if (!strcasecmp(action, "stable") && c->argc == 4) {
		cluster_slot_set_importing((uint16_t)slot, NULL);
		cluster_slot_set_migrating((uint16_t)slot, NULL);
	} else {
		reply_setslot_syntax(c);
		goto out;
	}
	changed(epoch_bumped);
	reply_ok(c);
out:
	cluster_unlock();
	/* Keys written to the slot after the count, now another node's. */
	if (lost)
		cluster_slot_keys_delete((uint16_t)slot);
}

void cmd_cluster_bumpepoch(struct client *c)
{
	bool bumped;
	unsigned long long epoch;
	char buf[64];

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	bumped = cluster_bump_epoch();
	epoch = cluster_myself()->config_epoch;
	if (bumped)
		changed(true);
	cluster_unlock();
	snprintf(buf, sizeof(buf), "%s %llu", bumped ? "BUMPED" : "STILL", epoch);
	reply_status(c, buf);
}

void cmd_cluster_saveconfig(struct client *c)
{
	int ret;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	ret = cluster_config_save(true);
	cluster_unlock();
	if (ret < 0)
		reply_errorf(c, "error saving the cluster node config: %s", strerror(-ret));
	else
		reply_ok(c);
}

void cmd_cluster_meet(struct client *c)
{
	long long port, cport;
	int ret;

	if (!enabled_or_reply(c))
		return;
	if (c->argc > 5) {
		reply_errorf(c,
			     "unknown subcommand or wrong number of arguments for '%.128s'. Try "
			     "CLUSTER HELP.",
			     c->argv[1].p);
		return;
	}
	if (!str_to_ll(c->argv[3].p, c->argv[3].len, &port)) {
		reply_errorf(c, "Invalid base port specified: %s", c->argv[3].p);
		return;
	}
	if (c->argc == 5) {
		if (!str_to_ll(c->argv[4].p, c->argv[4].len, &cport)) {
			reply_errorf(c, "Invalid bus port specified: %s", c->argv[4].p);
			return;
		}
	} else {
		cport = port + CLUSTER_PORT_INCR;
	}
	cluster_lock();
	ret = (port < 0 || port > 65535 || cport < 0 || cport > 65535)
		      ? -EINVAL
		      : cluster_start_handshake(c->argv[2].p, (int)port, (int)cport);
	cluster_unlock();
	if (ret == -EINVAL)
		reply_errorf(c, "Invalid node address specified: %s:%s", c->argv[2].p,
			     c->argv[3].p);
	else
		reply_ok(c);
}

void cmd_cluster_forget(struct client *c)
{
	struct cluster_node *n, *me;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	me = cluster_myself();
	n = lookup_arg(&c->argv[2]);
	if (!n) {
		if (cluster_blacklist_has(c->argv[2].p, c->argv[2].len))
			reply_ok(c); /* already forgotten, maybe by gossip */
		else
			reply_errorf(c, "Unknown node %s", c->argv[2].p);
	} else if (n == me) {
		reply_error(c, "I tried hard but I can't forget myself...");
	} else if ((atomic_load(&me->flags) & CLUSTER_NODE_SLAVE) && me->replicaof == n) {
		reply_error(c, "Can't forget my master!");
	} else {
		cluster_blacklist_add(n->name);
		cluster_ctl_node_delete(n);
		changed(false);
		reply_ok(c);
	}
	cluster_unlock();
}

void cmd_cluster_count_failure_reports(struct client *c)
{
	struct cluster_node *n;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	n = lookup_arg(&c->argv[2]);
	if (!n)
		reply_errorf(c, "Unknown node %s", c->argv[2].p);
	else
		reply_int(c, cluster_fail_reports_count(n));
	cluster_unlock();
}

void cmd_cluster_set_config_epoch(struct client *c)
{
	struct cluster_node *me;
	long long epoch;

	if (!enabled_or_reply(c))
		return;
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &epoch)) {
		reply_error(c, ERR_NOT_INT);
		return;
	}
	cluster_lock();
	me = cluster_myself();
	if (epoch < 0) {
		reply_errorf(c, "Invalid config epoch specified: %lld", epoch);
	} else if (cluster_node_count() > 1) {
		reply_error(c,
			    "The user can assign a config epoch only when the node does not know "
			    "any other node.");
	} else if (me->config_epoch != 0) {
		reply_error(c, "Node config epoch is already non-zero");
	} else {
		me->config_epoch = (uint64_t)epoch;
		log_notice("configEpoch set to %llu via CLUSTER SET-CONFIG-EPOCH",
			   (unsigned long long)epoch);
		if (cluster_ctl.current_epoch < (uint64_t)epoch)
			cluster_ctl.current_epoch = (uint64_t)epoch;
		changed(true);
		reply_ok(c);
	}
	cluster_unlock();
}

void cmd_cluster_reset(struct client *c)
{
	bool hard = false;

	if (!enabled_or_reply(c))
		return;
	if (c->argc > 3) {
		reply_errorf(c,
			     "unknown subcommand or wrong number of arguments for '%.128s'. Try "
			     "CLUSTER HELP.",
			     c->argv[1].p);
		return;
	}
	if (c->argc == 3) {
		if (!strcasecmp(c->argv[2].p, "hard")) {
			hard = true;
		} else if (strcasecmp(c->argv[2].p, "soft")) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (cluster_node_is_master(cluster_myself()) && db_size(0) != 0) {
		reply_error(c, "CLUSTER RESET can't be called with master nodes containing keys");
		return;
	}
	cluster_lock();
	cluster_reset(hard);
	cluster_unlock();
	reply_ok(c);
}

void cmd_cluster_links(struct client *c)
{
	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	cluster_reply_links(c);
	cluster_unlock();
}

static void replicas(struct client *c)
{
	struct cluster_node *n;
	long count = 0;

	if (!enabled_or_reply(c))
		return;
	cluster_lock();
	n = lookup_arg(&c->argv[2]);
	if (!n) {
		reply_errorf(c, "Unknown node %s", c->argv[2].p);
	} else if (atomic_load(&n->flags) & CLUSTER_NODE_SLAVE) {
		reply_error(c, "The specified node is not a master");
	} else {
		for (struct cluster_node *r = cluster_nodes_first(); r; r = r->next)
			count += r->replicaof == n;
		reply_array(c, count);
		for (struct cluster_node *r = cluster_nodes_first(); r; r = r->next) {
			struct text t = { 0 };

			if (r->replicaof != n)
				continue;
			cluster_describe_node(&t, r, false);
			reply_bulk(c, t.p, t.len);
			xfree(t.p);
		}
	}
	cluster_unlock();
}

void cmd_cluster_replicas(struct client *c)
{
	replicas(c);
}

void cmd_cluster_slaves(struct client *c)
{
	replicas(c);
}
