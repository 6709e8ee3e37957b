// SPDX-License-Identifier: BSD-3-Clause
/*
 * config_load: the start-up configuration, as redis-server reads it: the
 * file (with include), then the command line folded into more lines, each
 * line parsed through the directive table; errors are Redis's FATAL CONFIG
 * report.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acl_users.h"
#include "config.h"
#include "config_table.h"
#include "mem.h"
#include "text.h"
#include "util.h"

/* Directives Redis still accepts and ignores. */
static const char *const deprecated[] = { "list-max-ziplist-entries", "list-max-ziplist-value",
					  "lua-replicate-commands", "io-threads-do-reads", NULL };

/* Redis's other file directives: refused rather than ignored. */
static const char *const unsupported[] = { "rename-command", "loadmodule", "sentinel", NULL };

struct loader {
	bool save_seen;		/* the first "save" line replaces the default, later ones add */
	struct text unresolved; /* unknown directives, reported at the end */
	int depth;		/* include nesting */
};

static void fatal_config(int lineno, const char *line, const char *why)
{
	fprintf(stderr, "\n*** FATAL CONFIG FILE ERROR (xkv) ***\n");
	fprintf(stderr, "Reading the configuration file, at line %d\n", lineno);
	fprintf(stderr, ">>> '%s'\n%s\n", line, why);
}

static int load_text(struct loader *ld, char *text);

static int load_file(const char *path, struct text *out)
{
	FILE *f = fopen(path, "r");
	char chunk[4096];
	size_t n;

	if (!f) {
		fprintf(stderr, "Fatal error, can't open config file '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		text_append(out, chunk, n);
	fclose(f);
	return 0;
}

/* include: one file, or (a glob pattern) every file it matches, none being
 * fine. Each is read as a text of its own (its own line numbers). */
static int load_include(struct loader *ld, const char *path)
{
	glob_t g;
	int ret = 0;

	if (ld->depth >= 16)
		return 0;
	ld->depth++;
	if (strpbrk(path, "*?[")) {
		if (glob(path, 0, NULL, &g) == 0) {
			for (size_t i = 0; ret == 0 && i < g.gl_pathc; i++) {
				struct text t = { 0 };

				ret = load_file(g.gl_pathv[i], &t);
				if (ret == 0)
					ret = load_text(ld, t.p ? t.p : (char *)"");
				xfree(t.p);
			}
			globfree(&g);
		}
	} else {
		struct text t = { 0 };

		ret = load_file(path, &t);
		if (ret == 0)
			ret = load_text(ld, t.p ? t.p : (char *)"");
		xfree(t.p);
	}
	ld->depth--;
	return ret;
}

/* Applies one directive line (already trimmed); lineno for errors. */
static int load_line(struct loader *ld, char *line, int lineno)
{
	size_t len = strlen(line);
	char *buf = xmalloc(len + 1), err[512];
	struct config_args a = { .n = 0 }, sub = { .n = 0 };
	const struct config_args *use = &a;
	char *subbuf = NULL;
	const struct config_def *d;
	struct config_value v;
	bool alias;
	int ret = -1;

	if (split_args(line, len, buf, config_add_arg, &a) < 0) {
		fatal_config(lineno, line, "Unbalanced quotes in configuration line");
		goto out;
	}
	if (a.n == 0) {
		ret = 0;
		goto out;
	}
	if (a.n > 64) {
		fatal_config(lineno, line, "wrong number of arguments");
		goto out;
	}
	d = config_find(a.v[0], a.len[0], &alias);
	if (!d) {
		for (int i = 0; deprecated[i]; i++) {
			if (str_eq_nocase(a.v[0], a.len[0], deprecated[i]) && a.n == 2) {
				ret = 0;
				goto out;
			}
		}
		if (str_eq_nocase(a.v[0], a.len[0], "include") && a.n == 2) {
			ret = load_include(ld, a.v[1]);
			goto out;
		}
		/* ACL users: kept for acl_users_init, which has the command
		 * table their rules need. */
		if (str_eq_nocase(a.v[0], a.len[0], "user") && a.n >= 2) {
			acl_config_user(a.v + 1, a.len + 1, a.n - 1);
			ret = 0;
			goto out;
		}
		for (int i = 0; unsupported[i]; i++) {
			if (str_eq_nocase(a.v[0], a.len[0], unsupported[i])) {
				fatal_config(lineno, line,
					     "xkv does not support this directive yet");
				goto out;
			}
		}
		if (a.n < 2) {
			fatal_config(lineno, line, "Bad directive or wrong number of arguments");
			goto out;
		}
		/* Redis takes these for a module's directives and refuses them
		 * once it knows no module declares them. */
		text_printf(&ld->unresolved, ">>> '%s", a.v[0]);
		for (int i = 1; i < a.n; i++)
			text_printf(&ld->unresolved, " %s", a.v[i]);
		text_printf(&ld->unresolved, "'\n");
		ret = 0;
		goto out;
	}
	if (!(d->flags & (CFG_MULTI | CFG_WORDS)) && a.n != 2) {
		fatal_config(lineno, line, "wrong number of arguments");
		goto out;
	}
	sub.v[0] = a.v[1];
	if ((d->flags & CFG_MULTI) && a.n == 2 && a.len[1]) {
		/* "--save '60 1 300 10'": one argument holding several. */
		subbuf = xmalloc(a.len[1] + 1);
		if (split_args(a.v[1], a.len[1], subbuf, config_add_arg, &sub) < 0 || sub.n > 64) {
			fatal_config(lineno, line, "Unbalanced quotes in configuration line");
			goto out;
		}
		use = &sub;
	} else {
		sub.n = a.n - 1;
		memcpy(sub.v, a.v + 1, sizeof(a.v[0]) * (size_t)sub.n);
		memcpy(sub.len, a.len + 1, sizeof(a.len[0]) * (size_t)sub.n);
		use = &sub;
	}
	if (d->type != CFG_SPECIAL && d->type != CFG_ENUM && use->n == 0) {
		fatal_config(lineno, line, "wrong number of arguments");
		goto out;
	}
	if (config_parse_args(d, use, &v, err, sizeof(err)) < 0) {
		fatal_config(lineno, line, err);
		goto out;
	}
	if (d->type == CFG_SPECIAL && d->special == SPECIAL_SAVE) {
		/* Later save lines add their points to the first one's. */
		if (ld->save_seen && config.save[0] && v.str[0]) {
			struct text t = { 0 };

			text_printf(&t, "%s %s", config.save, v.str);
			xfree(v.str);
			v.str = t.p;
		} else if (ld->save_seen && config.save[0]) {
			xfree(v.str);
			v.str = xstrndup(config.save, strlen(config.save));
		}
		ld->save_seen = true;
	}
	config_store(d, &v);
	ret = 0;
out:
	xfree(subbuf);
	xfree(buf);
	return ret;
}

/* Redis's loop over a configuration text: lines trimmed, '#' comments. */
static int load_text(struct loader *ld, char *text)
{
	int lineno = 0;

	for (char *line = text, *next; line; line = next) {
		char *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		while (*line && strchr(" \t\r\n", *line))
			line++;
		end = line + strlen(line);
		while (end > line && strchr(" \t\r\n", end[-1]))
			*--end = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (load_line(ld, line, lineno) < 0)
			return -1;
	}
	return 0;
}

/* Redis's main(): "--name" starts a line, other arguments are its values;
 * an argument "--x" is a value when the line has none yet. */
static void options_text(struct text *t, int argc, char **argv)
{
	bool have_value = true;

	for (int j = 0; j < argc; j++) {
		if (have_value && argv[j][0] == '-' && argv[j][1] == '-') {
			char *buf = xmalloc(strlen(argv[j]) + 1);
			struct config_args a = { .n = 0 };
			int n;

			if (t->len)
				text_append(t, "\n", 1);
			text_printf(t, "%s ", argv[j] + 2);
			n = split_args(argv[j], strlen(argv[j]), buf, config_add_arg, &a);
			xfree(buf);
			if (n != 1) {
				have_value = true; /* "--port 6380" in one argument */
				continue;
			}
			have_value = false;
			/* "--save" with no value is save "". */
			if (!strcasecmp(argv[j], "--save") &&
			    (j == argc - 1 || (argv[j + 1][0] == '-' && argv[j + 1][1] == '-'))) {
				text_printf(t, "\"\"");
				have_value = true;
			}
		} else {
			text_repr(t, argv[j], strlen(argv[j]));
			text_append(t, " ", 1);
			have_value = true;
		}
	}
}

int config_load(const char *path, int argc, char **argv)
{
	struct loader ld = { 0 };
	struct text t = { 0 };
	int ret = -1;

	if (path) {
		if (load_file(path, &t) < 0)
			return -1;
		config.config_file = realpath(path, NULL);
	}
	if (argc > 0) {
		struct text opts = { 0 };

		options_text(&opts, argc, argv);
		text_printf(&t, "\n%s", opts.p ? opts.p : "");
		xfree(opts.p);
	}
	if (load_text(&ld, t.p ? t.p : (char *)"") < 0)
		goto out;
	if (ld.unresolved.len) {
		fprintf(stderr,
			"Unresolved Configuration(s) Detected:\n%.*sModule Configuration detected "
			"without loadmodule directive or no ApplyConfig call: aborting\n",
			(int)ld.unresolved.len, ld.unresolved.p);
		goto out;
	}
	config_loaded();
	ret = 0;
out:
	xfree(ld.unresolved.p);
	xfree(t.p);
	return ret;
}
