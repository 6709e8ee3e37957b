/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc64: the CRC-64 that Redis puts at the end of RDB files and DUMP
 * payloads (the "Jones" polynomial 0xad93d23594c935a9, reflected input and
 * output, initial value 0, no final xor). crc64_update(0, "123456789", 9) is
 * 0xe9c6d914c4b8d9ca.
 */
#ifndef XKV_CRC64_H
#define XKV_CRC64_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over p[0..len). Thread-safe: the table is built
 * once, before main, by a constructor. */
uint64_t crc64_update(uint64_t crc, const void *p, size_t len);

#endif
