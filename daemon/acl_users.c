// SPDX-License-Identifier: BSD-3-Clause
/*
 * The users table, clients' users, AUTH, the permission checks and the ACL
 * LOG (acl_users.h has the locking and lifetime contract).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "acl_users.h"
#include "client.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "monitor.h"
#include "pubsub.h"
#include "reply.h"
#include "text.h"
#include "util.h"
#include "worker.h"

/* Protects users[], nusers and every user's rules (see acl_users.h). */
static pthread_rwlock_t acl_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct acl_user **users; /* sorted by name, as Redis's rax */
static size_t nusers;
static struct acl_user *default_user;

bool acl_default_needs_auth;
static bool default_nopass = true;

bool acl_default_nopass(void)
{
	return __atomic_load_n(&default_nopass, __ATOMIC_RELAXED);
}

/* INFO's counters: any worker adds (relaxed atomics). */
static uint64_t denied_auth, denied_cmd, denied_key, denied_channel;

void acl_lock_read(void)
{
	pthread_rwlock_rdlock(&acl_lock);
}

void acl_lock_write(void)
{
	pthread_rwlock_wrlock(&acl_lock);
}

void acl_unlock(void)
{
	pthread_rwlock_unlock(&acl_lock);
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	return r ? r : (alen > blen) - (alen < blen);
}

/* The place of name in users[]: its index, or where it would go. */
static size_t users_pos(const char *name, size_t len, bool *found)
{
	size_t lo = 0, hi = nusers;

	*found = false;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = name_cmp(users[mid]->name, strlen(users[mid]->name), name, len);

		if (r == 0) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct acl_user *acl_users_find(const char *name, size_t len)
{
	bool found;
	size_t at = users_pos(name, len, &found);

	return found ? users[at] : NULL;
}

struct acl_user **acl_users_all(size_t *n)
{
	*n = nusers;
	return users;
}

void acl_users_add(struct acl_user *u)
{
	bool found;
	size_t at = users_pos(u->name, strlen(u->name), &found);

	xkv_assert(!found);
	u->refs = 1;
	users = xrealloc(users, (nusers + 1) * sizeof(*users));
	memmove(users + at + 1, users + at, (nusers - at) * sizeof(*users));
	users[at] = u;
	nusers++;
}

static int default_udp = ACL_UDP_OPEN;
static void (*default_listener)(void);

int acl_default_udp(void)
{
	return __atomic_load_n(&default_udp, __ATOMIC_ACQUIRE);
}

void acl_on_default_change(void (*fn)(void))
{
	default_listener = fn;
}

static void acl_default_flags_changed(void)
{
	bool needs =
		!(default_user->flags & ACL_USER_NOPASS) || (default_user->flags & ACL_USER_OFF);
	int udp = (default_user->flags & ACL_USER_OFF)			  ? ACL_UDP_OFF
		  : __atomic_load_n(&default_user->all, __ATOMIC_RELAXED) ? ACL_UDP_OPEN
									  : ACL_UDP_CHECKED;

	__atomic_store_n(&acl_default_needs_auth, needs, __ATOMIC_RELAXED);
	__atomic_store_n(&default_nopass, !!(default_user->flags & ACL_USER_NOPASS),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&default_udp, udp, __ATOMIC_RELEASE);
	if (default_listener)
		default_listener();
}

/* The config file's user lines (config_load, before the workers). */
static struct config_user {
	char **args;
	size_t *lens;
	int n;
} * config_users;
static int nconfig_users;

void acl_config_user(char **args, const size_t *lens, int n)
{
	struct config_user *cu;

	config_users = xrealloc(config_users, (size_t)(nconfig_users + 1) * sizeof(*config_users));
	cu = &config_users[nconfig_users++];
	cu->args = xmalloc((size_t)n * sizeof(*cu->args));
	cu->lens = xmalloc((size_t)n * sizeof(*cu->lens));
	cu->n = n;
	for (int i = 0; i < n; i++) {
		cu->args[i] = xstrndup(args[i], lens[i]);
		cu->lens[i] = lens[i];
	}
}

/* Applies the rules of a config user line (selectors spread over several
 * arguments joined, as Redis's ACLMergeSelectorArguments); 0, or -1 after
 * logging Redis's start-up error. */
static int acl_config_user_apply(struct acl_user *u, const struct config_user *cu)
{
	bool allchannels = config.acl_pubsub_default == 1;
	struct text sel = { 0 };
	bool open = false;

	for (int j = 1; j < cu->n; j++) {
		const char *op = cu->args[j];
		size_t len = cu->lens[j];
		int err;

		if (!open && len && op[0] == '(' && op[len - 1] != ')') {
			text_append(&sel, op, len);
			open = true;
			continue;
		}
		if (open) {
			text_append(&sel, " ", 1);
			text_append(&sel, op, len);
			if (!len || op[len - 1] != ')')
				continue;
			open = false;
			op = sel.p;
			len = sel.len;
		}
		err = acl_user_set(u, op, len, allchannels);
		if (err) {
			log_warning("Error loading ACL rule '%.*s' for the user named '%s': %s",
				    (int)len, op, cu->args[0], acl_strerror(err));
			xfree(sel.p);
			return -1;
		}
		sel.len = 0;
	}
	xfree(sel.p);
	if (open) {
		log_warning("Error in user declaration '%s': %s", cu->args[0],
			    "Unmatched parenthesis in acl selector");
		return -1;
	}
	return 0;
}

/* Redis's ACLLoadConfiguredUsers: "default" is reset first; a name twice is
 * an error. Exits on an error, as redis-server does. */
static void acl_load_config_users(void)
{
	if (nconfig_users && config.aclfile[0]) {
		log_warning(
			"Configuring Redis with users defined in redis.conf and at the same "
			"setting an ACL file path is invalid. This setup is very likely to lead "
			"to configuration errors and security holes, please define either an "
			"ACL file or declare users directly in your redis.conf, but not both.");
		exit(1);
	}
	for (int i = 0; i < nconfig_users; i++) {
		const struct config_user *cu = &config_users[i];
		struct acl_user *u;

		if (!strcmp(cu->args[0], "default")) {
			u = default_user;
			acl_user_set(u, "reset", 5, config.acl_pubsub_default == 1);
		} else {
			if (acl_users_find(cu->args[0], cu->lens[0])) {
				log_warning("Error in user declaration '%s': %s", cu->args[0],
					    acl_strerror(-EALREADY));
				exit(1);
			}
			u = acl_user_new(cu->args[0], cu->lens[0], config.acl_pubsub_default == 1);
			acl_users_add(u);
		}
		if (acl_config_user_apply(u, cu) < 0) {
			log_warning("Critical error while loading ACLs. Exiting.");
			exit(1);
		}
		if (!(u->flags & ACL_USER_ON))
			log_notice(
				"The user '%s' is disabled (there is no 'on' modifier in the "
				"user description). Make sure this is not a configuration error.",
				cu->args[0]);
	}
	acl_default_flags_changed();
}

void acl_users_init(void)
{
	static const char *const rules[] = { "+@all", "~*", "&*", "on", "nopass" };
	struct acl_user *u = acl_user_new("default", 7, false);

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		xkv_assert(acl_user_set(u, rules[i], strlen(rules[i]), false) == 0);
	default_user = u;
	acl_users_add(u);
	acl_set_default_password(config.requirepass);
	acl_load_config_users();
	if (config.aclfile[0]) {
		char *err = acl_file_load(config.aclfile);

		if (err) {
			log_warning("Aborting Redis startup because of ACL errors: %s", err);
			exit(1);
		}
	}
}

void acl_set_default_password(const char *pass)
{
	if (!default_user)
		return; /* the config file's: acl_users_init applies it */
	acl_lock_write();
	acl_user_set(default_user, "resetpass", 9, false);
	if (pass && pass[0]) {
		size_t len = strlen(pass);
		char *op = xmalloc(len + 2);

		op[0] = '>';
		memcpy(op + 1, pass, len + 1);
		acl_user_set(default_user, op, len + 1, false);
		xfree(op);
	} else {
		acl_user_set(default_user, "nopass", 6, false);
	}
	acl_default_flags_changed();
	acl_unlock();
}

static struct acl_user *acl_user_ref(struct acl_user *u)
{
	__atomic_add_fetch(&u->refs, 1, __ATOMIC_RELAXED);
	return u;
}

struct acl_user *acl_user_hold(struct acl_user *u)
{
	return u ? acl_user_ref(u) : NULL;
}

void acl_user_put(struct acl_user *u)
{
	if (u && __atomic_sub_fetch(&u->refs, 1, __ATOMIC_ACQ_REL) == 0)
		acl_user_free(u);
}

struct acl_user *acl_default_user_get(bool *authenticated)
{
	struct acl_user *u;

	if (!default_user) {
		/* Before acl_users_init (unit tests): no user, no restriction. */
		*authenticated = !config.requirepass[0];
		return NULL;
	}
	acl_lock_read();
	u = acl_user_ref(default_user);
	*authenticated = (u->flags & ACL_USER_NOPASS) && !(u->flags & ACL_USER_OFF);
	acl_unlock();
	return u;
}

void acl_client_set_user(struct client *c, struct acl_user *u, bool authenticated)
{
	struct acl_user *old;

	registry_lock();
	old = c->user;
	c->user = u;
	c->authenticated = authenticated;
	registry_unlock();
	acl_user_put(old);
}

static void acl_count(int reason)
{
	uint64_t *n = reason == ACL_DENIED_AUTH	 ? &denied_auth
		      : reason == ACL_DENIED_CMD ? &denied_cmd
		      : reason == ACL_DENIED_KEY ? &denied_key
						 : &denied_channel;

	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

bool acl_authenticate(struct client *c, const struct arg *user, const struct arg *pass)
{
	const char *name = user ? user->p : "default";
	size_t len = user ? user->len : 7;
	struct acl_user *u;
	bool ok = false;

	acl_lock_read();
	u = acl_users_find(name, len);
	if (u && !(u->flags & ACL_USER_OFF) && acl_user_check_password(u, pass->p, pass->len)) {
		acl_user_ref(u);
		ok = true;
	}
	acl_unlock();
	if (ok) {
		acl_client_set_user(c, u, true);
		return true;
	}
	acl_log_add(c, ACL_DENIED_AUTH, c->in_multi ? ACL_CTX_MULTI : ACL_CTX_TOPLEVEL,
		    c->argv[0].p, c->argv[0].len, name);
	return false;
}

static __thread char deny_msg[512];
static __thread int deny_reason;

const char *acl_last_deny(void)
{
	return deny_msg;
}

int acl_last_deny_reason(void)
{
	return deny_reason;
}

/* Redis's getAclErrorMessage, not verbose. */
static void acl_deny_message(int reason, const char *user, const struct command *cmd)
{
	if (reason == ACL_DENIED_CMD)
		snprintf(deny_msg, sizeof(deny_msg),
			 "User %s has no permissions to run the '%s' command", user, cmd->name);
	else if (reason == ACL_DENIED_KEY)
		snprintf(deny_msg, sizeof(deny_msg), "No permissions to access a key");
	else
		snprintf(deny_msg, sizeof(deny_msg), "No permissions to access a channel");
}

bool acl_check_slow(struct client *c, const struct command *cmd, int argc, const struct arg *argv,
		    enum acl_context ctx, bool reply)
{
	struct acl_user *u = c->user;
	int pos = 0, r;
	char name[256];

	acl_lock_read();
	if (u->deleted) {
		/* Its connection is being closed (DELUSER): nothing more runs. */
		acl_unlock();
		c->flags |= CLIENT_CLOSE_ASAP;
		deny_reason = ACL_DENIED_AUTH;
		snprintf(deny_msg, sizeof(deny_msg), "User %s was deleted", u->name);
		return false;
	}
	r = acl_user_check_command(u, cmd, argc, argv, &pos);
	snprintf(name, sizeof(name), "%s", u->name);
	acl_unlock();
	if (r == ACL_OK)
		return true;
	deny_reason = r;
	acl_deny_message(r, name, cmd);
	/* Redis's client-info shows the refused command (its lastcmd). */
	if (reply)
		__atomic_store_n(&c->last_cmd, cmd->name, __ATOMIC_RELAXED);
	if (r == ACL_DENIED_CMD)
		acl_log_add(c, r, ctx, cmd->name, strlen(cmd->name), name);
	else
		acl_log_add(c, r, ctx, argv[pos].p, argv[pos].len, name);
	if (reply)
		reply_errorf(c, "-NOPERM %s", deny_msg);
	return false;
}

bool acl_udp_allowed(const struct command *cmd, int argc, const struct arg *argv, char *msg,
		     size_t size)
{
	int pos = 0, r;

	if (!cmd)
		return true; /* udp.c refuses what it does not serve */
	acl_lock_read();
	r = acl_user_check_command(default_user, cmd, argc, argv, &pos);
	if (r != ACL_OK)
		acl_deny_message(r, "default", cmd);
	acl_unlock();
	if (r == ACL_OK)
		return true;
	/* Counted as a TCP denial is; ACL LOG keeps client entries only. */
	acl_count(r);
	snprintf(msg, size, "NOPERM %s", deny_msg);
	return false;
}

/* Closes the clients of a deleted user; write lock held (acl_users.h). */
static void acl_close_clients_of(struct client *self, struct acl_user *u)
{
	struct {
		struct worker *w;
		uint64_t id;
	} *victims = NULL;
	int n = 0;

	registry_lock();
	for (struct client *o = registry_first(); o; o = o->next_in_registry) {
		if (o->user != u || o->kill_requested)
			continue;
		if (o == self) {
			o->flags |= CLIENT_CLOSE_AFTER_REPLY;
			continue;
		}
		o->kill_requested = true;
		victims = xrealloc(victims, sizeof(*victims) * (size_t)(n + 1));
		victims[n].w = o->worker;
		victims[n].id = o->id;
		n++;
	}
	registry_unlock();
	for (int i = 0; i < n; i++)
		worker_post(victims[i].w, &worker_mail_kill, victims[i].id);
	xfree(victims);
}

bool acl_users_delete(struct client *self, const char *name, size_t len)
{
	bool found;
	size_t at = users_pos(name, len, &found);
	struct acl_user *u;

	if (!found)
		return false;
	u = users[at];
	memmove(users + at, users + at + 1, (nusers - at - 1) * sizeof(*users));
	nusers--;
	u->deleted = true;
	__atomic_store_n(&u->all, false, __ATOMIC_RELAXED);
	acl_close_clients_of(self, u);
	acl_user_put(u);
	return true;
}

/* Delivered on a subscribed client's own worker after its user's channels
 * changed: it goes if a subscription is no longer allowed. */
static void acl_recheck_deliver(struct worker *w, uint64_t id, void *payload)
{
	struct client *c = worker_find_client(w, id);
	bool ok;

	(void)payload;
	if (!c || !c->user || c->closing)
		return;
	acl_lock_read();
	ok = pubsub_client_allowed(c, c->user);
	acl_unlock();
	if (!ok)
		w->engine->close_client(c);
}

void acl_recheck_self(struct client *c)
{
	bool ok;

	if (!c->user || !pubsub_client_subscribed(c))
		return;
	acl_lock_read();
	ok = pubsub_client_allowed(c, c->user);
	acl_unlock();
	if (!ok)
		c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

static const struct mail_ops acl_mail_recheck = { .deliver = acl_recheck_deliver };

void acl_user_changed(struct client *self, struct acl_user *u)
{
	struct {
		struct worker *w;
		uint64_t id;
	} *subs = NULL;
	int n = 0;

	if (u == default_user)
		acl_default_flags_changed();
	registry_lock();
	for (struct client *o = registry_first(); o; o = o->next_in_registry) {
		if (o->user != u || o->kill_requested ||
		    !__atomic_load_n(&o->pubsub_counts[0], __ATOMIC_RELAXED) +
				    __atomic_load_n(&o->pubsub_counts[1], __ATOMIC_RELAXED) +
				    __atomic_load_n(&o->pubsub_counts[2], __ATOMIC_RELAXED) ==
			    0)
			continue;
		subs = xrealloc(subs, sizeof(*subs) * (size_t)(n + 1));
		subs[n].w = o->worker;
		subs[n].id = o->id;
		n++;
	}
	registry_unlock();
	for (int i = 0; i < n; i++) {
		if (self && subs[i].id == self->id)
			continue; /* checked by the caller once it has replied */
		worker_post(subs[i].w, &acl_mail_recheck, subs[i].id);
	}
	xfree(subs);
}

/* The ACL LOG, newest first; log_lock protects it. */
struct acl_log_entry {
	long long count;
	int reason, ctx;
	char *object, *username, *cinfo;
	size_t olen;
	int64_t ctime, created;
	long long id;
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct acl_log_entry *acl_log;
static size_t acl_log_len;
static long long acl_log_next_id;

static void acl_log_entry_free(struct acl_log_entry *e)
{
	xfree(e->object);
	xfree(e->username);
	xfree(e->cinfo);
}

static void acl_log_trim(size_t max)
{
	while (acl_log_len > max)
		acl_log_entry_free(&acl_log[--acl_log_len]);
}

void acl_log_add(struct client *c, int reason, enum acl_context ctx, const char *object,
		 size_t object_len, const char *username)
{
	size_t max = (size_t)__atomic_load_n(&config.acllog_max_len, __ATOMIC_RELAXED);
	int64_t now = now_ms();
	char *cinfo;
	size_t i;

	acl_count(reason);
	if (max == 0) {
		pthread_mutex_lock(&log_lock);
		acl_log_trim(0);
		pthread_mutex_unlock(&log_lock);
		return;
	}
	cinfo = client_info_line(c);
	pthread_mutex_lock(&log_lock);
	/* A like entry among the last ten within a minute is bumped. */
	for (i = 0; i < acl_log_len && i < 10; i++) {
		struct acl_log_entry *e = &acl_log[i];
		int64_t delta = now - e->ctime;

		if (e->reason == reason && e->ctx == (int)ctx &&
		    (delta < 0 ? -delta : delta) <= 60000 && e->olen == object_len &&
		    !memcmp(e->object, object, object_len) && !strcmp(e->username, username))
			break;
	}
	if (i < acl_log_len && i < 10) {
		struct acl_log_entry e = acl_log[i];

		memmove(acl_log + 1, acl_log, i * sizeof(*acl_log));
		xfree(e.cinfo);
		e.cinfo = cinfo;
		e.ctime = now;
		e.count++;
		acl_log[0] = e;
	} else {
		acl_log = xrealloc(acl_log, (acl_log_len + 1) * sizeof(*acl_log));
		memmove(acl_log + 1, acl_log, acl_log_len * sizeof(*acl_log));
		acl_log[0] = (struct acl_log_entry){
			.count = 1,
			.reason = reason,
			.ctx = (int)ctx,
			.object = xstrndup(object, object_len),
			.olen = object_len,
			.username = xstrndup(username, strlen(username)),
			.cinfo = cinfo,
			.ctime = now,
			.created = now,
			.id = acl_log_next_id++,
		};
		acl_log_len++;
		acl_log_trim(max);
	}
	pthread_mutex_unlock(&log_lock);
}

void acl_log_reset(void)
{
	pthread_mutex_lock(&log_lock);
	acl_log_trim(0);
	pthread_mutex_unlock(&log_lock);
}

void acl_log_reply(struct client *c, long count)
{
	static const char *const reasons[] = { "unknown", "command", "key", "auth", "channel" };
	static const char *const contexts[] = { "toplevel", "multi", "lua" };
	int64_t now = now_ms();

	pthread_mutex_lock(&log_lock);
	if ((size_t)count > acl_log_len)
		count = (long)acl_log_len;
	reply_array(c, count);
	for (long i = 0; i < count; i++) {
		const struct acl_log_entry *e = &acl_log[i];

		reply_map(c, 10);
		reply_bulk_cstr(c, "count");
		reply_int(c, e->count);
		reply_bulk_cstr(c, "reason");
		reply_bulk_cstr(c, reasons[e->reason]);
		reply_bulk_cstr(c, "context");
		reply_bulk_cstr(c, contexts[e->ctx]);
		reply_bulk_cstr(c, "object");
		reply_bulk(c, e->object, e->olen);
		reply_bulk_cstr(c, "username");
		reply_bulk_cstr(c, e->username);
		reply_bulk_cstr(c, "age-seconds");
		reply_double(c, (double)(now - e->ctime) / 1000);
		reply_bulk_cstr(c, "client-info");
		reply_bulk_cstr(c, e->cinfo);
		reply_bulk_cstr(c, "entry-id");
		reply_int(c, e->id);
		reply_bulk_cstr(c, "timestamp-created");
		reply_int(c, e->created);
		reply_bulk_cstr(c, "timestamp-last-updated");
		reply_int(c, e->ctime);
	}
	pthread_mutex_unlock(&log_lock);
}

void acl_info(struct text *t)
{
	text_printf(t,
		    "acl_access_denied_auth:%llu\r\n"
		    "acl_access_denied_cmd:%llu\r\n"
		    "acl_access_denied_key:%llu\r\n"
		    "acl_access_denied_channel:%llu\r\n"
		    "acl_access_denied_tls_cert:0\r\n",
		    (unsigned long long)__atomic_load_n(&denied_auth, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&denied_cmd, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&denied_key, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&denied_channel, __ATOMIC_RELAXED));
}

void acl_stats_reset(void)
{
	__atomic_store_n(&denied_auth, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&denied_cmd, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&denied_key, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&denied_channel, 0, __ATOMIC_RELAXED);
}

/* One "user name rule ..." line into a staged table; errors into t. */
static void acl_file_line(struct text *t, const char *path, int lnum, char *line,
			  struct acl_user ***staged, size_t *nstaged)
{
	bool allchannels = config.acl_pubsub_default == 1;
	char *argv[1024];
	size_t lens[1024];
	int argc = 0, open = -1;
	struct acl_user *u;
	bool syntax = false;

	/* Split on single blanks, as Redis (no quotes). */
	for (char *p = line; argc < 1024;) {
		char *sp = strchr(p, ' ');

		argv[argc] = p;
		lens[argc] = sp ? (size_t)(sp - p) : strlen(p);
		argc++;
		if (!sp)
			break;
		*sp = '\0';
		p = sp + 1;
	}
	if (strcmp(argv[0], "user") || argc < 2) {
		text_printf(t, "%s:%d should start with user keyword followed by the username. ",
			    path, lnum);
		return;
	}
	for (size_t i = 0; i < lens[1]; i++) {
		if (strchr(" \t\r\n\v\f", argv[1][i])) {
			text_printf(t, "'%s:%d: username '%s' contains invalid characters. ", path,
				    lnum, argv[1]);
			return;
		}
	}
	for (size_t i = 0; i < *nstaged; i++) {
		if (!strcmp((*staged)[i]->name, argv[1])) {
			text_printf(t, "WARNING: Duplicate user '%s' found on line %d. ", argv[1],
				    lnum);
			return;
		}
	}
	u = acl_user_new(argv[1], lens[1], allchannels);
	*staged = xrealloc(*staged, (*nstaged + 1) * sizeof(**staged));
	(*staged)[(*nstaged)++] = u;
	/* Selectors spread over several words are one rule. */
	for (int j = 2; j < argc; j++) {
		char *op = argv[j];
		size_t len = lens[j];
		int err;

		if (open < 0 && len && op[0] == '(' && op[len - 1] != ')') {
			open = j;
			continue;
		}
		if (open >= 0) {
			if (!len || op[len - 1] != ')')
				continue;
			/* The words between were split in place: join them back. */
			for (int k = open; k < j; k++)
				argv[k][lens[k]] = ' ';
			op = argv[open];
			len = (size_t)(argv[j] + lens[j] - argv[open]);
			open = -1;
		}
		while (len && strchr("\t\r\n", op[len - 1]))
			len--;
		err = acl_user_set(u, op, len, allchannels);
		if (!err)
			continue;
		if (err == -ENOENT) {
			char save = op[len];

			op[len] = '\0';
			text_printf(t, "%s:%d: Error in applying operation '%s': %s. ", path, lnum,
				    op, acl_strerror(err));
			op[len] = save;
		} else if (!syntax) {
			text_printf(t, "%s:%d: %s. ", path, lnum, acl_strerror(err));
			syntax = true;
		}
	}
	if (open >= 0)
		text_printf(t, "%s:%d: Unmatched parenthesis in selector definition.", path, lnum);
}

char *acl_file_load(const char *path)
{
	struct text t = { 0 };
	struct acl_user **staged = NULL, **old;
	size_t nstaged = 0, nold;
	FILE *fp = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	int lnum = 0;

	if (!fp) {
		text_printf(&t, "Error loading ACLs, opening file '%s': %s", path, strerror(errno));
		return t.p;
	}
	while (getline(&buf, &cap, fp) >= 0) {
		char *line = buf, *end;

		lnum++;
		while (*line && strchr(" \t\r\n", *line))
			line++;
		end = line + strlen(line);
		while (end > line && strchr(" \t\r\n", end[-1]))
			*--end = '\0';
		if (!*line || *line == '#')
			continue;
		acl_file_line(&t, path, lnum, line, &staged, &nstaged);
	}
	free(buf);
	fclose(fp);
	if (t.p && t.p[0]) {
		for (size_t i = 0; i < nstaged; i++)
			acl_user_free(staged[i]);
		xfree(staged);
		text_printf(&t, "WARNING: ACL errors detected, no change to the previously active "
				"ACL rules was performed");
		return t.p;
	}
	xfree(t.p);
	acl_lock_write();
	/* Users kept by name are changed in place, so their clients stay
	 * theirs (Redis moves them to the new user); the others go, closing
	 * their clients. A file without "default" gives the first default. */
	old = xmalloc((nusers + 1) * sizeof(*old));
	nold = nusers;
	memcpy(old, users, nusers * sizeof(*old));
	for (size_t i = 0; i < nold; i++) {
		bool keep = false;

		for (size_t j = 0; j < nstaged && !keep; j++)
			keep = !strcmp(staged[j]->name, old[i]->name);
		if (!keep && old[i] != default_user)
			acl_users_delete(NULL, old[i]->name, strlen(old[i]->name));
	}
	xfree(old);
	{
		bool have_default = false;

		for (size_t j = 0; j < nstaged; j++)
			have_default |= !strcmp(staged[j]->name, "default");
		if (!have_default) {
			static const char *const rules[] = { "+@all", "~*", "&*", "on", "nopass" };
			struct acl_user *d = acl_user_new("default", 7, false);

			for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
				acl_user_set(d, rules[i], strlen(rules[i]), false);
			staged = xrealloc(staged, (nstaged + 1) * sizeof(*staged));
			staged[nstaged++] = d;
		}
	}
	for (size_t j = 0; j < nstaged; j++) {
		struct acl_user *u = acl_users_find(staged[j]->name, strlen(staged[j]->name));

		if (u) {
			acl_user_replace(u, staged[j]);
			acl_user_changed(NULL, u);
		} else {
			acl_users_add(staged[j]);
		}
	}
	acl_default_flags_changed();
	acl_unlock();
	xfree(staged);
	return NULL;
}

char **acl_users_lines(size_t *n)
{
	char **lines;

	acl_lock_read();
	*n = nusers;
	lines = xmalloc((nusers + 1) * sizeof(*lines));
	for (size_t i = 0; i < nusers; i++) {
		size_t dl = acl_user_describe(users[i], NULL, 0), nl = strlen(users[i]->name);
		char *p = xmalloc(5 + nl + 1 + dl + 1);

		memcpy(p, "user ", 5);
		memcpy(p + 5, users[i]->name, nl);
		p[5 + nl] = ' ';
		acl_user_describe(users[i], p + 6 + nl, dl + 1);
		lines[i] = p;
	}
	acl_unlock();
	return lines;
}

int acl_file_save(const char *path)
{
	struct text t = { 0 };
	char tmp[4096];
	int fd, err = 0;
	size_t off = 0;

	acl_lock_read();
	for (size_t i = 0; i < nusers; i++) {
		size_t n = acl_user_describe(users[i], NULL, 0);
		char *d = xmalloc(n + 1);

		acl_user_describe(users[i], d, n + 1);
		text_printf(&t, "user %s %s\n", users[i]->name, d);
		xfree(d);
	}
	acl_unlock();
	snprintf(tmp, sizeof(tmp), "%s.tmp-%d-%lld", path, (int)getpid(), (long long)now_ms());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		err = -errno;
		log_warning("Opening temp ACL file for ACL SAVE: %s", strerror(errno));
		goto out;
	}
	while (t.p && off < t.len) {
		ssize_t w = write(fd, t.p + off, t.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = -errno;
			log_warning("Writing ACL file for ACL SAVE: %s", strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || rename(tmp, path) < 0) {
		err = -errno;
		log_warning("Saving ACL file for ACL SAVE: %s", strerror(errno));
	}
out:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	xfree(t.p);
	return err;
}
