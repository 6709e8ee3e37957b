// SPDX-License-Identifier: BSD-3-Clause
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

bool str_to_ull(const char *p, size_t len, unsigned long long *out)
{
	unsigned long long v = 0;

	if (len == 0 || len > 20 || (p[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)p[i] - '0';

		if (d > 9 || v > (ULLONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool str_to_ll(const char *p, size_t len, long long *out)
{
	unsigned long long v;
	bool neg = len > 1 && p[0] == '-';

	if (neg) {
		p++;
		len--;
		if (p[0] == '0') /* "-0" is not canonical */
			return false;
	}
	if (!str_to_ull(p, len, &v))
		return false;
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return false;
		*out = (long long)(0 - v);
	} else {
		if (v > LLONG_MAX)
			return false;
		*out = (long long)v;
	}
	return true;
}

bool str_to_cursor(const char *p, uint64_t *out)
{
	char *end;

	if (isspace((unsigned char)p[0]))
		return false;
	errno = 0;
	*out = strtoull(p, &end, 10);
	return *end == '\0' && errno != ERANGE;
}

/* Copies p into a NUL-terminated buffer for strtod-style parsing; NULL when
 * it cannot be a number (empty, too long, leading space). */
static char *number_copy(const char *p, size_t len, char *buf, size_t size)
{
	/* An embedded NUL would end the number early: Redis rejects it. */
	if (len == 0 || len >= size || isspace((unsigned char)p[0]) || memchr(p, '\0', len))
		return NULL;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

bool str_to_ld(const char *p, size_t len, long double *out)
{
	char buf[LD_STR_SIZE], *end;
	long double v;

	if (!number_copy(p, len, buf, sizeof(buf)))
		return false;
	errno = 0;
	v = strtold(buf, &end);
	if (*end || isnan(v) || (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0)))
		return false;
	*out = v;
	return true;
}

bool str_to_d(const char *p, size_t len, double *out)
{
	char buf[LD_STR_SIZE], *end;
	double v;

	if (!number_copy(p, len, buf, sizeof(buf)))
		return false;
	errno = 0;
	v = strtod(buf, &end);
	if (*end || isnan(v) || (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)))
		return false;
	*out = v;
	return true;
}

int ll_to_str(char *buf, long long v)
{
	char tmp[LL_STR_SIZE];
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
	int n = 0, len = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		buf[len++] = '-';
	while (n)
		buf[len++] = tmp[--n];
	buf[len] = '\0';
	return len;
}

int ld_to_str(char *buf, size_t size, long double v)
{
	int len;

	if (isinf(v))
		return snprintf(buf, size, "%s", v > 0 ? "inf" : "-inf");
	/* Fixed notation with 17 digits, then trailing zeros and a bare point
	 * trimmed: "3.0e3" prints as "3000", "10.5" as "10.5". */
	len = snprintf(buf, size, "%.17Lf", v);
	if (len < 0 || (size_t)len + 1 > size)
		return 0;
	if (strchr(buf, '.')) {
		while (buf[len - 1] == '0')
			len--;
		if (buf[len - 1] == '.')
			len--;
	}
	if (len == 2 && buf[0] == '-' && buf[1] == '0') {
		buf[0] = '0';
		len = 1;
	}
	buf[len] = '\0';
	return len;
}

/* The shortest significant digits of v (1 to 17, no trailing zeros) into
 * digits, and the power of ten of the last one: v = digits * 10^*k. */
static int shortest_digits(double v, char *digits, int *k)
{
	char tmp[40];
	int n = 0, exp10;

	/* The fewest digits that read back as v: tried from 15 for normal
	 * values, as any shorter form is this one with trailing zeros; from 1
	 * for subnormals, which hold fewer digits. */
	for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* tmp is "[-]d.ddde[+-]x" */
	const char *p = tmp + (tmp[0] == '-');

	for (; *p != 'e'; p++)
		if (*p != '.')
			digits[n++] = *p;
	exp10 = atoi(p + 1);
	while (n > 1 && digits[n - 1] == '0')
		n--;
	*k = exp10 - (n - 1);
	return n;
}

int d_to_str(char *buf, size_t size, double v)
{
	char digits[20];
	int k, n, exp, len = 0;

	if (isnan(v))
		return snprintf(buf, size, "nan");
	if (isinf(v))
		return snprintf(buf, size, "%s", v > 0 ? "inf" : "-inf");
	if (v == 0)
		return snprintf(buf, size, "%s", signbit(v) ? "-0" : "0");
	/* Integral values as integers, within Redis 8's bound (LLONG_MAX / 2
	 * as a double: 2^62 itself is in). */
	if (v >= -(double)(LLONG_MAX / 2) && v <= (double)(LLONG_MAX / 2) &&
	    v == (double)(long long)v) {
		if (size <= LL_STR_SIZE)
			return 0;
		return ll_to_str(buf, (long long)v);
	}
	if (size < 32)
		return 0;
	n = shortest_digits(v, digits, &k);
	exp = abs(k + n - 1);
	if (v < 0)
		buf[len++] = '-';
	if (k >= 0 && exp < n + 7) {
		/* an integer: the digits, then k zeros */
		memcpy(buf + len, digits, (size_t)n);
		memset(buf + len + n, '0', (size_t)k);
		len += n + k;
	} else if (k < 0 && (k > -7 || exp < 4)) {
		/* plain decimal notation */
		int point = n + k;

		if (point <= 0) {
			memcpy(buf + len, "0.", 2);
			memset(buf + len + 2, '0', (size_t)-point);
			memcpy(buf + len + 2 - point, digits, (size_t)n);
			len += 2 - point + n;
		} else {
			memcpy(buf + len, digits, (size_t)point);
			buf[len + point] = '.';
			memcpy(buf + len + point + 1, digits + point, (size_t)(n - point));
			len += n + 1;
		}
	} else {
		/* scientific, with an unpadded exponent: "2.5e-7", "1e+21" */
		buf[len++] = digits[0];
		if (n > 1) {
			buf[len++] = '.';
			memcpy(buf + len, digits + 1, (size_t)(n - 1));
			len += n - 1;
		}
		len += snprintf(buf + len, size - (size_t)len, "e%c%d", k + n - 1 < 0 ? '-' : '+',
				exp);
	}
	buf[len] = '\0';
	return len;
}

static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t now_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

int64_t now_us(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000;
}

int64_t mono_us(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000;
}

int64_t mono_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

static inline int fold(int ch, bool nocase)
{
	return nocase ? tolower(ch) : ch;
}

/* Matches one [...] class at pat (just past '['); advances *pp past ']'. */
/* Matches one [...] class at *pp (just past '[') against the byte ch, with
 * Redis's quirks: an escaped byte compares case-sensitively, and a range's
 * ends are ordered before they are folded. Advances *pp past the ']'. */
static bool class_match(const char **pp, const char *end, int ch, bool nocase)
{
	const char *p = *pp;
	bool negate = false, hit = false;

	if (p < end && *p == '^') {
		negate = true;
		p++;
	}
	while (p < end && *p != ']') {
		if (*p == '\\' && p + 1 < end) {
			p++;
			hit |= (unsigned char)*p == ch;
		} else if (p + 2 < end && p[1] == '-') {
			/* "a-]" is a range ending at ']', even if that leaves the
			 * class unterminated. */
			int lo = (unsigned char)p[0], hi = (unsigned char)p[2];

			if (lo > hi) {
				int t = lo;

				lo = hi;
				hi = t;
			}
			lo = fold(lo, nocase);
			hi = fold(hi, nocase);
			hit |= fold(ch, nocase) >= lo && fold(ch, nocase) <= hi;
			p += 2;
		} else {
			hit |= fold((unsigned char)*p, nocase) == fold(ch, nocase);
		}
		p++;
	}
	/* An unterminated class ends at the pattern's end, as in Redis. */
	*pp = p < end ? p + 1 : p;
	return hit != negate;
}

/* Does the single-byte pattern element at *pp match ch? Advances *pp past it. */
static bool element_match(const char **pp, const char *pe, int ch, bool nocase)
{
	const char *p = *pp;

	switch (*p) {
	case '?':
		*pp = p + 1;
		return true;
	case '[':
		*pp = p + 1;
		return class_match(pp, pe, ch, nocase);
	case '\\':
		if (p + 1 < pe)
			p++;
		__attribute__((fallthrough)); /* the escaped byte is literal */
	default:
		*pp = p + 1;
		return fold((unsigned char)*p, nocase) == fold(ch, nocase);
	}
}

/*
 * Greedy matching with one backtrack point: on a mismatch, the most recent
 * '*' absorbs one more byte. Earlier stars never need revisiting (a later
 * star can absorb anything they could), so the work is O(len(p) * len(s))
 * even for hostile patterns like "a*a*a*a*b".
 */
/* Redis's stringmatchlen() nesting limit. */
#define GLOB_MAX_STARS 1000

bool glob_match(const char *pat, size_t plen, const char *str, size_t slen, bool nocase)
{
	const char *p = pat, *pe = pat + plen, *s = str, *se = str + slen;
	const char *star_p = NULL, *star_s = NULL;
	unsigned int stars = 0, star_n = 0;

	while (s < se) {
		const char *next = p;

		if (p < pe && *p == '*') {
			while (p < pe && *p == '*')
				p++;
			if (p == pe)
				return true;
			/*
			 * Redis gives up past 1000 nested stars (its matcher
			 * recurses per star): any match has to cross that star
			 * with text left, so such patterns never match there.
			 */
			if (++stars > GLOB_MAX_STARS)
				return false;
			star_p = p;
			star_s = s;
			star_n = stars;
			continue;
		}
		if (p < pe && element_match(&next, pe, (unsigned char)*s, nocase)) {
			p = next;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
		stars = star_n;
	}
	while (p < pe && *p == '*')
		p++;
	return p == pe;
}

static int hex_value(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static char unescape(char ch)
{
	switch (ch) {
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	case 'b':
		return '\b';
	case 'a':
		return '\a';
	default:
		return ch;
	}
}

int split_args(const char *p, size_t len, char *out, split_args_fn *add, void *ctx)
{
	const char *end = p + len;
	int argc = 0;

	for (;;) {
		char *arg = out;
		bool dq = false, sq = false;

		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p == end)
			return argc;
		for (bool done = false; !done;) {
			if (dq) {
				if (p == end)
					return -1;
				if (*p == '\\' && end - p >= 4 && p[1] == 'x' &&
				    hex_value(p[2]) >= 0 && hex_value(p[3]) >= 0) {
					*out++ = (char)(hex_value(p[2]) * 16 + hex_value(p[3]));
					p += 3;
				} else if (*p == '\\' && end - p >= 2) {
					p++;
					*out++ = unescape(*p);
				} else if (*p == '"') {
					if (p + 1 < end && !isspace((unsigned char)p[1]))
						return -1;
					done = true;
				} else {
					*out++ = *p;
				}
			} else if (sq) {
				if (p == end)
					return -1;
				if (*p == '\\' && end - p >= 2 && p[1] == '\'') {
					p++;
					*out++ = '\'';
				} else if (*p == '\'') {
					if (p + 1 < end && !isspace((unsigned char)p[1]))
						return -1;
					done = true;
				} else {
					*out++ = *p;
				}
			} else if (p == end) {
				break;
			} else {
				switch (*p) {
				case ' ':
				case '\n':
				case '\r':
				case '\t':
				case '\0':
					done = true;
					break;
				case '"':
					dq = true;
					break;
				case '\'':
					sq = true;
					break;
				default:
					*out++ = *p;
					break;
				}
			}
			if (p < end)
				p++;
		}
		*out++ = '\0';
		add(ctx, arg, (size_t)(out - arg - 1));
		argc++;
	}
}

bool str_eq_nocase(const char *p, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(p, word, len) == 0;
}

bool rank_range(long long start, long long stop, size_t n, size_t *first, size_t *last)
{
	long long len = (long long)n;

	if (start < 0)
		start += len;
	if (stop < 0)
		stop += len;
	if (start < 0)
		start = 0;
	if (start > stop || start >= len)
		return false;
	if (stop >= len)
		stop = len - 1;
	*first = (size_t)start;
	*last = (size_t)stop;
	return true;
}

bool mutex_lock_unless(pthread_mutex_t *m, bool (*give_up)(void))
{
	struct timespec ts;

	if (!pthread_mutex_trylock(m))
		return true;
	for (;;) {
		if (give_up())
			return false;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (!pthread_mutex_timedlock(m, &ts))
			return true;
	}
}
