// SPDX-License-Identifier: BSD-3-Clause
/*
 * The ACL user model (acl.h): rules are applied in Redis's order of checks
 * (its ACLSetUser / ACLSetSelector), so that the same rule gives the same
 * error, and users are described in ACL LIST's order.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "acl.h"
#include "command_meta.h"
#include "commands.h"
#include "log.h"
#include "mem.h"
#include "util.h"

static char *acl_strdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* Redis 8.8's categories, in ACL CAT's order; a category's bit is its
 * place here. */
const char *const acl_category_names[] = {
	"keyspace",  "read",	   "write",	  "set",       "sortedset",   "list",
	"hash",	     "string",	   "array",	  "bitmap",    "hyperloglog", "geo",
	"stream",    "pubsub",	   "admin",	  "fast",      "slow",	      "blocking",
	"dangerous", "connection", "transaction", "scripting", NULL,
};

/* Each row's categories (acl_commands_init), indexed by struct command's
 * index; written once before the workers start. */
static uint64_t *row_categories;

uint64_t acl_category_flag(const char *name, size_t len)
{
	for (int i = 0; acl_category_names[i]; i++)
		if (str_eq_nocase(name, len, acl_category_names[i]))
			return 1ull << i;
	return 0;
}

static void acl_rows_categorize(struct command **cmds)
{
	char buf[256];

	for (; *cmds; cmds++) {
		const char *p = command_acl_categories(*cmds, buf, sizeof(buf));
		uint64_t bits = 0;

		while (*p) {
			size_t n = strcspn(p, " ");

			if (n > 1 && p[0] == '@')
				bits |= acl_category_flag(p + 1, n - 1);
			p += n + (p[n] == ' ');
		}
		row_categories[(*cmds)->index] = bits;
		if ((*cmds)->subs)
			acl_rows_categorize((*cmds)->subs);
	}
}

void acl_commands_init(void)
{
	xkv_assert(command_rows() < ACL_CMD_FUTURE);
	xfree(row_categories);
	row_categories = xcalloc(command_rows(), sizeof(*row_categories));
	acl_rows_categorize(command_all());
}

uint64_t acl_command_categories(const struct command *cmd)
{
	return row_categories ? row_categories[cmd->index] : 0;
}

static void acl_selector_init(struct acl_selector *s, unsigned flags, bool allchannels_default)
{
	memset(s, 0, sizeof(*s));
	s->flags = flags | (allchannels_default ? ACL_SEL_ALLCHANNELS : 0);
	s->rules = acl_strdup("");
}

static void acl_selector_reset_fargs(struct acl_selector *s)
{
	for (size_t i = 0; i < s->nfargs; i++)
		xfree(s->fargs[i].arg);
	xfree(s->fargs);
	s->fargs = NULL;
	s->nfargs = 0;
}

/* Drops the first arguments allowed for row id (Redis's
 * ACLResetFirstArgsForCommand). */
static void acl_selector_reset_fargs_for(struct acl_selector *s, unsigned id)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nfargs; i++) {
		if (s->fargs[i].id == id)
			xfree(s->fargs[i].arg);
		else
			s->fargs[j++] = s->fargs[i];
	}
	s->nfargs = j;
}

static void acl_selector_reset_keys(struct acl_selector *s)
{
	for (size_t i = 0; i < s->nkeys; i++)
		xfree(s->keys[i].pat);
	xfree(s->keys);
	s->keys = NULL;
	s->nkeys = 0;
}

static void acl_selector_reset_channels(struct acl_selector *s)
{
	for (size_t i = 0; i < s->nchans; i++)
		xfree(s->chans[i].pat);
	xfree(s->chans);
	s->chans = NULL;
	s->nchans = 0;
}

static void acl_selector_free(struct acl_selector *s)
{
	acl_selector_reset_keys(s);
	acl_selector_reset_channels(s);
	acl_selector_reset_fargs(s);
	xfree(s->rules);
	s->rules = NULL;
}

static void acl_selector_copy(struct acl_selector *d, const struct acl_selector *s)
{
	*d = *s;
	d->rules = acl_strdup(s->rules);
	d->keys = s->nkeys ? xmalloc(s->nkeys * sizeof(*d->keys)) : NULL;
	for (size_t i = 0; i < s->nkeys; i++) {
		d->keys[i] = s->keys[i];
		d->keys[i].pat = xstrndup(s->keys[i].pat, s->keys[i].len);
	}
	d->chans = s->nchans ? xmalloc(s->nchans * sizeof(*d->chans)) : NULL;
	for (size_t i = 0; i < s->nchans; i++) {
		d->chans[i] = s->chans[i];
		d->chans[i].pat = xstrndup(s->chans[i].pat, s->chans[i].len);
	}
	d->fargs = s->nfargs ? xmalloc(s->nfargs * sizeof(*d->fargs)) : NULL;
	for (size_t i = 0; i < s->nfargs; i++) {
		d->fargs[i].id = s->fargs[i].id;
		d->fargs[i].arg = acl_strdup(s->fargs[i].arg);
	}
}

bool acl_selector_command_bit(const struct acl_selector *s, unsigned id)
{
	return id < ACL_CMD_BITS && (s->cmds[id / 64] >> (id % 64)) & 1;
}

/* Clearing a bit clears ALLCOMMANDS, as Redis's ACLSetSelectorCommandBit. */
static void acl_selector_set_bit(struct acl_selector *s, unsigned id, bool on)
{
	if (id >= ACL_CMD_BITS)
		return;
	if (on) {
		s->cmds[id / 64] |= 1ull << (id % 64);
	} else {
		s->cmds[id / 64] &= ~(1ull << (id % 64));
		s->flags &= ~ACL_SEL_ALLCOMMANDS;
	}
}

/* A command and, for a container, all its subcommands. */
static void acl_selector_change_perm(struct acl_selector *s, const struct command *cmd, bool on)
{
	acl_selector_set_bit(s, cmd->index, on);
	acl_selector_reset_fargs_for(s, cmd->index);
	for (unsigned i = 0; i < cmd->nsubs; i++)
		acl_selector_set_bit(s, cmd->subs[i]->index, on);
}

static void acl_selector_set_category(struct acl_selector *s, struct command **cmds, uint64_t flag,
				      bool on)
{
	for (; *cmds; cmds++) {
		if (acl_command_categories(*cmds) & flag)
			acl_selector_change_perm(s, *cmds, on);
		if ((*cmds)->subs)
			acl_selector_set_category(s, (*cmds)->subs, flag, on);
	}
}

/* Drops from the kept rules the ones the new rule (lower case, without its
 * sign) overrides: the same rule, and the subcommands of a command. */
static void acl_selector_remove_rule(struct acl_selector *s, const char *rule, size_t len)
{
	char *out = xmalloc(strlen(s->rules) + 1), *p = s->rules;
	size_t n = 0;

	while (*p) {
		size_t tl = strcspn(p, " ");
		const char *body = p + 1;
		size_t bl = tl ? tl - 1 : 0;
		bool drop =
			bl >= len && !memcmp(body, rule, len) && (bl == len || body[len] == '|');

		if (!drop) {
			if (n)
				out[n++] = ' ';
			memcpy(out + n, p, tl);
			n += tl;
		}
		p += tl;
		while (*p == ' ')
			p++;
	}
	out[n] = '\0';
	xfree(s->rules);
	s->rules = out;
}

/* Redis's ACLUpdateCommandRules: the rule moves to the end, lower case. */
static void acl_selector_add_rule(struct acl_selector *s, const char *rule, size_t len, bool on)
{
	char *low = xstrndup(rule, len), *r;
	size_t old;

	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)low[i]);
	acl_selector_remove_rule(s, low, len);
	old = strlen(s->rules);
	r = xmalloc(old + len + 3);
	memcpy(r, s->rules, old);
	if (old)
		r[old++] = ' ';
	r[old++] = on ? '+' : '-';
	memcpy(r + old, low, len);
	r[old + len] = '\0';
	xfree(s->rules);
	s->rules = r;
	xfree(low);
}

/* "cmd" or "container|sub", as Redis's ACLLookupCommand (one level). */
static struct command *acl_lookup_command(const char *name, size_t len)
{
	const char *bar = memchr(name, '|', len);
	struct command *cmd;
	size_t n = bar ? (size_t)(bar - name) : len;

	cmd = command_lookup(name, n);
	if (!cmd || !bar)
		return cmd;
	if (!cmd->subs || memchr(bar + 1, '|', len - n - 1))
		return NULL;
	for (unsigned i = 0; i < cmd->nsubs; i++)
		if (str_eq_nocase(bar + 1, len - n - 1, cmd->subs[i]->sub_name))
			return cmd->subs[i];
	return NULL;
}

static void acl_selector_add_farg(struct acl_selector *s, unsigned id, const char *arg, size_t len)
{
	for (size_t i = 0; i < s->nfargs; i++)
		if (s->fargs[i].id == id && str_eq_nocase(arg, len, s->fargs[i].arg))
			return;
	s->fargs = xrealloc(s->fargs, (s->nfargs + 1) * sizeof(*s->fargs));
	s->fargs[s->nfargs].id = id;
	s->fargs[s->nfargs].arg = xstrndup(arg, len);
	s->nfargs++;
}

/* +cmd, +cmd|sub, +cmd|firstarg (Redis's order of checks and errors). */
static int acl_selector_allow(struct acl_selector *s, const char *op, size_t len)
{
	const char *bar = NULL;
	struct command *cmd;

	for (size_t i = len; i > 0; i--) {
		if (op[i - 1] == '|') {
			bar = op + i - 1;
			break;
		}
	}
	if (!bar) {
		cmd = acl_lookup_command(op, len);
		if (!cmd)
			return -ENOENT;
		acl_selector_change_perm(s, cmd, true);
		acl_selector_add_rule(s, cmd->name, strlen(cmd->name), true);
		return 0;
	}
	cmd = acl_lookup_command(op, (size_t)(bar - op));
	if (!cmd)
		return -ENOENT;
	if (cmd->parent)
		return -ECHILD;
	if (bar + 1 == op + len)
		return -EINVAL;
	if (cmd->subs) {
		cmd = acl_lookup_command(op, len);
		if (!cmd)
			return -ENOENT;
		acl_selector_change_perm(s, cmd, true);
	} else {
		acl_selector_add_farg(s, cmd->index, bar + 1, (size_t)(op + len - bar - 1));
	}
	acl_selector_add_rule(s, op, len, true);
	return 0;
}

/* The command rules of a selector (Redis's part of ACLSetSelector). */
static int acl_selector_set_commands(struct acl_selector *s, const char *op, size_t len)
{
	if (str_eq_nocase(op, len, "allcommands") || str_eq_nocase(op, len, "+@all")) {
		memset(s->cmds, 0xff, sizeof(s->cmds));
		s->flags |= ACL_SEL_ALLCOMMANDS;
		s->rules[0] = '\0';
		acl_selector_reset_fargs(s);
	} else if (str_eq_nocase(op, len, "nocommands") || str_eq_nocase(op, len, "-@all")) {
		memset(s->cmds, 0, sizeof(s->cmds));
		s->flags &= ~ACL_SEL_ALLCOMMANDS;
		s->rules[0] = '\0';
		acl_selector_reset_fargs(s);
	} else if (len >= 1 && op[0] == '+' && (len < 2 || op[1] != '@')) {
		return acl_selector_allow(s, op + 1, len - 1);
	} else if (len >= 1 && op[0] == '-' && (len < 2 || op[1] != '@')) {
		struct command *cmd = acl_lookup_command(op + 1, len - 1);

		if (!cmd)
			return -ENOENT;
		acl_selector_change_perm(s, cmd, false);
		acl_selector_add_rule(s, cmd->name, strlen(cmd->name), false);
	} else if (len >= 2 && (op[0] == '+' || op[0] == '-') && op[1] == '@') {
		uint64_t flag = acl_category_flag(op + 2, len - 2);

		if (!flag)
			return -ENOENT;
		acl_selector_add_rule(s, op + 1, len - 1, op[0] == '+');
		acl_selector_set_category(s, command_all(), flag, op[0] == '+');
	} else {
		return -EINVAL;
	}
	return 0;
}

struct acl_user *acl_user_new(const char *name, size_t len, bool allchannels_default)
{
	struct acl_user *u = xcalloc(1, sizeof(*u));

	u->name = xstrndup(name, len);
	u->flags = ACL_USER_OFF | ACL_USER_SANITIZE;
	u->sel = xcalloc(1, sizeof(*u->sel));
	u->nsel = 1;
	acl_selector_init(&u->sel[0], ACL_SEL_ROOT, allchannels_default);
	return u;
}

struct acl_user *acl_user_dup(const struct acl_user *u)
{
	struct acl_user *d = xcalloc(1, sizeof(*d));

	d->name = acl_strdup(u->name);
	d->flags = u->flags;
	d->npass = u->npass;
	d->pass = u->npass ? xmalloc(u->npass * sizeof(*d->pass)) : NULL;
	if (u->npass)
		memcpy(d->pass, u->pass, u->npass * sizeof(*d->pass));
	d->nsel = u->nsel;
	d->sel = xcalloc(u->nsel, sizeof(*d->sel));
	for (size_t i = 0; i < u->nsel; i++)
		acl_selector_copy(&d->sel[i], &u->sel[i]);
	return d;
}

static void acl_user_update_all(struct acl_user *u)
{
	const unsigned all = ACL_SEL_ALLCOMMANDS | ACL_SEL_ALLKEYS | ACL_SEL_ALLCHANNELS;

	__atomic_store_n(&u->all, (u->sel[0].flags & all) == all && !u->deleted, __ATOMIC_RELAXED);
}

void acl_user_replace(struct acl_user *dst, struct acl_user *src)
{
	for (size_t i = 0; i < dst->nsel; i++)
		acl_selector_free(&dst->sel[i]);
	xfree(dst->sel);
	xfree(dst->pass);
	dst->flags = src->flags;
	dst->pass = src->pass;
	dst->npass = src->npass;
	dst->sel = src->sel;
	dst->nsel = src->nsel;
	xfree(src->name);
	xfree(src);
	acl_user_update_all(dst);
}

void acl_user_free(struct acl_user *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nsel; i++)
		acl_selector_free(&u->sel[i]);
	xfree(u->sel);
	xfree(u->pass);
	xfree(u->name);
	xfree(u);
}

/* Redis refuses blanks and NULs in patterns (ACLStringHasSpaces). */
static bool acl_has_spaces(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (isspace((unsigned char)s[i]) || s[i] == '\0')
			return true;
	return false;
}

static bool acl_hash_valid(const char *h, size_t len)
{
	if (len != ACL_HASH_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((h[i] >= 'a' && h[i] <= 'f') || (h[i] >= '0' && h[i] <= '9')))
			return false;
	return true;
}

static int acl_selector_add_key(struct acl_selector *s, const char *op, size_t len)
{
	size_t off = 1;
	int perm = 0;

	if (s->flags & ACL_SEL_ALLKEYS)
		return -EEXIST;
	if (op[0] == '%') {
		bool ok = true;

		for (; off < len; off++) {
			char c = (char)toupper((unsigned char)op[off]);

			if (c == 'R' && !(perm & ACL_PERM_READ)) {
				perm |= ACL_PERM_READ;
			} else if (c == 'W' && !(perm & ACL_PERM_WRITE)) {
				perm |= ACL_PERM_WRITE;
			} else if (op[off] == '~') {
				off++;
				break;
			} else {
				ok = false;
				break;
			}
		}
		if (!perm || !ok)
			return -EINVAL;
	} else {
		perm = ACL_PERM_ALL;
	}
	if (acl_has_spaces(op + off, len - off))
		return -EINVAL;
	for (size_t i = 0; i < s->nkeys; i++) {
		/* The same pattern again widens the first one (Redis's match
		 * method compares the pattern text only). */
		if (s->keys[i].len == len - off && !memcmp(s->keys[i].pat, op + off, len - off)) {
			s->keys[i].perm |= perm;
			return 0;
		}
	}
	s->keys = xrealloc(s->keys, (s->nkeys + 1) * sizeof(*s->keys));
	s->keys[s->nkeys++] = (struct acl_key_pattern){ .pat = xstrndup(op + off, len - off),
							.len = len - off,
							.perm = perm };
	return 0;
}

static int acl_selector_add_channel(struct acl_selector *s, const char *p, size_t len)
{
	if (s->flags & ACL_SEL_ALLCHANNELS)
		return -EISDIR;
	if (acl_has_spaces(p, len))
		return -EINVAL;
	for (size_t i = 0; i < s->nchans; i++)
		if (s->chans[i].len == len && !memcmp(s->chans[i].pat, p, len))
			return 0;
	s->chans = xrealloc(s->chans, (s->nchans + 1) * sizeof(*s->chans));
	s->chans[s->nchans++] = (struct acl_channel){ .pat = xstrndup(p, len), .len = len };
	return 0;
}

/* The rules a selector takes (Redis's ACLSetSelector). */
static int acl_selector_set(struct acl_selector *s, const char *op, size_t len)
{
	if (str_eq_nocase(op, len, "allkeys") || str_eq_nocase(op, len, "~*")) {
		s->flags |= ACL_SEL_ALLKEYS;
		acl_selector_reset_keys(s);
	} else if (str_eq_nocase(op, len, "resetkeys")) {
		s->flags &= ~ACL_SEL_ALLKEYS;
		acl_selector_reset_keys(s);
	} else if (str_eq_nocase(op, len, "allchannels") || str_eq_nocase(op, len, "&*")) {
		s->flags |= ACL_SEL_ALLCHANNELS;
		acl_selector_reset_channels(s);
	} else if (str_eq_nocase(op, len, "resetchannels")) {
		s->flags &= ~ACL_SEL_ALLCHANNELS;
		acl_selector_reset_channels(s);
	} else if (len > 0 && (op[0] == '~' || op[0] == '%')) {
		int err = acl_selector_add_key(s, op, len);

		if (err)
			return err;
		s->flags &= ~ACL_SEL_ALLKEYS;
	} else if (len > 0 && op[0] == '&') {
		int err = acl_selector_add_channel(s, op + 1, len - 1);

		if (err)
			return err;
		s->flags &= ~ACL_SEL_ALLCHANNELS;
	} else {
		return acl_selector_set_commands(s, op, len);
	}
	return 0;
}

struct acl_split {
	struct acl_selector *s;
	int err;
};

static void acl_split_add(void *ctx, char *arg, size_t len)
{
	struct acl_split *sp = ctx;

	if (!sp->err)
		sp->err = acl_selector_set(sp->s, arg, len);
}

/* "(rule rule ...)": a new selector, added only if every rule applies. */
static int acl_user_add_selector(struct acl_user *u, const char *op, size_t len,
				 bool allchannels_default)
{
	struct acl_selector s;
	struct acl_split sp = { .s = &s };
	char *out = xmalloc(2 * len + 1);
	int n;

	acl_selector_init(&s, 0, allchannels_default);
	n = split_args(op + 1, len - 2, out, acl_split_add, &sp);
	xfree(out);
	if (n < 0 || sp.err) {
		acl_selector_free(&s);
		/* Unbalanced quotes leave Redis's errno at whatever it was:
		 * "Syntax error" is what a client sees in practice. */
		return sp.err ? sp.err : -EINVAL;
	}
	u->sel = xrealloc(u->sel, (u->nsel + 1) * sizeof(*u->sel));
	u->sel[u->nsel++] = s;
	return 0;
}

static ssize_t acl_user_find_pass(const struct acl_user *u, const char *hex)
{
	for (size_t i = 0; i < u->npass; i++)
		if (!memcmp(u->pass[i], hex, ACL_HASH_LEN))
			return (ssize_t)i;
	return -1;
}

/* '>' '#' add, '<' '!' remove a password (by text or by its hash). */
static int acl_user_set_pass(struct acl_user *u, const char *op, size_t len)
{
	char hex[ACL_HASH_LEN + 1];
	bool add = op[0] == '>' || op[0] == '#';
	ssize_t at;

	if (op[0] == '>' || op[0] == '<') {
		sha256_hex(op + 1, len - 1, hex);
	} else {
		if (!acl_hash_valid(op + 1, len - 1))
			return -EBADMSG;
		memcpy(hex, op + 1, ACL_HASH_LEN);
		hex[ACL_HASH_LEN] = '\0';
	}
	at = acl_user_find_pass(u, hex);
	if (add) {
		if (at < 0) {
			u->pass = xrealloc(u->pass, (u->npass + 1) * sizeof(*u->pass));
			memcpy(u->pass[u->npass++], hex, sizeof(hex));
		}
		u->flags &= ~ACL_USER_NOPASS;
		return 0;
	}
	if (at < 0)
		return -ENODEV;
	memmove(u->pass[at], u->pass[at + 1], (u->npass - (size_t)at - 1) * sizeof(*u->pass));
	u->npass--;
	return 0;
}

static void acl_user_clear_pass(struct acl_user *u)
{
	xfree(u->pass);
	u->pass = NULL;
	u->npass = 0;
}

static void acl_user_clear_selectors(struct acl_user *u)
{
	for (size_t i = 1; i < u->nsel; i++)
		acl_selector_free(&u->sel[i]);
	u->nsel = 1;
}

int acl_user_set(struct acl_user *u, const char *op, size_t len, bool allchannels_default)
{
	if (len == 0)
		return 0; /* an empty rule does nothing, as in Redis */
	if (str_eq_nocase(op, len, "on")) {
		u->flags = (u->flags | ACL_USER_ON) & ~ACL_USER_OFF;
	} else if (str_eq_nocase(op, len, "off")) {
		u->flags = (u->flags | ACL_USER_OFF) & ~ACL_USER_ON;
	} else if (str_eq_nocase(op, len, "skip-sanitize-payload")) {
		u->flags = (u->flags | ACL_USER_SKIP_SANITIZE) & ~ACL_USER_SANITIZE;
	} else if (str_eq_nocase(op, len, "sanitize-payload")) {
		u->flags = (u->flags | ACL_USER_SANITIZE) & ~ACL_USER_SKIP_SANITIZE;
	} else if (str_eq_nocase(op, len, "nopass")) {
		u->flags |= ACL_USER_NOPASS;
		acl_user_clear_pass(u);
	} else if (str_eq_nocase(op, len, "resetpass")) {
		u->flags &= ~ACL_USER_NOPASS;
		acl_user_clear_pass(u);
	} else if (op[0] == '>' || op[0] == '#' || op[0] == '<' || op[0] == '!') {
		return acl_user_set_pass(u, op, len);
	} else if (op[0] == '(' && op[len - 1] == ')') {
		return acl_user_add_selector(u, op, len, allchannels_default);
	} else if (str_eq_nocase(op, len, "clearselectors")) {
		acl_user_clear_selectors(u);
	} else if (str_eq_nocase(op, len, "reset")) {
		u->flags &= ~ACL_USER_NOPASS;
		acl_user_clear_pass(u);
		acl_selector_set(&u->sel[0], "resetkeys", 9);
		acl_selector_set(&u->sel[0], "resetchannels", 13);
		if (allchannels_default)
			acl_selector_set(&u->sel[0], "allchannels", 11);
		u->flags = (u->flags | ACL_USER_OFF | ACL_USER_SANITIZE) &
			   ~(ACL_USER_ON | ACL_USER_SKIP_SANITIZE);
		acl_user_clear_selectors(u);
		acl_selector_set_commands(&u->sel[0], "-@all", 5);
	} else {
		int err = acl_selector_set(&u->sel[0], op, len);

		acl_user_update_all(u);
		return err;
	}
	acl_user_update_all(u);
	return 0;
}

const char *acl_strerror(int err)
{
	switch (err) {
	case -ENOENT:
		return "Unknown command or category name in ACL";
	case -EINVAL:
		return "Syntax error";
	case -EEXIST:
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid "
		       "and does not have any effect. Try 'resetkeys' to start with an empty "
		       "list of patterns";
	case -EISDIR:
		return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
		       "valid and does not have any effect. Try 'resetchannels' to start with "
		       "an empty list of channels";
	case -ENODEV:
		return "The password you are trying to remove from the user does not exist";
	case -EBADMSG:
		return "The password hash must be exactly 64 characters and contain only "
		       "lowercase hexadecimal characters";
	case -EALREADY:
		return "Duplicate user found. A user can only be defined once in config files";
	case -ECHILD:
		return "Allowing first-arg of a subcommand is not supported";
	default:
		return "Wrong format";
	}
}

bool acl_user_check_password(const struct acl_user *u, const char *pass, size_t len)
{
	char hex[ACL_HASH_LEN + 1];

	if (u->flags & ACL_USER_NOPASS)
		return true;
	sha256_hex(pass, len, hex);
	return acl_user_find_pass(u, hex) >= 0;
}

static bool acl_selector_key_allowed(const struct acl_selector *s, const char *key, size_t len,
				     int perm)
{
	if (s->flags & ACL_SEL_ALLKEYS)
		return true;
	for (size_t i = 0; i < s->nkeys; i++) {
		if ((s->keys[i].perm & perm) != perm)
			continue;
		if (glob_match(s->keys[i].pat, s->keys[i].len, key, len, false))
			return true;
	}
	return false;
}

bool acl_user_key_allowed(const struct acl_user *u, const char *key, size_t len, int perm)
{
	for (size_t i = 0; i < u->nsel; i++)
		if (acl_selector_key_allowed(&u->sel[i], key, len, perm))
			return true;
	return false;
}

static bool acl_selector_channel_allowed(const struct acl_selector *s, const char *ch, size_t len,
					 bool is_pattern)
{
	if (s->flags & ACL_SEL_ALLCHANNELS)
		return true;
	for (size_t i = 0; i < s->nchans; i++) {
		const struct acl_channel *c = &s->chans[i];

		if (is_pattern ? (c->len == len && !memcmp(c->pat, ch, len))
			       : glob_match(c->pat, c->len, ch, len, false))
			return true;
	}
	return false;
}

bool acl_user_channel_allowed(const struct acl_user *u, const char *ch, size_t len, bool is_pattern)
{
	for (size_t i = 0; i < u->nsel; i++)
		if (acl_selector_channel_allowed(&u->sel[i], ch, len, is_pattern))
			return true;
	return false;
}

/* Redis's key spec flags to the access a pattern must grant. */
static int acl_key_perm(const char *flags)
{
	int perm = 0;

	for (const char *p = flags; *p;) {
		size_t n = strcspn(p, " ");

		if (n == 6 && !memcmp(p, "access", 6))
			perm |= ACL_PERM_READ;
		else if ((n == 6 && (!memcmp(p, "insert", 6) || !memcmp(p, "delete", 6) ||
				     !memcmp(p, "update", 6))))
			perm |= ACL_PERM_WRITE;
		p += n + (p[n] == ' ');
	}
	return perm;
}

/* The keys of one command, found once for every selector. */
struct acl_keys {
	bool done;
	int n;
	int *idx;
	int *perm;
};

static void acl_keys_find(struct acl_keys *k, const struct command *cmd, int argc,
			  const struct arg *argv)
{
	const struct key_spec **specs = xmalloc((size_t)(argc + 1) * sizeof(*specs));

	k->done = true;
	k->idx = xmalloc((size_t)(argc + 1) * sizeof(*k->idx));
	k->perm = xmalloc((size_t)(argc + 1) * sizeof(*k->perm));
	k->n = command_key_indexes(cmd, argc, argv, k->idx, specs, argc + 1);
	if (k->n < 0)
		k->n = 0;
	for (int i = 0; i < k->n; i++)
		k->perm[i] = acl_key_perm(command_meta_key_flags(cmd->name, specs[i], argc, argv));
	xfree(specs);
}

/* Channel arguments (Redis's commands_with_channels): first and last
 * argument (-1: to the end), and whether they are patterns; false if the
 * command names no channel ACL checks (UNSUBSCRIBE ...). */
static bool acl_command_channels(const struct command *cmd, int *first, int *last, bool *pattern)
{
	*first = 1;
	*pattern = false;
	if (cmd->fn == cmd_subscribe || cmd->fn == cmd_ssubscribe) {
		*last = -1;
	} else if (cmd->fn == cmd_psubscribe) {
		*last = -1;
		*pattern = true;
	} else if (cmd->fn == cmd_publish || cmd->fn == cmd_spublish) {
		*last = 1;
	} else {
		return false;
	}
	return true;
}

/* Redis's ACLSelectorCheckCmd. */
static int acl_selector_check(const struct acl_selector *s, const struct command *cmd, int argc,
			      const struct arg *argv, struct acl_keys *keys, int *argpos)
{
	int first, last;
	bool pattern;

	if (!(s->flags & ACL_SEL_ALLCOMMANDS) && !(cmd->flags & CMD_NO_AUTH) &&
	    !acl_selector_command_bit(s, cmd->index)) {
		int at = cmd->parent ? 2 : 1;
		bool ok = false;

		for (size_t i = 0; i < s->nfargs && argc > at; i++)
			if (s->fargs[i].id == cmd->index &&
			    str_eq_nocase(argv[at].p, argv[at].len, s->fargs[i].arg))
				ok = true;
		if (!ok)
			return ACL_DENIED_CMD;
	}
	if (!(s->flags & ACL_SEL_ALLKEYS) && command_has_keys(cmd)) {
		if (!keys->done)
			acl_keys_find(keys, cmd, argc, argv);
		for (int i = 0; i < keys->n; i++) {
			const struct arg *a = &argv[keys->idx[i]];

			if (!acl_selector_key_allowed(s, a->p, a->len, keys->perm[i])) {
				*argpos = keys->idx[i];
				return ACL_DENIED_KEY;
			}
		}
	}
	if (!(s->flags & ACL_SEL_ALLCHANNELS) &&
	    acl_command_channels(cmd, &first, &last, &pattern)) {
		if (last < 0)
			last = argc - 1;
		for (int i = first; i <= last && i < argc; i++) {
			if (!acl_selector_channel_allowed(s, argv[i].p, argv[i].len, pattern)) {
				*argpos = i;
				return ACL_DENIED_CHANNEL;
			}
		}
	}
	return ACL_OK;
}

int acl_user_check_command(const struct acl_user *u, const struct command *cmd, int argc,
			   const struct arg *argv, int *argpos)
{
	struct acl_keys keys = { 0 };
	int worst = ACL_DENIED_CMD, worst_pos = 0;
	int ret = -1;

	*argpos = 0;
	for (size_t i = 0; i < u->nsel && ret != ACL_OK; i++) {
		int pos = 0;
		int r = acl_selector_check(&u->sel[i], cmd, argc, argv, &keys, &pos);

		if (r == ACL_OK) {
			ret = ACL_OK;
		} else if (r > worst || (r == worst && pos > worst_pos)) {
			worst = r;
			worst_pos = pos;
		}
	}
	xfree(keys.idx);
	xfree(keys.perm);
	if (ret == ACL_OK)
		return ACL_OK;
	*argpos = worst_pos;
	return worst;
}

struct acl_out {
	char *buf;
	size_t size, len;
};

static void acl_out_add(struct acl_out *o, const char *p, size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - o->len - 1;

		memcpy(o->buf + o->len, p, n < room ? n : room);
	}
	o->len += n;
}

static void acl_out_str(struct acl_out *o, const char *s)
{
	acl_out_add(o, s, strlen(s));
}

/* "+@all" or "-@all" (whether the future-commands bit is set), then the
 * kept rules, as Redis's ACLDescribeSelectorCommandRules. */
static void acl_selector_describe_rules(const struct acl_selector *s, struct acl_out *o)
{
	acl_out_str(o, acl_selector_command_bit(s, ACL_CMD_FUTURE) ? "+@all" : "-@all");
	if (s->rules[0]) {
		acl_out_str(o, " ");
		acl_out_str(o, s->rules);
	}
}

/* Keys then channels of one selector, each rule followed by a blank, then
 * its command rules, as Redis's ACLDescribeSelector. */
static void acl_selector_describe(const struct acl_selector *s, struct acl_out *o)
{
	static const char *const prefix[] = { "", "%R~", "%W~", "~" };

	if (s->flags & ACL_SEL_ALLKEYS) {
		acl_out_str(o, "~* ");
	} else {
		for (size_t i = 0; i < s->nkeys; i++) {
			acl_out_str(o, prefix[s->keys[i].perm & ACL_PERM_ALL]);
			acl_out_add(o, s->keys[i].pat, s->keys[i].len);
			acl_out_str(o, " ");
		}
	}
	if (s->flags & ACL_SEL_ALLCHANNELS) {
		acl_out_str(o, "&* ");
	} else {
		acl_out_str(o, "resetchannels ");
		for (size_t i = 0; i < s->nchans; i++) {
			acl_out_str(o, "&");
			acl_out_add(o, s->chans[i].pat, s->chans[i].len);
			acl_out_str(o, " ");
		}
	}
	acl_selector_describe_rules(s, o);
}

size_t acl_selector_describe_commands(const struct acl_selector *s, char *buf, size_t size)
{
	struct acl_out o = { .buf = buf, .size = size };

	acl_selector_describe_rules(s, &o);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}

size_t acl_user_describe(const struct acl_user *u, char *buf, size_t size)
{
	static const struct {
		const char *name;
		unsigned flag;
	} flags[] = {
		{ "on", ACL_USER_ON },
		{ "off", ACL_USER_OFF },
		{ "nopass", ACL_USER_NOPASS },
		{ "skip-sanitize-payload", ACL_USER_SKIP_SANITIZE },
		{ "sanitize-payload", ACL_USER_SANITIZE },
	};
	struct acl_out o = { .buf = buf, .size = size };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (u->flags & flags[i].flag) {
			acl_out_str(&o, flags[i].name);
			acl_out_str(&o, " ");
		}
	}
	for (size_t i = 0; i < u->npass; i++) {
		acl_out_str(&o, "#");
		acl_out_add(&o, u->pass[i], ACL_HASH_LEN);
		acl_out_str(&o, " ");
	}
	acl_selector_describe(&u->sel[0], &o);
	for (size_t i = 1; i < u->nsel; i++) {
		acl_out_str(&o, " (");
		acl_selector_describe(&u->sel[i], &o);
		acl_out_str(&o, ")");
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}
