/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vset_filter: the FILTER expressions of VSIM, with Redis 8.8's language and
 * semantics (docs/vectors.md, "The FILTER language"): numbers, strings,
 * tuples ([1, "a"]), null, `.field` selectors over the top level of an
 * element's JSON attributes; ! not ** * / % + - > >= < <= == != in
 * and && or ||, parentheses. A selector whose field is missing, or whose JSON
 * cannot be read, makes the whole expression false (there is no runtime
 * error); an element without attributes never matches.
 *
 * A compiled filter is immutable: any number of threads may run
 * vfilter_match() on the same one at once (each call keeps its state on its
 * own stack or in its own allocations).
 */
#ifndef XKV_VSET_FILTER_H
#define XKV_VSET_FILTER_H

#include <stddef.h>

struct vfilter;

/*
 * Compiles expr[0..len) (up to its first NUL, as Redis reads the argument as
 * a C string). Returns 0 with *out set (free it with vfilter_free()), or
 * -EINVAL with *err pointing at Redis's error text without "ERR "
 * ("syntax error in FILTER expression near: ..."). The text lives in a
 * per-thread buffer that the next failing vfilter_compile() of the same
 * thread replaces; err may be NULL.
 */
int vfilter_compile(const char *expr, size_t len, struct vfilter **out, const char **err);

/* 1 when the JSON attributes json[0..len) satisfy f, else 0; json NULL
 * means the element has no attributes (never a match). */
int vfilter_match(const struct vfilter *f, const char *json, size_t len);

void vfilter_free(struct vfilter *f);

#endif
