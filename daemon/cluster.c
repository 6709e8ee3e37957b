// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster: the node list and the slot table (see cluster.h for who reads
 * and who writes what).
 */
#include "cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
struct cluster_view cluster_view;
static struct cluster_slot *const slots = cluster_view.slots;
static struct cluster_node *nodes; /* under lock */
static cluster_slot_listener *listeners[4];
static unsigned nlisteners;

static void random_name(char out[CLUSTER_NAMELEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[CLUSTER_NAMELEN / 2];

	/* Without entropy a node id only becomes guessable, not invalid. */
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(mono_us() >> (8 * (i % 8)));
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[CLUSTER_NAMELEN] = '\0';
}

bool cluster_enabled(void)
{
	return config.cluster_enabled;
}

int cluster_init(void)
{
	struct cluster_node *me;

	if (!cluster_enabled())
		return 0;
	cluster_lock();
	me = cluster_node_create(NULL, CLUSTER_NODE_MYSELF | CLUSTER_NODE_MASTER);
	if (me)
		random_name(me->shard_id);
	atomic_store(&cluster_view.myself, me);
	cluster_unlock();
	return me ? 0 : -ENOMEM;
}

bool cluster_owns_slot(uint16_t slot)
{
	struct cluster_node *me = cluster_myself();

	return me &&
	       atomic_load_explicit(&slots[slot % CLUSTER_SLOTS].owner, memory_order_acquire) == me;
}

size_t cluster_node_endpoint(const struct cluster_node *node, char *buf, size_t size)
{
	const char *host = "?";
	int n;

	cluster_lock();
	switch (config.cluster_preferred_endpoint_type) {
	case 0: /* ip */
		host = node->ip;
		break;
	case 1: /* hostname: "?" when the node has none, as Redis */
		if (node->hostname[0])
			host = node->hostname;
		break;
	default: /* unknown-endpoint */
		break;
	}
	n = snprintf(buf, size, "%s:%u", host, node->port);
	cluster_unlock();
	return n < 0 ? 0 : (size_t)n + 1;
}

void cluster_lock(void)
{
	pthread_mutex_lock(&lock);
}

void cluster_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

struct cluster_node *cluster_node_create(const char *name, uint32_t flags)
{
	struct cluster_node *n = calloc(1, sizeof(*n));
	struct cluster_node **tail = &nodes;

	if (!n)
		return NULL;
	if (name)
		snprintf(n->name, sizeof(n->name), "%s", name);
	else
		random_name(n->name);
	atomic_store(&n->flags, flags);
	/* Appended, so CLUSTER NODES lists nodes in the order they were met. */
	while (*tail)
		tail = &(*tail)->next;
	*tail = n;
	return n;
}

void cluster_node_forget(struct cluster_node *node)
{
	struct cluster_node **p;

	if (node == cluster_myself())
		return;
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++) {
		if (atomic_load(&slots[s].owner) == node)
			cluster_slot_set_owner((uint16_t)s, NULL);
		if (atomic_load(&slots[s].migrating_to) == node)
			atomic_store(&slots[s].migrating_to, NULL);
		if (atomic_load(&slots[s].importing_from) == node)
			atomic_store(&slots[s].importing_from, NULL);
	}
	for (struct cluster_node *n = nodes; n; n = n->next)
		if (n->replicaof == node)
			n->replicaof = NULL;
	for (p = &nodes; *p; p = &(*p)->next)
		if (*p == node) {
			*p = node->next;
			break;
		}
	node->next = NULL;
	atomic_fetch_or(&node->flags, CLUSTER_NODE_FORGOTTEN);
}

struct cluster_node *cluster_nodes_first(void)
{
	return nodes;
}

struct cluster_node *cluster_node_lookup(const char *name, size_t len)
{
	if (len != CLUSTER_NAMELEN)
		return NULL;
	for (struct cluster_node *n = nodes; n; n = n->next)
		if (!memcmp(n->name, name, CLUSTER_NAMELEN))
			return n;
	return NULL;
}

void cluster_slot_set_owner(uint16_t slot, struct cluster_node *owner)
{
	struct cluster_slot *s = &slots[slot % CLUSTER_SLOTS];
	struct cluster_node *me = cluster_myself();
	struct cluster_node *old = atomic_load(&s->owner);

	if (old == owner)
		return;
	if (old == me)
		for (unsigned i = 0; i < nlisteners; i++)
			listeners[i](slot, false);
	atomic_store_explicit(&s->owner, owner, memory_order_release);
	if (owner == me)
		for (unsigned i = 0; i < nlisteners; i++)
			listeners[i](slot, true);
}

void cluster_slot_set_migrating(uint16_t slot, struct cluster_node *to)
{
	atomic_store_explicit(&slots[slot % CLUSTER_SLOTS].migrating_to, to, memory_order_release);
}

void cluster_slot_set_importing(uint16_t slot, struct cluster_node *from)
{
	atomic_store_explicit(&slots[slot % CLUSTER_SLOTS].importing_from, from,
			      memory_order_release);
}

void cluster_set_state_ok(bool ok)
{
	atomic_store_explicit(&cluster_view.state_ok, ok, memory_order_release);
}

void cluster_set_myself(struct cluster_node *n)
{
	atomic_store_explicit(&cluster_view.myself, n, memory_order_release);
}

void cluster_add_slot_listener(cluster_slot_listener *fn)
{
	for (unsigned i = 0; i < nlisteners; i++)
		if (listeners[i] == fn)
			return;
	if (nlisteners < sizeof(listeners) / sizeof(listeners[0]))
		listeners[nlisteners++] = fn;
}
