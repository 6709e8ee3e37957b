// SPDX-License-Identifier: BSD-3-Clause
/*
 * notify: keyspace notifications (see notify.h). No state of its own: the
 * classes are config.notify_keyspace_events, and delivery is pub/sub's.
 */
#include <stdio.h>
#include <string.h>

#include "mem.h"
#include "notify.h"
#include "pubsub.h"
#include "store.h"
#include "t_hash.h"

/* "__keyspace@" db "__:" tail, in buf (or a fresh allocation if it does
 * not fit: *heap then owns it). */
static char *channel(char *buf, size_t size, const char *prefix, int db, const char *tail,
		     size_t tlen, size_t *len, char **heap)
{
	char head[40];
	int hl = snprintf(head, sizeof(head), "%s%d__:", prefix, db);
	char *p = buf;

	*heap = NULL;
	if ((size_t)hl + tlen > size)
		p = *heap = xmalloc((size_t)hl + tlen);
	memcpy(p, head, (size_t)hl);
	memcpy(p + hl, tail, tlen);
	*len = (size_t)hl + tlen;
	return p;
}

/* A growing byte string for the subkey channels and payloads. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sbuf_add(struct sbuf *b, const void *p, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 64;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

static void sbuf_str(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

static void sbuf_num(struct sbuf *b, long long v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", v);

	sbuf_add(b, num, (size_t)n);
}

/* "<prefix>@<db>__:" */
static void sbuf_head(struct sbuf *b, const char *prefix, int db)
{
	b->len = 0;
	sbuf_str(b, prefix);
	sbuf_num(b, db);
	sbuf_add(b, "__:", 3);
}

/* "<len>:<field>" for each field, comma separated. */
static void sbuf_subkeys(struct sbuf *b, const struct field_list *fl)
{
	for (uint32_t i = 0; i < fl->n; i++) {
		if (i)
			sbuf_add(b, ",", 1);
		sbuf_num(b, (long long)fl->v[i].len);
		sbuf_add(b, ":", 1);
		sbuf_add(b, fl->v[i].p, fl->v[i].len);
	}
}

static void publish_subkeys(long long flags, const char *event, size_t elen, const char *key,
			    size_t len, int db, const struct field_list *fl)
{
	struct sbuf ch = { 0 }, msg = { 0 };
	/* '|' separates the event in payloads and channels, '\n' the field
	 * in item channels: Redis skips what would be ambiguous. */
	bool bar = memchr(event, '|', elen) != NULL;

	if ((flags & NOTIFY_SUBKEYSPACE) && !bar) {
		sbuf_head(&ch, "__subkeyspace@", db);
		sbuf_add(&ch, key, len);
		msg.len = 0;
		sbuf_add(&msg, event, elen);
		sbuf_add(&msg, "|", 1);
		sbuf_subkeys(&msg, fl);
		pubsub_publish_here(ch.p, ch.len, msg.p, msg.len);
	}
	if (flags & NOTIFY_SUBKEYEVENT) {
		sbuf_head(&ch, "__subkeyevent@", db);
		sbuf_add(&ch, event, elen);
		msg.len = 0;
		sbuf_num(&msg, (long long)len);
		sbuf_add(&msg, ":", 1);
		sbuf_add(&msg, key, len);
		sbuf_add(&msg, "|", 1);
		sbuf_subkeys(&msg, fl);
		pubsub_publish_here(ch.p, ch.len, msg.p, msg.len);
	}
	if ((flags & NOTIFY_SUBKEYSPACEITEM) && !memchr(key, '\n', len)) {
		for (uint32_t i = 0; i < fl->n; i++) {
			sbuf_head(&ch, "__subkeyspaceitem@", db);
			sbuf_add(&ch, key, len);
			sbuf_add(&ch, "\n", 1);
			sbuf_add(&ch, fl->v[i].p, fl->v[i].len);
			pubsub_publish_here(ch.p, ch.len, event, elen);
		}
	}
	if ((flags & NOTIFY_SUBKEYSPACEEVENT) && !bar) {
		sbuf_head(&ch, "__subkeyspaceevent@", db);
		sbuf_add(&ch, event, elen);
		sbuf_add(&ch, "|", 1);
		sbuf_add(&ch, key, len);
		msg.len = 0;
		sbuf_subkeys(&msg, fl);
		pubsub_publish_here(ch.p, ch.len, msg.p ? msg.p : "", msg.len);
	}
	xfree(ch.p);
	xfree(msg.p);
}

void notify_publish(const char *event, const char *key, size_t len, int db,
		    const struct field_list *fields)
{
	long long flags = __atomic_load_n(&config.notify_keyspace_events, __ATOMIC_RELAXED);
	size_t elen = strlen(event), clen;
	char buf[256], *heap, *ch;

	if (flags & NOTIFY_KEYSPACE) {
		ch = channel(buf, sizeof(buf), "__keyspace@", db, key, len, &clen, &heap);
		pubsub_publish_here(ch, clen, event, elen);
		xfree(heap);
	}
	if (flags & NOTIFY_KEYEVENT) {
		ch = channel(buf, sizeof(buf), "__keyevent@", db, event, elen, &clen, &heap);
		pubsub_publish_here(ch, clen, key, len);
		xfree(heap);
	}
	if (fields && fields->n &&
	    (flags & (NOTIFY_SUBKEYSPACE | NOTIFY_SUBKEYEVENT | NOTIFY_SUBKEYSPACEITEM |
		      NOTIFY_SUBKEYSPACEEVENT)))
		publish_subkeys(flags, event, elen, key, len, db, fields);
}

void notify_on_change(const struct db_change *ch)
{
	const struct entry *e = ch->e;

	/* Off, the common case: one load and a branch for every change. */
	if (!__atomic_load_n(&config.notify_keyspace_events, __ATOMIC_RELAXED))
		return;
	switch (ch->reason) {
	case DB_CHANGE_WRITE:
		if (ch->flags & DB_CHANGE_F_CREATED)
			notify_keyspace_event(NOTIFY_NEW, "new", e->key, entry_klen(e), ch->db);
		else if (ch->flags & DB_CHANGE_F_FIELDS)
			notify_keyspace_fields(NOTIFY_HASH, "hexpired", e->key, entry_klen(e),
					       ch->db, ch->fields);
		/* Before the command's own event, as Redis's setKey sends them. */
		if (ch->flags & DB_CHANGE_F_OVERWRITTEN)
			notify_keyspace_event(NOTIFY_OVERWRITTEN, "overwritten", e->key,
					      entry_klen(e), ch->db);
		if (ch->flags & DB_CHANGE_F_TYPE_CHANGED)
			notify_keyspace_event(NOTIFY_TYPE_CHANGED, "type_changed", e->key,
					      entry_klen(e), ch->db);
		break;
	case DB_CHANGE_EXPIRE:
		/* A hash that active field expiry emptied: its fields expired, and
		 * then the key was deleted, as Redis reports it. */
		if (ch->flags & DB_CHANGE_F_FIELDS) {
			notify_keyspace_fields(NOTIFY_HASH, "hexpired", e->key, entry_klen(e),
					       ch->db, ch->fields);
			notify_keyspace_event(NOTIFY_GENERIC, "del", e->key, entry_klen(e), ch->db);
			break;
		}
		notify_keyspace_event(NOTIFY_EXPIRED, "expired", e->key, entry_klen(e), ch->db);
		break;
	case DB_CHANGE_EVICT:
		notify_keyspace_event(NOTIFY_EVICTED, "evicted", e->key, entry_klen(e), ch->db);
		break;
	case DB_CHANGE_SLOT_LOST:
		/* As Redis's clusterDelKeysInSlot. */
		notify_keyspace_event(NOTIFY_GENERIC, "del", e->key, entry_klen(e), ch->db);
		break;
	default:
		break;
	}
}
