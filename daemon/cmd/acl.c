// SPDX-License-Identifier: BSD-3-Clause
/*
 * ACL: SETUSER GETUSER DELUSER LIST USERS WHOAMI CAT GENPASS DRYRUN LOG LOAD
 * SAVE HELP, with Redis 8.8's replies and errors. The users table and its
 * lock are acl_users.c's; the rule language is acl.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "acl_users.h"
#include "commands.h"
#include "config.h"
#include "mem.h"
#include "monitor.h"
#include "util.h"

static void reply_acl_syntax(struct client *c)
{
	reply_errorf(c,
		     "unknown subcommand or wrong number of arguments for '%.128s'. Try ACL HELP.",
		     c->argv[1].p);
}

/* Redis's ACLMergeSelectorArguments: "(a" "b)" become "(a b)". Returns the
 * merged rules (each owned), or NULL with *bad the argument that opened an
 * unclosed selector. */
static char **merge_selectors(const struct arg *argv, int argc, int *n, size_t **lens, int *bad)
{
	char **out = xcalloc((size_t)argc + 1, sizeof(*out));
	size_t *ol = xcalloc((size_t)argc + 1, sizeof(*ol));
	int open = -1;

	*n = 0;
	for (int j = 0; j < argc; j++) {
		const struct arg *a = &argv[j];

		if (open < 0 && a->len && a->p[0] == '(' && a->p[a->len - 1] != ')') {
			out[*n] = xstrndup(a->p, a->len);
			ol[*n] = a->len;
			open = j;
			continue;
		}
		if (open >= 0) {
			out[*n] = xrealloc(out[*n], ol[*n] + a->len + 2);
			out[*n][ol[*n]] = ' ';
			memcpy(out[*n] + ol[*n] + 1, a->p, a->len);
			ol[*n] += a->len + 1;
			out[*n][ol[*n]] = '\0';
			if (a->len && a->p[a->len - 1] == ')') {
				open = -1;
				(*n)++;
			}
			continue;
		}
		out[*n] = xstrndup(a->p, a->len);
		ol[*n] = a->len;
		(*n)++;
	}
	if (open >= 0) {
		for (int i = 0; i <= *n; i++)
			xfree(out[i]);
		xfree(out);
		xfree(ol);
		*bad = open;
		return NULL;
	}
	*lens = ol;
	return out;
}

static bool has_spaces(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r' || p[i] == '\v' ||
		    p[i] == '\f' || p[i] == '\0')
			return true;
	return false;
}

void cmd_acl_setuser(struct client *c)
{
	const struct arg *name = &c->argv[2];
	bool allchannels = config.acl_pubsub_default == 1;
	struct acl_user *u, *tmp;
	size_t *lens = NULL;
	char **rules;
	int n, bad = 0;

	for (int j = 2; j < c->argc; j++)
		monitor_redact(c, j);
	if (has_spaces(name->p, name->len)) {
		reply_error(c, "Usernames can't contain spaces or null characters");
		return;
	}
	rules = merge_selectors(c->argv + 3, c->argc - 3, &n, &lens, &bad);
	if (!rules) {
		reply_errorf(c, "Unmatched parenthesis in acl selector starting at '%s'.",
			     c->argv[3 + bad].p);
		return;
	}
	acl_lock_write();
	u = acl_users_find(name->p, name->len);
	tmp = u ? acl_user_dup(u) : acl_user_new(name->p, name->len, allchannels);
	for (int j = 0; j < n; j++) {
		int err = acl_user_set(tmp, rules[j], lens[j], allchannels);

		if (err) {
			acl_unlock();
			reply_errorf(c, "Error in ACL SETUSER modifier '%s': %s", rules[j],
				     acl_strerror(err));
			acl_user_free(tmp);
			goto out;
		}
	}
	if (u) {
		acl_user_replace(u, tmp);
		acl_user_changed(c, u);
	} else {
		acl_users_add(tmp);
		u = tmp;
	}
	acl_unlock();
	if (c->user == u)
		acl_recheck_self(c);
	reply_ok(c);
out:
	for (int j = 0; j < n; j++)
		xfree(rules[j]);
	xfree(rules);
	xfree(lens);
}

void cmd_acl_deluser(struct client *c)
{
	long long deleted = 0;

	for (int j = 2; j < c->argc; j++)
		monitor_redact(c, j);
	for (int j = 2; j < c->argc; j++) {
		if (c->argv[j].len == 7 && !memcmp(c->argv[j].p, "default", 7)) {
			reply_error(c, "The 'default' user cannot be removed");
			return;
		}
	}
	acl_lock_write();
	for (int j = 2; j < c->argc; j++)
		deleted += acl_users_delete(c, c->argv[j].p, c->argv[j].len);
	acl_unlock();
	reply_int(c, deleted);
}

static const char *const user_flags[] = { "on", "off", "nopass", "skip-sanitize-payload",
					  "sanitize-payload" };
static const unsigned user_flag_bits[] = { ACL_USER_ON, ACL_USER_OFF, ACL_USER_NOPASS,
					   ACL_USER_SKIP_SANITIZE, ACL_USER_SANITIZE };

/* "commands", "keys", "channels" of one selector (Redis's
 * aclAddReplySelectorDescription). */
static void reply_selector(struct client *c, const struct acl_selector *s)
{
	static const char *const prefix[] = { "", "%R~", "%W~", "~" };
	char buf[4096];
	size_t len = acl_selector_describe_commands(s, buf, sizeof(buf));
	char *big = NULL;
	struct {
		char *p;
		size_t len;
	} out = { NULL, 0 };

	if (len >= sizeof(buf)) {
		big = xmalloc(len + 1);
		acl_selector_describe_commands(s, big, len + 1);
	}
	reply_bulk_cstr(c, "commands");
	reply_bulk(c, big ? big : buf, len);
	xfree(big);
	reply_bulk_cstr(c, "keys");
	if (s->flags & ACL_SEL_ALLKEYS) {
		reply_bulk(c, "~*", 2);
	} else {
		for (size_t i = 0; i < s->nkeys; i++) {
			const char *pre = prefix[s->keys[i].perm & ACL_PERM_ALL];
			size_t pl = strlen(pre);

			out.p = xrealloc(out.p, out.len + pl + s->keys[i].len + 2);
			if (i)
				out.p[out.len++] = ' ';
			memcpy(out.p + out.len, pre, pl);
			memcpy(out.p + out.len + pl, s->keys[i].pat, s->keys[i].len);
			out.len += pl + s->keys[i].len;
		}
		reply_bulk(c, out.p ? out.p : "", out.len);
		out.len = 0;
	}
	reply_bulk_cstr(c, "channels");
	if (s->flags & ACL_SEL_ALLCHANNELS) {
		reply_bulk(c, "&*", 2);
	} else {
		for (size_t i = 0; i < s->nchans; i++) {
			out.p = xrealloc(out.p, out.len + s->chans[i].len + 3);
			if (i)
				out.p[out.len++] = ' ';
			out.p[out.len++] = '&';
			memcpy(out.p + out.len, s->chans[i].pat, s->chans[i].len);
			out.len += s->chans[i].len;
		}
		reply_bulk(c, out.p ? out.p : "", out.len);
	}
	xfree(out.p);
}

void cmd_acl_getuser(struct client *c)
{
	struct acl_user *u;
	int nflags = 0;

	monitor_redact(c, 2);
	acl_lock_read();
	u = acl_users_find(c->argv[2].p, c->argv[2].len);
	if (!u) {
		acl_unlock();
		reply_null(c);
		return;
	}
	reply_map(c, 6);
	reply_bulk_cstr(c, "flags");
	for (size_t i = 0; i < sizeof(user_flags) / sizeof(user_flags[0]); i++)
		nflags += !!(u->flags & user_flag_bits[i]);
	reply_set(c, nflags);
	for (size_t i = 0; i < sizeof(user_flags) / sizeof(user_flags[0]); i++)
		if (u->flags & user_flag_bits[i])
			reply_bulk_cstr(c, user_flags[i]);
	reply_bulk_cstr(c, "passwords");
	reply_array(c, (long)u->npass);
	for (size_t i = 0; i < u->npass; i++)
		reply_bulk(c, u->pass[i], ACL_HASH_LEN);
	reply_selector(c, &u->sel[0]);
	reply_bulk_cstr(c, "selectors");
	reply_array(c, (long)u->nsel - 1);
	for (size_t i = 1; i < u->nsel; i++) {
		reply_map(c, 3);
		reply_selector(c, &u->sel[i]);
	}
	acl_unlock();
}

/* "user <name> <rules>" as ACL LIST and the ACL file show a user; owned. */
static char *user_line(const struct acl_user *u, size_t *len)
{
	size_t nl = strlen(u->name), dl = acl_user_describe(u, NULL, 0);
	char *p = xmalloc(5 + nl + 1 + dl + 1);

	memcpy(p, "user ", 5);
	memcpy(p + 5, u->name, nl);
	p[5 + nl] = ' ';
	acl_user_describe(u, p + 6 + nl, dl + 1);
	*len = 6 + nl + dl;
	return p;
}

static void reply_users(struct client *c, bool names_only)
{
	struct acl_user **all;
	size_t n;

	acl_lock_read();
	all = acl_users_all(&n);
	reply_array(c, (long)n);
	for (size_t i = 0; i < n; i++) {
		if (names_only) {
			reply_bulk_cstr(c, all[i]->name);
		} else {
			size_t len;
			char *line = user_line(all[i], &len);

			reply_bulk(c, line, len);
			xfree(line);
		}
	}
	acl_unlock();
}

void cmd_acl_list(struct client *c)
{
	reply_users(c, false);
}

void cmd_acl_users(struct client *c)
{
	reply_users(c, true);
}

void cmd_acl_whoami(struct client *c)
{
	if (c->user)
		reply_bulk_cstr(c, c->user->name);
	else
		reply_null(c);
}

#define ERR_NO_ACLFILE                                                                             \
	"This Redis instance is not configured to use an ACL file. You may want to specify users " \
	"via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "  \
	"configuration file set) in order to store users in the Redis configuration."

void cmd_acl_load(struct client *c)
{
	char *err;

	if (!config.aclfile[0]) {
		reply_error(c, ERR_NO_ACLFILE);
		return;
	}
	err = acl_file_load(config.aclfile);
	if (err) {
		reply_error(c, err);
		xfree(err);
		return;
	}
	reply_ok(c);
}

void cmd_acl_save(struct client *c)
{
	if (!config.aclfile[0]) {
		reply_error(c, ERR_NO_ACLFILE);
		return;
	}
	if (acl_file_save(config.aclfile) < 0) {
		reply_error(c,
			    "There was an error trying to save the ACLs. Please check the server "
			    "logs for more information");
		return;
	}
	reply_ok(c);
}

static void reply_category(struct client *c, struct command **cmds, uint64_t flag, long *n)
{
	for (; *cmds; cmds++) {
		if (acl_command_categories(*cmds) & flag) {
			reply_bulk_cstr(c, (*cmds)->name);
			(*n)++;
		}
		if ((*cmds)->subs)
			reply_category(c, (*cmds)->subs, flag, n);
	}
}

static void count_category(struct command **cmds, uint64_t flag, long *n)
{
	for (; *cmds; cmds++) {
		*n += !!(acl_command_categories(*cmds) & flag);
		if ((*cmds)->subs)
			count_category((*cmds)->subs, flag, n);
	}
}

void cmd_acl_cat(struct client *c)
{
	uint64_t flag;
	long n = 0;

	if (c->argc == 2) {
		while (acl_category_names[n])
			n++;
		reply_array(c, n);
		for (long i = 0; i < n; i++)
			reply_bulk_cstr(c, acl_category_names[i]);
		return;
	}
	if (c->argc != 3) {
		reply_acl_syntax(c);
		return;
	}
	flag = acl_category_flag(c->argv[2].p, c->argv[2].len);
	if (!flag) {
		reply_errorf(c, "Unknown category '%.128s'", c->argv[2].p);
		return;
	}
	count_category(command_all(), flag, &n);
	reply_array(c, n);
	n = 0;
	reply_category(c, command_all(), flag, &n);
}

void cmd_acl_genpass(struct client *c)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[512];
	char pass[1024];
	long long bits = 256;
	size_t chars;

	if (c->argc > 3) {
		reply_acl_syntax(c);
		return;
	}
	if (c->argc == 3 && !arg_ll(c, 2, &bits))
		return;
	if (bits <= 0 || bits > 4096) {
		reply_error(c, "ACL GENPASS argument must be the number of bits for the output "
			       "password, a positive number up to 4096");
		return;
	}
	chars = (size_t)(bits + 3) / 4;
	if (getrandom(raw, (chars + 1) / 2, 0) < 0) {
		reply_errorf(c, "Cannot generate a password: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < chars; i++)
		pass[i] = hex[i % 2 ? raw[i / 2] & 15 : raw[i / 2] >> 4];
	reply_bulk(c, pass, chars);
}

void cmd_acl_log(struct client *c)
{
	long long count = 10;

	if (c->argc > 3) {
		reply_acl_syntax(c);
		return;
	}
	if (c->argc == 3) {
		if (arg_is(c, 2, "reset")) {
			acl_log_reset();
			reply_ok(c);
			return;
		}
		if (!str_to_ll(c->argv[2].p, c->argv[2].len, &count)) {
			reply_error(c, ERR_NOT_INT);
			return;
		}
		if (count < 0)
			count = 0;
	}
	acl_log_reply(c, count > LONG_MAX ? LONG_MAX : (long)count);
}

void cmd_acl_dryrun(struct client *c)
{
	const struct command *cmd;
	struct acl_user *u;
	int argc = c->argc - 3, pos = 0, r;
	const struct arg *argv = c->argv + 3;

	acl_lock_read();
	u = acl_users_find(c->argv[2].p, c->argv[2].len);
	if (!u) {
		acl_unlock();
		reply_errorf(c, "User '%s' not found", c->argv[2].p);
		return;
	}
	cmd = command_lookup_argv(argc, argv);
	if (!cmd) {
		acl_unlock();
		reply_errorf(c, "Command '%s' not found", argv[0].p);
		return;
	}
	if ((cmd->arity > 0 && cmd->arity != argc) || argc < -cmd->arity) {
		acl_unlock();
		reply_errorf(c, "wrong number of arguments for '%s' command", cmd->name);
		return;
	}
	r = acl_user_check_command(u, cmd, argc, argv, &pos);
	if (r == ACL_OK) {
		acl_unlock();
		reply_ok(c);
		return;
	}
	{
		char msg[1024];
		int n;

		if (r == ACL_DENIED_CMD)
			n = snprintf(msg, sizeof(msg),
				     "User %s has no permissions to run the '%s' command", u->name,
				     cmd->name);
		else
			n = snprintf(msg, sizeof(msg),
				     "User %s has no permissions to access the '%s' %s", u->name,
				     argv[pos].p, r == ACL_DENIED_KEY ? "key" : "channel");
		acl_unlock();
		reply_bulk(c, msg, n < (int)sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	}
}

void cmd_acl_help(struct client *c)
{
	static const char *const help[] = {
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the "
		"command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}
