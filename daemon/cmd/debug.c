// SPDX-License-Identifier: BSD-3-Clause
/*
 * DEBUG: the subcommands of Redis's DEBUG that test suites use and that
 * mean something here, with Redis's replies and errors. The rest (crash
 * simulations, allocator and hash-table introspection...)
 * answer Redis's "unknown subcommand" error, as a server without them would.
 *
 * Whether DEBUG runs at all is enable-debug-command's decision, made by the
 * dispatcher before a handler here is reached (debug_allowed()).
 *
 * Locking: the row locks nothing (CMD_NO_KEYS_LOCK): DEBUG has no key specs, so the
 * subcommands that read keys lock their shards here, one key at a time.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "../aof.h"
#include "../commands.h"
#include "../config.h"
#include "../debug.h"
#include "../dict.h"
#include "../log.h"
#include "../mem.h"
#include "../rdb.h"
#include "../rdbfile.h"
#include "../repl.h"
#include "../script.h"
#include "../store.h"
#include "../t_hash.h"
#include "../t_list.h"
#include "../t_set.h"
#include "../t_zset.h"
#include "../util.h"

bool debug_allowed(const struct client *c)
{
	return protected_allowed(__atomic_load_n(&config.enable_debug_command, __ATOMIC_RELAXED),
				 c);
}

bool protected_allowed(long long action, const struct client *c)
{
	switch (action) {
	case PROTECTED_ACTION_YES:
		return true;
	case PROTECTED_ACTION_LOCAL:
		/* As Redis's connIsLocal: loopback addresses and the Unix socket. */
		return (c->flags & CLIENT_UNIX_SOCKET) || !strncmp(c->addr, "127.", 4) ||
		       !strncmp(c->addr, "::1:", 4);
	default:
		return false;
	}
}

/* Redis's addReplySubcommandSyntaxError. */
static void reply_bad_subcommand(struct client *c)
{
	reply_errorf(
		c, "unknown subcommand or wrong number of arguments for '%.128s'. Try DEBUG HELP.",
		c->argv[1].p);
}

static void reply_hex(struct client *c, const uint8_t d[SHA1_LEN])
{
	char hex[2 * SHA1_LEN + 1];

	for (int i = 0; i < SHA1_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	reply_status(c, hex);
}

/* Locks the shard of key argv[i]; the caller releases ls. */
static struct entry *peek_locked(struct client *c, int i, struct lockset *ls)
{
	lockset_init(ls);
	lockset_add_key(ls, c->db, c->argv[i].p, c->argv[i].len);
	lockset_acquire(ls);
	return db_peek(c->db, c->argv[i].p, c->argv[i].len);
}

/* ---- subcommands --------------------------------------------------------------------------- */

static void debug_help(struct client *c)
{
	static const char *const help[] = {
		"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANGE-REPL-ID",
		"    Change the replication IDs of the instance.",
		"    Dangerous: should be used only for testing the replication subsystem.",
		"DIGEST",
		"    Output a hex signature representing the current DB content.",
		"DIGEST-VALUE <key> [<key> ...]",
		"    Output a hex signature of the values of all the specified keys.",
		"ERROR <string>",
		"    Return a Redis protocol error with <string> as message. Useful for clients",
		"    unit tests to simulate Redis errors.",
		"LOADAOF",
		"    Flush the AOF buffers on disk and reload the AOF in memory.",
		"LOG <message>",
		"    Write <message> to the server log.",
		"OBJECT <key>",
		"    Show low level info about `key` and associated value.",
		"POPULATE <count> [<prefix>] [<size>]",
		"    Create <count> string keys named key:<num>. If <prefix> is specified then",
		"    it is used instead of the 'key' prefix. These are not propagated to",
		"    replicas. Cluster slots are not respected so keys not belonging to the",
		"    current node can be created in cluster mode.",
		"PROTOCOL <type>",
		"    Reply with a test value of the specified type. <type> can be: string,",
		"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
		"    true, false.",
		"RELOAD [option ...]",
		"    Save the RDB on disk and reload it back to memory. Valid <option> values:",
		"    * MERGE: conflicting keys will be loaded from RDB.",
		"    * NOFLUSH: the existing database will not be removed before load, but",
		"      conflicting keys will generate an exception and kill the server.",
		"    * NOSAVE: the database will be loaded from an existing RDB file.",
		"    Examples:",
		"    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
		"      the database.",
		"    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
		"      existing RDB file.",
		"    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
		"      file to the database.",
		"SET-ACTIVE-EXPIRE <0|1>",
		"    Setting it to 0 disables expiring keys (and hash-fields) in background ",
		"    when they are not accessed (otherwise the Redis behavior). Setting it",
		"    to 1 reenables back the default.",
		"SET-ALLOW-ACCESS-EXPIRED <0|1>",
		"    Setting it to 0 prevents access to expired keys (and hash-fields),",
		"    simulating the standard Redis behavior. Setting it to 1 allows",
		"    access to expired keys (and hash-fields) without triggering deletion.",
		"QUICKLIST-PACKED-THRESHOLD <size>",
		"    Sets the threshold for elements to be inserted as plain vs packed nodes",
		"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to "
		"default.",
		"SLEEP <seconds>",
		"    Stop the server for <seconds>. Decimals allowed.",
		"STRINGMATCH-TEST",
		"    Run a fuzz tester against the stringmatchlen() function.",
		"LISTPACK <key>",
		"    Show low level info about the listpack encoding of <key>.",
		"REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
		"    Sets the time (in milliseconds) to wait between client reply buffer peak "
		"resets.",
		"    In case NEVER is provided the last observed peak will never be reset",
		"    In case RESET is provided the peak reset time will be restored to the default "
		"value",
		"REPLYBUFFER RESIZING <0|1>",
		"    Enable or disable the reply buffer resize cron job",
#ifdef HAVE_JEMALLOC
		"MALLCTL <key> [<val>]",
		"    Get or set a malloc tuning integer.",
		"MALLCTL-STR <key> [<val>]",
		"    Get or set a malloc tuning string.",
#endif
		"PAUSE-CRON <0|1>",
		"    Stop periodic cron job processing.",
		"DICT-RESIZING <0|1>",
		"    Enable or disable the main dict and expire dict resizing.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}

static void debug_sleep(struct client *c)
{
	/* As Redis: strtod, so anything unparsable sleeps 0 seconds. */
	double secs = strtod(c->argv[2].p, NULL);
	struct timespec ts;

	if (!(secs > 0))
		secs = 0;
	/* Sleeps this worker only, as Redis's single thread would. */
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - floor(secs)) * 1e9);
	nanosleep(&ts, NULL);
	reply_ok(c);
}

/* Redis's RDB length prefix: 1, 2, 5 or 9 bytes. */
static size_t rdb_len_size(size_t n)
{
	return n < 64 ? 1 : n < 16384 ? 2 : n <= UINT32_MAX ? 5 : 9;
}

/* A string as Redis's rdbSaveRawString writes it, uncompressed: an integer
 * that fits 32 bits in 2 to 5 bytes, else its length and bytes. */
static size_t rdb_string_size(const char *p, size_t len)
{
	long long v;

	if (len <= 11 && str_to_ll(p, len, &v))
		return v >= -128 && v <= 127		  ? 2
		       : v >= -32768 && v <= 32767	  ? 3
		       : v >= INT32_MIN && v <= INT32_MAX ? 5
							  : rdb_len_size(len) + len;
	return rdb_len_size(len) + len;
}

/* What Redis's serializedlength would be for o without compression and with
 * every collection written element by element (there is no RDB writer yet:
 * this is the size such a writer would produce for the plain encodings). */
static size_t serialized_length(const struct obj *o)
{
	char buf[LL_STR_SIZE + 1];
	size_t n = 0, len;
	const char *p;

	switch (o->type) {
	case OBJ_STRING:
		p = obj_str(o, buf, &len);
		return rdb_string_size(p, len);
	case OBJ_LIST: {
		struct list_iter it;
		struct list_elem el;

		list_iter_init(&it, o, 0, false);
		while (list_iter_next(&it, &el))
			n += rdb_string_size(el.p, el.len);
		return n + rdb_len_size(list_len(o));
	}
	case OBJ_SET: {
		struct set_iter it;

		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			n += rdb_string_size(p, len);
		return n + rdb_len_size(set_size(o));
	}
	case OBJ_ZSET: {
		struct zset_iter it;
		struct zset_elem el;

		zset_iter_init(&it, o, 0, false);
		while (zset_iter_next(&it, &el))
			n += rdb_string_size(el.m, el.len) + 8; /* binary double */
		return n + rdb_len_size(zset_len(o));
	}
	case OBJ_HASH: {
		struct hash_iter it;
		struct hash_field hf;

		hash_iter_init(&it, o);
		while (hash_iter_next(&it, &hf))
			n += rdb_string_size(hf.f, hf.flen) + rdb_string_size(hf.v, hf.vlen);
		return n + rdb_len_size(hash_len(o));
	}
	case OBJ_ARRAY: {
		struct rdb_buf b = { 0 };

		/* Its RDB form less the type byte, as Redis measures. */
		rdb_save_value(&b, o, false);
		n = b.len - 1;
		xfree(b.p);
		return n;
	}
	}
	return 0;
}

static void debug_object(struct client *c)
{
	struct lockset ls;
	struct entry *e = peek_locked(c, 2, &ls);
	char extra[160] = "", line[400];
	uint32_t idle;
	long long lru;

	if (!e) {
		lockset_release(&ls);
		reply_error(c, ERR_NO_KEY);
		return;
	}
	if (e->val.type == OBJ_LIST && e->val.enc == ENC_QUICKLIST) {
		size_t nodes = list_nodes(&e->val);

		snprintf(extra, sizeof(extra),
			 " ql_nodes:%zu ql_avg_node:%.2f ql_listpack_max:%lld ql_compressed:%d"
			 " ql_uncompressed_size:%zu",
			 nodes, (double)list_len(&e->val) / (double)nodes,
			 config.list_max_listpack_size,
			 /* Redis's "compress depth set" flag: nodes are never
			  * compressed here, so it is the configured depth (Redis
			  * keeps the one of the list's creation). */
			 config.list_compress_depth != 0, list_pack_bytes(&e->val));
	}
	idle = (store_clock() - e->atime) / STORE_CLOCK_HZ;
	/* lru: the access time on Redis's 24-bit seconds clock (INFO's lru_clock). */
	lru = (store_now() / 1000 - idle) & ((1 << 24) - 1);
	snprintf(line, sizeof(line),
		 /* Redis 8 shares no value between keys: refcount 1. */
		 "Value at:%p refcount:1 encoding:%s serializedlength:%zu lru:%lld "
		 "lru_seconds_idle:%u%s",
		 (void *)e, obj_encoding_name(&e->val), serialized_length(&e->val), lru, idle,
		 extra);
	lockset_release(&ls);
	reply_status(c, line);
}

static void debug_listpack(struct client *c)
{
	struct lockset ls;
	struct entry *e = peek_locked(c, 2, &ls);
	bool packed = e && e->val.enc == ENC_LISTPACK;

	if (packed)
		/* Redis prints the listpack's entries on its standard output;
		 * here the log gets the summary. */
		log_notice("DEBUG LISTPACK %.*s: %s of %zu bytes", (int)entry_klen(e), e->key,
			   obj_type_name(&e->val), obj_mem(&e->val));
	lockset_release(&ls);
	if (!e)
		reply_error(c, ERR_NO_KEY);
	else if (!packed)
		reply_error(c, "Not a listpack encoded object.");
	else
		reply_status(c, "Listpack structure printed on stdout");
}

static void debug_digest(struct client *c)
{
	uint8_t d[SHA1_LEN];

	debug_dataset_digest(d);
	reply_hex(c, d);
}

static void debug_digest_value(struct client *c)
{
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		uint8_t d[SHA1_LEN] = { 0 };
		struct lockset ls;
		/* As Redis: logically expired keys count (no lookup, no expiry). */
		struct entry *e = peek_locked(c, i, &ls);

		if (e)
			debug_value_digest(e, d);
		lockset_release(&ls);
		reply_hex(c, d);
	}
}

static void debug_protocol(struct client *c)
{
	static const char bignum[] = "1234567999999999999999999999999999999";
	const char *name = c->argv[2].p;

	if (!strcasecmp(name, "string")) {
		reply_bulk_cstr(c, "Hello World");
	} else if (!strcasecmp(name, "integer")) {
		reply_int(c, 12345);
	} else if (!strcasecmp(name, "double")) {
		reply_double(c, 3.141);
	} else if (!strcasecmp(name, "bignum")) {
		if (c->resp >= 3) {
			reply_raw(c, "(", 1);
			reply_raw(c, bignum, sizeof(bignum) - 1);
			reply_raw(c, "\r\n", 2);
		} else {
			reply_bulk(c, bignum, sizeof(bignum) - 1);
		}
	} else if (!strcasecmp(name, "null")) {
		reply_null(c);
	} else if (!strcasecmp(name, "array") || !strcasecmp(name, "set")) {
		if (name[0] == 'a' || name[0] == 'A')
			reply_array(c, 3);
		else
			reply_set(c, 3);
		for (int j = 0; j < 3; j++)
			reply_int(c, j);
	} else if (!strcasecmp(name, "map")) {
		reply_map(c, 3);
		for (int j = 0; j < 3; j++) {
			reply_int(c, j);
			reply_bool(c, j == 1);
		}
	} else if (!strcasecmp(name, "attrib")) {
		/* An attribute precedes a real reply; RESP2 has no attributes. */
		if (c->resp >= 3) {
			reply_raw(c, "|1\r\n", 4);
			reply_bulk_cstr(c, "key-popularity");
			reply_array(c, 2);
			reply_bulk_cstr(c, "key:123");
			reply_int(c, 90);
		}
		reply_bulk_cstr(c, "Some real reply following the attribute");
	} else if (!strcasecmp(name, "push")) {
		unsigned old = c->flags;

		if (c->resp < 3) {
			reply_error(c, "RESP2 is not supported by this command");
			return;
		}
		/* Redis 8 sends a command's pushes after its reply. */
		reply_bulk_cstr(c, "Some real reply following the push reply");
		c->flags |= CLIENT_PUSHING;
		reply_push(c, 2);
		reply_bulk_cstr(c, "server-cpu-usage");
		reply_int(c, 42);
		if (!(old & CLIENT_PUSHING))
			c->flags &= ~CLIENT_PUSHING;
	} else if (!strcasecmp(name, "true") || !strcasecmp(name, "false")) {
		reply_bool(c, !strcasecmp(name, "true"));
	} else if (!strcasecmp(name, "verbatim")) {
		reply_verbatim(c, "This is a verbatim\nstring", 25);
	} else {
		reply_error(c,
			    "Wrong protocol type name. Please use one of the following: "
			    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|"
			    "true|false");
	}
}

/* Redis's memtoull: digits with an optional b/k/kb/m/mb/g/gb suffix. */
static bool parse_bytes(const char *p, size_t len, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned long long mul;
	} units[] = {
		{ "kb", 1024ULL },
		{ "k", 1000ULL },
		{ "mb", 1024ULL * 1024 },
		{ "m", 1000ULL * 1000 },
		{ "gb", 1024ULL * 1024 * 1024 },
		{ "g", 1000ULL * 1000 * 1000 },
		{ "b", 1 },
	};
	unsigned long long mul = 1, v;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (len >= sl && !strncasecmp(p + len - sl, units[i].suffix, sl)) {
			mul = units[i].mul;
			len -= sl;
			break;
		}
	}
	if (!len || len > 19)
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	v = strtoull(p, NULL, 10);
	if (mul > 1 && v > ULLONG_MAX / mul)
		return false;
	*out = v * mul;
	return true;
}

static void debug_packed_threshold(struct client *c)
{
	unsigned long long sz;

	/* Redis's quicklistSetPackedThreshold: below 4 GiB less 1 MiB; 0 is
	 * the default (1 GiB). */
	if (!parse_bytes(c->argv[2].p, c->argv[2].len, &sz) || sz > (1ULL << 32) - (1ULL << 20)) {
		reply_error(c,
			    "argument must be a memory value bigger than 1 and smaller than 4gb");
		return;
	}
	__atomic_store_n(&list_packed_threshold, sz ? (size_t)sz : LIST_PACKED_THRESHOLD_DEFAULT,
			 __ATOMIC_RELAXED);
	reply_ok(c);
}

static void debug_populate(struct client *c)
{
	const char *prefix = c->argc > 3 ? c->argv[3].p : "key";
	long long count, size = 0;
	/* Redis's buffer: longer names are cut to 127 bytes. */
	char key[128], val[64];

	/* Redis's getPositiveLongFromObjectOrReply: one error for both. */
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &count) || count < 0) {
		reply_error(c, "value is out of range, must be positive");
		return;
	}
	if (c->argc == 5) {
		if (!str_to_ll(c->argv[4].p, c->argv[4].len, &size) || size < 0) {
			reply_error(c, "value is out of range, must be positive");
			return;
		}
	}
	for (long long j = 0; j < count; j++) {
		int klen = snprintf(key, sizeof(key), "%s:%lld", prefix, j);
		int vlen = snprintf(val, sizeof(val), "value:%lld", j);
		struct lockset ls;

		if (klen >= (int)sizeof(key))
			klen = sizeof(key) - 1;
		lockset_init(&ls);
		lockset_add_key(&ls, c->db, key, (size_t)klen);
		lockset_acquire(&ls);
		/* Existing keys are left alone, as in Redis. */
		if (!db_find(c->db, key, (size_t)klen)) {
			if (size) {
				/* The value, zero-padded or cut to size bytes. */
				char *p = xcalloc(1, (size_t)size);

				memcpy(p, val, (size_t)(size < vlen ? size : vlen));
				db_add(c->db, key, (size_t)klen, obj_string_owned(p, (size_t)size));
			} else {
				db_add(c->db, key, (size_t)klen, obj_string(val, (size_t)vlen));
			}
		}
		lockset_release(&ls);
	}
	reply_ok(c);
}

static void debug_error(struct client *c)
{
	char *msg = xmalloc(c->argv[2].len + 4);

	msg[0] = '-';
	memcpy(msg + 1, c->argv[2].p, c->argv[2].len);
	/* No newlines in errors. */
	for (size_t i = 1; i <= c->argv[2].len; i++)
		if (msg[i] == '\r' || msg[i] == '\n')
			msg[i] = ' ';
	memcpy(msg + 1 + c->argv[2].len, "\r\n", 2);
	reply_raw(c, msg, c->argv[2].len + 3);
	xfree(msg);
}

/* DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the
 * store and the libraries, load the file back, all under every shard lock,
 * so no other client sees the store half-way. xkvd's loading replaces a key it finds already
 * there, so NOFLUSH without MERGE merges too (Redis would stop on the
 * duplicate). */
static void debug_reload(struct client *c)
{
	bool merge = false, flush = true, save = true;
	int rc;

	for (int i = 2; i < c->argc; i++) {
		if (arg_is(c, i, "MERGE"))
			merge = true;
		else if (arg_is(c, i, "NOFLUSH"))
			flush = false;
		else if (arg_is(c, i, "NOSAVE"))
			save = false;
		else {
			reply_error(c, "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE "
				       "options.");
			return;
		}
	}
	store_lock_all();
	if (save && do_rdbfile_save() < 0) {
		store_unlock_all();
		reply_error(c, "-ERR");
		return;
	}
	if (flush) {
		for (int db = 0; db < store.ndbs; db++)
			db_flush(db);
		function_flush_all();
	}
	/* MERGE: a library of the file replaces one of the same name. */
	rdbfile_functions_merge(merge);
	rc = do_rdbfile_load_file(config.dbfilename);
	rdbfile_functions_merge(false);
	if (!rc)
		rdbfile_loaded();
	store_unlock_all();
	if (rc) {
		reply_error(c, "Error trying to load the RDB dump, check server logs.");
		return;
	}
	log_notice("DB reloaded by DEBUG RELOAD");
	reply_ok(c);
}

/* DEBUG LOADAOF: the AOF's pending records out, the store emptied, and the
 * files of the manifest loaded, under every shard lock. */
static void debug_loadaof(struct client *c)
{
	int rc;

	store_lock_all();
	rc = do_aof_reload();
	store_unlock_all();
	if (rc < 0) {
		reply_error(c, "Error trying to load the AOF files, check server logs.");
		return;
	}
	log_notice("Append Only File loaded by DEBUG LOADAOF");
	reply_ok(c);
}

/* Redis's stringmatchlen_fuzz_test: random patterns against random strings,
 * to show the matcher neither crashes nor overruns. */
static void debug_stringmatch_test(struct client *c)
{
	uint64_t r = (uint64_t)now_us() | 1;
	char pat[32], str[32];

	for (int i = 0; i < 1000000; i++) {
		size_t plen, slen;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		plen = r % sizeof(pat);
		slen = (r >> 8) % sizeof(str);
		for (size_t j = 0; j < plen; j++)
			pat[j] = "*?[]^\\-ab"[(r >> (j % 56)) % 9];
		for (size_t j = 0; j < slen; j++)
			str[j] = "ab*?[]"[(r >> ((j + 3) % 56)) % 6];
		glob_match(pat, plen, str, slen, r & 1);
	}
	reply_status(c, "Apparently Redis did not crash: test passed");
}

/* DEBUG REPLYBUFFER PEAK-RESET-TIME <never|reset|ms> | RESIZING <0|1>. */
static void debug_replybuffer(struct client *c)
{
	const char *what = c->argv[2].p, *v = c->argv[3].p;
	long long ms;

	if (!strcasecmp(what, "peak-reset-time")) {
		if (!strcasecmp(v, "never"))
			ms = -1;
		else if (!strcasecmp(v, "reset"))
			ms = REPLY_BUFFER_PEAK_RESET_MS;
		else if (!str_to_ll(v, c->argv[3].len, &ms)) {
			reply_error(c, ERR_NOT_INT);
			return;
		}
		__atomic_store_n(&reply_buffer_peak_reset_ms, ms, __ATOMIC_RELAXED);
	} else if (!strcasecmp(what, "resizing")) {
		__atomic_store_n(&reply_buffer_resizing, atoi(v), __ATOMIC_RELAXED);
	} else {
		reply_bad_subcommand(c);
		return;
	}
	reply_ok(c);
}

#ifdef HAVE_JEMALLOC
/* DEBUG MALLCTL <key> [<val>]: reads (and sets) a numeric jemalloc option.
 * The option's width is not known: try 8 bytes, then 4, 2, 1, as Redis
 * does, and write-only options are written without reading. */
static void debug_mallctl_int(struct client *c)
{
	const char *key = c->argv[2].p;
	bool set = c->argc > 3;
	long long v = 0;
	int err = EINVAL;

	if (set && !str_to_ll(c->argv[3].p, c->argv[3].len, &v)) {
		reply_error(c, ERR_NOT_INT);
		return;
	}
	for (size_t sz = sizeof(int64_t); sz > 0; sz /= 2) {
		/* Little-endian: the low bytes of old and val are the narrow value. */
		int64_t old = 0, val = v;
		size_t oldsz = sz;

		err = mallctl(key, &old, &oldsz, set ? &val : NULL, set ? sz : 0);
		if (!err) {
			reply_int(c, sz == 8   ? old
				     : sz == 4 ? (int32_t)old
				     : sz == 2 ? (int16_t)old
					       : (int8_t)old);
			return;
		}
		if (err == EPERM && set && !mallctl(key, NULL, NULL, &val, sz)) {
			reply_ok(c);
			return;
		}
		if (err != EINVAL)
			break;
	}
	reply_errorf(c, "%s", strerror(err));
}

/* DEBUG MALLCTL-STR <key> [<val>|VOID]: the same for a string option. */
static void debug_mallctl_str(struct client *c)
{
	const char *key = c->argv[2].p, *old = NULL;
	size_t sz = sizeof(old);
	int rerr = mallctl(key, &old, &sz, NULL, 0), werr = 0;

	if (rerr && !(rerr == EPERM && c->argc > 3)) {
		reply_errorf(c, "%s", strerror(rerr));
		return;
	}
	if (c->argc > 3) {
		const char *val = c->argv[3].p;
		bool none = !strcmp(val, "VOID");

		werr = mallctl(key, NULL, NULL, none ? NULL : (void *)&val, none ? 0 : sizeof(val));
	}
	if (!rerr)
		reply_bulk_cstr(c, old ? old : "");
	else if (werr)
		reply_errorf(c, "%s", strerror(werr));
	else
		reply_ok(c);
}
#endif

void cmd_debug(struct client *c)
{
	const char *sub = c->argv[1].p;
	int argc = c->argc;

	if (argc == 2 && !strcasecmp(sub, "help")) {
		debug_help(c);
	} else if (argc == 3 && !strcasecmp(sub, "sleep")) {
		debug_sleep(c);
	} else if (argc == 3 && !strcasecmp(sub, "set-active-expire")) {
		__atomic_store_n(&debug_active_expire, atoi(c->argv[2].p), __ATOMIC_RELAXED);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "set-allow-access-expired")) {
		__atomic_store_n(&store_allow_access_expired, atoi(c->argv[2].p), __ATOMIC_RELAXED);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "set-disable-deny-scripts")) {
		__atomic_store_n(&debug_disable_deny_scripts, atoi(c->argv[2].p), __ATOMIC_RELAXED);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "pause-cron")) {
		__atomic_store_n(&debug_pause_cron, atoi(c->argv[2].p), __ATOMIC_RELAXED);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "dict-resizing")) {
		dict_set_resizing(atoi(c->argv[2].p) != 0);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "object")) {
		debug_object(c);
	} else if (argc == 3 && !strcasecmp(sub, "listpack")) {
		debug_listpack(c);
	} else if (!strcasecmp(sub, "reload")) {
		debug_reload(c);
	} else if (argc == 2 && !strcasecmp(sub, "loadaof")) {
		debug_loadaof(c);
	} else if (argc == 2 && !strcasecmp(sub, "digest")) {
		debug_digest(c);
	} else if (!strcasecmp(sub, "digest-value")) {
		debug_digest_value(c);
	} else if (argc == 3 && !strcasecmp(sub, "protocol")) {
		debug_protocol(c);
	} else if (argc == 3 && !strcasecmp(sub, "quicklist-packed-threshold")) {
		debug_packed_threshold(c);
	} else if (argc >= 3 && argc <= 5 && !strcasecmp(sub, "populate")) {
		debug_populate(c);
	} else if (argc == 2 && !strcasecmp(sub, "change-repl-id")) {
		log_notice("Changing replication IDs after receiving DEBUG change-repl-id");
		repl_change_id();
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "log")) {
		log_warning("DEBUG LOG: %s", c->argv[2].p);
		reply_ok(c);
	} else if (argc == 3 && !strcasecmp(sub, "error")) {
		debug_error(c);
	} else if (argc == 2 && !strcasecmp(sub, "stringmatch-test")) {
		debug_stringmatch_test(c);
	} else if (argc == 4 && !strcasecmp(sub, "replybuffer")) {
		debug_replybuffer(c);
#ifdef HAVE_JEMALLOC
	} else if (argc >= 3 && !strcasecmp(sub, "mallctl")) {
		debug_mallctl_int(c);
	} else if (argc >= 3 && !strcasecmp(sub, "mallctl-str")) {
		debug_mallctl_str(c);
#endif
	} else {
		reply_bad_subcommand(c);
	}
}
