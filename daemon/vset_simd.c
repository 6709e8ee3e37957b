// SPDX-License-Identifier: BSD-3-Clause
/*
 * The dot products under every vector-set distance, in three builds chosen
 * once at start from the CPU (AVX-512, AVX2+FMA, scalar). Q8 sums are exact
 * integers in every build; FP32 differs only by the order of additions, so
 * within float rounding.
 */
#include <stdint.h>

#include "vset_hnsw.h"

enum { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };

static int isa_cpu = -1; /* the best the CPU has, set at start */
static int isa_use;	 /* what runs (tests may lower it) */

/* Two sums of four products each per step of eight, then the tail into the
 * first: the order Redis adds in, so small sets score to the same bits. */
static float dot_f32_scalar(const float *a, const float *b, uint32_t n)
{
	float s0 = 0, s1 = 0;
	uint32_t i = 0;

	for (; i + 7 < n; i += 8) {
		s0 += a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2] + a[i + 3] * b[i + 3];
		s1 += a[i + 4] * b[i + 4] + a[i + 5] * b[i + 5] + a[i + 6] * b[i + 6] +
		      a[i + 7] * b[i + 7];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return s0 + s1;
}

static int32_t dot_q8_scalar(const int8_t *a, const int8_t *b, uint32_t n)
{
	int32_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += (int32_t)a[i] * b[i];
	return s;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static float dot_f32_avx2(const float *a, const float *b,
							      uint32_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	uint32_t i = 0;
	float t[8], r;

	for (; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	_mm256_storeu_ps(t, _mm256_add_ps(s0, s1));
	r = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
	for (; i < n; i++)
		r += a[i] * b[i];
	return r;
}

__attribute__((target("avx2"))) static int32_t dot_q8_avx2(const int8_t *a, const int8_t *b,
							   uint32_t n)
{
	__m256i s = _mm256_setzero_si256();
	uint32_t i = 0;
	int32_t t[8], r;

	/* Sign-extend 16 bytes to 16 shorts; madd sums pairs into ints. */
	for (; i + 16 <= n; i += 16) {
		__m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(a + i)));
		__m256i y = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + i)));

		s = _mm256_add_epi32(s, _mm256_madd_epi16(x, y));
	}
	_mm256_storeu_si256((__m256i *)t, s);
	r = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
	for (; i < n; i++)
		r += (int32_t)a[i] * b[i];
	return r;
}

__attribute__((target("avx512f"))) static float dot_f32_avx512(const float *a, const float *b,
							       uint32_t n)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	uint32_t i = 0;
	float r;

	for (; i + 32 <= n; i += 32) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
	}
	for (; i + 16 <= n; i += 16)
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
	if (i < n) {
		/* The tail as one masked step: no scalar loop at 100-d. */
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);

		s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i),
				     _mm512_maskz_loadu_ps(k, b + i), s1);
	}
	r = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
	return r;
}

__attribute__((target("avx512f,avx512bw"))) static int32_t
dot_q8_avx512(const int8_t *a, const int8_t *b, uint32_t n)
{
	__m512i s = _mm512_setzero_si512();
	uint32_t i = 0;
	int32_t r;

	for (; i + 32 <= n; i += 32) {
		__m512i x = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(a + i)));
		__m512i y = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(b + i)));

		s = _mm512_add_epi32(s, _mm512_madd_epi16(x, y));
	}
	r = _mm512_reduce_add_epi32(s);
	for (; i < n; i++)
		r += (int32_t)a[i] * b[i];
	return r;
}
#endif

static void isa_detect(void)
{
	if (isa_cpu >= 0)
		return;
	isa_cpu = ISA_SCALAR;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		isa_cpu = ISA_AVX2;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		isa_cpu = ISA_AVX512;
#endif
	isa_use = isa_cpu;
}

__attribute__((constructor)) static void vset_simd_init(void)
{
	isa_detect();
}

const char *vhnsw_isa(void)
{
	static const char *const names[] = { "scalar", "avx2", "avx512" };

	return names[isa_use];
}

void vhnsw_force_isa(int isa)
{
	isa_detect();
	if (isa < 0)
		isa = 0;
	isa_use = isa < isa_cpu ? isa : isa_cpu;
}

float vhnsw_dot_f32(const float *a, const float *b, uint32_t n)
{
	/* Below 16 components Redis runs its scalar code on every CPU. */
	if (n < 16)
		return dot_f32_scalar(a, b, n);
#if defined(__x86_64__)
	if (isa_use == ISA_AVX512)
		return dot_f32_avx512(a, b, n);
	if (isa_use == ISA_AVX2)
		return dot_f32_avx2(a, b, n);
#endif
	return dot_f32_scalar(a, b, n);
}

int32_t vhnsw_dot_q8(const int8_t *a, const int8_t *b, uint32_t n)
{
#if defined(__x86_64__)
	if (isa_use == ISA_AVX512)
		return dot_q8_avx512(a, b, n);
	if (isa_use == ISA_AVX2)
		return dot_q8_avx2(a, b, n);
#endif
	return dot_q8_scalar(a, b, n);
}
