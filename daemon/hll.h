/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hll: HyperLogLog registers in Redis's own byte layout, so that a value that
 * PFADD wrote on Redis reads the same here and the reverse (GET, RESTORE,
 * replication carry the bytes as they are).
 *
 * A HyperLogLog is a string: a 16-byte header ("HYLL", the encoding, three
 * unused bytes, an 8-byte little-endian cached cardinality whose top bit set
 * means "stale") followed by 16384 six-bit registers, either
 *   - dense: packed, least significant bit first, 12288 bytes; or
 *   - sparse: run-length opcodes (ZERO 00xxxxxx: 1..64 zero registers;
 *     XZERO 01xxxxxx yyyyyyyy: 1..16384 zero registers; VAL 1vvvvvxx: 1..4
 *     registers of value 1..32).
 * New values start sparse and turn dense when a register needs more than 32
 * or the sparse form would pass `hll-sparse-max-bytes`.
 *
 * The functions work on caller-owned buffers and allocate nothing; the
 * command layer (cmd/hll.c) owns the string values.
 */
#ifndef XKV_HLL_H
#define XKV_HLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_Q (64 - HLL_P)
#define HLL_REGISTERS (1 << HLL_P)
#define HLL_BITS 6
#define HLL_REGISTER_MAX ((1 << HLL_BITS) - 1)
#define HLL_HDR_SIZE 16
#define HLL_DENSE_SIZE (HLL_HDR_SIZE + (HLL_REGISTERS * HLL_BITS + 7) / 8)
/* An empty sparse value: the header and one XZERO covering every register. */
#define HLL_SPARSE_EMPTY_SIZE (HLL_HDR_SIZE + 2)
/* Bytes a sparse update may add (an XZERO split into XZERO VAL XZERO). */
#define HLL_SPARSE_GROWTH 3
/* The room hll_sparse_set needs past *len: the growth, the NUL byte that a
 * cut XZERO at the end reads as its second byte (as Redis reads its sds
 * terminator), and the one byte such an edit writes past the new end. */
#define HLL_SPARSE_ROOM (HLL_SPARSE_GROWTH + 2)

enum hll_encoding { HLL_DENSE = 0, HLL_SPARSE = 1 };

/* hll_sparse_set()'s answer when the register only fits the dense form. */
#define HLL_PROMOTE 2

/* Is p[0..len) a HyperLogLog header Redis accepts (magic, encoding, and the
 * exact dense size)? The registers are checked only when read. */
bool hll_valid(const uint8_t *p, size_t len);
/* Writes an empty sparse HyperLogLog (HLL_SPARSE_EMPTY_SIZE bytes). */
void hll_init_sparse(uint8_t *p);

static inline int hll_encoding(const uint8_t *p)
{
	return p[4];
}

/* The cached cardinality in the header. */
bool hll_cache_valid(const uint8_t *p);
uint64_t hll_cache_get(const uint8_t *p);
void hll_cache_set(uint8_t *p, uint64_t card);
void hll_cache_invalidate(uint8_t *p);

/* MurmurHash64A, Redis's element hash (seed 0xadc83b19 for registers). */
uint64_t hll_hash(const void *key, size_t len, uint64_t seed);
/* The register an element maps to (*index) and its run of zeros plus one. */
int hll_pattern(const void *ele, size_t len, long *index);

uint8_t hll_dense_get(const uint8_t *regs, long index);
void hll_dense_put(uint8_t *regs, long index, uint8_t val);
/* Raises register index to count; 1 if it changed, else 0. */
int hll_dense_set(uint8_t *regs, long index, uint8_t count);

/*
 * Raises register index of the sparse value p[0..*len) to count, exactly as
 * Redis edits its opcodes (so the bytes match). p must have room for
 * *len + HLL_SPARSE_ROOM bytes and p[*len] must be NUL. Returns 1 if it changed (the cache is then
 * invalidated), 0 if not, -1 if the opcodes are corrupt, HLL_PROMOTE when the
 * value must turn dense first (nothing changed then).
 */
int hll_sparse_set(uint8_t *p, size_t *len, long index, uint8_t count, size_t sparse_max);
/* Decodes the sparse value p[0..len) into dense (HLL_DENSE_SIZE bytes, header
 * copied with the dense encoding); 0, or -1 if corrupt. */
int hll_sparse_to_dense(const uint8_t *p, size_t len, uint8_t *dense);

/* max[i] = MAX(max[i], register i of p) for the 16384 registers; 0, or -1 if
 * corrupt. */
int hll_merge(uint8_t *max, const uint8_t *p, size_t len);
/* Packs one byte per register into dense registers. */
void hll_dense_from_raw(uint8_t *regs, const uint8_t *max);

/* The estimated cardinality of p[0..len) (its cache not consulted); *invalid
 * set if the sparse opcodes are corrupt. */
uint64_t hll_count(const uint8_t *p, size_t len, bool *invalid);
/* The same for one byte per register. */
uint64_t hll_count_raw(const uint8_t *max);

#endif
