// SPDX-License-Identifier: BSD-3-Clause
#include <pthread.h>
#include <stdint.h>

#include "client.h"
#include "commands.h"
#include "mem.h"
#include "multi.h"
#include "pause.h"
#include "script.h"
#include "util.h"
#include "worker.h"

/* A held request: copies of its arguments (the query buffer moves on). */
struct held_request {
	int argc;
	struct arg *argv;
	enum pause_type holds_from; /* held while the pause is at least this */
};

int pause_type_now;
int pause_failover_now;
static int64_t pause_end_ms; /* mono ms; atomic */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* CLIENT PAUSE's, ending one whose deadline passed. */
static int client_pause(void)
{
	int t = __atomic_load_n(&pause_type_now, __ATOMIC_RELAXED);

	if (t == PAUSE_OFF || mono_ms() < __atomic_load_n(&pause_end_ms, __ATOMIC_RELAXED))
		return t;
	pthread_mutex_lock(&lock);
	if (pause_type_now != PAUSE_OFF && mono_ms() >= pause_end_ms)
		__atomic_store_n(&pause_type_now, PAUSE_OFF, __ATOMIC_RELAXED);
	t = pause_type_now;
	pthread_mutex_unlock(&lock);
	return t;
}

enum pause_type pause_current(void)
{
	int t = client_pause();

	if (t == PAUSE_OFF && __atomic_load_n(&pause_failover_now, __ATOMIC_RELAXED))
		t = PAUSE_WRITE;
	return (enum pause_type)t;
}

int64_t pause_ms_left(void)
{
	int64_t left = __atomic_load_n(&pause_end_ms, __ATOMIC_RELAXED) - mono_ms();

	/* A failover's pause has no deadline: its end wakes the workers. */
	if (left <= 0 && __atomic_load_n(&pause_failover_now, __ATOMIC_RELAXED))
		return 1000;
	return left < 0 ? 0 : left;
}

void pause_start(int64_t end_ms, enum pause_type type)
{
	pthread_mutex_lock(&lock);
	/* An expired pause counts as none: its deadline is not extended. */
	if (pause_type_now != PAUSE_OFF && mono_ms() >= pause_end_ms)
		pause_type_now = PAUSE_OFF;
	if (pause_type_now == PAUSE_OFF || end_ms > pause_end_ms)
		__atomic_store_n(&pause_end_ms, end_ms, __ATOMIC_RELAXED);
	if ((int)type > pause_type_now)
		__atomic_store_n(&pause_type_now, (int)type, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
}

/* On a worker holding clients: UNPAUSE lets them go. */
static void wake_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	(void)client_id;
	(void)payload;
	if (w->nheld)
		pause_release(w);
}

static const struct mail_ops wake_mail = { .deliver = wake_deliver };

static void wake_held(void)
{
	/* Held clients resume on their own workers. */
	for (unsigned i = 0; i < server.nworkers; i++)
		if (__atomic_load_n(&server.workers[i].nheld, __ATOMIC_RELAXED))
			worker_post(&server.workers[i], &wake_mail, 0);
}

void pause_stop(void)
{
	pthread_mutex_lock(&lock);
	__atomic_store_n(&pause_type_now, PAUSE_OFF, __ATOMIC_RELAXED);
	__atomic_store_n(&pause_end_ms, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
	wake_held();
}

void pause_failover(bool on)
{
	__atomic_store_n(&pause_failover_now, on ? 1 : 0, __ATOMIC_RELAXED);
	if (!on)
		wake_held();
}

/* Does cmd with argv write, or may it propagate (PUBLISH)? A script by its
 * declared flags, as Redis's getCommandFlags: no-writes is a read. */
static bool call_writes(const struct command *cmd, int argc, const struct arg *argv)
{
	if (!(cmd->flags & (CMD_WRITE | CMD_MAY_REPLICATE)))
		return false;
	if (cmd->fn == cmd_eval || cmd->fn == cmd_evalsha)
		return !script_declares_no_writes(argc, argv, cmd->fn == cmd_evalsha);
	if (cmd->fn == cmd_fcall)
		return !function_declares_no_writes(argc, argv);
	return true;
}

/* EXEC by what it queued. */
static bool writes(const struct client *c, const struct command *cmd)
{
	if (cmd->fn == cmd_exec && c->in_multi) {
		for (int i = 0; i < c->nqueued; i++)
			if (call_writes(c->queue[i].cmd, c->queue[i].argc, c->queue[i].argv))
				return true;
		return false;
	}
	return call_writes(cmd, c->argc, c->argv);
}

bool pause_holds(const struct client *c, const struct command *cmd)
{
	enum pause_type t = pause_current();

	if (t == PAUSE_OFF || (c->flags & CLIENT_MONITOR))
		return false;
	/* Refused inside MULTI anyway: the error comes at once. */
	if (c->in_multi && (cmd->flags & CMD_NO_MULTI))
		return false;
	return t == PAUSE_ALL || writes(c, cmd);
}

static void link_tail(struct worker *w, struct client *c)
{
	c->next_held = NULL;
	c->prev_held = w->held_tail;
	if (w->held_tail)
		w->held_tail->next_held = c;
	else
		w->held_head = c;
	w->held_tail = c;
	__atomic_store_n(&w->nheld, w->nheld + 1, __ATOMIC_RELAXED);
}

static void unlink_held(struct worker *w, struct client *c)
{
	if (c->prev_held)
		c->prev_held->next_held = c->next_held;
	else
		w->held_head = c->next_held;
	if (c->next_held)
		c->next_held->prev_held = c->prev_held;
	else
		w->held_tail = c->prev_held;
	c->next_held = c->prev_held = NULL;
	__atomic_store_n(&w->nheld, w->nheld - 1, __ATOMIC_RELAXED);
}

static void free_request(struct held_request *h)
{
	for (int i = 0; i < h->argc; i++)
		xfree(h->argv[i].p);
	xfree(h->argv);
	xfree(h);
}

void pause_hold(struct client *c, const struct command *cmd)
{
	struct held_request *h = xmalloc(sizeof(*h));

	h->argc = c->argc;
	h->argv = xmalloc(sizeof(*h->argv) * (size_t)c->argc);
	for (int i = 0; i < c->argc; i++) {
		h->argv[i].p = xstrndup(c->argv[i].p, c->argv[i].len);
		h->argv[i].len = c->argv[i].len;
	}
	h->holds_from = writes(c, cmd) ? PAUSE_WRITE : PAUSE_ALL;
	c->held = h;
	c->flags |= CLIENT_HELD;
	/* CLIENT LIST shows the held command, as Redis does. */
	__atomic_store_n(&c->last_cmd, cmd->name, __ATOMIC_RELAXED);
	link_tail(c->worker, c);
}

/* Runs c's held request through dispatch again (it may be held again), then
 * what it sent meanwhile. */
static void run_held(struct client *c)
{
	struct held_request *h = c->held;
	struct arg *argv = c->argv;
	int argc = c->argc;

	c->held = NULL;
	c->flags &= ~CLIENT_HELD;
	c->argv = h->argv;
	c->argc = h->argc;
	command_dispatch(c);
	c->argv = argv;
	c->argc = argc;
	free_request(h);
	if (c->flags & CLIENT_HELD)
		return;
	if (!c->blocked)
		client_command_done(c);
	if (!client_process_input(c) && !(c->flags & CLIENT_CLOSE_ASAP))
		c->flags |= CLIENT_CLOSE_AFTER_REPLY;
	c->worker->engine->wants_write(c);
}

void pause_release(struct worker *w)
{
	enum pause_type t = pause_current();
	struct client *c = w->held_head;

	/* Take the FIFO; requests still covered go back in their order, and
	 * one held again joins behind them. */
	w->held_head = w->held_tail = NULL;
	__atomic_store_n(&w->nheld, 0, __ATOMIC_RELAXED);
	while (c) {
		struct client *next = c->next_held;

		c->next_held = c->prev_held = NULL;
		if (c->closing || t >= c->held->holds_from)
			link_tail(w, c);
		else
			run_held(c);
		c = next;
	}
}

void pause_client_free(struct client *c)
{
	if (!c->held)
		return;
	unlink_held(c->worker, c);
	free_request(c->held);
	c->held = NULL;
}
