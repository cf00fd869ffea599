/* nchwc_avx512.c - the AVX-512 level (b = 16) of the NCHWc kernels; compiled with AVX-512 F/BW/VL/DQ + FMA flags and reached only through so_nchwc_avx512 once the run-time dispatch selected AVX-512. */
#include "nchwc.h"

#include <immintrin.h>

#define NB 16
#define VF __m512
#define VI __m512i
#define VLDI(p) _mm512_loadu_si512((const void *)(p))
#define VPERM(v, i) _mm512_permutexvar_ps(i, v)
#define VPERM4(v, i) _mm512_permutevar_ps(v, i)
#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps(p, v)
#define VLDU32(p) _mm512_loadu_ps((const void *)(p))
#define VSET1(s) _mm512_set1_ps(s)
#define VZERO _mm512_setzero_ps()
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VDIV(a, b) _mm512_div_ps(a, b)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VMIN(a, b) _mm512_min_ps(a, b)
#define VAND(a, m) _mm512_and_ps(a, m)
#define VOR(a, b) _mm512_or_ps(a, b)
#define VORNAN(m, a, b) _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), _mm512_castsi512_ps(_mm512_set1_epi32(-1)))
/* 32 registers: 4 blocks x 6 pixels = 24 accumulators, 4 weight vectors, 1 broadcast */
#define CONV_OBK 4
#define CONV_PX 6
#define DW_PX 8
#define STEM_PX 24
#define DW2_PX 8
#define DW2_MIN_WO 0
#define NCHWC_TABLE so_nchwc_avx512
#define NCHWC_ISA "avx512"
#include "nchwc_body.h"
