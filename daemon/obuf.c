// SPDX-License-Identifier: BSD-3-Clause
#include <stdlib.h>

#include "client.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "obuf.h"
#include "util.h"
#include "worker.h"

static enum obuf_class obuf_class_of(const struct client *c)
{
	if (c->flags & CLIENT_REPLICA)
		return OBUF_REPLICA;
	/* Redis counts a client as pubsub while it has any subscription. */
	if (c->pubsub_counts[0] || c->pubsub_counts[1] || c->pubsub_counts[2])
		return OBUF_PUBSUB;
	return OBUF_NORMAL;
}

bool obuf_check(struct client *c)
{
	enum obuf_class cls;
	long long hard, soft, secs;
	unsigned long long used = c->reply_bytes;
	char *info;

	if (c->flags & CLIENT_CLOSE_ASAP)
		return true;
	if (c->flags & CLIENT_REPLICA_BULK)
		return false;
	cls = obuf_class_of(c);
	hard = __atomic_load_n(&config.obuf_limits[cls][0], __ATOMIC_RELAXED);
	soft = __atomic_load_n(&config.obuf_limits[cls][1], __ATOMIC_RELAXED);
	if (hard && used >= (unsigned long long)hard)
		goto close;
	if (!soft || used < (unsigned long long)soft) {
		c->obuf_soft_since_ms = 0;
		return false;
	}
	secs = __atomic_load_n(&config.obuf_limits[cls][2], __ATOMIC_RELAXED);
	if (!c->obuf_soft_since_ms) {
		c->obuf_soft_since_ms = mono_ms();
		return false;
	}
	if (mono_ms() - c->obuf_soft_since_ms <= secs * 1000)
		return false;
close:
	info = client_info_line(c);
	log_warning("Client %s scheduled to be closed ASAP for overcoming of output buffer limits.",
		    info);
	xfree(info);
	c->flags |= CLIENT_CLOSE_ASAP;
	if (c->worker)
		__atomic_fetch_add(&c->worker->stats.obuf_limit_closes, 1, __ATOMIC_RELAXED);
	/* Through the mailbox: the engine's close must not run under a reply
	 * being built, and a client stuck in a send is closed from there. */
	if (c->worker)
		worker_post(c->worker, &worker_mail_kill, c->id);
	return true;
}
