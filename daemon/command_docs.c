// SPDX-License-Identifier: BSD-3-Clause
/* COMMAND DOCS: the generated docs table and the reply built from it. */
#include <stdlib.h>
#include <string.h>

#include "command_docs.h"
#include "reply.h"

#define DOC_ARG(nm, ty, disp, ksi, tok, summ, snc, depr, fl, sub, nsub)                            \
	{                                                                                          \
		.name = (nm), .type = (ty), .display_text = (disp), .key_spec_index = (ksi),       \
		.token = (tok), .summary = (summ), .since = (snc), .deprecated_since = (depr),     \
		.flags = (fl), .args = (sub), .nargs = (nsub)                                      \
	}
#define DOC(nm, summ, snc, grp, cplx, dfl, depr, repl, hist, nhist, a, na)                         \
	{                                                                                          \
		.name = (nm), .summary = (summ), .since = (snc), .group = (grp),                   \
		.complexity = (cplx), .doc_flags = (dfl), .deprecated_since = (depr),              \
		.replaced_by = (repl), .history = (hist), .nhistory = (nhist), .args = (a),        \
		.nargs = (na)                                                                      \
	}

#include "cmd/docs_redis.def"

#define NDOCS (sizeof(docs_redis) / sizeof(docs_redis[0]))

static int by_name(const void *key, const void *row)
{
	return strcmp(key, ((const struct command_doc *)row)->name);
}

const struct command_doc *command_docs_find(const char *name)
{
	/* The generator sorts the rows by name (strcmp order). */
	return bsearch(name, docs_redis, NDOCS, sizeof(docs_redis[0]), by_name);
}

static void reply_pair(struct client *c, const char *key, const char *value)
{
	reply_bulk_cstr(c, key);
	reply_bulk_cstr(c, value);
}

static void reply_flag_set(struct client *c, unsigned flags, const char *const names[],
			   unsigned nnames)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nnames; i++)
		n += !!(flags & (1u << i));
	reply_set(c, n);
	for (unsigned i = 0; i < nnames; i++)
		if (flags & (1u << i))
			reply_status(c, names[i]);
}

/* Redis's addReplyCommandArgList: the same fields, in the same order. */
static void reply_args(struct client *c, const struct command_doc_arg *args, unsigned n)
{
	static const char *const flag_names[] = { "optional", "multiple", "multiple_token" };

	reply_array(c, n);
	for (unsigned i = 0; i < n; i++) {
		const struct command_doc_arg *a = &args[i];
		bool nested = a->nargs != 0;

		reply_map(c, 2 + !!a->display_text + (a->key_spec_index >= 0) + !!a->token +
				     !!a->summary + !!a->since + !!a->deprecated_since +
				     !!a->flags + nested);
		reply_pair(c, "name", a->name);
		reply_pair(c, "type", a->type);
		if (a->display_text)
			reply_pair(c, "display_text", a->display_text);
		if (a->key_spec_index >= 0) {
			reply_bulk_cstr(c, "key_spec_index");
			reply_int(c, a->key_spec_index);
		}
		if (a->token)
			reply_pair(c, "token", a->token);
		if (a->summary)
			reply_pair(c, "summary", a->summary);
		if (a->since)
			reply_pair(c, "since", a->since);
		if (a->deprecated_since)
			reply_pair(c, "deprecated_since", a->deprecated_since);
		if (a->flags) {
			reply_bulk_cstr(c, "flags");
			reply_flag_set(c, a->flags, flag_names, 3);
		}
		if (nested) {
			reply_bulk_cstr(c, "arguments");
			reply_args(c, a->args, a->nargs);
		}
	}
}

/* Redis's addReplyCommandDocs, for a command the generated table has. */
static void reply_doc(struct client *c, const struct command_doc *d, bool subs)
{
	static const char *const flag_names[] = { "deprecated", "syscmd" };
	/* Redis names the module of a module's command; vector sets are the
	 * only commands of group "module" here. */
	bool module = !strcmp(d->group, "module");

	reply_map(c, 1 + module + !!d->summary + !!d->since + !!d->complexity + !!d->doc_flags +
			     !!d->deprecated_since + !!d->replaced_by + !!d->nhistory + !!d->nargs +
			     subs);
	if (d->summary)
		reply_pair(c, "summary", d->summary);
	if (d->since)
		reply_pair(c, "since", d->since);
	reply_pair(c, "group", d->group);
	if (module)
		reply_pair(c, "module", "vectorset");
	if (d->complexity)
		reply_pair(c, "complexity", d->complexity);
	if (d->doc_flags) {
		reply_bulk_cstr(c, "doc_flags");
		reply_flag_set(c, d->doc_flags, flag_names, 2);
	}
	if (d->deprecated_since)
		reply_pair(c, "deprecated_since", d->deprecated_since);
	if (d->replaced_by)
		reply_pair(c, "replaced_by", d->replaced_by);
	if (d->nhistory) {
		reply_bulk_cstr(c, "history");
		reply_set(c, d->nhistory);
		for (unsigned i = 0; i < d->nhistory; i++) {
			reply_array(c, 2);
			reply_bulk_cstr(c, d->history[2 * i]);
			reply_bulk_cstr(c, d->history[2 * i + 1]);
		}
	}
	if (d->nargs) {
		reply_bulk_cstr(c, "arguments");
		reply_args(c, d->args, d->nargs);
	}
}

void command_docs_reply(struct client *c, const struct command *cmd)
{
	const struct command_doc *d = command_docs_find(cmd->name);

	if (d) {
		reply_doc(c, d, cmd->nsubs != 0);
	} else {
		/* Ours alone: what the command table knows. */
		reply_map(c, 3 + (cmd->nsubs != 0));
		reply_pair(c, "summary", cmd->summary);
		reply_pair(c, "since", cmd->since);
		reply_pair(c, "group", cmd->group);
	}
	if (cmd->nsubs) {
		reply_bulk_cstr(c, "subcommands");
		reply_map(c, cmd->nsubs);
		for (unsigned i = 0; i < cmd->nsubs; i++) {
			reply_bulk_cstr(c, cmd->subs[i]->name);
			command_docs_reply(c, cmd->subs[i]);
		}
	}
}
