/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * text: a growable, NUL-terminated text buffer for the replies built line by
 * line (INFO, CLIENT LIST, LATENCY DOCTOR, MEMORY MALLOC-STATS). Owned by its
 * user, who frees t->p with xfree().
 */
#ifndef XKV_TEXT_H
#define XKV_TEXT_H

#include <stddef.h>

struct text {
	char *p; /* NULL until the first append */
	size_t len, cap;
};

void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends len bytes (any bytes). */
void text_append(struct text *t, const char *p, size_t len);
/* Appends p[0..len) quoted as Redis's sdscatrepr quotes it (MONITOR lines,
 * config files, start-up errors): printable bytes as they are, the usual C
 * escapes, and \xNN for the rest. */
void text_repr(struct text *t, const char *p, size_t len);

#endif
