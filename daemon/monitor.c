// SPDX-License-Identifier: BSD-3-Clause
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "blocking.h"
#include "client.h"
#include "commands.h"
#include "exec_ctx.h"
#include "mem.h"
#include "monitor.h"
#include "obuf.h"
#include "text.h"
#include "util.h"
#include "worker.h"

unsigned monitor_total;

/* A formatted line, shared by the mails of one feed. */
struct monitor_line {
	int refs; /* atomic */
	size_t len;
	char data[];
};

/*
 * Arguments the running command asked to hide. Valid only for the command it
 * was recorded for (the client's id and its command count), so a stale entry
 * can never redact, or leak into, another command's line. The id, not the
 * client's address: a freed client's memory is soon a new client's, whose
 * first command has the same count as the old one's AUTH. Past the fixed
 * room, everything from the first index that did not fit is hidden: more,
 * never less.
 */
#define REDACT_MAX 16

static __thread struct {
	uint64_t id; /* client ids start at 1: 0 matches none */
	uint64_t seq;
	int n, from;
	int idx[REDACT_MAX];
} redact;

void monitor_redact(struct client *c, int i)
{
	if (redact.id != c->id || redact.seq != c->commands) {
		redact.id = c->id;
		redact.seq = c->commands;
		redact.n = 0;
		redact.from = INT_MAX;
	}
	if (redact.n < REDACT_MAX)
		redact.idx[redact.n++] = i;
	else if (i < redact.from)
		redact.from = i;
}

static bool redacted(const struct client *c, int i)
{
	/* A stand-in client (id 0) never matches, not even the empty record. */
	if (!c->id || redact.id != c->id || redact.seq != c->commands)
		return false;
	if (i >= redact.from)
		return true;
	for (int k = 0; k < redact.n; k++)
		if (redact.idx[k] == i)
			return true;
	return false;
}

bool monitor_arg_redacted(const struct client *c, int i)
{
	return redacted(c, i);
}

void monitor_start(struct client *c)
{
	struct worker *w = c->worker;

	c->flags |= CLIENT_MONITOR;
	c->prev_monitor = NULL;
	c->next_monitor = w->monitors;
	if (w->monitors)
		w->monitors->prev_monitor = c;
	w->monitors = c;
	__atomic_fetch_add(&w->nmonitors, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&monitor_total, 1, __ATOMIC_RELAXED);
}

void monitor_stop(struct client *c)
{
	struct worker *w = c->worker;

	if (!(c->flags & CLIENT_MONITOR))
		return;
	c->flags &= ~CLIENT_MONITOR;
	if (c->prev_monitor)
		c->prev_monitor->next_monitor = c->next_monitor;
	else
		w->monitors = c->next_monitor;
	if (c->next_monitor)
		c->next_monitor->prev_monitor = c->prev_monitor;
	c->next_monitor = c->prev_monitor = NULL;
	__atomic_fetch_sub(&w->nmonitors, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&monitor_total, 1, __ATOMIC_RELAXED);
}

/* How the line names c: "unix:<path>" for a Unix socket, else "ip:port". */
static const char *peer_of(struct client *c)
{
	struct sockaddr_un un;
	socklen_t len = sizeof(un);

	if (c->flags & CLIENT_SCRIPT)
		return "lua";
	if (c->monitor_peer)
		return c->monitor_peer;
	/* An accepted Unix socket's local name is the listener's path. */
	if (c->fd >= 0 && getsockname(c->fd, (struct sockaddr *)&un, &len) == 0 &&
	    un.sun_family == AF_UNIX) {
		size_t plen = strnlen(un.sun_path, sizeof(un.sun_path));

		c->monitor_peer = xmalloc(plen + 6);
		memcpy(c->monitor_peer, "unix:", 5);
		memcpy(c->monitor_peer + 5, un.sun_path, plen);
		c->monitor_peer[plen + 5] = '\0';
	} else {
		c->monitor_peer = xstrndup(c->addr, strlen(c->addr));
	}
	return c->monitor_peer;
}

static struct monitor_line *format_line(struct client *c)
{
	struct text t = { 0 };
	struct monitor_line *line;
	struct timeval tv;

	gettimeofday(&tv, NULL);
	text_printf(&t, "+%ld.%06ld [%d %s] ", (long)tv.tv_sec, (long)tv.tv_usec, c->db,
		    peer_of(c));
	for (int i = 0; i < c->argc; i++) {
		if (redacted(c, i))
			text_append(&t, "\"(redacted)\"", 12);
		else
			text_repr(&t, c->argv[i].p, c->argv[i].len);
		if (i != c->argc - 1)
			text_append(&t, " ", 1);
	}
	text_append(&t, "\r\n", 2);
	line = xmalloc(sizeof(*line) + t.len);
	line->refs = 1;
	line->len = t.len;
	memcpy(line->data, t.p, t.len);
	xfree(t.p);
	return line;
}

static void line_put(struct monitor_line *line)
{
	if (__atomic_sub_fetch(&line->refs, 1, __ATOMIC_ACQ_REL) == 0)
		xfree(line);
}

/* Appends the line to every monitor of w (its own thread). */
static void deliver(struct worker *w, const struct monitor_line *line, const struct client *feeder)
{
	for (struct client *m = w->monitors, *next; m; m = next) {
		next = m->next_monitor;
		if (m->closing || (m->flags & CLIENT_CLOSE_ASAP))
			continue;
		reply_raw(m, line->data, line->len);
		/* A monitor that cannot keep up is closed at its class's limit. */
		if (obuf_check(m))
			continue;
		/* The feeder's own replies are flushed when its input is done. */
		if (m != feeder)
			w->engine->wants_write(m);
	}
}

/* A line for another worker's monitors (defined at the end). */
static const struct mail_ops line_mail;

static void feed(struct client *c)
{
	struct monitor_line *line = format_line(c);

	for (unsigned i = 0; i < server.nworkers; i++) {
		struct worker *w = &server.workers[i];

		if (w == c->worker || !__atomic_load_n(&w->nmonitors, __ATOMIC_RELAXED))
			continue;
		__atomic_fetch_add(&line->refs, 1, __ATOMIC_RELAXED);
		worker_post_payload(w, &line_mail, 0, line);
	}
	if (c->worker->nmonitors)
		deliver(c->worker, line, c);
	line_put(line);
}

void monitor_feed(struct client *c, const struct command *cmd)
{
	if ((cmd->flags & (CMD_ADMIN | CMD_SKIP_MONITOR)) || (exec_ctx_flags() & EXEC_RETRY) ||
	    !c->worker)
		return;
	feed(c);
}

void monitor_feed_script(struct client *c)
{
	if (monitor_active() && c->worker && !(exec_ctx_flags() & EXEC_RETRY))
		feed(c);
}

void monitor_deliver(struct worker *w, void *payload)
{
	deliver(w, payload, NULL);
	line_put(payload);
}

void monitor_mail_free(void *payload)
{
	line_put(payload);
}

static void line_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	(void)client_id;
	monitor_deliver(w, payload);
}

static const struct mail_ops line_mail = { .deliver = line_deliver, .drop = monitor_mail_free };
