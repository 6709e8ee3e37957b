// SPDX-License-Identifier: BSD-3-Clause
/* SYNC, PSYNC, REPLCONF, WAIT, ROLE: argument checks; the work is repl.c's. */
#include "commands.h"
#include "config.h"
#include "log.h"
#include "repl.h"
#include "util.h"

void cmd_sync(struct client *c)
{
	repl_sync(c, NULL, 0, false);
}

void cmd_psync(struct client *c)
{
	long long offset;

	/* Redis reads the offset only when it tries a partial resync: a bad
	 * one is refused before anything else. */
	if (!arg_ll(c, 2, &offset))
		return;
	/* PSYNC replid offset FAILOVER: our master hands over to us. */
	repl_sync(c, c->argv[1].p, offset, c->argc > 3 && arg_is(c, 3, "failover"));
}

void cmd_replconf(struct client *c)
{
	repl_replconf(c);
}

void cmd_wait(struct client *c)
{
	long long n, timeout;

	if (!arg_ll(c, 1, &n))
		return;
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &timeout)) {
		reply_error(c, "timeout is not an integer or out of range");
		return;
	}
	if (timeout < 0) {
		reply_error(c, "timeout is negative");
		return;
	}
	repl_wait(c, n, timeout, false, false);
}

void cmd_waitaof(struct client *c)
{
	long long local, n, timeout;

	if (!str_to_ll(c->argv[1].p, c->argv[1].len, &local) || local < 0 || local > 1) {
		reply_error(c, "value is out of range, value must between 0 and 1");
		return;
	}
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &n) || n < 0) {
		reply_error(c, "value is out of range, must be positive");
		return;
	}
	if (!str_to_ll(c->argv[3].p, c->argv[3].len, &timeout)) {
		reply_error(c, "timeout is not an integer or out of range");
		return;
	}
	if (timeout < 0) {
		reply_error(c, "timeout is negative");
		return;
	}
	if (local && !config.appendonly) {
		reply_error(c, "WAITAOF cannot be used when numlocal is set but appendonly is "
			       "disabled.");
		return;
	}
	repl_wait(c, n, timeout, true, local == 1);
}

void cmd_role(struct client *c)
{
	repl_role(c);
}

/* FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms], parsed as Redis. */
void cmd_failover(struct client *c)
{
	long long timeout = 0, port = 0;
	const char *host = NULL;
	bool force = false;

	if (c->argc == 2 && arg_is(c, 1, "abort")) {
		if (!repl_failover_running()) {
			reply_error(c, "No failover in progress.");
			return;
		}
		repl_failover_abort("Failover manually aborted");
		reply_ok(c);
		return;
	}
	for (int j = 1; j < c->argc; j++) {
		if (arg_is(c, j, "timeout") && j + 1 < c->argc && timeout == 0) {
			if (!arg_ll(c, j + 1, &timeout))
				return;
			if (timeout <= 0) {
				reply_error(c, "FAILOVER timeout must be greater than 0");
				return;
			}
			j++;
		} else if (arg_is(c, j, "to") && j + 2 < c->argc && !host) {
			if (!arg_ll(c, j + 2, &port))
				return;
			host = c->argv[j + 1].p;
			j += 2;
		} else if (arg_is(c, j, "force") && !force) {
			force = true;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	repl_failover(c, host, (int)port, timeout, force);
}

/* REPLICAOF host port | NO ONE (and SLAVEOF). */
void cmd_replicaof(struct client *c)
{
	long long port;

	if (repl_failover_running()) {
		reply_error(c, "REPLICAOF not allowed while failing over.");
		return;
	}

	if (arg_is(c, 1, "no") && arg_is(c, 2, "one")) {
		if (repl_is_replica()) {
			repl_replica_set(NULL, 0);
			/* A master again: a new ID, the old one still good for
			 * our old siblings up to here (PSYNC2). */
			repl_promote();
			log_notice("MASTER MODE enabled (user request from 'id=%llu addr=%s')",
				   (unsigned long long)c->id, c->addr);
		}
		reply_ok(c);
		return;
	}
	if (c->flags & CLIENT_REPLICA) {
		reply_error(c, "Command is not valid when client is a replica.");
		return;
	}
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &port) || port < 0 || port > 65535) {
		reply_error(c, "Invalid master port");
		return;
	}
	if (repl_replica_set(c->argv[1].p, (int)port) == 1) {
		log_notice("REPLICAOF would result into synchronization with the master we are "
			   "already connected with. No operation performed.");
		reply_status(c, "OK Already connected to specified master");
		return;
	}
	/* Our replicas follow our data, which is about to be another's. */
	repl_drop_replicas();
	log_notice("Connecting to MASTER %s:%lld", c->argv[1].p, port);
	log_notice("REPLICAOF %s:%lld enabled (user request from 'id=%llu addr=%s')", c->argv[1].p,
		   port, (unsigned long long)c->id, c->addr);
	reply_ok(c);
}
