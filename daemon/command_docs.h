/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * command_docs: what COMMAND DOCS reports of a command, as Redis 8.8 does:
 * summary, since, group, complexity, doc flags, deprecation, history and the
 * argument tree that redis-cli turns into syntax hints. The rows are
 * cmd/docs_redis.def, generated from the reference redis-server by
 * tools/gen-command-docs.py (`make docs`); a command the reference lacks
 * (FASTPATH) is described from its command table row alone.
 */
#ifndef XKV_COMMAND_DOCS_H
#define XKV_COMMAND_DOCS_H

#include "client.h"
#include "commands.h"

enum {
	DOC_OPTIONAL = 1 << 0,
	DOC_MULTIPLE = 1 << 1,
	DOC_MULTIPLE_TOKEN = 1 << 2,
};

enum {
	DOC_DEPRECATED = 1 << 0,
	DOC_SYSCMD = 1 << 1,
};

/* One argument; a "oneof" or "block" has its own arguments and no
 * display_text. Absent strings are NULL, an absent key_spec_index -1. */
struct command_doc_arg {
	const char *name, *type, *display_text, *token, *summary, *since, *deprecated_since;
	int key_spec_index;
	unsigned flags; /* DOC_OPTIONAL ... */
	unsigned nargs;
	const struct command_doc_arg *args;
};

struct command_doc {
	const char *name; /* "container|sub" for a subcommand */
	const char *summary, *since, *group, *complexity, *deprecated_since, *replaced_by;
	unsigned doc_flags; /* DOC_DEPRECATED, DOC_SYSCMD */
	unsigned nhistory;
	const char *const *history; /* nhistory pairs: version, change */
	unsigned nargs;
	const struct command_doc_arg *args;
};

/* The docs of the command (or "container|sub") with this name, or NULL. */
const struct command_doc *command_docs_find(const char *name);
/* COMMAND DOCS's map for cmd, its subcommands' docs nested. */
void command_docs_reply(struct client *c, const struct command *cmd);

#endif
