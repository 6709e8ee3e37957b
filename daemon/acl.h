/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acl: the ACL user model and its rule language, as Redis 8.8's ACL SETUSER
 * reads it: on/off, >pass <pass #hash !hash nopass resetpass, key patterns
 * (~pat %R~pat %W~pat %RW~pat allkeys resetkeys), channel patterns (&pat
 * allchannels resetchannels), selectors "(...)", clearselectors and reset;
 * and the matchers that decide whether a user may use a key or a channel.
 *
 * Not wired to any command yet: command rules (+cmd -cmd +@cat ...), the
 * users table, AUTH and the dispatch checks are the next steps (docs/acl.md
 * will say what exists). Command rules are refused as a syntax error here.
 *
 * A user is owned by whoever made it (acl_user_new / acl_user_free); nothing
 * here locks: the caller serializes changes against readers.
 */
#ifndef XKV_ACL_H
#define XKV_ACL_H

#include <stdbool.h>
#include <stddef.h>

#include "sha256.h"

/* Access a key pattern grants (Redis's ACL_READ/WRITE_PERMISSION). */
enum acl_perm {
	ACL_PERM_READ = 1 << 0,
	ACL_PERM_WRITE = 1 << 1,
	ACL_PERM_ALL = ACL_PERM_READ | ACL_PERM_WRITE,
};

enum acl_user_flag {
	ACL_USER_ON = 1 << 0,
	ACL_USER_OFF = 1 << 1,
	ACL_USER_NOPASS = 1 << 2,
	ACL_USER_SKIP_SANITIZE = 1 << 3,
	ACL_USER_SANITIZE = 1 << 4,
};

enum acl_selector_flag {
	ACL_SEL_ROOT = 1 << 0,
	ACL_SEL_ALLKEYS = 1 << 1,
	ACL_SEL_ALLCHANNELS = 1 << 2,
};

#define ACL_HASH_LEN (2 * SHA256_LEN)

struct acl_key_pattern {
	char *pat; /* NUL-terminated, owned */
	size_t len;
	int perm; /* enum acl_perm */
};

struct acl_channel {
	char *pat; /* NUL-terminated, owned */
	size_t len;
};

struct acl_selector {
	unsigned flags; /* enum acl_selector_flag */
	struct acl_key_pattern *keys;
	size_t nkeys;
	struct acl_channel *chans;
	size_t nchans;
};

struct acl_user {
	char *name;
	unsigned flags;			/* enum acl_user_flag */
	char (*pass)[ACL_HASH_LEN + 1]; /* hex SHA-256s, in the order added */
	size_t npass;
	struct acl_selector *sel; /* sel[0] is the root selector */
	size_t nsel;
};

/* A new user as Redis makes one: off, sanitize-payload, no password, no key,
 * no command; with every channel if allchannels is the pub/sub default. */
struct acl_user *acl_user_new(const char *name, size_t len, bool allchannels_default);
void acl_user_free(struct acl_user *u);

/* Applies one rule; 0 or -errno (-EINVAL, -EEXIST, -EISDIR, -ENODEV,
 * -EBADMSG), whose text acl_strerror gives. On error u is unchanged, except
 * that a failed "(...)" adds nothing. */
int acl_user_set(struct acl_user *u, const char *op, size_t len, bool allchannels_default);
/* ACL SETUSER's error text for a -errno of acl_user_set. */
const char *acl_strerror(int err);

/* True if pass opens u: nopass, or its SHA-256 is one of u's. */
bool acl_user_check_password(const struct acl_user *u, const char *pass, size_t len);

/* True if some selector of u lets it touch key with access perm
 * (ACL_PERM_READ, _WRITE or both; 0 asks for no access and always passes). */
bool acl_user_key_allowed(const struct acl_user *u, const char *key, size_t len, int perm);
/* True if some selector of u lets it use channel; is_pattern for PSUBSCRIBE,
 * whose pattern must equal one of the user's literally (as Redis). */
bool acl_user_channel_allowed(const struct acl_user *u, const char *ch, size_t len,
			      bool is_pattern);

/* Writes the user's flags, passwords, keys and channels of every selector as
 * ACL LIST shows them (without command rules yet) to buf, NUL-terminated;
 * returns the length it needs (as snprintf). */
size_t acl_user_describe(const struct acl_user *u, char *buf, size_t size);

#endif
