// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the dispatcher locks for a command (command_add_locks): the shards of
 * the keys its key specs find, fixed or after a numkeys argument, and its
 * lock scope (a whole database, the store, another database, EXEC's queue).
 * Handlers never lock, so this is every lock a command runs under.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "multi.h"
#include "store.h"

#include "kselftest_harness.h"

#define NDBS 16

/* argv from a space-separated line (words under 64 bytes, at most 32). */
struct line {
	int argc;
	struct arg argv[32];
	char words[32][64];
};

static void split(struct line *l, const char *text)
{
	l->argc = 0;
	while (*text) {
		size_t n = strcspn(text, " ");

		memcpy(l->words[l->argc], text, n);
		l->words[l->argc][n] = '\0';
		l->argv[l->argc].p = l->words[l->argc];
		l->argv[l->argc].len = n;
		l->argc++;
		text += n + (text[n] == ' ');
	}
}

static struct command *row(const struct line *l)
{
	struct command *cmd = command_lookup(l->argv[0].p, l->argv[0].len);

	if (cmd && cmd->subs && l->argc > 1)
		for (unsigned i = 0; i < cmd->nsubs; i++)
			if (!strcasecmp(cmd->subs[i]->sub_name, l->argv[1].p))
				return cmd->subs[i];
	return cmd;
}

/* The lockset the dispatcher builds for text run by c (or no client) in db. */
static struct lockset locks_for(struct client *c, int db, const char *text)
{
	struct line l;
	struct lockset ls;

	split(&l, text);
	lockset_init(&ls);
	command_add_locks(row(&l), c, db, l.argc, l.argv, &ls);
	return ls;
}

static bool has_key(const struct lockset *ls, int db, const char *key)
{
	unsigned shard = key_shard(key, strlen(key));

	if (ls->all)
		return true;
	for (unsigned i = 0; i < ls->ndbs; i++)
		if (ls->dbs[i].db == db)
			return ls->dbs[i].mask >> shard & 1;
	return false;
}

/* Keys that all live in different shards. */
static const char *const K[] = { "a", "b", "c", "d", "e", "f" };

FIXTURE(locks){};

FIXTURE_SETUP(locks)
{
	static bool once;

	if (!once) {
		store_init(NDBS);
		commands_init();
		once = true;
	}
	for (unsigned i = 0; i < sizeof(K) / sizeof(K[0]); i++)
		for (unsigned j = 0; j < i; j++)
			ASSERT_NE(key_shard(K[i], 1), key_shard(K[j], 1));
}

FIXTURE_TEARDOWN(locks)
{
}

TEST_F(locks, fixed_positions)
{
	struct lockset ls = locks_for(NULL, 0, "GET a");

	ASSERT_EQ(1, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 0, "a"));
	ls = locks_for(NULL, 3, "MSET a 1 b 2 c 3");
	ASSERT_EQ(3, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 3, "c"));
	ASSERT_FALSE(has_key(&ls, 3, "1"));
	ls = locks_for(NULL, 0, "BLPOP a b 0");
	ASSERT_EQ(2, lockset_count(&ls));
	ls = locks_for(NULL, 0, "PING");
	ASSERT_EQ(0, lockset_count(&ls));
	/* Channels are no keys. */
	ls = locks_for(NULL, 0, "SPUBLISH a m");
	ASSERT_EQ(0, lockset_count(&ls));
}

TEST_F(locks, numkeys_by_key_spec)
{
	struct lockset ls = locks_for(NULL, 0, "ZUNIONSTORE d 2 a b WEIGHTS 1 2");

	ASSERT_EQ(3, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 0, "d") && has_key(&ls, 0, "a") && has_key(&ls, 0, "b"));
	ls = locks_for(NULL, 0, "LMPOP 2 a b LEFT COUNT 3");
	ASSERT_EQ(2, lockset_count(&ls));
	ls = locks_for(NULL, 0, "BLMPOP 0 3 a b c RIGHT");
	ASSERT_EQ(3, lockset_count(&ls));
	ls = locks_for(NULL, 0, "SINTERCARD 2 e f LIMIT 1");
	ASSERT_EQ(2, lockset_count(&ls));
	ls = locks_for(NULL, 0, "MSETEX 2 a 1 b 2 EX 10");
	ASSERT_EQ(2, lockset_count(&ls));
	ASSERT_FALSE(has_key(&ls, 0, "1"));
	ls = locks_for(NULL, 0, "SORT a LIMIT 0 1 STORE b");
	ASSERT_EQ(2, lockset_count(&ls));
	/* Keys named by values: the whole database. */
	ls = locks_for(NULL, 0, "SORT a BY w_*");
	ASSERT_EQ(STORE_SHARDS, lockset_count(&ls));
	/* Arguments the specs cannot parse: the handler refuses them, but the
	 * whole database is locked rather than a guess. */
	ls = locks_for(NULL, 0, "ZUNIONSTORE d x a b");
	ASSERT_EQ(STORE_SHARDS, lockset_count(&ls));
	ls = locks_for(NULL, 0, "LMPOP 9 a LEFT");
	ASSERT_EQ(STORE_SHARDS, lockset_count(&ls));
}

TEST_F(locks, scopes)
{
	struct lockset ls = locks_for(NULL, 2, "KEYS *");

	ASSERT_EQ(STORE_SHARDS, lockset_count(&ls));
	ASSERT_EQ(2, ls.dbs[0].db);
	ls = locks_for(NULL, 0, "FLUSHALL");
	ASSERT_TRUE(ls.all);
	ls = locks_for(NULL, 0, "SWAPDB 0 1");
	ASSERT_TRUE(ls.all);
	ls = locks_for(NULL, 0, "DBSIZE");
	ASSERT_EQ(0, lockset_count(&ls));
	/* MOVE and COPY: the key in both databases. */
	ls = locks_for(NULL, 1, "MOVE a 5");
	ASSERT_EQ(2, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 1, "a") && has_key(&ls, 5, "a"));
	ls = locks_for(NULL, 1, "COPY a b REPLACE DB 7");
	ASSERT_EQ(4, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 7, "b") && has_key(&ls, 1, "b"));
	ls = locks_for(NULL, 1, "COPY a b");
	ASSERT_EQ(2, lockset_count(&ls));
	ls = locks_for(NULL, 1, "MOVE a 99");
	ASSERT_EQ(1, lockset_count(&ls));
}

/* More databases than a lockset lists: it takes the whole store instead. */
TEST_F(locks, overflow_takes_everything)
{
	struct lockset ls;

	lockset_init(&ls);
	for (int db = 0; db < LOCKSET_DBS; db++)
		lockset_add_key(&ls, db, "a", 1);
	ASSERT_FALSE(ls.all);
	lockset_add_key(&ls, LOCKSET_DBS, "a", 1);
	ASSERT_TRUE(ls.all);
	lockset_acquire(&ls);
	ASSERT_EQ(1, store_locks_held);
	lockset_release(&ls);
	ASSERT_EQ(0, store_locks_held);
}

/* EXEC locks the watched keys and what its queue needs, in the database
 * each queued command runs in; nothing more. */
TEST_F(locks, exec_locks_its_queue)
{
	static const char *const queue[] = { "SET a 1",	 "SELECT 2", "ZUNIONSTORE b 2 c d",
					     "SELECT 9", "MOVE e 4", "UNWATCH" };
	struct line lines[6];
	struct queued_command q[6];
	struct client c = { .db = 0, .in_multi = true };
	struct lockset ls;

	for (int i = 0; i < 6; i++) {
		split(&lines[i], queue[i]);
		q[i].cmd = row(&lines[i]);
		q[i].argc = lines[i].argc;
		q[i].argv = lines[i].argv;
	}
	c.queue = q;
	c.nqueued = 6;
	ls = locks_for(&c, 0, "EXEC");
	ASSERT_FALSE(ls.all);
	ASSERT_EQ(6, lockset_count(&ls));
	ASSERT_TRUE(has_key(&ls, 0, "a"));
	ASSERT_TRUE(has_key(&ls, 2, "b") && has_key(&ls, 2, "c") && has_key(&ls, 2, "d"));
	ASSERT_TRUE(has_key(&ls, 9, "e") && has_key(&ls, 4, "e"));
	ASSERT_FALSE(has_key(&ls, 0, "b"));
	/* A queued FLUSHALL needs everything. */
	split(&lines[5], "FLUSHALL");
	q[5].cmd = row(&lines[5]);
	q[5].argc = lines[5].argc;
	ls = locks_for(&c, 0, "EXEC");
	ASSERT_TRUE(ls.all);
	/* DISCARD needs the watched keys only (none here). */
	ls = locks_for(&c, 0, "DISCARD");
	ASSERT_EQ(0, lockset_count(&ls));
	/* A transaction that will abort runs nothing: no queue locks. */
	c.multi_error = true;
	ls = locks_for(&c, 0, "EXEC");
	ASSERT_EQ(0, lockset_count(&ls));
}

/* A queue with a command that waits for the script lock (a script, SCRIPT,
 * FUNCTION, INFO) takes every shard, never some (docs/architecture.md,
 * "Narrower script locks"). */
TEST_F(locks, exec_with_script_lock_takes_everything)
{
	static const char *const cmds[] = { "EVAL x 1 a", "FCALL f 0",	   "SCRIPT LOAD x",
					    "INFO",	  "FUNCTION LIST", "MEMORY STATS" };
	struct line lines[2];
	struct queued_command q[2];
	struct client c = { .db = 0, .in_multi = true };
	struct lockset ls;

	split(&lines[0], "SET a 1");
	q[0].cmd = row(&lines[0]);
	q[0].argc = lines[0].argc;
	q[0].argv = lines[0].argv;
	c.queue = q;
	c.nqueued = 2;
	for (unsigned i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		split(&lines[1], cmds[i]);
		q[1].cmd = row(&lines[1]);
		q[1].argc = lines[1].argc;
		q[1].argv = lines[1].argv;
		ls = locks_for(&c, 0, "EXEC");
		ASSERT_TRUE(ls.all) TH_LOG("%s", cmds[i]);
	}
	split(&lines[1], "GET b");
	q[1].cmd = row(&lines[1]);
	q[1].argc = lines[1].argc;
	q[1].argv = lines[1].argv;
	ls = locks_for(&c, 0, "EXEC");
	ASSERT_FALSE(ls.all);
	ASSERT_EQ(2, lockset_count(&ls));
}

static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_state; /* 0, 1: the thread holds e's shard of db 5, 2: let it go */

static void *hold_e(void *arg)
{
	struct lockset ls;

	(void)arg;
	lockset_init(&ls);
	lockset_add_key(&ls, 5, "e", 1);
	lockset_acquire(&ls);
	pthread_mutex_lock(&hold_mu);
	hold_state = 1;
	pthread_cond_signal(&hold_cv);
	while (hold_state != 2)
		pthread_cond_wait(&hold_cv, &hold_mu);
	pthread_mutex_unlock(&hold_mu);
	lockset_release(&ls);
	return NULL;
}

static bool give_up_now(void)
{
	return true;
}

/* A script's held set grows by trylock, reports whether what it adds is
 * above everything held, and gives back exactly what it holds. */
TEST_F(locks, held_set_extends)
{
	struct lockset held, need;
	const char *lo, *hi;
	pthread_t th;

	/* Two keys of db 0 in shard order. */
	lo = key_shard("a", 1) < key_shard("b", 1) ? "a" : "b";
	hi = lo[0] == 'a' ? "b" : "a";
	lockset_init(&held);
	lockset_add_key(&held, 0, lo, 1);
	lockset_acquire(&held);
	lockset_init(&need);
	lockset_add_key(&need, 0, hi, 1);
	ASSERT_FALSE(lockset_covers(&held, &need));
	ASSERT_TRUE(lockset_extend_is_above(&held, &need));
	ASSERT_EQ(0, lockset_try_extend(&held, &need));
	ASSERT_TRUE(lockset_covers(&held, &need));
	ASSERT_EQ(2, lockset_count(&held));
	/* A shard below the held ones is not above; another database's above. */
	lockset_init(&need);
	lockset_add_key(&need, 0, "c", 1);
	if (key_shard("c", 1) < key_shard(hi, 1))
		ASSERT_FALSE(lockset_extend_is_above(&held, &need));
	lockset_init(&need);
	lockset_add_key(&need, 3, "c", 1);
	ASSERT_TRUE(lockset_extend_is_above(&held, &need));
	lockset_extend(&held, &need);
	ASSERT_EQ(3, lockset_count(&held));
	/* A shard another thread holds: -EAGAIN, and nothing more held. */
	pthread_mutex_lock(&hold_mu);
	hold_state = 0;
	pthread_mutex_unlock(&hold_mu);
	ASSERT_EQ(0, pthread_create(&th, NULL, hold_e, NULL));
	pthread_mutex_lock(&hold_mu);
	while (hold_state != 1)
		pthread_cond_wait(&hold_cv, &hold_mu);
	pthread_mutex_unlock(&hold_mu);
	lockset_init(&need);
	lockset_add_key(&need, 5, "e", 1);
	lockset_add_key(&need, 0, "d", 1);
	ASSERT_EQ(-EAGAIN, lockset_try_extend(&held, &need));
	ASSERT_EQ(3, lockset_count(&held));
	pthread_mutex_lock(&hold_mu);
	hold_state = 2;
	pthread_cond_signal(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
	pthread_join(th, NULL);
	lockset_init(&need);
	lockset_add_key(&need, 0, "d", 1);
	ASSERT_EQ(0, lockset_try_extend(&held, &need));
	ASSERT_EQ(4, lockset_count(&held));
	/* ... and the whole store, taken by trylock of the rest. */
	lockset_init(&need);
	lockset_add_all(&need);
	ASSERT_FALSE(lockset_extend_is_above(&held, &need));
	ASSERT_EQ(0, lockset_try_extend(&held, &need));
	ASSERT_TRUE(held.all);
	ASSERT_EQ(1, store_locks_held);
	lockset_release(&held);
	ASSERT_EQ(0, store_locks_held);
	/* Everything is free again. */
	lockset_init(&need);
	lockset_add_all(&need);
	ASSERT_EQ(0, lockset_acquire_unless(&need, give_up_now));
	lockset_release(&need);
}

TEST_HARNESS_MAIN
