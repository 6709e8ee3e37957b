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

/* Redis's letters, in the order its canonical string lists them: the event
 * classes (shown as "A" when all of A's are on), then the kinds. */
static const struct {
	char c;
	long long bit;
} classes[] = {
	{ 'g', NOTIFY_GENERIC },  { '$', NOTIFY_STRING },      { 'l', NOTIFY_LIST },
	{ 's', NOTIFY_SET },	  { 'h', NOTIFY_HASH },	       { 'z', NOTIFY_ZSET },
	{ 'x', NOTIFY_EXPIRED },  { 'e', NOTIFY_EVICTED },     { 't', NOTIFY_STREAM },
	{ 'd', NOTIFY_MODULE },	  { 'a', NOTIFY_ARRAY },       { 'n', NOTIFY_NEW },
	{ 'o', NOTIFY_OVERWRITTEN }, { 'c', NOTIFY_TYPE_CHANGED },
}, kinds[] = {
	{ 'K', NOTIFY_KEYSPACE },	{ 'E', NOTIFY_KEYEVENT },	{ 'm', NOTIFY_KEY_MISS },
	{ 'S', NOTIFY_SUBKEYSPACE },	{ 'T', NOTIFY_SUBKEYEVENT },
	{ 'I', NOTIFY_SUBKEYSPACEITEM }, { 'V', NOTIFY_SUBKEYSPACEEVENT },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

int notify_parse(const char *p, size_t len, long long *out)
{
	long long flags = 0;

	/* Redis reads the argument as a C string: up to the first NUL. */
	for (size_t i = 0; i < len && p[i]; i++) {
		long long bit = p[i] == 'A' ? NOTIFY_ALL : 0;

		for (size_t j = 0; !bit && j < ARRAY_LEN(classes); j++)
			if (classes[j].c == p[i])
				bit = classes[j].bit;
		for (size_t j = 0; !bit && j < ARRAY_LEN(kinds); j++)
			if (kinds[j].c == p[i])
				bit = kinds[j].bit;
		if (!bit)
			return -1;
		flags |= bit;
	}
	*out = flags;
	return 0;
}

void notify_format(long long flags, char *buf)
{
	size_t n = 0;

	if ((flags & NOTIFY_ALL) == NOTIFY_ALL) {
		/* As Redis: n, o and c are not shown next to A. */
		buf[n++] = 'A';
	} else {
		for (size_t i = 0; i < ARRAY_LEN(classes); i++)
			if (flags & classes[i].bit)
				buf[n++] = classes[i].c;
	}
	for (size_t i = 0; i < ARRAY_LEN(kinds); i++)
		if (flags & kinds[i].bit)
			buf[n++] = kinds[i].c;
	buf[n] = '\0';
}

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
			notify_keyspace_event(NOTIFY_NEW, "new", e->key, e->klen, ch->db);
		else if (ch->flags & DB_CHANGE_F_FIELDS)
			notify_keyspace_event(NOTIFY_HASH, "hexpired", e->key, e->klen, ch->db);
		/* Before the command's own event, as Redis's setKey sends them. */
		if (ch->flags & DB_CHANGE_F_OVERWRITTEN)
			notify_keyspace_event(NOTIFY_OVERWRITTEN, "overwritten", e->key, e->klen,
					      ch->db);
		if (ch->flags & DB_CHANGE_F_TYPE_CHANGED)
			notify_keyspace_event(NOTIFY_TYPE_CHANGED, "type_changed", e->key, e->klen,
					      ch->db);
		break;
	case DB_CHANGE_EXPIRE:
		/* A hash that active field expiry emptied: its fields expired, and
		 * then the key was deleted, as Redis reports it. */
		if (ch->flags & DB_CHANGE_F_FIELDS) {
			notify_keyspace_event(NOTIFY_HASH, "hexpired", e->key, e->klen, ch->db);
			notify_keyspace_event(NOTIFY_GENERIC, "del", e->key, e->klen, ch->db);
			break;
		}
		notify_keyspace_event(NOTIFY_EXPIRED, "expired", e->key, e->klen, ch->db);
		break;
	case DB_CHANGE_EVICT:
		notify_keyspace_event(NOTIFY_EVICTED, "evicted", e->key, e->klen, ch->db);
		break;
	default:
		break;
	}
}
