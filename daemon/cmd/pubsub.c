// SPDX-License-Identifier: BSD-3-Clause
/* Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, (S)PUBLISH, PUBSUB. The
 * registry and delivery are pubsub.c's. */
#include "commands.h"
#include "cluster.h"
#include "cluster_ctl.h"
#include "propagate.h"
#include "pubsub.h"

static void subscribe_each(struct client *c, enum pubsub_kind kind)
{
	for (int i = 1; i < c->argc; i++)
		pubsub_subscribe(c, kind, c->argv[i].p, c->argv[i].len);
}

static void unsubscribe_each(struct client *c, enum pubsub_kind kind)
{
	if (c->argc == 1) {
		pubsub_unsubscribe_all(c, kind, true);
		return;
	}
	for (int i = 1; i < c->argc; i++)
		pubsub_unsubscribe(c, kind, c->argv[i].p, c->argv[i].len);
}

void cmd_subscribe(struct client *c)
{
	subscribe_each(c, PUBSUB_CHANNEL);
}

void cmd_unsubscribe(struct client *c)
{
	unsubscribe_each(c, PUBSUB_CHANNEL);
}

void cmd_psubscribe(struct client *c)
{
	subscribe_each(c, PUBSUB_PATTERN);
}

void cmd_punsubscribe(struct client *c)
{
	unsubscribe_each(c, PUBSUB_PATTERN);
}

void cmd_ssubscribe(struct client *c)
{
	subscribe_each(c, PUBSUB_SHARD);
}

void cmd_sunsubscribe(struct client *c)
{
	unsubscribe_each(c, PUBSUB_SHARD);
}

void cmd_publish(struct client *c)
{
	long long n = pubsub_publish(c, PUBSUB_CHANNEL, c->argv[1].p, c->argv[1].len, c->argv[2].p,
				     c->argv[2].len);

	/* In a cluster every node delivers it (the count is ours); else
	 * replicas deliver it to their own subscribers (not the AOF's), as
	 * Redis. */
	if (cluster_enabled())
		cluster_bus_publish(false, c->argv[1].p, c->argv[1].len, c->argv[2].p,
				    c->argv[2].len);
	else
		propagate_repl_only();
	reply_int(c, n);
}

void cmd_spublish(struct client *c)
{
	long long n = pubsub_publish(c, PUBSUB_SHARD, c->argv[1].p, c->argv[1].len, c->argv[2].p,
				     c->argv[2].len);

	if (cluster_enabled())
		cluster_bus_publish(true, c->argv[1].p, c->argv[1].len, c->argv[2].p,
				    c->argv[2].len);
	else
		propagate_repl_only();
	reply_int(c, n);
}

/* Redis's answer to extra arguments where its table allows any number. */
static void reply_subcommand_syntax(struct client *c)
{
	reply_errorf(c,
		     "unknown subcommand or wrong number of arguments for '%.128s'. Try PUBSUB "
		     "HELP.",
		     c->argv[1].p);
}

static void channels(struct client *c, enum pubsub_kind kind)
{
	if (c->argc > 3) {
		reply_subcommand_syntax(c);
		return;
	}
	if (c->argc == 3)
		pubsub_reply_channels(c, kind, c->argv[2].p, c->argv[2].len);
	else
		pubsub_reply_channels(c, kind, NULL, 0);
}

static void numsub(struct client *c, enum pubsub_kind kind)
{
	reply_array(c, (long)(c->argc - 2) * 2);
	for (int i = 2; i < c->argc; i++) {
		reply_bulk(c, c->argv[i].p, c->argv[i].len);
		reply_int(c, pubsub_numsub(kind, c->argv[i].p, c->argv[i].len));
	}
}

void cmd_pubsub_channels(struct client *c)
{
	channels(c, PUBSUB_CHANNEL);
}

void cmd_pubsub_shardchannels(struct client *c)
{
	channels(c, PUBSUB_SHARD);
}

void cmd_pubsub_numsub(struct client *c)
{
	numsub(c, PUBSUB_CHANNEL);
}

void cmd_pubsub_shardnumsub(struct client *c)
{
	numsub(c, PUBSUB_SHARD);
}

void cmd_pubsub_numpat(struct client *c)
{
	reply_int(c, pubsub_numpat());
}

void cmd_pubsub_help(struct client *c)
{
	static const char *const lines[] = {
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> "
		"(default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, lines);
}
