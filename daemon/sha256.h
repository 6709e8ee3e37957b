/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha256: the SHA-256 hash (FIPS 180-4), for ACL passwords, which Redis keeps
 * and shows (ACL GETUSER, ACL LIST) as the lowercase hex of their SHA-256.
 */
#ifndef XKV_SHA256_H
#define XKV_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

/* out = SHA-256 of p[0..len). */
void sha256(const void *p, size_t len, uint8_t out[SHA256_LEN]);
/* hex = lowercase hex of the SHA-256 of p[0..len), NUL-terminated. */
void sha256_hex(const void *p, size_t len, char hex[2 * SHA256_LEN + 1]);

#endif
