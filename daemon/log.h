/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log: Redis-style log lines, "pid:M dd Mon yyyy hh:mm:ss.mmm * message".
 *
 * Safe from any thread: each line is formatted into a local buffer and written
 * with one write(2), so lines from different workers never interleave.
 */
#ifndef XKV_LOG_H
#define XKV_LOG_H

enum log_level { LOG_DEBUG, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING, LOG_NOTHING };

/* Opens path for appending ("" or NULL: standard output). Returns 0 or -errno. */
int log_open(const char *path);
void log_set_level(int level);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_verbose(...) log_msg(LOG_VERBOSE, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)

/* Logs file:line and the message, then aborts. */
#define xkv_assert(cond)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			xkv_assert_fail(#cond, __FILE__, __LINE__);                                \
	} while (0)
void xkv_assert_fail(const char *what, const char *file, int line) __attribute__((noreturn));

#endif
