/* nchwc_avx2.c - the AVX2+FMA level (b = 8) of the NCHWc kernels; compiled with -mavx2 -mfma and reached only through so_nchwc_avx2 once the run-time dispatch selected AVX2. */
#include "nchwc.h"

#include <immintrin.h>

#define NB 8
#define VF __m256
#define VI __m256i
#define VLDI(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define VPERM(v, i) _mm256_permutevar8x32_ps(v, i)
#define VPERM4(v, i) _mm256_permutevar_ps(v, i)
#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps(p, v)
#define VLDU32(p) _mm256_loadu_ps((const float *)(const void *)(p))
#define VSET1(s) _mm256_set1_ps(s)
#define VZERO _mm256_setzero_ps()
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VDIV(a, b) _mm256_div_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VMIN(a, b) _mm256_min_ps(a, b)
#define VAND(a, m) _mm256_and_ps(a, m)
#define VOR(a, b) _mm256_or_ps(a, b)
#define VORNAN(m, a, b) _mm256_or_ps(m, _mm256_cmp_ps(a, b, _CMP_UNORD_Q))
/* 16 registers: 2 blocks x 6 pixels = 12 accumulators, 2 weight vectors, 1 broadcast */
#define CONV_OBK 2
#define CONV_PX 6
#define DW_PX 8
#define STEM_PX 12
/* Two-row depthwise tiles (dw2_tile) of 4 pixels: 8 sums + the 9 weights of a 3x3 (one reloaded) + the input vector.
   Only on output rows wider than dw_plane's (2 * DW_PX): at Zen 3, 1 thread, loaded (paired rounds of a microbench,
   session 22) they took 0.52-0.85 of the one-row tiles' time on 112^2 to 28^2 planes, but 1.3-1.9x on 7 x 7 and
   14 x 14 3x3 planes, which keep dw_plane's zero-bordered 8-pixel one-row tiles. */
#define DW2_PX 4
#define DW2_MIN_WO (2 * DW_PX + 1)
/* pointwise (1x1) tile: 4 blocks x 3 pixels = 12 accumulators, 3 broadcasts, 1 weight vector (nchwc_body.h pw_run) */
#define PW_OBK 4
#define PW_PX 3
/* conv_pad's widest tile (convp_tile): 4 blocks x 3 pixels as the pointwise tile (32 output channels per broadcast), on
   the one-row / one-column kernels only (nchwc_body.h convp_obk); the other convs keep 2 x 6 */
#define CONVP_OBK 4
#define CONVP_NPX 3
#define NCHWC_TABLE so_nchwc_avx2
#define NCHWC_ISA "avx2"
#include "nchwc_body.h"
