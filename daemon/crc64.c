// SPDX-License-Identifier: BSD-3-Clause
/*
 * crc64: a byte-at-a-time table-driven CRC-64/Jones (see crc64.h). RDB files
 * are checked once per load and DUMP payloads are small, so one 2 KiB table
 * is enough; no slicing.
 */
#include "crc64.h"

/* The Jones polynomial with its bits reversed, for the reflected algorithm. */
#define CRC64_POLY_REFLECTED 0x95ac9329ac4bc9b5ULL

static uint64_t crc64_table[256];

__attribute__((constructor)) static void crc64_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC64_POLY_REFLECTED : c >> 1;
		crc64_table[i] = c;
	}
}

uint64_t crc64_update(uint64_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		crc = crc64_table[(uint8_t)(crc ^ b[i])] ^ (crc >> 8);
	return crc;
}
