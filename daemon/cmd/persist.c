// SPDX-License-Identifier: BSD-3-Clause
/*
 * persist: SAVE, BGSAVE and LASTSAVE over rdbfile.h. The rows take no key
 * locks: SAVE and BGSAVE take every shard lock themselves (rdbfile.c).
 */
#include <errno.h>

#include "commands.h"
#include "rdbfile.h"

#define ERR_BG_RUNNING "Background save already in progress"

void cmd_save(struct client *c)
{
	int rc = rdbfile_save();

	if (rc == -EBUSY)
		reply_error(c, ERR_BG_RUNNING);
	else if (rc)
		reply_error(c, "-ERR");
	else
		reply_ok(c);
}

/* BGSAVE [SCHEDULE]: xkvd has no other kind of child, so SCHEDULE never has
 * to wait for one and starts the save at once, as Redis does then. */
void cmd_bgsave(struct client *c)
{
	int rc;

	if (c->argc > 2 || (c->argc == 2 && !arg_is(c, 1, "schedule"))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	rc = rdbfile_bgsave();
	if (rc == -EBUSY)
		reply_error(c, ERR_BG_RUNNING);
	else if (rc)
		reply_error(c, "-ERR");
	else
		reply_status(c, "Background saving started");
}

void cmd_lastsave(struct client *c)
{
	reply_int(c, rdbfile_lastsave());
}
