/* SPDX-License-Identifier: BSD-3-Clause */
/* errorstats: error replies counted by their code (INFO errorstats). */
#ifndef XKV_ERRORSTATS_H
#define XKV_ERRORSTATS_H

/* Counts an error reply: msg as given to reply_error() ("-CODE text", or a
 * message that gets "-ERR " in front). */
void errorstats_count(const char *msg);
/* Calls fn(ctx, "errorstat_<CODE>", "count=N") per code seen, sorted by code. */
typedef void errorstats_visit_fn(void *ctx, const char *name, const char *value);
void errorstats_info(errorstats_visit_fn *fn, void *ctx);
/* CONFIG RESETSTAT. */
void errorstats_reset(void);

#endif
