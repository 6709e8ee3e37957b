/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acl: the ACL user model and its rule language, as Redis 8.8's ACL SETUSER
 * reads it: on/off, >pass <pass #hash !hash nopass resetpass, key patterns
 * (~pat %R~pat %W~pat %RW~pat allkeys resetkeys), channel patterns (&pat
 * allchannels resetchannels), selectors "(...)", clearselectors and reset;
 * and the matchers that decide whether a user may use a key or a channel.
 *
 * Command rules (+cmd -cmd +cmd|sub +cmd|firstarg +@cat -@cat allcommands
 * nocommands) set a bitmap over the command table's rows (struct command's
 * index), so that the dispatch check is a bit test; the rules are kept as
 * Redis keeps them (its "command_rules" string), so that ACL LIST describes
 * them in Redis's compacted form ("+@all -debug").
 *
 * A user is owned by whoever made it (acl_user_new / acl_user_free); nothing
 * here locks: the caller serializes changes against readers (acl_users.h
 * holds the users table and its lock). Command rules need the command table:
 * acl_commands_init() after commands_init().
 */
#ifndef XKV_ACL_H
#define XKV_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	ACL_SEL_ALLCOMMANDS = 1 << 3,
};

/* Bits of the command bitmap: one per command-table row, and the last one
 * for "future commands", set only by +@all (Redis's trick to tell +@all
 * -x from -@all +y when describing rules). */
#define ACL_CMD_BITS 1024
#define ACL_CMD_WORDS (ACL_CMD_BITS / 64)
#define ACL_CMD_FUTURE (ACL_CMD_BITS - 1)

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

/* +cmd|arg for a command without subcommands: that first argument only. */
struct acl_firstarg {
	unsigned id; /* the command's row */
	char *arg;   /* owned, lower case */
};

struct acl_selector {
	unsigned flags; /* enum acl_selector_flag */
	uint64_t cmds[ACL_CMD_WORDS];
	char *rules; /* command rules after the +@all/-@all start; owned, "" if none */
	struct acl_firstarg *fargs;
	size_t nfargs;
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
	/* The users table's (acl_users.c): references, deleted from the table,
	 * and whether the root selector allows everything (the dispatch's
	 * one-flag test). */
	int refs;
	bool deleted;
	bool all;
};

struct command;
struct arg;

/* Builds the category of every command-table row (after commands_init). */
void acl_commands_init(void);
/* The category bit of a category name (without '@'), 0 if unknown. */
uint64_t acl_category_flag(const char *name, size_t len);
/* Category names in ACL CAT's order, NULL-terminated. */
extern const char *const acl_category_names[];
/* The categories of a command-table row, as bits. */
uint64_t acl_command_categories(const struct command *cmd);

/* A new user as Redis makes one: off, sanitize-payload, no password, no key,
 * no command; with every channel if allchannels is the pub/sub default. */
struct acl_user *acl_user_new(const char *name, size_t len, bool allchannels_default);
void acl_user_free(struct acl_user *u);
/* A copy of u's rules (name, flags, passwords, selectors), to stage a change
 * on; freed with acl_user_free. */
struct acl_user *acl_user_dup(const struct acl_user *u);
/* dst takes src's rules (not its name nor table fields); src is freed. */
void acl_user_replace(struct acl_user *dst, struct acl_user *src);

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

/* Why a command is refused (Redis's ACL_DENIED_*; the order matters: a
 * selector's worse reason wins). */
enum acl_deny {
	ACL_OK = 0,
	ACL_DENIED_CMD = 1,
	ACL_DENIED_KEY = 2,
	ACL_DENIED_AUTH = 3,
	ACL_DENIED_CHANNEL = 4,
};

/* May u run cmd (a row with a handler) with argv? ACL_OK, or the reason of
 * the selector Redis would report, and in *argpos the argument that decided
 * (0 for the command itself). */
int acl_user_check_command(const struct acl_user *u, const struct command *cmd, int argc,
			   const struct arg *argv, int *argpos);
/* True if the selector allows the command row id (its bit). */
bool acl_selector_command_bit(const struct acl_selector *s, unsigned id);

/* Writes the user's flags, passwords, keys, channels and command rules of
 * every selector as ACL LIST shows them to buf, NUL-terminated; returns the
 * length it needs (as snprintf). */
size_t acl_user_describe(const struct acl_user *u, char *buf, size_t size);
/* The command rules of a selector as ACL GETUSER's "commands" shows them. */
size_t acl_selector_describe_commands(const struct acl_selector *s, char *buf, size_t size);

#endif
