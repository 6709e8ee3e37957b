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
#include "mem.h"
#include "util.h"

static void acl_selector_init(struct acl_selector *s, unsigned flags, bool allchannels_default)
{
	memset(s, 0, sizeof(*s));
	s->flags = flags | (allchannels_default ? ACL_SEL_ALLCHANNELS : 0);
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
		/* Command rules come with the command table's hook (acl.h). */
		return -EINVAL;
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
	} else {
		return acl_selector_set(&u->sel[0], op, len);
	}
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

/* Keys then channels of one selector, each rule followed by a blank, as
 * Redis's ACLDescribeSelector. */
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
	/* Without command rules yet, each part ends with the blank after
	 * its last rule, which Redis's command rules would follow. */
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}
