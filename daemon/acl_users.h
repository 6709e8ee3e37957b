/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acl_users: the users table (ACL SETUSER's users, the `default` user among
 * them), which user each client is, AUTH's check, the permission check of a
 * command at dispatch, in EXEC and in scripts, the ACL LOG and the INFO
 * acl_access_denied_* counters.
 *
 * Locking. One rwlock (acl_lock) protects the table and every user's rules:
 * ACL SETUSER, DELUSER and the requirepass hook take it for writing (rare);
 * a check of a restricted user, AUTH and ACL GETUSER/LIST take it for
 * reading. A client whose user may do everything (the default user as Redis
 * starts it) is not checked at all: its user's `all` flag, a relaxed atomic
 * that writers store under the write lock, is the only thing read, so the
 * dispatch's cost for it is one flag test. A rwlock rather than a pointer
 * swap (RCU) because users are changed in place in Redis (a client sees its
 * user's new rules at its next command) and a grace period would need every
 * worker's cooperation for no gain at ACL SETUSER's rate.
 *
 * Lifetime. A user is reference counted: the table holds one reference and
 * every client authenticated as it one more (client.c's create/free, AUTH,
 * RESET). DELUSER takes the user out of the table, marks it deleted (its
 * `all` flag cleared, so its clients' next check takes the slow path and
 * refuses) and asks each of its clients' workers to close them; the user is
 * freed by whoever drops the last reference. c->user changes only on c's own
 * worker, under the registry lock, so CLIENT LIST on another worker may read
 * o->user->name (a name never changes) under that lock.
 *
 * Lock order: acl_lock, then the registry lock, then a worker's mail lock;
 * the ACL LOG has its own mutex, taken last.
 */
#ifndef XKV_ACL_USERS_H
#define XKV_ACL_USERS_H

#include <stdbool.h>
#include <stdint.h>

#include "acl.h"

struct client;
struct command;
struct arg;
struct text;

/* Where a refused command ran (ACL LOG's context). */
enum acl_context {
	ACL_CTX_TOPLEVEL,
	ACL_CTX_MULTI,
	ACL_CTX_LUA,
};

/* Creates the default user (on nopass ~* &* +@all, or with requirepass's
 * password); before the workers start, after commands_init. */
void acl_users_init(void);

/* True if the default user needs a password (not nopass, or off): a client
 * not authenticated must AUTH first (Redis's authRequired). Any thread. */
extern bool acl_default_needs_auth;
/* True while the default user is nopass (protected mode refuses strangers
 * then). Any thread. */
bool acl_default_nopass(void);

/* A UDP request is the default user's (its token stands for that user's
 * password). OPEN: every command on every key, the kernel may answer;
 * CHECKED: the daemon checks each request (acl_udp_allowed); OFF: the user
 * is off, every request is NOAUTH as over TCP. Any thread. */
enum acl_udp { ACL_UDP_OPEN, ACL_UDP_CHECKED, ACL_UDP_OFF };
int acl_default_udp(void);
/* Called (on the thread that made it, before its command is answered)
 * after the default user changes; access.c republishes the UDP rule. */
void acl_on_default_change(void (*fn)(void));
/* May the default user run this UDP request (cmd: its row, or NULL for an
 * unknown name)? true, or false with Redis's NOPERM text (no '-', no CRLF)
 * in msg, the denial counted in INFO as a TCP one's. */
bool acl_udp_allowed(const struct command *cmd, int argc, const struct arg *argv, char *msg,
		     size_t size);

/* A `user name rule ...` line of the config file (args without "user"),
 * applied by acl_users_init. */
void acl_config_user(char **args, const size_t *lens, int n);

/* requirepass: the default user's only password (NULL or "": nopass). */
void acl_set_default_password(const char *pass);

/* A new client's user (the default user, referenced) and whether it starts
 * authenticated (Redis's clientSetDefaultAuth). */
struct acl_user *acl_default_user_get(bool *authenticated);
/* Drops a client's reference (client_free). NULL is a no-op. */
void acl_user_put(struct acl_user *u);
/* Another reference to u (NULL: NULL), dropped with acl_user_put. */
struct acl_user *acl_user_hold(struct acl_user *u);
/* c becomes user u (a reference the caller gives), unauthenticated or not;
 * its old user is released. On c's own worker. */
void acl_client_set_user(struct client *c, struct acl_user *u, bool authenticated);

/* AUTH and HELLO AUTH: true if user (NULL: default) and pass open an
 * enabled user, and c is now it; false after counting and logging the
 * failure. */
bool acl_authenticate(struct client *c, const struct arg *user, const struct arg *pass);

/* True if c may run cmd (a resolved row) with argv; otherwise replies
 * -NOPERM as Redis (verbose for scripts' errors is not Redis's: see
 * acl_deny_message), logs and counts the denial, and returns false. */
static inline bool acl_client_restricted(const struct client *c);
bool acl_check_slow(struct client *c, const struct command *cmd, int argc, const struct arg *argv,
		    enum acl_context ctx, bool reply);
/* The reason of the last refusal acl_check_slow found without replying, as
 * Redis's getAclErrorMessage (not verbose); a static string. */
const char *acl_last_deny(void);
/* Its reason (enum acl_deny). */
int acl_last_deny_reason(void);

/* ACL LOG: an entry (merged with a like one of the last ten, as Redis). */
void acl_log_add(struct client *c, int reason, enum acl_context ctx, const char *object,
		 size_t object_len, const char *username);
/* INFO's acl_access_denied_* lines. */
void acl_info(struct text *t);

/* The command's subcommands (cmd/acl.c) need these. */
void acl_lock_read(void);
void acl_lock_write(void);
void acl_unlock(void);
/* The user named so, or NULL; acl_lock held. */
struct acl_user *acl_users_find(const char *name, size_t len);
/* Every user by name (ACL LIST's order); acl_lock held; n set. */
struct acl_user **acl_users_all(size_t *n);
/* Adds a new user to the table (takes u); write lock held. */
void acl_users_add(struct acl_user *u);
/* Deletes the user (not "default"): its clients are closed. Write lock
 * held; self is the client running the command. True if it existed. */
bool acl_users_delete(struct client *self, const char *name, size_t len);
/* After a change of u's channels: its subscribed clients that lost a
 * channel are closed (Redis's ACLKillPubsubClientsIfNeeded, checked by
 * each client's own worker). Write lock held. */
void acl_user_changed(struct client *self, struct acl_user *u);
/* The same check for the client that ran ACL SETUSER (closed after its
 * reply). */
void acl_recheck_self(struct client *c);
/* ACL LOAD: the users of an ACL file replace the table (Redis's
 * ACLLoadFromFile): NULL, or Redis's error text (owned) and no change. */
char *acl_file_load(const char *path);
/* ACL SAVE: every user as ACL LIST shows it; 0 or -errno (logged). */
int acl_file_save(const char *path);
/* Every user as a `user name rules` line (CONFIG REWRITE, ACL SAVE), by
 * name; the caller frees each line and the array. Takes the lock. */
char **acl_users_lines(size_t *n);
/* CONFIG RESETSTAT. */
void acl_stats_reset(void);
/* ACL LOG's reply, and RESET. */
void acl_log_reply(struct client *c, long count);
void acl_log_reset(void);

#include "client.h"

static inline bool acl_auth_required(const struct client *c)
{
	return !c->authenticated && __atomic_load_n(&acl_default_needs_auth, __ATOMIC_RELAXED);
}

static inline bool acl_client_restricted(const struct client *c)
{
	return c->user && !__atomic_load_n(&c->user->all, __ATOMIC_RELAXED);
}

#endif
