// SPDX-License-Identifier: BSD-3-Clause
/*
 * The command table and dispatch: lookup, arity and auth checks, locking the
 * shards of the command's keys, running it, and its statistics.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <errno.h>

#include "acl_users.h"
#include "aof.h"
#include "blocking.h"
#include "cluster_route.h"
#include "command_meta.h"
#include "commands.h"
#include "config.h"
#include "evict.h"
#include "exec_ctx.h"
#include "hotkeys.h"
#include "latency.h"
#include "log.h"
#include "mem.h"
#include "monitor.h"
#include "multi.h"
#include "notify.h"
#include "pause.h"
#include "persist.h"
#include "propagate.h"
#include "pubsub.h"
#include "repl.h"
#include "script.h"
#include "slowlog.h"
#include "tracking.h"
#include "util.h"
#include "worker.h"

#define ROW(full, sub, handler, ar, fl, first, last, step, grp, ver, text)                         \
	{ .name = full,                                                                            \
	  .sub_name = sub,                                                                         \
	  .fn = handler,                                                                           \
	  .arity = ar,                                                                             \
	  .flags = fl,                                                                             \
	  .first_key = first,                                                                      \
	  .last_key = last,                                                                        \
	  .key_step = step,                                                                        \
	  .group = grp,                                                                            \
	  .since = ver,                                                                            \
	  .summary = text },

static struct command table[] = {
#define COMMAND(name, fn, arity, flags, first, last, step, group, since, summary)                  \
	ROW(name, name, fn, arity, flags, first, last, step, group, since, summary)
#define CONTAINER(name, arity, flags, group, since, summary)                                       \
	ROW(name, name, NULL, arity, flags, 0, 0, 0, group, since, summary)
#define SUBCOMMAND(parent, name, fn, arity, flags, first, last, step, group, since, summary)       \
	ROW(parent "|" name, name, fn, arity, flags, first, last, step, group, since, summary)
#include "commands.def"
#undef COMMAND
#undef CONTAINER
#undef SUBCOMMAND
#undef ROW
};

#define NCOMMANDS (sizeof(table) / sizeof(table[0]))

/* The commandstats sums at the last CONFIG RESETSTAT (see worker.h). */
static struct command_stats stats_base[NCOMMANDS];

#define NCOUNTERS (sizeof(struct command_stats) / sizeof(uint64_t))

/* Top-level commands sorted by name (COMMAND's order); NULL-terminated. */
static struct command **top;
static size_t ntop;

/* Top-level commands by name, for dispatch: open addressing over a hash of the
 * case-folded name, at most half full, so a lookup is one short hash and
 * usually one compare (a binary search with strncasecmp was about a tenth of
 * a GET's instructions). */
#define LOOKUP_SIZE 1024 /* a power of two */
struct lookup_slot {
	struct command *cmd;
	size_t len;
};
static struct lookup_slot lookup[LOOKUP_SIZE];

/* Case-folded FNV-1a: folding with | 0x20 maps a few non-letters together,
 * which only costs a compare; the compare is exact. */
static uint32_t name_hash(const char *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)(p[i] | 0x20)) * 16777619u;
	return h;
}

static void lookup_insert(struct command *cmd)
{
	size_t len = strlen(cmd->name);

	for (uint32_t i = name_hash(cmd->name, len);; i++) {
		struct lookup_slot *s = &lookup[i & (LOOKUP_SIZE - 1)];

		if (!s->cmd) {
			s->cmd = cmd;
			s->len = len;
			return;
		}
	}
}

/* Rows neither meta file describes: one key spec made from their legacy
 * range (or none), in storage of their own. */
static struct key_spec made_specs[NCOMMANDS][2];

/* Redis's legacy range (populateCommandLegacyRangeSpec): the first run of
 * consecutive step-1 index+range specs, or the one spec if there is only one.
 * COMMAND INFO reports it; the row's columns must say the same. */
static void check_legacy_range(const struct command *cmd)
{
	const struct key_spec *s = cmd->specs;
	int first = INT_MAX, last = 0, prev_last = 0, step = 1;

	if (!s[0].flags) {
		first = last = step = 0;
	} else if (!s[1].flags && s[0].begin == KEY_BEGIN_INDEX && s[0].find == KEY_FIND_RANGE) {
		first = s[0].index;
		last = s[0].a < 0 ? s[0].a : first + s[0].a;
		step = s[0].b;
	} else {
		for (; s->flags; s++) {
			int abs_last;

			if (s->begin != KEY_BEGIN_INDEX || s->find != KEY_FIND_RANGE || s->b != 1 ||
			    (prev_last && prev_last != s->index - 1))
				continue;
			first = first < s->index ? first : s->index;
			abs_last = s->a >= 0 ? s->a + s->index : s->a;
			last = (unsigned)last > (unsigned)abs_last ? last : abs_last;
			prev_last = last;
		}
		if (first == INT_MAX)
			first = last = step = 0;
	}
	if (first != cmd->first_key || last != cmd->last_key || step != cmd->key_step) {
		log_warning("command %s: row's key range %d %d %d, key specs say %d %d %d",
			    cmd->name, cmd->first_key, cmd->last_key, cmd->key_step, first, last,
			    step);
		xkv_assert(!"the command table disagrees with its key specs");
	}
}

/* Decides once how the dispatcher finds cmd's keys: fixed ranges when every
 * spec is an index and a range (GET, MSET, RENAME ...), so the hot path costs
 * what a fixed key position did; a spec walk otherwise. */
static void plan_keys(struct command *cmd)
{
	const struct key_spec *s;

	if (cmd->meta) {
		cmd->specs = cmd->meta->specs;
	} else {
		struct key_spec *m = made_specs[cmd->index];

		if (cmd->first_key > 0)
			m[0] = (struct key_spec){
				.flags = cmd->flags & CMD_WRITE ? "RW update" : "RO access",
				.begin = KEY_BEGIN_INDEX,
				.index = cmd->first_key,
				.find = KEY_FIND_RANGE,
				.a = cmd->last_key < 0 ? cmd->last_key
						       : cmd->last_key - cmd->first_key,
				.b = cmd->key_step,
			};
		cmd->specs = m;
	}
	if (cmd->fn)
		check_legacy_range(cmd);
	cmd->movable = cmd->meta && command_meta_movable(cmd->meta);
	cmd->key_plan = KEYS_NONE;
	cmd->nranges = 0;
	if (!command_has_keys(cmd))
		return;
	cmd->key_plan = KEYS_FIXED;
	for (s = cmd->specs; s->flags; s++) {
		struct key_range *r = &cmd->ranges[cmd->nranges];

		if (s->begin != KEY_BEGIN_INDEX || s->find != KEY_FIND_RANGE || s->c > 1 ||
		    cmd->nranges == KEY_RANGES_MAX) {
			cmd->key_plan = KEYS_SPECS;
			return;
		}
		r->first = (int16_t)s->index;
		r->last = (int16_t)(s->a < 0 ? s->a : s->index + s->a);
		r->step = (int16_t)s->b;
		cmd->nranges++;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct command *const *)a)->name, (*(struct command *const *)b)->name);
}

void commands_init(void)
{
	top = xcalloc(NCOMMANDS + 1, sizeof(*top));
	for (size_t i = 0; i < NCOMMANDS; i++) {
		struct command *cmd = &table[i];
		const char *bar = strchr(cmd->name, '|');

		cmd->index = (unsigned)i;
		cmd->meta = command_meta_find(cmd->name);
		plan_keys(cmd);
		if (!bar) {
			top[ntop++] = cmd;
			continue;
		}
		for (size_t j = 0; j < NCOMMANDS; j++) {
			struct command *parent = &table[j];

			if (!strchr(parent->name, '|') &&
			    strncmp(parent->name, cmd->name, (size_t)(bar - cmd->name)) == 0 &&
			    parent->name[bar - cmd->name] == '\0') {
				cmd->parent = parent;
				parent->subs = xrealloc(parent->subs, sizeof(*parent->subs) *
									      (parent->nsubs + 2));
				parent->subs[parent->nsubs++] = cmd;
				parent->subs[parent->nsubs] = NULL;
				break;
			}
		}
	}
	qsort(top, ntop, sizeof(*top), by_name);
	xkv_assert(ntop <= LOOKUP_SIZE / 2);
	for (size_t i = 0; i < ntop; i++)
		lookup_insert(top[i]);
	acl_commands_init();
}

struct command **command_all(void)
{
	return top;
}

size_t command_rows(void)
{
	return NCOMMANDS;
}

/* arg: the command; its counters as an array. */
static const uint64_t *stats_at(const struct worker *w, const void *arg)
{
	return (const uint64_t *)&w->cmd_stats[((const struct command *)arg)->index];
}

void command_stats(const struct command *cmd, struct command_stats *out)
{
	server_counters_sum(stats_at, cmd, (const uint64_t *)&stats_base[cmd->index],
			    (uint64_t *)out, NCOUNTERS);
}

void command_stats_reset(void)
{
	struct command_stats scratch;

	for (size_t i = 0; i < NCOMMANDS; i++)
		server_counters_rebase(stats_at, &table[i], (uint64_t *)&stats_base[i],
				       (uint64_t *)&scratch, NCOUNTERS);
}

/* This worker's counters for cmd: c runs on its own worker, their one writer. */
static struct command_stats *own_stats(struct client *c, const struct command *cmd)
{
	return &c->worker->cmd_stats[cmd->index];
}

void command_count_rejected(struct client *c, const struct command *cmd)
{
	stat_add(&own_stats(c, cmd)->rejected, 1);
	c->worker->errors_mark = __atomic_load_n(&c->worker->stats.errors, __ATOMIC_RELAXED);
}

struct command *command_lookup(const char *name, size_t len)
{
	for (uint32_t i = name_hash(name, len);; i++) {
		const struct lookup_slot *s = &lookup[i & (LOOKUP_SIZE - 1)];
		size_t j;

		if (!s->cmd)
			return NULL;
		if (s->len != len)
			continue;
		/* Names are lower case. */
		for (j = 0; j < len; j++) {
			char ch = name[j];

			if (ch >= 'A' && ch <= 'Z')
				ch = (char)(ch + ('a' - 'A'));
			if (ch != s->cmd->name[j])
				break;
		}
		if (j == len)
			return s->cmd;
	}
}

static struct command *subcommand_lookup(const struct command *parent, const char *name, size_t len)
{
	for (unsigned i = 0; i < parent->nsubs; i++)
		if (str_eq_nocase(name, len, parent->subs[i]->sub_name))
			return parent->subs[i];
	return NULL;
}

struct command *command_lookup_argv(int argc, const struct arg *argv)
{
	struct command *cmd = command_lookup(argv[0].p, argv[0].len);

	if (cmd && cmd->subs && argc > 1)
		return subcommand_lookup(cmd, argv[1].p, argv[1].len);
	return cmd;
}

bool command_has_keys(const struct command *cmd)
{
	/* As Redis: a spec of channels (not_key, SPUBLISH) names no key. */
	for (const struct key_spec *s = cmd->specs; s->flags; s++)
		if (!strstr(s->flags, "not_key"))
			return true;
	return false;
}

int command_key_indexes(const struct command *cmd, int argc, const struct arg *argv, int *keys,
			const struct key_spec **specs, int max)
{
	return command_meta_keys(cmd->name, cmd->specs, argc, argv, keys, specs, max);
}

/* Redis 8's wording: the arguments part only when there are arguments. */
static void reply_unknown_command(struct client *c)
{
	char args[256];
	size_t n = 0;

	if (c->argc < 2) {
		reply_errorf(c, "unknown command '%.128s'", c->argv[0].p);
		return;
	}
	args[0] = '\0';
	for (int i = 1; i < c->argc && n < 128; i++)
		n += (size_t)snprintf(args + n, sizeof(args) - n, "'%.*s' ",
				      (int)(c->argv[i].len < 128 - n ? c->argv[i].len : 128 - n),
				      c->argv[i].p);
	reply_errorf(c, "unknown command '%.128s', with args beginning with: %s", c->argv[0].p,
		     args);
}

/* The database an argument of MOVE or COPY names, parsed as the handler
 * parses it; -1 if none or invalid (the handler then fails before touching
 * a key). */
static int other_db(const struct command *cmd, int argc, const struct arg *argv)
{
	long long v = -1;

	if (cmd->fn == cmd_move) {
		if (!str_to_ll(argv[2].p, argv[2].len, &v))
			return -1;
	} else {
		for (int i = 3; i < argc; i++) {
			if (str_eq_nocase(argv[i].p, argv[i].len, "replace"))
				continue;
			if (!str_eq_nocase(argv[i].p, argv[i].len, "db") || i + 1 >= argc ||
			    !str_to_ll(argv[i + 1].p, argv[i + 1].len, &v))
				return -1;
			i++;
		}
	}
	return v >= 0 && v < store.ndbs ? (int)v : -1;
}

/* The keys of cmd's key specs in db. */
static void add_key_locks(const struct command *cmd, int db, int argc, const struct arg *argv,
			  struct lockset *ls)
{
	int keys[64], n;

	if (cmd->key_plan == KEYS_FIXED) {
		for (unsigned r = 0; r < cmd->nranges; r++) {
			const struct key_range *kr = &cmd->ranges[r];
			int last = kr->last < 0 ? argc + kr->last : kr->last;

			if (last >= argc)
				last = argc - 1;
			for (int i = kr->first; i <= last; i += kr->step)
				lockset_add_key(ls, db, argv[i].p, argv[i].len);
		}
		return;
	}
	if (cmd->key_plan == KEYS_NONE)
		return;
	n = command_key_indexes(cmd, argc, argv, keys, NULL, 64);
	/* Arguments the specs cannot parse (the handler will refuse them),
	 * more keys than we list, or keys named by values: the whole db. */
	if (n < 0 || n == 64 || command_meta_keys_from_values(cmd->name, argc, argv)) {
		lockset_add_db(ls, db);
		return;
	}
	for (int i = 0; i < n; i++)
		lockset_add_key(ls, db, argv[keys[i]].p, argv[keys[i]].len);
}

/* The persistence commands that take every shard lock themselves (a fork's
 * instant, a reload, the AOF switched on): they get every lock from here,
 * so inside EXEC the handler's store_lock_all() nests instead of waiting
 * for a lock its own transaction holds. */
static bool locks_everything(const struct command *cmd, int argc, const struct arg *argv)
{
	if (cmd->fn == cmd_bgsave || cmd->fn == cmd_bgrewriteaof)
		return true;
	if (cmd->fn == cmd_debug)
		return argc >= 2 && (str_eq_nocase(argv[1].p, argv[1].len, "reload") ||
				     str_eq_nocase(argv[1].p, argv[1].len, "loadaof"));
	if (cmd->fn == cmd_config_set)
		for (int i = 2; i < argc; i += 2)
			if (str_eq_nocase(argv[i].p, argv[i].len, "appendonly"))
				return true;
	return false;
}

int command_add_locks(const struct command *cmd, struct client *c, int db, int argc,
		      const struct arg *argv, struct lockset *ls)
{
	uint32_t f = cmd->flags;

	if (__builtin_expect(!(f & (CMD_NO_KEYS_LOCK | CMD_LOCK_DB | CMD_LOCK_ALL |
				    CMD_KEYS_OTHER_DB | CMD_LOCK_QUEUE | CMD_LOCK_WATCHED)),
			     1)) {
		add_key_locks(cmd, db, argc, argv, ls);
		return db;
	}
	if ((f & CMD_LOCK_ALL) || ((f & CMD_NO_KEYS_LOCK) && locks_everything(cmd, argc, argv)))
		lockset_add_all(ls);
	if (f & CMD_LOCK_DB)
		lockset_add_db(ls, db);
	if (f & CMD_KEYS_OTHER_DB) {
		int odb = other_db(cmd, argc, argv);

		add_key_locks(cmd, db, argc, argv, ls);
		if (odb >= 0)
			add_key_locks(cmd, odb, argc, argv, ls);
	}
	/* Only EXEC's own: a queued command's is part of EXEC's already. */
	if ((f & CMD_LOCK_QUEUE) && c)
		multi_add_locks(c, ls, true);
	if ((f & CMD_LOCK_WATCHED) && c)
		multi_add_locks(c, ls, false);
	if (cmd->fn == cmd_select) {
		long long v;

		if (str_to_ll(argv[1].p, argv[1].len, &v) && v >= 0 && v < store.ndbs)
			return (int)v;
	}
	return db;
}

/* The command c->argv names, checked; NULL after replying with the error. */
static struct command *resolve(struct client *c)
{
	struct command *cmd = command_lookup(c->argv[0].p, c->argv[0].len);

	if (!cmd) {
		reply_unknown_command(c);
		return NULL;
	}
	if (cmd->subs && !(c->argc == 1 && cmd->fn)) {
		struct command *sub;

		if (c->argc == 1) {
			reply_errorf(c, "wrong number of arguments for '%s' command", cmd->name);
			return NULL;
		}
		sub = subcommand_lookup(cmd, c->argv[1].p, c->argv[1].len);
		if (!sub) {
			char upper[64];
			size_t i;

			for (i = 0; i < c->argv[0].len && i < sizeof(upper) - 1; i++)
				upper[i] = (char)toupper((unsigned char)c->argv[0].p[i]);
			upper[i] = '\0';
			reply_errorf(c, "unknown subcommand '%.128s'. Try %s HELP.", c->argv[1].p,
				     upper);
			return NULL;
		}
		cmd = sub;
	}
	if ((cmd->arity > 0 && c->argc != cmd->arity) || c->argc < -cmd->arity) {
		/* A module's command in Redis names itself as the client typed it. */
		reply_errorf(c, "wrong number of arguments for '%s' command",
			     cmd->flags & CMD_MODULE ? c->argv[0].p : cmd->name);
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	/* enable-debug-command: Redis's protected command check, before auth. */
	if (cmd->fn == cmd_debug && !debug_allowed(c)) {
		reply_error(c,
			    "DEBUG command not allowed. If the enable-debug-command option is set "
			    "to \"local\", you can run it from a local connection, otherwise you "
			    "need to set this option in the configuration file, and then restart "
			    "the server.");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	/* MODULE LOAD, LOADEX and UNLOAD are subcommands: one test for the rest. */
	if (cmd->parent && !module_allowed(c, cmd)) {
		reply_error(
			c, "MODULE command not allowed. If the enable-module-command option is set "
			   "to \"local\", you can run it from a local connection, otherwise you "
			   "need to set this option in the configuration file, and then restart "
			   "the server.");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	if (__builtin_expect(!c->authenticated, 0) && acl_auth_required(c) &&
	    !(cmd->flags & CMD_NO_AUTH)) {
		reply_error(c, "-NOAUTH Authentication required.");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	if (__builtin_expect(c->in_multi && (cmd->flags & CMD_NO_MULTI), 0)) {
		reply_error(c, "Command not allowed inside a transaction");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	/* ACL: one flag test for a user that may do everything. */
	if (__builtin_expect(acl_client_restricted(c), 0) &&
	    !acl_check_slow(c, cmd, c->argc, c->argv,
			    c->in_multi ? ACL_CTX_MULTI : ACL_CTX_TOPLEVEL, true)) {
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return NULL;
	}
	return cmd;
}

/* command_dispatch's checks and run; returns the command (NULL if
 * unknown). */
static struct command *dispatch(struct client *c)
{
	struct command *cmd;

	/* Invalidations that wait for this worker go out before any reply to
	 * a command that came after them. */
	tracking_before_command(c);
	cmd = resolve(c);

	if (!cmd) {
		/* A command that cannot be queued dooms the transaction. */
		if (c->in_multi)
			c->multi_error = true;
		return NULL;
	}
	/* Cluster mode: served here only if this node serves its keys' slot
	 * (our master's commands are obeyed). One branch when off. */
	if (__builtin_expect(config.cluster_enabled, 0) && !(c->flags & CLIENT_MASTER) &&
	    !cluster_route(c, cmd)) {
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return cmd;
	}
	/* A script past busy-reply-threshold: only the ALLOW_BUSY commands. */
	if (script_busy() && !(cmd->flags & CMD_ALLOW_BUSY)) {
		if (cmd->fn == cmd_exec && c->in_multi) {
			/* Redis's execCommandAbort: the transaction goes, the
			 * reason in the EXECABORT. */
			multi_reset(c);
			reply_errorf(c, "-EXECABORT Transaction discarded because of: %s",
				     script_busy_eval()
					     ? "BUSY Redis is busy running a script. You can only "
					       "call SCRIPT KILL or SHUTDOWN NOSAVE."
					     : "BUSY Redis is busy running a script. You can only "
					       "call FUNCTION KILL or SHUTDOWN NOSAVE.");
			stat_add(&own_stats(c, cmd)->rejected, 1);
			return cmd;
		}
		script_reply_busy(c);
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* maxmemory: make room first; refuse what would need more if none. */
	if (config.maxmemory && !evict_until_fits() &&
	    ((cmd->flags & CMD_DENYOOM) ||
	     (cmd->fn == cmd_exec && multi_queue_any(c, CMD_DENYOOM, true))) &&
	    !(c->flags & CLIENT_MASTER)) {
		if (cmd->fn == cmd_exec) {
			/* The queue would grow memory: refused whole, as Redis. */
			multi_reset(c);
			multi_unwatch(c);
			reply_error(c,
				    "-EXECABORT Transaction discarded because of: OOM command not "
				    "allowed when used memory > 'maxmemory'.");
			stat_add(&own_stats(c, cmd)->rejected, 1);
			return cmd;
		}
		reply_error(c, "-OOM command not allowed when used memory > 'maxmemory'.");
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* A failed save or AOF write: no writes (nor PING), as Redis refuses. */
	if ((cmd->flags & CMD_WRITE) || cmd->fn == cmd_ping) {
		const char *misconf = persist_write_denied();

		if (misconf) {
			reply_error(c, misconf);
			stat_add(&own_stats(c, cmd)->rejected, 1);
			if (c->in_multi)
				c->multi_error = true;
			return cmd;
		}
	}
	/* A RESP2 subscriber's connection carries only pushes and these. */
	if (c->resp == 2 && pubsub_client_subscribed(c) && cmd->fn != cmd_ping &&
	    cmd->fn != cmd_subscribe && cmd->fn != cmd_ssubscribe && cmd->fn != cmd_unsubscribe &&
	    cmd->fn != cmd_sunsubscribe && cmd->fn != cmd_psubscribe &&
	    cmd->fn != cmd_punsubscribe && cmd->fn != cmd_quit && cmd->fn != cmd_reset) {
		reply_errorf(c,
			     "Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
			     "QUIT / RESET are allowed in this context",
			     cmd->name);
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* A read-only replica takes writes from its master only. */
	if ((cmd->flags & CMD_WRITE) && !(c->flags & CLIENT_MASTER) && config.replica_read_only &&
	    repl_is_replica()) {
		reply_error(c, "-READONLY You can't write against a read only replica.");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* min-replicas-to-write: too few replicas with a recent ACK. An EXEC
	 * whose queue writes is refused whole (Redis's execCommandAbort). */
	if (((cmd->flags & CMD_WRITE) ||
	     (cmd->fn == cmd_exec && multi_queue_any(c, CMD_WRITE, true))) &&
	    !(c->flags & CLIENT_MASTER) && !repl_is_replica() && !repl_writes_allowed()) {
		if (cmd->fn == cmd_exec) {
			multi_reset(c);
			multi_unwatch(c);
			reply_error(c,
				    "-EXECABORT Transaction discarded because of: NOREPLICAS Not "
				    "enough good replicas to write.");
			stat_add(&own_stats(c, cmd)->rejected, 1);
			return cmd;
		}
		reply_error(c, "-NOREPLICAS Not enough good replicas to write.");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* A replica whose link is down, with replica-serve-stale-data no:
	 * only the commands flagged stale, and an EXEC only if its queue is. */
	if (!config.replica_serve_stale_data && !(c->flags & CLIENT_MASTER) && repl_link_down() &&
	    (!(cmd->flags & CMD_STALE) ||
	     (cmd->fn == cmd_exec && multi_queue_any(c, CMD_STALE, false)))) {
		if (cmd->fn == cmd_exec) {
			multi_reset(c);
			multi_unwatch(c);
			reply_error(c,
				    "-EXECABORT Transaction discarded because of: MASTERDOWN Link "
				    "with MASTER is down and replica-serve-stale-data is set to "
				    "'no'.");
		} else {
			reply_error(c, "-MASTERDOWN Link with MASTER is down and "
				       "replica-serve-stale-data is set to 'no'.");
			if (c->in_multi)
				c->multi_error = true;
		}
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return cmd;
	}
	/* A replica loading its master's file from the socket (Redis's
	 * "loading" state): only the commands flagged loading run. */
	if (!(cmd->flags & CMD_LOADING) && !(c->flags & CLIENT_MASTER) && repl_loading()) {
		reply_error(c, "-LOADING Redis is loading the dataset in memory");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* A monitor counts as a replica: it may not touch the keyspace. */
	if ((c->flags & (CLIENT_MONITOR | CLIENT_REPLICA)) &&
	    (cmd->flags & (CMD_WRITE | CMD_READONLY | CMD_MAY_REPLICATE))) {
		reply_error(c, "Replica can't interact with the keyspace");
		stat_add(&own_stats(c, cmd)->rejected, 1);
		if (c->in_multi)
			c->multi_error = true;
		return cmd;
	}
	/* CLIENT PAUSE: even queueing inside MULTI waits, as in Redis. */
	if (pause_type_hint() && pause_holds(c, cmd)) {
		pause_hold(c, cmd);
		return cmd;
	}
	if (c->in_multi && !(cmd->flags & CMD_NOT_QUEUED)) {
		multi_queue(c, cmd);
		return cmd;
	}
	command_call(c, cmd);
	return cmd;
}

void command_dispatch(struct client *c)
{
	struct command *cmd = dispatch(c);

	/* ASKING lasts one command, or the transaction it opens (Redis's
	 * resetClient). */
	if (__builtin_expect(c->flags & CLIENT_ASKING, 0) && !c->in_multi &&
	    !(cmd && cmd->fn == cmd_asking))
		c->flags &= ~CLIENT_ASKING;
	key_slot_forget();
}

void command_dirty(uint64_t n)
{
	struct exec_ctx *x = exec_ctx_top;

	if (!x) {
		store_count_changes(n);
		return;
	}
	if (x->given < 0)
		x->given = 0;
	x->given += (int64_t)n;
}

/* A call's changes, at its end: what it gave, or one per key changed. */
static void count_changes(const struct exec_ctx *x)
{
	store_count_changes(x->given >= 0 ? (uint64_t)x->given : x->keys_changed);
}

void command_count_done(struct client *c, const struct command *cmd, int argc,
			const struct arg *argv, uint64_t duration_us, bool failed)
{
	struct worker *w = c->worker;
	struct command_stats *stats = own_stats(c, cmd);

	/* Counted in this worker's own lines: no other worker writes them. */
	stat_add(&stats->calls, 1);
	stat_add(&stats->usec, duration_us);
	if (failed)
		stat_add(&stats->failed, 1);
	slowlog_push_if_needed(c, cmd, argc, argv, duration_us);
	latency_command_done(w, cmd, duration_us);
	c->commands++;
	stat_add(&w->stats.commands, 1);
}

/* Counts a call that started at start_us (mono) when the worker had seen
 * errors errors: MONITOR at once; the counters, SLOWLOG and LATENCY once it
 * is answered, which for a command that blocked is later (blocking.c). */
static void account(struct client *c, struct command *cmd, int64_t start, uint64_t errors)
{
	struct worker *w = c->worker;
	int64_t end = mono_us();
	uint64_t elapsed = end > start ? (uint64_t)(end - start) : 0;
	uint64_t now_errors = __atomic_load_n(&w->stats.errors, __ATOMIC_RELAXED);
	bool failed;

	/* The worker runs one command at a time: its new errors are this one's,
	 * but for those its nested calls (a script's) already accounted. */
	if (w->errors_mark > errors)
		errors = w->errors_mark;
	failed = now_errors != errors || w->call_failed;
	w->errors_mark = now_errors;
	w->call_failed = false;
	if (monitor_active())
		monitor_feed(c, cmd);
	__atomic_store_n(&c->last_ms, end / 1000, __ATOMIC_RELAXED);
	/* Blocked: its time so far waits with it; its wait is not counted. */
	if (c->blocked) {
		blocking_add_time(c, elapsed);
		return;
	}
	command_count_done(c, cmd, c->argc, c->argv, elapsed, failed);
}

/* HOTKEYS: the call's time and its bytes, in (as RESP sent them) and out
 * (the reply it queued), charged to its keys. */
static void hotkeys_charge(struct client *c, struct command *cmd, int64_t start, size_t reply_mark)
{
	int64_t end = mono_us();

	hotkeys_record(c, cmd, end > start ? (uint64_t)(end - start) : 0, hotkeys_request_bytes(c),
		       c->reply_bytes > reply_mark ? c->reply_bytes - reply_mark : 0);
}

/* CLIENT NO-TOUCH: lookups leave LRU/LFU alone, except TOUCH's. */
static unsigned touch_flags(const struct client *c, const struct command *cmd)
{
	return (c->flags & CLIENT_NO_TOUCH) && cmd->fn != cmd_touch ? EXEC_NO_TOUCH : 0;
}

__thread struct lockset *command_script_locks;

static bool acquire_give_up(void)
{
	return script_busy() || store_escalation_pending();
}

int command_lock_scope(struct lockset *ls)
{
	for (;;) {
		if (lockset_acquire_unless(ls, acquire_give_up) == 0)
			return 0;
		if (script_busy())
			return -EBUSY;
		/* A script escalates: it may need what this held. */
		store_escalation_wait();
	}
}

/* The shards of cmd's call into ls: 0, or -EBUSY after replying BUSY. */
static int command_acquire(struct client *c, struct command *cmd, struct lockset *ls)
{
	command_add_locks(cmd, c, c->db, c->argc, c->argv, ls);
	/* The shards of a script that turns busy while this waits give BUSY
	 * (it would wait for the script's end, its worker's clients with it);
	 * on the script's own thread (a busy script's turn of the event loop)
	 * the shards are the script's: nothing that needs them may run. */
	if ((store_locks_held && script_busy() && lockset_count(ls)) ||
	    command_lock_scope(ls) < 0) {
		script_reply_busy(c);
		stat_add(&own_stats(c, cmd)->rejected, 1);
		return -EBUSY;
	}
	return 0;
}

void command_call(struct client *c, struct command *cmd)
{
	struct worker *w = c->worker;
	struct exec_ctx x;
	struct lockset ls;
	int64_t start;
	uint64_t errors;
	size_t reply_mark;
	bool early;

	lockset_init(&ls);
	if (__builtin_expect(cmd->flags & CMD_LOCK_SCRIPT, 0) && !store_locks_held) {
		/* Its handler takes them (cmd/script.c), under the script lock. */
		if (script_busy()) {
			script_reply_busy(c);
			stat_add(&own_stats(c, cmd)->rejected, 1);
			return;
		}
		command_script_locks = &ls;
	} else if (command_acquire(c, cmd, &ls) < 0) {
		return;
	}
	/* The final save was taken while this waited for a lock: run nothing
	 * more, so no write is acknowledged that the image lacks. */
	if (__builtin_expect(server.shutdown, 0)) {
		lockset_release(&ls);
		c->flags |= CLIENT_CLOSE_ASAP;
		return;
	}
	__atomic_store_n(&c->last_cmd, cmd->name, __ATOMIC_RELAXED);
	errors = __atomic_load_n(&w->stats.errors, __ATOMIC_RELAXED);
	/* Three clock reads per command: its monotonic start and end (duration,
	 * idle time, the access clock) and the wall clock for deadlines. */
	start = mono_us();
	reply_mark = c->reply_bytes;
	exec_ctx_push(&x, c, cmd, c->db,
		      touch_flags(c, cmd) |
			      (cmd->flags & CMD_TOUCHES_ARBITRARY_KEYS ? EXEC_ARBITRARY_KEYS : 0),
		      start);
	cmd->fn(c);
	command_script_locks = NULL;
	count_changes(&x);
	tracking_call_done(c, cmd);
	/* Its effect enters the stream under its locks, before the pops it
	 * feeds. */
	if (propagate_enabled()) {
		propagate_done(&x, cmd->flags & CMD_WRITE);
		if (propagate_flush(&x)) {
			/* WAIT waits for replicas to have this much. */
			c->repl_woff = repl_offset();
			c->aof_woff = aof_appended();
		}
	}
	/* A command that fed waiters (or blocked) is counted before they are
	 * served, as Redis serves them after call(): its time is its own, its
	 * SLOWLOG entry precedes theirs and their errors are not its. Any other
	 * once its locks are released, so that they are held no longer. */
	early = c->blocked || blocking_serve_pending();
	if (early)
		account(c, cmd, start, errors);
	/* Clients blocked on keys it fed are served before anything else runs. */
	blocking_serve_held(&ls);
	exec_ctx_pop(&x);
	lockset_release(&ls);
	blocking_serve_ready();
	/* Its records reach the AOF (and the disk, under appendfsync always)
	 * before its reply leaves: at the worker's next send, with every other
	 * command's of the turn (aof_before_replies). */
	/* Its own invalidations follow its reply (and a served waiter's its
	 * answer). */
	tracking_command_end(c, cmd);
	/* Then what it published to itself (a RESP3 subscriber), as Redis. */
	pubsub_command_end(c);
	if (!early)
		account(c, cmd, start, errors);
	if (hotkeys_active())
		hotkeys_charge(c, cmd, start, reply_mark);
}

void command_call_as(struct client *c, struct command *cmd, int argc, struct arg *argv,
		     unsigned flags)
{
	struct arg *outer_argv = c->argv;
	int outer_argc = c->argc;
	struct exec_ctx x;
	int64_t start = 0;
	uint64_t errors = 0;
	size_t reply_mark;

	/* c->last_cmd stays the outer command's (CLIENT LIST shows cmd=exec
	 * for a client whose EXEC ran, as Redis does). */
	errors = __atomic_load_n(&c->worker->stats.errors, __ATOMIC_RELAXED);
	if (!(flags & EXEC_RETRY)) {
		start = mono_us();
	}
	reply_mark = c->reply_bytes;
	c->argv = argv;
	c->argc = argc;
	exec_ctx_push(&x, c, cmd, c->db, flags | touch_flags(c, cmd), start);
	cmd->fn(c);
	count_changes(&x);
	tracking_call_done(c, cmd);
	/* A queued command's effect joins EXEC's; a served waiter's is a unit
	 * of its own, emitted under the locks its server holds. */
	if (propagate_enabled()) {
		propagate_done(&x, cmd->flags & CMD_WRITE);
		propagate_flush(&x);
	}
	exec_ctx_pop(&x);
	if (!(flags & EXEC_RETRY))
		account(c, cmd, start, errors);
	/* HOTKEYS charges each command of a transaction, not a script's calls
	 * (their script is charged, as in Redis). */
	if (hotkeys_active() && (flags & (EXEC_IN_EXEC | EXEC_SCRIPT | EXEC_RETRY)) == EXEC_IN_EXEC)
		hotkeys_charge(c, cmd, start, reply_mark);
	c->argv = outer_argv;
	c->argc = outer_argc;
}

bool arg_ll(struct client *c, int i, long long *v)
{
	if (str_to_ll(c->argv[i].p, c->argv[i].len, v))
		return true;
	reply_error(c, ERR_NOT_INT);
	return false;
}

bool arg_is(const struct client *c, int i, const char *word)
{
	return i < c->argc && str_eq_nocase(c->argv[i].p, c->argv[i].len, word);
}

struct entry *key_find(struct client *c, int i)
{
	return db_find(c->db, c->argv[i].p, c->argv[i].len);
}

struct entry *key_find_read(struct client *c, int i)
{
	struct entry *e = db_find_read(c->db, c->argv[i].p, c->argv[i].len);

	/* Redis's read lookups report a miss (class m). */
	if (!e)
		notify_arg(c, NOTIFY_KEY_MISS, "keymiss", i);
	return e;
}

bool entry_is(struct client *c, const struct entry *e, int type)
{
	if (e->val.type == type)
		return true;
	reply_error(c, ERR_WRONGTYPE);
	return false;
}

const char *command_shown_name(const struct command *cmd)
{
	static __thread char buf[64];
	size_t i;

	if (!(cmd->flags & CMD_MODULE))
		return cmd->name;
	for (i = 0; cmd->name[i] && i < sizeof(buf) - 1; i++)
		buf[i] = (char)toupper((unsigned char)cmd->name[i]);
	buf[i] = '\0';
	return buf;
}
