// SPDX-License-Identifier: BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>

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
