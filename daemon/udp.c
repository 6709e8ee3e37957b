// SPDX-License-Identifier: BSD-3-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/types.h>

#include "access.h"
#include "acl_users.h"
#include "client.h"
#include "cluster_route.h"
#include "commands.h"
#include "config.h"
#include "exec_ctx.h"
#include "log.h"
#include "mem.h"
#include "reply.h"
#include "resp.h"
#include "store.h"
#include "udp.h"
#include "util.h"
#include "worker.h"
#include "xkv_abi.h"

#define UDP_BATCH 16
#define UDP_MAX_DATAGRAM 65536

struct udp_buffers {
	char in[UDP_BATCH][UDP_MAX_DATAGRAM];
	char out[UDP_BATCH][UDP_MAX_DATAGRAM];
};

int udp_open(struct worker *w)
{
	long long port = config.udp_port < 0 ? config.port : config.udp_port;
	char *copy, *save = NULL;

	if (port == 0)
		return 0;
	copy = xstrndup(config.bind, strlen(config.bind));
	for (char *a = strtok_r(copy, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
		struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
					  .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
		bool optional = a[0] == '-';
		const char *addr = optional ? a + 1 : a;
		struct addrinfo *ai;
		char service[16];
		int fd, one = 1, rcvbuf = 4 * 1024 * 1024;

		if (w->nudp == (int)(sizeof(w->udp_fds) / sizeof(w->udp_fds[0])))
			break;
		if (strcmp(addr, "*") == 0)
			addr = "0.0.0.0";
		snprintf(service, sizeof(service), "%lld", port);
		if (getaddrinfo(addr, service, &hints, &ai) != 0)
			continue;
		fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
			/* Misses arrive in bursts behind kernel hits: room for them. */
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
			if (ai->ai_family == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				w->udp_fds[w->nudp++] = fd;
				fd = -1;
			} else if (!optional) {
				log_warning("Could not bind UDP %s:%lld: %s", addr, port,
					    strerror(errno));
			}
			if (fd >= 0)
				close(fd);
		}
		freeaddrinfo(ai);
	}
	xfree(copy);
	return 0;
}

void udp_close(struct worker *w)
{
	for (int i = 0; i < w->nudp; i++)
		close(w->udp_fds[i]);
	w->nudp = 0;
	xfree(w->udp_buffers);
	w->udp_buffers = NULL;
}

/* A RESP reply being built in a datagram. */
struct out {
	char *p;
	size_t len, room;
	size_t needed; /* what the whole reply takes, even past room */
	size_t value_len;
};

static void out_add(struct out *o, const void *p, size_t len)
{
	if (o->len + len <= o->room) {
		memcpy(o->p + o->len, p, len);
		o->len += len;
	}
	o->needed += len;
}

static void out_str(struct out *o, const char *s)
{
	out_add(o, s, strlen(s));
}

static void serve_get(const struct arg *key, struct out *o)
{
	struct lockset ls;
	struct exec_ctx x;
	struct entry *e;
	char tmp[LL_STR_SIZE + 1], head[32];

	lockset_init(&ls);
	lockset_add_key(&ls, 0, key->p, key->len);
	lockset_acquire(&ls);
	exec_ctx_push(&x, NULL, NULL, 0, 0, 0);
	e = db_find_get(0, key->p, key->len);
	if (!e) {
		out_str(o, "$-1\r\n");
	} else if (e->val.type != OBJ_STRING) {
		out_str(o, ERR_WRONGTYPE "\r\n");
	} else {
		size_t vlen;
		const char *v = obj_str(&e->val, tmp, &vlen);

		snprintf(head, sizeof(head), "$%zu\r\n", vlen);
		out_str(o, head);
		out_add(o, v, vlen);
		out_str(o, "\r\n");
		o->value_len = vlen;
	}
	exec_ctx_pop(&x);
	lockset_release(&ls);
}

/*
 * MGET key...: Redis's array reply, nil for a missing key or one of another
 * type. The keys' shards are locked together, so the reply is one snapshot,
 * as over TCP. Each read counts toward admission, as a GET's does, so keys
 * read only by MGET become kernel-served too. o->value_len stays 0: with
 * XKV_F_TRUNCATED the client is told the whole reply's size.
 */
static void serve_mget(const struct arg *keys, int nkeys, struct out *o)
{
	struct lockset ls;
	struct exec_ctx x;
	char tmp[LL_STR_SIZE + 1], head[32];

	lockset_init(&ls);
	for (int i = 0; i < nkeys; i++)
		lockset_add_key(&ls, 0, keys[i].p, keys[i].len);
	lockset_acquire(&ls);
	/* One time snapshot for every key, as a command's. */
	exec_ctx_push(&x, NULL, NULL, 0, 0, 0);
	snprintf(head, sizeof(head), "*%d\r\n", nkeys);
	out_str(o, head);
	for (int i = 0; i < nkeys; i++) {
		struct entry *e = db_find_get(0, keys[i].p, keys[i].len);
		size_t vlen;
		const char *v;

		if (!e || e->val.type != OBJ_STRING) {
			out_str(o, "$-1\r\n");
			continue;
		}
		v = obj_str(&e->val, tmp, &vlen);
		snprintf(head, sizeof(head), "$%zu\r\n", vlen);
		out_str(o, head);
		out_add(o, v, vlen);
		out_str(o, "\r\n");
	}
	exec_ctx_pop(&x);
	lockset_release(&ls);
}

/* Cluster mode: a GET or MGET of a slot this node does not serve gets
 * the redirect TCP would (MOVED, ASK, CROSSSLOT...); false once answered. */
static bool udp_routed(struct client *pc, struct out *o)
{
	char err[512];

	if (cluster_route_udp(pc, err, sizeof(err)))
		return true;
	out_str(o, err);
	out_str(o, "\r\n");
	return false;
}

/* GET, MGET and PING with their arities: what UDP serves. */
static bool served_over_udp(const struct client *pc)
{
	const struct arg *name = &pc->argv[0];

	return (str_eq_nocase(name->p, name->len, "GET") && pc->argc == 2) ||
	       (str_eq_nocase(name->p, name->len, "MGET") && pc->argc >= 2) ||
	       (str_eq_nocase(name->p, name->len, "PING") && pc->argc <= 2);
}

/* The default user's ACL, when it restricts anything: false once the
 * NOPERM that TCP would give is the answer (before a cluster redirect, as
 * Redis checks ACL first). */
static bool udp_acl_allows(struct client *pc, struct out *o)
{
	char msg[600];

	if (acl_udp_allowed(command_lookup(pc->argv[0].p, pc->argv[0].len), pc->argc, pc->argv, msg,
			    sizeof(msg)))
		return true;
	out_str(o, "-");
	out_str(o, msg);
	out_str(o, "\r\n");
	return false;
}

/* Runs the one command in cmd[0..len) into o. */
static void serve_command(char *cmd, size_t len, struct out *o)
{
	struct client pc = { .qbuf = cmd,
			     .qlen = len,
			     .qcap = len,
			     .authenticated = true,
			     .resp = 2,
			     .mb_left = -1,
			     .bulk_len = -1 };
	const char *err = NULL;
	int r = resp_parse_request(&pc, &err);

	if (r == RESP_ERROR) {
		out_str(o, "-ERR ");
		out_str(o, err);
		out_str(o, "\r\n");
	} else if (r != RESP_REQUEST || pc.argc == 0) {
		out_str(o, "-ERR Protocol error: incomplete command\r\n");
	} else if (pc.qpos != pc.qlen) {
		out_str(o, "-ERR Protocol error: one command per datagram\r\n");
	} else if (acl_default_udp() == ACL_UDP_CHECKED && served_over_udp(&pc) &&
		   !udp_acl_allows(&pc, o)) {
		/* NOPERM is the answer */
	} else if (__builtin_expect(config.cluster_enabled, 0) && !udp_routed(&pc, o)) {
		/* the redirect is the answer */
	} else if (str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "GET") && pc.argc == 2) {
		serve_get(&pc.argv[1], o);
	} else if (str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "MGET") && pc.argc >= 2) {
		serve_mget(&pc.argv[1], pc.argc - 1, o);
	} else if (str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "PING") && pc.argc <= 2) {
		if (pc.argc == 1) {
			out_str(o, "+PONG\r\n");
		} else {
			char head[32];

			snprintf(head, sizeof(head), "$%zu\r\n", pc.argv[1].len);
			out_str(o, head);
			out_add(o, pc.argv[1].p, pc.argv[1].len);
			out_str(o, "\r\n");
		}
	} else if (str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "GET") ||
		   str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "MGET") ||
		   str_eq_nocase(pc.argv[0].p, pc.argv[0].len, "PING")) {
		out_str(o, "-ERR wrong number of arguments for this command over UDP\r\n");
	} else {
		out_str(o, "-ERR only GET, MGET and PING are served over UDP: use TCP for this "
			   "command\r\n");
	}
	xfree(pc.argv);
	xfree(pc.arg_off);
	xfree(pc.inline_buf);
}

/* Builds the reply datagram for one request; returns its length, 0 to drop. */
static size_t answer(const char *req, size_t len, char *reply)
{
	const struct xkv_udp_hdr *in = (const void *)req;
	struct xkv_udp_hdr *h = (void *)reply;
	struct out o = { .p = reply + sizeof(*h), .room = len - sizeof(*h) };
	size_t cmd_len;

	if (len < sizeof(*in) || ntohs(in->magic) != XKV_UDP_MAGIC ||
	    in->version != XKV_UDP_VERSION || (in->flags & XKV_F_REPLY))
		return 0; /* not ours: no answer to strangers */
	cmd_len = ntohs(in->cmd_len);
	*h = *in;
	h->flags = XKV_F_REPLY;
	h->token = 0;
	h->reserved = 0;
	h->value_len = 0;
	if (cmd_len > len - sizeof(*in)) {
		out_str(&o, "-ERR Protocol error: cmd_len exceeds the datagram\r\n");
	} else if (!access_udp_token_ok(in->token) || acl_default_udp() == ACL_UDP_OFF) {
		/* A default user that is off opens nothing, as over TCP. */
		out_str(&o, "-NOAUTH Authentication required.\r\n");
	} else {
		char cmd[cmd_len + 1];

		memcpy(cmd, req + sizeof(*in), cmd_len);
		cmd[cmd_len] = '\0';
		serve_command(cmd, cmd_len, &o);
	}
	if (o.needed > o.room) {
		/* Never larger than the request: say how big the value is. */
		h->flags |= XKV_F_TRUNCATED;
		h->cmd_len = 0;
		h->value_len = htonl((uint32_t)(o.value_len ? o.value_len : o.needed));
		return sizeof(*h);
	}
	h->cmd_len = htons((uint16_t)o.len);
	h->value_len = htonl((uint32_t)o.value_len);
	return sizeof(*h) + o.len;
}

void udp_serve(struct worker *w, int fd)
{
	struct udp_buffers *b;
	struct mmsghdr in[UDP_BATCH], out[UDP_BATCH];
	struct iovec in_iov[UDP_BATCH], out_iov[UDP_BATCH];
	struct sockaddr_storage peers[UDP_BATCH];

	/* The batch's 2 MiB of datagram buffers exist from the first datagram
	 * on: a server nobody asks over UDP holds (and counts in used_memory)
	 * none of it. */
	if (!w->udp_buffers)
		w->udp_buffers = xmalloc(sizeof(struct udp_buffers));
	b = w->udp_buffers;
	/* Bounded: a flood cannot keep this worker from its TCP clients. */
	for (int round = 0; round < 8; round++) {
		int n, nout = 0;

		memset(in, 0, sizeof(in));
		for (int i = 0; i < UDP_BATCH; i++) {
			in_iov[i].iov_base = b->in[i];
			in_iov[i].iov_len = UDP_MAX_DATAGRAM;
			in[i].msg_hdr.msg_iov = &in_iov[i];
			in[i].msg_hdr.msg_iovlen = 1;
			in[i].msg_hdr.msg_name = &peers[i];
			in[i].msg_hdr.msg_namelen = sizeof(peers[i]);
		}
		n = recvmmsg(fd, in, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		memset(out, 0, sizeof(out));
		for (int i = 0; i < n; i++) {
			size_t len;

			stat_add(&w->stats.net_in, in[i].msg_len);
			/* As over TCP; unanswered, the client falls back to TCP and
			 * learns why there. */
			if (worker_protected_refuses(&peers[i])) {
				continue;
			}
			len = answer(b->in[i], in[i].msg_len, b->out[nout]);
			if (!len)
				continue;
			stat_add(&w->stats.commands, 1);
			stat_add(&w->stats.net_out, len);
			out_iov[nout].iov_base = b->out[nout];
			out_iov[nout].iov_len = len;
			out[nout].msg_hdr.msg_iov = &out_iov[nout];
			out[nout].msg_hdr.msg_iovlen = 1;
			out[nout].msg_hdr.msg_name = &peers[i];
			out[nout].msg_hdr.msg_namelen = in[i].msg_hdr.msg_namelen;
			nout++;
		}
		if (nout && sendmmsg(fd, out, (unsigned)nout, MSG_DONTWAIT) < 0)
			log_verbose("UDP send: %s", strerror(errno));
		if (n < UDP_BATCH)
			return;
	}
}
