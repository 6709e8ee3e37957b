/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proplog: a debugging consumer of the propagation stream (propagate.h) that
 * appends every command to a file in RESP, as AOF will. It is switched on
 * only by the environment variable XKV_DEBUG_PROPAGATION_LOG=<path> at
 * start-up; tests replay the file into a second server and compare the two.
 */
#ifndef XKV_PROPLOG_H
#define XKV_PROPLOG_H

/* Starts logging if the environment asks for it; 0, or -errno. */
int proplog_start_from_env(void);
/* Flushes and closes the log (at exit). */
void proplog_stop(void);

#endif
