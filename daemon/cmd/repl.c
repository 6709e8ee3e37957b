// SPDX-License-Identifier: BSD-3-Clause
/* SYNC, PSYNC, REPLCONF, WAIT, ROLE: argument checks; the work is repl.c's. */
#include "commands.h"
#include "repl.h"
#include "util.h"

void cmd_sync(struct client *c)
{
	repl_sync(c, NULL, 0);
}

void cmd_psync(struct client *c)
{
	long long offset;

	/* Redis reads the offset only when it tries a partial resync: a bad
	 * one is refused before anything else. */
	if (!arg_ll(c, 2, &offset))
		return;
	repl_sync(c, c->argv[1].p, offset);
}

void cmd_replconf(struct client *c)
{
	repl_replconf(c);
}

void cmd_wait(struct client *c)
{
	long long n, timeout;

	if (!arg_ll(c, 1, &n))
		return;
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &timeout)) {
		reply_error(c, "timeout is not an integer or out of range");
		return;
	}
	if (timeout < 0) {
		reply_error(c, "timeout is negative");
		return;
	}
	repl_wait(c, n, timeout, false);
}

void cmd_waitaof(struct client *c)
{
	long long local, n, timeout;

	if (!str_to_ll(c->argv[1].p, c->argv[1].len, &local) || local < 0 || local > 1) {
		reply_error(c, "value is out of range, value must between 0 and 1");
		return;
	}
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &n) || n < 0) {
		reply_error(c, "value is out of range, must be positive");
		return;
	}
	if (!str_to_ll(c->argv[3].p, c->argv[3].len, &timeout)) {
		reply_error(c, "timeout is not an integer or out of range");
		return;
	}
	if (timeout < 0) {
		reply_error(c, "timeout is negative");
		return;
	}
	/* There is no AOF here. */
	if (local) {
		reply_error(c, "WAITAOF cannot be used when numlocal is set but appendonly is "
			       "disabled.");
		return;
	}
	repl_wait(c, n, timeout, true);
}

void cmd_role(struct client *c)
{
	repl_role(c);
}
