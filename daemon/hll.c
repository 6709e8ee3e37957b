// SPDX-License-Identifier: BSD-3-Clause
/*
 * hll: HyperLogLog registers (hll.h has the layout). Every edit of the sparse
 * form follows the order Redis uses, so a sequence of PFADDs yields the same
 * bytes on both servers; the estimator is Ertl's improved raw estimator, the
 * one Redis uses since 5.0.
 */
#include <math.h>
#include <string.h>

#include "hll.h"

#define HLL_SEED 0xadc83b19ULL
#define HLL_ALPHA_INF 0.721347520444481703680 /* 1 / (2 ln 2) */

/* Sparse opcodes (hll.h). */
#define ZERO_MAX_LEN 64
#define XZERO_MAX_LEN 16384
#define VAL_MAX_VALUE 32
#define VAL_MAX_LEN 4

static inline bool op_is_zero(const uint8_t *p)
{
	return (*p & 0xc0) == 0;
}

static inline bool op_is_xzero(const uint8_t *p)
{
	return (*p & 0xc0) == 0x40;
}

static inline bool op_is_val(const uint8_t *p)
{
	return (*p & 0x80) != 0;
}

static inline long op_zero_len(const uint8_t *p)
{
	return (*p & 0x3f) + 1;
}

static inline long op_xzero_len(const uint8_t *p)
{
	return (((long)(p[0] & 0x3f) << 8) | p[1]) + 1;
}

static inline int op_val_value(const uint8_t *p)
{
	return ((*p >> 2) & 0x1f) + 1;
}

static inline long op_val_len(const uint8_t *p)
{
	return (*p & 0x3) + 1;
}

static inline void put_val(uint8_t *p, int val, long len)
{
	*p = (uint8_t)(0x80 | ((val - 1) << 2) | (len - 1));
}

/* Writes a run of len zero registers (ZERO or XZERO); returns its bytes. */
static int put_zeros(uint8_t *p, long len)
{
	if (len > ZERO_MAX_LEN) {
		p[0] = (uint8_t)(0x40 | ((len - 1) >> 8));
		p[1] = (uint8_t)((len - 1) & 0xff);
		return 2;
	}
	p[0] = (uint8_t)(len - 1);
	return 1;
}

/* ---- header ------------------------------------------------------------------------- */

bool hll_valid(const uint8_t *p, size_t len)
{
	if (len < HLL_HDR_SIZE || memcmp(p, "HYLL", 4) != 0 || p[4] > HLL_SPARSE)
		return false;
	return p[4] != HLL_DENSE || len == HLL_DENSE_SIZE;
}

void hll_init_sparse(uint8_t *p)
{
	memset(p, 0, HLL_SPARSE_EMPTY_SIZE);
	memcpy(p, "HYLL", 4);
	p[4] = HLL_SPARSE;
	put_zeros(p + HLL_HDR_SIZE, HLL_REGISTERS);
}

bool hll_cache_valid(const uint8_t *p)
{
	return (p[15] & 0x80) == 0;
}

uint64_t hll_cache_get(const uint8_t *p)
{
	uint64_t card = 0;

	for (int i = 7; i >= 0; i--)
		card = card << 8 | p[8 + i];
	return card;
}

void hll_cache_set(uint8_t *p, uint64_t card)
{
	for (int i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(card >> (8 * i));
}

void hll_cache_invalidate(uint8_t *p)
{
	p[15] |= 0x80;
}

/* ---- hashing -------------------------------------------------------------------------- */

uint64_t hll_hash(const void *key, size_t len, uint64_t seed)
{
	const uint64_t m = 0xc6a4a7935bd1e995ULL;
	const uint8_t *data = key, *end = data + (len - (len & 7));
	uint64_t h = (seed & 0xffffffffu) ^ (len * m);

	/* Blocks are read little-endian whatever the host, as Redis does. */
	for (; data != end; data += 8) {
		uint64_t k = 0;

		for (int i = 7; i >= 0; i--)
			k = k << 8 | data[i];
		k *= m;
		k ^= k >> 47;
		k *= m;
		h ^= k;
		h *= m;
	}
	if (len & 7) {
		for (int i = (int)(len & 7) - 1; i >= 0; i--)
			h ^= (uint64_t)data[i] << (8 * i);
		h *= m;
	}
	h ^= h >> 47;
	h *= m;
	h ^= h >> 47;
	return h;
}

int hll_pattern(const void *ele, size_t len, long *index)
{
	uint64_t hash = hll_hash(ele, len, HLL_SEED);

	*index = (long)(hash & (HLL_REGISTERS - 1));
	/* The bit above the Q remaining bits bounds the run at Q + 1. */
	hash = (hash >> HLL_P) | (1ULL << HLL_Q);
	return __builtin_ctzll(hash) + 1;
}

/* ---- dense ---------------------------------------------------------------------------- */

/* Register i spans bits 6i..6i+5, least significant first; the byte after
 * the last register's is never touched (its value needs none of it). */
uint8_t hll_dense_get(const uint8_t *regs, long index)
{
	size_t byte = (size_t)index * HLL_BITS / 8;
	unsigned shift = (unsigned)(index * HLL_BITS) & 7;
	unsigned v = regs[byte] >> shift;

	if (shift > 8 - HLL_BITS)
		v |= (unsigned)regs[byte + 1] << (8 - shift);
	return (uint8_t)(v & HLL_REGISTER_MAX);
}

void hll_dense_put(uint8_t *regs, long index, uint8_t val)
{
	size_t byte = (size_t)index * HLL_BITS / 8;
	unsigned shift = (unsigned)(index * HLL_BITS) & 7;

	regs[byte] = (uint8_t)((regs[byte] & ~(HLL_REGISTER_MAX << shift)) | (val << shift));
	if (shift > 8 - HLL_BITS) {
		unsigned high = 8 - shift;

		regs[byte + 1] =
			(uint8_t)((regs[byte + 1] & ~(HLL_REGISTER_MAX >> high)) | (val >> high));
	}
}

int hll_dense_set(uint8_t *regs, long index, uint8_t count)
{
	if (count <= hll_dense_get(regs, index))
		return 0;
	hll_dense_put(regs, index, count);
	return 1;
}

void hll_dense_from_raw(uint8_t *regs, const uint8_t *max)
{
	/* Four registers to three bytes (see dense_word()). */
	for (long i = 0; i < HLL_REGISTERS; i += 4, regs += 3) {
		uint32_t w = (max[i] & HLL_REGISTER_MAX) |
			     (uint32_t)(max[i + 1] & HLL_REGISTER_MAX) << 6 |
			     (uint32_t)(max[i + 2] & HLL_REGISTER_MAX) << 12 |
			     (uint32_t)(max[i + 3] & HLL_REGISTER_MAX) << 18;

		regs[0] = (uint8_t)w;
		regs[1] = (uint8_t)(w >> 8);
		regs[2] = (uint8_t)(w >> 16);
	}
}

/* ---- sparse --------------------------------------------------------------------------- */

/* Calls fn(arg, first, runlen, value) for every opcode of the sparse
 * registers p[0..len); 0, or -1 if the runs do not cover exactly 16384. */
static int sparse_walk(const uint8_t *p, size_t len,
		       void (*fn)(void *arg, long first, long runlen, int value), void *arg)
{
	const uint8_t *end = p + len;
	long idx = 0;

	while (p < end) {
		long runlen;
		int value = 0;

		if (op_is_zero(p)) {
			runlen = op_zero_len(p);
			p++;
		} else if (op_is_xzero(p)) {
			/* A cut XZERO at the very end: Redis reads its second
			 * byte from the string's NUL terminator, so do we. */
			runlen = p + 1 < end ? op_xzero_len(p) : ((long)(p[0] & 0x3f) << 8) + 1;
			p += 2;
		} else {
			runlen = op_val_len(p);
			value = op_val_value(p);
			p++;
		}
		if (idx + runlen > HLL_REGISTERS)
			return -1;
		fn(arg, idx, runlen, value);
		idx += runlen;
	}
	return idx == HLL_REGISTERS ? 0 : -1;
}

static void run_to_dense(void *arg, long first, long runlen, int value)
{
	if (value)
		for (long i = 0; i < runlen; i++)
			hll_dense_put(arg, first + i, (uint8_t)value);
}

int hll_sparse_to_dense(const uint8_t *p, size_t len, uint8_t *dense)
{
	memset(dense, 0, HLL_DENSE_SIZE);
	memcpy(dense, p, HLL_HDR_SIZE); /* the magic and the cached cardinality */
	dense[4] = HLL_DENSE;
	return sparse_walk(p + HLL_HDR_SIZE, len - HLL_HDR_SIZE, run_to_dense,
			   dense + HLL_HDR_SIZE);
}

/* After an edit, merges adjacent VAL opcodes of one value, from the opcode
 * before the edited one and over the next five, as Redis does. */
static void sparse_merge_vals(uint8_t *p, uint8_t **endp)
{
	uint8_t *end = *endp;

	for (int scan = 5; p < end && scan--;) {
		if (op_is_xzero(p)) {
			p += 2;
			continue;
		}
		if (op_is_zero(p)) {
			p++;
			continue;
		}
		if (p + 1 < end && op_is_val(p + 1) && op_val_value(p) == op_val_value(p + 1)) {
			long len = op_val_len(p) + op_val_len(p + 1);

			if (len <= VAL_MAX_LEN) {
				put_val(p + 1, op_val_value(p), len);
				memmove(p, p + 1, (size_t)(end - p - 1));
				end--;
				continue; /* the merged run may merge again */
			}
		}
		p++;
	}
	*endp = end;
}

int hll_sparse_set(uint8_t *hll, size_t *hll_len, long index, uint8_t count, size_t sparse_max)
{
	uint8_t *sparse = hll + HLL_HDR_SIZE, *end = hll + *hll_len, *p = sparse, *prev = NULL;
	uint8_t seq[5], *n = seq;
	long first = 0, span = 0, runlen;
	int oplen = 1;

	if (count > VAL_MAX_VALUE)
		return HLL_PROMOTE;

	/* The opcode that covers the register, and the one before it. */
	while (p < end) {
		oplen = 1;
		if (op_is_zero(p)) {
			span = op_zero_len(p);
		} else if (op_is_val(p)) {
			span = op_val_len(p);
		} else {
			/* At the end, the second byte is the NUL past it (see
			 * hll.h), as Redis reads it. */
			span = op_xzero_len(p);
			oplen = 2;
		}
		if (index <= first + span - 1)
			break;
		prev = p;
		p += oplen;
		first += span;
	}
	if (span == 0 || p >= end)
		return -1;
	runlen = span;

	if (op_is_val(p)) {
		if (op_val_value(p) >= count)
			return 0;
		if (runlen == 1) {
			put_val(p, count, 1);
			goto updated;
		}
	} else if (op_is_zero(p) && runlen == 1) {
		put_val(p, count, 1);
		goto updated;
	}

	/* Split the run around the register: at most XZERO VAL XZERO. */
	long last = first + span - 1;

	if (op_is_val(p)) {
		int cur = op_val_value(p);

		if (index != first)
			put_val(n++, cur, index - first);
		put_val(n++, count, 1);
		if (index != last)
			put_val(n++, cur, last - index);
	} else {
		if (index != first)
			n += put_zeros(n, index - first);
		put_val(n++, count, 1);
		if (index != last)
			n += put_zeros(n, last - index);
	}

	int delta = (int)(n - seq) - oplen;

	if (delta > 0 && *hll_len + (size_t)delta > sparse_max)
		return HLL_PROMOTE;
	if (delta && p + oplen < end)
		memmove(p + oplen + delta, p + oplen, (size_t)(end - p - oplen));
	memcpy(p, seq, (size_t)(n - seq));
	end += delta;

updated:
	sparse_merge_vals(prev ? prev : sparse, &end);
	*hll_len = (size_t)(end - hll);
	hll_cache_invalidate(hll);
	return 1;
}

/* ---- merging and counting ------------------------------------------------------------- */

static void run_to_max(void *arg, long first, long runlen, int value)
{
	uint8_t *max = arg;

	for (long i = first; i < first + runlen; i++)
		if (value > max[i])
			max[i] = (uint8_t)value;
}

/* Four 6-bit registers fill three bytes exactly: the dense loops below
 * take registers four at a time from one 24-bit word instead of one call
 * of hll_dense_get() each (PFCOUNT of several keys and PFMERGE spent most
 * of their time there). */
_Static_assert(HLL_BITS == 6 && HLL_REGISTERS % 4 == 0, "4 registers per 3 bytes");

static inline uint32_t dense_word(const uint8_t *regs, long group)
{
	const uint8_t *b = regs + group * 3;

	return b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
}

/* Raises max[] to the dense registers of groups [first, end) (four
 * registers each). Unpacked first, then a branch-free maximum the compiler
 * vectorizes: a compare-and-branch per register mispredicts on random data. */
static void merge_groups(uint8_t *max, const uint8_t *regs, long first, long end)
{
	uint8_t v[HLL_REGISTERS];
	long n = (end - first) * 4;

	for (long g = first; g < end; g++) {
		uint32_t w = dense_word(regs, g);
		uint8_t *o = v + (g - first) * 4;

		o[0] = w & HLL_REGISTER_MAX;
		o[1] = (w >> 6) & HLL_REGISTER_MAX;
		o[2] = (w >> 12) & HLL_REGISTER_MAX;
		o[3] = (uint8_t)(w >> 18);
	}
	max += first * 4;
	for (long i = 0; i < n; i++)
		max[i] = v[i] > max[i] ? v[i] : max[i];
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * 24 packed bytes are 32 registers: one 32-bit lane per three bytes, the
 * lane's four 6-bit fields moved to its four bytes by shifts and masks,
 * then a byte-wise maximum. A 128-bit half shuffles only its own bytes, so
 * the 32 bytes are loaded 4 before the chunk: the low half's lanes take
 * bytes 4..15 of the load (chunk bytes 0..11), the high half's bytes 0..11
 * of its own half (chunk bytes 12..23). The first chunk, whose load would
 * start before the registers, and the last, whose load would end past them,
 * go through the scalar loop.
 */
__attribute__((target("avx2"))) static void merge_dense_avx2(uint8_t *max, const uint8_t *regs)
{
	const __m256i spread =
		_mm256_setr_epi8(4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1, 0, 1, 2,
				 -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
	const __m256i m0 = _mm256_set1_epi32(0x3f), m1 = _mm256_set1_epi32(0x3f00),
		      m2 = _mm256_set1_epi32(0x3f0000), m3 = _mm256_set1_epi32(0x3f000000);
	const long chunks = HLL_REGISTERS / 32;

	merge_groups(max, regs, 0, 8);
	for (long c = 1; c < chunks - 1; c++) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(regs + c * 24 - 4));
		__m256i r, m;

		w = _mm256_shuffle_epi8(w, spread);
		r = _mm256_or_si256(_mm256_and_si256(w, m0),
				    _mm256_and_si256(_mm256_slli_epi32(w, 2), m1));
		r = _mm256_or_si256(r, _mm256_and_si256(_mm256_slli_epi32(w, 4), m2));
		r = _mm256_or_si256(r, _mm256_and_si256(_mm256_slli_epi32(w, 6), m3));
		m = _mm256_loadu_si256((const __m256i *)(max + c * 32));
		_mm256_storeu_si256((__m256i *)(max + c * 32), _mm256_max_epu8(m, r));
	}
	merge_groups(max, regs, (chunks - 1) * 8, chunks * 8);
}
#endif

int hll_merge(uint8_t *max, const uint8_t *p, size_t len)
{
	if (hll_encoding(p) == HLL_DENSE) {
#if defined(__x86_64__)
		if (__builtin_cpu_supports("avx2")) {
			merge_dense_avx2(max, p + HLL_HDR_SIZE);
			return 0;
		}
#endif
		merge_groups(max, p + HLL_HDR_SIZE, 0, HLL_REGISTERS / 4);
		return 0;
	}
	return sparse_walk(p + HLL_HDR_SIZE, len - HLL_HDR_SIZE, run_to_max, max);
}

static double hll_sigma(double x)
{
	double y = 1, z = x, prev;

	if (x == 1.)
		return INFINITY;
	do {
		x *= x;
		prev = z;
		z += x * y;
		y += y;
	} while (prev != z);
	return z;
}

static double hll_tau(double x)
{
	double y = 1.0, z = 1 - x, prev;

	if (x == 0. || x == 1.)
		return 0.;
	do {
		x = sqrt(x);
		prev = z;
		y *= 0.5;
		z -= pow(1 - x, 2) * y;
	} while (prev != z);
	return z / 3;
}

/* The estimate from the histogram of register values. */
static uint64_t estimate(const int *histo)
{
	double m = HLL_REGISTERS;
	double z = m * hll_tau((m - histo[HLL_Q + 1]) / m);

	for (int j = HLL_Q; j >= 1; --j) {
		z += histo[j];
		z *= 0.5;
	}
	z += m * hll_sigma(histo[0] / m);
	return (uint64_t)llroundl(HLL_ALPHA_INF * m * m / z);
}

static void run_to_histo(void *arg, long first, long runlen, int value)
{
	((int *)arg)[value] += (int)runlen;
}

uint64_t hll_count(const uint8_t *p, size_t len, bool *invalid)
{
	int histo[64] = { 0 };

	if (hll_encoding(p) == HLL_DENSE) {
		const uint8_t *regs = p + HLL_HDR_SIZE;
		int lane[4][64] = { { 0 } };

		/* One histogram per register of the group: increments of the
		 * same counter do not wait on each other. */
		for (long g = 0; g < HLL_REGISTERS / 4; g++) {
			uint32_t w = dense_word(regs, g);

			lane[0][w & HLL_REGISTER_MAX]++;
			lane[1][(w >> 6) & HLL_REGISTER_MAX]++;
			lane[2][(w >> 12) & HLL_REGISTER_MAX]++;
			lane[3][w >> 18]++;
		}
		for (int v = 0; v < 64; v++)
			histo[v] = lane[0][v] + lane[1][v] + lane[2][v] + lane[3][v];
	} else if (sparse_walk(p + HLL_HDR_SIZE, len - HLL_HDR_SIZE, run_to_histo, histo) < 0) {
		if (invalid)
			*invalid = true;
	}
	return estimate(histo);
}

uint64_t hll_count_raw(const uint8_t *max)
{
	int histo[64] = { 0 }, lane[4][64] = { { 0 } };

	/* max[] holds merged 6-bit registers: no value passes 63. */
	for (long i = 0; i < HLL_REGISTERS; i += 8) {
		lane[0][max[i]]++;
		lane[1][max[i + 1]]++;
		lane[2][max[i + 2]]++;
		lane[3][max[i + 3]]++;
		lane[0][max[i + 4]]++;
		lane[1][max[i + 5]]++;
		lane[2][max[i + 6]]++;
		lane[3][max[i + 7]]++;
	}
	for (int v = 0; v < 64; v++)
		histo[v] = lane[0][v] + lane[1][v] + lane[2][v] + lane[3][v];
	return estimate(histo);
}
