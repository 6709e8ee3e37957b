// SPDX-License-Identifier: BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"
#include "text.h"

void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && t->len + (size_t)n < t->cap)
			break;
		t->cap = (t->cap + (size_t)n + 1) * 2;
		t->p = xrealloc(t->p, t->cap);
	}
	t->len += (size_t)n;
}

void text_append(struct text *t, const char *p, size_t len)
{
	if (t->len + len + 1 > t->cap) {
		t->cap = (t->len + len + 1) * 2;
		t->p = xrealloc(t->p, t->cap);
	}
	memcpy(t->p + t->len, p, len);
	t->len += len;
	t->p[t->len] = '\0';
}

void text_repr(struct text *t, const char *p, size_t len)
{
	text_append(t, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];

		switch (ch) {
		case '\\':
		case '"':
			text_printf(t, "\\%c", ch);
			break;
		case '\n':
			text_append(t, "\\n", 2);
			break;
		case '\r':
			text_append(t, "\\r", 2);
			break;
		case '\t':
			text_append(t, "\\t", 2);
			break;
		case '\a':
			text_append(t, "\\a", 2);
			break;
		case '\b':
			text_append(t, "\\b", 2);
			break;
		default:
			if (ch >= 0x20 && ch < 0x7f)
				text_append(t, (const char *)&ch, 1);
			else
				text_printf(t, "\\x%02x", ch);
		}
	}
	text_append(t, "\"", 1);
}
