/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * command_meta: what COMMAND INFO reports beyond the command table's rows:
 * ACL categories, tips and key specs, as Redis 7 describes them. The rows are
 * cmd/meta_redis.def (generated from the reference redis-server) and
 * cmd/meta_xkv.def (commands the reference lacks, written by hand):
 *
 *   META("zunionstore", "@write @sortedset @slow", "tips",
 *        KS("OW update", INDEX(1), RANGE(0, 1, 0), NULL),
 *        KS("RO access", INDEX(2), KEYNUM(0, 1, 1), NULL))
 *
 * Key specs also answer COMMAND GETKEYS, including the keys a numkeys
 * argument counts (Redis's "movablekeys").
 */
#ifndef XKV_COMMAND_META_H
#define XKV_COMMAND_META_H

#include <stdbool.h>

#include "client.h"

enum key_begin { KEY_BEGIN_UNKNOWN, KEY_BEGIN_INDEX, KEY_BEGIN_KEYWORD };
enum key_find { KEY_FIND_UNKNOWN, KEY_FIND_RANGE, KEY_FIND_KEYNUM };

struct key_spec {
	const char *flags; /* space-separated, as COMMAND INFO lists them */
	const char *notes; /* or NULL */
	enum key_begin begin;
	int index;	     /* KEY_BEGIN_INDEX: the argument; KEYWORD: where the search starts */
	const char *keyword; /* KEY_BEGIN_KEYWORD */
	enum key_find find;
	/* RANGE: lastkey, keystep, limit. KEYNUM: keynumidx, firstkey, keystep. */
	int a, b, c;
};

struct command_meta {
	const char *name;
	const char *acl; /* space-separated categories, in Redis's order */
	const char *tips;
	const struct key_spec *specs; /* terminated by a spec with NULL flags */
};

/* The metadata of the command (or "container|sub") with this name, or NULL. */
const struct command_meta *command_meta_find(const char *name);
int command_meta_nspecs(const struct command_meta *meta);
/* True if some key is not at a fixed position (COMMAND INFO's movablekeys). */
bool command_meta_movable(const struct command_meta *meta);

/* Fills keys[] with the indexes of the key arguments of argv (argv[0] the
 * command name) as the key specs of command `name` find them, at most max,
 * and which[] (if not NULL) with the spec that found each; returns the count,
 * or -EINVAL when the arguments do not fit the specs. */
int command_meta_keys(const char *name, const struct key_spec *specs, int argc,
		      const struct arg *argv, int *keys, const struct key_spec **which, int max);
/* The flags (COMMAND GETKEYSANDFLAGS) of a key spec s found in argv: its own,
 * unless it says variable_flags (SET, BITFIELD), whose arguments decide. */
const char *command_meta_key_flags(const char *name, const struct key_spec *s, int argc,
				   const struct arg *argv);
/* True if the command will also touch keys named by the content of others,
 * which no argument names (SORT's BY and GET patterns): whoever locks for it
 * must take its whole database. */
bool command_meta_keys_from_values(const char *name, int argc, const struct arg *argv);

#endif
