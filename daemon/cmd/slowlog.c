// SPDX-License-Identifier: BSD-3-Clause
/* SLOWLOG GET / LEN / RESET / HELP (the log itself is slowlog.c). */
#include <limits.h>

#include "commands.h"
#include "slowlog.h"
#include "util.h"

void cmd_slowlog_get(struct client *c)
{
	long long count = 10;

	if (c->argc > 3) {
		reply_errorf(c,
			     "unknown subcommand or wrong number of arguments for '%.128s'. Try "
			     "SLOWLOG HELP.",
			     c->argv[1].p);
		return;
	}
	/* As Redis: anything but an integer >= -1 gets the same message. */
	if (c->argc == 3 &&
	    (!str_to_ll(c->argv[2].p, c->argv[2].len, &count) || count < -1 || count > LONG_MAX)) {
		reply_error(c, "count should be greater than or equal to -1");
		return;
	}
	slowlog_reply(c, count);
}

void cmd_slowlog_len(struct client *c)
{
	reply_int(c, (long long)slowlog_len());
}

void cmd_slowlog_reset(struct client *c)
{
	slowlog_reset();
	reply_ok(c);
}

void cmd_slowlog_help(struct client *c)
{
	static const char *const help[] = {
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, help);
}
