// SPDX-License-Identifier: BSD-3-Clause
/*
 * config: the table of directives (config.def), their parsing and checks
 * with Redis's error messages, the start-up file and command line, and
 * CONFIG GET / SET. CONFIG REWRITE and the docs are in config_rewrite.c.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "acl_users.h"
#include "aof.h"
#include "config.h"
#include "defrag.h"
#include "config_table.h"
#include "log.h"
#include "mem.h"
#include "text.h"
#include "util.h"

struct config config;

/* ---- value tables (each in Redis's order: errors list them so) ----------- */

static const struct config_enum loglevel_names[] = { { "debug", 0 },   { "verbose", 1 },
						     { "notice", 2 },  { "warning", 3 },
						     { "nothing", 4 }, { 0 } };
static const struct config_enum io_engine_names[] = { { "auto", IO_ENGINE_AUTO },
						      { "io_uring", IO_ENGINE_URING },
						      { "epoll", IO_ENGINE_EPOLL },
						      { 0 } };
/* Values of enum maxmemory_policy (evict.h); the two LRM policies (least
 * recently modified) are listed, as Redis lists them, but refused. */
#define POLICY_LRM 100
static const struct config_enum maxmemory_policy_names[] = { { "volatile-lru", 0 },
							     { "volatile-lfu", 1 },
							     { "volatile-random", 2 },
							     { "volatile-ttl", 3 },
							     { "volatile-lrm", POLICY_LRM },
							     { "allkeys-lru", 4 },
							     { "allkeys-lfu", 5 },
							     { "allkeys-random", 6 },
							     { "allkeys-lrm", POLICY_LRM + 1 },
							     { "noeviction", 7 },
							     { 0 } };
static const struct config_enum fastpath_mode_names[] = {
	{ "auto", 0 }, { "native", 1 }, { "generic", 2 }, { 0 }
};
static const struct config_enum protected_action_names[] = { { "no", PROTECTED_ACTION_NO },
							     { "yes", PROTECTED_ACTION_YES },
							     { "local", PROTECTED_ACTION_LOCAL },
							     { 0 } };
static const struct config_enum supervised_mode_names[] = {
	{ "upstart", 1 }, { "systemd", 2 }, { "auto", 3 }, { "no", 0 }, { 0 }
};
/* Values of syslog.h's LOG_USER and LOG_LOCAL0..7. */
static const struct config_enum syslog_facility_names[] = {
	{ "user", 8 << 3 },    { "local0", 16 << 3 },
	{ "local1", 17 << 3 }, { "local2", 18 << 3 },
	{ "local3", 19 << 3 }, { "local4", 20 << 3 },
	{ "local5", 21 << 3 }, { "local6", 22 << 3 },
	{ "local7", 23 << 3 }, { 0 }
};
static const struct config_enum repl_diskless_load_names[] = {
	{ "disabled", 0 }, { "on-empty-db", 1 }, { "swapdb", 2 }, { "flushdb", 3 }, { 0 }
};
static const struct config_enum aof_fsync_names[] = {
	{ "everysec", 2 }, { "always", 1 }, { "no", 0 }, { 0 }
};
/* "yes" and "relative" are one value: CONFIG GET says "yes". */
static const struct config_enum oom_score_adj_names[] = {
	{ "no", 0 }, { "yes", 1 }, { "relative", 1 }, { "absolute", 2 }, { 0 }
};
static const struct config_enum acl_pubsub_default_names[] = { { "allchannels", 1 },
							       { "resetchannels", 0 },
							       { 0 } };
static const struct config_enum sanitize_dump_payload_names[] = {
	{ "no", 0 }, { "yes", 1 }, { "clients", 2 }, { 0 }
};
static const struct config_enum cluster_preferred_endpoint_type_names[] = {
	{ "ip", 0 }, { "hostname", 1 }, { "unknown-endpoint", 2 }, { 0 }
};
static const struct config_enum propagation_error_behavior_names[] = {
	{ "ignore", 0 }, { "panic", 1 }, { "panic-on-replicas", 2 }, { 0 }
};
/* Flags (CFG_MULTI): several may be given. */
enum { SHUTDOWN_SAVE = 1, SHUTDOWN_NOSAVE = 2, SHUTDOWN_NOW = 4, SHUTDOWN_FORCE = 8 };
static const struct config_enum shutdown_on_sig_names[] = {
	{ "default", 0 },	 { "save", SHUTDOWN_SAVE },   { "nosave", SHUTDOWN_NOSAVE },
	{ "now", SHUTDOWN_NOW }, { "force", SHUTDOWN_FORCE }, { 0 }
};
static const struct config_enum cluster_slot_stats_names[] = { { "no", 0 },  { "yes", 7 },
							       { "cpu", 1 }, { "net", 2 },
							       { "mem", 4 }, { 0 } };
static const struct config_enum tls_auth_clients_names[] = {
	{ "no", 0 }, { "yes", 1 }, { "optional", 2 }, { 0 }
};
static const struct config_enum tls_client_auth_user_names[] = { { "CN", 1 }, { "off", 0 }, { 0 } };

/* ---- checks and appliers ------------------------------------------------------ */

/* appendonly: the AOF starts (with a rewrite) or stops now, as in Redis. */
static int apply_appendonly(const char **err)
{
	(void)err;
	aof_config_changed();
	return 0;
}

static int apply_aof_gc(const char **err)
{
	(void)err;
	aof_gc_config_changed();
	return 0;
}

static int apply_loglevel(const char **err)
{
	(void)err;
	log_set_level((int)config.loglevel);
	return 0;
}

/* Redis's warning for a limit already exceeded, which used_memory (with the
 * fast path's slab) makes easy to set. */
static int apply_maxmemory(const char **err)
{
	size_t used = mem_used();

	(void)err;
	if (config.maxmemory && (size_t)config.maxmemory < used)
		log_warning("WARNING: the new maxmemory value set via CONFIG SET (%llu) is smaller "
			    "than the current memory usage (%zu). This will result in key eviction "
			    "and/or the inability to accept new write commands depending on the "
			    "maxmemory-policy.",
			    (unsigned long long)config.maxmemory, used);
	return 0;
}

/* The UDP access rule (access.c) follows requirepass, fastpath-token and
 * protected-mode before the CONFIG SET that changes one is answered. */
static int apply_access(const char **err)
{
	(void)err;
	access_update();
	/* requirepass is the default user's password (Redis's
	 * ACLUpdateDefaultUserPassword); the others leave it alone. */
	acl_set_default_password(config.requirepass);
	return 0;
}

/* As Redis: hz is a hint, so values out of range are kept within 1..500
 * (before they are stored: workers divide by it). */
/* Memory tracking (key-memory-histograms, cluster-slot-stats-enabled's mem)
 * is decided at start-up, as Redis's updateMemoryTrackingEnabled: CONFIG SET
 * may turn it off but not on again. -1 while the config is being loaded. */
static int memory_tracking = -1;

static bool memory_tracking_wanted(long long histograms, long long slot_stats)
{
	return histograms || (slot_stats & 4);
}

static int refuse_memory_tracking(bool wanted, const char **err)
{
	if (memory_tracking == 0 && wanted) {
		*err = "memory tracking cannot be enabled at runtime";
		return -1;
	}
	return 0;
}

static int check_key_memory_histograms(struct config_value *v, const char **err)
{
	return refuse_memory_tracking(
		memory_tracking_wanted(v->num, config.cluster_slot_stats_enabled), err);
}

static int check_cluster_slot_stats(struct config_value *v, const char **err)
{
	return refuse_memory_tracking(memory_tracking_wanted(config.key_memory_histograms, v->num),
				      err);
}

static int apply_memory_tracking(const char **err)
{
	(void)err;
	memory_tracking = memory_tracking_wanted(config.key_memory_histograms,
						 config.cluster_slot_stats_enabled);
	return 0;
}

void config_loaded(void)
{
	apply_memory_tracking(NULL);
}

static int check_hz(struct config_value *v, const char **err)
{
	(void)err;
	v->num = v->num < 1 ? 1 : v->num > 500 ? 500 : v->num;
	return 0;
}

/* Without jemalloc's utilization query (the sanitizer build's libc
 * malloc) activedefrag is refused, as a Redis built without a defrag-capable
 * jemalloc refuses it. */
static int check_activedefrag(struct config_value *v, const char **err)
{
	if (v->num && !defrag_supported()) {
		*err = "Active defragmentation cannot be enabled: it requires a Redis server "
		       "compiled with a modified Jemalloc like the one shipped by default with the "
		       "Redis source distribution";
		return -1;
	}
	return 0;
}

static int check_maxmemory_policy(struct config_value *v, const char **err)
{
	if (v->num >= POLICY_LRM) {
		*err = "the LRM policies are not implemented by xkv yet";
		return -1;
	}
	return 0;
}

static bool is_base_name(const char *s)
{
	return !strchr(s, '/') && !strchr(s, '\\');
}

static int check_dbfilename(struct config_value *v, const char **err)
{
	if (!is_base_name(v->str)) {
		*err = "dbfilename can't be a path, just a filename";
		return -1;
	}
	return 0;
}

static int check_appendfilename(struct config_value *v, const char **err)
{
	if (!v->str[0]) {
		*err = "appendfilename can't be empty";
		return -1;
	}
	if (!is_base_name(v->str)) {
		*err = "appendfilename can't be a path, just a filename";
		return -1;
	}
	return 0;
}

static int check_appenddirname(struct config_value *v, const char **err)
{
	if (!v->str[0]) {
		*err = "appenddirname can't be empty";
		return -1;
	}
	if (!is_base_name(v->str)) {
		*err = "appenddirname can't be a path, just a dirname";
		return -1;
	}
	return 0;
}

static int check_shutdown_on_sig(struct config_value *v, const char **err)
{
	if ((v->num & SHUTDOWN_NOSAVE) && (v->num & SHUTDOWN_SAVE)) {
		*err = "shutdown options SAVE and NOSAVE can't be used simultaneously";
		return -1;
	}
	return 0;
}

static int check_hostname_chars(const char *s, const char **err)
{
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.')) {
			*err = "Hostnames may only contain alphanumeric characters, hyphens or "
			       "dots";
			return -1;
		}
	}
	return 0;
}

static int check_cluster_announce_hostname(struct config_value *v, const char **err)
{
	if (strlen(v->str) >= 256) {
		*err = "Hostnames must be less than 256 characters";
		return -1;
	}
	return check_hostname_chars(v->str, err);
}

static int check_cluster_announce_ip(struct config_value *v, const char **err)
{
	/* An address is made of hostname characters too (':' aside). */
	if (!v->str[0] || strchr(v->str, ':'))
		return 0;
	if (strlen(v->str) >= 46) {
		*err = "Hostnames for cluster-announce-ip must be less than 46 characters";
		return -1;
	}
	return check_hostname_chars(v->str, err);
}

static int check_cluster_announce_human_nodename(struct config_value *v, const char **err)
{
	for (const char *s = v->str; *s; s++) {
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.')) {
			*err = "Announced human node name contained invalid character";
			return -1;
		}
	}
	return 0;
}

/* Redis's process title variables; braces must pair. */
static int check_proc_title_template(struct config_value *v, const char **err)
{
	static const char *const vars[] = { "{title}",	     "{listen-addr}",
					    "{server-mode}", "{port}",
					    "{tls-port}",    "{unixsocket}",
					    "{config-file}", NULL };
	const char *s = v->str;
	bool has_title = false;

	while (*s) {
		const char *close;
		bool known = false;

		if (*s == '}')
			goto bad;
		if (*s != '{') {
			s++;
			continue;
		}
		close = strchr(s, '}');
		if (!close)
			goto bad;
		for (int i = 0; vars[i]; i++)
			if ((size_t)(close - s + 1) == strlen(vars[i]) &&
			    !strncmp(s, vars[i], strlen(vars[i])))
				known = true;
		if (!known)
			goto bad;
		if (!strncmp(s, "{title}", 7))
			has_title = true;
		s = close + 1;
	}
	/* Redis needs {title}: tools find the process by it. */
	if (has_title || !v->str[0])
		return 0;
bad:
	*err = "template format is invalid or contains unknown variables";
	return -1;
}

static int check_array_slice_size(struct config_value *v, const char **err)
{
	if (v->num <= 0 || (v->num & (v->num - 1))) {
		*err = "array-slice-size must be a power of two";
		return -1;
	}
	return 0;
}

static int check_array_sparse_kmax(struct config_value *v, const char **err)
{
	if (v->num > 0 && v->num <= config.array_sparse_kmin) {
		*err = "array-sparse-kmax must be greater than array-sparse-kmin when non-zero";
		return -1;
	}
	return 0;
}

static int check_array_sparse_kmin(struct config_value *v, const char **err)
{
	if (config.array_sparse_kmax > 0 && v->num >= config.array_sparse_kmax) {
		*err = "array-sparse-kmin must be less than array-sparse-kmax";
		return -1;
	}
	return 0;
}

/* ---- the table --------------------------------------------------------------------- */

#define CONFIG_BOOL(n, a, f, fl, d, ck, ap, sb, ds)                                                \
	{ .name = n,                                                                               \
	  .alias = a,                                                                              \
	  .type = CFG_BOOL,                                                                        \
	  .flags = fl,                                                                             \
	  .field = &config.f,                                                                      \
	  .dflt = d,                                                                               \
	  .min = 0,                                                                                \
	  .max = 1,                                                                                \
	  .check = ck,                                                                             \
	  .apply = ap,                                                                             \
	  .sub = sb,                                                                               \
	  .desc = ds },
#define CONFIG_STR(n, a, f, fl, d, ck, ap, sb, ds)                                                 \
	{ .name = n,                                                                               \
	  .alias = a,                                                                              \
	  .type = CFG_STRING,                                                                      \
	  .flags = fl,                                                                             \
	  .field = &config.f,                                                                      \
	  .dflt = d,                                                                               \
	  .check = ck,                                                                             \
	  .apply = ap,                                                                             \
	  .sub = sb,                                                                               \
	  .desc = ds },
#define CONFIG_ENUM(n, a, f, fl, d, vals, ck, ap, sb, ds)                                          \
	{ .name = n,                                                                               \
	  .alias = a,                                                                              \
	  .type = CFG_ENUM,                                                                        \
	  .flags = fl,                                                                             \
	  .field = &config.f,                                                                      \
	  .dflt = d,                                                                               \
	  .values = vals,                                                                          \
	  .check = ck,                                                                             \
	  .apply = ap,                                                                             \
	  .sub = sb,                                                                               \
	  .desc = ds },
#define CONFIG_NUM(n, a, f, fl, d, lo, hi, ck, ap, sb, ds)                                         \
	{ .name = n,                                                                               \
	  .alias = a,                                                                              \
	  .type = CFG_NUMBER,                                                                      \
	  .flags = fl,                                                                             \
	  .field = &config.f,                                                                      \
	  .dflt = d,                                                                               \
	  .min = lo,                                                                               \
	  .max = hi,                                                                               \
	  .check = ck,                                                                             \
	  .apply = ap,                                                                             \
	  .sub = sb,                                                                               \
	  .desc = ds },
#define CONFIG_SPECIAL(n, a, f, fl, d, kind, sb, ds)                                               \
	{ .name = n,                                                                               \
	  .alias = a,                                                                              \
	  .type = CFG_SPECIAL,                                                                     \
	  .flags = fl,                                                                             \
	  .field = &config.f,                                                                      \
	  .dflt = d,                                                                               \
	  .special = kind,                                                                         \
	  .sub = sb,                                                                               \
	  .desc = ds },

const struct config_def config_defs[] = {
#include "config.def"
};
const size_t config_ndefs = sizeof(config_defs) / sizeof(config_defs[0]);

#define NDEFS (sizeof(config_defs) / sizeof(config_defs[0]))

static bool initializing; /* config_init(): the defaults are being set */

/* Replaced strings, freed at exit (a reader may still hold one). */
static char **retired;
static size_t nretired;
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;

const struct config_def *config_find(const char *name, size_t len, bool *alias)
{
	bool dummy;

	if (!alias)
		alias = &dummy;
	for (size_t i = 0; i < NDEFS; i++) {
		if (str_eq_nocase(name, len, config_defs[i].name)) {
			*alias = false;
			return &config_defs[i];
		}
		if (config_defs[i].alias && str_eq_nocase(name, len, config_defs[i].alias)) {
			*alias = true;
			return &config_defs[i];
		}
	}
	return NULL;
}

void config_value_free(struct config_value *v)
{
	xfree(v->str);
	v->str = NULL;
}

/* ---- parsing ------------------------------------------------------------------------ */

void config_add_arg(void *ctx, char *arg, size_t len)
{
	struct config_args *a = ctx;

	if (a->n < 64) {
		a->v[a->n] = arg;
		a->len[a->n] = len;
	}
	a->n++;
}

/* Redis's memtoull: digits and an optional b/k/kb/m/mb/g/gb unit; no sign. */
static bool parse_memory(const char *p, size_t len, unsigned long long *out)
{
	static const struct {
		const char *unit;
		unsigned long long mul;
	} units[] = { { "", 1 },
		      { "b", 1 },
		      { "k", 1000 },
		      { "kb", 1024 },
		      { "m", 1000 * 1000 },
		      { "mb", 1024 * 1024 },
		      { "g", 1000000000 },
		      { "gb", 1024 * 1024 * 1024 } };
	size_t digits = 0;
	unsigned long long v = 0;

	while (digits < len && p[digits] >= '0' && p[digits] <= '9')
		digits++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (len - digits != strlen(units[i].unit) ||
		    strncasecmp(p + digits, units[i].unit, len - digits))
			continue;
		/* Like strtoull: a too large number saturates. */
		for (size_t j = 0; j < digits; j++)
			v = v > (ULLONG_MAX - 9) / 10 ? ULLONG_MAX
						      : v * 10 + (unsigned)(p[j] - '0');
		*out = v * units[i].mul;
		return true;
	}
	return false;
}

/* strtoll over the whole of a NUL-terminated s (Redis's "eptr[0] == 0"). */
static bool parse_strtoll(const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return *end == '\0';
}

/* The canonical text of a number with trailing zeros trimmed ("%f"). */
static void format_percentile(struct text *t, double d)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%f", d);

	if (strchr(buf, '.')) {
		while (n > 0 && buf[n - 1] == '0')
			n--;
		if (n > 0 && buf[n - 1] == '.')
			n--;
	}
	text_append(t, buf, (size_t)n);
}

static int parse_notify(const char *p, size_t len, long long *out)
{
	static const struct {
		char c;
		int bit;
	} map[] = {
		{ 'A', NOTIFY_ALL },
		{ 'g', NOTIFY_GENERIC },
		{ '$', NOTIFY_STRING },
		{ 'l', NOTIFY_LIST },
		{ 's', NOTIFY_SET },
		{ 'h', NOTIFY_HASH },
		{ 'z', NOTIFY_ZSET },
		{ 'x', NOTIFY_EXPIRED },
		{ 'e', NOTIFY_EVICTED },
		{ 'K', NOTIFY_KEYSPACE },
		{ 'E', NOTIFY_KEYEVENT },
		{ 't', NOTIFY_STREAM },
		{ 'm', NOTIFY_KEY_MISS },
		{ 'd', NOTIFY_MODULE },
		{ 'a', NOTIFY_ARRAY },
		{ 'n', NOTIFY_NEW },
		{ 'o', NOTIFY_OVERWRITTEN },
		{ 'c', NOTIFY_TYPE_CHANGED },
		{ 'S', NOTIFY_SUBKEYSPACE },
		{ 'T', NOTIFY_SUBKEYEVENT },
		{ 'I', NOTIFY_SUBKEYSPACEITEM },
		{ 'V', NOTIFY_SUBKEYSPACEEVENT },
	};
	long long flags = 0;

	/* Redis reads up to the first NUL. */
	for (size_t i = 0; i < len && p[i]; i++) {
		size_t j;

		for (j = 0; j < sizeof(map) / sizeof(map[0]) && map[j].c != p[i]; j++)
			;
		if (j == sizeof(map) / sizeof(map[0]))
			return -1;
		flags |= map[j].bit;
	}
	*out = flags;
	return 0;
}

static void format_notify(struct text *t, long long f)
{
	static const struct {
		char c;
		int bit;
	} cls[] = { { 'g', NOTIFY_GENERIC },	 { '$', NOTIFY_STRING },
		    { 'l', NOTIFY_LIST },	 { 's', NOTIFY_SET },
		    { 'h', NOTIFY_HASH },	 { 'z', NOTIFY_ZSET },
		    { 'x', NOTIFY_EXPIRED },	 { 'e', NOTIFY_EVICTED },
		    { 't', NOTIFY_STREAM },	 { 'd', NOTIFY_MODULE },
		    { 'a', NOTIFY_ARRAY },	 { 'n', NOTIFY_NEW },
		    { 'o', NOTIFY_OVERWRITTEN }, { 'c', NOTIFY_TYPE_CHANGED } },
	  kinds[] = { { 'K', NOTIFY_KEYSPACE },	       { 'E', NOTIFY_KEYEVENT },
		      { 'm', NOTIFY_KEY_MISS },	       { 'S', NOTIFY_SUBKEYSPACE },
		      { 'T', NOTIFY_SUBKEYEVENT },     { 'I', NOTIFY_SUBKEYSPACEITEM },
		      { 'V', NOTIFY_SUBKEYSPACEEVENT } };

	text_append(t, "", 0);
	if ((f & NOTIFY_ALL) == NOTIFY_ALL) {
		/* As Redis: n, o and c are not shown next to A. */
		text_append(t, "A", 1);
	} else {
		for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
			if (f & cls[i].bit)
				text_append(t, &cls[i].c, 1);
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (f & kinds[i].bit)
			text_append(t, &kinds[i].c, 1);
}

static int parse_enum(const struct config_def *d, const struct config_args *a,
		      struct config_value *v, char *err, size_t errlen)
{
	long long flags = 0;

	if (a->n == 0 || (!(d->flags & CFG_MULTI) && a->n != 1))
		goto bad;
	for (int i = 0; i < a->n; i++) {
		bool matched = false;

		for (const struct config_enum *e = d->values; e->name; e++) {
			if (str_eq_nocase(a->v[i], a->len[i], e->name)) {
				flags |= e->value;
				matched = true;
			}
		}
		if (!matched)
			goto bad;
	}
	v->num = flags;
	return 0;
bad : {
	int n = snprintf(err, errlen, "argument(s) must be one of the following: ");

	for (const struct config_enum *e = d->values; e->name && n < (int)errlen; e++)
		n += snprintf(err + n, errlen - n, "%s%s", e == d->values ? "" : ", ", e->name);
	return -1;
}
}

static int parse_number(const struct config_def *d, const char *p, size_t len,
			struct config_value *v, char *err, size_t errlen)
{
	unsigned long long u;
	long long ll;
	char buf[64];
	bool ok = false;

	if ((d->flags & CFG_MEMORY) && parse_memory(p, len, &u)) {
		ll = (long long)u;
		ok = true;
	}
	if (!ok && (d->flags & CFG_PERCENT) && len > 1 && p[len - 1] == '%' &&
	    str_to_ll(p, len - 1, &ll) && ll >= 0) {
		ll = -ll; /* stored negative, as Redis */
		ok = true;
	}
	if (!ok && (d->flags & CFG_OCTAL) && len < sizeof(buf)) {
		char *end;

		memcpy(buf, p, len);
		buf[len] = '\0';
		errno = 0;
		ll = strtoll(buf, &end, 8);
		ok = errno == 0 && *end == '\0';
	}
	if (!ok && !(d->flags & (CFG_MEMORY | CFG_PERCENT | CFG_OCTAL)))
		ok = str_to_ll(p, len, &ll);
	if (!ok) {
		snprintf(err, errlen, "%s",
			 (d->flags & CFG_MEMORY) && (d->flags & CFG_PERCENT)
				 ? "argument must be a memory or percent value"
			 : (d->flags & CFG_MEMORY) ? "argument must be a memory value"
			 : (d->flags & CFG_OCTAL) ? "argument couldn't be parsed as an octal number"
						  : "argument couldn't be parsed into an integer");
		return -1;
	}
	if (d->flags & CFG_UNSIGNED) {
		unsigned long long x = (unsigned long long)ll;

		if (x < (unsigned long long)d->min || x > (unsigned long long)d->max) {
			snprintf(err, errlen,
				 (d->flags & CFG_OCTAL)
					 ? "argument must be between %llo and %llo inclusive"
					 : "argument must be between %llu and %llu inclusive",
				 (unsigned long long)d->min, (unsigned long long)d->max);
			return -1;
		}
	} else if ((d->flags & CFG_PERCENT) && ll < 0) {
		if (ll < d->min) {
			snprintf(err, errlen, "percentage argument must be less or equal to %lld",
				 -d->min);
			return -1;
		}
	} else if (ll < d->min || ll > d->max) {
		snprintf(err, errlen, "argument must be between %lld and %lld inclusive", d->min,
			 d->max);
		return -1;
	}
	v->num = ll;
	return 0;
}

/* client-output-buffer-limit: "<class> <hard> <soft> <seconds>" groups over
 * the current limits. */
static int parse_obuf(const struct config_args *a, struct config_value *v, const char **err)
{
	memcpy(v->obuf, config.obuf_limits, sizeof(v->obuf));
	if (a->n % 4 || a->n > 64) {
		*err = "Wrong number of arguments in buffer limit configuration.";
		return -1;
	}
	for (int i = 0; i < a->n; i += 4) {
		unsigned long long hard, soft;
		long long secs;
		int cls;

		if (str_eq_nocase(a->v[i], a->len[i], "normal"))
			cls = OBUF_NORMAL;
		else if (str_eq_nocase(a->v[i], a->len[i], "slave") ||
			 str_eq_nocase(a->v[i], a->len[i], "replica"))
			cls = OBUF_REPLICA;
		else if (str_eq_nocase(a->v[i], a->len[i], "pubsub"))
			cls = OBUF_PUBSUB;
		else {
			*err = "Invalid client class specified in buffer limit configuration.";
			return -1;
		}
		if (!parse_memory(a->v[i + 1], a->len[i + 1], &hard) ||
		    !parse_memory(a->v[i + 2], a->len[i + 2], &soft) ||
		    !parse_strtoll(a->v[i + 3], &secs) || secs < 0) {
			*err = "Error in hard, soft or soft_seconds setting in buffer limit "
			       "configuration.";
			return -1;
		}
		v->obuf[cls][0] = (long long)hard;
		v->obuf[cls][1] = (long long)soft;
		v->obuf[cls][2] = secs;
	}
	return 0;
}

/* The special directives: args as split, canonical text into v->str. */
static int parse_special(const struct config_def *d, const struct config_args *a,
			 struct config_value *v, const char **err)
{
	struct text t = { 0 };
	int n = a->n;

	switch (d->special) {
	case SPECIAL_DIR: {
		struct stat st;

		if (n != 1) {
			*err = "wrong number of arguments";
			return -1;
		}
		/* Checked now so a multi-directive SET fails before changing anything. */
		if (stat(a->v[0], &st) < 0 || (!S_ISDIR(st.st_mode) && (errno = ENOTDIR)) ||
		    access(a->v[0], X_OK) < 0) {
			*err = strerror(errno);
			return -1;
		}
		text_append(&t, a->v[0], a->len[0]);
		break;
	}
	case SPECIAL_SAVE:
		if (n == 1 && a->len[0] == 0)
			n = 0;
		if (n % 2)
			goto bad_save;
		for (int i = 0; i < n; i++) {
			long long x;

			if (!parse_strtoll(a->v[i], &x) || x < (i % 2 ? 0 : 1))
				goto bad_save;
			text_printf(&t, i ? " %lld" : "%lld", i % 2 ? (long long)(int)x : x);
		}
		break;
	bad_save:
		xfree(t.p);
		*err = "Invalid save parameters";
		return -1;
	case SPECIAL_OBUF:
		return parse_obuf(a, v, err);
	case SPECIAL_OOM:
		if (n != 3) {
			*err = "wrong number of arguments";
			return -1;
		}
		for (int i = 0; i < 3; i++) {
			long long x;

			if (!parse_strtoll(a->v[i], &x) || x < -2000 || x > 2000) {
				xfree(t.p);
				*err = "Invalid oom-score-adj-values, elements must be between "
				       "-2000 "
				       "and 2000.";
				return -1;
			}
			text_printf(&t, i ? " %lld" : "%lld", x);
		}
		break;
	case SPECIAL_NOTIFY:
		if (n != 1) {
			*err = "wrong number of arguments";
			return -1;
		}
		if (parse_notify(a->v[0], a->len[0], &v->num) < 0) {
			*err = "Invalid event class character. Use 'Ag$lshzxeKEtmdnocaSTIV'.";
			return -1;
		}
		return 0;
	case SPECIAL_BIND:
		if (n > 16) {
			*err = "Too many bind addresses specified.";
			return -1;
		}
		if (n == 1 && a->len[0] == 0)
			n = 0;
		for (int i = 0; i < n; i++)
			text_printf(&t, "%s%.*s", i ? " " : "", (int)a->len[i], a->v[i]);
		break;
	case SPECIAL_REPLICAOF: {
		long long port;

		if (n == 1 && a->len[0] == 0 && initializing)
			break; /* the default: none */
		if (n != 2) {
			*err = "wrong number of arguments";
			return -1;
		}
		if (str_eq_nocase(a->v[0], a->len[0], "no") &&
		    str_eq_nocase(a->v[1], a->len[1], "one"))
			break;
		if (!parse_strtoll(a->v[1], &port) || port < 0 || port > 65535) {
			*err = "Invalid master port";
			return -1;
		}
		text_printf(&t, "%.*s %lld", (int)a->len[0], a->v[0], port);
		break;
	}
	case SPECIAL_PERCENTILES:
		if (n == 1 && a->len[0] == 0)
			n = 0;
		for (int i = 0; i < n; i++) {
			double p;

			if (!str_to_d(a->v[i], a->len[i], &p)) {
				*err = "Invalid latency-tracking-info-percentiles parameters";
				xfree(t.p);
				return -1;
			}
			if (p > 100.0 || p < 0.0) {
				*err = "latency-tracking-info-percentiles parameters should sit "
				       "between [0.0,100.0]";
				xfree(t.p);
				return -1;
			}
			if (i)
				text_append(&t, " ", 1);
			format_percentile(&t, p);
		}
		break;
	}
	v->str = t.p ? t.p : xstrndup("", 0);
	return 0;
}

int config_parse_args(const struct config_def *d, const struct config_args *a,
		      struct config_value *v, char *err, size_t errlen)
{
	const char *why = NULL;

	memset(v, 0, sizeof(*v));
	switch (d->type) {
	case CFG_BOOL:
		if (str_eq_nocase(a->v[0], a->len[0], "yes"))
			v->num = 1;
		else if (str_eq_nocase(a->v[0], a->len[0], "no"))
			v->num = 0;
		else
			why = "argument must be 'yes' or 'no'";
		break;
	case CFG_STRING: {
		struct text t = { 0 };

		/* Words given as separate arguments are kept space-separated. */
		text_append(&t, a->v[0], a->len[0]);
		for (int i = 1; (d->flags & CFG_WORDS) && i < a->n && i < 64; i++)
			text_printf(&t, " %.*s", (int)a->len[i], a->v[i]);
		v->str = t.p;
		break;
	}
	case CFG_ENUM:
		if (parse_enum(d, a, v, err, errlen) < 0)
			return -1;
		break;
	case CFG_NUMBER:
		if (parse_number(d, a->v[0], a->len[0], v, err, errlen) < 0)
			return -1;
		break;
	case CFG_SPECIAL:
		parse_special(d, a, v, &why); /* sets why on failure */
		break;
	}
	if (!why && d->check)
		d->check(v, &why); /* sets why on refusal */
	if (!why)
		return 0;
	snprintf(err, errlen, "%s", why);
	config_value_free(v);
	return -1;
}

int config_parse_text(const struct config_def *d, const char *p, size_t len, struct config_value *v,
		      char *err, size_t errlen)
{
	char *buf = xmalloc(len + 1);
	struct config_args a = { .n = 0 };
	int ret;

	/* A default is one word, or (multi-argument) words without quotes. */
	if ((d->flags & (CFG_MULTI | CFG_WORDS)) || d->type == CFG_SPECIAL) {
		if (split_args(p, len, buf, config_add_arg, &a) < 0) {
			xfree(buf);
			return -1;
		}
		if (a.n == 0 && d->type != CFG_SPECIAL && !(d->flags & CFG_MULTI))
			config_add_arg(&a, buf, 0);
		if (a.n == 0 && d->type == CFG_SPECIAL)
			config_add_arg(&a, buf, 0), buf[0] = '\0';
	} else {
		memcpy(buf, p, len);
		buf[len] = '\0';
		config_add_arg(&a, buf, len);
	}
	ret = config_parse_args(d, &a, v, err, errlen);
	xfree(buf);
	return ret;
}

/* ---- storing and showing ------------------------------------------------------------ */

static void retire(char *old)
{
	if (!old)
		return;
	pthread_mutex_lock(&retire_lock);
	retired = xrealloc(retired, sizeof(*retired) * (nretired + 1));
	retired[nretired++] = old;
	pthread_mutex_unlock(&retire_lock);
}

void config_store(const struct config_def *d, struct config_value *v)
{
	if (d->type == CFG_STRING || (d->type == CFG_SPECIAL && d->special != SPECIAL_OBUF &&
				      d->special != SPECIAL_NOTIFY)) {
		char *old = *(char **)d->field;

		__atomic_store_n((char **)d->field, v->str, __ATOMIC_RELEASE);
		v->str = NULL;
		retire(old);
		if (d->type == CFG_SPECIAL && d->special == SPECIAL_DIR && chdir(config.dir) < 0)
			log_warning("Can't chdir to '%s': %s", config.dir, strerror(errno));
	} else if (d->type == CFG_SPECIAL && d->special == SPECIAL_OBUF) {
		/* Validated by parse_obuf(); each number is stored whole. */
		for (int i = 0; i < OBUF_CLASSES; i++)
			for (int j = 0; j < 3; j++)
				__atomic_store_n(&config.obuf_limits[i][j], v->obuf[i][j],
						 __ATOMIC_RELAXED);
	} else {
		__atomic_store_n((long long *)d->field, v->num, __ATOMIC_RELAXED);
	}
}

static void format_enum(struct text *t, const struct config_def *d, long long val)
{
	long long left = val;
	bool any = false;

	for (const struct config_enum *e = d->values; e->name; e++) {
		if (e->value == val) {
			text_printf(t, "%s", e->name);
			return;
		}
	}
	/* Several flags: named in table order, each once. */
	for (const struct config_enum *e = d->values; (d->flags & CFG_MULTI) && e->name; e++) {
		if (e->value && (left & e->value) == e->value) {
			text_printf(t, any ? " %s" : "%s", e->name);
			left &= ~(long long)e->value;
			any = true;
		}
	}
	if (!any || left)
		text_printf(t, "unknown");
}

void config_format(struct text *t, const struct config_def *d)
{
	long long num = 0;
	char cwd[PATH_MAX];

	text_append(t, "", 0);
	if (d->type != CFG_STRING && d->type != CFG_SPECIAL)
		num = __atomic_load_n((long long *)d->field, __ATOMIC_RELAXED);
	switch (d->type) {
	case CFG_BOOL:
		text_printf(t, "%s", num ? "yes" : "no");
		break;
	case CFG_STRING:
		text_printf(t, "%s", __atomic_load_n((char **)d->field, __ATOMIC_ACQUIRE));
		break;
	case CFG_ENUM:
		format_enum(t, d, num);
		break;
	case CFG_NUMBER:
		if ((d->flags & CFG_PERCENT) && num < 0)
			text_printf(t, "%lld%%", -num);
		else if (d->flags & CFG_MEMORY)
			text_printf(t, "%llu", (unsigned long long)num);
		else if (d->flags & CFG_OCTAL)
			text_printf(t, "%llo", num);
		else
			text_printf(t, "%lld", num);
		break;
	case CFG_SPECIAL:
		switch (d->special) {
		case SPECIAL_DIR:
			text_printf(t, "%s", getcwd(cwd, sizeof(cwd)) ? cwd : "");
			break;
		case SPECIAL_OBUF: {
			static const char *const names[] = { "normal", "slave", "pubsub" };

			for (int i = 0; i < OBUF_CLASSES; i++)
				text_printf(t, "%s%s %llu %llu %lld", i ? " " : "", names[i],
					    (unsigned long long)__atomic_load_n(
						    &config.obuf_limits[i][0], __ATOMIC_RELAXED),
					    (unsigned long long)__atomic_load_n(
						    &config.obuf_limits[i][1], __ATOMIC_RELAXED),
					    __atomic_load_n(&config.obuf_limits[i][2],
							    __ATOMIC_RELAXED));
			break;
		}
		case SPECIAL_NOTIFY:
			format_notify(t, __atomic_load_n(&config.notify_keyspace_events,
							 __ATOMIC_RELAXED));
			break;
		default:
			text_printf(t, "%s", __atomic_load_n((char **)d->field, __ATOMIC_ACQUIRE));
			break;
		}
		break;
	}
}

void config_init(void)
{
	char err[256];

	initializing = true;
	for (size_t i = 0; i < NDEFS; i++) {
		struct config_value v;

		if (config_parse_text(&config_defs[i], config_defs[i].dflt,
				      strlen(config_defs[i].dflt), &v, err, sizeof(err)) < 0) {
			fprintf(stderr, "bad default of %s: %s\n", config_defs[i].name, err);
			xkv_assert(!"bad default");
		}
		config_store(&config_defs[i], &v);
	}
	initializing = false;
}

/* ---- CONFIG SET / GET ---------------------------------------------------------------- */

/* Splits a CONFIG SET value of a multi-argument directive at each space, as
 * Redis does ("" is no argument). */
static void split_spaces(char *buf, size_t len, struct config_args *a)
{
	size_t start = 0;

	a->n = 0;
	if (len == 0)
		return;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || buf[i] == ' ') {
			buf[i] = '\0';
			config_add_arg(a, buf + start, i - start);
			start = i + 1;
		}
	}
}

/* A parsed value equals d's current one (CFG_STARTUP). */
static bool same_value(const struct config_def *d, const struct config_value *v)
{
	if (d->type == CFG_STRING || d->type == CFG_SPECIAL)
		return !strcmp(v->str, __atomic_load_n((char **)d->field, __ATOMIC_ACQUIRE));
	return v->num == __atomic_load_n((long long *)d->field, __ATOMIC_RELAXED);
}

/* Whether another socket holds port on the first bind address. */
static bool port_is_taken(long long port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	char addr[64] = "", service[16];
	const char *addrs = __atomic_load_n(&config.bind, __ATOMIC_ACQUIRE);
	bool taken = false;
	int fd;

	sscanf(addrs[0] == '-' ? addrs + 1 : addrs, "%63s", addr);
	snprintf(service, sizeof(service), "%lld", port);
	if (port == 0 ||
	    getaddrinfo(addr[0] && strcmp(addr, "*") ? addr : NULL, service, &hints, &ai) != 0)
		return false;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		taken = bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno == EADDRINUSE;
		close(fd);
	}
	freeaddrinfo(ai);
	return taken;
}

int config_set_pairs(const char *const *pairs, const size_t *lens, int n, bool local, char *err,
		     size_t errlen)
{
	/* One allocation for the three per-pair arrays; freed below. */
	const struct config_def **d = xcalloc(
		(size_t)(n ? n : 1), sizeof(*d) + sizeof(bool) + sizeof(struct config_value));
	struct config_value *vals = (struct config_value *)(d + (n ? n : 1));
	bool *alias = (bool *)(vals + (n ? n : 1));
	char why[512];
	int parsed = 0, ret = -1;

	/* First the names, in order: the first problem is the one reported. */
	for (int i = 0; i < n; i++) {
		const char *problem = NULL;
		long long prot =
			__atomic_load_n(&config.enable_protected_configs, __ATOMIC_RELAXED);

		d[i] = config_find(pairs[2 * i], lens[2 * i], &alias[i]);
		if (!d[i]) {
			snprintf(err, errlen,
				 "Unknown option or number of arguments for CONFIG SET - '%.*s'",
				 (int)lens[2 * i], pairs[2 * i]);
			goto out;
		}
		if (d[i]->flags & CFG_IMMUTABLE)
			problem = "can't set immutable config";
		else if ((d[i]->flags & CFG_PROTECTED) && prot != PROTECTED_ACTION_YES &&
			 !(prot == PROTECTED_ACTION_LOCAL && local))
			problem = "can't set protected config";
		for (int j = 0; !problem && j < i; j++)
			if (d[j] == d[i] && alias[j] == alias[i])
				problem = "duplicate parameter";
		if (problem) {
			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%.*s') - %s",
				 (int)lens[2 * i], pairs[2 * i], problem);
			goto out;
		}
	}
	/* Then every value, so the change is all or nothing. */
	for (; parsed < n; parsed++) {
		int i = parsed;
		char *buf = xmalloc(lens[2 * i + 1] + 1);
		struct config_args a = { .n = 1 };
		int r;

		memcpy(buf, pairs[2 * i + 1], lens[2 * i + 1]);
		buf[lens[2 * i + 1]] = '\0';
		if (d[i]->flags & CFG_MULTI) {
			split_spaces(buf, lens[2 * i + 1], &a);
		} else {
			a.v[0] = buf;
			a.len[0] = lens[2 * i + 1];
		}
		if (a.n > 64) {
			r = -1;
			snprintf(why, sizeof(why), "wrong number of arguments");
		} else {
			r = config_parse_args(d[i], &a, &vals[i], why, sizeof(why));
		}
		xfree(buf);
		if (r < 0) {
			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%s') - %s",
				 alias[i] ? d[i]->alias : d[i]->name, why);
			goto out;
		}
	}
	for (int i = 0; i < n; i++) {
		if ((d[i]->flags & CFG_STARTUP) && !same_value(d[i], &vals[i])) {
			/* A taken port fails as Redis's re-listen fails. */
			bool taken = d[i]->field == &config.port && port_is_taken(vals[i].num);

			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%s') - %s",
				 alias[i] ? d[i]->alias : d[i]->name,
				 taken ? "Unable to listen on this port. Check server logs."
				       : "can't set immutable config");
			goto out;
		}
	}
	for (int i = 0; i < n; i++)
		config_store(d[i], &vals[i]);
	for (int i = 0; i < n; i++) {
		const char *apply_err = NULL;

		/* xkv's appliers do not fail: the values were checked above. */
		if (d[i]->apply && d[i]->apply(&apply_err) < 0)
			log_warning("CONFIG SET %s: %s", d[i]->name, apply_err);
	}
	ret = 0;
out:
	for (int i = 0; i < parsed; i++)
		config_value_free(&vals[i]);
	xfree(d);
	return ret;
}

void config_get(const char *pattern, size_t len, config_visit_fn *fn, void *ctx)
{
	struct text t = { 0 };

	if (!memchr(pattern, '*', len) && !memchr(pattern, '?', len) &&
	    !memchr(pattern, '[', len)) {
		const struct config_def *d;
		bool alias;
		char *name;

		/* Exactly named (hidden ones too), and answered by that name. */
		d = config_find(pattern, len, &alias);
		if (!d)
			return;
		name = xstrndup(pattern, len);
		config_format(&t, d);
		fn(ctx, name, t.p);
		xfree(name);
		xfree(t.p);
		return;
	}
	for (size_t i = 0; i < NDEFS; i++) {
		const struct config_def *d = &config_defs[i];
		bool by_name, by_alias;

		if (d->flags & CFG_HIDDEN)
			continue;
		by_name = glob_match(pattern, len, d->name, strlen(d->name), true);
		by_alias = d->alias && glob_match(pattern, len, d->alias, strlen(d->alias), true);
		if (!by_name && !by_alias)
			continue;
		t.len = 0;
		config_format(&t, d);
		if (by_name)
			fn(ctx, d->name, t.p);
		if (by_alias)
			fn(ctx, d->alias, t.p);
	}
	xfree(t.p);
}

void config_free(void)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct config_def *d = &config_defs[i];

		if (d->type == CFG_STRING ||
		    (d->type == CFG_SPECIAL && d->special != SPECIAL_OBUF &&
		     d->special != SPECIAL_NOTIFY)) {
			xfree(*(char **)d->field);
			*(char **)d->field = NULL;
		}
	}
	for (size_t i = 0; i < nretired; i++)
		xfree(retired[i]);
	xfree(retired);
	retired = NULL;
	nretired = 0;
	free(config.config_file);
	config.config_file = NULL;
}
