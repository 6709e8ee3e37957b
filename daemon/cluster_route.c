// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_route: the redirect decision (see cluster_route.h). One pass over
 * the keys of the command, or of every command of an EXEC's queue, as
 * Redis's getNodeByQuery walks them: the first key's slot decides the node,
 * every other key must be in that slot, and a slot being migrated or
 * imported counts which keys are here.
 */
#include "cluster_route.h"

#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "command_meta.h"
#include "commands.h"
#include "config.h"
#include "mem.h"
#include "multi.h"
#include "store.h"

enum redir {
	REDIR_NONE,
	REDIR_CROSS_SLOT,
	REDIR_UNSTABLE,
	REDIR_ASK,
	REDIR_MOVED,
	REDIR_DOWN_STATE,
	REDIR_DOWN_RO_STATE,
	REDIR_DOWN_UNBOUND,
};

/* What the walk over the keys found so far. */
struct query {
	const struct arg *first; /* the first key, or NULL */
	unsigned slot;
	struct cluster_node *node; /* the first key's slot's owner */
	bool migrating, importing, multiple_keys, pubsubshard;
	unsigned missing, existing;
};

/* Is key (database 0, cluster mode's only one) here and alive? Without
 * touching it, as Redis's LOOKUP_NOTOUCH | NOSTATS | NONOTIFY | NOEXPIRE. */
static bool key_present(const struct arg *k, unsigned slot)
{
	struct entry *e;
	bool here;

	store_shard_lock(0, slot % STORE_SHARDS);
	e = db_peek(0, k->p, k->len);
	here = e && !entry_expired(e, store_now());
	store_shard_unlock(0, slot % STORE_SHARDS);
	return here;
}

/* The indexes of cmd's keys (shard channels too) in argv, into keys (argc
 * of them at most); the count, or a negative errno for arguments the specs
 * cannot parse (the handler refuses them: no key to route by). */
static int key_indexes(const struct command *cmd, int argc, const struct arg *argv, int *keys)
{
	int n = 0;

	if (cmd->key_plan != KEYS_FIXED) {
		n = command_key_indexes(cmd, argc, argv, keys, NULL, argc);
		/* MIGRATE ... "" ... KEYS k...: the empty string is no key
		 * (Redis's migrateGetKeys). */
		if (cmd->fn == cmd_migrate && n > 1 && keys[0] == 3 && !argv[3].len) {
			memmove(keys, keys + 1, sizeof(*keys) * (size_t)(n - 1));
			n--;
		}
		return n;
	}
	for (unsigned r = 0; r < cmd->nranges; r++) {
		const struct key_range *kr = &cmd->ranges[r];
		int last = kr->last < 0 ? argc + kr->last : kr->last;

		if (last >= argc)
			last = argc - 1;
		for (int i = kr->first; i <= last && n < argc; i += kr->step)
			keys[n++] = i;
	}
	return n;
}

/* One command's keys into q: REDIR_NONE, or the error that ends the walk. */
static enum redir query_command(struct query *q, const struct command *cmd, int argc,
				const struct arg *argv, bool remember)
{
	int stack[16], *keys = argc <= 16 ? stack : xmalloc(sizeof(int) * (size_t)argc);
	enum redir r = REDIR_NONE;
	int n;

	/* Only sharded pub/sub (SPUBLISH, SSUBSCRIBE): channels are served by
	 * the owner until the slot has moved, whether they are here or not. */
	if (cmd->fn == cmd_spublish || cmd->fn == cmd_ssubscribe)
		q->pubsubshard = true;
	n = key_indexes(cmd, argc, argv, keys);
	for (int j = 0; j < n && r == REDIR_NONE; j++) {
		const struct arg *k = &argv[keys[j]];
		/* The lockset will hash the first key again: remembered, once. */
		unsigned slot = remember && !q->first ? key_slot_remember(k->p, k->len)
						      : key_slot(k->p, k->len);

		if (!q->first) {
			const struct cluster_slot *s = cluster_slot((uint16_t)slot);

			q->first = k;
			q->slot = slot;
			q->node = atomic_load_explicit(&s->owner, memory_order_acquire);
			if (!q->node) {
				r = REDIR_DOWN_UNBOUND;
				break;
			}
			if (q->node == cluster_myself() &&
			    atomic_load_explicit(&s->migrating_to, memory_order_acquire))
				q->migrating = true;
			else if (atomic_load_explicit(&s->importing_from, memory_order_acquire))
				q->importing = true;
		} else {
			if (slot != q->slot) {
				r = REDIR_CROSS_SLOT;
				break;
			}
			if (q->importing && !q->multiple_keys &&
			    (k->len != q->first->len || memcmp(k->p, q->first->p, k->len)))
				q->multiple_keys = true;
		}
		if ((q->migrating || q->importing) && !q->pubsubshard) {
			if (key_present(k, slot))
				q->existing++;
			else
				q->missing++;
		}
	}
	if (keys != stack)
		xfree(keys);
	return r;
}

/* Redis's getNodeByQuery: the node to serve, NULL for an error; *why says
 * which redirect or error. */
static struct cluster_node *query_node(const struct client *c, struct command *cmd, int argc,
				       const struct arg *argv, struct query *q, enum redir *why)
{
	struct cluster_node *me = cluster_myself(), *primary;
	bool exec = cmd->fn == cmd_exec, write;

	*why = REDIR_NONE;
	if (exec) {
		/* EXEC without MULTI only fails. */
		if (!c->in_multi)
			return me;
		for (int i = 0; i < c->nqueued && *why == REDIR_NONE; i++)
			*why = query_command(q, c->queue[i].cmd, c->queue[i].argc, c->queue[i].argv,
					     false);
	} else {
		*why = query_command(q, cmd, argc, argv, c->argv == argv);
	}
	if (*why != REDIR_NONE)
		return NULL;
	/* No key at all: served anywhere. */
	if (!q->node)
		return me;
	if (!cluster_state_ok()) {
		if (q->pubsubshard) {
			if (!config.cluster_allow_pubsubshard_when_down) {
				*why = REDIR_DOWN_STATE;
				return NULL;
			}
		} else if (!config.cluster_allow_reads_when_down) {
			*why = REDIR_DOWN_STATE;
			return NULL;
		} else if (cmd->flags & CMD_WRITE) {
			*why = REDIR_DOWN_RO_STATE;
			return NULL;
		}
	}
	if (q->migrating && q->missing) {
		/* Some keys here, some gone: neither node has them all. */
		if (q->existing) {
			*why = REDIR_UNSTABLE;
			return NULL;
		}
		*why = REDIR_ASK;
		return atomic_load_explicit(&cluster_slot((uint16_t)q->slot)->migrating_to,
					    memory_order_acquire);
	}
	/* MIGRATE works in the local node's context while the slot is open. */
	if ((q->migrating || q->importing) && cmd->fn == cmd_migrate)
		return me;
	if (q->importing && ((c->flags & CLIENT_ASKING) || (cmd->flags & CMD_ASKING))) {
		if (q->multiple_keys && q->missing) {
			*why = REDIR_UNSTABLE;
			return NULL;
		}
		return me;
	}
	/* A replica serves READONLY clients the reads of its primary's slots. */
	write = (cmd->flags & CMD_WRITE) || (exec && multi_queue_any(c, CMD_WRITE, true));
	primary = me ? __atomic_load_n(&me->replicaof, __ATOMIC_ACQUIRE) : NULL;
	if (((c->flags & CLIENT_READONLY) || q->pubsubshard) && !write && me &&
	    (atomic_load_explicit(&me->flags, memory_order_relaxed) & CLUSTER_NODE_SLAVE) &&
	    primary == q->node)
		return me;
	if (q->node != me)
		*why = REDIR_MOVED;
	return q->node;
}

/* Redis's clusterRedirectClient's text (the error, its '-' included). */
static void redirect_text(const struct cluster_node *n, unsigned slot, enum redir why, char *buf,
			  size_t size)
{
	char where[CLUSTER_IPLEN + 300];

	switch (why) {
	case REDIR_CROSS_SLOT:
		snprintf(buf, size, "-CROSSSLOT Keys in request don't hash to the same slot");
		break;
	case REDIR_UNSTABLE:
		snprintf(buf, size, "-TRYAGAIN Multiple keys request during rehashing of slot");
		break;
	case REDIR_DOWN_STATE:
		snprintf(buf, size, "-CLUSTERDOWN The cluster is down");
		break;
	case REDIR_DOWN_RO_STATE:
		snprintf(buf, size,
			 "-CLUSTERDOWN The cluster is down and only accepts read commands");
		break;
	case REDIR_ASK:
	case REDIR_MOVED:
		if (n) {
			cluster_node_endpoint(n, where, sizeof(where));
			snprintf(buf, size, "-%s %u %s", why == REDIR_ASK ? "ASK" : "MOVED", slot,
				 where);
			break;
		}
		/* An ASK to a slot with no target left (SETSLOT STABLE
		 * meanwhile) answers as a slot nobody serves. */
		/* fallthrough */
	default:
		snprintf(buf, size, "-CLUSTERDOWN Hash slot not served");
		break;
	}
}

/* The decision for cmd run by c with argv: true to serve it here; else the
 * error in buf. */
static bool route(struct client *c, struct command *cmd, char *buf, size_t size)
{
	struct query q = { 0 };
	struct cluster_node *n;
	enum redir why;

	/* Neither a key spec nor movable keys (nor EXEC): nothing to route. */
	c->cluster_slot = -1;
	if (!cmd->specs[0].flags && !cmd->movable && cmd->fn != cmd_exec)
		return true;
	n = query_node(c, cmd, c->argc, c->argv, &q, &why);
	if (n && n == cluster_myself()) {
		c->cluster_slot = q.node ? (int)q.slot : -1;
		return true;
	}
	redirect_text(n, q.slot, why, buf, size);
	return false;
}

/* The common case, a command of one key at a fixed place (GET, SET,
 * INCR ...) whose slot this node serves, stable, in a healthy cluster:
 * decided in a few loads, the slot remembered for the lockset. Anything
 * else goes the whole way (the slot is then looked up in the memo). */
static inline bool served_fast(struct client *c, const struct command *cmd)
{
	const struct key_range *r = &cmd->ranges[0];
	const struct cluster_slot *s;
	unsigned slot;

	if (cmd->key_plan != KEYS_FIXED || cmd->nranges != 1 || r->first != r->last ||
	    r->first <= 0 || r->first >= c->argc)
		return false;
	slot = key_slot_remember(c->argv[r->first].p, c->argv[r->first].len);
	s = cluster_slot((uint16_t)slot);
	c->cluster_slot = (int)slot;
	return atomic_load_explicit(&s->owner, memory_order_acquire) == cluster_myself() &&
	       !atomic_load_explicit(&s->migrating_to, memory_order_relaxed) &&
	       !atomic_load_explicit(&s->importing_from, memory_order_relaxed) &&
	       cluster_state_ok();
}

bool cluster_route(struct client *c, struct command *cmd)
{
	char err[CLUSTER_IPLEN + 400];

	if (served_fast(c, cmd) || route(c, cmd, err, sizeof(err)))
		return true;
	if (cmd->fn == cmd_exec) {
		multi_reset(c);
		multi_unwatch(c);
	} else if (c->in_multi) {
		c->multi_error = true;
	}
	reply_error(c, err);
	return false;
}

bool cluster_route_udp(struct client *c, char *buf, size_t size)
{
	struct command *cmd = command_lookup(c->argv[0].p, c->argv[0].len);
	bool here = !cmd || route(c, cmd, buf, size);

	/* No dispatcher to forget the remembered slot after the command. */
	key_slot_forget();
	return here;
}

bool cluster_route_blocked(const struct client *c, const char *key, size_t len, char *buf,
			   size_t size)
{
	struct cluster_node *me = cluster_myself(), *owner, *primary;
	unsigned slot = key_slot(key, len);
	const struct cluster_slot *s = cluster_slot((uint16_t)slot);

	/* Down: a write may never come to serve it, even if reads are allowed. */
	if (!cluster_state_ok()) {
		redirect_text(NULL, 0, REDIR_DOWN_STATE, buf, size);
		return false;
	}
	owner = atomic_load_explicit(&s->owner, memory_order_acquire);
	primary = me ? __atomic_load_n(&me->replicaof, __ATOMIC_ACQUIRE) : NULL;
	/* A READONLY client of a replica may wait on its primary's slot (its
	 * blocked commands are reads here: none writes on a replica). */
	if ((c->flags & CLIENT_READONLY) && me &&
	    (atomic_load_explicit(&me->flags, memory_order_relaxed) & CLUSTER_NODE_SLAVE) &&
	    primary == owner)
		owner = me;
	if (owner == me || atomic_load_explicit(&s->importing_from, memory_order_acquire))
		return true;
	redirect_text(owner, slot, owner ? REDIR_MOVED : REDIR_DOWN_UNBOUND, buf, size);
	return false;
}

bool cluster_route_script(const struct client *caller, struct command *cmd, int argc,
			  const struct arg *argv, int *slot, bool cross_slot_ok, char *buf,
			  size_t size)
{
	struct query q = { 0 };
	struct cluster_node *n;
	enum redir why;

	if (!cmd->specs[0].flags && !cmd->movable)
		return true;
	/* The caller's ASKING and READONLY apply to its script's calls. */
	n = query_node(caller, cmd, argc, argv, &q, &why);
	if (!n || n != cluster_myself()) {
		switch (why) {
		case REDIR_DOWN_RO_STATE:
			snprintf(buf, size,
				 "Script attempted to execute a write command while the "
				 "cluster is down and readonly");
			break;
		case REDIR_DOWN_STATE:
			snprintf(buf, size,
				 "Script attempted to execute a command while the cluster is down");
			break;
		case REDIR_CROSS_SLOT:
			snprintf(buf, size,
				 "Command '%s' in script attempted to access keys that don't hash "
				 "to the same slot",
				 cmd->name);
			break;
		case REDIR_UNSTABLE:
			snprintf(buf, size,
				 "Unable to execute command '%s' in script because undeclared keys "
				 "were accessed during rehashing of the slot",
				 cmd->name);
			break;
		case REDIR_DOWN_UNBOUND:
			snprintf(buf, size, "Script attempted to access a slot not served");
			break;
		default:
			snprintf(buf, size,
				 "Script attempted to access a non local key in a cluster node");
			break;
		}
		return false;
	}
	/* Undeclared keys must share the declared ones' slot, unless the
	 * script allows cross-slot keys (or is a legacy EVAL script). */
	if (q.node && !cross_slot_ok) {
		if (*slot == -1) {
			*slot = (int)q.slot;
		} else if (*slot != (int)q.slot) {
			snprintf(buf, size,
				 "Script attempted to access keys that do not hash to the same "
				 "slot");
			return false;
		}
	}
	return true;
}
