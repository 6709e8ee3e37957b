// SPDX-License-Identifier: BSD-3-Clause
/* Server commands: COMMAND, INFO, TIME, CONFIG, SHUTDOWN. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "acl_users.h"
#include "config_table.h"
#include "monitor.h"
#include "aof.h"
#include "command_meta.h"
#include "blocking.h"
#include "cluster.h"
#include "cluster_ctl.h"
#include "command_docs.h"
#include "commands.h"
#include "multi.h"
#include "config.h"
#include "defrag.h"
#include "hotkeys.h"
#include "exec_ctx.h"
#include "errorstats.h"
#include "lazyfree.h"
#include "evict.h"
#include "exec_ctx.h"
#include "fastpath.h"
#include "latency.h"
#include "log.h"
#include "mem.h"
#include "memstats.h"
#include "persist.h"
#include "pubsub.h"
#include "rdbfile.h"
#include "repl.h"
#include "text.h"
#include "tracking.h"
#include "script.h"
#include "slowlog.h"
#include "util.h"
#include "worker.h"

#define XKV_VERSION "0.1.0"
#define REDIS_COMPAT_VERSION "7.0.15"

/* ---- COMMAND ---------------------------------------------------------------- */

static const struct {
	uint32_t flag;
	const char *name;
} flag_names[] = {
	{ CMD_WRITE, "write" },
	{ CMD_READONLY, "readonly" },
	{ CMD_DENYOOM, "denyoom" },
	{ CMD_MODULE, "module" },
	{ CMD_ADMIN, "admin" },
	{ CMD_PUBSUB, "pubsub" },
	{ CMD_NOSCRIPT, "noscript" },
	{ CMD_BLOCKING, "blocking" },
	{ CMD_LOADING, "loading" },
	{ CMD_STALE, "stale" },
	{ CMD_SKIP_MONITOR, "skip_monitor" },
	{ CMD_SKIP_SLOWLOG, "skip_slowlog" },
	{ CMD_ASKING, "asking" },
	{ CMD_FAST, "fast" },
	{ CMD_NO_AUTH, "no_auth" },
	{ CMD_NO_ASYNC_LOADING, "no_async_loading" },
	{ CMD_NO_MANDATORY_KEYS, "no_mandatory_keys" },
	{ CMD_NO_MULTI, "no_multi" },
	{ CMD_ALLOW_BUSY, "allow_busy" },
};

/* ACL categories as Redis derives them from flags and the command group, for
 * commands without metadata rows; up to 8 pointers into out. */
static int derived_categories(const struct command *cmd, const char **out)
{
	static const struct {
		const char *group, *category;
	} groups[] = {
		{ "string", "@string" },
		{ "generic", "@keyspace" },
		{ "connection", "@connection" },
		{ "list", "@list" },
		{ "hash", "@hash" },
		{ "set", "@set" },
		{ "sorted-set", "@sortedset" },
		{ "pubsub", "@pubsub" },
		{ "bitmap", "@bitmap" },
	};
	int n = 0;

	if (cmd->flags & CMD_WRITE)
		out[n++] = "@write";
	if (cmd->flags & CMD_READONLY)
		out[n++] = "@read";
	if (cmd->flags & CMD_ADMIN) {
		out[n++] = "@admin";
		out[n++] = "@dangerous";
	}
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(cmd->group, groups[i].group))
			out[n++] = groups[i].category;
	out[n++] = cmd->flags & CMD_FAST ? "@fast" : "@slow";
	if (cmd->flags & CMD_BLOCKING)
		out[n++] = "@blocking";
	return n;
}

/* The command's ACL categories, space-separated, in Redis's order. */
const char *command_acl_categories(const struct command *cmd, char *buf, size_t size)
{
	const char *cats[8];
	int n;
	size_t used = 0;

	if (cmd->meta)
		return cmd->meta->acl;
	n = derived_categories(cmd, cats);
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", cats[i]);
	return buf;
}

static int count_words(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s != ' ' && (s[1] == ' ' || s[1] == '\0');
	return n;
}

/* Each space-separated word of s, as simple strings or as bulk strings. */
static void reply_words(struct client *c, const char *s, bool bulk)
{
	while (*s) {
		size_t len = strcspn(s, " ");

		if (len && bulk) {
			reply_bulk(c, s, len);
		} else if (len) {
			reply_raw(c, "+", 1);
			reply_raw(c, s, len);
			reply_raw(c, "\r\n", 2);
		}
		s += len + (s[len] == ' ');
	}
}

/* True if word is one of the space-separated words of s, in any case. */
static bool has_word(const char *s, const char *word)
{
	while (*s) {
		size_t len = strcspn(s, " ");

		if (str_eq_nocase(s, len, word))
			return true;
		s += len + (s[len] == ' ');
	}
	return false;
}

static void reply_spec_map(struct client *c, const char *type, int n)
{
	reply_map(c, 2);
	reply_bulk_cstr(c, "type");
	reply_bulk_cstr(c, type);
	reply_bulk_cstr(c, "spec");
	reply_map(c, n);
}

static void reply_key_spec(struct client *c, const struct key_spec *s)
{
	reply_map(c, s->notes ? 4 : 3);
	if (s->notes) {
		reply_bulk_cstr(c, "notes");
		reply_bulk_cstr(c, s->notes);
	}
	reply_bulk_cstr(c, "flags");
	reply_set(c, count_words(s->flags));
	reply_words(c, s->flags, false);
	reply_bulk_cstr(c, "begin_search");
	if (s->begin == KEY_BEGIN_INDEX) {
		reply_spec_map(c, "index", 1);
		reply_bulk_cstr(c, "index");
		reply_int(c, s->index);
	} else if (s->begin == KEY_BEGIN_KEYWORD) {
		reply_spec_map(c, "keyword", 2);
		reply_bulk_cstr(c, "keyword");
		reply_bulk_cstr(c, s->keyword);
		reply_bulk_cstr(c, "startfrom");
		reply_int(c, s->index);
	} else {
		reply_spec_map(c, "unknown", 0);
	}
	reply_bulk_cstr(c, "find_keys");
	if (s->find == KEY_FIND_UNKNOWN) {
		reply_spec_map(c, "unknown", 0);
		return;
	}
	reply_spec_map(c, s->find == KEY_FIND_RANGE ? "range" : "keynum", 3);
	reply_bulk_cstr(c, s->find == KEY_FIND_RANGE ? "lastkey" : "keynumidx");
	reply_int(c, s->a);
	reply_bulk_cstr(c, s->find == KEY_FIND_RANGE ? "keystep" : "firstkey");
	reply_int(c, s->b);
	reply_bulk_cstr(c, s->find == KEY_FIND_RANGE ? "limit" : "keystep");
	reply_int(c, s->c);
}

static void reply_key_specs(struct client *c, const struct command *cmd)
{
	int n = 0;

	while (cmd->specs[n].flags)
		n++;
	reply_set(c, n);
	for (const struct key_spec *s = cmd->specs; s->flags; s++)
		reply_key_spec(c, s);
}

static void reply_command_info(struct client *c, const struct command *cmd)
{
	char buf[160];
	const char *cats = command_acl_categories(cmd, buf, sizeof(buf));
	bool movable = cmd->movable;
	/* A container's own flags only steer dispatch; Redis shows none. */
	uint32_t flags = cmd->fn ? cmd->flags : 0;
	int nflags = movable;

	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		nflags += !!(flags & flag_names[i].flag);
	reply_array(c, 10);
	reply_bulk_cstr(c, command_shown_name(cmd));
	reply_int(c, cmd->arity);
	reply_set(c, nflags);
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (flags & flag_names[i].flag)
			reply_status(c, flag_names[i].name);
	if (movable)
		reply_status(c, "movablekeys");
	reply_int(c, cmd->first_key);
	reply_int(c, cmd->last_key);
	reply_int(c, cmd->key_step);
	reply_set(c, count_words(cats));
	reply_words(c, cats, false);
	reply_set(c, cmd->meta ? count_words(cmd->meta->tips) : 0);
	if (cmd->meta)
		reply_words(c, cmd->meta->tips, true);
	reply_key_specs(c, cmd);
	if (cmd->nsubs)
		reply_array(c, cmd->nsubs);
	else
		reply_set(c, 0);
	for (unsigned i = 0; i < cmd->nsubs; i++)
		reply_command_info(c, cmd->subs[i]);
}

static unsigned command_count(void)
{
	unsigned n = 0;

	for (struct command **all = command_all(); *all; all++)
		n++;
	return n;
}

void cmd_command(struct client *c)
{
	reply_array(c, command_count());
	for (struct command **all = command_all(); *all; all++)
		reply_command_info(c, *all);
}

void cmd_command_count(struct client *c)
{
	reply_int(c, command_count());
}

/* A command or "container|sub" by name, for COMMAND INFO / DOCS. */
static struct command *lookup_full_name(const struct arg *a)
{
	const char *bar = memchr(a->p, '|', a->len);
	struct command *cmd = command_lookup(a->p, bar ? (size_t)(bar - a->p) : a->len);

	if (!cmd || !bar)
		return cmd;
	for (unsigned i = 0; i < cmd->nsubs; i++)
		if (str_eq_nocase(bar + 1, a->len - (size_t)(bar + 1 - a->p),
				  cmd->subs[i]->sub_name))
			return cmd->subs[i];
	return NULL;
}

void cmd_command_info(struct client *c)
{
	if (c->argc == 2) {
		cmd_command(c);
		return;
	}
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		struct command *cmd = lookup_full_name(&c->argv[i]);

		if (cmd)
			reply_command_info(c, cmd);
		else
			reply_null(c);
	}
}

void cmd_command_docs(struct client *c)
{
	int found = 0;

	if (c->argc == 2) {
		reply_map(c, command_count());
		for (struct command **all = command_all(); *all; all++) {
			reply_bulk_cstr(c, command_shown_name(*all));
			command_docs_reply(c, *all);
		}
		return;
	}
	for (int i = 2; i < c->argc; i++)
		found += lookup_full_name(&c->argv[i]) != NULL;
	reply_map(c, found);
	for (int i = 2; i < c->argc; i++) {
		struct command *cmd = lookup_full_name(&c->argv[i]);

		if (cmd) {
			reply_bulk_cstr(c, command_shown_name(cmd));
			command_docs_reply(c, cmd);
		}
	}
}

/* COMMAND GETKEYS and GETKEYSANDFLAGS: argv[2..] is the command. */
static void getkeys_generic(struct client *c, bool with_flags)
{
	struct command *cmd = command_lookup(c->argv[2].p, c->argv[2].len);
	const struct arg *argv = c->argv + 2;
	const struct key_spec *which[1024];
	int argc = c->argc - 2, keys[1024], n;

	/* A container needs a subcommand it has, as Redis's lookupCommand. */
	if (cmd && cmd->subs && argc >= 2) {
		struct command *sub = NULL;

		for (unsigned i = 0; i < cmd->nsubs; i++)
			if (str_eq_nocase(c->argv[3].p, c->argv[3].len, cmd->subs[i]->sub_name))
				sub = cmd->subs[i];
		cmd = sub;
	}
	if (!cmd) {
		reply_error(c, "Invalid command specified");
		return;
	}
	if (!command_has_keys(cmd)) {
		reply_error(c, "The command has no key arguments");
		return;
	}
	if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
		reply_error(c, "Invalid number of arguments specified for command");
		return;
	}
	n = command_key_indexes(cmd, argc, argv, keys, which, 1024);
	if (n <= 0) {
		/* EVAL with numkeys 0, or one its handler will refuse. */
		if (cmd->flags & CMD_NO_MANDATORY_KEYS) {
			reply_array(c, 0);
			return;
		}
		reply_error(c, "Invalid arguments specified for command");
		return;
	}
	reply_array(c, n);
	for (int i = 0; i < n; i++) {
		const char *flags;

		if (!with_flags) {
			reply_bulk(c, argv[keys[i]].p, argv[keys[i]].len);
			continue;
		}
		flags = command_meta_key_flags(cmd->name, which[i], argc, argv);
		reply_array(c, 2);
		reply_bulk(c, argv[keys[i]].p, argv[keys[i]].len);
		reply_set(c, count_words(flags));
		reply_words(c, flags, false);
	}
}

void cmd_command_getkeys(struct client *c)
{
	getkeys_generic(c, false);
}

void cmd_command_getkeysandflags(struct client *c)
{
	getkeys_generic(c, true);
}

static bool list_filter(const struct client *c, const struct command *cmd)
{
	char buf[160];

	if (c->argc < 5)
		return true;
	if (arg_is(c, 3, "PATTERN"))
		return glob_match(c->argv[4].p, c->argv[4].len, cmd->name, strlen(cmd->name), true);
	if (arg_is(c, 3, "ACLCAT")) {
		char cat[64];

		snprintf(cat, sizeof(cat), "@%.*s", (int)c->argv[4].len, c->argv[4].p);
		return has_word(command_acl_categories(cmd, buf, sizeof(buf)), cat);
	}
	return false; /* MODULE: there are no modules */
}

void cmd_command_list(struct client *c)
{
	unsigned n = 0;

	if (c->argc != 2 &&
	    (c->argc != 5 || !arg_is(c, 2, "FILTERBY") ||
	     !(arg_is(c, 3, "PATTERN") || arg_is(c, 3, "ACLCAT") || arg_is(c, 3, "MODULE")))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	for (struct command **all = command_all(); *all; all++) {
		n += list_filter(c, *all);
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			n += list_filter(c, (*all)->subs[i]);
	}
	reply_array(c, n);
	for (struct command **all = command_all(); *all; all++) {
		if (list_filter(c, *all))
			reply_bulk_cstr(c, command_shown_name(*all));
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			if (list_filter(c, (*all)->subs[i]))
				reply_bulk_cstr(c, (*all)->subs[i]->name);
	}
}

void cmd_command_help(struct client *c)
{
	static const char *const help[] = {
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}

/* ---- INFO ------------------------------------------------------------------- */

/* "1.50M" style sizes, as Redis's bytesToHuman. */
static void human_bytes(char *out, size_t len, double n)
{
	static const char units[] = "BKMGTP";
	int u = 0;

	while (n >= 1024 && u < 5) {
		n /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%lluB", (unsigned long long)n);
	else
		snprintf(out, len, "%.2f%c", n, units[u]);
}

#define STAT(field) server_stat(offsetof(struct worker_stats, field))

/* Redis's listener lines: one per connection type, with every bind address
 * as configured (bind and port are immutable: no lock needed). */
static void info_listeners(struct text *t)
{
	int n = 0;

	if (config.port) {
		const char *p = config.bind;

		text_printf(t, "listener%d:name=tcp", n++);
		while (*p) {
			size_t len = strcspn(p, " ");

			if (len)
				text_printf(t, ",bind=%.*s", (int)len, p);
			p += len;
			p += strspn(p, " ");
		}
		text_printf(t, ",port=%lld\r\n", config.port);
	}
	if (config.unixsocket[0])
		text_printf(t, "listener%d:name=unix,bind=%s\r\n", n, config.unixsocket);
}

static void info_server(struct text *t)
{
	struct utsname un;
	int64_t now = now_ms(), uptime = (now - server.start_ms) / 1000;

	uname(&un);
	text_printf(t,
		    "# Server\r\n"
		    "redis_version:%s\r\n"
		    "xkv_version:%s\r\n"
		    "redis_git_sha1:00000000\r\n"
		    "redis_git_dirty:0\r\n"
		    "redis_mode:%s\r\n"
		    "os:%s %s %s\r\n"
		    "arch_bits:%d\r\n"
		    "monotonic_clock:POSIX clock_gettime\r\n"
		    "multiplexing_api:%s\r\n"
		    "io_engine:%s\r\n"
		    "io_threads:%u\r\n"
		    "atomicvar_api:c11-builtin\r\n"
		    "gcc_version:%d.%d.%d\r\n"
		    "process_id:%d\r\n"
		    "process_supervised:no\r\n"
		    "run_id:%s\r\n"
		    "tcp_port:%lld\r\n"
		    "server_time_usec:%lld\r\n"
		    "uptime_in_seconds:%lld\r\n"
		    "uptime_in_days:%lld\r\n"
		    "hz:%lld\r\n"
		    "configured_hz:%lld\r\n"
		    "lru_clock:%lld\r\n"
		    "executable:%s\r\n"
		    "config_file:%s\r\n"
		    "io_threads_active:0\r\n",
		    REDIS_COMPAT_VERSION, XKV_VERSION, cluster_enabled() ? "cluster" : "standalone",
		    un.sysname, un.release, un.machine, (int)(sizeof(long) * 8),
		    server.engine->name, server.engine->name, server.nworkers, __GNUC__,
		    __GNUC_MINOR__, __GNUC_PATCHLEVEL__, (int)getpid(), server.run_id, config.port,
		    (long long)now_us(), (long long)uptime, (long long)uptime / 86400, config.hz,
		    config.hz, (long long)(now / 1000) & ((1 << 24) - 1), server.executable,
		    config.config_file ? config.config_file : "");
	info_listeners(t);
}

/* Redis counts clients held by CLIENT PAUSE as blocked (BLOCKED_POSTPONE). */
static unsigned blocked_clients(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < server.nworkers; i++)
		n += __atomic_load_n(&server.workers[i].nblocked, __ATOMIC_RELAXED) +
		     __atomic_load_n(&server.workers[i].nheld, __ATOMIC_RELAXED);
	return n;
}

static void info_clients(struct text *t)
{
	unsigned pubsub = 0, watching = 0, links = 0;
	uint64_t bkeys, bnokey;

	blocking_key_counts(&bkeys, &bnokey);
	registry_lock();
	for (struct client *c = registry_first(); c; c = c->next_in_registry) {
		long subs = 0;

		for (int k = 0; k < 3; k++)
			subs += __atomic_load_n(&c->pubsub_counts[k], __ATOMIC_RELAXED);
		pubsub += subs != 0;
		watching += __atomic_load_n(&c->nwatched, __ATOMIC_RELAXED) != 0;
	}
	registry_unlock();
	if (cluster_enabled()) {
		cluster_lock();
		links = cluster_link_count();
		cluster_unlock();
	}
	text_printf(t,
		    "# Clients\r\n"
		    "connected_clients:%llu\r\n"
		    "cluster_connections:%u\r\n"
		    "maxclients:%lld\r\n"
		    "client_recent_max_input_buffer:0\r\n"
		    "client_recent_max_output_buffer:0\r\n"
		    "blocked_clients:%u\r\n"
		    "tracking_clients:%lu\r\n"
		    "pubsub_clients:%u\r\n"
		    "watching_clients:%u\r\n"
		    "clients_in_timeout_table:0\r\n"
		    "total_watched_keys:%llu\r\n"
		    "total_blocking_keys:%llu\r\n"
		    "total_blocking_keys_on_nokey:%llu\r\n",
		    (unsigned long long)registry_count(), links, config.maxclients,
		    blocked_clients(), __atomic_load_n(&tracking_nclients, __ATOMIC_RELAXED),
		    pubsub, watching, multi_watched_keys(), (unsigned long long)bkeys,
		    (unsigned long long)bnokey);
}

/* config_get's visitor for a single directive: copies its value, which is
 * valid during the visit only, into the 32-byte buffer ctx. */
static void first_value(void *ctx, const char *name, const char *value)
{
	snprintf(ctx, 32, "%s", value);
}

/* The policy's name, into buf (32 bytes). */
static const char *policy_name(char *buf)
{
	snprintf(buf, 32, "noeviction");
	config_get("maxmemory-policy", strlen("maxmemory-policy"), first_value, buf);
	return buf;
}

static void info_memory(struct text *t)
{
	/* used_memory includes the fast path's mapped slab (fastpath.c), as
	 * maxmemory does: it is resident memory of this process. */
	struct memstats m;
	struct defrag_info d;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	size_t total = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
	char h_used[32], h_rss[32], h_peak[32], h_total[32], h_max[32], h_slab[32], h_pool[32],
		h_policy[32];
	char h_vm[32], h_vm_total[32], h_scripts[32];
	long long vm, scripts, fvm, fbytes;
	unsigned long nscripts, nfuncs, nlibs;
	uint64_t repl_mem = repl_backlog_memory();

	memstats_get(&m);
	defrag_info_get(&d);
	human_bytes(h_used, sizeof(h_used), (double)m.used);
	human_bytes(h_rss, sizeof(h_rss), (double)m.rss);
	human_bytes(h_peak, sizeof(h_peak), (double)m.peak);
	human_bytes(h_total, sizeof(h_total), (double)total);
	human_bytes(h_max, sizeof(h_max), (double)config.maxmemory);
	human_bytes(h_slab, sizeof(h_slab), (double)m.fastpath_slab);
	human_bytes(h_pool, sizeof(h_pool), (double)net_buffer_pool_bytes());
	text_printf(t,
		    "# Memory\r\n"
		    "used_memory:%zu\r\n"
		    "used_memory_human:%s\r\n"
		    "used_memory_rss:%zu\r\n"
		    "used_memory_rss_human:%s\r\n"
		    "used_memory_peak:%zu\r\n"
		    "used_memory_peak_human:%s\r\n"
		    "used_memory_peak_time:%lld\r\n"
		    "used_memory_peak_perc:%.2f%%\r\n"
		    "used_memory_overhead:%zu\r\n"
		    "used_memory_startup:%zu\r\n"
		    "used_memory_dataset:%zu\r\n"
		    "used_memory_dataset_perc:%.2f%%\r\n"
		    "allocator_allocated:%zu\r\n"
		    "allocator_active:%zu\r\n"
		    "allocator_resident:%zu\r\n"
		    "allocator_muzzy:%zu\r\n"
		    "fastpath_slab_bytes:%zu\r\n"
		    "fastpath_slab_bytes_human:%s\r\n"
		    "net_buffer_pool_bytes:%zu\r\n"
		    "net_buffer_pool_bytes_human:%s\r\n"
		    "total_system_memory:%zu\r\n"
		    "total_system_memory_human:%s\r\n",
		    m.used, h_used, m.rss, h_rss, m.peak, h_peak, (long long)m.peak_time,
		    m.peak_perc, m.overhead, m.startup, m.dataset, m.dataset_perc,
		    m.alloc_allocated, m.alloc_active, m.alloc_resident, m.alloc_muzzy,
		    m.fastpath_slab, h_slab, net_buffer_pool_bytes(), h_pool, total, h_total);
	script_memory(&vm, &scripts, &nscripts);
	function_memory(&fvm, &fbytes, &nfuncs, &nlibs);
	human_bytes(h_vm, sizeof(h_vm), (double)vm);
	human_bytes(h_vm_total, sizeof(h_vm_total), (double)(vm + fvm));
	human_bytes(h_scripts, sizeof(h_scripts), (double)(scripts + fbytes));
	text_printf(t,
		    "used_memory_lua:%lld\r\n"
		    "used_memory_vm_eval:%lld\r\n"
		    "used_memory_lua_human:%s\r\n"
		    "used_memory_scripts_eval:%lld\r\n"
		    "number_of_cached_scripts:%lu\r\n"
		    "number_of_functions:%lu\r\n"
		    "number_of_libraries:%lu\r\n"
		    "used_memory_vm_functions:%lld\r\n"
		    "used_memory_vm_total:%lld\r\n"
		    "used_memory_vm_total_human:%s\r\n"
		    "used_memory_functions:%lld\r\n"
		    "used_memory_scripts:%lld\r\n"
		    "used_memory_scripts_human:%s\r\n",
		    vm, vm, h_vm, scripts, nscripts, nfuncs, nlibs, fvm, vm + fvm, h_vm_total,
		    fbytes, scripts + fbytes, h_scripts);
	text_printf(t,
		    "maxmemory:%lld\r\n"
		    "maxmemory_human:%s\r\n"
		    "maxmemory_policy:%s\r\n"
		    "allocator_frag_ratio:%.2f\r\n"
		    "allocator_frag_bytes:%lld\r\n"
		    "allocator_rss_ratio:%.2f\r\n"
		    "allocator_rss_bytes:%lld\r\n"
		    "rss_overhead_ratio:%.2f\r\n"
		    "rss_overhead_bytes:%lld\r\n"
		    "mem_fragmentation_ratio:%.2f\r\n"
		    "mem_fragmentation_bytes:%lld\r\n"
		    "mem_not_counted_for_evict:0\r\n"
		    "mem_replication_backlog:%llu\r\n"
		    "mem_total_replication_buffers:%llu\r\n"
		    "mem_replica_full_sync_buffer:0\r\n"
		    "mem_clients_slaves:0\r\n"
		    "mem_clients_normal:%zu\r\n"
		    /* Replies are copied into each client's own blocks. */
		    "mem_clients_normal_shared:0\r\n"
		    "mem_clients_normal_unshared:%zu\r\n"
		    "mem_cluster_links:0\r\n"
		    "mem_aof_buffer:0\r\n"
		    "mem_allocator:%s\r\n"
		    "mem_overhead_db_hashtable_rehashing:0\r\n"
		    "active_defrag_running:%u\r\n"
		    /* Both here, in the memory section, as in Redis 8.8. */
		    "lazyfree_pending_objects:%llu\r\n"
		    "lazyfreed_objects:%llu\r\n",
		    config.maxmemory, h_max, policy_name(h_policy), m.alloc_frag,
		    m.alloc_frag_bytes, m.alloc_rss, m.alloc_rss_bytes, m.rss_overhead,
		    m.rss_overhead_bytes, m.frag, m.frag_bytes, (unsigned long long)repl_mem,
		    (unsigned long long)repl_mem, m.clients_normal, m.clients_normal,
		    mem_allocator(), d.running, (unsigned long long)lazyfree_pending_objects(),
		    (unsigned long long)lazyfree_freed_objects());
}

/* Redis 8.8's fields. xkvd loads before it accepts clients, so a client
 * never sees loading:1 (nor the loading_* fields Redis adds then). The
 * copy-on-write sizes are the fork children's Private_Dirty bytes, as
 * Redis measures them (rdbfile.h). */
static void info_persistence(struct text *t)
{
	static uint64_t cow_peak; /* of the children seen running */
	struct rdbfile_stats rs;
	struct aof_stats as;
	int64_t now = now_ms();
	struct repl_loading ld;
	pid_t child;
	uint64_t cow = 0;

	rdbfile_stats(&rs);
	aof_stats(&as);
	repl_loading_info(&ld);
	/* A running child's copy-on-write, as it last sampled it. */
	child = rdbfile_child_pid();
	if (!child)
		child = as.child_pid;
	if (child) {
		cow = rdbfile_current_cow();
		if (cow > __atomic_load_n(&cow_peak, __ATOMIC_RELAXED))
			__atomic_store_n(&cow_peak, cow, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&cow_peak, 0, __ATOMIC_RELAXED);
	}
	text_printf(
		t,
		"# Persistence\r\n"
		"loading:%d\r\n"
		"async_loading:0\r\n"
		"current_cow_peak:%llu\r\n"
		"current_cow_size:%llu\r\n"
		"current_cow_size_age:0\r\n"
		"current_fork_perc:0.00\r\n"
		"current_save_keys_processed:0\r\n"
		"current_save_keys_total:0\r\n"
		"rdb_changes_since_last_save:%llu\r\n"
		"rdb_bgsave_in_progress:%d\r\n"
		"rdb_last_save_time:%lld\r\n"
		"rdb_last_bgsave_status:%s\r\n"
		"rdb_last_bgsave_time_sec:%lld\r\n"
		"rdb_current_bgsave_time_sec:%lld\r\n"
		"rdb_saves:%llu\r\n"
		"rdb_saves_consecutive_failures:%llu\r\n"
		"rdb_last_cow_size:%llu\r\n"
		"rdb_last_load_keys_expired:%llu\r\n"
		"rdb_last_load_keys_loaded:%llu\r\n"
		"aof_enabled:%d\r\n"
		"aof_rewrite_in_progress:%d\r\n"
		"aof_rewrite_scheduled:%d\r\n"
		"aof_last_rewrite_time_sec:%lld\r\n"
		"aof_current_rewrite_time_sec:%lld\r\n"
		"aof_last_bgrewrite_status:%s\r\n"
		"aof_rewrites:%llu\r\n"
		"aof_rewrites_consecutive_failures:%llu\r\n"
		"aof_last_write_status:%s\r\n"
		"aof_last_cow_size:%llu\r\n"
		"module_fork_in_progress:0\r\n"
		"module_fork_last_cow_size:0\r\n",
		ld.loading, (unsigned long long)__atomic_load_n(&cow_peak, __ATOMIC_RELAXED),
		(unsigned long long)cow, (unsigned long long)(store_changes() - rs.changes_at_save),
		rs.bgsave_running, (long long)rs.lastsave, rs.last_bgsave_ok ? "ok" : "err",
		(long long)rs.last_bgsave_secs,
		(long long)(rs.bgsave_running ? (now - rs.bgsave_start_ms) / 1000 : -1),
		(unsigned long long)rs.saves, (unsigned long long)rs.consecutive_failures,
		(unsigned long long)rdbfile_last_cow(RDBFILE_COW_RDB),
		(unsigned long long)rs.load_expired, (unsigned long long)rs.load_keys, as.enabled,
		as.rewrite_running, as.rewrite_scheduled, (long long)as.last_rewrite_secs,
		(long long)(as.rewrite_running ? (now - as.rewrite_start_ms) / 1000 : -1),
		as.last_rewrite_ok ? "ok" : "err", (unsigned long long)as.rewrites,
		(unsigned long long)as.consecutive_failures, as.write_ok ? "ok" : "err",
		(unsigned long long)rdbfile_last_cow(RDBFILE_COW_AOF));
	if (as.enabled)
		text_printf(t,
			    "aof_current_size:%llu\r\n"
			    "aof_base_size:%llu\r\n"
			    "aof_pending_rewrite:%d\r\n"
			    "aof_buffer_length:%llu\r\n"
			    "aof_pending_bio_fsync:0\r\n"
			    "aof_delayed_fsync:0\r\n",
			    (unsigned long long)as.current_size, (unsigned long long)as.base_size,
			    as.rewrite_scheduled, (unsigned long long)as.buffer_length);
	if (ld.loading) {
		/* As Redis's: the ETA from the pace so far, 1 s until there is
		 * one; a file without a length has 0 total bytes. */
		long long elapsed = (long long)time(NULL) - ld.start_s;
		long long left = ld.total > 0 ? ld.total - ld.loaded : 1;

		text_printf(t,
			    "loading_start_time:%lld\r\n"
			    "loading_total_bytes:%llu\r\n"
			    "loading_rdb_used_mem:0\r\n"
			    "loading_loaded_bytes:%llu\r\n"
			    "loading_loaded_perc:%.2f\r\n"
			    "loading_eta_seconds:%lld\r\n",
			    (long long)ld.start_s,
			    (unsigned long long)(ld.total > 0 ? ld.total : 0),
			    (unsigned long long)ld.loaded,
			    ld.total > 0 ? (double)ld.loaded / (double)ld.total * 100 : 0.0,
			    elapsed ? elapsed * left / (ld.loaded + 1) : 1LL);
	}
}

static void info_stats(struct text *t)
{
	uint64_t expired = 0, expired_active = 0, subkeys = 0, subkeys_active = 0, syncs[3];
	struct defrag_info d;
	struct slowlog_stats sl;

	defrag_info_get(&d);
	repl_sync_stats(syncs);
	for (int db = 0; db < store.ndbs; db++)
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *s = store_shard(db, i);

			expired += __atomic_load_n(&s->expired, __ATOMIC_RELAXED);
			expired_active += __atomic_load_n(&s->expired_active, __ATOMIC_RELAXED);
			subkeys += __atomic_load_n(&s->expired_subkeys, __ATOMIC_RELAXED);
			subkeys_active +=
				__atomic_load_n(&s->expired_subkeys_active, __ATOMIC_RELAXED);
		}
	text_printf(t,
		    "# Stats\r\n"
		    "total_connections_received:%llu\r\n"
		    "total_commands_processed:%llu\r\n"
		    "instantaneous_ops_per_sec:%llu\r\n"
		    "total_net_input_bytes:%llu\r\n"
		    "total_net_output_bytes:%llu\r\n"
		    "total_net_repl_input_bytes:0\r\n"
		    "total_net_repl_output_bytes:0\r\n"
		    "instantaneous_input_kbps:%.2f\r\n"
		    "instantaneous_output_kbps:%.2f\r\n"
		    "instantaneous_input_repl_kbps:0.00\r\n"
		    "instantaneous_output_repl_kbps:0.00\r\n"
		    "rejected_connections:%llu\r\n"
		    "sync_full:%llu\r\n"
		    "sync_partial_ok:%llu\r\n"
		    "sync_partial_err:%llu\r\n"
		    "expired_subkeys:%llu\r\n"
		    "expired_subkeys_active:%llu\r\n"
		    "expired_keys:%llu\r\n"
		    "expired_keys_active:%llu\r\n"
		    "expired_stale_perc:%.2f\r\n"
		    "expired_time_cap_reached_count:%llu\r\n"
		    "expire_cycle_cpu_milliseconds:%llu\r\n"
		    "evicted_keys:%llu\r\n"
		    "evicted_clients:0\r\n"
		    "evicted_scripts:0\r\n"
		    "keyspace_hits:%llu\r\n"
		    "keyspace_misses:%llu\r\n"
		    "pubsub_channels:%ld\r\n"
		    "pubsub_patterns:%ld\r\n"
		    "pubsubshard_channels:%ld\r\n"
		    "latest_fork_usec:%llu\r\n"
		    "total_forks:%llu\r\n"
		    "migrate_cached_sockets:0\r\n"
		    "slave_expires_tracked_keys:0\r\n"
		    "active_defrag_hits:%llu\r\n"
		    "active_defrag_misses:%llu\r\n"
		    "active_defrag_key_hits:%llu\r\n"
		    "active_defrag_key_misses:%llu\r\n"
		    "total_active_defrag_time:%llu\r\n"
		    "current_active_defrag_time:%llu\r\n"
		    "tracking_total_keys:%llu\r\n"
		    "tracking_total_items:%llu\r\n"
		    "tracking_total_prefixes:%llu\r\n"
		    "unexpected_error_replies:0\r\n"
		    "total_error_replies:%llu\r\n"
		    "dump_payload_sanitizations:0\r\n"
		    "total_reads_processed:%llu\r\n"
		    "total_writes_processed:%llu\r\n"
		    /* Each worker reads, runs and writes for its own clients. */
		    "io_threaded_reads_processed:0\r\n"
		    "io_threaded_writes_processed:0\r\n"
		    "client_query_buffer_limit_disconnections:%llu\r\n"
		    "client_output_buffer_limit_disconnections:%llu\r\n"
		    "reply_buffer_shrinks:%llu\r\n"
		    "reply_buffer_expands:%llu\r\n",
		    (unsigned long long)STAT(connections), (unsigned long long)STAT(commands),
		    (unsigned long long)server_ops_per_sec(), (unsigned long long)STAT(net_in),
		    (unsigned long long)STAT(net_out), (double)server_net_in_per_sec() / 1024,
		    (double)server_net_out_per_sec() / 1024, (unsigned long long)STAT(rejected),
		    (unsigned long long)syncs[0], (unsigned long long)syncs[1],
		    (unsigned long long)syncs[2], (unsigned long long)subkeys,
		    (unsigned long long)subkeys_active, (unsigned long long)expired,
		    (unsigned long long)expired_active, store_expired_stale_perc() * 100,
		    (unsigned long long)store_expire_time_cap_reached(),
		    (unsigned long long)store_expire_cycle_ms(), (unsigned long long)evict_count(),
		    (unsigned long long)STAT(reads.hits), (unsigned long long)STAT(reads.misses),
		    pubsub_active(PUBSUB_CHANNEL), pubsub_numpat(), pubsub_active(PUBSUB_SHARD),
		    (unsigned long long)rdbfile_fork_latest_us(),
		    (unsigned long long)rdbfile_forks(), (unsigned long long)d.hits,
		    (unsigned long long)d.misses, (unsigned long long)d.key_hits,
		    (unsigned long long)d.key_misses, (unsigned long long)d.total_ms,
		    (unsigned long long)d.current_ms, (unsigned long long)tracking_total_keys(),
		    (unsigned long long)tracking_total_items(),
		    (unsigned long long)tracking_total_prefixes(), (unsigned long long)STAT(errors),
		    (unsigned long long)STAT(read_calls), (unsigned long long)STAT(write_calls),
		    (unsigned long long)STAT(qbuf_limit_closes),
		    (unsigned long long)STAT(obuf_limit_closes),
		    (unsigned long long)STAT(rbuf_shrinks), (unsigned long long)STAT(rbuf_expands));
	slowlog_stats(NULL, &sl);
	text_printf(t,
		    "slowlog_commands_count:%llu\r\n"
		    "slowlog_commands_time_ms_max:%.2f\r\n"
		    "slowlog_commands_time_ms_sum:%.2f\r\n",
		    sl.count, (double)sl.max_us / 1000, (double)sl.sum_us / 1000);
	acl_info(t);
}

/* A master (repl.h): its replicas, offsets and backlog. */
static void info_replication(struct text *t)
{
	repl_info(t);
}

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void info_cpu(struct text *t)
{
	struct rusage self, children;
	uint64_t wsys, wuser;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	/* Redis's main thread runs the commands; here the workers do. */
	server_workers_cpu(&wsys, &wuser);
	text_printf(t,
		    "# CPU\r\n"
		    "used_cpu_sys:%.6f\r\n"
		    "used_cpu_user:%.6f\r\n"
		    "used_cpu_sys_children:%.6f\r\n"
		    "used_cpu_user_children:%.6f\r\n"
		    "used_cpu_sys_main_thread:%.6f\r\n"
		    "used_cpu_user_main_thread:%.6f\r\n",
		    seconds(self.ru_stime), seconds(self.ru_utime), seconds(children.ru_stime),
		    seconds(children.ru_utime), (double)wsys / 1e6, (double)wuser / 1e6);
}

/* No modules can be loaded. */
static void info_modules(struct text *t)
{
	text_printf(t, "# Modules\r\n");
}

static void info_cluster(struct text *t)
{
	text_printf(t, "# Cluster\r\ncluster_enabled:%d\r\n", cluster_enabled() ? 1 : 0);
}

static void info_keyspace(struct text *t)
{
	text_printf(t, "# Keyspace\r\n");
	for (int db = 0; db < store.ndbs; db++) {
		uint64_t keys = db_size(db);

		if (keys)
			text_printf(t, "db%d:keys=%llu,expires=%llu,avg_ttl=%llu\r\n", db,
				    (unsigned long long)keys, (unsigned long long)db_expires(db),
				    (unsigned long long)db_avg_ttl(db));
	}
}

/* Redis 8's keysizes: db<n>_distrib_<type>:<bin label>=<keys>,... per type
 * that has keys, the labels powers of two with K, M, G... suffixes. */
static void info_keysizes(struct text *t)
{
	static const char *const fields[KEYSIZES_TYPES] = {
		[OBJ_STRING] = "distrib_strings_sizes", [OBJ_LIST] = "distrib_lists_items",
		[OBJ_SET] = "distrib_sets_items",	[OBJ_ZSET] = "distrib_zsets_items",
		[OBJ_HASH] = "distrib_hashes_items",
	};
	static const char suffix[] = " KMGTPE";

	text_printf(t, "# Keysizes\r\n");
	for (int db = 0; db < store.ndbs; db++) {
		keysizes_hist h = { { 0 } };

		if (!db_size(db))
			continue;
		db_keysizes(db, h);
		for (unsigned type = 0; type < KEYSIZES_TYPES; type++) {
			bool first = true;

			for (unsigned b = 0; b < KEYSIZES_BINS; b++) {
				unsigned p = b ? b - 1 : 0; /* bin b starts at 2^(b-1) */

				if (!h[type][b])
					continue;
				if (first)
					text_printf(t, "db%d_%s:", db, fields[type]);
				text_printf(t, "%s%llu", first ? "" : ",",
					    b ? 1ULL << (p % 10) : 0ULL);
				if (p >= 10)
					text_printf(t, "%c", suffix[p / 10]);
				text_printf(t, "=%llu", (unsigned long long)h[type][b]);
				first = false;
			}
			if (!first)
				text_printf(t, "\r\n");
		}
	}
}

static void info_field(void *ctx, const char *name, const char *value)
{
	text_printf(ctx, "%s:%s\r\n", name, value);
}

static void info_fastpath(struct text *t)
{
	text_printf(t, "# Fastpath\r\n");
	fastpath_info(info_field, t);
}

static void info_command_stats(struct text *t, const struct command *cmd)
{
	struct command_stats st;
	struct slowlog_stats sl;

	command_stats(cmd, &st);
	if (!st.calls && !st.rejected && !st.failed)
		return;
	text_printf(t,
		    "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
		    "failed_calls=%llu",
		    command_shown_name(cmd), (unsigned long long)st.calls,
		    (unsigned long long)st.usec, st.calls ? (double)st.usec / (double)st.calls : 0,
		    (unsigned long long)st.rejected, (unsigned long long)st.failed);
	/* Only a command that was ever logged shows its slowlog metrics. */
	slowlog_stats(cmd, &sl);
	if (sl.count)
		text_printf(t,
			    ",slowlog_count=%llu,slowlog_time_ms_sum=%.2f,slowlog_time_ms_max=%.2f",
			    sl.count, (double)sl.sum_us / 1000, (double)sl.max_us / 1000);
	text_printf(t, "\r\n");
}

static void info_commandstats(struct text *t)
{
	text_printf(t, "# Commandstats\r\n");
	for (struct command **all = command_all(); *all; all++) {
		info_command_stats(t, *all);
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			info_command_stats(t, (*all)->subs[i]);
	}
}

static void info_errorstats(struct text *t)
{
	text_printf(t, "# Errorstats\r\n");
	errorstats_info(info_field, t);
}

static void info_latencystats(struct text *t)
{
	text_printf(t, "# Latencystats\r\n");
	latency_info_percentiles(info_field, t);
}

/*
 * In Redis's order. Sections marked extra are left out of INFO and INFO
 * default; "all" and "everything" print every section (everything adds the
 * modules' own sections, and there are none). A section is named by its name
 * or one of its aliases (Redis's "modules" and "module_list").
 */
static const struct {
	const char *name, *alias;
	void (*fn)(struct text *t);
	bool extra;
} info_sections[] = {
	{ "server", NULL, info_server, false },
	{ "clients", NULL, info_clients, false },
	{ "memory", NULL, info_memory, false },
	{ "persistence", NULL, info_persistence, false },
	{ "stats", NULL, info_stats, false },
	{ "replication", NULL, info_replication, false },
	{ "cpu", NULL, info_cpu, false },
	{ "hotkeys", NULL, hotkeys_info, false },
	{ "module_list", "modules", info_modules, false },
	{ "commandstats", NULL, info_commandstats, true },
	{ "errorstats", NULL, info_errorstats, false },
	{ "latencystats", NULL, info_latencystats, true },
	{ "cluster", NULL, info_cluster, false },
	{ "keyspace", NULL, info_keyspace, false },
	{ "keysizes", NULL, info_keysizes, false },
	{ "fastpath", NULL, info_fastpath, false },
};

#define NSECTIONS (sizeof(info_sections) / sizeof(info_sections[0]))

void cmd_info(struct client *c)
{
	bool want[NSECTIONS] = { false };
	struct text t = { 0 };
	int emitted = 0;

	for (size_t s = 0; s < NSECTIONS; s++)
		want[s] = c->argc == 1 && !info_sections[s].extra;
	for (int i = 1; i < c->argc; i++) {
		bool all = arg_is(c, i, "all") || arg_is(c, i, "everything");

		for (size_t s = 0; s < NSECTIONS; s++) {
			if (all || (arg_is(c, i, "default") && !info_sections[s].extra) ||
			    arg_is(c, i, info_sections[s].name) ||
			    (info_sections[s].alias && arg_is(c, i, info_sections[s].alias)))
				want[s] = true;
		}
	}
	text_printf(&t, "%s", "");
	for (size_t s = 0; s < NSECTIONS; s++) {
		if (!want[s])
			continue;
		if (emitted++)
			text_printf(&t, "\r\n");
		info_sections[s].fn(&t);
	}
	reply_verbatim(c, t.p, t.len);
	xfree(t.p);
}

/* ---- TIME, CONFIG, SHUTDOWN ------------------------------------------ */

void cmd_time(struct client *c)
{
	/* A script's time stands still while it runs. */
	int64_t us = exec_ctx_flags() & EXEC_SCRIPT ? script_time_us() : now_us();

	reply_array(c, 2);
	reply_bulk_ll(c, us / 1000000);
	reply_bulk_ll(c, us % 1000000);
}

/* CONFIG GET's answer: names and values copied (a string directive may be
 * replaced by a concurrent CONFIG SET), each name once. */
struct config_reply {
	char **names, **values;
	int n, cap;
};

static void collect_config(void *ctx, const char *name, const char *value)
{
	struct config_reply *r = ctx;

	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->names[i], name))
			return;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->names = xrealloc(r->names, sizeof(*r->names) * (size_t)r->cap);
		r->values = xrealloc(r->values, sizeof(*r->values) * (size_t)r->cap);
	}
	r->names[r->n] = xstrndup(name, strlen(name));
	r->values[r->n] = xstrndup(value, strlen(value));
	r->n++;
}

void cmd_config_get(struct client *c)
{
	struct config_reply r = { 0 };

	for (int i = 2; i < c->argc; i++)
		config_get(c->argv[i].p, c->argv[i].len, collect_config, &r);
	reply_map(c, r.n);
	for (int i = 0; i < r.n; i++) {
		reply_bulk_cstr(c, r.names[i]);
		reply_bulk_cstr(c, r.values[i]);
		xfree(r.names[i]);
		xfree(r.values[i]);
	}
	xfree(r.names);
	xfree(r.values);
}

/* enable-protected-configs local: a peer on 127.0.0.0/8, ::1 or the Unix
 * socket (whose clients' addr is "<socket path>:0"), as Redis's connIsLocal. */
static bool client_is_local(const struct client *c)
{
	const char *sock = __atomic_load_n(&config.unixsocket, __ATOMIC_ACQUIRE);
	size_t n = strlen(sock);

	if (n && !strncmp(c->addr, sock, n) && !strcmp(c->addr + n, ":0"))
		return true;
	return !strncmp(c->addr, "127.", 4) || !strncmp(c->addr, "::1:", 4);
}

void cmd_config_set(struct client *c)
{
	const char **pairs;
	size_t *lens;
	char err[512];
	int n = (c->argc - 2) / 2;

	if ((c->argc - 2) % 2 != 0) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	pairs = xmalloc(sizeof(*pairs) * (size_t)(2 * n));
	lens = xmalloc(sizeof(*lens) * (size_t)(2 * n));
	for (int i = 0; i < 2 * n; i++) {
		pairs[i] = c->argv[2 + i].p;
		lens[i] = c->argv[2 + i].len;
	}
	/* A sensitive value (requirepass, masterauth ...) never reaches
	 * MONITOR or SLOWLOG, as Redis redacts it. */
	for (int i = 0; i < n; i++) {
		bool alias;
		const struct config_def *d = config_find(pairs[2 * i], lens[2 * i], &alias);

		if (d && (d->flags & CFG_SENSITIVE))
			monitor_redact(c, 3 + 2 * i);
	}
	if (config_set_pairs(pairs, lens, n, client_is_local(c), err, sizeof(err)) < 0) {
		reply_error(c, err);
	} else {
		/* As Redis: a maxmemory now exceeded evicts at once (keyspace
		 * "evicted" events included), not at the next write. Not from
		 * EXEC or a script, which may hold shard locks: there the next
		 * command evicts. */
		if (config.maxmemory && !(exec_ctx_flags() & (EXEC_IN_EXEC | EXEC_SCRIPT)))
			evict_until_fits();
		reply_ok(c);
	}
	xfree(pairs);
	xfree(lens);
}

void cmd_config_resetstat(struct client *c)
{
	server_reset_stats();
	for (int db = 0; db < store.ndbs; db++)
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *s = store_shard(db, i);

			__atomic_store_n(&s->expired, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->expired_active, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->expired_subkeys, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->expired_subkeys_active, 0, __ATOMIC_RELAXED);
		}
	command_stats_reset();
	errorstats_reset();
	acl_stats_reset();
	latency_reset_histograms();
	slowlog_reset_stats();
	lazyfree_reset_stats();
	defrag_reset_stats();
	reply_ok(c);
}

void cmd_config_rewrite(struct client *c)
{
	int err = config_rewrite();

	if (err == -ENOENT && !config.config_file) {
		reply_error(c, "The server is running without a config file");
	} else if (err) {
		log_warning("CONFIG REWRITE failed: %s", strerror(-err));
		reply_errorf(c, "Rewriting config file: %s", strerror(-err));
	} else {
		log_notice("CONFIG REWRITE executed with success.");
		reply_ok(c);
	}
}

void cmd_config_help(struct client *c)
{
	static const char *const help[] = {
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, help);
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 8.8. xkvd has no
 * replicas to wait for, so without NOW it stops as at once too, and a
 * shutdown is never pending: ABORT finds none. */
void cmd_shutdown(struct client *c)
{
	unsigned flags = 0;
	bool abort_ = false;

	for (int i = 1; i < c->argc; i++) {
		if (arg_is(c, i, "NOSAVE"))
			flags |= PERSIST_SHUTDOWN_NOSAVE;
		else if (arg_is(c, i, "SAVE"))
			flags |= PERSIST_SHUTDOWN_SAVE;
		else if (arg_is(c, i, "NOW"))
			flags |= PERSIST_SHUTDOWN_NOW;
		else if (arg_is(c, i, "FORCE"))
			flags |= PERSIST_SHUTDOWN_FORCE;
		else if (arg_is(c, i, "ABORT"))
			abort_ = true;
		else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if ((abort_ && flags) ||
	    ((flags & PERSIST_SHUTDOWN_SAVE) && (flags & PERSIST_SHUTDOWN_NOSAVE))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (abort_) {
		reply_error(c, "No shutdown in progress.");
		return;
	}
	/* A busy script holds every shard lock: only NOSAVE, which ends it
	 * (nothing can be saved meanwhile). */
	if (script_busy()) {
		if (!(flags & PERSIST_SHUTDOWN_NOSAVE)) {
			script_reply_busy(c);
			return;
		}
		log_notice("User requested shutdown...");
		c->flags |= CLIENT_CLOSE_ASAP;
		server_request_shutdown();
		return;
	}
	log_notice("User requested shutdown...");
	if (persist_shutdown(flags) < 0) {
		reply_error(c, "Errors trying to SHUTDOWN. Check logs.");
		return;
	}
	/* No reply: like Redis, the connection just closes. */
	c->flags |= CLIENT_CLOSE_ASAP;
}
