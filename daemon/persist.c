// SPDX-License-Identifier: BSD-3-Clause
/*
 * persist: save points, MISCONF and the final save (persist.h).
 *
 * Threads: persist_cron runs on worker 0 only; persist_shutdown on whichever
 * thread asks (a worker running SHUTDOWN, the main thread on a signal),
 * under every shard lock, so two never overlap. Nothing here keeps state of
 * its own beyond what rdbfile and aof publish.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aof.h"
#include "config.h"
#include "log.h"
#include "persist.h"
#include "rdbfile.h"
#include "repl.h"
#include "store.h"
#include "util.h"
#include "worker.h"

/* Redis's CONFIG_BGSAVE_RETRY_DELAY: after a failed BGSAVE, the save points
 * try again only this many seconds later. */
#define PERSIST_RETRY_DELAY 5

bool persist_has_save_points(void)
{
	const char *s = __atomic_load_n(&config.save, __ATOMIC_ACQUIRE);

	return s && s[0];
}

/* The save points, "seconds changes ..." as config.c normalised them. */
static void check_save_points(void)
{
	const char *s = __atomic_load_n(&config.save, __ATOMIC_ACQUIRE);
	struct rdbfile_stats rs;
	int64_t now = time(NULL);
	uint64_t dirty;
	char *end;

	if (!s || !s[0] || rdbfile_bgsave_running() || aof_rewrite_running())
		return;
	rdbfile_stats(&rs);
	dirty = store_changes() - rs.changes_at_save;
	while (*s) {
		long long secs = strtoll(s, &end, 10), changes;

		if (end == s)
			return;
		s = end;
		changes = strtoll(s, &end, 10);
		if (end == s)
			return;
		s = end;
		if (dirty >= (uint64_t)changes && now - rs.lastsave > secs &&
		    (now - rs.last_bgsave_try > PERSIST_RETRY_DELAY || rs.last_bgsave_ok)) {
			log_notice("%lld changes in %lld seconds. Saving...", changes, secs);
			rdbfile_bgsave();
			return;
		}
	}
}

/* Set by a worker, taken by worker 0's cron. */
static bool bgsave_scheduled;

void persist_schedule_bgsave(void)
{
	__atomic_store_n(&bgsave_scheduled, true, __ATOMIC_RELAXED);
}

void persist_cron(void)
{
	/* A replica loading its master's file from the socket lets go of the
	 * shard locks while it waits for the master: no save may fork or
	 * write what is half loaded (Redis runs no cron while it loads). */
	if (repl_loading())
		return;
	if (__atomic_load_n(&bgsave_scheduled, __ATOMIC_RELAXED) && !aof_rewrite_running() &&
	    !rdbfile_bgsave_running()) {
		__atomic_store_n(&bgsave_scheduled, false, __ATOMIC_RELAXED);
		rdbfile_bgsave();
	}
	check_save_points();
	aof_cron();
}

const char *persist_write_denied(void)
{
	static __thread char msg[160];
	int err;

	if (config.stop_writes_on_bgsave_error && rdbfile_bgsave_failed() &&
	    persist_has_save_points())
		return "-MISCONF Redis is configured to save RDB snapshots, but it's currently "
		       "unable to persist to disk. Commands that may modify the data set are "
		       "disabled, because this instance is configured to report errors during "
		       "writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). "
		       "Please check the Redis logs for details about the RDB error.";
	err = aof_write_error();
	if (!err)
		return NULL;
	snprintf(msg, sizeof(msg), "-MISCONF Errors writing to the AOF file: %s", strerror(err));
	return msg;
}

int persist_shutdown(unsigned flags)
{
	bool force = flags & PERSIST_SHUTDOWN_FORCE;

	store_lock_all();
	rdbfile_kill_child();
	if (aof_shutdown(force) < 0)
		goto error;
	/* As Redis: nothing is saved while loading (half a file is there). */
	if (repl_loading())
		log_warning("A replica's load of its master's file is running: not saving.");
	else if ((persist_has_save_points() && !(flags & PERSIST_SHUTDOWN_NOSAVE)) ||
		 (flags & PERSIST_SHUTDOWN_SAVE)) {
		log_notice("Saving the final RDB snapshot before exiting.");
		if (do_rdbfile_save() < 0) {
			if (!force) {
				log_warning("Error trying to save the DB, can't exit.");
				goto error;
			}
			log_warning("Error trying to save the DB. Exit anyway.");
		}
	}
	/* Still under every lock: a command waiting for one finds the server
	 * stopping and runs nothing (command_call), so no write is acknowledged
	 * after the image was taken. */
	server_request_shutdown();
	store_unlock_all();
	return 0;
error:
	store_unlock_all();
	log_warning("Errors trying to shut down the server. Check the logs for more information.");
	return -1;
}
