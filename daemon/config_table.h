/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_table: the directive table that config.c (load, GET, SET) and
 * config_rewrite.c (CONFIG REWRITE, --config-doc) share. Internal to those
 * two files; everything else reads struct config (config.h).
 */
#ifndef XKV_CONFIG_TABLE_H
#define XKV_CONFIG_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "text.h"

enum config_type { CFG_BOOL, CFG_STRING, CFG_ENUM, CFG_NUMBER, CFG_SPECIAL };

enum config_flag {
	CFG_IMMUTABLE = 1 << 0, /* start-up only */
	CFG_SENSITIVE = 1 << 1,
	CFG_WORDS = 1 << 2,	/* a space-separated list, rewritten unquoted */
	CFG_HIDDEN = 1 << 3,	/* CONFIG GET lists it only when named exactly */
	CFG_PROTECTED = 1 << 4, /* CONFIG SET needs enable-protected-configs */
	CFG_MULTI = 1 << 5,	/* takes several arguments (an enum: several flags) */
	CFG_MEMORY = 1 << 6,	/* a number: k/kb/m/mb/g/gb suffixes, shown in bytes */
	CFG_PERCENT = 1 << 7,	/* a number: "N%" too, stored as -N */
	CFG_OCTAL = 1 << 8,	/* a number: read and shown in octal */
	CFG_UNSIGNED = 1 << 9,	/* a number: Redis checks its bounds unsigned */
	/* xkv reads it at start only (Redis may change it, or it is xkv's own):
	 * CONFIG SET to the current value is a no-op, to another refused as
	 * immutable. */
	CFG_STARTUP = 1 << 10,
};

enum config_special {
	SPECIAL_DIR,
	SPECIAL_SAVE,
	SPECIAL_OBUF,
	SPECIAL_OOM,
	SPECIAL_NOTIFY,
	SPECIAL_BIND,
	SPECIAL_REPLICAOF,
	SPECIAL_PERCENTILES,
};

struct config_enum {
	const char *name;
	int value;
};

/* A parsed value, not yet stored: str (for strings and the specials kept as
 * text) is owned by whoever holds the value. */
struct config_value {
	long long num;
	char *str;
	long long obuf[OBUF_CLASSES][3];
};

struct config_def {
	const char *name, *alias;
	enum config_type type;
	unsigned flags;
	void *field;
	const char *dflt;
	long long min, max;
	const struct config_enum *values; /* CFG_ENUM, ended by a NULL name */
	enum config_special special;
	/* Refuses a parsed value (0, or -1 with *err: Redis's message), or
	 * brings it into range as Redis does. */
	int (*check)(struct config_value *v, const char **err);
	/* Called after a runtime change; returns 0 or -1 with *err. */
	int (*apply)(const char **err);
	const char *sub;  /* NULL: takes effect; else the missing subsystem */
	const char *desc; /* one line for docs/configuration.md */
};

extern const struct config_def config_defs[];
extern const size_t config_ndefs;

/* The arguments of one directive: pointers into a split buffer. */
struct config_args {
	char *v[64];
	size_t len[64];
	int n;
};

/* split_args()'s callback filling a struct config_args (counts past 64). */
void config_add_arg(void *ctx, char *arg, size_t len);
/* The directive named name or by its alias (any case; *alias says which,
 * alias may be NULL), or NULL. */
const struct config_def *config_find(const char *name, size_t len, bool *alias);
/* Parses d's arguments into *v without changing the config. 0, or -1 with
 * the reason (the text after Redis's " - ") in err. */
int config_parse_args(const struct config_def *d, const struct config_args *a,
		      struct config_value *v, char *err, size_t errlen);
/* Parses a start-up default or a stored value's text into *v. 0, or -1. */
int config_parse_text(const struct config_def *d, const char *p, size_t len, struct config_value *v,
		      char *err, size_t errlen);
/* Stores v into d's field, taking v's string. */
void config_store(const struct config_def *d, struct config_value *v);
void config_value_free(struct config_value *v);
/* d's current value as CONFIG GET shows it (appended to t). */
void config_format(struct text *t, const struct config_def *d);

#endif
