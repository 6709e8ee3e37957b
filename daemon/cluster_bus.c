// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_bus: the cluster bus in Redis 7's wire format, on its own thread.
 *
 * One thread (xkv-cbus) polls the bus listeners, an eventfd that commands
 * use to wake it, and one TCP link per direction per known node. Every
 * message is the "RCmb" header (2256 bytes, fields in network order at
 * Redis's offsets) and a body: gossip entries and ping extensions (PING,
 * PONG, MEET), a node name (FAIL), a channel and message (PUBLISH,
 * PUBLISHSHARD), a slot bitmap (UPDATE). All state is under cluster_lock();
 * the thread takes it for each turn of its loop. Keys of slots this node
 * lost are deleted after the lock is dropped (shard locks come first in the
 * lock order: cluster_node_endpoint runs under them).
 *
 * What it does, as Redis's cluster_legacy.c: handshakes (MEET, a random
 * name renamed by the first PONG), gossip of 1/10 of the nodes (at least 3)
 * plus every PFAIL node, PFAIL after node-timeout without a PONG, FAIL when
 * a majority of the primaries reports it, config epochs (the greater wins a
 * slot; equal epochs between primaries are resolved by node id), UPDATE to a
 * node that claims slots with a stale epoch, cluster_state. The failover
 * messages (AUTH_REQUEST, AUTH_ACK, MFSTART) are parsed and counted; this
 * node neither votes nor fails over yet.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "pubsub.h"
#include "reply.h"
#include "util.h"

/* ---- the wire format ---- */

#define MSG_PING 0
#define MSG_PONG 1
#define MSG_MEET 2
#define MSG_FAIL 3
#define MSG_PUBLISH 4
#define MSG_AUTH_REQUEST 5
#define MSG_AUTH_ACK 6
#define MSG_UPDATE 7
#define MSG_MFSTART 8
#define MSG_MODULE 9
#define MSG_PUBLISHSHARD 10

#define HDR_LEN 2256 /* CLUSTERMSG_MIN_LEN: the header without its body */
#define OFF_TOTLEN 4
#define OFF_VER 8
#define OFF_PORT 10
#define OFF_TYPE 12
#define OFF_COUNT 14
#define OFF_CUREPOCH 16
#define OFF_CFGEPOCH 24
#define OFF_OFFSET 32
#define OFF_SENDER 40
#define OFF_SLOTS 80
#define OFF_SLAVEOF 2128
#define OFF_MYIP 2168
#define OFF_EXTENSIONS 2214
#define OFF_PPORT 2246
#define OFF_CPORT 2248
#define OFF_FLAGS 2250
#define OFF_STATE 2252
#define OFF_MFLAGS 2253
#define SLOTS_BYTES (CLUSTER_SLOTS / 8)
#define NET_IP_LEN 46
#define GOSSIP_LEN 104
#define EXT_HDR_LEN 8
#define FLAG0_EXT_DATA (1 << 2)
#define EXT_HOSTNAME 0
#define EXT_HUMAN_NODENAME 1
#define EXT_FORGOTTEN_NODE 2
#define EXT_SHARDID 3
#define MSG_MAX (1u << 30) /* a link announcing more is closed */

#define STATE_OK 0
#define STATE_FAIL 1

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static bool name_is_null(const unsigned char *p)
{
	for (int i = 0; i < CLUSTER_NAMELEN; i++)
		if (p[i])
			return false;
	return true;
}

/* The length a message of its type and counts must have, from its header
 * and body; 0 for a type with no rule (ignored, as Redis does). */
static int expected_len(const unsigned char *buf, size_t len, size_t *out)
{
	uint16_t type = get16(buf + OFF_TYPE), count = get16(buf + OFF_COUNT);
	size_t explen = HDR_LEN;

	switch (type) {
	case MSG_PING:
	case MSG_PONG:
	case MSG_MEET: {
		uint16_t nexts = get16(buf + OFF_EXTENSIONS);

		explen += (size_t)count * GOSSIP_LEN;
		if (explen > len)
			return -EBADMSG;
		if (buf[OFF_MFLAGS] & FLAG0_EXT_DATA) {
			for (uint16_t i = 0; i < nexts; i++) {
				uint32_t extlen;

				if (len - explen < EXT_HDR_LEN)
					return -EBADMSG;
				extlen = get32(buf + explen);
				if (extlen % 8 || extlen < EXT_HDR_LEN || len - explen < extlen)
					return -EBADMSG;
				explen += extlen;
			}
		}
		break;
	}
	case MSG_FAIL:
		explen += CLUSTER_NAMELEN;
		break;
	case MSG_PUBLISH:
	case MSG_PUBLISHSHARD:
		if (len < HDR_LEN + 8)
			return -EBADMSG;
		explen += 8 + (size_t)get32(buf + HDR_LEN) + get32(buf + HDR_LEN + 4);
		break;
	case MSG_AUTH_REQUEST:
	case MSG_AUTH_ACK:
	case MSG_MFSTART:
		break;
	case MSG_UPDATE:
		explen += 8 + CLUSTER_NAMELEN + SLOTS_BYTES;
		break;
	case MSG_MODULE:
		if (len < HDR_LEN + 16)
			return -EBADMSG;
		explen += 13 + (size_t)get32(buf + HDR_LEN + 8);
		break;
	default:
		*out = len;
		return 0;
	}
	*out = explen;
	return 0;
}

int cluster_msg_validate(const unsigned char *buf, size_t len)
{
	size_t explen;

	if (len < HDR_LEN || memcmp(buf, "RCmb", 4) || get32(buf + OFF_TOTLEN) != len)
		return -EBADMSG;
	if (get16(buf + OFF_VER) != 1)
		return 1; /* another protocol version: ignored, link kept */
	if (expected_len(buf, len, &explen) < 0 || explen != len)
		return -EBADMSG;
	return 0;
}

/* ---- links ---- */

struct cluster_link {
	int fd;
	bool inbound, connecting, dead;
	struct cluster_node *node; /* NULL: inbound, sender not yet known */
	int64_t ctime;
	unsigned char *rbuf;
	size_t rlen, rcap;
	unsigned char *wbuf;
	size_t wlen, woff, wcap;
	struct cluster_link *next;
};

static struct cluster_link *links; /* every link, under cluster_lock */
static int listen_fds[16];
static unsigned nlisten;
static int wake_fd = -1;
static pthread_t thread;
static _Atomic bool running;

static void link_free(struct cluster_link *l)
{
	if (l->dead)
		return;
	l->dead = true;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->node) {
		struct cluster_node_bus *nb = cluster_nb(l->node);

		if (nb->link == l)
			nb->link = NULL;
		if (nb->inbound == l)
			nb->inbound = NULL;
	}
	l->node = NULL;
}

/* Frees the links marked dead (outside any walk of the poll set). */
static void links_sweep(void)
{
	struct cluster_link **p = &links;

	while (*p) {
		struct cluster_link *l = *p;

		if (l->dead) {
			*p = l->next;
			xfree(l->rbuf);
			xfree(l->wbuf);
			xfree(l);
		} else {
			p = &l->next;
		}
	}
}

static struct cluster_link *link_new(int fd, bool inbound, struct cluster_node *node)
{
	struct cluster_link *l = xcalloc(1, sizeof(*l));

	l->fd = fd;
	l->inbound = inbound;
	l->node = node;
	l->ctime = now_ms();
	l->next = links;
	links = l;
	return l;
}

unsigned cluster_link_count(void)
{
	unsigned n = 0;

	for (struct cluster_link *l = links; l; l = l->next)
		n += !l->dead;
	return n;
}

static void link_queue(struct cluster_link *l, const unsigned char *msg, size_t len)
{
	if (!l || l->dead)
		return;
	if (l->woff && l->woff == l->wlen)
		l->woff = l->wlen = 0;
	if (l->wlen + len > l->wcap) {
		l->wcap = (l->wlen + len) * 2;
		l->wbuf = xrealloc(l->wbuf, l->wcap);
	}
	memcpy(l->wbuf + l->wlen, msg, len);
	l->wlen += len;
}

static void link_flush(struct cluster_link *l)
{
	while (!l->dead && !l->connecting && l->woff < l->wlen) {
		ssize_t w = send(l->fd, l->wbuf + l->woff, l->wlen - l->woff, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			link_free(l);
			return;
		}
		l->woff += (size_t)w;
	}
	if (l->woff == l->wlen)
		l->woff = l->wlen = 0;
}

void cluster_ctl_node_delete(struct cluster_node *n)
{
	struct cluster_node_bus *nb = cluster_nb(n);

	if (n == cluster_myself())
		return;
	if (nb->link)
		link_free(nb->link);
	if (nb->inbound)
		link_free(nb->inbound);
	for (struct cluster_link *l = links; l; l = l->next)
		if (l->node == n)
			link_free(l);
	/* Its reports about others go too. */
	for (struct cluster_node *o = cluster_nodes_first(); o; o = o->next) {
		struct cluster_node_bus *ob = cluster_nb(o);

		for (unsigned i = 0; i < ob->nreports;)
			if (ob->reports[i].from == n)
				ob->reports[i] = ob->reports[--ob->nreports];
			else
				i++;
	}
	nb->nreports = 0;
	cluster_node_forget(n);
	cluster_ctl.todo_state = true;
}

/* ---- building messages ---- */

static size_t ext_len(size_t body)
{
	return (EXT_HDR_LEN + body + 7) / 8 * 8;
}

/* A message of type with room for body bytes after the header. */
static unsigned char *msg_new(uint16_t type, size_t body, size_t *len)
{
	struct cluster_node *me = cluster_myself();
	struct cluster_node *master = me->replicaof ? me->replicaof : me;
	unsigned char *m = xcalloc(1, HDR_LEN + body);
	uint32_t flags = atomic_load(&me->flags) & 0xffff;

	*len = HDR_LEN + body;
	memcpy(m, "RCmb", 4);
	put32(m + OFF_TOTLEN, (uint32_t)*len);
	put16(m + OFF_VER, 1);
	put16(m + OFF_PORT, me->port);
	put16(m + OFF_TYPE, type);
	put64(m + OFF_CUREPOCH, cluster_ctl.current_epoch);
	put64(m + OFF_CFGEPOCH, master->config_epoch);
	memcpy(m + OFF_SENDER, me->name, CLUSTER_NAMELEN);
	cluster_node_slots_bitmap(master, m + OFF_SLOTS);
	if (me->replicaof)
		memcpy(m + OFF_SLAVEOF, me->replicaof->name, CLUSTER_NAMELEN);
	if (config.cluster_announce_ip[0])
		snprintf((char *)m + OFF_MYIP, NET_IP_LEN, "%s", config.cluster_announce_ip);
	put16(m + OFF_PPORT, me->pport);
	put16(m + OFF_CPORT, me->cport);
	put16(m + OFF_FLAGS, (uint16_t)(flags | CLUSTER_NODE_EXTENSIONS_SUPPORTED));
	m[OFF_STATE] = cluster_state_ok() ? STATE_OK : STATE_FAIL;
	cluster_ctl.sent[type]++;
	return m;
}

static void gossip_put(unsigned char *g, const struct cluster_node *n)
{
	const struct cluster_node_bus *nb = cluster_nb(n);

	memcpy(g, n->name, CLUSTER_NAMELEN);
	put32(g + 40, (uint32_t)(nb->ping_sent / 1000));
	put32(g + 44, (uint32_t)(nb->pong_received / 1000));
	memcpy(g + 48, n->ip, strnlen(n->ip, NET_IP_LEN - 1));
	put16(g + 94, n->port);
	put16(g + 96, n->cport);
	put16(g + 98, (uint16_t)atomic_load(&n->flags));
	put16(g + 100, n->pport);
}

static unsigned char *ext_put(unsigned char *p, uint16_t type, const void *data, size_t len,
			      uint16_t *count)
{
	size_t total = ext_len(len);

	put32(p, (uint32_t)total);
	put16(p + 4, type);
	memcpy(p + EXT_HDR_LEN, data, len);
	(*count)++;
	return p + total;
}

static bool gossip_wanted(const struct cluster_node *n, const struct cluster_node *to)
{
	uint32_t f = atomic_load(&n->flags);

	if (n == cluster_myself() || n == to ||
	    (f & (CLUSTER_NODE_HANDSHAKE | CLUSTER_NODE_NOADDR)))
		return false;
	return cluster_nb(n)->link || cluster_node_slots(n);
}

/* PING, PONG or MEET to link: gossip about some nodes, then our extensions. */
static void send_ping(struct cluster_link *l, uint16_t type)
{
	struct cluster_node *me = cluster_myself(), *to = l->node;
	unsigned known = cluster_node_count(), wanted, pfail = 0, count = 0;
	struct cluster_node **pick;
	unsigned char *m, *p;
	size_t len, body;
	uint16_t nexts = 0;
	unsigned nforgot;
	int64_t now = now_ms();

	wanted = known / 10 < 3 ? 3 : known / 10;
	if (wanted > (known >= 2 ? known - 2 : 0))
		wanted = known >= 2 ? known - 2 : 0;
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if ((atomic_load(&n->flags) & CLUSTER_NODE_PFAIL) && gossip_wanted(n, to))
			pfail++;
	pick = xcalloc(known + 1, sizeof(*pick));
	/* A random start in the list, then every wanted node in turn. */
	if (known) {
		unsigned start = (unsigned)(cluster_rand() % known), i = 0;
		struct cluster_node *n = cluster_nodes_first();

		for (unsigned k = 0; k < start; k++)
			n = n->next;
		for (i = 0; i < known && count < wanted; i++) {
			if (gossip_wanted(n, to) && !(atomic_load(&n->flags) & CLUSTER_NODE_PFAIL))
				pick[count++] = n;
			n = n->next ? n->next : cluster_nodes_first();
		}
		for (n = cluster_nodes_first(); n; n = n->next)
			if ((atomic_load(&n->flags) & CLUSTER_NODE_PFAIL) && gossip_wanted(n, to))
				pick[count++] = n;
	}
	body = (size_t)count * GOSSIP_LEN;
	if (me->hostname[0])
		body += ext_len(strlen(me->hostname) + 1);
	if (cluster_nb(me)->human_nodename[0])
		body += ext_len(strlen(cluster_nb(me)->human_nodename) + 1);
	nforgot = cluster_blacklist_count();
	body += nforgot * ext_len(CLUSTER_NAMELEN + 8);
	body += ext_len(CLUSTER_NAMELEN);
	m = msg_new(type, body, &len);
	put16(m + OFF_COUNT, (uint16_t)count);
	p = m + HDR_LEN;
	for (unsigned i = 0; i < count; i++, p += GOSSIP_LEN)
		gossip_put(p, pick[i]);
	if (me->hostname[0])
		p = ext_put(p, EXT_HOSTNAME, me->hostname, strlen(me->hostname) + 1, &nexts);
	if (cluster_nb(me)->human_nodename[0])
		p = ext_put(p, EXT_HUMAN_NODENAME, cluster_nb(me)->human_nodename,
			    strlen(cluster_nb(me)->human_nodename) + 1, &nexts);
	for (unsigned i = 0; i < nforgot; i++) {
		unsigned char fn[CLUSTER_NAMELEN + 8];
		uint64_t ttl;

		cluster_blacklist_get(i, (char *)fn, &ttl);
		put64(fn + CLUSTER_NAMELEN, ttl);
		p = ext_put(p, EXT_FORGOTTEN_NODE, fn, sizeof(fn), &nexts);
	}
	ext_put(p, EXT_SHARDID, me->shard_id, CLUSTER_NAMELEN, &nexts);
	put16(m + OFF_EXTENSIONS, nexts);
	m[OFF_MFLAGS] |= FLAG0_EXT_DATA;
	if (to && type == MSG_PING && !cluster_nb(to)->ping_sent)
		cluster_nb(to)->ping_sent = now;
	link_queue(l, m, len);
	xfree(m);
	xfree(pick);
}

void cluster_broadcast_pong(void)
{
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		struct cluster_link *l = cluster_nb(n)->link;

		if (l && !(atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE))
			send_ping(l, MSG_PONG);
	}
	cluster_bus_wake();
}

static void broadcast(const unsigned char *m, size_t len)
{
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		struct cluster_link *l = cluster_nb(n)->link;

		if (l && n != cluster_myself() &&
		    !(atomic_load(&n->flags) & (CLUSTER_NODE_HANDSHAKE)))
			link_queue(l, m, len);
	}
}

void cluster_bus_send_fail(const struct cluster_node *failing)
{
	size_t len;
	unsigned char *m = msg_new(MSG_FAIL, CLUSTER_NAMELEN, &len);

	memcpy(m + HDR_LEN, failing->name, CLUSTER_NAMELEN);
	broadcast(m, len);
	xfree(m);
}

static void send_update(struct cluster_link *l, const struct cluster_node *owner)
{
	size_t len;
	unsigned char *m;

	if (!l)
		return;
	m = msg_new(MSG_UPDATE, 8 + CLUSTER_NAMELEN + SLOTS_BYTES, &len);
	put64(m + HDR_LEN, owner->config_epoch);
	memcpy(m + HDR_LEN + 8, owner->name, CLUSTER_NAMELEN);
	cluster_node_slots_bitmap(owner, m + HDR_LEN + 8 + CLUSTER_NAMELEN);
	link_queue(l, m, len);
	xfree(m);
}

void cluster_bus_publish(bool shard, const char *ch, size_t chlen, const char *msg, size_t msglen)
{
	struct cluster_node *me;
	unsigned char *m;
	size_t len;

	cluster_lock();
	me = cluster_myself();
	m = msg_new(shard ? MSG_PUBLISHSHARD : MSG_PUBLISH, 8 + chlen + msglen, &len);
	put32(m + HDR_LEN, (uint32_t)chlen);
	put32(m + HDR_LEN + 4, (uint32_t)msglen);
	memcpy(m + HDR_LEN + 8, ch, chlen);
	memcpy(m + HDR_LEN + 8 + chlen, msg, msglen);
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		struct cluster_link *l = cluster_nb(n)->link;
		struct cluster_node *nm = n->replicaof ? n->replicaof : n;
		struct cluster_node *mm = me->replicaof ? me->replicaof : me;

		if (!l || n == me || (atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE))
			continue;
		/* A shard message goes to the nodes of our shard only. */
		if (shard && nm != mm)
			continue;
		link_queue(l, m, len);
	}
	xfree(m);
	cluster_unlock();
	cluster_bus_wake();
}

/* The address the peer of fd has (a sender that announces none). */
static void peer_ip(int fd, char *out, size_t size)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);

	out[0] = '\0';
	if (getpeername(fd, (struct sockaddr *)&sa, &sl) < 0)
		return;
	if (sa.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, out, (socklen_t)size);
	else if (sa.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, out, (socklen_t)size);
}

static void sender_ip(struct cluster_link *l, const unsigned char *m, char *out, size_t size)
{
	if (m[OFF_MYIP]) {
		memcpy(out, m + OFF_MYIP, NET_IP_LEN);
		out[NET_IP_LEN - 1] = '\0';
		return;
	}
	peer_ip(l->fd, out, size);
}

/* The sender moved (a PING from a new address): reconnect there. */
static void update_address(struct cluster_node *n, struct cluster_link *l, const unsigned char *m)
{
	char ip[CLUSTER_IPLEN];
	uint16_t port = get16(m + OFF_PORT), cport = get16(m + OFF_CPORT);

	if (l == cluster_nb(n)->link)
		return;
	sender_ip(l, m, ip, sizeof(ip));
	if (!strcmp(ip, n->ip) && port == n->port && cport == n->cport)
		return;
	snprintf(n->ip, sizeof(n->ip), "%s", ip);
	n->port = port;
	n->cport = cport;
	n->pport = get16(m + OFF_PPORT);
	if (cluster_nb(n)->link)
		link_free(cluster_nb(n)->link);
	atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_NOADDR);
	log_notice("Address updated for node %.40s, now %s:%u", n->name, n->ip, n->port);
	cluster_ctl.todo_save = true;
}

/* ---- addresses and receiving ---- */

static void process_gossip(struct cluster_node *sender, const unsigned char *m)
{
	uint16_t count = get16(m + OFF_COUNT);
	const unsigned char *g = m + HDR_LEN;
	struct cluster_node *me = cluster_myself();

	for (uint16_t i = 0; i < count; i++, g += GOSSIP_LEN) {
		uint16_t flags = get16(g + 98);
		struct cluster_node *n = cluster_node_lookup((const char *)g, CLUSTER_NAMELEN);
		char ip[NET_IP_LEN];

		memcpy(ip, g + 48, NET_IP_LEN);
		ip[NET_IP_LEN - 1] = '\0';
		if (n) {
			struct cluster_node_bus *nb = cluster_nb(n);

			if (cluster_node_is_master(sender) && n != me) {
				if (flags & (CLUSTER_NODE_FAIL | CLUSTER_NODE_PFAIL)) {
					cluster_report_add(n, sender);
					cluster_mark_failing_if_needed(n);
				} else {
					cluster_report_del(n, sender);
				}
			}
			if (!(flags & (CLUSTER_NODE_FAIL | CLUSTER_NODE_PFAIL)) && !nb->ping_sent &&
			    !cluster_fail_reports_count(n)) {
				int64_t pong = (int64_t)get32(g + 44) * 1000;

				if (pong <= now_ms() + 500 && pong > nb->pong_received)
					nb->pong_received = pong;
			}
			/* A node we lost, seen well by the sender at a new address. */
			if ((atomic_load(&n->flags) & (CLUSTER_NODE_FAIL | CLUSTER_NODE_PFAIL)) &&
			    !(flags & CLUSTER_NODE_NOADDR) &&
			    !(flags & (CLUSTER_NODE_FAIL | CLUSTER_NODE_PFAIL)) &&
			    (strcmp(n->ip, ip) || n->port != get16(g + 94) ||
			     n->cport != get16(g + 96))) {
				if (nb->link)
					link_free(nb->link);
				snprintf(n->ip, sizeof(n->ip), "%s", ip);
				n->port = get16(g + 94);
				n->cport = get16(g + 96);
				n->pport = get16(g + 100);
				atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_NOADDR);
			}
		} else if (!(flags & CLUSTER_NODE_NOADDR) &&
			   !cluster_blacklist_has((const char *)g, CLUSTER_NAMELEN) && ip[0]) {
			cluster_start_handshake(ip, get16(g + 94), get16(g + 96));
		}
	}
}

static void set_shard_id(struct cluster_node *n, const char *sid)
{
	if (!memcmp(n->shard_id, sid, CLUSTER_NAMELEN))
		return;
	memcpy(n->shard_id, sid, CLUSTER_NAMELEN);
	n->shard_id[CLUSTER_NAMELEN] = '\0';
	for (struct cluster_node *r = cluster_nodes_first(); r; r = r->next)
		if (r->replicaof == n)
			memcpy(r->shard_id, n->shard_id, sizeof(r->shard_id));
	cluster_ctl.todo_save = true;
}

static void process_extensions(struct cluster_node *sender, const unsigned char *m, size_t len)
{
	struct cluster_node *me = cluster_myself();
	size_t off = HDR_LEN + (size_t)get16(m + OFF_COUNT) * GOSSIP_LEN;
	uint16_t nexts = get16(m + OFF_EXTENSIONS);
	bool hostname = false, human = false;

	if (!(m[OFF_MFLAGS] & FLAG0_EXT_DATA))
		return;
	atomic_fetch_or(&sender->flags, CLUSTER_NODE_EXTENSIONS_SUPPORTED);
	for (uint16_t i = 0; i < nexts && off + EXT_HDR_LEN <= len; i++) {
		uint32_t elen = get32(m + off);
		uint16_t type = get16(m + off + 4);
		const char *d = (const char *)m + off + EXT_HDR_LEN;
		size_t dlen = elen - EXT_HDR_LEN;

		switch (type) {
		case EXT_HOSTNAME:
			snprintf(sender->hostname, sizeof(sender->hostname), "%.*s",
				 (int)strnlen(d, dlen), d);
			hostname = true;
			break;
		case EXT_HUMAN_NODENAME:
			snprintf(cluster_nb(sender)->human_nodename,
				 sizeof(cluster_nb(sender)->human_nodename), "%.*s",
				 (int)strnlen(d, dlen), d);
			human = true;
			break;
		case EXT_FORGOTTEN_NODE: {
			struct cluster_node *n;

			if (dlen < CLUSTER_NAMELEN + 8)
				break;
			n = cluster_node_lookup(d, CLUSTER_NAMELEN);
			if (n && n != me && n != me->replicaof) {
				cluster_blacklist_add(d);
				cluster_ctl_node_delete(n);
				cluster_ctl.todo_save = true;
			}
			break;
		}
		case EXT_SHARDID:
			if (dlen >= CLUSTER_NAMELEN && !sender->replicaof)
				set_shard_id(sender, d);
			break;
		default: /* the internal secret and others: not ours */
			break;
		}
		off += elen;
	}
	/* An extension missing from a message that has some: the value was
	 * cleared. */
	if (!hostname && sender->hostname[0]) {
		sender->hostname[0] = '\0';
		cluster_ctl.todo_save = true;
	}
	if (!human)
		cluster_nb(sender)->human_nodename[0] = '\0';
}

static void set_role_from(struct cluster_node *sender, const unsigned char *m)
{
	uint32_t f = atomic_load(&sender->flags);

	if (name_is_null(m + OFF_SLAVEOF)) {
		if (f & CLUSTER_NODE_SLAVE) {
			atomic_fetch_and(&sender->flags, ~(uint32_t)CLUSTER_NODE_SLAVE);
			cluster_ctl.todo_save = cluster_ctl.todo_state = true;
		}
		atomic_fetch_or(&sender->flags, CLUSTER_NODE_MASTER);
		sender->replicaof = NULL;
	} else {
		struct cluster_node *master =
			cluster_node_lookup((const char *)m + OFF_SLAVEOF, CLUSTER_NAMELEN);

		if (f & CLUSTER_NODE_MASTER) {
			/* A primary turned replica: its slots are gone. */
			for (unsigned j = 0; j < CLUSTER_SLOTS; j++)
				if (atomic_load(&cluster_slot((uint16_t)j)->owner) == sender)
					cluster_slot_set_owner((uint16_t)j, NULL);
			atomic_fetch_and(&sender->flags, ~(uint32_t)(CLUSTER_NODE_MASTER |
								     CLUSTER_NODE_MIGRATE_TO));
			cluster_ctl.todo_save = cluster_ctl.todo_state = true;
		}
		atomic_fetch_or(&sender->flags, CLUSTER_NODE_SLAVE);
		if (master && sender->replicaof != master) {
			sender->replicaof = master;
			memcpy(sender->shard_id, master->shard_id, sizeof(sender->shard_id));
			cluster_ctl.todo_save = true;
		}
	}
}

/* PING, PONG, MEET. */
static int process_ping(struct cluster_link *l, struct cluster_node *sender, const unsigned char *m,
			size_t len)
{
	struct cluster_node *me = cluster_myself();
	uint16_t type = get16(m + OFF_TYPE);
	int64_t now = now_ms();

	if (type == MSG_MEET || !me->ip[0]) {
		/* We learn our own address from the first MEET (or any PING
		 * while we have none), unless announced. */
		if (!config.cluster_announce_ip[0]) {
			struct sockaddr_storage sa;
			socklen_t sl = sizeof(sa);
			char ip[CLUSTER_IPLEN] = "";

			if (getsockname(l->fd, (struct sockaddr *)&sa, &sl) == 0) {
				if (sa.ss_family == AF_INET)
					inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr,
						  ip, sizeof(ip));
				else if (sa.ss_family == AF_INET6)
					inet_ntop(AF_INET6,
						  &((struct sockaddr_in6 *)&sa)->sin6_addr, ip,
						  sizeof(ip));
			}
			if (ip[0] && strcmp(ip, me->ip)) {
				snprintf(me->ip, sizeof(me->ip), "%s", ip);
				log_notice("IP address for this node updated to %s", me->ip);
				cluster_ctl.todo_save = true;
			}
		}
	}
	if (!sender && type == MSG_MEET) {
		struct cluster_node *n = cluster_ctl_node_new(NULL, CLUSTER_NODE_HANDSHAKE);

		if (n) {
			sender_ip(l, m, n->ip, sizeof(n->ip));
			n->port = get16(m + OFF_PORT);
			n->pport = get16(m + OFF_PPORT);
			n->cport = get16(m + OFF_CPORT);
			cluster_ctl.todo_save = true;
		}
	}
	if (type == MSG_PING || type == MSG_MEET)
		send_ping(l, MSG_PONG);

	if (l->node && !l->inbound) {
		struct cluster_node *n = l->node;

		if (atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE) {
			/* The first answer of a node we met: it gets its real name,
			 * unless we knew it already. */
			if (sender) {
				if (type == MSG_PONG)
					update_address(sender, l, m);
				cluster_ctl_node_delete(n);
				return -1;
			}
			if (cluster_blacklist_has((const char *)m + OFF_SENDER, CLUSTER_NAMELEN)) {
				cluster_ctl_node_delete(n);
				return -1;
			}
			memcpy(n->name, m + OFF_SENDER, CLUSTER_NAMELEN);
			atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_HANDSHAKE);
			atomic_fetch_or(&n->flags, get16(m + OFF_FLAGS) & (CLUSTER_NODE_MASTER |
									   CLUSTER_NODE_SLAVE));
			log_verbose("Handshake with node %.40s completed.", n->name);
			cluster_ctl.todo_save = true;
			sender = n;
		} else if (memcmp(n->name, m + OFF_SENDER, CLUSTER_NAMELEN)) {
			/* Another node answers at that address now. */
			log_verbose("PONG contains mismatching sender ID for %.40s", n->name);
			atomic_fetch_or(&n->flags, CLUSTER_NODE_NOADDR);
			n->ip[0] = '\0';
			n->port = n->cport = 0;
			link_free(l);
			cluster_ctl.todo_save = true;
			return -1;
		}
	}
	if (sender && type == MSG_PING && !(atomic_load(&sender->flags) & CLUSTER_NODE_HANDSHAKE)) {
		struct cluster_node_bus *sb = cluster_nb(sender);

		if (l->inbound && sb->inbound != l) {
			if (sb->inbound)
				link_free(sb->inbound);
			sb->inbound = l;
			l->node = sender;
		}
		update_address(sender, l, m);
	}
	if (sender) {
		if (get16(m + OFF_FLAGS) & CLUSTER_NODE_NOFAILOVER)
			atomic_fetch_or(&sender->flags, CLUSTER_NODE_NOFAILOVER);
		else
			atomic_fetch_and(&sender->flags, ~(uint32_t)CLUSTER_NODE_NOFAILOVER);
	}
	if (l->node && !l->inbound && type == MSG_PONG) {
		struct cluster_node *n = l->node;
		struct cluster_node_bus *nb = cluster_nb(n);

		nb->pong_received = now;
		nb->ping_sent = 0;
		if (atomic_load(&n->flags) & CLUSTER_NODE_PFAIL) {
			atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_PFAIL);
			cluster_ctl.todo_state = true;
		} else if (atomic_load(&n->flags) & CLUSTER_NODE_FAIL) {
			cluster_clear_failure_if_needed(n);
		}
	}
	if (!sender || (atomic_load(&sender->flags) & CLUSTER_NODE_HANDSHAKE))
		return 0;
	set_role_from(sender, m);
	if (cluster_node_is_master(sender)) {
		unsigned char ours[SLOTS_BYTES];
		uint64_t epoch = get64(m + OFF_CFGEPOCH);

		cluster_node_slots_bitmap(sender, ours);
		if (memcmp(ours, m + OFF_SLOTS, SLOTS_BYTES)) {
			cluster_update_slots_with(sender, epoch, m + OFF_SLOTS);
			/* A slot the sender claims that a newer owner holds: tell it. */
			for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
				struct cluster_node *o;

				if (!(m[OFF_SLOTS + (j >> 3)] & (1 << (j & 7))))
					continue;
				o = atomic_load(&cluster_slot((uint16_t)j)->owner);
				if (!o || o == sender)
					continue;
				if (o->config_epoch > epoch) {
					send_update(l, o);
					break;
				}
			}
		}
		cluster_epoch_collision(sender);
	}
	process_gossip(sender, m);
	process_extensions(sender, m, len);
	return 0;
}

/* One whole, valid message from l: 0, or -1 if l was freed. */
static int process(struct cluster_link *l, const unsigned char *m, size_t len)
{
	uint16_t type = get16(m + OFF_TYPE);
	struct cluster_node *sender =
		cluster_node_lookup((const char *)m + OFF_SENDER, CLUSTER_NAMELEN);
	int64_t now = now_ms();

	if (type < CLUSTER_MSG_TYPES)
		cluster_ctl.received[type]++;
	if (sender && (atomic_load(&sender->flags) & CLUSTER_NODE_HANDSHAKE))
		sender = NULL;
	if (sender) {
		uint64_t cur = get64(m + OFF_CUREPOCH), cfg = get64(m + OFF_CFGEPOCH);

		cluster_nb(sender)->data_received = now;
		if (cur > cluster_ctl.current_epoch) {
			cluster_ctl.current_epoch = cur;
			cluster_ctl.todo_save = true;
		}
		if (cfg > sender->config_epoch && name_is_null(m + OFF_SLAVEOF)) {
			sender->config_epoch = cfg;
			cluster_ctl.todo_save = true;
		}
		cluster_nb(sender)->repl_offset = (int64_t)get64(m + OFF_OFFSET);
	}
	switch (type) {
	case MSG_PING:
	case MSG_PONG:
	case MSG_MEET:
		return process_ping(l, sender, m, len);
	case MSG_FAIL:
		if (sender) {
			struct cluster_node *f =
				cluster_node_lookup((const char *)m + HDR_LEN, CLUSTER_NAMELEN);

			if (f &&
			    !(atomic_load(&f->flags) & (CLUSTER_NODE_FAIL | CLUSTER_NODE_MYSELF))) {
				log_notice("FAIL message received from %.40s about %.40s",
					   sender->name, f->name);
				atomic_fetch_or(&f->flags, CLUSTER_NODE_FAIL);
				atomic_fetch_and(&f->flags, ~(uint32_t)CLUSTER_NODE_PFAIL);
				cluster_nb(f)->fail_time = now;
				cluster_ctl.todo_save = cluster_ctl.todo_state = true;
			}
		}
		break;
	case MSG_PUBLISH:
	case MSG_PUBLISHSHARD:
		if (sender) {
			uint32_t chlen = get32(m + HDR_LEN), msglen = get32(m + HDR_LEN + 4);
			const char *ch = (const char *)m + HDR_LEN + 8;

			pubsub_publish_remote(type == MSG_PUBLISHSHARD, ch, chlen, ch + chlen,
					      msglen);
		}
		break;
	case MSG_UPDATE:
		if (sender) {
			uint64_t epoch = get64(m + HDR_LEN);
			struct cluster_node *n =
				cluster_node_lookup((const char *)m + HDR_LEN + 8, CLUSTER_NAMELEN);

			if (n && n->config_epoch < epoch) {
				if (!cluster_node_is_master(n)) {
					atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_SLAVE);
					atomic_fetch_or(&n->flags, CLUSTER_NODE_MASTER);
					n->replicaof = NULL;
				}
				n->config_epoch = epoch;
				cluster_update_slots_with(n, epoch,
							  m + HDR_LEN + 8 + CLUSTER_NAMELEN);
			}
		}
		break;
	case MSG_AUTH_REQUEST:
	case MSG_AUTH_ACK:
	case MSG_MFSTART:
	case MSG_MODULE:
	default:
		/* Parsed and counted; no failover or modules here yet. */
		break;
	}
	return 0;
}

/* Reads what l has; processes each whole message. */
static void link_read(struct cluster_link *l)
{
	for (;;) {
		size_t want = 8;
		ssize_t r;

		if (l->rlen >= 8) {
			uint32_t totlen = get32(l->rbuf + OFF_TOTLEN);

			if (memcmp(l->rbuf, "RCmb", 4) || totlen < HDR_LEN || totlen > MSG_MAX) {
				log_verbose("Bad message length or signature received on the "
					    "Cluster bus.");
				link_free(l);
				return;
			}
			want = totlen;
		}
		if (l->rlen == want) {
			int v = cluster_msg_validate(l->rbuf, l->rlen);

			if (v < 0) {
				log_verbose("Malformed message on the Cluster bus: link closed.");
				link_free(l);
				return;
			}
			l->rlen = 0;
			if (v == 0 && process(l, l->rbuf, want) < 0)
				return;
			if (l->dead)
				return;
			continue;
		}
		if (want > l->rcap) {
			l->rcap = want < 4096 ? 4096 : want;
			l->rbuf = xrealloc(l->rbuf, l->rcap);
		}
		r = recv(l->fd, l->rbuf + l->rlen, want - l->rlen, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			link_free(l);
			return;
		}
		l->rlen += (size_t)r;
	}
}

int cluster_bus_feed(const unsigned char *m, size_t len)
{
	static struct cluster_link *l;
	int v = cluster_msg_validate(m, len);

	cluster_lock();
	if (!l || l->dead) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			cluster_unlock();
			return -errno;
		}
		close(sv[1]);
		l = link_new(sv[0], true, NULL);
	}
	if (v == 0)
		process(l, m, len);
	/* Nothing is sent from here: what it queued is dropped. */
	for (struct cluster_link *k = links; k; k = k->next)
		k->wlen = k->woff = 0;
	if (l->dead)
		l = NULL;
	links_sweep();
	memset(cluster_ctl.dirty_slots, 0, sizeof(cluster_ctl.dirty_slots));
	cluster_ctl.todo_save = false;
	cluster_unlock();
	return v;
}

/* ---- connecting ---- */

static int sock_nonblock(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void node_connect(struct cluster_node *n)
{
	struct sockaddr_storage sa = { 0 };
	socklen_t sl;
	struct cluster_node_bus *nb = cluster_nb(n);
	struct cluster_link *l;
	int fd;

	if (inet_pton(AF_INET, n->ip, &((struct sockaddr_in *)&sa)->sin_addr) == 1) {
		sa.ss_family = AF_INET;
		((struct sockaddr_in *)&sa)->sin_port = htons(n->cport);
		sl = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, n->ip, &((struct sockaddr_in6 *)&sa)->sin6_addr) == 1) {
		sa.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&sa)->sin6_port = htons(n->cport);
		sl = sizeof(struct sockaddr_in6);
	} else {
		return;
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sock_nonblock(fd);
	if (connect(fd, (struct sockaddr *)&sa, sl) < 0 && errno != EINPROGRESS) {
		close(fd);
		return;
	}
	l = link_new(fd, false, n);
	l->connecting = true;
	nb->link = l;
	/* The ping goes out as soon as the link is up; a ping pending from the
	 * last link keeps its time, so failure detection is not reset. */
	{
		int64_t old = nb->ping_sent;

		send_ping(l, (atomic_load(&n->flags) & CLUSTER_NODE_MEET) ? MSG_MEET : MSG_PING);
		if (old)
			nb->ping_sent = old;
	}
	atomic_fetch_and(&n->flags, ~(uint32_t)CLUSTER_NODE_MEET);
}

/* ---- the cron (every 100 ms) ---- */

static void cron(unsigned tick)
{
	struct cluster_node *me = cluster_myself(), *next;
	int64_t now = now_ms(), timeout = config.cluster_node_timeout;
	int64_t hs_timeout = timeout < 1000 ? 1000 : timeout;

	cluster_update_myself_announced();
	for (struct cluster_node *n = cluster_nodes_first(); n; n = next) {
		struct cluster_node_bus *nb = cluster_nb(n);
		uint32_t f = atomic_load(&n->flags);

		next = n->next;
		if (n == me || (f & CLUSTER_NODE_NOADDR))
			continue;
		if ((f & CLUSTER_NODE_HANDSHAKE) && now - nb->ctime > hs_timeout) {
			cluster_ctl_node_delete(n);
			continue;
		}
		if (!nb->link)
			node_connect(n);
	}
	/* Each second, a ping to the node we heard from least recently. */
	if (tick % 10 == 0) {
		struct cluster_node *oldest = NULL;

		for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
			struct cluster_node_bus *nb = cluster_nb(n);

			if (n == me || !nb->link || nb->ping_sent ||
			    (atomic_load(&n->flags) & CLUSTER_NODE_HANDSHAKE))
				continue;
			if (!oldest || nb->pong_received < cluster_nb(oldest)->pong_received)
				oldest = n;
		}
		if (oldest)
			send_ping(cluster_nb(oldest)->link, MSG_PING);
	}
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next) {
		struct cluster_node_bus *nb = cluster_nb(n);
		uint32_t f = atomic_load(&n->flags);

		if (n == me || (f & (CLUSTER_NODE_NOADDR | CLUSTER_NODE_HANDSHAKE)))
			continue;
		/* A link that carries nothing back for half the timeout is
		 * replaced: the node may be fine behind a stuck connection. */
		if (nb->link && now - nb->link->ctime > timeout && nb->ping_sent &&
		    now - nb->ping_sent > timeout / 2 && now - nb->data_received > timeout / 2) {
			link_free(nb->link);
			continue;
		}
		if (nb->link && !nb->ping_sent && now - nb->pong_received > timeout / 2) {
			send_ping(nb->link, MSG_PING);
			continue;
		}
		if (nb->ping_sent && now - nb->ping_sent > timeout &&
		    !(f & (CLUSTER_NODE_PFAIL | CLUSTER_NODE_FAIL))) {
			log_verbose("*** NODE %.40s possibly failing", n->name);
			atomic_fetch_or(&n->flags, CLUSTER_NODE_PFAIL);
			cluster_ctl.todo_state = true;
		}
	}
	for (struct cluster_node *n = cluster_nodes_first(); n; n = n->next)
		if (atomic_load(&n->flags) & CLUSTER_NODE_PFAIL)
			cluster_mark_failing_if_needed(n);
	cluster_update_state();
}

/* ---- the thread ---- */

void cluster_bus_wake(void)
{
	uint64_t one = 1;

	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
		/* Full counter: the thread is awake anyway. */
	}
}

static void accept_on(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			return;
		sock_nonblock(fd);
		link_new(fd, true, NULL);
	}
}

/* Drops the lock and deletes the keys of the slots this node lost. */
static void unlock_and_delete_dirty(void)
{
	unsigned char dirty[SLOTS_BYTES];
	bool any = false;

	memcpy(dirty, cluster_ctl.dirty_slots, sizeof(dirty));
	memset(cluster_ctl.dirty_slots, 0, sizeof(cluster_ctl.dirty_slots));
	cluster_unlock();
	for (unsigned j = 0; j < CLUSTER_SLOTS; j++)
		if (dirty[j >> 3] & (1 << (j & 7))) {
			/* Not if it came back meanwhile. */
			if (!cluster_owns_slot((uint16_t)j))
				cluster_slot_keys_delete((uint16_t)j);
			any = true;
		}
	(void)any;
}

static void *bus_main(void *arg)
{
	struct pollfd *pfd = NULL;
	struct cluster_link **owner = NULL;
	size_t cap = 0;
	int64_t last_cron = 0;
	unsigned tick = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "xkv-cbus");
	while (atomic_load(&running)) {
		size_t n = 0, need;
		int64_t now;

		cluster_lock();
		need = nlisten + 1 + cluster_link_count() + 1;
		if (need > cap) {
			cap = need * 2;
			pfd = xrealloc(pfd, cap * sizeof(*pfd));
			owner = xrealloc(owner, cap * sizeof(*owner));
		}
		for (unsigned i = 0; i < nlisten; i++) {
			pfd[n] = (struct pollfd){ .fd = listen_fds[i], .events = POLLIN };
			owner[n++] = NULL;
		}
		pfd[n] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
		owner[n++] = NULL;
		for (struct cluster_link *l = links; l; l = l->next) {
			if (l->dead)
				continue;
			pfd[n] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
			if (l->connecting || l->woff < l->wlen)
				pfd[n].events |= POLLOUT;
			owner[n++] = l;
		}
		cluster_unlock();
		poll(pfd, n, 100);
		cluster_lock();
		for (size_t i = 0; i < n; i++) {
			struct cluster_link *l = owner[i];

			if (!pfd[i].revents)
				continue;
			if (!l) {
				if (pfd[i].fd == wake_fd) {
					uint64_t v;

					if (read(wake_fd, &v, sizeof(v)) < 0) {
						/* nothing pending */
					}
				} else {
					accept_on(pfd[i].fd);
				}
				continue;
			}
			if (l->dead)
				continue;
			if (l->connecting && (pfd[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
				int err = 0;
				socklen_t el = sizeof(err);

				getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &el);
				if (err) {
					link_free(l);
					continue;
				}
				l->connecting = false;
			}
			if (pfd[i].revents & (POLLIN | POLLERR | POLLHUP))
				link_read(l);
		}
		now = now_ms();
		if (now - last_cron >= 100) {
			last_cron = now;
			cron(tick++);
		}
		if (cluster_ctl.todo_state)
			cluster_update_state();
		for (struct cluster_link *l = links; l; l = l->next)
			link_flush(l);
		links_sweep();
		if (cluster_ctl.todo_save) {
			cluster_ctl.todo_save = false;
			if (cluster_config_save(true) < 0)
				log_warning("Fatal: can't update cluster config file.");
		}
		unlock_and_delete_dirty();
	}
	xfree(pfd);
	xfree(owner);
	return NULL;
}

static int listen_one(const char *addr, int port, bool optional)
{
	struct sockaddr_storage sa = { 0 };
	socklen_t sl;
	int fd, one = 1;
	bool v6 = strchr(addr, ':') != NULL;

	if (!strcmp(addr, "*"))
		addr = "0.0.0.0";
	if (!strcmp(addr, "::*"))
		addr = "::";
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			return optional ? 0 : -EINVAL;
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
			return optional ? 0 : -EINVAL;
		sl = sizeof(*s4);
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return optional ? 0 : -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 511) < 0) {
		int err = errno;

		close(fd);
		if (optional)
			return 0;
		log_warning("Could not create server TCP listening socket %s:%d: %s", addr, port,
			    strerror(err));
		return -err;
	}
	if (nlisten < sizeof(listen_fds) / sizeof(listen_fds[0]))
		listen_fds[nlisten++] = fd;
	else
		close(fd);
	return 0;
}

int cluster_bus_start(void)
{
	struct cluster_node *me = cluster_myself();
	long long port =
		config.cluster_port ? config.cluster_port : config.port + CLUSTER_PORT_INCR;
	const char *p = config.bind[0] ? config.bind : "* -::*";

	if (!cluster_enabled())
		return 0;
	if (port > 65535) {
		log_warning("Redis port number too high. Cluster communication port is 10,000 port "
			    "numbers higher than your Redis port. Your Redis port number must be "
			    "55535 or less.");
		return -1;
	}
	if (!me->bus) {
		me->bus = xcalloc(1, sizeof(struct cluster_node_bus));
		cluster_nb(me)->ctime = now_ms();
	}
	if (cluster_config_start() < 0)
		return -1;
	while (*p) {
		size_t len = strcspn(p, " ");
		char addr[128];
		bool optional = p[0] == '-';

		if (len && len - optional < sizeof(addr)) {
			snprintf(addr, sizeof(addr), "%.*s", (int)(len - optional), p + optional);
			if (listen_one(addr, (int)port, optional) < 0)
				return -1;
		}
		p += len;
		p += strspn(p, " ");
	}
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wake_fd < 0)
		return -1;
	atomic_store(&running, true);
	if (pthread_create(&thread, NULL, bus_main, NULL) != 0) {
		atomic_store(&running, false);
		return -1;
	}
	return 0;
}

void cluster_bus_stop(void)
{
	if (!atomic_load(&running))
		return;
	atomic_store(&running, false);
	cluster_bus_wake();
	pthread_join(thread, NULL);
	cluster_lock();
	for (struct cluster_link *l = links; l; l = l->next)
		link_free(l);
	links_sweep();
	cluster_unlock();
	for (unsigned i = 0; i < nlisten; i++)
		close(listen_fds[i]);
	nlisten = 0;
	close(wake_fd);
	wake_fd = -1;
}

/* ---- CLUSTER LINKS ---- */

void cluster_reply_links(struct client *c)
{
	unsigned n = 0;

	for (struct cluster_link *l = links; l; l = l->next)
		n += !l->dead && l->node;
	reply_array(c, n);
	for (struct cluster_link *l = links; l; l = l->next) {
		if (l->dead || !l->node)
			continue;
		reply_map(c, 6);
		reply_bulk_cstr(c, "direction");
		reply_bulk_cstr(c, l->inbound ? "from" : "to");
		reply_bulk_cstr(c, "node");
		reply_bulk(c, l->node->name, CLUSTER_NAMELEN);
		reply_bulk_cstr(c, "create-time");
		reply_int(c, l->ctime);
		reply_bulk_cstr(c, "events");
		reply_bulk_cstr(c, l->woff < l->wlen ? "rw" : "r");
		reply_bulk_cstr(c, "send-buffer-allocated");
		reply_int(c, (long long)l->wcap);
		reply_bulk_cstr(c, "send-buffer-used");
		reply_int(c, (long long)(l->wlen - l->woff));
	}
}
