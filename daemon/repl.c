// SPDX-License-Identifier: BSD-3-Clause
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "repl.h"
#include "util.h"

static pthread_mutex_t repl_lock = PTHREAD_MUTEX_INITIALIZER;
static char replid[REPL_ID_LEN + 1];  /* "" until first read */
static char replid2[REPL_ID_LEN + 1]; /* zeros, set with replid */

/* Caller holds repl_lock. */
static void new_id(void)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[REPL_ID_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(mono_us() >> (8 * (i % 8)));
	for (size_t i = 0; i < sizeof(raw); i++) {
		replid[2 * i] = hex[raw[i] >> 4];
		replid[2 * i + 1] = hex[raw[i] & 15];
	}
	replid[REPL_ID_LEN] = '\0';
	memset(replid2, '0', REPL_ID_LEN);
	replid2[REPL_ID_LEN] = '\0';
}

void repl_ids(char id[REPL_ID_LEN + 1], char id2[REPL_ID_LEN + 1])
{
	pthread_mutex_lock(&repl_lock);
	if (!replid[0])
		new_id();
	memcpy(id, replid, REPL_ID_LEN + 1);
	memcpy(id2, replid2, REPL_ID_LEN + 1);
	pthread_mutex_unlock(&repl_lock);
}

void repl_change_id(void)
{
	pthread_mutex_lock(&repl_lock);
	new_id();
	pthread_mutex_unlock(&repl_lock);
}

bool repl_good_replicas(void)
{
	return !config.min_replicas_to_write || !config.min_replicas_max_lag;
}
