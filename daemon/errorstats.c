// SPDX-License-Identifier: BSD-3-Clause
/*
 * errorstats: a small table of error codes and how many replies carried
 * each.
 *
 * Locking: errorstats_lock protects the table; it is a leaf, taken from
 * reply_error() with whatever locks the caller holds, and takes nothing.
 * Error replies are rare enough for one lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorstats.h"
#include "mem.h"

/* As Redis: past this many distinct codes, new ones are not tracked. */
#define ERRORSTATS_MAX 128
#define ERRORSTATS_CODE_LEN 64

struct error_code {
	char code[ERRORSTATS_CODE_LEN];
	unsigned long long count;
};

static pthread_mutex_t errorstats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct error_code codes[ERRORSTATS_MAX];
static int ncodes;

void errorstats_count(const char *msg)
{
	char code[ERRORSTATS_CODE_LEN] = "ERR";
	size_t len;

	if (msg[0] == '-') {
		len = strcspn(msg + 1, " \r\n");
		if (len >= sizeof(code))
			len = sizeof(code) - 1;
		memcpy(code, msg + 1, len);
		code[len] = '\0';
	}
	pthread_mutex_lock(&errorstats_lock);
	for (int i = 0; i < ncodes; i++) {
		if (!strcmp(codes[i].code, code)) {
			codes[i].count++;
			goto out;
		}
	}
	if (ncodes < ERRORSTATS_MAX) {
		memcpy(codes[ncodes].code, code, sizeof(code));
		codes[ncodes++].count = 1;
	}
out:
	pthread_mutex_unlock(&errorstats_lock);
}

static int by_code(const void *a, const void *b)
{
	return strcmp(((const struct error_code *)a)->code, ((const struct error_code *)b)->code);
}

void errorstats_info(errorstats_visit_fn *fn, void *ctx)
{
	struct error_code *copy = xmalloc(sizeof(codes));
	int n;

	pthread_mutex_lock(&errorstats_lock);
	n = ncodes;
	memcpy(copy, codes, sizeof(codes[0]) * (size_t)n);
	pthread_mutex_unlock(&errorstats_lock);
	/* Sorted by code, as Redis lists them. */
	qsort(copy, (size_t)n, sizeof(*copy), by_code);
	for (int i = 0; i < n; i++) {
		char name[ERRORSTATS_CODE_LEN + 16], value[32];

		snprintf(name, sizeof(name), "errorstat_%s", copy[i].code);
		snprintf(value, sizeof(value), "count=%llu", copy[i].count);
		fn(ctx, name, value);
	}
	xfree(copy);
}

void errorstats_reset(void)
{
	pthread_mutex_lock(&errorstats_lock);
	ncodes = 0;
	pthread_mutex_unlock(&errorstats_lock);
}
