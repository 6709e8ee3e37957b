/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notify: keyspace notifications (notify-keyspace-events), as Redis sends
 * them: for each event of an enabled class, `event` to
 * __keyspace@<db>__:<key> (K) and `key` to __keyevent@<db>__:<event> (E),
 * through pub/sub's ordinary delivery.
 *
 * Command handlers call notify_keyspace_event() where Redis does, after the
 * change; the store's changes that no command names (expired, evicted, new,
 * overwritten, type_changed) come through the store hook notify_on_change(). Both run on the writer's
 * thread under the shard lock of the key, so the events of one key are
 * published, and reach every worker's subscribers, in the order of its
 * changes. With the class off, an event costs one load and a branch.
 */
#ifndef XKV_NOTIFY_H
#define XKV_NOTIFY_H

#include <stddef.h>

#include "config.h"

struct db_change;
struct field_list;

/* Publishes one event (the slow path of notify_keyspace_event), and with
 * fields (NULL or empty: none) Redis 8.8's subkey events: for the classes S,
 * T, I, V, to __subkeyspace@<db>__:<key> "<event>|<subkeys>",
 * __subkeyevent@<db>__:<event> "<klen>:<key>|<subkeys>",
 * __subkeyspaceitem@<db>__:<key>\n<field> "<event>" (one per field) and
 * __subkeyspaceevent@<db>__:<event>|<key> "<subkeys>", where <subkeys> is
 * "<len>:<field>" joined by commas. */
void notify_publish(const char *event, const char *key, size_t len, int db,
		    const struct field_list *fields);

static inline void notify_keyspace_event(int type, const char *event, const char *key, size_t len,
					 int db)
{
	/* CONFIG SET stores the flags whole, from any worker: relaxed. */
	if (__builtin_expect(
		    !(__atomic_load_n(&config.notify_keyspace_events, __ATOMIC_RELAXED) & type), 1))
		return;
	notify_publish(event, key, len, db, NULL);
}

/* An event with the fields it touched (see notify_publish). */
static inline void notify_keyspace_fields(int type, const char *event, const char *key, size_t len,
					  int db, const struct field_list *fields)
{
	if (__builtin_expect(
		    !(__atomic_load_n(&config.notify_keyspace_events, __ATOMIC_RELAXED) & type), 1))
		return;
	notify_publish(event, key, len, db, fields);
}

/* The event for key argument i of the running command c (a struct client). */
#define notify_arg(c, type, event, i)                                                              \
	notify_keyspace_event(type, event, (c)->argv[i].p, (c)->argv[i].len, (c)->db)

/* The store hook (STORE_HOOK_NOTIFY): expired, evicted, new, overwritten,
 * type_changed, and hexpired of active field expiry. */
void notify_on_change(const struct db_change *ch);

#endif
