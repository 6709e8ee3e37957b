// SPDX-License-Identifier: BSD-3-Clause
/* FASTPATH STATS / ATTACH / DETACH: what xkvctl uses to steer the fast path. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "fastpath.h"
#include "mem.h"

struct fields {
	char *names[64], *values[64];
	int n;
};

static void collect(void *ctx, const char *name, const char *value)
{
	struct fields *f = ctx;

	if (f->n < 64) {
		f->names[f->n] = xstrndup(name, strlen(name));
		f->values[f->n] = xstrndup(value, strlen(value));
		f->n++;
	}
}

void cmd_fastpath_stats(struct client *c)
{
	struct fields f = { .n = 0 };

	fastpath_info(collect, &f);
	reply_map(c, f.n);
	for (int i = 0; i < f.n; i++) {
		reply_bulk_cstr(c, f.names[i]);
		reply_bulk_cstr(c, f.values[i]);
		xfree(f.names[i]);
		xfree(f.values[i]);
	}
}

void cmd_fastpath_attach(struct client *c)
{
	char why[256], ifaces[512];
	size_t n = 0;

	if (c->argc == 2) {
		snprintf(ifaces, sizeof(ifaces), "%s", config.fastpath_interfaces);
	} else {
		ifaces[0] = '\0';
		for (int i = 2; i < c->argc && n < sizeof(ifaces); i++)
			n += (size_t)snprintf(ifaces + n, sizeof(ifaces) - n, "%s%.*s",
					      i > 2 ? " " : "", (int)c->argv[i].len, c->argv[i].p);
	}
	if (fastpath_attach(ifaces, why, sizeof(why)) < 0)
		reply_errorf(c, "fastpath: %s", why);
	else
		reply_ok(c);
}

void cmd_fastpath_detach(struct client *c)
{
	if (!fastpath_loaded()) {
		reply_error(c, "fastpath: the fast path is not loaded");
		return;
	}
	fastpath_detach();
	reply_ok(c);
}
