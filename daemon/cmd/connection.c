// SPDX-License-Identifier: BSD-3-Clause
/* Connection commands: PING ECHO QUIT SELECT AUTH HELLO RESET CLIENT. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "commands.h"
#include "config.h"
#include "acl_users.h"
#include "blocking.h"
#include "mem.h"
#include "monitor.h"
#include "multi.h"
#include "pause.h"
#include "pubsub.h"
#include "text.h"
#include "tracking.h"
#include "util.h"
#include "worker.h"

/* What HELLO and INFO present, for clients that check the server version. */
#define REDIS_COMPAT_VERSION "7.0.15"

void cmd_ping(struct client *c)
{
	if (c->argc > 2) {
		reply_errorf(c, "wrong number of arguments for '%s' command", "ping");
		return;
	}
	/* A RESP2 subscriber gets PING's answer in the shape of a push. */
	if (c->resp == 2 && pubsub_client_subscribed(c)) {
		reply_array(c, 2);
		reply_bulk(c, "pong", 4);
		if (c->argc == 2)
			reply_bulk(c, c->argv[1].p, c->argv[1].len);
		else
			reply_bulk(c, "", 0);
	} else if (c->argc == 2) {
		reply_bulk(c, c->argv[1].p, c->argv[1].len);
	} else {
		reply_status(c, "PONG");
	}
}

void cmd_echo(struct client *c)
{
	reply_bulk(c, c->argv[1].p, c->argv[1].len);
}

void cmd_quit(struct client *c)
{
	reply_ok(c);
	c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

void cmd_select(struct client *c)
{
	long long db;

	if (!str_to_ll(c->argv[1].p, c->argv[1].len, &db)) {
		reply_error(c, ERR_NOT_INT);
		return;
	}
	if (db < INT_MIN || db > INT_MAX) {
		reply_error(c,
			    "value is out of range, value must between -2147483648 and 2147483647");
		return;
	}
	if (cluster_enabled() && db != 0) {
		reply_error(c, "SELECT is not allowed in cluster mode");
		return;
	}
	if (db < 0 || db >= store.ndbs) {
		reply_error(c, ERR_DB_INDEX);
		return;
	}
	__atomic_store_n(&c->db, (int)db, __ATOMIC_RELAXED);
	reply_ok(c);
}

#define ERR_WRONGPASS "-WRONGPASS invalid username-password pair or user is disabled."

void cmd_auth(struct client *c)
{
	bool nopass;

	if (c->argc > 3) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	/* Monitors never see credentials. */
	for (int i = 1; i < c->argc; i++)
		monitor_redact(c, i);
	if (c->argc == 2) {
		acl_lock_read();
		nopass = acl_users_find("default", 7)->flags & ACL_USER_NOPASS;
		acl_unlock();
		if (nopass) {
			reply_error(
				c, "AUTH <password> called without any password configured for "
				   "the default user. Are you sure your configuration is correct?");
			return;
		}
	}
	if (!acl_authenticate(c, c->argc == 3 ? &c->argv[1] : NULL, &c->argv[c->argc - 1])) {
		reply_error(c, ERR_WRONGPASS);
		return;
	}
	reply_ok(c);
}

/* Client names and library fields are printable ASCII without spaces. */
static bool valid_name(const struct arg *a)
{
	for (size_t i = 0; i < a->len; i++)
		if (a->p[i] < '!' || a->p[i] > '~')
			return false;
	return true;
}

static void set_field(char **field, const struct arg *a)
{
	char *value = a->len ? xstrndup(a->p, a->len) : NULL, *old;

	registry_lock();
	old = *field;
	*field = value;
	registry_unlock();
	xfree(old);
}

void cmd_hello(struct client *c)
{
	long long ver = c->resp;
	int i = 1;
	const struct arg *setname = NULL, *user = NULL;

	if (c->argc >= 2) {
		if (!str_to_ll(c->argv[1].p, c->argv[1].len, &ver)) {
			reply_error(c, "Protocol version is not an integer or out of range");
			return;
		}
		if (ver < 2 || ver > 3) {
			reply_error(c, "-NOPROTO unsupported protocol version");
			return;
		}
		i = 2;
	}
	/* Options first, then the credentials (the last AUTH given), then the
	 * name, in Redis's order. */
	for (; i < c->argc; i++) {
		int left = c->argc - i - 1;

		if (arg_is(c, i, "AUTH") && left >= 2) {
			monitor_redact(c, i + 1);
			monitor_redact(c, i + 2);
			user = &c->argv[i + 1];
			i += 2;
		} else if (arg_is(c, i, "SETNAME") && left >= 1) {
			setname = &c->argv[i + 1];
			i++;
		} else {
			reply_errorf(c, "Syntax error in HELLO option '%.128s'", c->argv[i].p);
			return;
		}
	}
	if (user && !acl_authenticate(c, user, user + 1)) {
		reply_error(c, ERR_WRONGPASS);
		return;
	}
	if (acl_auth_required(c)) {
		reply_error(c,
			    "-NOAUTH HELLO must be called with the client already authenticated, "
			    "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
			    "authenticate the client and select the RESP protocol version at the "
			    "same time");
		return;
	}
	if (setname) {
		if (!valid_name(setname)) {
			reply_error(c, "Client names cannot contain spaces, newlines or special "
				       "characters.");
			return;
		}
		set_field(&c->name, setname);
	}
	__atomic_store_n(&c->resp, (int)ver, __ATOMIC_RELAXED);

	reply_map(c, 7);
	reply_bulk_cstr(c, "server");
	reply_bulk_cstr(c, "redis");
	reply_bulk_cstr(c, "version");
	reply_bulk_cstr(c, REDIS_COMPAT_VERSION);
	reply_bulk_cstr(c, "proto");
	reply_int(c, ver);
	reply_bulk_cstr(c, "id");
	reply_int(c, (long long)c->id);
	reply_bulk_cstr(c, "mode");
	reply_bulk_cstr(c, "standalone");
	reply_bulk_cstr(c, "role");
	reply_bulk_cstr(c, "master");
	reply_bulk_cstr(c, "modules");
	reply_array(c, 0);
}

void cmd_reset(struct client *c)
{
	static const struct arg none = { NULL, 0 };

	multi_reset(c);
	do_multi_unwatch(c);
	monitor_stop(c);
	tracking_disable(c);
	for (int k = 0; k < PUBSUB_KINDS; k++)
		pubsub_unsubscribe_all(c, k, false);
	/* As Redis 7.0: CLIENT REPLY back on (a SKIP in force still mutes this
	 * reply); NO-EVICT stays; NO-TOUCH (7.2) goes, as 7.2 does. */
	c->flags &= ~(CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP_NEXT | CLIENT_NO_TOUCH | CLIENT_ASKING |
		      CLIENT_READONLY);
	__atomic_store_n(&c->db, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->resp, 2, __ATOMIC_RELAXED);
	if (c->user) {
		bool authenticated;
		struct acl_user *u = acl_default_user_get(&authenticated);

		acl_client_set_user(c, u, authenticated);
	}
	set_field(&c->name, &none);
	reply_status(c, "RESET");
}

void cmd_client_id(struct client *c)
{
	reply_int(c, (long long)c->id);
}

void cmd_client_setname(struct client *c)
{
	if (!valid_name(&c->argv[2])) {
		reply_error(c,
			    "Client names cannot contain spaces, newlines or special characters.");
		return;
	}
	set_field(&c->name, &c->argv[2]);
	reply_ok(c);
}

void cmd_client_getname(struct client *c)
{
	if (c->name)
		reply_bulk_cstr(c, c->name);
	else
		reply_null(c);
}

void cmd_client_setinfo(struct client *c)
{
	char **field;

	if (arg_is(c, 2, "LIB-NAME"))
		field = &c->lib_name;
	else if (arg_is(c, 2, "LIB-VER"))
		field = &c->lib_ver;
	else {
		reply_errorf(c, "Unrecognized option '%.128s'", c->argv[2].p);
		return;
	}
	if (!valid_name(&c->argv[3])) {
		reply_errorf(c, "%s cannot contain spaces, newlines or special characters.",
			     field == &c->lib_name ? "lib-name" : "lib-ver");
		return;
	}
	set_field(field, &c->argv[3]);
	reply_ok(c);
}

void cmd_client_info(struct client *c)
{
	char *line;
	size_t len;

	registry_lock();
	line = client_info_line(c);
	registry_unlock();
	len = strlen(line);
	line = xrealloc(line, len + 2);
	line[len++] = '\n';
	reply_verbatim(c, line, len);
	xfree(line);
}

void cmd_client_list(struct client *c)
{
	struct text out = { 0 };
	long long *ids = NULL;
	int nids = 0, i = 2, type = -1; /* -1 any, 0 normal, 1 replica */

	while (i < c->argc) {
		if (arg_is(c, i, "TYPE") && i + 1 < c->argc) {
			if (!arg_is(c, i + 1, "normal") && !arg_is(c, i + 1, "master") &&
			    !arg_is(c, i + 1, "replica") && !arg_is(c, i + 1, "slave") &&
			    !arg_is(c, i + 1, "pubsub")) {
				reply_errorf(c, "Unknown client type '%.128s'", c->argv[i + 1].p);
				goto out;
			}
			/* Replicas and normal clients (no master or pubsub type here). */
			if (arg_is(c, i + 1, "replica") || arg_is(c, i + 1, "slave")) {
				type = 1;
			} else if (!arg_is(c, i + 1, "normal")) {
				reply_verbatim(c, "", 0);
				goto out;
			} else {
				type = 0;
			}
			i += 2;
		} else if (arg_is(c, i, "ID") && i + 1 < c->argc) {
			for (i++; i < c->argc; i++) {
				long long id;

				if (!str_to_ll(c->argv[i].p, c->argv[i].len, &id) || id <= 0) {
					reply_error(c, "Invalid client ID");
					goto out;
				}
				ids = xrealloc(ids, sizeof(*ids) * (nids + 1));
				ids[nids++] = id;
			}
		} else {
			reply_error(c, ERR_SYNTAX);
			goto out;
		}
	}
	registry_lock();
	for (struct client *o = registry_first(); o; o = o->next_in_registry) {
		bool wanted = !ids;
		char *line;

		for (int j = 0; j < nids; j++)
			wanted |= (unsigned long long)ids[j] == o->id;
		if (!wanted || (type >= 0 && type != !!(o->flags & CLIENT_REPLICA)))
			continue;
		line = client_info_line(o);
		text_printf(&out, "%s\n", line);
		xfree(line);
	}
	registry_unlock();
	reply_verbatim(c, out.p ? out.p : "", out.len);
out:
	xfree(out.p);
	xfree(ids);
}

struct kill_filter {
	long long id; /* 0: any */
	const struct arg *addr, *laddr;
	bool skipme;
	long long maxage;	/* seconds, 0: any */
	int type;		/* TYPE: -1 any, 0 normal, 1 replica */
	bool other_type;	/* TYPE master or pubsub: matches nobody */
	const struct arg *user; /* USER: the clients authenticated as it */
};

static bool kill_matches(const struct kill_filter *f, struct client *self, struct client *o,
			 int64_t now)
{
	if (f->other_type || o->kill_requested)
		return false;
	/* A user's name never changes; o->user changes under the registry
	 * lock, which the caller holds. */
	if (f->user && (!o->user || strlen(o->user->name) != f->user->len ||
			memcmp(o->user->name, f->user->p, f->user->len)))
		return false;
	if (f->skipme && o == self)
		return false;
	if (f->type >= 0 && f->type != !!(o->flags & CLIENT_REPLICA))
		return false;
	if (f->id && (unsigned long long)f->id != o->id)
		return false;
	if (f->addr &&
	    (strlen(o->addr) != f->addr->len || memcmp(o->addr, f->addr->p, f->addr->len)))
		return false;
	if (f->laddr &&
	    (strlen(o->laddr) != f->laddr->len || memcmp(o->laddr, f->laddr->p, f->laddr->len)))
		return false;
	if (f->maxage && (now - o->ctime_ms) / 1000 < f->maxage)
		return false;
	return true;
}

void cmd_client_kill(struct client *c)
{
	struct kill_filter f = { .skipme = true, .type = -1 };
	struct {
		struct worker *w;
		uint64_t id;
	} *victims = NULL;
	int nvictims = 0;
	bool old_form = c->argc == 3;
	int64_t now = mono_ms();

	if (old_form) {
		f.addr = &c->argv[2];
		f.skipme = false;
	} else {
		if (c->argc % 2 != 0) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		for (int i = 2; i < c->argc; i += 2) {
			const struct arg *v = &c->argv[i + 1];
			long long n;

			if (arg_is(c, i, "ID")) {
				if (!str_to_ll(v->p, v->len, &n) || n <= 0) {
					reply_error(c, "client-id should be greater than 0");
					return;
				}
				f.id = n;
			} else if (arg_is(c, i, "ADDR")) {
				f.addr = v;
			} else if (arg_is(c, i, "LADDR")) {
				f.laddr = v;
			} else if (arg_is(c, i, "TYPE")) {
				if (arg_is(c, i + 1, "normal")) {
					f.type = 0;
					continue;
				}
				if (arg_is(c, i + 1, "replica") || arg_is(c, i + 1, "slave")) {
					f.type = 1;
					continue;
				}
				if (!arg_is(c, i + 1, "master") && !arg_is(c, i + 1, "pubsub")) {
					reply_errorf(c, "Unknown client type '%.128s'", v->p);
					return;
				}
				f.other_type = true;
			} else if (arg_is(c, i, "USER")) {
				bool known;

				acl_lock_read();
				known = acl_users_find(v->p, v->len) != NULL;
				acl_unlock();
				if (!known) {
					reply_errorf(c, "No such user '%.128s'", v->p);
					return;
				}
				f.user = v;
			} else if (arg_is(c, i, "SKIPME")) {
				if (arg_is(c, i + 1, "yes"))
					f.skipme = true;
				else if (arg_is(c, i + 1, "no"))
					f.skipme = false;
				else {
					reply_error(c, ERR_SYNTAX);
					return;
				}
			} else if (arg_is(c, i, "MAXAGE")) {
				if (!str_to_ll(v->p, v->len, &n)) {
					reply_error(c, "maxage is not an integer or out of range");
					return;
				}
				if (n <= 0) {
					reply_error(c, "maxage should be greater than 0");
					return;
				}
				f.maxage = n;
			} else {
				reply_error(c, ERR_SYNTAX);
				return;
			}
		}
	}

	registry_lock();
	for (struct client *o = registry_first(); o; o = o->next_in_registry) {
		if (!kill_matches(&f, c, o, now))
			continue;
		/* Marked now, so a second KILL cannot count it again before
		 * its worker has closed it. */
		o->kill_requested = true;
		victims = xrealloc(victims, sizeof(*victims) * (nvictims + 1));
		victims[nvictims].w = o->worker;
		victims[nvictims].id = o->id;
		nvictims++;
	}
	registry_unlock();

	/* The owner of each victim closes it; killing oneself waits for the
	 * reply to go out. */
	for (int i = 0; i < nvictims; i++) {
		if (victims[i].id == c->id)
			c->flags |= CLIENT_CLOSE_AFTER_REPLY;
		else
			worker_post(victims[i].w, &worker_mail_kill, victims[i].id);
	}
	xfree(victims);
	if (old_form) {
		if (nvictims == 0)
			reply_error(c, "No such client");
		else
			reply_ok(c);
	} else {
		reply_int(c, nvictims);
	}
}

/* Redis's answer to a subcommand given the wrong number of arguments that
 * its own parser (rather than the table) checks. */
static void reply_subcommand_syntax(struct client *c)
{
	reply_errorf(c,
		     "unknown subcommand or wrong number of arguments for '%.128s'. Try CLIENT "
		     "HELP.",
		     c->argv[1].p);
}

void cmd_client_pause(struct client *c)
{
	enum pause_type type = PAUSE_ALL;
	long long ms;
	int64_t now;

	if (c->argc > 4) {
		reply_subcommand_syntax(c);
		return;
	}
	/* The mode is checked before the timeout, as Redis does. */
	if (c->argc == 4) {
		if (arg_is(c, 3, "WRITE")) {
			type = PAUSE_WRITE;
		} else if (!arg_is(c, 3, "ALL")) {
			reply_error(c, "CLIENT PAUSE mode must be WRITE or ALL");
			return;
		}
	}
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &ms)) {
		reply_error(c, "timeout is not an integer or out of range");
		return;
	}
	if (ms < 0) {
		reply_error(c, "timeout is negative");
		return;
	}
	now = mono_ms();
	/* Redis 7.0 adds the timeout to the clock with no overflow check: a
	 * deadline past the range wraps into the past, so it ends at once. */
	pause_start(ms > INT64_MAX - now ? now : now + ms, type);
	reply_ok(c);
}

void cmd_client_unpause(struct client *c)
{
	pause_stop();
	reply_ok(c);
}

void cmd_client_reply(struct client *c)
{
	if (arg_is(c, 2, "ON")) {
		c->flags &= ~(CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP);
		reply_ok(c);
	} else if (arg_is(c, 2, "OFF")) {
		c->flags |= CLIENT_REPLY_OFF;
	} else if (arg_is(c, 2, "SKIP")) {
		/* The command after this one goes unanswered (client.h). */
		if (!(c->flags & CLIENT_REPLY_OFF))
			c->flags |= CLIENT_REPLY_SKIP_NEXT;
	} else {
		reply_error(c, ERR_SYNTAX);
	}
}

void cmd_client_unblock(struct client *c)
{
	bool error = false;
	long long id;

	if (c->argc > 4) {
		reply_subcommand_syntax(c);
		return;
	}
	if (c->argc == 4) {
		if (arg_is(c, 3, "ERROR")) {
			error = true;
		} else if (!arg_is(c, 3, "TIMEOUT")) {
			reply_error(c, "CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
			return;
		}
	}
	if (!arg_ll(c, 2, &id))
		return;
	/* Only clients blocked in BLPOP & co.; one held by CLIENT PAUSE is not
	 * blocked in that sense here. */
	reply_int(c, id > 0 && blocking_unblock_id((uint64_t)id, error));
}

/* CLIENT NO-EVICT / NO-TOUCH: ON or OFF sets or clears flag. */
static void client_switch(struct client *c, unsigned flag)
{
	if (arg_is(c, 2, "ON")) {
		__atomic_fetch_or(&c->flags, flag, __ATOMIC_RELAXED);
	} else if (arg_is(c, 2, "OFF")) {
		__atomic_fetch_and(&c->flags, ~flag, __ATOMIC_RELAXED);
	} else {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	reply_ok(c);
}

void cmd_client_no_evict(struct client *c)
{
	client_switch(c, CLIENT_NO_EVICT);
}

void cmd_client_no_touch(struct client *c)
{
	client_switch(c, CLIENT_NO_TOUCH);
}

/* The worker of the client with this id, or NULL if there is none. */
static struct worker *worker_of_client(uint64_t id)
{
	struct worker *w = NULL;

	registry_lock();
	for (struct client *o = registry_first(); o; o = o->next_in_registry) {
		if (o->id == id) {
			w = o->worker;
			break;
		}
	}
	registry_unlock();
	return w;
}

/* The checks of CLIENT TRACKING ON's options among themselves and against
 * c's current mode, with Redis's errors; true if they pass. */
static bool tracking_options_ok(struct client *c, unsigned opts, const struct arg *p, int n)
{
	unsigned cur = tracking_flags(c);

	if (!(opts & TRACKING_BCAST) && n) {
		reply_error(c, "PREFIX option requires BCAST mode to be enabled");
		return false;
	}
	if ((cur & TRACKING_ON) && !!(cur & TRACKING_BCAST) != !!(opts & TRACKING_BCAST)) {
		reply_error(c, "You can't switch BCAST mode on/off before disabling tracking for "
			       "this client, and then re-enabling it with a different mode.");
		return false;
	}
	if ((opts & TRACKING_BCAST) && (opts & (TRACKING_OPTIN | TRACKING_OPTOUT))) {
		reply_error(c, "OPTIN and OPTOUT are not compatible with BCAST");
		return false;
	}
	if ((opts & TRACKING_OPTIN) && (opts & TRACKING_OPTOUT)) {
		reply_error(c, "You can't specify both OPTIN mode and OPTOUT mode");
		return false;
	}
	if (((opts & TRACKING_OPTIN) && (cur & TRACKING_OPTOUT)) ||
	    ((opts & TRACKING_OPTOUT) && (cur & TRACKING_OPTIN))) {
		reply_error(c, "You can't switch OPTIN/OPTOUT mode before disabling tracking for "
			       "this client, and then re-enabling it with a different mode.");
		return false;
	}
	for (int i = 0; (opts & TRACKING_BCAST) && i < n; i++) {
		size_t len;
		bool own;
		const char *o = tracking_prefix_overlap(c, p, n, i, &len, &own);

		if (o) {
			reply_errorf(c,
				     "Prefix '%s' overlaps with %s prefix '%.*s'. Prefixes for a "
				     "single client must not overlap.",
				     p[i].p, own ? "an existing" : "another provided", (int)len, o);
			return false;
		}
	}
	return true;
}

void cmd_client_tracking(struct client *c)
{
	unsigned opts = 0;
	long long redir = 0;
	struct worker *redir_w = NULL;
	struct arg *prefixes = NULL;
	int n = 0;

	for (int i = 3; i < c->argc; i++) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "REDIRECT") && more) {
			i++;
			if (redir) {
				reply_error(c,
					    "A client can only redirect to a single other client");
				goto out;
			}
			if (!arg_ll(c, i, &redir))
				goto out;
			/* It must exist now, even if it may go later. */
			redir_w = redir > 0 ? worker_of_client((uint64_t)redir) : NULL;
			if (!redir_w) {
				reply_error(c, "The client ID you want redirect to does not exist");
				goto out;
			}
		} else if (arg_is(c, i, "BCAST")) {
			opts |= TRACKING_BCAST;
		} else if (arg_is(c, i, "OPTIN")) {
			opts |= TRACKING_OPTIN;
		} else if (arg_is(c, i, "OPTOUT")) {
			opts |= TRACKING_OPTOUT;
		} else if (arg_is(c, i, "NOLOOP")) {
			opts |= TRACKING_NOLOOP;
		} else if (arg_is(c, i, "PREFIX") && more) {
			i++;
			prefixes = xrealloc(prefixes, (size_t)(n + 1) * sizeof(*prefixes));
			prefixes[n++] = c->argv[i];
		} else {
			reply_error(c, ERR_SYNTAX);
			goto out;
		}
	}
	if (arg_is(c, 2, "ON")) {
		if (!tracking_options_ok(c, opts, prefixes, n))
			goto out;
		tracking_enable(c, (uint64_t)redir, redir_w, opts, prefixes, n);
	} else if (arg_is(c, 2, "OFF")) {
		tracking_disable(c);
	} else {
		reply_error(c, ERR_SYNTAX);
		goto out;
	}
	reply_ok(c);
out:
	xfree(prefixes);
}

void cmd_client_caching(struct client *c)
{
	unsigned f = tracking_flags(c);

	if (!(f & TRACKING_ON)) {
		reply_error(c, "CLIENT CACHING can be called only when the client is in tracking "
			       "mode with OPTIN or OPTOUT mode enabled");
		return;
	}
	if (arg_is(c, 2, "YES")) {
		if (!(f & TRACKING_OPTIN)) {
			reply_error(c,
				    "CLIENT CACHING YES is only valid when tracking is enabled in "
				    "OPTIN mode.");
			return;
		}
	} else if (arg_is(c, 2, "NO")) {
		if (!(f & TRACKING_OPTOUT)) {
			reply_error(c,
				    "CLIENT CACHING NO is only valid when tracking is enabled in "
				    "OPTOUT mode.");
			return;
		}
	} else {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	tracking_set_caching(c);
	reply_ok(c);
}

void cmd_client_getredir(struct client *c)
{
	reply_int(c, tracking_flags(c) & TRACKING_ON ? (long long)tracking_redirect(c) : -1);
}

void cmd_client_trackinginfo(struct client *c)
{
	unsigned f = tracking_flags(c);
	const char *names[8];
	int n = 0;

	names[n++] = f & TRACKING_ON ? "on" : "off";
	if (f & TRACKING_BCAST)
		names[n++] = "bcast";
	if (f & TRACKING_OPTIN) {
		names[n++] = "optin";
		if (f & TRACKING_CACHING)
			names[n++] = "caching-yes";
	}
	if (f & TRACKING_OPTOUT) {
		names[n++] = "optout";
		if (f & TRACKING_CACHING)
			names[n++] = "caching-no";
	}
	if (f & TRACKING_NOLOOP)
		names[n++] = "noloop";
	if (f & TRACKING_BROKEN_REDIR)
		names[n++] = "broken_redirect";
	reply_map(c, 3);
	reply_bulk_cstr(c, "flags");
	reply_set(c, n);
	for (int i = 0; i < n; i++)
		reply_bulk_cstr(c, names[i]);
	reply_bulk_cstr(c, "redirect");
	reply_int(c, f & TRACKING_ON ? (long long)tracking_redirect(c) : -1);
	reply_bulk_cstr(c, "prefixes");
	tracking_reply_prefixes(c);
}

void cmd_client_help(struct client *c)
{
	static const char *const help[] = {
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"    * ID <client-id>",
		"      Kill connections by client id.",
		"    * MAXAGE <maxage>",
		"      Kill connections older than the specified age.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"    * ID <client-id> [<client-id> ...]",
		"      Return clients of specified IDs only.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"    Unblock the specified blocked client.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}
