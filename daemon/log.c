// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int log_fd = STDOUT_FILENO;
static int log_level = LOG_NOTICE;

int log_open(const char *path)
{
	int fd;

	if (!path || !path[0])
		return 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	log_fd = fd;
	return 0;
}

void log_set_level(int level)
{
	log_level = level;
}

void log_msg(int level, const char *fmt, ...)
{
	static const char marks[] = ".-*#";
	char line[1024];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int n;

	if (level < log_level || level > LOG_WARNING)
		return;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%d:M ", (int)getpid());
	n += strftime(line + n, sizeof(line) - n, "%d %b %Y %H:%M:%S", &tm);
	n += snprintf(line + n, sizeof(line) - n, ".%03d %c ", (int)(tv.tv_usec / 1000),
		      marks[level]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line keeps lines from different threads whole. */
	if (write(log_fd, line, n) < 0)
		return;
}

void xkv_assert_fail(const char *what, const char *file, int line)
{
	log_warning("ASSERTION FAILED %s:%d: %s", file, line, what);
	abort();
}
