// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_state: the control plane's view of the cluster, beyond the node
 * list and slot table of cluster.c: the nodes' bus state, failure reports
 * and the PFAIL -> FAIL decision, config epochs (bumps, collisions, the
 * greater epoch winning a slot), cluster_state, handshakes begun, RESET.
 * Everything under cluster_lock(); the bus (cluster_bus.c) and the CLUSTER
 * commands call in.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "util.h"

struct cluster_ctl cluster_ctl;

static int64_t first_state_call, among_minority_time;

/* CLUSTER FORGET's nodes, not re-added for a minute. */
struct blacklisted {
	char name[CLUSTER_NAMELEN];
	int64_t expire;
};
static struct blacklisted *blacklist;
static unsigned nblacklist;

uint64_t cluster_rand(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint64_t)now_us() * 0x9e3779b97f4a7c15ull;
	return r;
}

struct cluster_node *cluster_ctl_node_new(const char *name, uint32_t flags)
{
	struct cluster_node *n = cluster_node_create(name, flags);
	char sid[CLUSTER_NAMELEN + 1];
	static const char hex[] = "0123456789abcdef";

	if (!n)
		return NULL;
	n->bus = xcalloc(1, sizeof(struct cluster_node_bus));
	cluster_nb(n)->ctime = now_ms();
	for (int i = 0; i < CLUSTER_NAMELEN; i++)
		sid[i] = hex[cluster_rand() & 15];
	sid[CLUSTER_NAMELEN] = '\0';
	memcpy(n->shard_id, sid, sizeof(sid));
	return n;
}

unsigned cluster_node_count(void)
{
	unsigned n = 0;

	for (struct cluster_node *p = cluster_nodes_first(); p; p = p->next)
		n++;
	return n;
}

unsigned cluster_node_slots(const struct cluster_node *n)
{
	unsigned c = 0;

	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		c += atomic_load_explicit(&cluster_slot((uint16_t)s)->owner,
					  memory_order_relaxed) == n;
	return c;
}

bool cluster_node_is_master(const struct cluster_node *n)
{
	return atomic_load(&n->flags) & CLUSTER_NODE_MASTER;
}

uint64_t cluster_node_epoch(const struct cluster_node *n)
{
	if ((atomic_load(&n->flags) & CLUSTER_NODE_SLAVE) && n->replicaof)
		return n->replicaof->config_epoch;
	return n->config_epoch;
}

void cluster_node_slots_bitmap(const struct cluster_node *n, unsigned char *bits)
{
	memset(bits, 0, (CLUSTER_SLOTS / 8));
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		if (atomic_load_explicit(&cluster_slot((uint16_t)s)->owner, memory_order_relaxed) ==
		    n)
			bits[s >> 3] |= (unsigned char)(1 << (s & 7));
}

void cluster_update_myself_announced(void)
{
	struct cluster_node *me = cluster_myself();

	if (config.cluster_announce_ip[0])
		snprintf(me->ip, sizeof(me->ip), "%s", config.cluster_announce_ip);
	me->port = (uint16_t)(config.cluster_announce_port ? config.cluster_announce_port
							   : config.port);
	if (config.cluster_announce_bus_port)
		me->cport = (uint16_t)config.cluster_announce_bus_port;
	else if (config.cluster_port)
		me->cport = (uint16_t)config.cluster_port;
	else
		me->cport = (uint16_t)(config.port + CLUSTER_PORT_INCR);
	snprintf(me->hostname, sizeof(me->hostname), "%s", config.cluster_announce_hostname);
	snprintf(cluster_nb(me)->human_nodename, sizeof(cluster_nb(me)->human_nodename), "%s",
		 config.cluster_announce_human_nodename);
}

static void reports_clean(struct cluster_node *n)
{
	struct cluster_node_bus *nb = cluster_nb(n);
	int64_t maxtime = config.cluster_node_timeout * 2, now = now_ms();

	for (unsigned i = 0; i < nb->nreports;)
		if (now - nb->reports[i].time > maxtime)
			nb->reports[i] = nb->reports[--nb->nreports];
		else
			i++;
}

unsigned cluster_fail_reports_count(struct cluster_node *n)
{
	reports_clean(n);
	return cluster_nb(n)->nreports;
}

void cluster_report_add(struct cluster_node *n, struct cluster_node *from)
{
	struct cluster_node_bus *nb = cluster_nb(n);

	for (unsigned i = 0; i < nb->nreports; i++)
		if (nb->reports[i].from == from) {
			nb->reports[i].time = now_ms();
			return;
		}
	nb->reports = xrealloc(nb->reports, (nb->nreports + 1) * sizeof(*nb->reports));
	nb->reports[nb->nreports].from = from;
	nb->reports[nb->nreports++].time = now_ms();
}

void cluster_report_del(struct cluster_node *n, struct cluster_node *from)
{
	struct cluster_node_bus *nb = cluster_nb(n);

	for (unsigned i = 0; i < nb->nreports; i++)
		if (nb->reports[i].from == from) {
			nb->reports[i] = nb->reports[--nb->nreports];
			return;
		}
}

static uint64_t max_epoch(void)
{
	uint64_t max = 0;

	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if (n->config_epoch > max)
			max = n->config_epoch;
	return max > cluster_ctl.current_epoch ? max : cluster_ctl.current_epoch;
}

bool cluster_bump_epoch(void)
{
	struct cluster_node *me = cluster_myself();
	uint64_t max = max_epoch();

	if (me->config_epoch == 0 || me->config_epoch != max) {
		cluster_ctl.current_epoch++;
		me->config_epoch = cluster_ctl.current_epoch;
		cluster_ctl.todo_save = true;
		log_notice("New configEpoch set to %llu", (unsigned long long)me->config_epoch);
		return true;
	}
	return false;
}

void cluster_epoch_collision(struct cluster_node *sender)
{
	struct cluster_node *me = cluster_myself();

	if (sender->config_epoch != me->config_epoch || !cluster_node_is_master(sender) ||
	    !cluster_node_is_master(me))
		return;
	/* The node with the smaller id keeps its epoch. */
	if (memcmp(sender->name, me->name, CLUSTER_NAMELEN) <= 0)
		return;
	cluster_ctl.current_epoch++;
	me->config_epoch = cluster_ctl.current_epoch;
	cluster_ctl.todo_save = true;
	log_verbose("WARNING: configEpoch collision with node %.40s. configEpoch set to %llu",
		    sender->name, (unsigned long long)me->config_epoch);
}

/* Redis's clusterUpdateSlotsConfigWith: sender, at epoch, claims slots. */
void cluster_update_slots_with(struct cluster_node *sender, uint64_t epoch,
			       const unsigned char *bits)
{
	struct cluster_node *me = cluster_myself();
	unsigned lost = 0;

	if (sender == me)
		return;
	for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
		const struct cluster_slot *s = cluster_slot((uint16_t)j);
		struct cluster_node *owner = atomic_load(&s->owner);

		if (!(bits[j >> 3] & (1 << (j & 7))) || owner == sender)
			continue;
		/* A slot we import is ours to decide (SETSLOT NODE). */
		if (atomic_load(&s->importing_from))
			continue;
		if (owner && owner->config_epoch >= epoch)
			continue;
		if (owner == me) {
			cluster_ctl.dirty_slots[j >> 3] |= (unsigned char)(1 << (j & 7));
			cluster_slot_set_migrating((uint16_t)j, NULL);
			lost++;
		}
		cluster_slot_set_owner((uint16_t)j, sender);
	}
	if (lost)
		log_notice("Configuration change detected: %u of my slots now served by %.40s",
			   lost, sender->name);
	cluster_ctl.todo_save = cluster_ctl.todo_state = true;
}

void cluster_update_state(void)
{
	struct cluster_node *me = cluster_myself();
	int64_t now = now_ms(), rejoin;
	bool ok = true, was = cluster_state_ok();
	int size = 0, reachable = 0;

	cluster_ctl.todo_state = false;
	if (!first_state_call)
		first_state_call = now;
	if (cluster_node_is_master(me) && !was && now - first_state_call < 2000)
		return;
	if (config.cluster_require_full_coverage)
		for (unsigned j = 0; j < CLUSTER_SLOTS && ok; j++) {
			struct cluster_node *o = atomic_load(&cluster_slot((uint16_t)j)->owner);

			if (!o || (atomic_load(&o->flags) & CLUSTER_NODE_FAIL))
				ok = false;
		}
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if (cluster_node_is_master(n) && cluster_node_slots(n)) {
			size++;
			if (!(atomic_load(&n->flags) & (CLUSTER_NODE_FAIL | CLUSTER_NODE_PFAIL)))
				reachable++;
		}
	cluster_ctl.size = size;
	if (reachable < size / 2 + 1) {
		ok = false;
		among_minority_time = now;
	}
	if (ok == was)
		return;
	rejoin = config.cluster_node_timeout;
	rejoin = rejoin > 5000 ? 5000 : rejoin < 500 ? 500 : rejoin;
	if (ok && cluster_node_is_master(me) && among_minority_time &&
	    now - among_minority_time < rejoin)
		return;
	log_notice("Cluster state changed: %s", ok ? "ok" : "fail");
	cluster_set_state_ok(ok);
}

void cluster_mark_failing_if_needed(struct cluster_node *n)
{
	unsigned quorum = (unsigned)cluster_ctl.size / 2 + 1, failures;
	uint32_t f = atomic_load(&n->flags);

	if (!(f & CLUSTER_NODE_PFAIL) || (f & CLUSTER_NODE_FAIL))
		return;
	failures = cluster_fail_reports_count(n);
	if (cluster_node_is_master(cluster_myself()))
		failures++;
	if (failures < quorum)
		return;
	log_notice("Marking node %.40s as failing (quorum reached).", n->name);
	atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_PFAIL);
	atomic_fetch_or(&n->flags, CLUSTER_NODE_FAIL);
	cluster_nb(n)->fail_time = now_ms();
	cluster_bus_send_fail(n);
	cluster_ctl.todo_save = cluster_ctl.todo_state = true;
}

void cluster_clear_failure_if_needed(struct cluster_node *n)
{
	int64_t now = now_ms();

	if (!cluster_node_is_master(n) || !cluster_node_slots(n) ||
	    now - cluster_nb(n)->fail_time > config.cluster_node_timeout * 2) {
		log_notice("Clear FAIL state for node %.40s", n->name);
		atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_FAIL);
		cluster_ctl.todo_save = cluster_ctl.todo_state = true;
	}
}

static int normalize_ip(const char *ip, char *out, size_t size)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, ip, &a4) == 1)
		return inet_ntop(AF_INET, &a4, out, (socklen_t)size) ? 0 : -EINVAL;
	if (inet_pton(AF_INET6, ip, &a6) == 1)
		return inet_ntop(AF_INET6, &a6, out, (socklen_t)size) ? 0 : -EINVAL;
	return -EINVAL;
}

int cluster_start_handshake(const char *ip, int port, int cport)
{
	char norm[CLUSTER_IPLEN];
	struct cluster_node *n;

	if (normalize_ip(ip, norm, sizeof(norm)) < 0 || port <= 0 || port > 65535 || cport <= 0 ||
	    cport > 65535)
		return -EINVAL;
	for (n = cluster_nodes_first(); n; n = n->next)
		if ((atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE) && !strcmp(n->ip, norm) &&
		    n->port == port && n->cport == cport)
			return -EAGAIN;
	n = cluster_ctl_node_new(NULL, CLUSTER_NODE_HANDSHAKE | CLUSTER_NODE_MEET);
	if (!n)
		return -ENOMEM;
	snprintf(n->ip, sizeof(n->ip), "%s", norm);
	n->port = (uint16_t)port;
	n->cport = (uint16_t)cport;
	cluster_bus_wake();
	return 0;
}

void cluster_reset(bool hard)
{
	struct cluster_node *me = cluster_myself(), *next;

	for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
		cluster_slot_set_migrating((uint16_t)j, NULL);
		cluster_slot_set_importing((uint16_t)j, NULL);
		cluster_slot_set_owner((uint16_t)j, NULL);
	}
	for (struct cluster_node *n = cluster_nodes_first(); n; n = next) {
		next = n->next;
		if (n != me)
			cluster_ctl_node_delete(n);
	}
	cluster_blacklist_clear();
	if (hard) {
		static const char hex[] = "0123456789abcdef";

		cluster_ctl.current_epoch = 0;
		cluster_ctl.last_vote_epoch = 0;
		me->config_epoch = 0;
		log_notice("configEpoch set to 0 via CLUSTER RESET HARD");
		for (int i = 0; i < CLUSTER_NAMELEN; i++) {
			me->name[i] = hex[cluster_rand() & 15];
			me->shard_id[i] = hex[cluster_rand() & 15];
		}
		log_notice("Node hard reset, now I'm %.40s", me->name);
	}
	cluster_update_state();
	if (cluster_config_save(true) < 0)
		log_warning("Fatal: can't update cluster config file.");
}

void cluster_blacklist_add(const char *name)
{
	int64_t now = now_ms();

	for (unsigned i = 0; i < nblacklist; i++)
		if (!memcmp(blacklist[i].name, name, CLUSTER_NAMELEN)) {
			blacklist[i].expire = now + 60000;
			return;
		}
	blacklist = xrealloc(blacklist, (nblacklist + 1) * sizeof(*blacklist));
	memcpy(blacklist[nblacklist].name, name, CLUSTER_NAMELEN);
	blacklist[nblacklist++].expire = now + 60000;
}

static void blacklist_clean(void)
{
	int64_t now = now_ms();

	for (unsigned i = 0; i < nblacklist;)
		if (blacklist[i].expire < now)
			blacklist[i] = blacklist[--nblacklist];
		else
			i++;
}

bool cluster_blacklist_has(const char *name, size_t len)
{
	blacklist_clean();
	if (len != CLUSTER_NAMELEN)
		return false;
	for (unsigned i = 0; i < nblacklist; i++)
		if (!memcmp(blacklist[i].name, name, CLUSTER_NAMELEN))
			return true;
	return false;
}

void cluster_blacklist_clear(void)
{
	nblacklist = 0;
}

unsigned cluster_blacklist_count(void)
{
	blacklist_clean();
	return nblacklist;
}

void cluster_blacklist_get(unsigned i, char name[CLUSTER_NAMELEN], uint64_t *ttl_s)
{
	int64_t ttl = (blacklist[i].expire - now_ms()) / 1000;

	memcpy(name, blacklist[i].name, CLUSTER_NAMELEN);
	*ttl_s = (uint64_t)(ttl > 0 ? ttl : 1);
}
