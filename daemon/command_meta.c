// SPDX-License-Identifier: BSD-3-Clause
/* Command metadata (ACL categories, tips, key specs) and key finding by key spec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "command_meta.h"
#include "util.h"

#define INDEX(i) .begin = KEY_BEGIN_INDEX, .index = (i)
#define KEYWORD(word, from) .begin = KEY_BEGIN_KEYWORD, .keyword = (word), .index = (from)
#define BEGIN_UNKNOWN .begin = KEY_BEGIN_UNKNOWN
#define RANGE(lastkey, keystep, limit)                                                             \
	.find = KEY_FIND_RANGE, .a = (lastkey), .b = (keystep), .c = (limit)
#define KEYNUM(keynumidx, firstkey, keystep)                                                       \
	.find = KEY_FIND_KEYNUM, .a = (keynumidx), .b = (firstkey), .c = (keystep)
#define FIND_UNKNOWN .find = KEY_FIND_UNKNOWN
#define KS(fl, begin_search, find_keys, text)                                                      \
	{                                                                                          \
		.flags = (fl), .notes = (text), begin_search, find_keys                            \
	}
#define META(cmd, categories, tip_list, ...)                                                       \
	{ .name = (cmd),                                                                           \
	  .acl = (categories),                                                                     \
	  .tips = (tip_list),                                                                      \
	  .specs = (const struct key_spec[]){ __VA_ARGS__ __VA_OPT__(, ){ .flags = NULL } } },

/* Sorted by name once, for binary search. */
static struct command_meta metas[] = {
#include "cmd/meta_redis.def"
#include "cmd/meta_xkv.def"
};

#define NMETAS (sizeof(metas) / sizeof(metas[0]))

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct command_meta *)a)->name,
		      ((const struct command_meta *)b)->name);
}

const struct command_meta *command_meta_find(const char *name)
{
	static bool sorted;
	struct command_meta key = { .name = name };

	/* commands_init runs on the main thread before any worker. */
	if (!sorted) {
		qsort(metas, NMETAS, sizeof(metas[0]), by_name);
		sorted = true;
	}
	return bsearch(&key, metas, NMETAS, sizeof(metas[0]), by_name);
}

int command_meta_nspecs(const struct command_meta *meta)
{
	int n = 0;

	while (meta->specs[n].flags)
		n++;
	return n;
}

bool command_meta_movable(const struct command_meta *meta)
{
	for (const struct key_spec *s = meta->specs; s->flags; s++)
		if (s->begin != KEY_BEGIN_INDEX || s->find != KEY_FIND_RANGE)
			return true;
	return false;
}

/* SORT's STORE destination can be anywhere after the key: skip the options
 * that take arguments, as Redis's own SORT key finder does. */
static int sort_store_key(int argc, const struct arg *argv)
{
	int store = -1;

	for (int i = 2; i < argc; i++) {
		if (!strcasecmp(argv[i].p, "limit"))
			i += 2;
		else if (!strcasecmp(argv[i].p, "get") || !strcasecmp(argv[i].p, "by"))
			i += 1;
		else if (!strcasecmp(argv[i].p, "store") && i + 1 < argc)
			store = ++i;
	}
	return store;
}

/* Where spec s's keys begin in argv, or -1 when its keyword is absent. */
static int spec_begin(const struct key_spec *s, int argc, const struct arg *argv)
{
	if (s->begin == KEY_BEGIN_INDEX)
		return s->index;
	if (s->index >= 0) {
		for (int i = s->index; i < argc; i++)
			if (!strcasecmp(argv[i].p, s->keyword))
				return i + 1;
	} else {
		for (int i = argc + s->index; i > 0; i--)
			if (!strcasecmp(argv[i].p, s->keyword))
				return i + 1;
	}
	return -1;
}

static bool is_sort(const char *name)
{
	return !strcmp(name, "sort") || !strcmp(name, "sort_ro");
}

const char *command_meta_key_flags(const char *name, const struct key_spec *s, int argc,
				   const struct arg *argv)
{
	if (!strstr(s->flags, "variable_flags"))
		return s->flags;
	if (!strcmp(name, "set")) {
		/* SET ... GET reads the old value; a condition on it
		 * (IFEQ, IFNE, IFDEQ, IFDNE) reads it without returning it. */
		bool get = false, cond = false;

		for (int i = 3; i < argc; i++) {
			if (!strcasecmp(argv[i].p, "get"))
				get = true;
			else if (!strcasecmp(argv[i].p, "ifeq") || !strcasecmp(argv[i].p, "ifne") ||
				 !strcasecmp(argv[i].p, "ifdeq") || !strcasecmp(argv[i].p, "ifdne"))
				cond = true;
		}
		return get ? "RW access update" : cond ? "RW update" : "OW update";
	}
	if (!strcmp(name, "delex")) {
		/* DELEX deletes blind, unless a condition reads the value. */
		for (int i = 2; i < argc; i++)
			if (!strcasecmp(argv[i].p, "ifeq") || !strcasecmp(argv[i].p, "ifne") ||
			    !strcasecmp(argv[i].p, "ifdeq") || !strcasecmp(argv[i].p, "ifdne"))
				return "RW delete";
		return "RM delete";
	}
	if (!strcmp(name, "bitfield")) {
		/* Read-only while every operation is a GET (or OVERFLOW); a syntax
		 * error counts as a write, as in Redis. */
		for (int i = 2; i < argc; i++) {
			int left = argc - i - 1;

			if (!strcasecmp(argv[i].p, "get") && left >= 2)
				i += 2;
			else if (!strcasecmp(argv[i].p, "overflow") && left >= 1)
				i += 1;
			else
				return "RW access update";
		}
		return "RO access";
	}
	return s->flags;
}

bool command_meta_keys_from_values(const char *name, int argc, const struct arg *argv)
{
	if (!is_sort(name))
		return false;
	/* A superset of what SORT reads: any BY or GET pattern with a '*'. */
	for (int i = 2; i + 1 < argc; i++)
		if ((!strcasecmp(argv[i].p, "by") || !strcasecmp(argv[i].p, "get")) &&
		    memchr(argv[i + 1].p, '*', argv[i + 1].len))
			return true;
	return false;
}

int command_meta_keys(const char *name, const struct key_spec *specs, int argc,
		      const struct arg *argv, int *keys, const struct key_spec **which, int max)
{
	int n = 0;

	for (const struct key_spec *s = specs; s->flags; s++) {
		int first, last, step;

		if (s->begin == KEY_BEGIN_UNKNOWN) {
			/* Only SORT's STORE is findable; BY/GET patterns name no key. */
			if (is_sort(name) && strstr(s->flags, "OW")) {
				int store = sort_store_key(argc, argv);

				if (store > 0 && n < max) {
					if (which)
						which[n] = s;
					keys[n++] = store;
				}
			}
			continue;
		}
		first = spec_begin(s, argc, argv);
		if (first < 0)
			continue;
		if (s->find == KEY_FIND_RANGE) {
			step = s->b;
			if (s->a >= 0)
				last = first + s->a;
			else if (s->c <= 1)
				last = argc + s->a;
			else
				last = first + ((argc - first) / s->c + s->a);
		} else {
			long long numkeys;

			if (first + s->a >= argc ||
			    !str_to_ll(argv[first + s->a].p, argv[first + s->a].len, &numkeys) ||
			    numkeys < 0 || numkeys > argc)
				return -EINVAL;
			step = s->c;
			first += s->b;
			last = first + (int)(numkeys - 1) * step;
			if (numkeys == 0)
				continue;
		}
		/* PFMERGE dest alone: the sources' spec runs past the arguments,
		 * and Redis's pfmergeGetKeys fallback then finds the dest only. */
		if (s->find == KEY_FIND_RANGE && s->a < 0 && first >= argc && n > 0 &&
		    !strcmp(name, "pfmerge"))
			continue;
		if (first >= argc || last >= argc || last < first)
			return -EINVAL;
		for (int i = first; i <= last && n < max; i += step) {
			if (which)
				which[n] = s;
			keys[n++] = i;
		}
	}
	return n;
}
