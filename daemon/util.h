/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util: number parsing and formatting with Redis's exact rules.
 *
 * Redis accepts an integer only in its canonical form (no '+', no leading
 * zeros, no spaces), prints INCRBYFLOAT's floats with "%.17Lf" trimmed of
 * trailing zeros, and other doubles in their shortest round-trip form
 * (d_to_str). Replies must match byte for byte, so these are
 * written to the same rules rather than with strtoll/printf defaults.
 */
#ifndef XKV_UTIL_H
#define XKV_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest decimal form of a long long, with sign, without NUL. */
#define LL_STR_SIZE 21
/* Buffer size for ld_to_str()'s result. */
#define LD_STR_SIZE 5200

/* Strict canonical integer: true and *out, or false. */
bool str_to_ll(const char *p, size_t len, long long *out);
/* Strict unsigned 64-bit integer (for SCAN cursors). */
bool str_to_ull(const char *p, size_t len, unsigned long long *out);
/* A SCAN-family cursor as Redis reads it (strtoul on the NUL-terminated
 * argument): no leading space, nothing after the digits, within 64 bits; a
 * sign is allowed and wraps, and the empty string is 0. */
bool str_to_cursor(const char *p, uint64_t *out);
/* A long double as Redis's string2ld: no spaces, no NaN, "inf" accepted. */
bool str_to_ld(const char *p, size_t len, long double *out);
/* A double as Redis's string2d (for scores, timeouts): no spaces, no NaN. */
bool str_to_d(const char *p, size_t len, double *out);

/* Writes v in decimal to buf (no NUL terminator needed by callers, but one is
 * written); returns the length. buf must hold LL_STR_SIZE + 1 bytes. */
int ll_to_str(char *buf, long long v);
/* Formats as INCRBYFLOAT does (human-friendly: fixed notation, trailing
 * zeros and point trimmed). Returns the length, 0 if it would not fit. */
int ld_to_str(char *buf, size_t size, long double v);
/* As Redis 8 formats doubles (its d2string, for scores and every double
 * reply): "nan", "inf", "-inf", "-0"; integral values within 2^62 as
 * integers; others with the fewest digits that read back as v, in plain
 * notation for moderate exponents and as "2.5e-7" otherwise. size must be
 * 32 or more. */
int d_to_str(char *buf, size_t size, double v);

/* Locks m, waiting in slices of 1 ms while give_up() is false; false if it
 * gave up. Uncontended, this is one trylock, as pthread_mutex_lock. */
bool mutex_lock_unless(pthread_mutex_t *m, bool (*give_up)(void));

/* Milliseconds and microseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t now_ms(void);
int64_t now_us(void);
/* Monotonic milliseconds and microseconds, for timers and durations that must
 * not jump with the wall clock. */
int64_t mono_ms(void);
int64_t mono_us(void);

/* Rank ranges as Redis reads them (LRANGE, LTRIM, ZRANGE): negative indexes
 * count from the end of n elements, then the range is clamped into them.
 * Returns false when it is empty; else sets [*first, *last]. */
bool rank_range(long long start, long long stop, size_t n, size_t *first, size_t *last);

/* Redis glob matching (*, ?, [...], [^...], ranges, backslash escapes). */
bool glob_match(const char *pat, size_t plen, const char *s, size_t slen, bool nocase);

/*
 * Splits a line into arguments as redis-cli and Redis do: blanks separate,
 * "double quotes" take \n \r \t \b \a \xHH escapes, 'single quotes' only \',
 * and a closing quote must end its argument. The unquoted text goes to out
 * (2 * len + 1 bytes suffice), each argument NUL-terminated and passed to add.
 * Returns the argument count, or -1 on unbalanced quotes.
 */
typedef void split_args_fn(void *ctx, char *arg, size_t len);
int split_args(const char *p, size_t len, char *out, split_args_fn *add, void *ctx);

/* ASCII case-insensitive comparison of p[0..len) with the C string word. */
bool str_eq_nocase(const char *p, size_t len, const char *word);

/*
 * Adds n to a statistics counter that only the calling thread writes. With
 * one writer a relaxed load and store adds as surely as a locked add, without
 * its cost (a full barrier on x86); being atomic, it still lets other threads
 * read the counter whole.
 */
static inline void stat_add(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

#endif
