// SPDX-License-Identifier: BSD-3-Clause
/*
 * persist: SAVE, BGSAVE, BGREWRITEAOF and LASTSAVE over rdbfile.h and aof.h.
 * The rows take no key locks: the saves take every shard lock themselves.
 */
#include <errno.h>

#include "aof.h"
#include "commands.h"
#include "persist.h"
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

/* BGSAVE [SCHEDULE]: while an AOF rewrite runs, SCHEDULE has the save start
 * when it ends (persist_cron); without it the answer is Redis's error. */
void cmd_bgsave(struct client *c)
{
	bool schedule = c->argc == 2;
	int rc;

	if (c->argc > 2 || (c->argc == 2 && !arg_is(c, 1, "schedule"))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (aof_rewrite_running() && !rdbfile_bgsave_running()) {
		if (schedule) {
			persist_schedule_bgsave();
			reply_status(c, "Background saving scheduled");
		} else {
			reply_error(c, "Another child process is active (AOF?): can't BGSAVE right "
				       "now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE "
				       "whenever possible.");
		}
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

void cmd_bgrewriteaof(struct client *c)
{
	int rc = aof_rewrite();

	if (rc == -EBUSY)
		reply_error(c, "Background append only file rewriting already in progress");
	else if (rc == 1)
		reply_status(c, "Background append only file rewriting scheduled");
	else if (rc < 0)
		reply_error(c, "Can't execute an AOF background rewriting. Please check the server "
			       "logs for more information.");
	else
		reply_status(c, "Background append only file rewriting started");
}

void cmd_lastsave(struct client *c)
{
	reply_int(c, rdbfile_lastsave());
}
