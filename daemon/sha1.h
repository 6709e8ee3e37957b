/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha1: the SHA-1 hash (FIPS 180-4), for DEBUG DIGEST, whose output must
 * equal Redis's for the same data. Not for anything that needs security.
 */
#ifndef XKV_SHA1_H
#define XKV_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define SHA1_LEN 20

struct sha1 {
	uint32_t h[5];
	uint64_t bytes; /* hashed so far */
	uint8_t block[64];
	size_t fill; /* bytes waiting in block */
};

void sha1_init(struct sha1 *s);
void sha1_update(struct sha1 *s, const void *p, size_t len);
void sha1_final(struct sha1 *s, uint8_t out[SHA1_LEN]);
/* out = SHA-1 of p[0..len). */
void sha1(const void *p, size_t len, uint8_t out[SHA1_LEN]);

#endif
