// SPDX-License-Identifier: BSD-3-Clause
/*
 * The string family: GET, SET and their variants, counters, ranges, LCS, and
 * Redis 8.4's compare-and-set family (SET's IFEQ/IFNE/IFDEQ/IFDNE, DELEX,
 * DIGEST, MSETEX).
 *
 * Replies, error strings and the order in which arguments are checked follow
 * Redis 7.0, because clients and tests observe which error wins when several
 * apply. 7.0 lacks the 8.4 commands: they follow the Redis 8.4 documentation,
 * and where it is silent (error wording, the order of checks) the comments
 * say what was chosen. Handlers run with their keys' shard locks held (see
 * commands.h; MSETEX locks its own), so an entry found here stays valid until
 * the handler returns, unless the handler itself deletes or replaces it.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <xxhash.h>

#include "commands.h"
#include "config.h"
#include "fastpath.h"
#include "mem.h"
#include "notify.h"
#include "object.h"
#include "propagate.h"
#include "util.h"

/* Options of SET and GETEX, parsed by parse_set_options(). */
enum set_flag {
	SET_NX = 1u << 0,
	SET_XX = 1u << 1,
	SET_GET = 1u << 2,
	SET_KEEPTTL = 1u << 3,
	SET_PERSIST = 1u << 4,
	SET_EX = 1u << 5,
	SET_PX = 1u << 6,
	SET_EXAT = 1u << 7,
	SET_PXAT = 1u << 8,
	/* Redis 8.4: compare the current value (or its digest) first. */
	SET_IFEQ = 1u << 9,
	SET_IFNE = 1u << 10,
	SET_IFDEQ = 1u << 11,
	SET_IFDNE = 1u << 12,
};

#define SET_EXPIRE (SET_EX | SET_PX | SET_EXAT | SET_PXAT)
/* An expire option excludes the other three (repeating itself is allowed,
 * the last value wins, as in Redis), KEEPTTL and PERSIST. */
#define SET_EXPIRE_EXCLUDES(self) ((SET_EXPIRE & ~(self)) | SET_KEEPTTL | SET_PERSIST)
/* The conditions are one choice, as the 8.4 docs put it: NX, XX or an IF*. */
#define SET_COND (SET_NX | SET_XX | SET_IFEQ | SET_IFNE | SET_IFDEQ | SET_IFDNE)
#define SET_COMPARE (SET_IFEQ | SET_IFNE | SET_IFDEQ | SET_IFDNE)
/* Options that take a value argument. */
#define SET_WITH_ARG (SET_EXPIRE | SET_COMPARE)

enum set_cmd {
	FOR_SET = 1u << 0,
	FOR_GETEX = 1u << 1,
	FOR_MSETEX = 1u << 2,
};

static const struct set_option {
	const char *word;
	unsigned flag;
	unsigned excludes; /* flags that make this option a syntax error */
	unsigned cmds;	   /* which commands accept it */
} set_options[] = {
	{ "nx", SET_NX, SET_COND & ~SET_NX, FOR_SET | FOR_MSETEX },
	{ "xx", SET_XX, SET_COND & ~SET_XX, FOR_SET | FOR_MSETEX },
	{ "ifeq", SET_IFEQ, SET_COND, FOR_SET },
	{ "ifne", SET_IFNE, SET_COND, FOR_SET },
	{ "ifdeq", SET_IFDEQ, SET_COND, FOR_SET },
	{ "ifdne", SET_IFDNE, SET_COND, FOR_SET },
	{ "get", SET_GET, 0, FOR_SET },
	{ "keepttl", SET_KEEPTTL, SET_EXPIRE | SET_PERSIST, FOR_SET | FOR_MSETEX },
	{ "persist", SET_PERSIST, SET_EXPIRE | SET_KEEPTTL, FOR_GETEX },
	{ "ex", SET_EX, SET_EXPIRE_EXCLUDES(SET_EX), FOR_SET | FOR_GETEX | FOR_MSETEX },
	{ "px", SET_PX, SET_EXPIRE_EXCLUDES(SET_PX), FOR_SET | FOR_GETEX | FOR_MSETEX },
	{ "exat", SET_EXAT, SET_EXPIRE_EXCLUDES(SET_EXAT), FOR_SET | FOR_GETEX | FOR_MSETEX },
	{ "pxat", SET_PXAT, SET_EXPIRE_EXCLUDES(SET_PXAT), FOR_SET | FOR_GETEX | FOR_MSETEX },
};

/*
 * Parses argv[from..] as options of cmd. Sets *flags and, when an expire
 * option is given, *expire_arg to the index of its value (0 otherwise); the
 * same for a comparison (IFEQ etc.) and *cmp_arg. Every option is checked
 * before any value, so a syntax error anywhere wins over an invalid expire
 * time, as in Redis.
 */
static bool parse_set_options(struct client *c, int from, unsigned cmd, unsigned *flags,
			      int *expire_arg, int *cmp_arg)
{
	*flags = 0;
	*expire_arg = 0;
	*cmp_arg = 0;
	for (int i = from; i < c->argc; i++) {
		const struct set_option *opt = NULL;

		for (size_t k = 0; k < sizeof(set_options) / sizeof(set_options[0]); k++) {
			if (arg_is(c, i, set_options[k].word)) {
				opt = &set_options[k];
				break;
			}
		}
		if (!opt || !(opt->cmds & cmd) || (*flags & opt->excludes))
			goto syntax;
		if (opt->flag & SET_WITH_ARG) {
			if (i + 1 >= c->argc)
				goto syntax;
			*(opt->flag & SET_EXPIRE ? expire_arg : cmp_arg) = ++i;
		}
		*flags |= opt->flag;
	}
	return true;

syntax:
	reply_error(c, ERR_SYNTAX);
	return false;
}

/*
 * Turns the expire argument argv[i] into an absolute deadline in ms; flags
 * holds the option (EX, PX, EXAT or PXAT) that says how to read it.
 * Non-positive times and deadlines that overflow are errors naming cmd.
 */
static bool expire_deadline(struct client *c, int i, unsigned flags, const char *cmd, int64_t *when)
{
	bool seconds = flags & (SET_EX | SET_EXAT);
	long long v;

	if (!arg_ll(c, i, &v))
		return false;
	if (v <= 0 || (seconds && v > LLONG_MAX / 1000))
		goto invalid;
	if (seconds)
		v *= 1000;
	if (flags & (SET_EX | SET_PX)) {
		int64_t now = store_now();

		if (v > LLONG_MAX - now)
			goto invalid;
		v += now;
	}
	*when = v;
	return true;

invalid:
	reply_errorf(c, "invalid expire time in '%s' command", cmd);
	return false;
}

/* Replies with a string value's bytes. */
static void reply_string(struct client *c, const struct obj *o)
{
	char tmp[LL_STR_SIZE + 1];
	size_t len;
	const char *p = obj_str(o, tmp, &len);

	reply_bulk(c, p, len);
}

/*
 * GET's lookup and reply for key argv[1]: the value or a null. Returns the
 * entry (NULL if missing) through *out; false if it holds another type (the
 * WRONGTYPE error is then the reply).
 */
static bool get_generic(struct client *c, struct entry **out)
{
	struct entry *e = key_find_read(c, 1);

	*out = e;
	if (!e) {
		reply_null(c);
		return true;
	}
	if (!entry_is(c, e, OBJ_STRING))
		return false;
	reply_string(c, &e->val);
	return true;
}

/* Does the string total (offset + added bytes) stay within proto-max-bulk-len,
 * the largest string Redis lets a value grow to? */
static bool check_string_length(struct client *c, unsigned long long offset, size_t add)
{
	if (offset + add > (unsigned long long)config.proto_max_bulk_len) {
		reply_error(c, "string exceeds maximum allowed size (proto-max-bulk-len)");
		return false;
	}
	return true;
}

void cmd_get(struct client *c)
{
	struct entry *e;

	/* A GET the daemon serves may admit a hot small string to the kernel. */
	if (get_generic(c, &e) && e)
		fastpath_note_read(c->db, e);
}

enum set_reply {
	REPLY_OK_NULL,	/* SET: +OK when set, null when NX/XX stops it */
	REPLY_ONE_ZERO, /* SETNX: 1 or 0 */
};

/* DIGEST's form: XXH3 (64 bits, seed 0) as 16 lower-case hex digits. */
#define DIGEST_LEN 16

static uint64_t value_digest(const struct obj *o)
{
	char tmp[LL_STR_SIZE + 1];
	size_t len;
	const char *p = obj_str(o, tmp, &len);

	return XXH3_64bits(p, len);
}

/*
 * Reads a digest argument (IFDEQ, IFDNE). Redis 8.4 takes exactly 16 hex
 * digits in either case (redis#14502) and answers anything else with this
 * error; the check here runs before the key is looked up.
 */
static bool digest_arg(struct client *c, int i, uint64_t *digest, bool *hex)
{
	const struct arg *a = &c->argv[i];
	uint64_t v = 0;

	/* As Redis 8.8, only the length is checked: 16 other characters are a
	 * digest no value has. */
	if (a->len != DIGEST_LEN) {
		reply_error(c, "must be exactly 16 hexadecimal characters");
		return false;
	}
	*hex = true;
	for (size_t k = 0; k < DIGEST_LEN; k++) {
		unsigned ch = (unsigned char)a->p[k], d;

		if (ch >= '0' && ch <= '9') {
			d = ch - '0';
		} else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f') {
			d = (ch | 0x20) - 'a' + 10;
		} else {
			*hex = false;
			return true;
		}
		v = v << 4 | d;
	}
	*digest = v;
	return true;
}

/*
 * Redis 8.4's comparisons (SET IF*, DELEX): does the string value of e (NULL
 * if the key is missing) pass the test in flags against argv[cmp_arg], or
 * against digest for IFDEQ/IFDNE? A missing key equals nothing.
 */
static bool compare_passes(struct client *c, const struct entry *e, unsigned flags, int cmp_arg)
{
	bool equal = false, hex;
	uint64_t digest = 0;

	if (e && (flags & (SET_IFEQ | SET_IFNE))) {
		const struct arg *want = &c->argv[cmp_arg];
		char tmp[LL_STR_SIZE + 1];
		size_t len;
		const char *p = obj_str(&e->val, tmp, &len);

		equal = len == want->len && memcmp(p, want->p, len) == 0;
	} else if (e) {
		/* The caller checked the digest argument (digest_arg). */
		digest_arg(c, cmp_arg, &digest, &hex);
		equal = hex && value_digest(&e->val) == digest;
	}
	return flags & (SET_IFEQ | SET_IFDEQ) ? equal : !equal;
}

/*
 * The common part of SET, SETNX, SETEX and PSETEX: sets argv[1] to
 * argv[val_arg] under flags, with the expire time argv[expire_arg] if that
 * is not 0, and the comparison value argv[cmp_arg] for IFEQ and the rest.
 * cmd names the command in expire errors.
 */
static void set_generic(struct client *c, unsigned flags, int val_arg, int expire_arg, int cmp_arg,
			const char *cmd, enum set_reply rtype)
{
	const struct arg *key = &c->argv[1], *val = &c->argv[val_arg];
	uint64_t digest;
	int64_t when = -1;
	struct entry *e;
	bool pass, hex;

	if (expire_arg && !expire_deadline(c, expire_arg, flags, cmd, &when))
		return;
	/* With GET the old value is the reply, whether or not the condition
	 * lets the write through. */
	if (flags & SET_GET) {
		if (!get_generic(c, &e))
			return;
	} else {
		e = key_find(c, 1);
		/* Redis 8.4: a comparison needs a string to compare with. */
		if (e && (flags & SET_COMPARE) && !entry_is(c, e, OBJ_STRING))
			return;
	}
	/* Redis 8.8 checks a digest only against a value it has (and, with
	 * GET, after the old value was answered: then the error is left out
	 * here, the condition simply failing, so one reply is sent). */
	if (e && (flags & (SET_IFDEQ | SET_IFDNE)) && !(flags & SET_GET) &&
	    !digest_arg(c, cmp_arg, &digest, &hex))
		return;
	if (flags & SET_NX)
		pass = !e;
	else if (flags & SET_XX)
		pass = e != NULL;
	else if (e && (flags & SET_GET) && (flags & (SET_IFDEQ | SET_IFDNE)) &&
		 c->argv[cmp_arg].len != DIGEST_LEN)
		pass = false;
	else if (flags & SET_COMPARE)
		pass = compare_passes(c, e, flags, cmp_arg);
	else
		pass = true;
	if (!pass) {
		if (!(flags & SET_GET)) {
			if (rtype == REPLY_ONE_ZERO)
				reply_int(c, 0);
			else
				reply_null(c);
		}
		return;
	}

	/* A deadline already past, as Redis 8.8: the old key goes (propagated
	 * as DEL, or UNLINK under lazyfree-lazy-server-del), no new one is
	 * made, and it counts as a key that expired. */
	if (when != -1 && when <= store_now()) {
		if (e) {
			db_delete(c->db, e);
			propagate_renamed(2, c->argv,
					  config.lazyfree_lazy_server_del ? "UNLINK" : "DEL", -1);
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
		}
		db_count_expired(c->db, key->p, key->len);
		if (!(flags & SET_GET)) {
			if (rtype == REPLY_ONE_ZERO)
				reply_int(c, 1);
			else
				reply_ok(c);
		}
		return;
	}
	/* e is the key's entry or NULL: found above, under the same lock. */
	e = db_set_string(c->db, e, key->p, key->len, val->p, val->len, flags & SET_KEEPTTL,
			  when != -1);
	notify_arg(c, NOTIFY_STRING, "set", 1);
	if (when != -1) {
		e = db_set_expire(c->db, e, when);
		notify_arg(c, NOTIFY_GENERIC, "expire", 1);
		/* Propagated with its absolute deadline, as Redis: PXAT as given;
		 * SET key value EX|PX|EXAT t with the option and time replaced;
		 * anything else as SET key value PXAT ms. */
		if (propagate_enabled() && !(flags & SET_PXAT)) {
			char buf[LL_STR_SIZE + 1];
			struct arg set[5] = { PROP_STR("SET"), *key, *val, PROP_STR("PXAT"),
					      prop_ll(buf, when) };

			if (c->argc == 5 && !strcmp(cmd, "set"))
				set[0] = c->argv[0];
			propagate_rewrite(5, set);
		}
	} else if ((flags & SET_GET) && propagate_enabled()) {
		/* Without its GET arguments. */
		struct arg *v = xmalloc(sizeof(*v) * (size_t)c->argc);
		int n = 0;

		for (int i = 0; i < c->argc; i++)
			if (i < 3 || !arg_is(c, i, "get"))
				v[n++] = c->argv[i];
		propagate_rewrite(n, v);
		xfree(v);
	}
	if (flags & SET_GET)
		return;
	if (rtype == REPLY_ONE_ZERO)
		reply_int(c, 1);
	else
		reply_ok(c);
}

void cmd_set(struct client *c)
{
	unsigned flags;
	int expire_arg, cmp_arg;

	if (!parse_set_options(c, 3, FOR_SET, &flags, &expire_arg, &cmp_arg))
		return;
	set_generic(c, flags, 2, expire_arg, cmp_arg, "set", REPLY_OK_NULL);
}

void cmd_setnx(struct client *c)
{
	set_generic(c, SET_NX, 2, 0, 0, "setnx", REPLY_ONE_ZERO);
}

void cmd_setex(struct client *c)
{
	set_generic(c, SET_EX, 3, 2, 0, "setex", REPLY_OK_NULL);
}

void cmd_psetex(struct client *c)
{
	set_generic(c, SET_PX, 3, 2, 0, "psetex", REPLY_OK_NULL);
}

void cmd_getset(struct client *c)
{
	const struct arg *key = &c->argv[1], *val = &c->argv[2];
	struct entry *e;

	if (!get_generic(c, &e))
		return;
	db_set(c->db, key->p, key->len, obj_string(val->p, val->len), false);
	notify_arg(c, NOTIFY_STRING, "set", 1);
}

void cmd_getdel(struct client *c)
{
	struct entry *e;

	if (!get_generic(c, &e) || !e)
		return;
	db_delete(c->db, e);
	/* Redis propagates it as DEL key. */
	propagate_renamed(2, c->argv, "DEL", -1);
	notify_arg(c, NOTIFY_GENERIC, "del", 1);
}

void cmd_getex(struct client *c)
{
	struct entry *e;
	int64_t when = -1;
	unsigned flags;
	int expire_arg, cmp_arg;

	if (!parse_set_options(c, 2, FOR_GETEX, &flags, &expire_arg, &cmp_arg))
		return;
	/* Redis looks the key up before it reads the expire time: a missing
	 * key answers null even when the time is invalid. */
	e = key_find_read(c, 1);
	if (!e) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_STRING))
		return;
	if (expire_arg && !expire_deadline(c, expire_arg, flags, "getex", &when))
		return;
	reply_string(c, &e->val);

	if ((flags & (SET_EXAT | SET_PXAT)) && when <= store_now()) {
		/* Propagated as the deletion it is, as Redis 8.8 (UNLINK under
		 * lazyfree-lazy-expire). */
		struct arg del[2] = { PROP_STR("DEL"), c->argv[1] };

		if (config.lazyfree_lazy_expire)
			del[0] = PROP_STR("UNLINK");
		db_delete(c->db, e);
		propagate_rewrite(2, del);
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
	} else if (expire_arg) {
		char buf[LL_STR_SIZE + 1];
		struct arg at[3] = { PROP_STR("PEXPIREAT"), c->argv[1], prop_ll(buf, when) };

		e = db_set_expire(c->db, e, when);
		propagate_rewrite(3, at);
		notify_arg(c, NOTIFY_GENERIC, "expire", 1);
	} else if ((flags & SET_PERSIST) && entry_expire(e) != -1) {
		struct arg persist[2] = { PROP_STR("PERSIST"), c->argv[1] };

		e = db_set_expire(c->db, e, -1);
		propagate_rewrite(2, persist);
		notify_arg(c, NOTIFY_GENERIC, "persist", 1);
	}
}

void cmd_mget(struct client *c)
{
	reply_array(c, c->argc - 1);
	for (int i = 1; i < c->argc; i++) {
		struct entry *e = key_find_read(c, i);

		/* MGET answers null for other types rather than failing. */
		if (e && e->val.type == OBJ_STRING)
			reply_string(c, &e->val);
		else
			reply_null(c);
	}
}

/* MSET and MSETNX take key-value pairs: the arity alone cannot say so. */
static bool check_pairs(struct client *c, const char *cmd)
{
	if (c->argc % 2 == 0) {
		reply_errorf(c, "wrong number of arguments for '%s' command", cmd);
		return false;
	}
	return true;
}

static void mset_all(struct client *c)
{
	for (int i = 1; i < c->argc; i += 2) {
		const struct arg *key = &c->argv[i], *val = &c->argv[i + 1];

		db_set(c->db, key->p, key->len, obj_string(val->p, val->len), false);
		notify_arg(c, NOTIFY_STRING, "set", i);
	}
}

void cmd_mset(struct client *c)
{
	if (!check_pairs(c, "mset"))
		return;
	mset_all(c);
	reply_ok(c);
}

void cmd_msetnx(struct client *c)
{
	if (!check_pairs(c, "msetnx"))
		return;
	for (int i = 1; i < c->argc; i += 2) {
		if (key_find(c, i)) {
			reply_int(c, 0);
			return;
		}
	}
	mset_all(c);
	reply_int(c, 1);
}

/*
 * MSETEX numkeys key value [key value ...] [NX | XX] [EX s | PX ms | EXAT s |
 * PXAT ms | KEEPTTL], Redis 8.4: MSET with MSETNX's all-or-nothing condition
 * (or its opposite, XX) and one expiry for every key. The keys come from
 * numkeys: the row cannot name them, its key specs find them.
 * The 8.4 docs give no error wording; the numkeys errors are xkv's.
 */
void cmd_msetex(struct client *c)
{
	int expire_arg, cmp_arg, end;
	int64_t when = -1;
	long long numkeys;
	unsigned flags;
	bool pass = true;

	if (!str_to_ll(c->argv[1].p, c->argv[1].len, &numkeys) || numkeys < 1 ||
	    numkeys > INT_MAX) {
		reply_error(c, "invalid numkeys value");
		return;
	}
	if (numkeys > (c->argc - 2) / 2) {
		reply_error(c, "wrong number of key-value pairs");
		return;
	}
	end = 2 + 2 * (int)numkeys;
	if (!parse_set_options(c, end, FOR_MSETEX, &flags, &expire_arg, &cmp_arg))
		return;
	if (expire_arg && !expire_deadline(c, expire_arg, flags, "msetex", &when))
		return;

	if (flags & (SET_NX | SET_XX)) {
		for (int i = 2; i < end && pass; i += 2) {
			bool exists = key_find(c, i) != NULL;

			pass = flags & SET_NX ? !exists : exists;
		}
	}
	/* A later duplicate key wins, as in MSET. */
	for (int i = 2; i < end && pass; i += 2) {
		const struct arg *key = &c->argv[i], *val = &c->argv[i + 1];
		struct entry *e = db_set(c->db, key->p, key->len, obj_string(val->p, val->len),
					 flags & SET_KEEPTTL);

		if (when != -1) {
			e = db_set_expire(c->db, e, when);
			notify_arg(c, NOTIFY_GENERIC, "expire", i);
		}
		notify_arg(c, NOTIFY_STRING, "set", i);
	}
	/* A relative deadline goes out absolute, in a command of its own. */
	if (pass && when != -1 && propagate_enabled()) {
		char buf[LL_STR_SIZE + 1];
		struct arg *v = xmalloc(sizeof(*v) * (size_t)(end + 2));

		memcpy(v, c->argv, sizeof(*v) * (size_t)end);
		v[end] = PROP_STR("PXAT");
		v[end + 1] = prop_ll(buf, when);
		propagate_rewrite(end + 2, v);
		xfree(v);
	}
	reply_int(c, pass);
}

/*
 * DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest], Redis
 * 8.4. Without a condition it is DEL of one key, whatever its type. As in
 * 8.4.0 (redis#14529), the arguments are checked before the key is looked
 * up. The docs say only "an error" for a non-string with a condition; Redis's
 * tests expect an -ERR (not WRONGTYPE) reply, worded here by xkv.
 */
void cmd_delex(struct client *c)
{
	static const struct {
		const char *word;
		unsigned flag;
	} conds[] = {
		{ "ifeq", SET_IFEQ },
		{ "ifne", SET_IFNE },
		{ "ifdeq", SET_IFDEQ },
		{ "ifdne", SET_IFDNE },
	};
	uint64_t digest;
	unsigned flags = 0;
	struct entry *e;
	bool hex;

	if (c->argc == 2) {
		e = key_find(c, 1);
		if (e) {
			db_delete(c->db, e);
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
		}
		reply_int(c, e != NULL);
		return;
	}
	if (c->argc != 4) {
		reply_error(c, "wrong number of arguments for 'delex' command");
		return;
	}
	/* Redis 8.8's order: the key, its type, then the condition. */
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (e->val.type != OBJ_STRING) {
		reply_error(c, "Key should be of string type if conditions are specified");
		return;
	}
	for (size_t k = 0; k < sizeof(conds) / sizeof(conds[0]); k++)
		if (arg_is(c, 2, conds[k].word))
			flags = conds[k].flag;
	if (!flags) {
		reply_error(c, "Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE");
		return;
	}
	if ((flags & (SET_IFDEQ | SET_IFDNE)) && !digest_arg(c, 3, &digest, &hex))
		return;
	if (!compare_passes(c, e, flags, 3)) {
		reply_int(c, 0);
		return;
	}
	struct arg del[2] = { PROP_STR("DEL"), c->argv[1] };

	db_delete(c->db, e);
	/* Propagated as DEL, as Redis 8.8 (the condition held here). */
	propagate_rewrite(2, del);
	notify_arg(c, NOTIFY_GENERIC, "del", 1);
	reply_int(c, 1);
}

/* DIGEST key, Redis 8.4: the value's XXH3 as 16 hex digits (zero-padded
 * since 8.4.0, redis#14502), or a null for a missing key. */
void cmd_digest(struct client *c)
{
	static const char hexdig[] = "0123456789abcdef";
	struct entry *e = key_find_read(c, 1);
	char hex[DIGEST_LEN];
	uint64_t d;

	if (!e) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_STRING))
		return;
	d = value_digest(&e->val);
	for (int i = DIGEST_LEN; i-- > 0; d >>= 4)
		hex[i] = hexdig[d & 15];
	reply_bulk(c, hex, DIGEST_LEN);
}

void cmd_append(struct client *c)
{
	const struct arg *key = &c->argv[1], *add = &c->argv[2];
	struct entry *e = key_find(c, 1);
	size_t len;
	char *p;

	if (!e) {
		db_add(c->db, key->p, key->len, obj_string(add->p, add->len));
		notify_arg(c, NOTIFY_STRING, "append", 1);
		reply_int(c, (long long)add->len);
		return;
	}
	if (!entry_is(c, e, OBJ_STRING) || !check_string_length(c, e->val.len, add->len))
		return;
	/* Even an empty append leaves the value raw, as Redis does. */
	len = e->val.len;
	p = obj_string_make_raw(&e->val, len + add->len);
	memcpy(p + len, add->p, add->len);
	e->val.len = len + add->len;
	p[e->val.len] = '\0'; /* string values stay NUL-terminated */
	db_changed(c->db, e);
	notify_arg(c, NOTIFY_STRING, "append", 1);
	reply_int(c, (long long)e->val.len);
}

void cmd_strlen(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (entry_is(c, e, OBJ_STRING))
		reply_int(c, (long long)e->val.len);
}

/* Adds by to the integer in argv[1] (0 if missing); the deadline stays. */
static void incr_generic(struct client *c, long long by)
{
	const struct arg *key = &c->argv[1];
	struct entry *e = key_find(c, 1);
	long long v = 0;

	if (e) {
		if (!entry_is(c, e, OBJ_STRING))
			return;
		if (!obj_string_ll_value(&e->val, &v)) {
			reply_error(c, ERR_NOT_INT);
			return;
		}
	}
	if ((by < 0 && v < 0 && by < LLONG_MIN - v) || (by > 0 && v > 0 && by > LLONG_MAX - v)) {
		reply_error(c, ERR_OVERFLOW);
		return;
	}
	v += by;
	if (e)
		db_set_value(c->db, e, obj_string_ll(v));
	else
		db_add(c->db, key->p, key->len, obj_string_ll(v));
	notify_arg(c, NOTIFY_STRING, "incrby", 1);
	reply_int(c, v);
}

void cmd_incr(struct client *c)
{
	incr_generic(c, 1);
}

void cmd_decr(struct client *c)
{
	incr_generic(c, -1);
}

void cmd_incrby(struct client *c)
{
	long long by;

	if (arg_ll(c, 2, &by))
		incr_generic(c, by);
}

void cmd_decrby(struct client *c)
{
	long long by;

	if (!arg_ll(c, 2, &by))
		return;
	/* -LLONG_MIN does not exist. */
	if (by == LLONG_MIN) {
		reply_error(c, "decrement would overflow");
		return;
	}
	incr_generic(c, -by);
}

/*
 * A string value that is never "int" encoded, as Redis makes INCRBYFLOAT's
 * result: "embstr" when short, "raw" otherwise.
 */
static struct obj string_no_int(const char *p, size_t len)
{
	struct obj o = obj_string_owned(xstrndup(p, len), len);

	if (len <= EMBSTR_MAX)
		o.enc = ENC_EMBSTR;
	return o;
}

void cmd_incrbyfloat(struct client *c)
{
	const struct arg *key = &c->argv[1], *arg = &c->argv[2];
	struct entry *e = key_find(c, 1);
	long double v = 0, by;
	char buf[LD_STR_SIZE];
	int len;

	if (e) {
		char tmp[LL_STR_SIZE + 1];
		size_t slen;
		const char *s;

		if (!entry_is(c, e, OBJ_STRING))
			return;
		s = obj_str(&e->val, tmp, &slen);
		if (!str_to_ld(s, slen, &v)) {
			reply_error(c, ERR_NOT_FLOAT);
			return;
		}
	}
	if (!str_to_ld(arg->p, arg->len, &by)) {
		reply_error(c, ERR_NOT_FLOAT);
		return;
	}
	v += by;
	if (isnan(v) || isinf(v)) {
		reply_error(c, "increment would produce NaN or Infinity");
		return;
	}
	/* LD_STR_SIZE holds every finite long double in fixed notation. */
	len = ld_to_str(buf, sizeof(buf), v);
	if (e)
		db_set_value(c->db, e, string_no_int(buf, len));
	else
		db_add(c->db, key->p, key->len, string_no_int(buf, len));
	notify_arg(c, NOTIFY_STRING, "incrbyfloat", 1);
	/* Float formatting is no part of the stream: the result is. */
	if (propagate_enabled()) {
		struct arg set[4] = {
			PROP_STR("SET"), *key, { buf, (size_t)len }, PROP_STR("KEEPTTL")
		};

		propagate_rewrite(4, set);
	}
	reply_bulk(c, buf, len);
}

/* ---- INCREX (Redis 8.8) ------------------------------------------------------- */

enum increx_flag {
	INCREX_BYFLOAT = 1 << 0,
	INCREX_BYINT = 1 << 1,
	INCREX_LBOUND = 1 << 2,
	INCREX_UBOUND = 1 << 3,
	INCREX_SATURATE = 1 << 4,
	INCREX_ENX = 1 << 5, /* a new deadline only for a key without one */
	INCREX_PERSIST = 1 << 6,
	INCREX_EXPIRE = 1 << 7, /* one of EX, PX, EXAT, PXAT */
};

struct increx_args {
	unsigned flags;
	int64_t when; /* the new deadline (ms), or 0 */
	long long by, lb, ub;
	long double by_ld, lb_ld, ub_ld;
};

/* A long long or long double argument with INCREX's own error messages. */
static bool increx_ll(struct client *c, int i, long long *v, const char *err)
{
	if (str_to_ll(c->argv[i].p, c->argv[i].len, v))
		return true;
	reply_error(c, err);
	return false;
}

static bool increx_ld(struct client *c, int i, long double *v, const char *err)
{
	if (!memchr(c->argv[i].p, '\0', c->argv[i].len) &&
	    str_to_ld(c->argv[i].p, c->argv[i].len, v))
		return true;
	reply_error(c, err);
	return false;
}

static bool increx_parse(struct client *c, struct increx_args *a)
{
	const unsigned expire_flags = INCREX_EXPIRE | INCREX_PERSIST;
	int lb = 0, ub = 0, expire = 0;
	unsigned expire_kind = 0;

	*a = (struct increx_args){
		.by = 1, .lb = LLONG_MIN, .ub = LLONG_MAX, .lb_ld = -LDBL_MAX, .ub_ld = LDBL_MAX
	};
	for (int j = 2; j < c->argc; j++) {
		bool next = j + 1 < c->argc;
		static const struct {
			const char *word;
			unsigned set;
		} expiries[] = { { "ex", SET_EX },
				 { "px", SET_PX },
				 { "exat", SET_EXAT },
				 { "pxat", SET_PXAT } };
		size_t k;

		if (arg_is(c, j, "byint") && next &&
		    !(a->flags & (INCREX_BYINT | INCREX_BYFLOAT))) {
			if (!increx_ll(c, ++j, &a->by,
				       "Increment is not an integer or out of range"))
				return false;
			a->flags |= INCREX_BYINT;
			continue;
		}
		if (arg_is(c, j, "byfloat") && next &&
		    !(a->flags & (INCREX_BYINT | INCREX_BYFLOAT))) {
			if (!increx_ld(c, ++j, &a->by_ld, "Increment is not a valid float"))
				return false;
			if (isinf(a->by_ld)) {
				reply_error(c, "BYFLOAT increment cannot be Infinity");
				return false;
			}
			a->flags |= INCREX_BYFLOAT;
			continue;
		}
		if (arg_is(c, j, "lbound") && next && !(a->flags & INCREX_LBOUND)) {
			a->flags |= INCREX_LBOUND;
			lb = ++j;
			continue;
		}
		if (arg_is(c, j, "ubound") && next && !(a->flags & INCREX_UBOUND)) {
			a->flags |= INCREX_UBOUND;
			ub = ++j;
			continue;
		}
		if (arg_is(c, j, "saturate") && !(a->flags & INCREX_SATURATE)) {
			a->flags |= INCREX_SATURATE;
			continue;
		}
		if (arg_is(c, j, "enx") && !(a->flags & (INCREX_ENX | INCREX_PERSIST))) {
			a->flags |= INCREX_ENX;
			continue;
		}
		if (arg_is(c, j, "persist") && !(a->flags & (expire_flags | INCREX_ENX))) {
			a->flags |= INCREX_PERSIST;
			continue;
		}
		for (k = 0; k < sizeof(expiries) / sizeof(expiries[0]); k++)
			if (arg_is(c, j, expiries[k].word))
				break;
		if (k < sizeof(expiries) / sizeof(expiries[0]) && !(a->flags & expire_flags) &&
		    next) {
			a->flags |= INCREX_EXPIRE;
			expire_kind = expiries[k].set;
			expire = ++j;
			continue;
		}
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	/* The bounds' type follows the increment's, which may come after them. */
	if (a->flags & INCREX_BYFLOAT) {
		if ((lb && !increx_ld(c, lb, &a->lb_ld, "LBOUND is not a valid float")) ||
		    (ub && !increx_ld(c, ub, &a->ub_ld, "UBOUND is not a valid float")))
			return false;
		if (a->lb_ld > a->ub_ld) {
			reply_error(c, "LBOUND can't be greater than UBOUND");
			return false;
		}
	} else {
		if ((lb && !increx_ll(c, lb, &a->lb, "LBOUND is not an integer or out of range")) ||
		    (ub && !increx_ll(c, ub, &a->ub, "UBOUND is not an integer or out of range")))
			return false;
		if (a->lb > a->ub) {
			reply_error(c, "LBOUND can't be greater than UBOUND");
			return false;
		}
	}
	if ((a->flags & INCREX_ENX) && !(a->flags & expire_flags)) {
		reply_error(c, "ENX flag requires an expiration");
		return false;
	}
	return !expire || expire_deadline(c, expire, expire_kind, "increx", &a->when);
}

static void reply_human_ld(struct client *c, long double v)
{
	char buf[LD_STR_SIZE];
	int len = ld_to_str(buf, sizeof(buf), v);

	if (c->resp >= 3) {
		reply_raw(c, ",", 1);
		reply_raw(c, buf, (size_t)len);
		reply_raw(c, "\r\n", 2);
	} else {
		reply_bulk(c, buf, (size_t)len);
	}
}

/* INCREX by a float: replies, and makes *out the new value; false when
 * nothing is to change (rejected, or an error). */
static bool increx_float(struct client *c, const struct entry *e, const struct increx_args *a,
			 struct obj *out)
{
	long double v = 0, old, delta;
	char buf[LD_STR_SIZE];
	int len;

	if (e) {
		char tmp[LL_STR_SIZE + 1];
		size_t slen;
		const char *s = obj_str(&e->val, tmp, &slen);

		if (!str_to_ld(s, slen, &v)) {
			reply_error(c, ERR_NOT_FLOAT);
			return false;
		}
	}
	if (isinf(v)) {
		reply_error(c, "value cannot be Infinity");
		return false;
	}
	old = v;
	v += a->by_ld;
	if (isinf(v) || v > a->ub_ld || v < a->lb_ld) {
		/* Out of bounds: rejected, or clamped with SATURATE. */
		if (!(a->flags & INCREX_SATURATE)) {
			reply_array(c, 2);
			reply_human_ld(c, old);
			reply_human_ld(c, 0);
			return false;
		}
		if (isinf(v))
			v = a->by_ld >= 0 ? a->ub_ld : a->lb_ld;
		else
			v = v > a->ub_ld ? a->ub_ld : a->lb_ld;
	}
	delta = v - old;
	if (isinf(delta)) {
		reply_error(c, "applied increment would be Infinity");
		return false;
	}
	reply_array(c, 2);
	reply_human_ld(c, v);
	reply_human_ld(c, delta);
	len = ld_to_str(buf, sizeof(buf), v);
	*out = string_no_int(buf, (size_t)len);
	return true;
}

static bool increx_int(struct client *c, const struct entry *e, const struct increx_args *a,
		       struct obj *out)
{
	long long v = 0, old, delta;
	bool overflow;

	if (e && !obj_string_ll_value(&e->val, &v)) {
		reply_error(c, ERR_NOT_INT);
		return false;
	}
	old = v;
	overflow = __builtin_add_overflow(old, a->by, &v);
	if (overflow || v > a->ub || v < a->lb) {
		if (!(a->flags & INCREX_SATURATE)) {
			reply_array(c, 2);
			reply_int(c, old);
			reply_int(c, 0);
			return false;
		}
		if (overflow)
			v = a->by >= 0 ? a->ub : a->lb;
		else
			v = v > a->ub ? a->ub : a->lb;
	}
	if (__builtin_sub_overflow(v, old, &delta)) {
		reply_error(c, "applied increment would overflow");
		return false;
	}
	reply_array(c, 2);
	reply_int(c, v);
	reply_int(c, delta);
	*out = obj_string_ll(v);
	return true;
}

/*
 * INCREX key [BYINT n | BYFLOAT x] [LBOUND l] [UBOUND u] [SATURATE]
 *        [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST] [ENX]
 * Replies [new value, applied increment] before the change, as Redis does;
 * an out-of-bounds result without SATURATE changes nothing.
 */
/* Redis replicates INCREX as a SET of its result, so replicas and the AOF
 * never redo float arithmetic: SET key result, with PXAT when it set a
 * deadline, KEEPTTL otherwise, nothing more after PERSIST. */
static void increx_propagate(struct client *c, const struct entry *e, const struct increx_args *a,
			     bool set_deadline)
{
	char vbuf[LL_STR_SIZE + 1], tbuf[LL_STR_SIZE + 1];
	struct arg v[5] = { PROP_STR("SET"), c->argv[1] };
	int n = 3;
	size_t len;

	if (!propagate_enabled())
		return;
	v[2].p = (char *)obj_str(&e->val, vbuf, &len);
	v[2].len = len;
	if (a->flags & INCREX_PERSIST) {
		n = 3;
	} else if (set_deadline) {
		v[3] = PROP_STR("PXAT");
		v[4] = prop_ll(tbuf, a->when);
		n = 5;
	} else {
		v[3] = PROP_STR("KEEPTTL");
		n = 4;
	}
	propagate_rewrite(n, v);
}

void cmd_increx(struct client *c)
{
	struct increx_args a;
	struct entry *e;
	struct obj val;
	bool set_deadline, persisted;

	if (!increx_parse(c, &a))
		return;
	e = key_find(c, 1);
	if (e && !entry_is(c, e, OBJ_STRING))
		return;
	if (!((a.flags & INCREX_BYFLOAT) ? increx_float(c, e, &a, &val)
					 : increx_int(c, e, &a, &val)))
		return;
	set_deadline = a.when && (!(a.flags & INCREX_ENX) || !e || entry_expire(e) == -1);
	/* A deadline already past deletes the key, propagated as DEL (UNLINK
	 * under lazyfree-lazy-expire), and counts as a key that expired. */
	if (set_deadline && a.when <= store_now()) {
		obj_free(&val);
		if (e) {
			db_delete(c->db, e);
			propagate_renamed(2, c->argv,
					  config.lazyfree_lazy_expire ? "UNLINK" : "DEL", -1);
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
		}
		db_count_expired(c->db, c->argv[1].p, c->argv[1].len);
		return;
	}
	if (e)
		db_set_value(c->db, e, val);
	else
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, val);
	persisted = false;
	if (a.flags & INCREX_PERSIST) {
		persisted = entry_expire(e) != -1;
		if (persisted)
			e = db_set_expire(c->db, e, -1);
	} else if (set_deadline) {
		e = db_set_expire(c->db, e, a.when);
	}
	increx_propagate(c, e, &a, set_deadline);
	/* As Redis: the increment's event, then the deadline's. */
	notify_arg(c, NOTIFY_STRING, (a.flags & INCREX_BYFLOAT) ? "incrbyfloat" : "incrby", 1);
	if (persisted)
		notify_arg(c, NOTIFY_GENERIC, "persist", 1);
	else if (set_deadline && !(a.flags & INCREX_PERSIST))
		notify_arg(c, NOTIFY_GENERIC, "expire", 1);
}

void cmd_getrange(struct client *c)
{
	char tmp[LL_STR_SIZE + 1];
	long long start, end, len;
	struct entry *e;
	size_t slen;
	const char *p;

	if (!arg_ll(c, 2, &start) || !arg_ll(c, 3, &end))
		return;
	e = key_find_read(c, 1);
	if (!e) {
		reply_bulk(c, "", 0);
		return;
	}
	if (!entry_is(c, e, OBJ_STRING))
		return;
	p = obj_str(&e->val, tmp, &slen);
	len = (long long)slen;

	/* Redis 7.0's clamping: negative indexes count from the end, then both
	 * are clamped into the string, so "0 -100" on "hello" is "h". */
	if (start < 0 && end < 0 && start > end)
		goto empty;
	if (start < 0)
		start += len;
	if (end < 0)
		end += len;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= len)
		end = len - 1;
	if (start > end || len == 0)
		goto empty;
	reply_bulk(c, p + start, (size_t)(end - start + 1));
	return;

empty:
	reply_bulk(c, "", 0);
}

void cmd_substr(struct client *c)
{
	cmd_getrange(c);
}

void cmd_setrange(struct client *c)
{
	const struct arg *key = &c->argv[1], *val = &c->argv[3];
	struct entry *e;
	long long offset;
	size_t len, total;
	char *p;

	if (!arg_ll(c, 2, &offset))
		return;
	if (offset < 0) {
		reply_error(c, "offset is out of range");
		return;
	}
	e = key_find(c, 1);
	if (e && !entry_is(c, e, OBJ_STRING))
		return;
	/* Writing nothing changes nothing and creates no key. */
	if (val->len == 0) {
		reply_int(c, e ? (long long)e->val.len : 0);
		return;
	}
	if (!check_string_length(c, (unsigned long long)offset, val->len))
		return;
	total = (size_t)offset + val->len;

	if (!e) {
		p = xcalloc(1, total + 1);
		memcpy(p + offset, val->p, val->len);
		db_add(c->db, key->p, key->len, obj_string_owned(p, total));
		notify_arg(c, NOTIFY_STRING, "setrange", 1);
		reply_int(c, (long long)total);
		return;
	}
	len = e->val.len;
	if (total < len)
		total = len;
	p = obj_string_make_raw(&e->val, total);
	if ((size_t)offset > len)
		memset(p + len, 0, offset - len);
	memcpy(p + offset, val->p, val->len);
	p[total] = '\0';
	e->val.len = total;
	db_changed(c->db, e);
	notify_arg(c, NOTIFY_STRING, "setrange", 1);
	reply_int(c, (long long)total);
}

/* LCS's ranges: where one common run starts and ends in each string. */
struct lcs_range {
	uint32_t a_start, a_end, b_start, b_end;
};

/* The LCS length of a[0..i) and b[0..j), from the table of cmd_lcs(). */
static inline uint32_t lcs_at(const uint32_t *tab, size_t blen, size_t i, size_t j)
{
	return tab[i * (blen + 1) + j];
}

/*
 * Walks the table back from its far corner as Redis does (on a tie, step
 * back in b), so that both the common string and the runs are the ones Redis
 * reports. Writes the common string into out (its full length) and the runs
 * of at least minlen bytes into ranges, last run first; returns their count.
 */
static size_t lcs_walk(const uint32_t *tab, const char *a, uint32_t alen, const char *b,
		       uint32_t blen, long long minlen, char *out, struct lcs_range *ranges)
{
	uint32_t i = alen, j = blen, k = lcs_at(tab, blen, alen, blen);
	size_t n = 0;
	bool in_run = false;
	struct lcs_range r = { 0 };

	while (i > 0 && j > 0) {
		bool end_run;

		if (a[i - 1] == b[j - 1]) {
			out[--k] = a[i - 1];
			if (!in_run) {
				r.a_end = i - 1;
				r.b_end = j - 1;
				in_run = true;
			}
			r.a_start = --i;
			r.b_start = --j;
			/* The run cannot continue past the start of a string. */
			end_run = i == 0 || j == 0;
		} else {
			if (lcs_at(tab, blen, i - 1, j) > lcs_at(tab, blen, i, j - 1))
				i--;
			else
				j--;
			end_run = in_run;
		}
		if (end_run) {
			if (r.a_end - r.a_start + 1 >= minlen)
				ranges[n++] = r;
			in_run = false;
		}
	}
	return n;
}

void cmd_lcs(struct client *c)
{
	char tmp_a[LL_STR_SIZE + 1], tmp_b[LL_STR_SIZE + 1];
	struct entry *ea = key_find_read(c, 1), *eb = key_find_read(c, 2);
	bool idx = false, len_only = false, with_len = false;
	struct lcs_range *ranges;
	long long minlen = 0;
	size_t alen = 0, blen = 0, cells, nranges;
	const char *a = "", *b = "";
	uint32_t *tab, total;
	char *out;

	if ((ea && ea->val.type != OBJ_STRING) || (eb && eb->val.type != OBJ_STRING)) {
		reply_error(c, "The specified keys must contain string values");
		return;
	}
	for (int i = 3; i < c->argc; i++) {
		if (arg_is(c, i, "idx")) {
			idx = true;
		} else if (arg_is(c, i, "len")) {
			len_only = true;
		} else if (arg_is(c, i, "withmatchlen")) {
			with_len = true;
		} else if (arg_is(c, i, "minmatchlen") && i + 1 < c->argc) {
			if (!arg_ll(c, ++i, &minlen))
				return;
			if (minlen < 0)
				minlen = 0;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (idx && len_only) {
		reply_error(c, "If you want both the length and indexes, please just use IDX.");
		return;
	}
	if (ea)
		a = obj_str(&ea->val, tmp_a, &alen);
	if (eb)
		b = obj_str(&eb->val, tmp_b, &blen);
	/* The table is transient but can be huge: Redis bounds it by the
	 * largest string it would accept. */
	cells = (alen + 1) * (blen + 1);
	if (cells > (unsigned long long)config.proto_max_bulk_len / sizeof(*tab)) {
		reply_error(c, "Insufficient memory, transient memory for LCS exceeds "
			       "proto-max-bulk-len");
		return;
	}

	/* Row i of the table holds the LCS lengths of a[0..i) and b's prefixes. */
	tab = xmalloc(cells * sizeof(*tab));
	memset(tab, 0, (blen + 1) * sizeof(*tab));
	for (size_t i = 1; i <= alen; i++) {
		uint32_t *row = tab + i * (blen + 1), *up = row - (blen + 1);

		row[0] = 0;
		for (size_t j = 1; j <= blen; j++) {
			if (a[i - 1] == b[j - 1])
				row[j] = up[j - 1] + 1;
			else
				row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
		}
	}
	total = tab[cells - 1];
	if (len_only) {
		reply_int(c, total);
		goto out_tab;
	}

	out = xmalloc(total + 1);
	ranges = xmalloc((total + 1) * sizeof(*ranges));
	nranges = lcs_walk(tab, a, alen, b, blen, minlen, out, ranges);
	if (!idx) {
		reply_bulk(c, out, total);
		goto out_walk;
	}
	reply_map(c, 2);
	reply_bulk_cstr(c, "matches");
	reply_array(c, (long)nranges);
	for (size_t k = 0; k < nranges; k++) {
		reply_array(c, with_len ? 3 : 2);
		reply_array(c, 2);
		reply_int(c, ranges[k].a_start);
		reply_int(c, ranges[k].a_end);
		reply_array(c, 2);
		reply_int(c, ranges[k].b_start);
		reply_int(c, ranges[k].b_end);
		if (with_len)
			reply_int(c, ranges[k].a_end - ranges[k].a_start + 1);
	}
	reply_bulk_cstr(c, "len");
	reply_int(c, total);

out_walk:
	xfree(ranges);
	xfree(out);
out_tab:
	xfree(tab);
}
