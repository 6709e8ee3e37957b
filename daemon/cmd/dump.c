// SPDX-License-Identifier: BSD-3-Clause
/*
 * dump: DUMP and RESTORE, Redis's key serialization. A payload is one value
 * in RDB form (rdb.h: a type byte and the body), the RDB version as two
 * little-endian bytes, then the CRC-64 of everything before it, little
 * endian; a CRC of 0 means "not checked", as Redis reads it.
 *
 * Locking: both rows name their key, so the dispatcher holds its shard lock
 * around the handler; nothing here locks.
 */
#include <errno.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "crc64.h"
#include "evict.h"
#include "mem.h"
#include "notify.h"
#include "propagate.h"
#include "rdb.h"
#include "t_hash.h"
#include "util.h"

#define ERR_BUSYKEY "-BUSYKEY Target key name already exists."
#define ERR_PAYLOAD "DUMP payload version or checksum are wrong"
#define ERR_BAD_FORMAT "Bad data format"

void cmd_dump(struct client *c)
{
	struct entry *e = key_find_read(c, 1);
	struct rdb_buf b = { 0 };

	if (!e) {
		reply_null(c);
		return;
	}
	rdb_dump_payload(&b, &e->val);
	reply_bulk(c, b.p, b.len);
	xfree(b.p);
}

/* IDLETIME and FREQ apply only under the policy that keeps them, as in
 * Redis: FREQ under an LFU policy, IDLETIME under any other. */
static void dump_set_access(struct entry *e, long long idle, long long freq)
{
	uint32_t now = store_clock();

	if (evict_policy_is_lfu()) {
		if (freq >= 0) {
			e->lfu = (uint8_t)freq;
			e->atime = now;
		}
	} else if (idle >= 0) {
		/* The clock is 32 bits of ticks: clamp so that now - atime does
		 * not wrap. */
		unsigned long long t = (unsigned long long)idle * STORE_CLOCK_HZ;

		e->atime = now - (uint32_t)(t < UINT32_MAX / 2 ? t : UINT32_MAX / 2);
	}
}

void cmd_restore(struct client *c)
{
	const struct arg *key = &c->argv[1], *pl = &c->argv[3];
	long long ttl, idle = -1, freq = -1;
	bool replace = false, absttl = false;
	struct rdb_reader r;
	struct entry *e;
	struct obj val;
	int old_type = -1;
	uint8_t t;

	for (int i = 4; i < c->argc; i++) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "replace")) {
			replace = true;
		} else if (arg_is(c, i, "absttl")) {
			absttl = true;
		} else if (arg_is(c, i, "idletime") && more && freq == -1) {
			if (!arg_ll(c, ++i, &idle))
				return;
			if (idle < 0) {
				reply_error(c, "Invalid IDLETIME value, must be >= 0");
				return;
			}
		} else if (arg_is(c, i, "freq") && more && idle == -1) {
			if (!arg_ll(c, ++i, &freq))
				return;
			if (freq < 0 || freq > 255) {
				reply_error(c, "Invalid FREQ value, must be >= 0 and <= 255");
				return;
			}
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	e = key_find(c, 1);
	if (e && !replace) {
		reply_error(c, ERR_BUSYKEY);
		return;
	}
	if (!arg_ll(c, 2, &ttl))
		return;
	if (ttl < 0) {
		reply_error(c, "Invalid TTL value, must be >= 0");
		return;
	}
	if (!rdb_payload_ok((const uint8_t *)pl->p, pl->len)) {
		reply_error(c, ERR_PAYLOAD);
		return;
	}
	r = (struct rdb_reader){ (const uint8_t *)pl->p, pl->len - 10, 0, NULL };
	if (rdb_read_byte(&r, &t) || rdb_load_object(&r, t, &val)) {
		reply_error(c, ERR_BAD_FORMAT);
		return;
	}
	if (ttl && !absttl)
		ttl += store_now();
	if (e) {
		old_type = e->val.type;
		db_delete(c->db, e);
	}
	/* A deadline already past: the old key goes (a "del", propagated as
	 * DEL, or UNLINK under lazyfree-lazy-server-del), no new one is made,
	 * and it counts as expired, as in Redis 8.8. */
	if (ttl && ttl <= store_now()) {
		if (old_type >= 0) {
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
			propagate_renamed(2, c->argv,
					  config.lazyfree_lazy_server_del ? "UNLINK" : "DEL", -1);
		}
		db_count_expired(c->db, key->p, key->len);
		obj_free(&val);
		reply_ok(c);
		return;
	}
	e = db_add(c->db, key->p, key->len, val);
	if (ttl)
		e = db_set_expire(c->db, e, ttl);
	/* A relative TTL goes out absolute: RESTORE key ms payload ... ABSTTL. */
	if (ttl && !absttl && propagate_enabled()) {
		char buf[LL_STR_SIZE + 1];
		struct arg *v = xmalloc(sizeof(*v) * (size_t)(c->argc + 1));

		memcpy(v, c->argv, sizeof(*v) * (size_t)c->argc);
		v[2] = prop_ll(buf, ttl);
		v[c->argc] = PROP_STR("ABSTTL");
		propagate_rewrite(c->argc + 1, v);
		xfree(v);
	}
	dump_set_access(e, idle, freq);
	/* Redis's events, in its order: restore, then for a REPLACE that
	 * replaced a key, overwritten and (another type) type_changed. */
	notify_arg(c, NOTIFY_GENERIC, "restore", 1);
	if (old_type >= 0) {
		notify_arg(c, NOTIFY_OVERWRITTEN, "overwritten", 1);
		if (old_type != e->val.type)
			notify_arg(c, NOTIFY_TYPE_CHANGED, "type_changed", 1);
	}
	reply_ok(c);
}
