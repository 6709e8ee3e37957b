// SPDX-License-Identifier: BSD-3-Clause
/*
 * XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP,
 * replying as Redis 8.8.
 */
#include <string.h>

#include "commands.h"
#include "mem.h"
#include "stream_cmd.h"
#include "t_stream_cg.h"
#include "util.h"

static void reply_lag(struct client *c, const struct obj *o, const struct stream_group *g)
{
	long long lag;

	if (stream_group_lag(o, g, &lag))
		reply_int(c, lag);
	else
		reply_null(c);
}

static void reply_entries_read(struct client *c, const struct stream_group *g)
{
	if (g->entries_read != STREAM_ENTRIES_READ_INVALID)
		reply_int(c, g->entries_read);
	else
		reply_null(c);
}

/* The stream looked up for XINFO, or NULL after replying. */
static struct entry *xinfo_key(struct client *c)
{
	struct entry *e = key_find_read(c, 2);

	if (!e) {
		reply_error(c, ERR_NO_KEY);
		return NULL;
	}
	return entry_is(c, e, OBJ_STREAM) ? e : NULL;
}

static void xinfo_syntax(struct client *c)
{
	reply_errorf(c,
		     "unknown subcommand or wrong number of arguments for '%.128s'. Try XINFO "
		     "HELP.",
		     c->argv[1].p);
}

void cmd_xinfo_consumers(struct client *c)
{
	struct entry *e = xinfo_key(c);
	struct stream_group *g;
	int64_t now = now_ms();

	if (!e)
		return;
	g = stream_group_find(&e->val, c->argv[3].p, c->argv[3].len);
	if (!g) {
		reply_errorf(c, "-NOGROUP No such consumer group '%s' for key name '%s'",
			     c->argv[3].p, c->argv[2].p);
		return;
	}
	reply_array(c, (long)g->nconsumers);
	for (size_t i = 0; i < g->nconsumers; i++) {
		const struct stream_consumer *k = g->consumers[i];
		int64_t idle = now - k->seen_time;

		reply_map(c, 4);
		reply_bulk_cstr(c, "name");
		reply_bulk(c, k->name, k->len);
		reply_bulk_cstr(c, "pending");
		reply_int(c, (long long)k->pel.n);
		reply_bulk_cstr(c, "idle");
		reply_int(c, idle < 0 ? 0 : idle);
		reply_bulk_cstr(c, "inactive");
		reply_int(c, k->active_time != -1 ? now - k->active_time : -1);
	}
}

void cmd_xinfo_groups(struct client *c)
{
	struct entry *e = xinfo_key(c);
	struct stream_group **v;
	size_t n;

	if (!e)
		return;
	v = stream_groups(&e->val, &n);
	reply_array(c, (long)n);
	for (size_t i = 0; i < n; i++) {
		reply_map(c, 6);
		reply_bulk_cstr(c, "name");
		reply_bulk(c, v[i]->name, v[i]->len);
		reply_bulk_cstr(c, "consumers");
		reply_int(c, (long long)v[i]->nconsumers);
		reply_bulk_cstr(c, "pending");
		reply_int(c, (long long)v[i]->pel.n);
		reply_bulk_cstr(c, "last-delivered-id");
		stream_cmd_reply_id(c, &v[i]->last_id);
		reply_bulk_cstr(c, "entries-read");
		reply_entries_read(c, v[i]);
		reply_bulk_cstr(c, "lag");
		reply_lag(c, &e->val, v[i]);
	}
}

/*
 * Redis reports the node count of its radix tree of listpacks, keyed by the
 * 16-byte big-endian master IDs. That tree is a compressed trie: a shared
 * run of bytes is one node, a fork one node, a key's end one node. We count
 * the nodes such a trie over our masters has (keys sorted, set [lo, hi) from
 * byte d).
 */
static long long rax_count(const unsigned char (*k)[16], size_t lo, size_t hi, int d)
{
	long long n = 0;
	int l = d;

	if (hi - lo == 1)
		return d < 16 ? 2 : 1;
	/* The run all keys share: the first and last differ first. */
	while (l < 16 && k[lo][l] == k[hi - 1][l])
		l++;
	n += l > d;
	n++; /* the fork */
	for (size_t i = lo; i < hi;) {
		size_t j = i + 1;

		while (j < hi && k[j][l] == k[i][l])
			j++;
		n += rax_count(k, i, j, l + 1);
		i = j;
	}
	return n;
}

static long long rax_nodes(const struct obj *o)
{
	size_t n = stream_node_count(o);
	unsigned char(*k)[16];
	long long r;

	if (!n)
		return 1;
	k = xmalloc(n * sizeof(*k));
	for (size_t i = 0; i < n; i++) {
		struct stream_id id = stream_node_master(o, i);

		for (int b = 0; b < 8; b++) {
			k[i][b] = (unsigned char)(id.ms >> (56 - 8 * b));
			k[i][8 + b] = (unsigned char)(id.seq >> (56 - 8 * b));
		}
	}
	r = rax_count((const unsigned char(*)[16])k, 0, n, 0);
	xfree(k);
	return r;
}

/* A range's first or last entry, or a null. */
static void reply_edge(struct client *c, const struct obj *o, bool rev)
{
	static const struct stream_id min = { 0, 0 }, max = { UINT64_MAX, UINT64_MAX };
	struct range_acc r = { 0 };

	stream_range(o, &min, &max, rev, 1, stream_cmd_collect, &r);
	if (r.n)
		stream_cmd_reply_entry(c, &r.v[0]);
	else
		reply_null(c);
	xfree(r.v);
}

static void reply_full_group(struct client *c, const struct obj *o, const struct stream_group *g,
			     long long count)
{
	size_t n;

	reply_map(c, 8);
	reply_bulk_cstr(c, "name");
	reply_bulk(c, g->name, g->len);
	reply_bulk_cstr(c, "last-delivered-id");
	stream_cmd_reply_id(c, &g->last_id);
	reply_bulk_cstr(c, "entries-read");
	reply_entries_read(c, g);
	reply_bulk_cstr(c, "lag");
	reply_lag(c, o, g);
	reply_bulk_cstr(c, "pel-count");
	reply_int(c, (long long)g->pel.n);
	reply_bulk_cstr(c, "nacked-count");
	reply_int(c, (long long)stream_group_nacked(g));
	reply_bulk_cstr(c, "pending");
	n = count && (size_t)count < g->pel.n ? (size_t)count : g->pel.n;
	reply_array(c, (long)n);
	for (size_t i = 0; i < n; i++) {
		const struct stream_nack *k = g->pel.v[i];

		reply_array(c, 4);
		stream_cmd_reply_id(c, &k->id);
		if (k->consumer)
			reply_bulk(c, k->consumer->name, k->consumer->len);
		else
			reply_bulk(c, "", 0);
		reply_int(c, k->delivery_time);
		reply_int(c, (long long)k->delivery_count);
	}
	reply_bulk_cstr(c, "consumers");
	reply_array(c, (long)g->nconsumers);
	for (size_t i = 0; i < g->nconsumers; i++) {
		const struct stream_consumer *k = g->consumers[i];

		reply_map(c, 5);
		reply_bulk_cstr(c, "name");
		reply_bulk(c, k->name, k->len);
		reply_bulk_cstr(c, "seen-time");
		reply_int(c, k->seen_time);
		reply_bulk_cstr(c, "active-time");
		reply_int(c, k->active_time);
		reply_bulk_cstr(c, "pel-count");
		reply_int(c, (long long)k->pel.n);
		reply_bulk_cstr(c, "pending");
		n = count && (size_t)count < k->pel.n ? (size_t)count : k->pel.n;
		reply_array(c, (long)n);
		for (size_t j = 0; j < n; j++) {
			reply_array(c, 3);
			stream_cmd_reply_id(c, &k->pel.v[j]->id);
			reply_int(c, k->pel.v[j]->delivery_time);
			reply_int(c, (long long)k->pel.v[j]->delivery_count);
		}
	}
}

void cmd_xinfo_stream(struct client *c)
{
	struct entry *e;
	bool full = c->argc > 3;
	long long count = 10;
	const struct obj *o;
	struct stream_id id;
	struct stream_idmp_info im;
	struct stream_group **v;
	size_t ng;

	if (full) {
		if ((c->argc != 4 && c->argc != 6) || !arg_is(c, 3, "full") ||
		    (c->argc == 6 && !arg_is(c, 4, "count"))) {
			if (!(e = xinfo_key(c)))
				return;
			xinfo_syntax(c);
			return;
		}
	}
	if (!(e = xinfo_key(c)))
		return;
	if (c->argc == 6) {
		if (!arg_ll(c, 5, &count))
			return;
		if (count < 0)
			count = 10;
	}
	o = &e->val;
	stream_idmp_info(o, &im);
	v = stream_groups(o, &ng);
	reply_map(c, full ? 15 : 16);
	reply_bulk_cstr(c, "length");
	reply_int(c, (long long)stream_len(o));
	reply_bulk_cstr(c, "radix-tree-keys");
	reply_int(c, (long long)stream_node_count(o));
	reply_bulk_cstr(c, "radix-tree-nodes");
	reply_int(c, rax_nodes(o));
	reply_bulk_cstr(c, "last-generated-id");
	id = stream_last_id(o);
	stream_cmd_reply_id(c, &id);
	reply_bulk_cstr(c, "max-deleted-entry-id");
	id = stream_max_deleted(o);
	stream_cmd_reply_id(c, &id);
	reply_bulk_cstr(c, "entries-added");
	reply_int(c, (long long)stream_entries_added(o));
	reply_bulk_cstr(c, "recorded-first-entry-id");
	id = stream_first_id(o);
	stream_cmd_reply_id(c, &id);
	reply_bulk_cstr(c, "idmp-duration");
	reply_int(c, (long long)im.duration);
	reply_bulk_cstr(c, "idmp-maxsize");
	reply_int(c, (long long)im.maxsize);
	reply_bulk_cstr(c, "pids-tracked");
	reply_int(c, (long long)im.pids);
	reply_bulk_cstr(c, "iids-tracked");
	reply_int(c, (long long)im.iids);
	reply_bulk_cstr(c, "iids-added");
	reply_int(c, (long long)im.added);
	reply_bulk_cstr(c, "iids-duplicates");
	reply_int(c, (long long)im.duplicates);
	if (!full) {
		reply_bulk_cstr(c, "groups");
		reply_int(c, (long long)ng);
		reply_bulk_cstr(c, "first-entry");
		reply_edge(c, o, false);
		reply_bulk_cstr(c, "last-entry");
		reply_edge(c, o, true);
		return;
	}
	{
		static const struct stream_id min = { 0, 0 }, max = { UINT64_MAX, UINT64_MAX };
		struct range_acc r = { 0 };

		reply_bulk_cstr(c, "entries");
		stream_range(o, &min, &max, false, (uint64_t)count, stream_cmd_collect, &r);
		stream_cmd_reply_entries(c, &r);
		xfree(r.v);
	}
	reply_bulk_cstr(c, "groups");
	reply_array(c, (long)ng);
	for (size_t i = 0; i < ng; i++)
		reply_full_group(c, o, v[i], count);
}

void cmd_xinfo_help(struct client *c)
{
	static const char *const help[] = {
		"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CONSUMERS <key> <groupname>",
		"    Show consumers of <groupname>.",
		"GROUPS <key>",
		"    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]",
		"    Show information about the stream.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}
