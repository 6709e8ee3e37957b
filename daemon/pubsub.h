/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub: channels, patterns and shard channels, and delivery of published
 * messages to their subscribers on every worker.
 *
 * A global registry maps each channel, pattern and shard channel to its
 * subscribers (one lock, see pubsub.c). A client's own subscriptions are kept
 * with it and touched only by its worker. PUBLISH collects the receivers under
 * the registry lock, then writes to those on its own worker directly and
 * posts one publication mail per other worker that has receivers; that worker
 * delivers in mailbox order, so messages from one publisher arrive in the
 * order they were published.
 */
#ifndef XKV_PUBSUB_H
#define XKV_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct worker;

/* The kinds of subscription: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE. */
enum pubsub_kind { PUBSUB_CHANNEL, PUBSUB_PATTERN, PUBSUB_SHARD, PUBSUB_KINDS };

/* Subscribes c to name (one confirmation reply each). */
void pubsub_subscribe(struct client *c, enum pubsub_kind kind, const char *name, size_t len);
/* Unsubscribes c from name, with its confirmation reply. */
void pubsub_unsubscribe(struct client *c, enum pubsub_kind kind, const char *name, size_t len);
/* Unsubscribes c from everything of that kind, one confirmation per
 * subscription (or one with a null name if there was none) if notify. */
void pubsub_unsubscribe_all(struct client *c, enum pubsub_kind kind, bool notify);
/* Publishes to a channel (PUBSUB_CHANNEL, which includes pattern matches) or
 * a shard channel; returns the number of receivers. */
long long pubsub_publish(struct client *c, enum pubsub_kind kind, const char *ch, size_t chlen,
			 const char *msg, size_t msglen);
/* As pubsub_publish to a channel, with no client: from this thread's worker
 * (keyspace events, of commands and of active expiry alike). Messages
 * published in some order (a key's changes, under its shard lock) reach
 * every receiver in that order, whichever workers published them. */
long long pubsub_publish_here(const char *ch, size_t chlen, const char *msg, size_t msglen);
/* A message another cluster node published (the bus thread): delivered
 * here only, to a channel (and patterns) or a shard channel. */
long long pubsub_publish_remote(bool shard, const char *ch, size_t chlen, const char *msg,
				size_t msglen);
/* The worker this thread runs (set as it starts); UINT_MAX on other threads,
 * whose publications reach every receiver by mail. */
extern __thread unsigned pubsub_thread_worker;
/* Workers whose undelivered publications are counted (config's `threads`
 * maximum); any others deliver all of theirs by mail. */
#define PUBSUB_MAX_WORKERS 1024

/* Subscriptions of c of one kind (owner worker only). */
long pubsub_client_count(const struct client *c, enum pubsub_kind kind);
/* True while c is in subscribed mode (any subscription of any kind). */
bool pubsub_client_subscribed(const struct client *c);
/* Drops every subscription of c, silently (client_free, on its worker). */
void pubsub_client_free(struct client *c);
/* True if every subscription of c is one u may make (ACL SETUSER took a
 * channel away: Redis closes the client otherwise). On c's worker. */
struct acl_user;
bool pubsub_client_allowed(struct client *c, const struct acl_user *u);
/* After c's command (and its reply): the messages it published to itself. */
void pubsub_command_end(struct client *c);

/* Introspection (PUBSUB): active channels (or shard channels) matching an
 * optional pattern, replied as an array; subscribers of a channel; number of
 * patterns. */
/* Cluster: this node is about to stop owning slot (a cluster slot
 * listener; under cluster_lock). Every subscriber of a shard channel of that
 * slot is unsubscribed from it, with its "sunsubscribe" message, as Redis's
 * removeChannelsInSlot. */
void pubsub_slot_changed(uint16_t slot, bool owned);
void pubsub_reply_channels(struct client *c, enum pubsub_kind kind, const char *pat, size_t plen);
long pubsub_numsub(enum pubsub_kind kind, const char *name, size_t len);
long pubsub_numpat(void);
/* Channels (patterns, shard channels) with at least one subscriber (INFO). */
long pubsub_active(enum pubsub_kind kind);

/* Mailbox: delivers a publication payload on w (its owner), or frees one
 * that will never be delivered (shutdown). */
void pubsub_deliver(struct worker *w, void *payload);
void pubsub_mail_free(void *payload);

#endif
