// SPDX-License-Identifier: BSD-3-Clause
/* MONITOR (the feed itself is monitor.c). */
#include "commands.h"
#include "monitor.h"
#include "exec_ctx.h"

void cmd_monitor(struct client *c)
{
	/* EXEC wants one reply per command: a stream cannot be one. */
	if (exec_ctx_flags() & EXEC_IN_EXEC) {
		reply_error(c, "MONITOR isn't allowed for DENY BLOCKING client");
		return;
	}
	/* Already monitoring: Redis says nothing at all. */
	if (c->flags & CLIENT_MONITOR)
		return;
	monitor_start(c);
	reply_ok(c);
}
