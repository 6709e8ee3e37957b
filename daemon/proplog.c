// SPDX-License-Identifier: BSD-3-Clause
/* The propagation log (proplog.h): a consumer through propagate.h, as AOF
 * will be one. Its writes run under the propagation lock, in stream order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "propagate.h"
#include "proplog.h"

static FILE *out;

static void proplog_write(void *arg, int argc, const struct arg *argv)
{
	FILE *f = arg;

	fprintf(f, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		fprintf(f, "$%zu\r\n", argv[i].len);
		fwrite(argv[i].p, 1, argv[i].len, f);
		fputs("\r\n", f);
	}
}

int proplog_start_from_env(void)
{
	const char *path = getenv("XKV_DEBUG_PROPAGATION_LOG");
	int err;

	if (!path || !*path)
		return 0;
	out = fopen(path, "w");
	if (!out) {
		err = -errno;
		log_warning("propagation log %s: %s", path, strerror(errno));
		return err;
	}
	err = propagate_consumer_add(proplog_write, out, true);
	if (err < 0) {
		fclose(out);
		out = NULL;
		return err;
	}
	log_notice("propagation log: %s (a debugging aid)", path);
	return 0;
}

void proplog_stop(void)
{
	if (out)
		fclose(out);
	out = NULL;
}
