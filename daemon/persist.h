/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * persist: the policy over the RDB snapshots (rdbfile.h) and the AOF
 * (aof.h), as Redis's serverCron and prepareForShutdown apply it: save
 * points starting a BGSAVE, automatic AOF rewrites, refusing writes after a
 * failed save (stop-writes-on-bgsave-error) or AOF write, and the final save
 * at shutdown.
 */
#ifndef XKV_PERSIST_H
#define XKV_PERSIST_H

#include <stdbool.h>

/* SHUTDOWN's options; the same bits as shutdown-on-sigterm's values. */
enum persist_shutdown_flags {
	PERSIST_SHUTDOWN_SAVE = 1,
	PERSIST_SHUTDOWN_NOSAVE = 2,
	PERSIST_SHUTDOWN_NOW = 4,
	PERSIST_SHUTDOWN_FORCE = 8,
};

/* From worker 0's cron: starts a BGSAVE when a save point is reached, an
 * AOF rewrite when the file grew enough. Takes no lock the caller holds. */
void persist_cron(void);

/* Redis's writeCommandsDeniedByDiskError: the MISCONF error (a reply_error
 * argument, valid until the next call on this thread) that refuses writes
 * now, or NULL. */
const char *persist_write_denied(void);

/* Redis's finishShutdown: stops children, flushes the AOF, saves when save
 * points exist (unless NOSAVE) or SAVE asks, then asks the server to stop,
 * all under every shard lock so no write lands after the final image.
 * 0 (stopping), or -1 when a save failed without FORCE (logged; the server
 * goes on). Takes every shard lock: the caller holds none. */
int persist_shutdown(unsigned flags);

/* BGSAVE SCHEDULE while an AOF rewrite runs: the cron starts it after. */
void persist_schedule_bgsave(void);

/* Are save points configured (save is not "")? */
bool persist_has_save_points(void);

#endif
