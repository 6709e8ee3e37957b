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

void notify_publish(const char *event, const char *key, size_t len, int db)
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
			notify_keyspace_event(NOTIFY_HASH, "hexpired", e->key, entry_klen(e),
					      ch->db);
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
			notify_keyspace_event(NOTIFY_HASH, "hexpired", e->key, entry_klen(e),
					      ch->db);
			notify_keyspace_event(NOTIFY_GENERIC, "del", e->key, entry_klen(e), ch->db);
			break;
		}
		notify_keyspace_event(NOTIFY_EXPIRED, "expired", e->key, entry_klen(e), ch->db);
		break;
	case DB_CHANGE_EVICT:
		notify_keyspace_event(NOTIFY_EVICTED, "evicted", e->key, entry_klen(e), ch->db);
		break;
	default:
		break;
	}
}
