// SPDX-License-Identifier: BSD-3-Clause
/*
 * slowlog: a list of slow commands, newest at the head.
 *
 * Locking: slowlog_lock protects the list, its length, the next id, every
 * entry's reference count and the metrics. It is a leaf: nothing else is taken while it is
 * held (a client's name is copied under the registry lock before it). An
 * entry is immutable once linked; SLOWLOG GET takes a reference to the
 * entries it shows and writes the reply without the lock, so a RESET or a
 * trim on another worker only unlinks them and the last reference frees.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "mem.h"
#include "monitor.h"
#include "slowlog.h"
#include "util.h"

struct slowlog_entry {
	struct slowlog_entry *next, *prev;
	unsigned refs; /* the list's one, plus one per reply being written */
	unsigned long long id;
	long long time; /* unix seconds */
	unsigned long long duration;
	int argc;
	struct arg *argv; /* owned copies */
	char *addr, *name;
};

static pthread_mutex_t slowlog_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slowlog_entry *head, *tail;
static unsigned long long length, next_id;
/* The metrics: all commands', and each command's by its index (allocated
 * with the first entry: most servers never log one). */
static struct slowlog_stats total, *per_cmd;

static void entry_free(struct slowlog_entry *e)
{
	for (int i = 0; i < e->argc; i++)
		xfree(e->argv[i].p);
	xfree(e->argv);
	xfree(e->addr);
	xfree(e->name);
	xfree(e);
}

/* Drops a reference; slowlog_lock held. */
static void do_entry_put(struct slowlog_entry *e)
{
	if (--e->refs == 0)
		entry_free(e);
}

static void do_unlink(struct slowlog_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		tail = e->prev;
	length--;
	do_entry_put(e);
}

static void set_arg(struct arg *a, const char *p, size_t len)
{
	a->p = xstrndup(p, len);
	a->len = len;
}

static void set_argf(struct arg *a, const char *fmt, unsigned long long n)
{
	char buf[64];
	int len = snprintf(buf, sizeof(buf), fmt, n);

	set_arg(a, buf, (size_t)len);
}

/* Passwords never reach the log: AUTH's arguments and HELLO's after AUTH. */
static bool redacted(const struct command *cmd, const struct client *c, int argc,
		     const struct arg *argv, int i)
{
	/* What the command itself hid (ACL SETUSER, MIGRATE ... AUTH ...). */
	if (monitor_arg_redacted(c, i))
		return true;
	if (!strcmp(cmd->name, "auth"))
		return i > 0;
	if (!strcmp(cmd->name, "hello"))
		for (int j = 2; j < i && j < argc; j++)
			if (str_eq_nocase(argv[j].p, argv[j].len, "AUTH") && i - j <= 2)
				return true;
	return false;
}

static struct slowlog_entry *entry_new(struct client *c, const struct command *cmd, int c_argc,
				       const struct arg *c_argv, uint64_t duration_us)
{
	struct slowlog_entry *e = xcalloc(1, sizeof(*e));
	/* As Redis: slowlog-entry-max-argc arguments (the last one counting
	 * those left out) and slowlog-entry-max-string-len bytes of each. */
	long long max_argc = __atomic_load_n(&config.slowlog_entry_max_argc, __ATOMIC_RELAXED);
	size_t max_len =
		(size_t)__atomic_load_n(&config.slowlog_entry_max_string_len, __ATOMIC_RELAXED);
	int argc = c_argc > max_argc ? (int)max_argc : c_argc;

	e->refs = 1;
	e->time = now_ms() / 1000;
	e->duration = duration_us;
	e->argc = argc;
	e->argv = xcalloc((size_t)argc, sizeof(*e->argv));
	for (int i = 0; i < argc; i++) {
		const struct arg *a = &c_argv[i];

		if (argc != c_argc && i == argc - 1) {
			set_argf(&e->argv[i], "... (%llu more arguments)",
				 (unsigned long long)(c_argc - argc + 1));
		} else if (redacted(cmd, c, c_argc, c_argv, i)) {
			set_arg(&e->argv[i], "(redacted)", strlen("(redacted)"));
		} else if (a->len > max_len) {
			char tail_text[64];
			int n = snprintf(tail_text, sizeof(tail_text), "... (%llu more bytes)",
					 (unsigned long long)(a->len - max_len));

			e->argv[i].len = max_len + (size_t)n;
			e->argv[i].p = xmalloc(e->argv[i].len + 1);
			memcpy(e->argv[i].p, a->p, max_len);
			memcpy(e->argv[i].p + max_len, tail_text, (size_t)n + 1);
		} else {
			set_arg(&e->argv[i], a->p, a->len);
		}
	}
	e->addr = xstrndup(c->addr, strlen(c->addr));
	/* The name may be replaced by CLIENT SETNAME under the registry lock. */
	registry_lock();
	e->name = c->name ? xstrndup(c->name, strlen(c->name)) : xstrndup("", 0);
	registry_unlock();
	return e;
}

static void stats_add(struct slowlog_stats *s, uint64_t duration_us)
{
	s->count++;
	s->sum_us += duration_us;
	if (duration_us > s->max_us)
		s->max_us = duration_us;
}

void slowlog_push_if_needed(struct client *c, const struct command *cmd, int argc,
			    const struct arg *argv, uint64_t duration_us)
{
	long long threshold = __atomic_load_n(&config.slowlog_log_slower_than, __ATOMIC_RELAXED);
	long long max_len = __atomic_load_n(&config.slowlog_max_len, __ATOMIC_RELAXED);
	struct slowlog_entry *e;

	/* A log of no entries logs nothing and counts nothing, as Redis. */
	if (threshold < 0 || max_len == 0 || duration_us < (uint64_t)threshold ||
	    (cmd->flags & CMD_SKIP_SLOWLOG))
		return;
	e = entry_new(c, cmd, argc, argv, duration_us);
	pthread_mutex_lock(&slowlog_lock);
	if (!per_cmd)
		per_cmd = xcalloc(command_rows(), sizeof(*per_cmd));
	stats_add(&total, duration_us);
	stats_add(&per_cmd[cmd->index], duration_us);
	e->id = next_id++;
	e->next = head;
	if (head)
		head->prev = e;
	else
		tail = e;
	head = e;
	length++;
	while (length > (unsigned long long)max_len)
		do_unlink(tail);
	pthread_mutex_unlock(&slowlog_lock);
}

void slowlog_reply(struct client *c, long long count)
{
	struct slowlog_entry **shown, *e;
	size_t n = 0;

	pthread_mutex_lock(&slowlog_lock);
	if (count < 0 || (unsigned long long)count > length)
		count = (long long)length;
	shown = xcalloc((size_t)count + 1, sizeof(*shown));
	for (e = head; e && n < (size_t)count; e = e->next) {
		e->refs++;
		shown[n++] = e;
	}
	pthread_mutex_unlock(&slowlog_lock);

	reply_array(c, (long)n);
	for (size_t i = 0; i < n; i++) {
		e = shown[i];
		reply_array(c, 6);
		reply_int(c, (long long)e->id);
		reply_int(c, e->time);
		reply_int(c, (long long)e->duration);
		reply_array(c, e->argc);
		for (int j = 0; j < e->argc; j++)
			reply_bulk(c, e->argv[j].p, e->argv[j].len);
		reply_bulk_cstr(c, e->addr);
		reply_bulk_cstr(c, e->name);
	}

	pthread_mutex_lock(&slowlog_lock);
	for (size_t i = 0; i < n; i++)
		do_entry_put(shown[i]);
	pthread_mutex_unlock(&slowlog_lock);
	xfree(shown);
}

unsigned long long slowlog_len(void)
{
	unsigned long long n;

	pthread_mutex_lock(&slowlog_lock);
	n = length;
	pthread_mutex_unlock(&slowlog_lock);
	return n;
}

void slowlog_reset(void)
{
	pthread_mutex_lock(&slowlog_lock);
	while (head)
		do_unlink(head);
	pthread_mutex_unlock(&slowlog_lock);
}

void slowlog_stats(const struct command *cmd, struct slowlog_stats *out)
{
	pthread_mutex_lock(&slowlog_lock);
	if (!cmd)
		*out = total;
	else if (per_cmd)
		*out = per_cmd[cmd->index];
	else
		memset(out, 0, sizeof(*out));
	pthread_mutex_unlock(&slowlog_lock);
}

void slowlog_reset_stats(void)
{
	pthread_mutex_lock(&slowlog_lock);
	memset(&total, 0, sizeof(total));
	if (per_cmd)
		memset(per_cmd, 0, sizeof(*per_cmd) * command_rows());
	pthread_mutex_unlock(&slowlog_lock);
}

void slowlog_free(void)
{
	slowlog_reset();
	pthread_mutex_lock(&slowlog_lock);
	xfree(per_cmd);
	per_cmd = NULL;
	pthread_mutex_unlock(&slowlog_lock);
}
