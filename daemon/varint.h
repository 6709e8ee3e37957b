/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * varint: the LEB128-style lengths of the packed encodings (t_hash.c,
 * t_set.c): 7 bits a byte, low bits first, the high bit set on every byte
 * but the last.
 */
#ifndef XKV_VARINT_H
#define XKV_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes varint_put() writes for v. */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* Reads one varint at p into *v; returns the bytes it took. */
static inline size_t varint_get(const unsigned char *p, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	size_t n = 0;

	do {
		r |= (uint64_t)(p[n] & 0x7f) << shift;
		shift += 7;
	} while (p[n++] & 0x80);
	*v = r;
	return n;
}

#endif
