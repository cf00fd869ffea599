/* nchwc_body.h - the NCHWc kernels written once over a small vector abstraction; included (only) by nchwc.c (portable C), nchwc_avx2.c and nchwc_avx512.c, each defining its level's macros first. Every function here is static. */
/* The includer defines:
     NB                 block size (lanes of VF)
     VF                 vector type of NB floats
     VLD(p) VST(p, v)   unaligned load / store of NB floats
     VLDU32(p)          NB uint32 bit patterns loaded as a VF
     VSET1(s) VZERO     broadcast, zero vector
     VFMA(a, b, c)      a*b + c
     VADD VSUB VMUL VDIV
     VMAX(a, b) VMIN(a, b)   a > b ? a : b / a < b ? a : b per lane (a NaN in either gives b: x86's maxps/minps)
     VAND(a, m) VOR(a, b)    bitwise
     VORNAN(m, a, b)    m with all bits set in the lanes where a or b is NaN
     CONV_OBK CONV_PX   register tile of the direct conv: output blocks (1..4) x pixels (>= 6: conv_row also uses 1..5; a
                        tile of obk < CONV_OBK blocks is CONV_WIDE(obk) pixels wide, the same CONV_OBK * CONV_PX accumulators)
     STEM_PX            accumulators of the stem conv's tile (obk blocks x STEM_PX / obk pixels; a multiple of 12)
     DW2_PX             pixels per two-row 3x3 / 5x5 (stride 1, 2) depthwise tile (0, 4 or 8; 0: none)
     DW2_MIN_WO         the narrowest output rows dw_run gives the two-row tiles (narrower: dw_plane / dw_row as at DW2_PX 0)
     DW_PX              pixels per depthwise tile (8: dw_tile_any has cases 1..7 below it)
     VI VLDI(p) VPERM(v, i)  vector of NB uint32 indices, its load, the lane permutation (lane o of the result = lane i[o] of v)
     VPERM4(v, i)       VPERM for indices that stay within their group of 4 lanes (a cheaper in-lane shuffle)
     NCHWC_TABLE NCHWC_ISA   the name of the so_nchwc_impl to define and its level's name */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../src/ops.h"
#include "vmath.h"

#define NCHWC_WFLOATS 8192    /* packed weight floats per input-channel chunk of the direct conv (32 KB: L1/L2) */
#define NCHWC_PSUM_FLOATS 32768 /* output floats (partial sums) per work item of the direct conv (128 KB: L2) */

static const uint32_t lane_tab[2 * NB] = {
    0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
#if NB == 16
    0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
#endif
};

/* All-ones in the lanes of block cb that hold one of the C channels, zero in its padding lanes. */
static inline VF lane_mask(int64_t C, int64_t cb)
{
    int64_t n = C - cb * NB;
    n = n > NB ? NB : n;
    return VLDU32(lane_tab + NB - n);
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The team for a kernel of `work` multiply-adds (or elements moved): 1 below NCHWC_PAR_MIN, where a parallel
   region's fork and join cost about what a second thread saves (EfficientNet's squeeze-excite convs on 1x1
   planes, their pools and scales). Results do not depend on it (static splits). */
#define NCHWC_PAR_MIN 65536
static inline int team(int T, int64_t work) { return work < NCHWC_PAR_MIN ? 1 : T; }

#if defined(__AVX512F__) && NB == 16
static inline __attribute__((always_inline)) VF sigmoid_v(VF v) { return so_vsigmoid16(v); } /* vmath.h */
#elif defined(__AVX2__) && NB == 8
static inline __attribute__((always_inline)) VF sigmoid_v(VF v) { return so_vsigmoid8(v); }
#else
/* Sigmoid of each lane: the kernel set's vectorisable approximation (vmath.h) over the NB lanes. */
static inline __attribute__((always_inline)) VF sigmoid_v(VF v)
{
    float t[NB];
    VST(t, v);
#pragma omp simd
    for (int l = 0; l < NB; l++) t[l] = vsigmoidf(t[l]);
    return VLD(t);
}
#endif
/* Tanh of each lane, as sigmoid_v's fallback (no fused Tanh in the models measured). */
static inline VF tanh_v(VF v)
{
    float t[NB];
    VST(t, v);
#pragma omp simd
    for (int l = 0; l < NB; l++) t[l] = vtanhf(t[l]);
    return VLD(t);
}

/* so_act or SO_EPI_* (epi.h) in registers (NaN passes through Relu/Clip as in so_ref_act; HardSwish's x/6 is a
   multiply by 1/6, within an ulp of the reference's divide; lo/hi = HardSigmoid's alpha/beta). */
static inline __attribute__((always_inline)) VF act_v(int a, VF v, VF lo, VF hi)
{
    switch (a) {
    case SO_ACT_RELU: return VMAX(VZERO, v);
    case SO_ACT_CLIP: return VMIN(hi, VMAX(lo, v));
    case SO_ACT_SIGMOID: return sigmoid_v(v);
    case SO_ACT_TANH: return tanh_v(v);
    case SO_EPI_SILU: return VMUL(v, sigmoid_v(v));
    case SO_EPI_HARDSWISH: return VMUL(v, VMIN(VSET1(1.0f), VMAX(VZERO, VFMA(v, VSET1(1.0f / 6.0f), VSET1(0.5f)))));
    case SO_EPI_HARDSIGMOID: return VMIN(VSET1(1.0f), VMAX(VZERO, VFMA(lo, v, hi)));
    default: return v;
    }
}
/* Relu / Clip / none: applied by the register tiles themselves. The others (a transcendental or a division) run
   over each finished tile in epi_tile, out of line: inlined into every tile they cost the cheap epilogues ~13%
   (MNASNet's blocked convs: spills), and called per vector the fused ones ~0.6 ms on MobileNet-v3. */
static inline int cheap_act(int a) { return a == SO_ACT_NONE || a == SO_ACT_RELU || a == SO_ACT_CLIP; }
static inline VF act_c(int a, VF v, VF lo, VF hi)
{
    if (a == SO_ACT_RELU) return VMAX(VZERO, v);
    if (a == SO_ACT_CLIP) return VMIN(hi, VMAX(lo, v));
    return v;
}
static inline int cheap_epi(const so_nchwc_conv *p) { return cheap_act(p->act1) && cheap_act(p->act2); }

/* ---------------- reorders ---------------- */

/* NCHW x <-> blocked y, tiles of 64 pixels: to_blk copies x into y with zero padding lanes, else y back into x
   (padding dropped). With AVX2, every group of 8 lanes x 8 pixels goes through an 8 x 8 register transpose
   (the scalar strided copy ran at ~4-8 GB/s: MNASNet's 32 x 112 x 112 reorder 0.21 ms): a group with fewer than 8
   channels transposes zero rows into its padding lanes (to_blk) or stores only its channels' rows (back), a group
   past the last channel stores zeros (a 3-channel image's 13 padding lanes were written one float at a time: 0.31 ms
   on 224 x 224); the pixels past the last multiple of 8 element by element. A pure copy: the same bits either way. */
static void reorder(float *x, float *y, int64_t N, int64_t C, int64_t HW, int T, int to_blk)
{
    const int64_t Cb = cdiv(C, NB);
    T = team(T, N * Cb * NB * HW);
#pragma omp parallel for num_threads(T) schedule(static) collapse(2) if (T > 1)
    for (int64_t n = 0; n < N; n++)
        for (int64_t cb = 0; cb < Cb; cb++) {
            const int64_t nc = min64(NB, C - cb * NB);
            float *xs = x + (n * C + cb * NB) * HW, *yb = y + (n * Cb + cb) * HW * NB;
            for (int64_t p0 = 0; p0 < HW; p0 += 64) {
                const int64_t pe = min64(HW, p0 + 64);
                int64_t q0 = p0; /* pixels before q0 are done */
#ifdef __AVX2__
                const int64_t qe = p0 + ((pe - p0) & ~(int64_t)7);
                for (int64_t l0 = 0; l0 < (to_blk ? NB : nc); l0 += 8) {
                    const int64_t rem = min64(8, nc - l0); /* channels in this group of lanes (<= 0: padding only) */
                    for (int64_t q = p0; q < qe; q += 8) {
                        __m256 r[8];
                        if (to_blk) {
                            for (int i = 0; i < 8; i++) r[i] = i < rem ? _mm256_loadu_ps(xs + (l0 + i) * HW + q) : _mm256_setzero_ps();
                            if (rem > 0) so_tr8x8(r);
                            for (int i = 0; i < 8; i++) _mm256_storeu_ps(yb + (q + i) * NB + l0, r[i]);
                        } else {
                            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(yb + (q + i) * NB + l0);
                            so_tr8x8(r);
                            for (int i = 0; i < rem; i++) _mm256_storeu_ps(xs + (l0 + i) * HW + q, r[i]);
                        }
                    }
                }
                q0 = qe;
#endif
                for (int64_t l = 0; l < nc; l++)
                    for (int64_t q = q0; q < pe; q++) {
                        if (to_blk) yb[q * NB + l] = xs[l * HW + q];
                        else xs[l * HW + q] = yb[q * NB + l];
                    }
                for (int64_t l = nc; l < NB && to_blk; l++)
                    for (int64_t q = q0; q < pe; q++) yb[q * NB + l] = 0.0f;
            }
        }
}
static void to_blocked(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T) { reorder((float *)x, y, N, C, HW, T, 1); }
static void from_blocked(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T) { reorder(y, (float *)x, N, C, HW, T, 0); }

/* Channels-last <-> blocked in one pass (kernels/fuse.h so_fuse_nhwc), tiles of NHWC_TILE pixels over the team:
   each pixel's channels of one block are NB consecutive floats on both sides (one vector copy; the last block of a
   C that is not a multiple of NB lane by lane). Blocked x -> channels-last y [N][HW][C], padding dropped: a pure
   copy, the same bits as from_blocked then the Transpose. */
#define NHWC_TILE 32
static void to_nhwc(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T)
{
    const int64_t Cb = cdiv(C, NB), full = C / NB, rem = C - full * NB;
    T = team(T, N * Cb * NB * HW);
#pragma omp parallel for num_threads(T) schedule(static) collapse(2) if (T > 1)
    for (int64_t n = 0; n < N; n++)
        for (int64_t p0 = 0; p0 < HW; p0 += NHWC_TILE) {
            const int64_t pe = min64(HW, p0 + NHWC_TILE);
            for (int64_t cb = 0; cb < Cb; cb++) {
                const float *xs = x + (n * Cb + cb) * HW * NB;
                float *yd = y + n * HW * C + cb * NB;
                if (cb < full)
                    for (int64_t q = p0; q < pe; q++) VST(yd + q * C, VLD(xs + q * NB));
                else
                    for (int64_t q = p0; q < pe; q++)
                        for (int64_t l = 0; l < rem; l++) yd[q * C + l] = xs[q * NB + l];
            }
        }
}

/* Channels-last x [N][HW][C] -> blocked y (padding lanes zero), each channel times scale[c] when scale is not NULL
   (float[Cb*NB], zero in the padding lanes), then plus res (blocked, y's shape) when res is not NULL: the same
   operations in the same order as the Transpose, the Mul of the NCHW value, the NCHWC_IN and the blocked Add, so the
   same bits (a padding lane: 0 [* 0] [+ res]). */
static void from_nhwc(const float *x, const float *scale, const float *res, float *y, int64_t N, int64_t C, int64_t HW, int T)
{
    const int64_t Cb = cdiv(C, NB), full = C / NB, rem = C - full * NB;
    T = team(T, N * Cb * NB * HW);
#pragma omp parallel for num_threads(T) schedule(static) collapse(2) if (T > 1)
    for (int64_t n = 0; n < N; n++)
        for (int64_t p0 = 0; p0 < HW; p0 += NHWC_TILE) {
            const int64_t pe = min64(HW, p0 + NHWC_TILE);
            for (int64_t cb = 0; cb < Cb; cb++) {
                const float *xs = x + n * HW * C + cb * NB;
                const int64_t ob = (n * Cb + cb) * HW * NB;
                float *yd = y + ob;
                const float *rs = res ? res + ob : NULL;
                if (cb < full) {
                    const VF sv = scale ? VLD(scale + cb * NB) : VZERO;
                    for (int64_t q = p0; q < pe; q++) {
                        VF v = VLD(xs + q * C);
                        if (scale) v = VMUL(v, sv);
                        if (rs) v = VADD(v, VLD(rs + q * NB));
                        VST(yd + q * NB, v);
                    }
                } else {
                    for (int64_t q = p0; q < pe; q++)
                        for (int64_t l = 0; l < NB; l++) {
                            float v = l < rem ? xs[q * C + l] : 0.0f;
                            if (scale) v *= scale[cb * NB + l];
                            if (rs) v += rs[q * NB + l];
                            yd[q * NB + l] = v;
                        }
                }
            }
        }
}

/* ---------------- epilogue ---------------- */

/* Stores one finished accumulator of output block ob at y: the whole epilogue when it is cheap (cheap_epi),
   else only scale/shift (epi_tile finishes it). */
static inline void epi_store(const so_nchwc_conv *p, int64_t ob, VF acc, float *y, const float *res)
{
    VF v = VFMA(acc, VLD(p->scale + ob * NB), VLD(p->shift + ob * NB));
    if (cheap_epi(p)) {
        v = act_c(p->act1, v, VSET1(p->lo1), VSET1(p->hi1));
        if (res) v = VADD(v, VLD(res));
        v = act_c(p->act2, v, VSET1(p->lo2), VSET1(p->hi2));
        v = VAND(v, lane_mask(p->O, ob));
    }
    VST(y, v);
}

/* The epilogue of one output block read out of p once, before a tile's stores: the stores through y may alias *p,
   so epi_store's reads of p->scale, p->act1, ... were repeated after every stored pixel (about half of the
   depthwise tiles' time, MNASNet). */
typedef struct blk_epi {
    VF sc, sh, m, lo1, hi1, lo2, hi2;
    int act1, act2, cheap;
} blk_epi;
static inline __attribute__((always_inline)) blk_epi epi_of(const so_nchwc_conv *p, int64_t ob)
{
    const blk_epi e = {VLD(p->scale + ob * NB), VLD(p->shift + ob * NB), lane_mask(p->O, ob), VSET1(p->lo1), VSET1(p->hi1),
                       VSET1(p->lo2), VSET1(p->hi2), p->act1, p->act2, cheap_epi(p)};
    return e;
}
/* epi_store with the block's epilogue in e. */
static inline __attribute__((always_inline)) void epi_put(const blk_epi *e, VF acc, float *y, const float *res)
{
    VF v = VFMA(acc, e->sc, e->sh);
    if (e->cheap) {
        v = act_c(e->act1, v, e->lo1, e->hi1);
        if (res) v = VADD(v, VLD(res));
        v = act_c(e->act2, v, e->lo2, e->hi2);
        v = VAND(v, e->m);
    }
    VST(y, v);
}

/* epi_tile's loop for activations a1, a2 (constants where it is inlined: a straight-line body the compiler can
   overlap across pixels; with the activation switch inside, a fused SiLU ran ~15 cycles per vector). */
static inline __attribute__((always_inline)) void epi_loop(int a1, int a2, VF lo1, VF hi1, VF lo2, VF hi2, VF m, float *y, const float *res, int n)
{
#pragma GCC unroll 2
    for (int q = 0; q < n; q++) {
        VF v = act_v(a1, VLD(y + q * NB), lo1, hi1);
        if (res) v = VADD(v, VLD(res + q * NB));
        VST(y + q * NB, VAND(act_v(a2, v, lo2, hi2), m));
    }
}

/* The rest of an epilogue that is not cheap, over n finished pixels of block ob at y (res: the residual's). */
static __attribute__((noinline)) void epi_tile(const so_nchwc_conv *p, int64_t ob, float *y, const float *res, int n)
{
    const VF lo1 = VSET1(p->lo1), hi1 = VSET1(p->hi1), lo2 = VSET1(p->lo2), hi2 = VSET1(p->hi2), m = lane_mask(p->O, ob);
    const int a1 = p->act1, a2 = p->act2; /* read once: the stores through y may alias *p */
    if (a2 == SO_ACT_NONE && a1 == SO_EPI_SILU) epi_loop(SO_EPI_SILU, SO_ACT_NONE, lo1, hi1, lo2, hi2, m, y, res, n);
    else if (a2 == SO_ACT_NONE && a1 == SO_ACT_SIGMOID) epi_loop(SO_ACT_SIGMOID, SO_ACT_NONE, lo1, hi1, lo2, hi2, m, y, res, n);
    else if (a2 == SO_ACT_NONE && a1 == SO_EPI_HARDSWISH) epi_loop(SO_EPI_HARDSWISH, SO_ACT_NONE, lo1, hi1, lo2, hi2, m, y, res, n);
    else epi_loop(a1, a2, lo1, hi1, lo2, hi2, m, y, res, n);
}

/* Rows [i0, i1) of a kh-tall window starting at input row ih0 (stride-dilation dh) that lie in [0, H). */
static inline void tap_range(int64_t ih0, int64_t dh, int64_t k, int64_t H, int64_t *i0, int64_t *i1)
{
    *i0 = ih0 >= 0 ? 0 : cdiv(-ih0, dh);
    *i1 = ih0 > H - 1 ? 0 : min64(k, (H - 1 - ih0) / dh + 1);
    if (*i0 > *i1) *i0 = *i1;
}

/* Max pooling's scan over the pixel vectors xr[j * cs], j in [j0, j1): *mx = the running maximum (VMAX(a, *mx)
   keeps the earlier value on ties, as the reference's scan), *nan = all ones in the lanes where one of them is NaN
   (one unordered compare per two pixels); the window's result is VOR(*mx, *nan). */
static inline void max_scan(VF *mx, VF *nan, const float *xr, int64_t j0, int64_t j1, int64_t cs)
{
    int64_t j = j0;
    for (; j + 1 < j1; j += 2) {
        const VF a = VLD(xr + j * cs), b = VLD(xr + (j + 1) * cs);
        *mx = VMAX(b, VMAX(a, *mx));
        *nan = VORNAN(*nan, a, b);
    }
    if (j < j1) {
        const VF a = VLD(xr + j * cs);
        *mx = VMAX(a, *mx);
        *nan = VORNAN(*nan, a, a);
    }
}

/* Output columns [owL, owR) whose whole window (kw taps, dilation dw) lies inside [0, W). */
static inline void interior_cols(int64_t Wo, int64_t sw, int64_t pl, int64_t kw, int64_t dw, int64_t W, int64_t *owL, int64_t *owR)
{
    *owL = min64(Wo, cdiv(pl, sw));
    const int64_t num = W - 1 - (kw - 1) * dw + pl;
    *owR = num >= 0 ? min64(Wo, num / sw + 1) : 0;
    if (*owR < *owL) *owR = *owL;
}

/* ---------------- direct conv ---------------- */

/* One kernel row's taps [j0, j1) of a register tile acc[obk][npx] (conv_tile, stem_tile): per tap, obk weight vectors
   (wr + j*NB, blocks wst floats apart) times one broadcast input per pixel, the tap's first at xr + j*jx and the
   pixels qx floats apart. A macro so that both tiles keep their accumulators in registers. */
#define TAP_ROW_FMA(acc, xr, wr, wst, j0, j1, jx, qx, obk, npx)                                                                     \
    for (int64_t j = (j0); j < (j1); j++) {                                                                                          \
        VF wv[CONV_OBK];                                                                                                             \
        _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++) wv[k] = VLD((wr) + j * NB + k * (wst));                            \
        const float *xj = (xr) + j * (jx);                                                                                           \
        _Pragma("GCC unroll 32") for (int q = 0; q < (npx); q++)                                                                    \
        {                                                                                                                            \
            const VF bc = VSET1(xj[q * (qx)]);                                                                                       \
            _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++)(acc)[k][q] = VFMA(wv[k], bc, (acc)[k][q]);                     \
        }                                                                                                                            \
    }


/* The 1x1 taps of a register tile acc[obk][npx] (conv_tile): input channels [ic0 + c0, ic0 + c1) in order, per channel
   obk weight vectors (w + c*NB, blocks wst floats apart) times one broadcast input per pixel, pixels qx floats apart
   from xq (a compile-time NB for stride 1). Walked per input block and lane with running pointers: the per-channel
   ci / NB, ci % NB and offset multiplies of a flat loop took registers the tile needs (stack reloads in the inner loop,
   MNASNet's 192->1152 1x1 on 7x7). The same FMAs in the same order as the flat loop (the same bits). */
#define PW_FMA(acc, xq, w, wst, ic0, c0, c1, HWb, qx, obk, npx)                                                                     \
    do {                                                                                                                             \
        const float *wc_ = (w) + (c0) * NB;                                                                                          \
        for (int64_t ci_ = (ic0) + (c0), ce_ = (ic0) + (c1); ci_ < ce_;) {                                                            \
            const int64_t l0_ = ci_ % NB, n_ = min64(NB - l0_, ce_ - ci_);                                                           \
            const float *xc_ = (xq) + (ci_ / NB) * (HWb) + l0_;                                                                      \
            for (int64_t l_ = 0; l_ < n_; l_++) {                                                                                    \
                VF wv[CONV_OBK];                                                                                                     \
                _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++) wv[k] = VLD(wc_ + l_ * NB + k * (wst));                    \
                _Pragma("GCC unroll 32") for (int q = 0; q < (npx); q++)                                                            \
                {                                                                                                                    \
                    const VF bc = VSET1(xc_[l_ + q * (qx)]);                                                                         \
                    _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++)(acc)[k][q] = VFMA(wv[k], bc, (acc)[k][q]);             \
                }                                                                                                                    \
            }                                                                                                                        \
            ci_ += n_, wc_ += n_ * NB;                                                                                               \
        }                                                                                                                            \
    } while (0)

/* Pixels of conv_tile's widest tile at obk output blocks: the CONV_OBK x CONV_PX accumulators of a full tile spent on
   more pixels when a block group has fewer blocks (MNASNet's 32->16 and 16->48 1x1s on 112x112, one to three
   blocks: at CONV_PX pixels a one-block tile is 6 FMA chains and a weight load per 6 FMAs; at 24 pixels the FMAs
   keep both ports busy). Each output's sum is added in the same order at any tile width (the same bits). */
#define CONV_WIDE(obk) (CONV_OBK * CONV_PX / (obk))

/* One register tile: obk output blocks (packed weights w, the next block's wst floats on) x npx output pixels
   of one row, input channels [c0, c1) of the blocks' range starting at ic0, tap rows [i0, i1) and columns
   [j0, j1) (all inside the input for all npx pixels); ih0 / iw0: the input row / column of tap (0, 0) of the
   tile's first pixel. y: the output at the tile's first pixel of block ob (blocks yst floats apart);
   first: start from zero (else from the partial sums in y); last: apply the epilogue. */
static inline __attribute__((always_inline)) void conv_tile(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst,
                                                            int64_t ic0, int64_t c0, int64_t c1, int64_t ih0, int64_t i0, int64_t i1,
                                                            int64_t iw0, int64_t j0, int64_t j1, const int obk, const int npx, float *y,
                                                            int64_t yst, const float *res, int64_t ob, int first, int last)
{
    VF acc[CONV_OBK][CONV_WIDE(1)]; /* [obk][npx] used, obk * npx <= CONV_OBK * CONV_PX: registers */
    const int64_t HWb = p->H * p->W * NB, W = p->W, kw = p->kw, KK = p->kh * p->kw, sxw = p->sw * NB, dwb = p->dw * NB;
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 32
        for (int q = 0; q < npx; q++) acc[k][q] = first ? VZERO : VLD(y + k * yst + q * NB);
    if (KK == 1) { /* 1x1: one tap per channel */
        const float *xq = x + (ih0 * W + iw0) * NB;
        if (p->sw == 1) PW_FMA(acc, xq, w, wst, ic0, c0, c1, HWb, NB, obk, npx);
        else PW_FMA(acc, xq, w, wst, ic0, c0, c1, HWb, sxw, obk, npx);
    } else {
        for (int64_t c = c0; c < c1; c++) {
            const int64_t ci = ic0 + c;
            const float *xc = x + (ci / NB) * HWb + ci % NB;
            const float *wc = w + c * KK * NB;
            for (int64_t i = i0; i < i1; i++) {
                const float *xr = xc + ((ih0 + i * p->dh) * W + iw0) * NB;
                const float *wr = wc + i * kw * NB;
                TAP_ROW_FMA(acc, xr, wr, wst, j0, j1, dwb, sxw, obk, npx);
            }
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 32
        for (int q = 0; q < npx; q++) {
            if (last)
                epi_store(p, ob + k, acc[k][q], y + k * yst + q * NB, res ? res + k * yst + q * NB : NULL);
            else
                VST(y + k * yst + q * NB, acc[k][q]);
        }
    if (last && !cheap_epi(p))
        for (int k = 0; k < obk; k++) epi_tile(p, ob + k, y + k * yst, res ? res + k * yst : NULL, npx);
}

#define TILE_ARGS p, x, w, wst, ic0, c0, c1, ih0, i0, i1, iw0, j0, j1
#define TILE_NPX(OBK)                                                                                                                  \
    if (npx == CONV_WIDE(OBK) && CONV_WIDE(OBK) != CONV_PX) conv_tile(TILE_ARGS, OBK, CONV_WIDE(OBK), y, yst, res, ob, first, last);  \
    else switch (npx) {                                                                                                                \
    case 1: conv_tile(TILE_ARGS, OBK, 1, y, yst, res, ob, first, last); break;                                                         \
    case 2: conv_tile(TILE_ARGS, OBK, 2, y, yst, res, ob, first, last); break;                                                         \
    case 3: conv_tile(TILE_ARGS, OBK, 3, y, yst, res, ob, first, last); break;                                                         \
    case 4: conv_tile(TILE_ARGS, OBK, 4, y, yst, res, ob, first, last); break;                                                         \
    case 5: conv_tile(TILE_ARGS, OBK, 5, y, yst, res, ob, first, last); break;                                                         \
    default: conv_tile(TILE_ARGS, OBK, CONV_PX, y, yst, res, ob, first, last); break;                                                  \
    }

/* conv_tile with run-time obk (1..CONV_OBK) and npx (1..5, CONV_PX or CONV_WIDE(obk)). */
static void conv_tile_any(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst, int64_t ic0, int64_t c0, int64_t c1,
                          int64_t ih0, int64_t i0, int64_t i1, int64_t iw0, int64_t j0, int64_t j1, int obk, int npx, float *y,
                          int64_t yst, const float *res, int64_t ob, int first, int last)
{
    switch (obk) {
    case 1: TILE_NPX(1) break;
#if CONV_OBK >= 2
    case 2: TILE_NPX(2) break;
#endif
#if CONV_OBK >= 3
    case 3: TILE_NPX(3) break;
#endif
#if CONV_OBK >= 4
    case 4: TILE_NPX(4) break;
#endif
    default: break;
    }
}
#undef TILE_NPX
#undef TILE_ARGS

/* Software prefetch (to L2) of the packed weights a work item of the direct conv reads next, spread over the
   tiles of the current channel chunk: the next chunk's slices of the item's obk blocks, or the first chunk of the
   thread's next item. In a whole network every node's weights come from memory (ResNet-50's ~100 MB do not stay
   in the last-level cache from one run to the next), and with few pixels per weight (14x14, 7x7 planes) the
   hardware prefetcher alone leaves the FMAs waiting: kernels/README.md. */
#define NCHWC_PF_MIN_BYTES (256 * 1024) /* packed weights from which conv_run prefetches them */
typedef struct wpf_cursor {
    const char *p;   /* the first slice */
    int64_t st;      /* bytes from one block's slice to the next */
    int64_t len;     /* bytes per slice */
    int n;           /* slices (blocks) */
    int k;           /* the slice being prefetched */
    int64_t pos;     /* bytes of slice k done */
    int64_t per;     /* cache lines per wpf_step */
} wpf_cursor;

static inline void wpf_step(wpf_cursor *c)
{
    for (int64_t l = 0; l < c->per && c->k < c->n; l++) {
        __builtin_prefetch(c->p + c->k * c->st + c->pos, 0, 2);
        c->pos += 64;
        if (c->pos >= c->len) c->pos = 0, c->k++;
    }
}

/* One output row oh of obk blocks from ob: interior pixels in tiles of up to CONV_WIDE(obk) (that, CONV_PX or 1..5
   at a time), border pixels one at a time with their own tap columns. */
static void conv_row(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst, int64_t c0, int64_t c1, int64_t oh, int64_t owa,
                     int64_t owb, int obk, int64_t ob, float *y, int64_t yst, const float *res, int first, int last, wpf_cursor *pf)
{
    const int64_t ih0 = oh * p->sh - p->pt, ic0 = p->ic0[ob];
    int64_t i0, i1, owL, owR;
    tap_range(ih0, p->dh, p->kh, p->H, &i0, &i1);
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->dw, p->W, &owL, &owR);
    owR = min64(owR, owb);
    for (int64_t ow = owa; ow < owb;) {
        const int64_t iw0 = ow * p->sw - p->pl;
        int npx = 1;
        int64_t j0 = 0, j1 = p->kw;
        if (ow >= owL && ow < owR) {
            const int64_t n = owR - ow;
            npx = n >= CONV_WIDE(obk) ? CONV_WIDE(obk) : n >= CONV_PX ? CONV_PX : n > 5 ? 5 : (int)n;
        } else
            tap_range(iw0, p->dw, p->kw, p->W, &j0, &j1);
        const int64_t off = (oh * p->Wo + ow) * NB;
        wpf_step(pf);
        conv_tile_any(p, x, w, wst, ic0, c0, c1, ih0, i0, i1, iw0, j0, j1, obk, npx, y + off, yst, res ? res + off : NULL, ob, first,
                      last);
        ow += npx;
    }
}

/* ---------------- depthwise conv ---------------- */

static inline __attribute__((always_inline)) void dw_tile(const so_nchwc_conv *p, const float *x, int64_t W, const float *w,
                                                          int64_t ih0, int64_t i0, int64_t i1, int64_t iw0, int64_t j0, int64_t j1,
                                                          const int npx, float *y, const float *res, int64_t cb)
{
    VF acc[DW_PX];
    const int64_t kw = p->kw, sxw = p->sw * NB, dwb = p->dw * NB;
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) acc[q] = VZERO;
    if (p->kw == 3 && p->sw == 1 && p->dw == 1 && j0 == 0 && j1 == 3) { /* 3 wide, stride 1: each input vector loaded once per row */
        for (int64_t i = i0; i < i1; i++) {
            const float *xr = x + ((ih0 + i * p->dh) * W + iw0) * NB;
            const VF w0 = VLD(w + i * 3 * NB), w1 = VLD(w + (i * 3 + 1) * NB), w2 = VLD(w + (i * 3 + 2) * NB);
            VF xv[DW_PX + 2];
#pragma GCC unroll 16
            for (int q = 0; q < npx + 2; q++) xv[q] = VLD(xr + q * NB);
#pragma GCC unroll 16
            for (int q = 0; q < npx; q++) acc[q] = VFMA(xv[q + 2], w2, VFMA(xv[q + 1], w1, VFMA(xv[q], w0, acc[q])));
        }
    } else
        for (int64_t i = i0; i < i1; i++) {
        const float *xr = x + ((ih0 + i * p->dh) * W + iw0) * NB;
        for (int64_t j = j0; j < j1; j++) {
            const VF wv = VLD(w + (i * kw + j) * NB);
            const float *xj = xr + j * dwb;
#pragma GCC unroll 16
            for (int q = 0; q < npx; q++) acc[q] = VFMA(VLD(xj + q * sxw), wv, acc[q]);
        }
    }
    const blk_epi e = epi_of(p, cb);
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) epi_put(&e, acc[q], y + q * NB, res ? res + q * NB : NULL);
    if (!e.cheap) epi_tile(p, cb, y, res, npx);
}

/* The tile of a conv with groups inside a block (p->gsub = G lanes per group): per tap and c < G, every pixel's
   input vector permuted so that lane o holds channel (o/G)*G + c of its block, times the packed weights of c. */
static inline __attribute__((always_inline)) void g_tile(const so_nchwc_conv *p, const float *x, int64_t W, const float *w,
                                                         int64_t ih0, int64_t i0, int64_t i1, int64_t iw0, int64_t j0, int64_t j1,
                                                         const int npx, const int G, float *y, const float *res, int64_t cb)
{
    VF acc[DW_PX];
    const int64_t kw = p->kw, sxw = p->sw * NB, dwb = p->dw * NB;
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) acc[q] = VZERO;
    for (int64_t i = i0; i < i1; i++) {
        const float *xr = x + ((ih0 + i * p->dh) * W + iw0) * NB;
        for (int64_t j = j0; j < j1; j++) {
            const float *xj = xr + j * dwb, *wt = w + (i * kw + j) * G * NB;
            VF xv[DW_PX];
#pragma GCC unroll 16
            for (int q = 0; q < npx; q++) xv[q] = VLD(xj + q * sxw);
#pragma GCC unroll 8
            for (int c = 0; c < G; c++) {
                const VF wv = VLD(wt + c * NB);
                const VI ix = VLDI(p->gidx[c]);
#pragma GCC unroll 16
                for (int q = 0; q < npx; q++) acc[q] = VFMA(G <= 4 ? VPERM4(xv[q], ix) : VPERM(xv[q], ix), wv, acc[q]);
            }
        }
    }
    const blk_epi e = epi_of(p, cb);
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) epi_put(&e, acc[q], y + q * NB, res ? res + q * NB : NULL);
    if (!e.cheap) epi_tile(p, cb, y, res, npx);
}

/* g_tile at run-time G (2, 4, 8 when < NB) and npx; tiles of DW_PX, 4 or 1 pixels (others run as 4s and 1s). */
static void g_tile_any(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0, int64_t i0, int64_t i1, int64_t iw0,
                       int64_t j0, int64_t j1, int npx, float *y, const float *res, int64_t cb)
{
    const int64_t sxw = p->sw * NB;
    while (npx > 0) {
        const int n = npx >= DW_PX ? DW_PX : npx >= 4 ? 4 : 1;
        switch (p->gsub * 100 + n) {
#define G_CASE(g, m)                                                                                                                   \
    case g * 100 + m: g_tile(p, x, W, w, ih0, i0, i1, iw0, j0, j1, m, g, y, res, cb); break;
            G_CASE(2, DW_PX)
            G_CASE(2, 4)
            G_CASE(2, 1)
            G_CASE(4, DW_PX)
            G_CASE(4, 4)
            G_CASE(4, 1)
#if NB > 8
            G_CASE(8, DW_PX)
            G_CASE(8, 4)
            G_CASE(8, 1)
#endif
#undef G_CASE
        default: break;
        }
        x += n * sxw, y += n * NB, res = res ? res + n * NB : NULL, npx -= n;
    }
}

/* dw_tile with run-time npx in 1..DW_PX (g_tile_any when p->gsub); x: rows of W pixels. */
static void dw_tile_any(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0, int64_t i0, int64_t i1, int64_t iw0,
                        int64_t j0, int64_t j1, int npx, float *y, const float *res, int64_t cb)
{
    if (p->gsub) {
        g_tile_any(p, x, W, w, ih0, i0, i1, iw0, j0, j1, npx, y, res, cb);
        return;
    }
    switch (npx) {
#define DW_CASE(n)                                                                                                                     \
    case n: dw_tile(p, x, W, w, ih0, i0, i1, iw0, j0, j1, n, y, res, cb); break;
        DW_CASE(1)
        DW_CASE(2)
        DW_CASE(3)
        DW_CASE(4)
        DW_CASE(5)
        DW_CASE(6)
        DW_CASE(7)
#undef DW_CASE
    default: dw_tile(p, x, W, w, ih0, i0, i1, iw0, j0, j1, DW_PX, y, res, cb); break;
    }
}

/* One output row of block cb: interior pixels in tiles of up to DW_PX, border pixels one at a time with their own
   tap columns. */
static void dw_row(const so_nchwc_conv *p, const float *x, const float *w, int64_t oh, float *y, const float *res, int64_t cb)
{
    const int64_t ih0 = oh * p->sh - p->pt;
    int64_t i0, i1, owL, owR;
    tap_range(ih0, p->dh, p->kh, p->H, &i0, &i1);
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->dw, p->W, &owL, &owR);
    for (int64_t ow = 0; ow < p->Wo;) {
        const int64_t iw0 = ow * p->sw - p->pl, off = ow * NB;
        int npx = 1;
        int64_t j0 = 0, j1 = p->kw;
        if (ow >= owL && ow < owR)
            npx = (int)min64(DW_PX, owR - ow);
        else
            tap_range(iw0, p->dw, p->kw, p->W, &j0, &j1);
        dw_tile_any(p, x, p->W, w, ih0, i0, i1, iw0, j0, j1, npx, y + off, res ? res + off : NULL, cb);
        ow += npx;
    }
}

/* The convs dw2_tile runs (at levels with DW2_PX): depthwise 3x3 and 5x5, stride 1 or 2 (both axes), dilation 1. */
static inline int dw2_ok(const so_nchwc_conv *p)
{
    return DW2_PX && (p->kh == 3 || p->kh == 5) && p->kw == p->kh && (p->sh == 1 || p->sh == 2) && p->sw == p->sh && p->dh == 1 &&
           p->dw == 1 && !p->gsub;
}

#if DW2_PX
/* Output rows oh and oh + 1 of a K x K (3 or 5), stride-S (1 or 2), dilation-1 depthwise block cb over npx pixels
   (ih0 = oh*S - pt, iw0: their first input row / column): the K + S input rows are loaded once for both rows (at S = 1
   each input vector feeds up to 2K taps) and the 2 x npx sums are independent chains (the one-row tile's K*K-deep
   chains over eight pixels bound it by FMA latency). Weights in registers: all 9 at K = 3, at K = 5 the (up to) two
   kernel rows an input row feeds, loaded once per input row (each FMA read its weight from L1 before: 533 loads per
   400 FMAs on a 5x5 stride-2 tile). chk = 0: every tap inside the input. chk = 1 (a border tile): only the input rows
   i in [ilo, ihi) and tile columns q in [qlo, qhi) (q counts from iw0) are read, the taps outside skipped, and row
   oh + 1 only when two; the caller guarantees qlo <= K and (npx-1)*S + K - qhi <= K (the skipped columns lie in the
   first and last K, a test the unrolled loop folds away for the columns between). Each sum takes its taps in dw_tile's
   order (rows, then columns) and skips the taps outside as dw_tile does: the same bits as the row path, and as a
   zero-bordered copy for finite weights (the sums start at +0, and +0 or any y plus a padding tap's +-0 is unchanged).
   x: rows of W pixels; y, res: row oh's first pixel; the next row yrow floats on. */
static inline __attribute__((always_inline)) void dw2_tile_c(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0,
                                                             int64_t iw0, const int K, const int S, const int npx, float *y, const float *res,
                                                             int64_t yrow, int64_t cb, const int chk, int ilo, int ihi, int qlo, int qhi, int two)
{
    VF a0[DW2_PX], a1[DW2_PX], wv[9];
    const int span = (npx - 1) * S + K;
    if (!chk) two = 1;
#pragma GCC unroll 9
    for (int k = 0; k < 9; k++) wv[k] = K == 3 ? VLD(w + k * NB) : VZERO;
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) a0[q] = a1[q] = VZERO;
#pragma GCC unroll 7
    for (int i = 0; i < K + S; i++) {
        if (chk && (i < ilo || i >= ihi)) continue;
        const float *xr = x + ((ih0 + i) * W + iw0) * NB;
        VF wa[5], wb[5]; /* K = 5: kernel row i (for row oh) and i - S (for row oh + 1) */
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            wa[j] = K == 5 && i < K ? VLD(w + (i * K + j) * NB) : VZERO;
            wb[j] = K == 5 && i >= S ? VLD(w + ((i - S) * K + j) * NB) : VZERO;
        }
#pragma GCC unroll 24
        for (int q = 0; q < span; q++) {
            if (chk && ((q < K && q < qlo) || (q >= span - K && q >= qhi))) continue;
            const VF xv = VLD(xr + q * NB);
#pragma GCC unroll 16
            for (int o = 0; o < npx; o++) {
                const int j = q - o * S; /* the tap column of pixel o that reads xv */
                if (j < 0 || j >= K) continue;
                if (i < K) a0[o] = VFMA(xv, K == 3 ? wv[i * 3 + j] : wa[j], a0[o]);
                if (i >= S && two) a1[o] = VFMA(xv, K == 3 ? wv[(i - S) * 3 + j] : wb[j], a1[o]);
            }
        }
    }
    const blk_epi e = epi_of(p, cb);
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) {
        epi_put(&e, a0[q], y + q * NB, res ? res + q * NB : NULL);
        if (two) epi_put(&e, a1[q], y + yrow + q * NB, res ? res + yrow + q * NB : NULL);
    }
    if (!e.cheap) {
        epi_tile(p, cb, y, res, npx);
        if (two) epi_tile(p, cb, y + yrow, res ? res + yrow : NULL, npx);
    }
}
/* The tile of every tap inside (stem_dw's zero-bordered rows, the interior). */
static inline __attribute__((always_inline)) void dw2_tile(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0,
                                                           int64_t iw0, const int K, const int S, const int npx, float *y, const float *res,
                                                           int64_t yrow, int64_t cb)
{
    dw2_tile_c(p, x, W, w, ih0, iw0, K, S, npx, y, res, yrow, cb, 0, 0, 0, 0, 0, 1);
}

/* The (K, S, npx) instances dw2_tile_any and dw2_border_any dispatch to: CALL(k, s, n) for K in {3, 5}, S in {1, 2},
   npx in 1..DW2_PX (DW2_PX 8 or 4; compile-time constants, so each instance keeps its tile in registers). */
#define DW2_CASE(CALL, k, s, n)                                                                                                        \
    case k * 1000 + s * 100 + n: CALL(k, s, n); break;
#if DW2_PX == 8
#define DW2_CASES(CALL, k, s)                                                                                                          \
    DW2_CASE(CALL, k, s, 1) DW2_CASE(CALL, k, s, 2) DW2_CASE(CALL, k, s, 3) DW2_CASE(CALL, k, s, 4) DW2_CASE(CALL, k, s, 5)            \
        DW2_CASE(CALL, k, s, 6) DW2_CASE(CALL, k, s, 7) DW2_CASE(CALL, k, s, 8)
#elif DW2_PX == 4
#define DW2_CASES(CALL, k, s) DW2_CASE(CALL, k, s, 1) DW2_CASE(CALL, k, s, 2) DW2_CASE(CALL, k, s, 3) DW2_CASE(CALL, k, s, 4)
#else
#error "DW2_PX must be 0, 4 or 8"
#endif
#define DW2_DISPATCH(K, S, npx, CALL)                                                                                                  \
    switch ((K) * 1000 + (S) * 100 + (npx)) {                                                                                          \
        DW2_CASES(CALL, 3, 1) DW2_CASES(CALL, 3, 2) DW2_CASES(CALL, 5, 1) DW2_CASES(CALL, 5, 2) default: break;                        \
    }

/* dw2_tile at run-time K (3, 5), S (1, 2) and npx (1..DW2_PX). */
static void dw2_tile_any(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0, int64_t iw0, int K, int S, int npx,
                         float *y, const float *res, int64_t yrow, int64_t cb)
{
#define DW2_TILE(k, s, n) dw2_tile(p, x, W, w, ih0, iw0, k, s, n, y, res, yrow, cb)
    DW2_DISPATCH(K, S, npx, DW2_TILE)
#undef DW2_TILE
}

/* The border tile (dw2_tile_c with chk) at run-time K, S and npx. */
static void dw2_border_any(const so_nchwc_conv *p, const float *x, int64_t W, const float *w, int64_t ih0, int64_t iw0, int K, int S, int npx,
                           float *y, const float *res, int64_t yrow, int64_t cb, int ilo, int ihi, int qlo, int qhi, int two)
{
#define DW2_BORDER(k, s, n) dw2_tile_c(p, x, W, w, ih0, iw0, k, s, n, y, res, yrow, cb, 1, ilo, ihi, qlo, qhi, two)
    DW2_DISPATCH(K, S, npx, DW2_BORDER)
#undef DW2_BORDER
}
#undef DW2_DISPATCH
#undef DW2_CASES
#undef DW2_CASE

/* Rows oh and (when oh + 1 < Ho) oh + 1 of block cb of a dw2_ok conv, read straight from the input x (no
   zero-bordered copy: dw_plane copied a 28 x 28 plane, 49-62 KB, more than L1, for 196 outputs): tiles of up to
   DW2_PX pixels, dw2_tile where every tap is inside, the border tile where some are not, and pixel by pixel
   (dw_tile with each pixel's tap ranges) where a tile would skip more than K columns on a side (pads >= K). */
static void dw2_rows(const so_nchwc_conv *p, const float *x, const float *w, int64_t oh, float *y, const float *res, int64_t cb)
{
    const int K = (int)p->kh, S = (int)p->sh, two = oh + 1 < p->Ho;
    const int64_t ih0 = oh * S - p->pt, yrow = p->Wo * NB;
    const int ilo = (int)min64(K + S, max64(0, -ih0)), ihi = (int)max64(ilo, min64(two ? K + S : K, p->H - ih0));
    const int rows_in = ilo == 0 && ihi == K + S;
    for (int64_t ow = 0; ow < p->Wo;) {
        const int npx = (int)min64(DW2_PX, p->Wo - ow), span = (npx - 1) * S + K;
        const int64_t iw0 = ow * S - p->pl, off = ow * NB;
        const int64_t qlo = max64(0, -iw0), qhi = min64(span, p->W - iw0);
        if (rows_in && qlo == 0 && qhi == span)
            dw2_tile_any(p, x, p->W, w, ih0, iw0, K, S, npx, y + off, res ? res + off : NULL, yrow, cb);
        else if (qlo <= K && span - qhi <= K)
            dw2_border_any(p, x, p->W, w, ih0, iw0, K, S, npx, y + off, res ? res + off : NULL, yrow, cb, ilo, ihi, (int)qlo, (int)qhi, two);
        else
            for (int r = 0; r <= two; r++)
                for (int q = 0; q < npx; q++) {
                    int64_t i0, i1, j0, j1;
                    tap_range(ih0 + r * S, 1, K, p->H, &i0, &i1);
                    tap_range(iw0 + q * S, 1, K, p->W, &j0, &j1);
                    const int64_t o = r * yrow + off + q * NB;
                    dw_tile_any(p, x, p->W, w, ih0 + r * S, i0, i1, iw0 + q * S, j0, j1, 1, y + o, res ? res + o : NULL, cb);
                }
        ow += npx;
    }
}
#endif

/* Floats of the zero-bordered copy of one input block that dw_plane works on (on the stack: 64 KB). */
#define DW_PAD_FLOATS 16384

/* Input rows / columns a plane's output reads from the top / left padding on: (Ho-1)*s + (k-1)*d + 1. */
static inline int64_t dw_span(int64_t o, int64_t s, int64_t k, int64_t d) { return (o - 1) * s + (k - 1) * d + 1; }

/* Block cb of one image on a small plane: the input block copied into buf with its zero border, so every tile
   reads all its taps (the row path runs each border pixel as its own tile with its own tap range: on 7 x 7 and
   14 x 14 planes most of them). buf holds dw_span(Ho..) x dw_span(Wo..) x NB floats; its border is zero (only the
   interior is written here: the caller zeroes buf once per run). */
static void dw_plane(const so_nchwc_conv *p, const float *x, const float *w, float *y, const float *res, int64_t cb, float *buf)
{
    const int64_t Hp = dw_span(p->Ho, p->sh, p->kh, p->dh), Wp = dw_span(p->Wo, p->sw, p->kw, p->dw);
    const int64_t rows = min64(p->H, Hp - p->pt), cols = min64(p->W, Wp - p->pl);
    for (int64_t ih = 0; ih < rows; ih++)
        if (cols > 0) memcpy(buf + ((ih + p->pt) * Wp + p->pl) * NB, x + ih * p->W * NB, (size_t)(cols * NB) * sizeof(float));
    for (int64_t oh = 0; oh < p->Ho; oh++)
        for (int64_t ow = 0; ow < p->Wo;) {
            const int npx = (int)min64(DW_PX, p->Wo - ow);
            const int64_t off = (oh * p->Wo + ow) * NB;
            dw_tile_any(p, buf, Wp, w, oh * p->sh, 0, p->kh, ow * p->sw, 0, p->kw, npx, y + off, res ? res + off : NULL, cb);
            ow += npx;
        }
}

static void dw_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, int T)
{
    const int64_t Cb = p->Cb, HWb = p->H * p->W * NB, OHWb = p->Ho * p->Wo * NB, KK = p->kh * p->kw, rows = N * Cb * p->Ho;
    T = team(T, rows * p->Wo * NB * KK * (p->gsub ? p->gsub : 1));
#if DW2_PX
    if (dw2_ok(p) && p->Wo >= DW2_MIN_WO) {
        /* 3x3 and 5x5, stride 1 or 2, output rows of at least DW2_MIN_WO pixels: pairs of rows straight from the input
           (dw2_rows). Items: (image, block, row pair), so a 14 x 14 output of 15 blocks is 105 items, not 15 planes (8
           against 7 at 2 threads). */
        const int64_t hp = cdiv(p->Ho, 2);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
        for (int64_t r = 0; r < N * Cb * hp; r++) {
            const int64_t oh = r % hp * 2, nc = r / hp, cb = nc % Cb;
            const int64_t o = nc * OHWb + oh * p->Wo * NB;
            dw2_rows(p, x + nc * HWb, p->wp + p->wofs[cb], oh, y + o, res ? res + o : NULL, cb);
        }
        return;
    }
#endif
    if (p->Wo <= 2 * DW_PX && dw_span(p->Ho, p->sh, p->kh, p->dh) * dw_span(p->Wo, p->sw, p->kw, p->dw) * NB <= DW_PAD_FLOATS) {
        /* small planes: whole blocks, zero-bordered (chosen by shape alone: the same sums at any T) */
#pragma omp parallel num_threads(T) if (T > 1)
        {
            float buf[DW_PAD_FLOATS] __attribute__((aligned(64)));
            memset(buf, 0, sizeof buf);
            /* nowait: the region's end is the barrier (GCC keeps a last loop's own barrier when the region has an
               addressable local, buf: a second synchronisation per region, 10 per MobileNet-v2 run) */
#pragma omp for schedule(static) nowait
            for (int64_t nc = 0; nc < N * Cb; nc++) {
                const int64_t cb = nc % Cb;
                dw_plane(p, x + nc * HWb, p->wp + p->wofs[cb], y + nc * OHWb, res ? res + nc * OHWb : NULL, cb, buf);
            }
        }
        return;
    }
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t oh = r % p->Ho, nc = r / p->Ho, cb = nc % Cb;
        float *yr = y + nc * OHWb + oh * p->Wo * NB;
        const float *rr = res ? res + nc * OHWb + oh * p->Wo * NB : NULL;
        dw_row(p, x + nc * HWb, p->wp + p->wofs[cb], oh, yr, rr, cb);
    }
}

/* Keeps a weight vector in a register for its FMAs: GCC otherwise folded the load into each FMA as a memory operand
   (4 x 3 tile: 12 weight loads per channel instead of 4, load-bound; the same as kernels/conv.c pw_block;
   pw_strip and convp_tile). */
#if defined(__AVX512F__) && NB == 16
#define PW_REG(v) __asm__("" : "+v"(v))
#elif defined(__AVX2__)
#define PW_REG(v) __asm__("" : "+x"(v))
#else
#define PW_REG(v) ((void)0)
#endif

/* ---------------- block-diagonal grouped conv (so_nchwc_gblk: groups of whole blocks, Cg = Og, a multiple of NB) ----------------

   RegNet's 3x3s of group width 8 at b = 8: each output block reads only its own group's input blocks. The direct conv
   ran them as 1-block tiles straight from the input with every border pixel as its own 1-pixel tile (on a 7 x 7 plane
   2 of 7 pixels; 72-deep FMA chains, latency-bound), conv_pad as 6-pixel tiles on a copy of the whole image. Here each
   work item (image, output block, band of output rows) first copies the band's input rows of its group's blocks into
   a zero-bordered stack buffer (SO_NCHWC_GB_FLOATS), then every output row runs in near-equal tiles of at most GB_PX pixels
   (28 = 10 + 9 + 9, 14 = 7 + 7, 7: at least 7 independent FMA chains per tile where the row allows), all taps read
   (the border's zeros add 0 * w). Per input channel and tap one weight vector and one broadcast per pixel: the taps in
   conv_tile's order (channel, row, column), so the same sums as the direct conv and conv_pad (the same bits with finite
   weights; test_nchwc compares them), at any thread count. */
#define GB_PX 12 /* gb_tile_any instantiates 1 .. GB_PX */
/* One tile: npx output pixels of one row of output block ob, pixel q's tap (0, 0) at xb + q * sw * NB in the band's
   buffer (input blocks bst floats apart, rows Wp pixels), nic input channels with weights w [c][kh][kw][NB]. S: the
   stride when a compile-time 1 or 2 (0: p->sw), K: 3 for a 3x3 of dilation 1 (0: p's kernel and dilation), so the
   broadcasts' offsets are immediates (a run-time stride took a register per pixel). */
static inline __attribute__((always_inline)) void gb_tile(const so_nchwc_conv *p, const float *xb, int64_t bst, int64_t Wp, const float *w,
                                                          int64_t nic, const int npx, const int S, const int K, float *y, const float *res,
                                                          int64_t ob)
{
    VF acc[GB_PX];
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) acc[q] = VZERO;
    const int64_t kh = K ? K : p->kh, kw = K ? K : p->kw, sx = (S ? S : p->sw) * NB, rst = (K ? 1 : p->dh) * Wp * NB,
                  cst = (K ? 1 : p->dw) * NB;
    for (int64_t c = 0; c < nic; c++) {
        const float *xc = xb + (c / NB) * bst + c % NB, *wc = w + c * kh * kw * NB;
        for (int64_t i = 0; i < kh; i++) {
            const float *xi = xc + i * rst;
#pragma GCC unroll 3
            for (int64_t j = 0; j < kw; j++) {
                VF wv = VLD(wc + (i * kw + j) * NB);
                PW_REG(wv);
                const float *xt = xi + j * cst;
#pragma GCC unroll 16
                for (int q = 0; q < npx; q++) acc[q] = VFMA(wv, VSET1(xt[q * sx]), acc[q]);
            }
        }
    }
    const blk_epi e = epi_of(p, ob);
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) epi_put(&e, acc[q], y + q * NB, res ? res + q * NB : NULL);
    if (!e.cheap) epi_tile(p, ob, y, res, npx);
}

#define GB_CASES(S, K)                                                                                                                 \
    switch (npx) {                                                                                                                     \
    case 1: gb_tile(p, xb, bst, Wp, w, nic, 1, S, K, y, res, ob); break;                                                               \
    case 2: gb_tile(p, xb, bst, Wp, w, nic, 2, S, K, y, res, ob); break;                                                               \
    case 3: gb_tile(p, xb, bst, Wp, w, nic, 3, S, K, y, res, ob); break;                                                               \
    case 4: gb_tile(p, xb, bst, Wp, w, nic, 4, S, K, y, res, ob); break;                                                               \
    case 5: gb_tile(p, xb, bst, Wp, w, nic, 5, S, K, y, res, ob); break;                                                               \
    case 6: gb_tile(p, xb, bst, Wp, w, nic, 6, S, K, y, res, ob); break;                                                               \
    case 7: gb_tile(p, xb, bst, Wp, w, nic, 7, S, K, y, res, ob); break;                                                               \
    case 8: gb_tile(p, xb, bst, Wp, w, nic, 8, S, K, y, res, ob); break;                                                               \
    case 9: gb_tile(p, xb, bst, Wp, w, nic, 9, S, K, y, res, ob); break;                                                               \
    case 10: gb_tile(p, xb, bst, Wp, w, nic, 10, S, K, y, res, ob); break;                                                             \
    case 11: gb_tile(p, xb, bst, Wp, w, nic, 11, S, K, y, res, ob); break;                                                             \
    default: gb_tile(p, xb, bst, Wp, w, nic, GB_PX, S, K, y, res, ob); break;                                                          \
    }

/* gb_tile at run-time npx (1 .. GB_PX): 3x3 (dilation 1) at stride 1 or 2 with them compile-time, else run-time */
static void gb_tile_any(const so_nchwc_conv *p, const float *xb, int64_t bst, int64_t Wp, const float *w, int64_t nic, int npx, float *y,
                        const float *res, int64_t ob)
{
    const int k3 = p->kh == 3 && p->kw == 3 && p->dh == 1 && p->dw == 1;
    if (k3 && p->sw == 1) GB_CASES(1, 3)
    else if (k3 && p->sw == 2) GB_CASES(2, 3)
    else GB_CASES(0, 0)
}
#undef GB_CASES

static void gb_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, int T)
{
    const int64_t Ob = p->Ob, HWb = p->H * p->W * NB, OHWb = p->Ho * p->Wo * NB, Wp = so_nchwc_gb_wp(p), R = so_nchwc_gb_band(p);
    const int64_t nb = cdiv(p->Ho, R), items = N * Ob * nb, nt = cdiv(p->Wo, GB_PX);
    T = team(T, N * p->O * p->Ho * p->Wo * p->kh * p->kw * (p->C / p->group));
#pragma omp parallel num_threads(T) if (T > 1)
    {
        float buf[SO_NCHWC_GB_FLOATS] __attribute__((aligned(64)));
#pragma omp for schedule(static) nowait
        for (int64_t it = 0; it < items; it++) {
            const int64_t band = it % nb, nob = it / nb, ob = nob % Ob, n = nob / Ob;
            const int64_t oh0 = band * R, oh1 = min64(p->Ho, oh0 + R), rows = so_nchwc_gb_rows(p, oh1 - oh0), bst = rows * Wp * NB;
            const int64_t nic = p->nic[ob], ib0 = p->ic0[ob] / NB, ih0 = oh0 * p->sh - p->pt;
            /* the band's input rows of the group's blocks, zero-bordered */
            for (int64_t k = 0; k < nic / NB; k++) {
                const float *xk = x + (n * p->Cb + ib0 + k) * HWb;
                for (int64_t r = 0; r < rows; r++) {
                    float *d = buf + k * bst + r * Wp * NB;
                    const int64_t ih = ih0 + r, c0 = min64(p->pl, Wp), c1 = min64(Wp, p->pl + p->W);
                    if (ih < 0 || ih >= p->H || c1 <= c0) {
                        memset(d, 0, sizeof(float) * (size_t)(Wp * NB));
                        continue;
                    }
                    if (c0 > 0) memset(d, 0, sizeof(float) * (size_t)(c0 * NB));
                    memcpy(d + c0 * NB, xk + (ih * p->W + c0 - p->pl) * NB, sizeof(float) * (size_t)((c1 - c0) * NB));
                    if (c1 < Wp) memset(d + c1 * NB, 0, sizeof(float) * (size_t)((Wp - c1) * NB));
                }
            }
            const float *w = p->wp + p->wofs[ob];
            float *yb = y + (n * Ob + ob) * OHWb;
            const float *rb = res ? res + (n * Ob + ob) * OHWb : NULL;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                const float *xr = buf + (oh - oh0) * p->sh * Wp * NB;
                for (int64_t t = 0, ow = 0; t < nt; t++) {
                    const int64_t ow1 = (t + 1) * p->Wo / nt, off = (oh * p->Wo + ow) * NB;
                    gb_tile_any(p, xr + ow * p->sw * NB, bst, Wp, w, nic, (int)(ow1 - ow), yb + off, rb ? rb + off : NULL, ob);
                    ow = ow1;
                }
            }
        }
    }
}


#ifdef PW_OBK
/* ---------------- pointwise (1x1, group 1) conv with its own register tile (levels that define PW_OBK) ----------------

   At b = 8 the direct conv's 2 x 6 tile shares one broadcast input among only 16 output channels: a 1x1 with many
   input channels re-read its input (ResNet-50's 256->64 on 56x56: 3.2 MB) once per pair of output blocks, from L3.
   The pointwise tile is PW_OBK x PW_PX (AVX2: 4 blocks x 3 pixels = 32 output channels per broadcast, 12
   accumulators, the 3 broadcasts and one weight vector in the other 4 registers), and pw_run's work items keep a
   band of the input in L2 while every output-block group reads it (pw_split). */

/* Pixels of pw_tile's widest tile at obk output blocks: the PW_OBK x PW_PX accumulators (AVX2: 4 x 3, 3 x 4, 2 x 6,
   1 x 12). */
#define PW_WIDE(obk) (PW_OBK * PW_PX / (obk))


/* The taps of a pointwise tile acc[obk][npx]: channels [c0, c1) of the input (c0 a multiple of NB or not), weights
   w + c*NB (blocks wst floats apart), pixels qx floats apart from xq. Per channel the inputs of the npx pixels are
   broadcast first and each weight vector loaded once when there are more blocks than pixels (registers: obk*npx +
   npx + 1), else the weights first (obk*npx + obk + 1). The same FMAs in the same order as PW_FMA (the same bits as
   conv_tile's). Per input block the first and last cache line of the next tile's pixels (pfo floats on: the strip's
   tile step; 0 for a lone tile) are prefetched to L1: without it the broadcasts waited on L2 / L3 at every new block
   (perf: most of the tile's samples on them; session 24, AMD EPYC Zen 3, paired 7 rounds: ours / oneDNN's
   jit_1x1:avx2 1.31 -> 1.19 on ResNet-50's 256->64, 0-2 % on other 1x1s). Unrolling a block's 8 channels was slower. */
#define PW_TAPS(acc, xq, w, wst, c0, c1, HWb, qx, obk, npx, pfo)                                                                   \
    do {                                                                                                                             \
        const float *wc_ = (w) + (c0) * NB;                                                                                          \
        for (int64_t ci_ = (c0), ce_ = (c1); ci_ < ce_;) {                                                                            \
            const int64_t l0_ = ci_ % NB, n_ = min64(NB - l0_, ce_ - ci_);                                                           \
            const float *xc_ = (xq) + (ci_ / NB) * (HWb) + l0_;                                                                      \
            __builtin_prefetch(xc_ - l0_ + (pfo));                                                                                   \
            __builtin_prefetch(xc_ - l0_ + (pfo) + ((npx) - 1) * (qx) + NB - 1);                                                     \
            for (int64_t l_ = 0; l_ < n_; l_++) {                                                                                    \
                if ((obk) > (npx)) {                                                                                                 \
                    VF bc_[PW_WIDE(1)];                                                                                              \
                    _Pragma("GCC unroll 16") for (int q = 0; q < (npx); q++) bc_[q] = VSET1(xc_[l_ + q * (qx)]);                    \
                    _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++)                                                        \
                    {                                                                                                                \
                        VF wv_ = VLD(wc_ + l_ * NB + k * (wst));                                                                     \
                        PW_REG(wv_);                                                                                                 \
                        _Pragma("GCC unroll 16") for (int q = 0; q < (npx); q++)(acc)[k][q] = VFMA(wv_, bc_[q], (acc)[k][q]);      \
                    }                                                                                                                \
                } else {                                                                                                             \
                    VF wv_[PW_OBK];                                                                                                  \
                    _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++)                                                        \
                    {                                                                                                                \
                        wv_[k] = VLD(wc_ + l_ * NB + k * (wst));                                                                     \
                        PW_REG(wv_[k]);                                                                                              \
                    }                                                                                                                \
                    _Pragma("GCC unroll 16") for (int q = 0; q < (npx); q++)                                                        \
                    {                                                                                                                \
                        const VF bc_ = VSET1(xc_[l_ + q * (qx)]);                                                                    \
                        _Pragma("GCC unroll 4") for (int k = 0; k < (obk); k++)(acc)[k][q] = VFMA(wv_[k], bc_, (acc)[k][q]);       \
                    }                                                                                                                \
                }                                                                                                                    \
            }                                                                                                                        \
            ci_ += n_, wc_ += n_ * NB;                                                                                               \
        }                                                                                                                            \
    } while (0)

/* nt pointwise register tiles of obk output blocks x npx pixels, one after the other along a row: tile t reads the
   input from xq + t*xst (pixels qx floats apart: p->sw * NB) and writes the output's pixels from y + t*npx*NB
   (blocks yst floats apart), channels [c0, c1); first / last as conv_tile. The blocks' epilogues are read out of p
   once per strip (epi_of; the stores through y may alias *p), and wpf_step runs once per tile. */
static inline __attribute__((always_inline)) void pw_strip(const so_nchwc_conv *p, const float *xq, int64_t xst, const float *w, int64_t wst,
                                                           int64_t c0, int64_t c1, const int obk, const int npx, int64_t nt, float *y,
                                                           int64_t yst, const float *res, int64_t ob, int first, int last, wpf_cursor *pf)
{
    const int64_t HWb = p->H * p->W * NB, sxw = p->sw * NB;
    const int cheap = cheap_epi(p);
    blk_epi e[PW_OBK];
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++) e[k] = epi_of(p, ob + k);
    for (int64_t t = 0; t < nt; t++) {
        const float *xt = xq + t * xst, *rt = res ? res + t * npx * NB : NULL;
        float *yt = y + t * npx * NB;
        VF acc[PW_OBK][PW_WIDE(1)];
        wpf_step(pf);
#pragma GCC unroll 4
        for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
            for (int q = 0; q < npx; q++) acc[k][q] = first ? VZERO : VLD(yt + k * yst + q * NB);
        if (sxw == NB) PW_TAPS(acc, xt, w, wst, c0, c1, HWb, NB, obk, npx, xst);
        else PW_TAPS(acc, xt, w, wst, c0, c1, HWb, sxw, obk, npx, xst);
        if (last) {
#pragma GCC unroll 4
            for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
                for (int q = 0; q < npx; q++) epi_put(&e[k], acc[k][q], yt + k * yst + q * NB, rt ? rt + k * yst + q * NB : NULL);
            if (!cheap)
                for (int k = 0; k < obk; k++) epi_tile(p, ob + k, yt + k * yst, rt ? rt + k * yst : NULL, npx);
        } else {
#pragma GCC unroll 4
            for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
                for (int q = 0; q < npx; q++) VST(yt + k * yst + q * NB, acc[k][q]);
        }
    }
}

/* pw_strip with run-time obk (1..PW_OBK) and npx (1..PW_WIDE(obk)). */
static void pw_strip_any(const so_nchwc_conv *p, const float *xq, int64_t xst, const float *w, int64_t wst, int64_t c0, int64_t c1, int obk, int npx,
                         int64_t nt, float *y, int64_t yst, const float *res, int64_t ob, int first, int last, wpf_cursor *pf)
{
#define PW_OB(OBK, NPX)                                                                                                                \
    case OBK * 16 + NPX: pw_strip(p, xq, xst, w, wst, c0, c1, OBK, NPX, nt, y, yst, res, ob, first, last, pf); break;
    switch (obk * 16 + npx) {
#if PW_OBK == 4 && PW_PX == 3
        PW_OB(4, 1) PW_OB(4, 2) PW_OB(4, 3)
        PW_OB(3, 1) PW_OB(3, 2) PW_OB(3, 3) PW_OB(3, 4)
        PW_OB(2, 1) PW_OB(2, 2) PW_OB(2, 3) PW_OB(2, 4) PW_OB(2, 5) PW_OB(2, 6)
        PW_OB(1, 1) PW_OB(1, 2) PW_OB(1, 3) PW_OB(1, 4) PW_OB(1, 5) PW_OB(1, 6) PW_OB(1, 7) PW_OB(1, 8) PW_OB(1, 9) PW_OB(1, 10) PW_OB(1, 11) PW_OB(1, 12)
#else
#error "pw_strip_any: add the cases of this PW_OBK x PW_PX"
#endif
    default: break;
    }
#undef PW_OB
}

/* Output pixels [owa, owb) of row oh, obk blocks from ob: a strip of tiles of PW_WIDE(obk) pixels, the rest as one tile. */
static void pw_row(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst, int64_t c0, int64_t c1, int64_t oh, int64_t owa, int64_t owb,
                   int obk, int64_t ob, float *y, int64_t yst, const float *res, int first, int last, wpf_cursor *pf)
{
    const int wide = PW_WIDE(obk);
    const int64_t nt = (owb - owa) / wide, rest = (owb - owa) % wide;
    const float *xr = x + (oh * p->sh * p->W + owa * p->sw) * NB;
    const int64_t off = (oh * p->Wo + owa) * NB;
    if (nt) pw_strip_any(p, xr, wide * p->sw * NB, w, wst, c0, c1, obk, wide, nt, y + off, yst, res ? res + off : NULL, ob, first, last, pf);
    if (rest) {
        const int64_t o2 = off + nt * wide * NB;
        pw_strip_any(p, xr + nt * wide * p->sw * NB, 0, w, wst, c0, c1, obk, (int)rest, 1, y + o2, yst, res ? res + o2 : NULL, ob, first, last, pf);
    }
}
#endif

#ifdef PW_OBK
/* Whether conv_run runs p on the pointwise path: a 1x1 of group 1 whose taps all lie inside the input. */
static inline int pw_ok(const so_nchwc_conv *p)
{
    return p->kh == 1 && p->kw == 1 && p->group == 1 && !p->gsub && p->pt == 0 && p->pl == 0 && (p->Ho - 1) * p->sh < p->H && (p->Wo - 1) * p->sw < p->W;
}

/* conv_run of a pw_ok conv: items of so_nchwc_pw_split (a band of output rows or pixels x a set of groups of <= PW_OBK
   output blocks); per item the input channels in chunks of so_nchwc_pw_kc (4 blocks: 16 KB of packed weights per
   group, in L1 over the band's tiles), per chunk every group of the set over the band (the band's chunk of input and
   its partial sums in L2). Large weights are prefetched to L2 a group ahead (wpf_cursor). */
static void pw_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, int T)
{
    const int64_t Ob = p->Ob, OHW = p->Ho * p->Wo, yst = OHW * NB, C = p->C, kc = max64(NB, so_nchwc_pw_kc / NB * NB);
    T = team(T, N * p->O * OHW * C);
    const int pfw = Ob * C * NB * (int64_t)sizeof(float) >= NCHWC_PF_MIN_BYTES;
    so_nchwc_pwsplit sp;
    so_nchwc_pw_split(p, N, T, PW_OBK, PW_PX, kc, so_nchwc_pw_l2, &sp);
    const int64_t nobg = sp.nobg, items = sp.items;
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t n, band, g0, g1;
        so_nchwc_pw_item(&sp, it, &n, &band, &g0, &g1);
        const int64_t u0 = band * sp.Lb / sp.nband, u1 = (band + 1) * sp.Lb / sp.nband;
        const int64_t oh0 = p->Ho > 1 ? u0 : 0, oh1 = p->Ho > 1 ? u1 : 1;
        const int64_t owa = p->Ho > 1 ? 0 : u0 * PW_PX, owb = p->Ho > 1 ? p->Wo : min64(p->Wo, u1 * PW_PX);
        const float *xi = x + n * p->Cb * p->H * p->W * NB;
        const int64_t nch = cdiv(C, kc), steps = (g1 - g0) * nch;
        for (int64_t sidx = 0; sidx < steps; sidx++) { /* (group, chunk) steps in the split's order */
            const int64_t g = sp.gouter ? g0 + sidx / nch : g0 + sidx % (g1 - g0), c0 = (sp.gouter ? sidx % nch : sidx / (g1 - g0)) * kc;
            const int64_t c1 = min64(C, c0 + kc), ob = so_nchwc_group_ob(Ob, nobg, g);
            const int obk = (int)(so_nchwc_group_ob(Ob, nobg, g + 1) - ob);
            float *yi = y + (n * Ob + ob) * yst;
            const float *ri = res ? res + (n * Ob + ob) * yst : NULL;
            const float *w = p->wp + p->wofs[ob];
            const int64_t wst = C * NB; /* group 1: every block's packed weights [C][b] */
            wpf_cursor pf = {0};
            if (pfw && sidx + 1 < steps) { /* the next step's weight slices */
                const int64_t s2 = sidx + 1, ng = sp.gouter ? g0 + s2 / nch : g0 + s2 % (g1 - g0);
                const int64_t nc0 = (sp.gouter ? s2 % nch : s2 / (g1 - g0)) * kc, nob = so_nchwc_group_ob(Ob, nobg, ng);
                pf = (wpf_cursor){(const char *)(p->wp + p->wofs[nob] + nc0 * NB), wst * 4, (min64(C, nc0 + kc) - nc0) * NB * 4,
                                  (int)(so_nchwc_group_ob(Ob, nobg, ng + 1) - nob), 0, 0, 0};
            }
            pf.per = cdiv(pf.n * cdiv(pf.len, 64), max64(1, (oh1 - oh0) * cdiv(owb - owa, PW_WIDE(obk))));
            for (int64_t oh = oh0; oh < oh1; oh++) pw_row(p, xi, w, wst, c0, c1, oh, owa, owb, obk, ob, yi, yst, ri, c0 == 0, c1 == C, &pf);
        }
    }
}
#endif

static void conv_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, int T)
{
    if (p->Ho <= 0 || p->Wo <= 0) return;
    if (p->depthwise || p->gsub) { /* one input block per output block */
        dw_run(p, N, x, y, res, T);
        return;
    }
    if (so_nchwc_gb_on && so_nchwc_gblk(p)) { /* groups of whole blocks */
        gb_run(p, N, x, y, res, T);
        return;
    }
#ifdef PW_OBK
    if (so_nchwc_pw_on && pw_ok(p)) {
        pw_run(p, N, x, y, res, T);
        return;
    }
#endif
    const int64_t Ob = p->Ob, KK = p->kh * p->kw, OHW = p->Ho * p->Wo, yst = OHW * NB;
    T = team(T, N * p->O * OHW * KK * (p->C / p->group));
    const int obk_max = p->group == 1 ? CONV_OBK : 1; /* blocks sharing one input-channel range */
    const int pfw = (p->wofs[Ob - 1] + p->nic[Ob - 1] * KK * NB) * (int64_t)sizeof(float) >= NCHWC_PF_MIN_BYTES; /* wpf_cursor */
    /* work items: balanced output-block groups x bands of rows, or of columns when there is one row (a flattened
       1x1): so_nchwc_conv_split (nchwc.h) */
    so_nchwc_split sp;
    so_nchwc_conv_split(p, N, T, obk_max, CONV_PX, NCHWC_PSUM_FLOATS, &sp);
    const int64_t nobg = sp.nobg, items = sp.items;
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t n, g, band;
        so_nchwc_split_item(&sp, it, &n, &g, &band);
        const int64_t ob = so_nchwc_group_ob(Ob, nobg, g);
        const int obk = (int)(so_nchwc_group_ob(Ob, nobg, g + 1) - ob);
        /* rows [oh0, oh1) x columns [owa, owb) of the output plane */
        const int64_t u0 = so_nchwc_band_start(&sp, band), u1 = so_nchwc_band_start(&sp, band + 1);
        const int64_t oh0 = p->Ho > 1 ? u0 : 0, oh1 = p->Ho > 1 ? u1 : 1;
        const int64_t owa = p->Ho > 1 ? 0 : u0 * CONV_PX, owb = p->Ho > 1 ? p->Wo : min64(p->Wo, u1 * CONV_PX);
        const float *xi = x + n * p->Cb * p->H * p->W * NB;
        float *yi = y + (n * Ob + ob) * yst;
        const float *ri = res ? res + (n * Ob + ob) * yst : NULL;
        const float *w = p->wp + p->wofs[ob];
        const int64_t wst = obk > 1 ? p->wofs[ob + 1] - p->wofs[ob] : 0, nic = p->nic[ob];
        const int64_t icc = max64(1, NCHWC_WFLOATS / (KK * obk * NB));
        /* tiles per chunk (rows x pixel tiles; border pixels make a few more) over which the prefetch is spread */
        const int64_t ntile = max64(1, (oh1 - oh0) * cdiv(owb - owa, CONV_WIDE(obk)));
        for (int64_t c0 = 0; c0 < nic || c0 == 0; c0 += icc) {
            const int64_t c1 = min64(nic, c0 + icc);
            wpf_cursor pf = {0};
            if (!pfw) /* small weights (the 7x7 stem's 37 KB): the hardware prefetcher keeps up */;
            else if (c1 < nic) /* the next chunk of this item */
                pf = (wpf_cursor){(const char *)(w + c1 * KK * NB), wst * 4, min64(icc, nic - c1) * KK * NB * 4, obk, 0, 0, 0};
            else if (it + 1 < items) { /* the first chunk of the next item (of this thread, under schedule(static)) */
                int64_t nn, ng, nbd;
                so_nchwc_split_item(&sp, it + 1, &nn, &ng, &nbd);
                const int64_t nob = so_nchwc_group_ob(Ob, nobg, ng);
                const int nobk = (int)(so_nchwc_group_ob(Ob, nobg, ng + 1) - nob);
                pf = (wpf_cursor){(const char *)(p->wp + p->wofs[nob]), nobk > 1 ? (p->wofs[nob + 1] - p->wofs[nob]) * 4 : 0,
                                  min64(icc, p->nic[nob]) * KK * NB * 4, nobk, 0, 0, 0};
            }
            pf.per = cdiv(pf.n * cdiv(pf.len, 64), ntile);
            for (int64_t oh = oh0; oh < oh1; oh++)
                conv_row(p, xi, w, wst, c0, c1, oh, owa, owb, obk, ob, yi, yst, ri, c0 == 0, c1 == nic, &pf);
            if (c1 >= nic) break;
        }
    }
}

/* ---------------- direct conv on a zero-bordered copy (conv_pad) ---------------- */

/* conv_pad's register tile: at most CONVP_OBK output blocks (a level may set it; default CONV_OBK) x CONVP_NPX pixels
   (default CONV_PX) of accumulators, spent on up to 6 pixels when a group has fewer blocks (each pixel keeps its
   offset into the copy in a register). */
#ifndef CONVP_OBK
#define CONVP_OBK CONV_OBK
#endif
#ifndef CONVP_NPX
#define CONVP_NPX CONV_PX
#endif
#define CONVP_PX(obk) (CONVP_OBK * CONVP_NPX / (obk) < 6 ? CONVP_OBK * CONVP_NPX / (obk) : 6)

/* One tap of convp_tile: the broadcasts of the npx pixels' inputs at xj + o[q] times the obk blocks' weights at wc. */
static inline __attribute__((always_inline)) void convp_tap(VF (*acc)[6], const float *xj, const int64_t *o, const float *wc, int64_t wst,
                                                            const int obk, const int npx)
{
    if (obk > npx) { /* more blocks than pixels (a 4 x 3 tile): the broadcasts first, each weight loaded once */
        VF bc[6];
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) bc[q] = VSET1(xj[o[q]]);
#pragma GCC unroll 4
        for (int k = 0; k < obk; k++) {
            VF wv = VLD(wc + k * wst);
            PW_REG(wv);
#pragma GCC unroll 16
            for (int q = 0; q < npx; q++) acc[k][q] = VFMA(wv, bc[q], acc[k][q]);
        }
        return;
    }
    VF wv[CONVP_OBK];
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++) wv[k] = VLD(wc + k * wst);
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) {
        const VF bc = VSET1(xj[o[q]]);
#pragma GCC unroll 4
        for (int k = 0; k < obk; k++) acc[k][q] = VFMA(wv[k], bc, acc[k][q]);
    }
}

/* One register tile of conv_pad: obk output blocks x npx consecutive output pixels (across row ends), pixel q's tap
   (0, 0) at xo[q] floats into each block of the copy xp (blocks HWp floats apart), input channels [c0, c1) of the
   blocks' range from ic0, every tap t at toff[t] floats from tap (0, 0). Output, first / last: as conv_tile. The taps in
   conv_tile's order (channel, row, column), so interior pixels get conv_tile's bits and border pixels add 0 * w where
   conv_tile skips the tap. One flat loop over the taps with the pixel offsets in registers (index registers of the
   broadcasts): the 3x3 taps unrolled spilled them (GCC), 1.1-1.2x the time of conv_tile on 56x56 planes. */
static inline __attribute__((always_inline)) void convp_tile(const so_nchwc_conv *p, const float *xp, int64_t HWp, const int64_t *toff,
                                                             const float *w, int64_t wst, int64_t ic0, int64_t c0, int64_t c1,
                                                             const int64_t *xo, const int obk, const int npx, float *y, int64_t yst,
                                                             const float *res, int64_t ob, int first, int last)
{
    VF acc[CONVP_OBK][6];
    const int64_t KK = p->kh * p->kw;
    /* a one-row / one-column kernel (Inception-v3's 1x7, 7x1, 1x3, 3x1): its taps toff[1] floats apart, walked by a
       running pointer (each broadcast one base + index address; no per-tap offset load and adds) */
    const int64_t tstep = (p->kh == 1 || p->kw == 1) && KK > 1 ? toff[1] : 0;
    int64_t o[6];
#pragma GCC unroll 16
    for (int q = 0; q < npx; q++) o[q] = xo[q];
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) acc[k][q] = first ? VZERO : VLD(y + k * yst + q * NB);
    const float *wc = w + c0 * KK * NB;
    for (int64_t ci = ic0 + c0, ce = ic0 + c1; ci < ce;) { /* per input block, its lanes with running pointers (PW_FMA) */
        const int64_t l0 = ci % NB, n = min64(NB - l0, ce - ci);
        const float *xb = xp + (ci / NB) * HWp + l0;
        for (int64_t l = 0; l < n; l++) {
            const float *xc = xb + l;
            if (tstep) {
                const float *xj = xc;
#pragma GCC unroll 1
                for (int64_t t = 0; t < KK; t++, wc += NB, xj += tstep) convp_tap(acc, xj, o, wc, wst, obk, npx);
            } else {
#pragma GCC unroll 1
                for (int64_t t = 0; t < KK; t++, wc += NB) convp_tap(acc, xc + toff[t], o, wc, wst, obk, npx);
            }
        }
        ci += n;
    }
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) {
            if (last)
                epi_store(p, ob + k, acc[k][q], y + k * yst + q * NB, res ? res + k * yst + q * NB : NULL);
            else
                VST(y + k * yst + q * NB, acc[k][q]);
        }
    if (last && !cheap_epi(p))
        for (int k = 0; k < obk; k++) epi_tile(p, ob + k, y + k * yst, res ? res + k * yst : NULL, npx);
}

#define CONVP_ARGS p, xp, HWp, toff, w, wst, ic0, c0, c1, xo
#define CONVP_SW(OBK)                                                                                                                 \
    switch (npx) {                                                                                                                     \
    case 1: convp_tile(CONVP_ARGS, OBK, 1, y, yst, res, ob, first, last); break;                                                       \
    case 2: convp_tile(CONVP_ARGS, OBK, 2, y, yst, res, ob, first, last); break;                                                       \
    case 3: convp_tile(CONVP_ARGS, OBK, 3, y, yst, res, ob, first, last); break;                                                       \
    case 4: convp_tile(CONVP_ARGS, OBK, 4, y, yst, res, ob, first, last); break;                                                       \
    case 5: convp_tile(CONVP_ARGS, OBK, 5, y, yst, res, ob, first, last); break;                                                       \
    default: convp_tile(CONVP_ARGS, OBK, CONVP_PX(OBK), y, yst, res, ob, first, last); break;                                          \
    }

/* convp_tile with run-time obk (1..CONVP_OBK) and npx (1..5 or CONVP_PX(obk)). */
static void convp_tile_any(const so_nchwc_conv *p, const float *xp, int64_t HWp, const int64_t *toff, const float *w, int64_t wst,
                           int64_t ic0, int64_t c0, int64_t c1, const int64_t *xo, int obk, int npx, float *y, int64_t yst, const float *res,
                           int64_t ob, int first, int last)
{
    switch (obk) {
    case 1: CONVP_SW(1) break;
#if CONVP_OBK >= 2
    case 2: CONVP_SW(2) break;
#endif
#if CONVP_OBK >= 3
    case 3: CONVP_SW(3) break;
#endif
#if CONVP_OBK >= 4
    case 4: CONVP_SW(4) break;
#endif
    default: break;
    }
}
#undef CONVP_SW
#undef CONVP_ARGS

/* Output blocks per register tile of conv_pad (blocks that share one input-channel range: 1 unless group 1): CONVP_OBK
   for the one-row / one-column kernels (Inception-v3's 1x7, 7x1, 1x3, 3x1: at AVX2 the 4 x 3 tile, 32 output channels
   per broadcast, measured 0.93-0.99 of the 2 x 6 tile's time on their 17x17 / 8x8 shapes, session 23, loaded), else
   CONV_OBK (the 3x3s: ResNet-50's shapes measured 1.03-1.05 on the 4 x 3 tile). The tile width changes no sum. */
static inline int convp_obk(const so_nchwc_conv *p)
{
    return p->group != 1 ? 1 : p->kh == 1 || p->kw == 1 ? CONVP_OBK : CONV_OBK < CONVP_OBK ? CONV_OBK : CONVP_OBK;
}

/* conv on one image's zero-bordered copy: per work item of so_nchwc_conv_split (output-block group x band of rows, as
   conv_run), per input-channel chunk, the band's output pixels [t0, t1) (flattened: t = oh * Wo + ow) in tiles of
   CONVP_PX(obk) consecutive pixels (the last tile of a band 1..5), each pixel's tap (0, 0) at (oh * sh) * Wp + ow * sw
   pixels into the copy. */
/* conv_pad of a strided 1x1 (so_nchwc_gather_ok): per image, the pixels (oh * sh, ow * sw) of every input block gathered
   into scratch as a contiguous Ho x Wo plane (one omp for over (block, row)), then conv_run of the stride-1 1x1 over it,
   planned as one row (H = Ho = 1, W = Wo = Ho * Wo: so_nchwc_conv_plan's form of a stride-1 1x1). Each output's sum
   takes the same channels in the same order as conv_run on p (the same bits). */
static void gather_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, float *scratch, int T)
{
    const int64_t Cb = p->Cb, H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, sh = p->sh, sw = p->sw, yst = p->Ob * Ho * Wo * NB;
    so_nchwc_conv q = *p; /* shares p's packed weights and epilogue */
    q.H = q.Ho = 1, q.W = q.Wo = Ho * Wo, q.sh = q.sw = 1;
    const int Tg = team(T, Cb * Ho * Wo * NB);
    for (int64_t n = 0; n < N; n++) {
        const float *xi = x + n * Cb * H * W * NB;
#pragma omp parallel for num_threads(Tg) schedule(static) if (Tg > 1)
        for (int64_t r = 0; r < Cb * Ho; r++) {
            const int64_t cb = r / Ho, oh = r % Ho;
            const float *s = xi + (cb * H + oh * sh) * W * NB;
            float *d = scratch + r * Wo * NB;
            for (int64_t ow = 0; ow < Wo; ow++) memcpy(d + ow * NB, s + ow * sw * NB, sizeof(float) * NB);
        }
        conv_run(&q, 1, scratch, y + n * yst, res ? res + n * yst : NULL, T);
    }
}

static void convp_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, float *scratch, int T)
{
    if (!so_nchwc_pad_ok(p)) return;
    if (so_nchwc_gather_ok(p)) {
        gather_run(p, N, x, y, res, scratch, T);
        return;
    }
    const int64_t Ob = p->Ob, Cb = p->Cb, KK = p->kh * p->kw, Ho = p->Ho, Wo = p->Wo, OHW = Ho * Wo, yst = OHW * NB, H = p->H, W = p->W;
    int64_t Hp, Wp;
    so_nchwc_pad_dims(p, &Hp, &Wp);
    const int64_t HWp = Hp * Wp * NB;
    int64_t toff[SO_NCHWC_PAD_TAPS]; /* floats from tap (0, 0) to tap t */
    for (int64_t t = 0; t < KK; t++) toff[t] = (t / p->kw * p->dh * Wp + t % p->kw * p->dw) * NB;
    T = team(T, N * p->O * OHW * KK * p->C);
    const int pfw = (p->wofs[Ob - 1] + p->nic[Ob - 1] * KK * NB) * (int64_t)sizeof(float) >= NCHWC_PF_MIN_BYTES; /* wpf_cursor */
    so_nchwc_split sp;
    so_nchwc_conv_split(p, 1, T, convp_obk(p), CONV_PX, NCHWC_PSUM_FLOATS, &sp); /* blocks sharing one input range */
    const int64_t nobg = sp.nobg, items = sp.items;
    for (int64_t n = 0; n < N; n++) {
        const float *xi = x + n * Cb * H * W * NB;
        float *yi = y + n * Ob * yst;
        const float *ri = res ? res + n * Ob * yst : NULL;
#pragma omp parallel num_threads(T) if (T > 1)
        {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < Cb * Hp; r++) { /* the copy, row by row: zeros outside the input */
                const int64_t cb = r / Hp, ih = r % Hp - p->pt;
                float *d = scratch + cb * HWp + r % Hp * Wp * NB;
                if (ih < 0 || ih >= H) {
                    memset(d, 0, sizeof(float) * (size_t)(Wp * NB));
                    continue;
                }
                const int64_t q0 = min64(Wp, max64(0, p->pl)), q1 = max64(q0, min64(Wp, p->pl + W)); /* columns from the input */
                memset(d, 0, sizeof(float) * (size_t)(q0 * NB));
                memcpy(d + q0 * NB, xi + (cb * H + ih) * W * NB + (q0 - p->pl) * NB, sizeof(float) * (size_t)((q1 - q0) * NB));
                memset(d + q1 * NB, 0, sizeof(float) * (size_t)((Wp - q1) * NB));
            }
#pragma omp for schedule(static)
            for (int64_t it = 0; it < items; it++) {
                int64_t nn, g, band;
                so_nchwc_split_item(&sp, it, &nn, &g, &band);
                const int64_t ob = so_nchwc_group_ob(Ob, nobg, g);
                const int obk = (int)(so_nchwc_group_ob(Ob, nobg, g + 1) - ob);
                const int64_t u0 = so_nchwc_band_start(&sp, band), u1 = so_nchwc_band_start(&sp, band + 1);
                const int64_t t0 = Ho > 1 ? u0 * Wo : u0 * CONV_PX, t1 = Ho > 1 ? u1 * Wo : min64(Wo, u1 * CONV_PX);
                const float *w = p->wp + p->wofs[ob];
                const int64_t wst = obk > 1 ? p->wofs[ob + 1] - p->wofs[ob] : 0, nic = p->nic[ob];
                const int64_t icc = max64(1, NCHWC_WFLOATS / (KK * obk * NB));
                const int full = CONVP_PX(obk);
                const int64_t ntile = max64(1, cdiv(t1 - t0, full));
                for (int64_t c0 = 0; c0 < nic || c0 == 0; c0 += icc) {
                    const int64_t c1 = min64(nic, c0 + icc);
                    wpf_cursor pf = {0};
                    if (!pfw) /* small weights: the hardware prefetcher keeps up */;
                    else if (c1 < nic) /* the next chunk of this item */
                        pf = (wpf_cursor){(const char *)(w + c1 * KK * NB), wst * 4, min64(icc, nic - c1) * KK * NB * 4, obk, 0, 0, 0};
                    else if (it + 1 < items) { /* the first chunk of the next item (of this thread, under schedule(static)) */
                        int64_t n2, ng, nbd;
                        so_nchwc_split_item(&sp, it + 1, &n2, &ng, &nbd);
                        const int64_t nob = so_nchwc_group_ob(Ob, nobg, ng);
                        const int nobk = (int)(so_nchwc_group_ob(Ob, nobg, ng + 1) - nob);
                        pf = (wpf_cursor){(const char *)(p->wp + p->wofs[nob]), nobk > 1 ? (p->wofs[nob + 1] - p->wofs[nob]) * 4 : 0,
                                          min64(icc, p->nic[nob]) * KK * NB * 4, nobk, 0, 0, 0};
                    }
                    pf.per = cdiv(pf.n * cdiv(pf.len, 64), ntile);
                    int64_t oh = t0 / Wo, ow = t0 % Wo;
                    for (int64_t t = t0; t < t1;) {
                        const int npx = t1 - t >= full ? full : (int)min64(5, t1 - t);
                        int64_t xo[6];
                        for (int q = 0; q < npx; q++) {
                            xo[q] = (oh * p->sh * Wp + ow * p->sw) * NB;
                            if (++ow == Wo) ow = 0, oh++;
                        }
                        wpf_step(&pf);
                        convp_tile_any(p, scratch, HWp, toff, w, wst, p->ic0[ob], c0, c1, xo, obk, npx, yi + ob * yst + t * NB, yst,
                                       ri ? ri + ob * yst + t * NB : NULL, ob, c0 == 0, c1 == nic);
                        t += npx;
                    }
                    if (c1 >= nic) break;
                }
            }
        }
    }
}

/* ---------------- stem: a few-channel NCHW image into a blocked conv ---------------- */

/* One register tile of the stem conv: obk output blocks x npx pixels of one output row, reading the plain image
   x [C][H][W] of one image (channel c's plane HW floats on); taps as conv_tile. The epilogue (no residual) is
   applied here: a stem's whole sum is one tile. */
static inline __attribute__((always_inline)) void stem_tile(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst,
                                                            int64_t ih0, int64_t i0, int64_t i1, int64_t iw0, int64_t j0, int64_t j1,
                                                            const int obk, const int npx, const int S, float *y, int64_t yst, int64_t ob)
{
    VF acc[CONV_OBK][STEM_PX];
    /* S: the stride along W when known at compile time (the pixels' broadcasts at constant offsets), else 0 */
    const int64_t HW = p->H * p->W, W = p->W, kw = p->kw, KK = p->kh * p->kw, sw = S ? S : p->sw, dw = p->dw;
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) acc[k][q] = VZERO;
    for (int64_t c = 0; c < p->C; c++) {
        const float *xc = x + c * HW, *wc = w + c * KK * NB;
        for (int64_t i = i0; i < i1; i++) {
            const float *xr = xc + (ih0 + i * p->dh) * W + iw0, *wr = wc + i * kw * NB;
            TAP_ROW_FMA(acc, xr, wr, wst, j0, j1, dw, sw, obk, npx);
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++) {
        const blk_epi e = epi_of(p, ob + k);
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) epi_put(&e, acc[k][q], y + k * yst + q * NB, NULL);
        if (!e.cheap) epi_tile(p, ob + k, y + k * yst, NULL, npx);
    }
}

/* The pixels of stem_row's next interior tile at obk output blocks with avail interior pixels left: STEM_PX / obk
   (the full tile), else its half or quarter when that many are left (a row's remainder: at MNASNet's 112-pixel
   rows 3 of 111 at obk = 2, which one-pixel tiles ran as 2 x 27-deep FMA chains, latency-bound), else 1. */
static inline int stem_npx(int obk, int64_t avail)
{
    const int full = STEM_PX / obk;
    return avail >= full ? full : avail >= full / 2 && full / 2 > 1 ? full / 2 : avail >= full / 4 && full / 4 > 1 ? full / 4 : 1;
}

/* stem_tile with run-time obk (1..CONV_OBK) and npx (one of stem_npx's: 1, or STEM_PX / obk, its half or its
   quarter: the same accumulators whatever obk). */
static void stem_tile_any(const so_nchwc_conv *p, const float *x, const float *w, int64_t wst, int64_t ih0, int64_t i0, int64_t i1,
                          int64_t iw0, int64_t j0, int64_t j1, int obk, int npx, float *y, int64_t yst, int64_t ob)
{
#define STEM_ARGS p, x, w, wst, ih0, i0, i1, iw0, j0, j1
#define STEM_Q(K, D) (STEM_PX / (K) / (D) > 1 ? STEM_PX / (K) / (D) : 1)
#define STEM_OBK(K, S)                                                                                                                 \
    case K:                                                                                                                            \
        if (npx == STEM_PX / (K)) stem_tile(STEM_ARGS, K, STEM_PX / (K), S, y, yst, ob);                                               \
        else if (npx == STEM_Q(K, 2)) stem_tile(STEM_ARGS, K, STEM_Q(K, 2), S, y, yst, ob);                                            \
        else if (npx == STEM_Q(K, 4)) stem_tile(STEM_ARGS, K, STEM_Q(K, 4), S, y, yst, ob);                                            \
        else stem_tile(STEM_ARGS, K, 1, S, y, yst, ob);                                                                                \
        break;
#if CONV_OBK >= 4
#define STEM_SWITCH(S)                                                                                                                 \
    switch (obk) { STEM_OBK(1, S) STEM_OBK(2, S) STEM_OBK(3, S) STEM_OBK(4, S) default: break; }
#elif CONV_OBK >= 2
#define STEM_SWITCH(S)                                                                                                                 \
    switch (obk) { STEM_OBK(1, S) STEM_OBK(2, S) default: break; }
#else
#define STEM_SWITCH(S)                                                                                                                 \
    switch (obk) { STEM_OBK(1, S) default: break; }
#endif
    if (p->sw == 2) STEM_SWITCH(2) /* the stems of ResNet, MobileNet, MNASNet, EfficientNet, ... */
    else STEM_SWITCH(0)
#undef STEM_SWITCH
#undef STEM_OBK
#undef STEM_Q
#undef STEM_ARGS
}

/* Pixels [ow0, ow1) of output row oh, output blocks [ob, ob + CONV_OBK) (clipped to p->Ob), of the stem p on one
   plain image xi [C][H][W] into yr (pixel ow0 of block ob + k at yr + k * yst): interior pixels in tiles of
   STEM_PX / obk (a row's remainder in stem_npx's smaller tiles), border pixels one at a time with their own tap
   columns; owL, owR from interior_cols. A pixel's sum does not depend on the tile it is in. */
static void stem_row(const so_nchwc_conv *p, const float *xi, int64_t ob, int64_t oh, int64_t ow0, int64_t ow1, float *yr, int64_t yst,
                     int64_t owL, int64_t owR)
{
    const int obk = (int)min64(CONV_OBK, p->Ob - ob);
    const int64_t ih0 = oh * p->sh - p->pt, wst = obk > 1 ? p->wofs[ob + 1] - p->wofs[ob] : 0;
    int64_t i0, i1;
    tap_range(ih0, p->dh, p->kh, p->H, &i0, &i1);
    const float *w = p->wp + p->wofs[ob];
    for (int64_t ow = ow0; ow < ow1;) {
        const int64_t iw0 = ow * p->sw - p->pl;
        int npx = 1;
        int64_t j0 = 0, j1 = p->kw;
        if (ow >= owL && ow < owR) npx = stem_npx(obk, min64(owR, ow1) - ow);
        else tap_range(iw0, p->dw, p->kw, p->W, &j0, &j1);
        stem_tile_any(p, xi, w, wst, ih0, i0, i1, iw0, j0, j1, obk, npx, yr + (ow - ow0) * NB, yst, ob);
        ow += npx;
    }
}

/* The conv p (group 1, p->C few channels) of the plain images x [N][C][H][W] into blocked y, epilogue without a
   residual: what the layout's nchwc_in + conv_nchwc compute, without the blocked copy of the image (b/C times its
   size). Work items: images x groups of CONV_OBK output blocks x output rows (stem_row: the same sums at any T). */
static void stem_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, int T)
{
    if (p->Ho <= 0 || p->Wo <= 0) return;
    const int64_t Ob = p->Ob, nobg = cdiv(Ob, CONV_OBK), yst = p->Ho * p->Wo * NB, items = N * nobg * p->Ho;
    int64_t owL, owR;
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->dw, p->W, &owL, &owR);
    T = team(T, N * p->O * p->Ho * p->Wo * p->kh * p->kw * p->C);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < items; it++) {
        const int64_t n = it / (nobg * p->Ho), ob = it / p->Ho % nobg * CONV_OBK, oh = it % p->Ho;
        stem_row(p, x + n * p->C * p->H * p->W, ob, oh, 0, p->Wo, y + (n * Ob + ob) * yst + oh * p->Wo * NB, yst, owL, owR);
    }
}

/* stem_run followed by the max pool q (dilation 1; q->H, q->W = p->Ho, p->Wo) of its output, in one pass: the
   conv rows a pooled row reads are computed (stem_row, all output blocks) into a ring of q->kh rows per thread in
   scratch (so_nchwc_stem_pool_scratch floats) and pooled from there, so the conv's output (ResNet: 3.2 MB) is
   never written to memory and read back. Work items: images x T bands of consecutive pooled rows; a band
   recomputes the conv rows it shares with the band before (ResNet: 1 of 57 per band). The values are those of
   stem_run then pool_run, bit for bit (the same sums, the same max order and NaN rule). Conv row r is pixels
   [r * q->W, (r + 1) * q->W) of p's rows (p's one row of H*W pixels when it is a 1x1 stride-1 unpadded conv). */
static void stem_pool_run(const so_nchwc_conv *p, const so_nchwc_pool *q, int64_t N, const float *x, float *y, float *scratch, int T)
{
    const int64_t Ob = p->Ob, kh = q->kh, rowf = Ob * q->W * NB, ohw = q->Ho * q->Wo * NB;
    int64_t owL, owR;
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->dw, p->W, &owL, &owR);
    T = team(T, N * p->O * p->Ho * p->Wo * p->kh * p->kw * p->C);
    const int64_t bands = min64(T, q->Ho);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < N * bands; it++) {
        const int64_t n = it / bands, b = it % bands, r0 = q->Ho * b / bands, r1 = q->Ho * (b + 1) / bands;
        float *ring = scratch + (int64_t)omp_get_thread_num() * kh * rowf; /* conv row r at ring + (r % kh) * rowf */
        const float *xi = x + n * p->C * p->H * p->W;
        float *yi = y + n * Ob * ohw;
        int64_t next = 0; /* conv rows [next - kh, next) are in the ring (those computed) */
        for (int64_t ph = r0; ph < r1; ph++) {
            const int64_t ih0 = ph * q->sh - q->pt;
            int64_t i0, i1;
            tap_range(ih0, 1, kh, q->H, &i0, &i1);
            for (int64_t r = max64(next, ih0 + i0); r < ih0 + i1; r++) {
                const int64_t px0 = r * q->W, oh = px0 / p->Wo, ow0 = px0 % p->Wo;
                for (int64_t ob = 0; ob < Ob; ob += CONV_OBK)
                    stem_row(p, xi, ob, oh, ow0, ow0 + q->W, ring + (r % kh) * rowf + ob * q->W * NB, q->W * NB, owL, owR);
            }
            next = max64(next, ih0 + i1);
            for (int64_t cb = 0; cb < Ob; cb++) {
                const VF m = lane_mask(q->C, cb);
                float *yr = yi + cb * ohw + ph * q->Wo * NB;
                for (int64_t ow = 0; ow < q->Wo; ow++) {
                    VF mx = VSET1(-INFINITY), nan = VZERO;
                    const int64_t iw0 = ow * q->sw - q->pl;
                    int64_t j0, j1;
                    tap_range(iw0, 1, q->kw, q->W, &j0, &j1);
                    for (int64_t i = i0; i < i1; i++) max_scan(&mx, &nan, ring + ((ih0 + i) % kh) * rowf + (cb * q->W + iw0) * NB, j0, j1, NB);
                    VST(yr + ow * NB, VAND(VOR(mx, nan), m));
                }
            }
        }
    }
}

/* stem_run followed by the depthwise conv d (d->H, d->W = p->Ho, p->Wo; kernel KH x KW, stride S on both axes,
   dilation 1, no residual) of its output, in one pass: the stem's rows that two output rows of d read (KH + S) are
   computed (stem_row, every block) into a zero-bordered buffer per thread in scratch (so_nchwc_stem_dw_scratch
   floats: per block KH + S rows of so_nchwc_stem_dw_width pixels), the rows the next pair reads again moved to its
   front, and d's rows computed from there as dw_plane does (dw2_tile pairs at levels with DW2_PX, dw_tile rows
   else: every tap inside the buffer), so the stem's output (MNASNet: 1.6 MB) is never written to memory and read
   back. Work items: images x T bands of consecutive output rows of d; a band recomputes the KH - S stem rows it
   shares with the band before. The values are those of stem_run then dw_run, bit for bit when d's weights are
   finite (a border tap's zero adds +0 to a sum that starts at +0, in the same tap order). */
static void stem_dw_run(const so_nchwc_conv *p, const so_nchwc_conv *d, int64_t N, const float *x, float *y, float *scratch, int T)
{
    const int64_t Ob = p->Ob, KH = d->kh, KW = d->kw, S = d->sh, R = KH + S, Wp = so_nchwc_stem_dw_width(d->W, d->Wo, KW, S, d->pl);
    const int64_t rowf = Wp * NB, bst = R * rowf, ohw = d->Ho * d->Wo * NB, yrow = d->Wo * NB;
    int64_t owL, owR;
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->dw, p->W, &owL, &owR);
    T = team(T, N * (p->O * p->Ho * p->Wo * p->kh * p->kw * p->C + d->O * d->Ho * d->Wo * KH * KW));
    const int64_t bands = min64(T, d->Ho);
    const int pairs = DW2_PX && dw2_ok(d);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < N * bands; it++) {
        const int64_t n = it / bands, b = it % bands, r0 = d->Ho * b / bands, r1 = d->Ho * (b + 1) / bands;
        float *buf = scratch + (int64_t)omp_get_thread_num() * Ob * bst; /* block cb's row j at buf + cb * bst + j * rowf */
        memset(buf, 0, sizeof(float) * (size_t)(Ob * bst)); /* the border columns stay zero */
        const float *xi = x + n * p->C * p->H * p->W;
        float *yi = y + n * Ob * ohw;
        int64_t have0 = 0, have = 0; /* stem rows [have0, have0 + have) are in buffer rows [0, have) */
        for (int64_t oh = r0; oh < r1;) {
            const int two = pairs && oh + 1 < r1;
            const int64_t base = oh * S - d->pt, need = KH + (two ? S : 0);
            int64_t keep = 0;
            if (have && base >= have0 && base < have0 + have) {
                keep = min64(have0 + have - base, need);
                if (base > have0)
                    for (int64_t cb = 0; cb < Ob; cb++)
                        memmove(buf + cb * bst, buf + cb * bst + (base - have0) * rowf, sizeof(float) * (size_t)(keep * rowf));
            }
            for (int64_t j = keep; j < need; j++) {
                const int64_t r = base + j;
                if (r < 0 || r >= p->Ho) { /* the conv's zero padding rows */
                    for (int64_t cb = 0; cb < Ob; cb++) memset(buf + cb * bst + j * rowf + d->pl * NB, 0, sizeof(float) * (size_t)(p->Wo * NB));
                    continue;
                }
                for (int64_t ob = 0; ob < Ob; ob += CONV_OBK) stem_row(p, xi, ob, r, 0, p->Wo, buf + ob * bst + j * rowf + d->pl * NB, bst, owL, owR);
            }
            have0 = base, have = need;
            for (int64_t cb = 0; cb < Ob; cb++) {
                const float *bc = buf + cb * bst, *wc = d->wp + d->wofs[cb];
                float *yr = yi + cb * ohw + oh * yrow;
                for (int64_t ow = 0; ow < d->Wo;) {
#if DW2_PX
                    if (two) {
                        const int npx = (int)min64(DW2_PX, d->Wo - ow);
                        dw2_tile_any(d, bc, Wp, wc, 0, ow * S, (int)KH, (int)S, npx, yr + ow * NB, NULL, yrow, cb);
                        ow += npx;
                        continue;
                    }
#endif
                    const int npx = (int)min64(DW_PX, d->Wo - ow);
                    dw_tile_any(d, bc, Wp, wc, 0, 0, KH, ow * S, 0, KW, npx, yr + ow * NB, NULL, cb);
                    ow += npx;
                }
            }
            oh += two ? 2 : 1;
        }
    }
}

/* ---------------- Winograd F(4x4, 3x3) on blocked tiles ---------------- */

/* B^T d for 6 vectors d[0..5] (stride s) into o[0..5] (stride so): Lavin & Gray's F(4x4, 3x3) input transform,
   the lanes being 16 (8) channels of one pixel. */
static inline __attribute__((always_inline)) void wino_bt6(const VF *d, int s, VF *o, int so)
{
    const VF d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    const VF f4 = VSET1(4.0f), f5 = VSET1(5.0f), f2 = VSET1(2.0f);
    const VF t1 = VSUB(d4, VMUL(f4, d2)), t2 = VSUB(d3, VMUL(f4, d1)); /* d4 - 4 d2, d3 - 4 d1 */
    const VF t3 = VSUB(d4, d2), t4 = VMUL(f2, VSUB(d3, d1));            /* d4 - d2, 2 (d3 - d1) */
    o[0] = VADD(VSUB(VMUL(f4, d0), VMUL(f5, d2)), d4);
    o[so] = VADD(t1, t2);
    o[2 * so] = VSUB(t1, t2);
    o[3 * so] = VADD(t3, t4);
    o[4 * so] = VSUB(t3, t4);
    o[5 * so] = VADD(VSUB(VMUL(f4, d1), VMUL(f5, d3)), d5);
}

/* A^T m for 6 vectors (stride s) into 4 (stride so): the output transform. */
static inline __attribute__((always_inline)) void wino_at6(const VF *m, int s, VF *o, int so)
{
    const VF m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
    const VF a = VADD(m1, m2), b = VSUB(m1, m2), c = VADD(m3, m4), d = VSUB(m3, m4);
    o[0] = VADD(VADD(m0, a), c);
    o[so] = VFMA(VSET1(2.0f), d, b);
    o[2 * so] = VFMA(VSET1(4.0f), c, a);
    o[3 * so] = VADD(VFMA(VSET1(8.0f), d, b), m5);
}

/* One GEMM register tile of position pos: obk output blocks x npx tiles, M = V (tiles x Cp) times U (Cp x b per
   block: channel c's vectors of the obk blocks are b floats apart, WINO_G * b floats after channel c - 1's), over all
   Cp input lanes (the padding lanes of V and U are zero). */
static inline __attribute__((always_inline)) void wino_mm(const float *v, int64_t Cp, const float *u, float *m, int64_t mst, const int obk,
                                                          const int npx, const float *pf)
{
    VF acc[CONV_OBK][CONV_PX];
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) acc[k][q] = VZERO;
    for (int64_t c = 0; c < Cp; c++) {
        VF wv[CONV_OBK];
#pragma GCC unroll 4
        for (int k = 0; k < obk; k++) wv[k] = VLD(u + (c * SO_NCHWC_WINO_G + k) * NB);
        if (pf) /* the next item's U, channel c: WINO_G * b floats */
            for (int l = 0; l < SO_NCHWC_WINO_G * NB; l += 16) __builtin_prefetch(pf + c * SO_NCHWC_WINO_G * NB + l, 0, 2);
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) {
            const VF bc = VSET1(v[q * Cp + c]);
#pragma GCC unroll 4
            for (int k = 0; k < obk; k++) acc[k][q] = VFMA(wv[k], bc, acc[k][q]);
        }
    }
#pragma GCC unroll 4
    for (int k = 0; k < obk; k++)
#pragma GCC unroll 16
        for (int q = 0; q < npx; q++) VST(m + k * mst + q * NB, acc[k][q]);
}

#define WMM_NPX(OBK)                                                                                                                   \
    switch (npx) {                                                                                                                     \
    case 1: wino_mm(v, Cp, u, m, mst, OBK, 1, pf); break;                                                                              \
    case 2: wino_mm(v, Cp, u, m, mst, OBK, 2, pf); break;                                                                              \
    case 3: wino_mm(v, Cp, u, m, mst, OBK, 3, pf); break;                                                                              \
    case 4: wino_mm(v, Cp, u, m, mst, OBK, 4, pf); break;                                                                              \
    case 5: wino_mm(v, Cp, u, m, mst, OBK, 5, pf); break;                                                                              \
    default: wino_mm(v, Cp, u, m, mst, OBK, CONV_PX, pf); break;                                                                       \
    }
static void wino_mm_any(const float *v, int64_t Cp, const float *u, float *m, int64_t mst, int obk, int npx, const float *pf)
{
    switch (obk) {
    case 1: WMM_NPX(1) break;
#if CONV_OBK >= 2
    case 2: WMM_NPX(2) break;
#endif
#if CONV_OBK >= 3
    case 3: WMM_NPX(3) break;
#endif
#if CONV_OBK >= 4
    case 4: WMM_NPX(4) break;
#endif
    default: break;
    }
}
#undef WMM_NPX

/* One chunk of the Winograd conv of one image: tiles [t0, t0 + ntc) of the plane (tw tiles per row), V and M its
   scratch ([P][tc][Cp] and [P][Ob][tc][b], P = (m + 2)^2 positions for tiles of m x m outputs). The three phases by work item, so that a chunk runs on one thread or
   each phase's items are shared by the team. */
typedef struct wino_chunk {
    const so_nchwc_conv *p;
    const float *x, *res; /* the image's */
    float *y, *V, *M;
    int64_t t0, ntc, tc, tw;
    int64_t ob0, ob1; /* the output blocks whose products and output transforms this chunk computes */
    int64_t vq, mq;   /* floats from one position's slice of V / M to the next (so_nchwc_wino_pstride) */
} wino_chunk;

/* F(2x2, 3x3): B^T d for 4 vectors (stride s) into o (stride so), and A^T m for 4 vectors into 2. */
static inline __attribute__((always_inline)) void wino_bt4(const VF *d, int s, VF *o, int so)
{
    const VF d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s];
    o[0] = VSUB(d0, d2), o[so] = VADD(d1, d2), o[2 * so] = VSUB(d2, d1), o[3 * so] = VSUB(d1, d3);
}
static inline __attribute__((always_inline)) void wino_at4(const VF *m, int s, VF *o, int so)
{
    const VF m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s];
    o[0] = VADD(VADD(m0, m1), m2), o[so] = VSUB(VSUB(m1, m2), m3);
}

/* (1) item (tile, input block): the input transform of the tile's (m+2)^2 window (zero outside the input) into V. */
static inline void wino_in(const wino_chunk *k, int64_t it)
{
    const so_nchwc_conv *p = k->p;
    const int64_t Cb = p->Cb, Cp = Cb * NB, H = p->H, W = p->W;
    const int64_t tl = it / Cb, cb = it % Cb, t = k->t0 + tl;
    const int a = (int)p->wm + 2;
    const int64_t iy0 = t / k->tw * p->wm - p->pt, ix0 = t % k->tw * p->wm - p->pl;
    const float *xc = k->x + cb * H * W * NB;
    VF d[36], e[36];
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            const int64_t iy = iy0 + i, ix = ix0 + j;
            d[i * a + j] = iy >= 0 && iy < H && ix >= 0 && ix < W ? VLD(xc + (iy * W + ix) * NB) : VZERO;
        }
    if (a == 6) {
        for (int j = 0; j < 6; j++) wino_bt6(d + j, 6, e + j, 6);         /* columns */
        for (int i = 0; i < 6; i++) wino_bt6(e + i * 6, 1, d + i * 6, 1); /* rows */
    } else {
        for (int j = 0; j < 4; j++) wino_bt4(d + j, 4, e + j, 4);
        for (int i = 0; i < 4; i++) wino_bt4(e + i * 4, 1, d + i * 4, 1);
    }
    for (int q = 0; q < a * a; q++) VST(k->V + q * k->vq + tl * Cp + cb * NB, d[q]);
}

/* Register-tile groups of CONV_OBK output blocks in the chunk's block range. */
static inline int64_t nobg_of(const wino_chunk *k) { return cdiv(k->ob1 - k->ob0, CONV_OBK); }

/* (2) item (position, group of CONV_OBK output blocks): M = V x U over the chunk's tiles. */
static inline void wino_prod(const wino_chunk *k, int64_t it)
{
    const so_nchwc_conv *p = k->p;
    const int64_t Ob = p->Ob, Cp = p->Cb * NB, nobg = cdiv(k->ob1 - k->ob0, CONV_OBK), tc = k->tc, G = SO_NCHWC_WINO_G;
    const int64_t q = it / nobg, ob = k->ob0 + it % nobg * CONV_OBK;
    const int obk = (int)min64(CONV_OBK, k->ob1 - ob);
    const int64_t nG = cdiv(Ob, G), gi = q * nG + ob / G, gsz = Cp * G * NB;
    const float *u = p->wu + gi * gsz + ob % G * NB;
    /* U is read in memory order (position-major, then groups of WINO_G blocks of [ob0, ob1)): the first item of a
       group prefetches the next group's U (to L2) during its first register tile, as the direct conv does (wpf_cursor) */
    const int64_t gn = ob + G < k->ob1 ? gi + 1 : (q + 1) * nG + k->ob0 / G;
    const float *pf = ob % G == 0 && gn < (p->wm + 2) * (p->wm + 2) * nG ? p->wu + gn * gsz : NULL;
    for (int64_t tl = 0; tl < k->ntc;) {
        const int npx = k->ntc - tl >= CONV_PX ? CONV_PX : (int)min64(5, k->ntc - tl); /* CONV_PX or 1..5 */
        wino_mm_any(k->V + q * k->vq + tl * Cp, Cp, u, k->M + q * k->mq + (ob * tc + tl) * NB, tc * NB, obk, npx, tl ? NULL : pf);
        tl += npx;
    }
}

/* (3) item (output block, tile): the output transform A^T M A, the epilogue, the outputs inside the plane stored. Block
   major: consecutive items read the next tile's vector of each slice (the same lines) and write the same block plane. */
static inline void wino_out(const wino_chunk *k, int64_t it)
{
    const so_nchwc_conv *p = k->p;
    const int64_t Ho = p->Ho, Wo = p->Wo, tc = k->tc;
    const int64_t ob = k->ob0 + it / k->ntc, tl = it % k->ntc, t = k->t0 + tl;
    const int64_t wm = p->wm, oy0 = t / k->tw * wm, ox0 = t % k->tw * wm;
    VF m[36], e[24], o[16];
    if (wm == 4) {
        for (int q = 0; q < 36; q++) m[q] = VLD(k->M + q * k->mq + (ob * tc + tl) * NB);
        for (int j = 0; j < 6; j++) wino_at6(m + j, 6, e + j, 6);         /* columns: e [4][6] */
        for (int i = 0; i < 4; i++) wino_at6(e + i * 6, 1, o + i * 4, 1); /* rows: o [4][4] */
    } else {
        for (int q = 0; q < 16; q++) m[q] = VLD(k->M + q * k->mq + (ob * tc + tl) * NB);
        for (int j = 0; j < 4; j++) wino_at4(m + j, 4, e + j, 4);         /* e [2][4] */
        for (int i = 0; i < 2; i++) wino_at4(e + i * 4, 1, o + i * 2, 1); /* o [2][2] */
    }
    const int64_t nr = min64(wm, Ho - oy0), ncol = min64(wm, Wo - ox0);
    for (int64_t i = 0; i < nr; i++) {
        const int64_t off = (ob * Ho + oy0 + i) * Wo * NB + ox0 * NB;
        for (int64_t j = 0; j < ncol; j++) epi_store(p, ob, o[i * wm + j], k->y + off + j * NB, k->res ? k->res + off + j * NB : NULL);
        if (!cheap_epi(p)) epi_tile(p, ob, k->y + off, k->res ? k->res + off : NULL, (int)ncol);
    }
}

/* The Winograd conv F(m x m, 3x3) (p->wu set by so_nchwc_conv_wino, m = p->wm, P = (m+2)^2 positions): per image,
   per chunk of at most p->wtc tiles of m x m outputs, (1) the input transform into V [P][tiles][Cp], channels
   contiguous; (2) per position the product M [P][Ob][tiles][b] = V x U (register tiles of CONV_OBK blocks x CONV_PX
   tiles); (3) the output transform, the epilogue, the stores. Each position's slice of V and of M is padded to an odd
   number of cache lines (so_nchwc_wino_pstride). Threads, three ways:
   - at least 2 chunks per thread: each thread runs whole chunks in its own part of the scratch (no barrier inside
     a chunk; the chunk count rounded up to a multiple of T);
   - else, with at least T groups of SO_NCHWC_WINO_G output blocks (ResNet-50's 28x28 to 7x7 layers at 2 threads):
     the team shares (1) by tiles, then each thread runs (2) and (3) for its own range of output groups, so M never
     crosses cores, each thread reads only its part of U, and a chunk costs one barrier (after (1)) and one before
     the next chunk's (1) overwrites V, instead of three. Measured at 2 threads (process CPU time with
     OMP_WAIT_POLICY=passive, i.e. the work without the barrier waits, 15 paired rounds, load ~16: noisy) against
     the team sharing every phase: 28x28 128 F4 0.91, 14x14 256 F4 1.00 / F2 0.94, 7x7 512 F4 1.02 / F2 0.95; each
     thread redoing (1) for its own groups instead (no barrier at all) was 0.93-1.09 of sharing every phase;
   - else the team shares each phase's items, chunk after chunk.
   scratch: so_nchwc_wino_scratch(p, T) floats. Every output is computed by the same operations whatever T and the
   chunking. */
static void wino_run(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, float *scratch, int T)
{
    const int64_t Cb = p->Cb, Ob = p->Ob, Cp = Cb * NB, H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, G = SO_NCHWC_WINO_G;
    const int64_t P = (p->wm + 2) * (p->wm + 2), tw = cdiv(Wo, p->wm), nt = cdiv(Ho, p->wm) * tw, nG = cdiv(Ob, G);
    T = team(T, N * p->O * Ho * Wo * 9 * p->C);
    int64_t nch = cdiv(nt, p->wtc);
    const int whole = T > 1 && N * nch >= 2 * T, by_groups = T > 1 && !whole && nG >= T;
    while (whole && N * nch % T) nch++;
    const int64_t tc = cdiv(nt, nch), vq = so_nchwc_wino_pstride(tc * Cp), mq = so_nchwc_wino_pstride(tc * Ob * NB); /* tc <= p->wtc */
    const int64_t Vf = P * so_nchwc_wino_pstride(p->wtc * Cp), per = Vf + P * so_nchwc_wino_pstride(p->wtc * Ob * NB);
    if (whole) {
#pragma omp parallel for num_threads(T) schedule(static)
        for (int64_t it = 0; it < N * nch; it++) {
            const int64_t n = it / nch, t0 = it % nch * tc;
            if (t0 >= nt) continue;
            float *V = scratch + (int64_t)omp_get_thread_num() * per;
            const wino_chunk k = {p, x + n * Cb * H * W * NB, res ? res + n * Ob * Ho * Wo * NB : NULL, y + n * Ob * Ho * Wo * NB, V,
                                  V + Vf, t0, min64(tc, nt - t0), tc, tw, 0, Ob, vq, mq};
            for (int64_t i = 0; i < k.ntc * Cb; i++) wino_in(&k, i);
            for (int64_t i = 0; i < P * nobg_of(&k); i++) wino_prod(&k, i);
            for (int64_t i = 0; i < k.ntc * Ob; i++) wino_out(&k, i);
        }
        return;
    }
    if (by_groups) {
#pragma omp parallel num_threads(T)
        {
            const int64_t th = omp_get_thread_num(), g0 = nG * th / T, g1 = nG * (th + 1) / T;
            for (int64_t n = 0; n < N; n++)
                for (int64_t t0 = 0; t0 < nt; t0 += tc) {
                    const wino_chunk k = {p, x + n * Cb * H * W * NB, res ? res + n * Ob * Ho * Wo * NB : NULL, y + n * Ob * Ho * Wo * NB, scratch,
                                          scratch + Vf, t0, min64(tc, nt - t0), tc, tw, g0 * G, min64(Ob, g1 * G), vq, mq};
                    if (n || t0) { /* the previous chunk's products read V */
#pragma omp barrier
                    }
#pragma omp for schedule(static)
                    for (int64_t i = 0; i < k.ntc * Cb; i++) wino_in(&k, i);
                    for (int64_t i = 0; i < P * nobg_of(&k); i++) wino_prod(&k, i);
                    for (int64_t i = 0; i < k.ntc * (k.ob1 - k.ob0); i++) wino_out(&k, i);
                }
        }
        return;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t t0 = 0; t0 < nt; t0 += tc) {
            const wino_chunk k = {p, x + n * Cb * H * W * NB, res ? res + n * Ob * Ho * Wo * NB : NULL, y + n * Ob * Ho * Wo * NB, scratch,
                                  scratch + Vf, t0, min64(tc, nt - t0), tc, tw, 0, Ob, vq, mq};
#pragma omp parallel num_threads(T) if (T > 1)
            {
#pragma omp for schedule(static)
                for (int64_t i = 0; i < k.ntc * Cb; i++) wino_in(&k, i);
#pragma omp for schedule(static)
                for (int64_t i = 0; i < P * nobg_of(&k); i++) wino_prod(&k, i);
#pragma omp for schedule(static)
                for (int64_t i = 0; i < k.ntc * Ob; i++) wino_out(&k, i);
            }
        }
}

/* Pixels per pool tile: the interior output pixels of a row (whole window inside the input) run POOL_PX at a time,
   each with its own accumulators, so the window's dependent adds / maxima of POOL_PX pixels overlap (one pixel at a
   time, a 3x3 window was a chain of 9 adds or maxima: latency-bound on any core; Inception-v3's pools ran at
   0.6-0.8x ONNX Runtime's on a Xeon model 207, session 14). Each pixel takes its taps in the one-pixel order, so the
   bits are those of the one-pixel path. POOL_PX max-pool pixels keep 2 POOL_PX registers (maximum, NaN lanes). */
#define POOL_PX (NB == 16 ? 8 : 4)

/* Average of npx interior pixels of one output row, the first at input column w0, the next sxw floats on: rows
   [h0, h1) x kw columns each, summed in the one-pixel order (rows, then columns), times scale; lanes masked by m. */
static inline __attribute__((always_inline)) void avg_tile(const float *xi, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t kw,
                                                           int64_t sxw, VF scale, VF m, float *yr, const int npx)
{
    VF s[POOL_PX];
#pragma GCC unroll 8
    for (int q = 0; q < npx; q++) s[q] = VZERO;
    for (int64_t ih = h0; ih < h1; ih++) {
        const float *xr = xi + (ih * W + w0) * NB;
        for (int64_t j = 0; j < kw; j++)
#pragma GCC unroll 8
            for (int q = 0; q < npx; q++) s[q] = VADD(s[q], VLD(xr + j * NB + q * sxw));
    }
#pragma GCC unroll 8
    for (int q = 0; q < npx; q++) VST(yr + q * NB, VAND(VMUL(s[q], scale), m));
}

/* Maximum of npx interior pixels of one output row: tap rows [i0, i1) (input row ih0 + i * dh), all kw columns
   (dilation dwb floats apart) from input column iw0, pixels sxw floats apart; max_scan's order and NaN rule per pixel. */
static inline __attribute__((always_inline)) void max_tile(const float *xi, int64_t W, int64_t ih0, int64_t dh, int64_t i0, int64_t i1,
                                                           int64_t iw0, int64_t kw, int64_t dwb, int64_t sxw, VF m, float *yr, const int npx)
{
    VF mx[POOL_PX], nan[POOL_PX];
#pragma GCC unroll 8
    for (int q = 0; q < npx; q++) mx[q] = VSET1(-INFINITY), nan[q] = VZERO;
    for (int64_t i = i0; i < i1; i++) {
        const float *xr = xi + ((ih0 + i * dh) * W + iw0) * NB;
        int64_t j = 0;
        for (; j + 1 < kw; j += 2)
#pragma GCC unroll 8
            for (int q = 0; q < npx; q++) {
                const VF a = VLD(xr + j * dwb + q * sxw), b = VLD(xr + (j + 1) * dwb + q * sxw);
                mx[q] = VMAX(b, VMAX(a, mx[q]));
                nan[q] = VORNAN(nan[q], a, b);
            }
        if (j < kw)
#pragma GCC unroll 8
            for (int q = 0; q < npx; q++) {
                const VF a = VLD(xr + j * dwb + q * sxw);
                mx[q] = VMAX(a, mx[q]);
                nan[q] = VORNAN(nan[q], a, a);
            }
    }
#pragma GCC unroll 8
    for (int q = 0; q < npx; q++) VST(yr + q * NB, VAND(VOR(mx[q], nan[q]), m));
}

static void pool_run(const so_nchwc_pool *p, int64_t N, const float *x, float *y, int T)
{
    const int64_t Cb = cdiv(p->C, NB), HWb = p->H * p->W * NB, OHWb = p->Ho * p->Wo * NB, rows = N * Cb * p->Ho;
    T = team(T, rows * p->Wo * NB * p->kh * p->kw);
    /* output columns [owL, owR) whose window lies inside the input's columns (average: no dilation) */
    int64_t owL, owR;
    interior_cols(p->Wo, p->sw, p->pl, p->kw, p->is_max ? p->dw : 1, p->W, &owL, &owR);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t oh = r % p->Ho, nc = r / p->Ho, cb = nc % Cb;
        const float *xi = x + nc * HWb;
        float *yr = y + nc * OHWb + oh * p->Wo * NB;
        const VF m = lane_mask(p->C, cb);
        for (int64_t ow = 0; ow < p->Wo;) {
            if (ow >= owL && ow + 1 < owR) { /* interior tiles of POOL_PX, then halves / quarters, at least 2 pixels */
                const int64_t n = owR - ow, iw0 = ow * p->sw - p->pl, sxw = p->sw * NB;
                const int npx = n >= POOL_PX ? POOL_PX : n >= POOL_PX / 2 ? POOL_PX / 2 : n >= POOL_PX / 4 && POOL_PX / 4 > 1 ? POOL_PX / 4 : 1;
                if (npx > 1) {
                    if (p->is_max) {
                        const int64_t ih0 = oh * p->sh - p->pt;
                        int64_t i0, i1;
                        tap_range(ih0, p->dh, p->kh, p->H, &i0, &i1);
                        if (npx == POOL_PX) max_tile(xi, p->W, ih0, p->dh, i0, i1, iw0, p->kw, p->dw * NB, sxw, m, yr + ow * NB, POOL_PX);
                        else if (npx == POOL_PX / 2) max_tile(xi, p->W, ih0, p->dh, i0, i1, iw0, p->kw, p->dw * NB, sxw, m, yr + ow * NB, POOL_PX / 2);
                        else max_tile(xi, p->W, ih0, p->dh, i0, i1, iw0, p->kw, p->dw * NB, sxw, m, yr + ow * NB, POOL_PX / 4);
                    } else { /* as the one-pixel path below: the window clipped to the padded input, then to the input */
                        int64_t h0 = oh * p->sh - p->pt, h1 = min64(h0 + p->kh, p->H + p->pb);
                        const int64_t padded = (h1 - h0) * p->kw;
                        h0 = max64(h0, 0), h1 = min64(h1, p->H);
                        const int64_t cnt = p->count_include_pad ? padded : (h1 - h0) * p->kw;
                        const VF sc = VSET1(cnt > 0 ? (float)(1.0 / (double)cnt) : 0.0f);
                        if (npx == POOL_PX) avg_tile(xi, p->W, h0, h1, iw0, p->kw, sxw, sc, m, yr + ow * NB, POOL_PX);
                        else if (npx == POOL_PX / 2) avg_tile(xi, p->W, h0, h1, iw0, p->kw, sxw, sc, m, yr + ow * NB, POOL_PX / 2);
                        else avg_tile(xi, p->W, h0, h1, iw0, p->kw, sxw, sc, m, yr + ow * NB, POOL_PX / 4);
                    }
                    ow += npx;
                    continue;
                }
            }
            VF v;
            if (p->is_max) {
                VF mx = VSET1(-INFINITY), nan = VZERO;
                const int64_t ih0 = oh * p->sh - p->pt, iw0 = ow * p->sw - p->pl;
                int64_t i0, i1, j0, j1;
                tap_range(ih0, p->dh, p->kh, p->H, &i0, &i1);
                tap_range(iw0, p->dw, p->kw, p->W, &j0, &j1);
                for (int64_t i = i0; i < i1; i++) max_scan(&mx, &nan, xi + ((ih0 + i * p->dh) * p->W + iw0) * NB, j0, j1, p->dw * NB);
                v = VOR(mx, nan); /* a NaN anywhere in the window makes the output NaN (all-ones bits) */
            } else { /* the reference's window: clipped to the padded input, then to the input */
                int64_t h0 = oh * p->sh - p->pt, w0 = ow * p->sw - p->pl;
                int64_t h1 = min64(h0 + p->kh, p->H + p->pb), w1 = min64(w0 + p->kw, p->W + p->pr);
                const int64_t padded = (h1 - h0) * (w1 - w0);
                h0 = max64(h0, 0), w0 = max64(w0, 0), h1 = min64(h1, p->H), w1 = min64(w1, p->W);
                VF s = VZERO;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) s = VADD(s, VLD(xi + (ih * p->W + iw) * NB));
                const int64_t cnt = p->count_include_pad ? padded : (h1 - h0) * (w1 - w0);
                v = cnt > 0 ? VMUL(s, VSET1((float)(1.0 / (double)cnt))) : VZERO;
            }
            VST(yr + ow * NB, VAND(v, m));
            ow++;
        }
    }
}

static void global_pool(int is_max, int64_t N, int64_t C, int64_t HW, const float *x, float *y, int T)
{
    const int64_t Cb = cdiv(C, NB);
    T = team(T, N * C * HW);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t nc = 0; nc < N * Cb; nc++) {
        const float *xb = x + nc * HW * NB;
        VF v;
        if (is_max) {
            VF mx = VSET1(-INFINITY), nan = VZERO;
            max_scan(&mx, &nan, xb, 0, HW, NB);
            v = VOR(mx, nan);
        } else {
            VF s0 = VZERO, s1 = VZERO, s2 = VZERO, s3 = VZERO;
            int64_t q = 0;
            for (; q + 4 <= HW; q += 4) {
                s0 = VADD(s0, VLD(xb + q * NB));
                s1 = VADD(s1, VLD(xb + (q + 1) * NB));
                s2 = VADD(s2, VLD(xb + (q + 2) * NB));
                s3 = VADD(s3, VLD(xb + (q + 3) * NB));
            }
            for (; q < HW; q++) s0 = VADD(s0, VLD(xb + q * NB));
            v = VMUL(VADD(VADD(s0, s1), VADD(s2, s3)), VSET1((float)(1.0 / (double)HW)));
        }
        VST(y + nc * NB, VAND(v, lane_mask(C, nc % Cb)));
    }
}

/* ---------------- element-wise ---------------- */

static void unary_run(const so_nchwc_unary *u, int64_t N, int64_t C, int64_t HW, const float *x, float *y, int T)
{
    const int64_t Cb = cdiv(C, NB);
    T = team(T, N * C * HW);
    const VF lo = VSET1(u->lo), hi = VSET1(u->hi), neg1 = VSET1(-1.0f);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t nc = 0; nc < N * Cb; nc++) {
        const float *xb = x + nc * HW * NB;
        float *yb = y + nc * HW * NB;
        const VF m = lane_mask(C, nc % Cb);
        if (u->op == SO_OP_RELU || u->op == SO_OP_CLIP || u->op == SO_OP_NEG) {
            for (int64_t q = 0; q < HW; q++) {
                const VF a = VLD(xb + q * NB);
                const VF v = u->op == SO_OP_RELU ? VMAX(VZERO, a) : u->op == SO_OP_CLIP ? VMIN(hi, VMAX(lo, a)) : VMUL(a, neg1);
                VST(yb + q * NB, VAND(v, m)); /* clip(0) may be non-zero, -0 is not +0 */
            }
        } else {
            for (int64_t k = 0; k < HW * NB; k++) yb[k] = so_nchwc_unary1(u, xb[k]);
            for (int64_t q = 0; q < HW; q++) VST(yb + q * NB, VAND(VLD(yb + q * NB), m));
        }
    }
}

static inline VF bin_v(int op, VF a, VF b)
{
    switch (op) {
    case SO_OP_SUB: return VSUB(a, b);
    case SO_OP_MUL: return VMUL(a, b);
    case SO_OP_DIV: return VDIV(a, b);
    default: return VADD(a, b);
    }
}

/* binary_run's loop over the HW pixels of one block at constant op, act and operand form (bb: the second operand's
   block, else the vector b1 for every pixel): inlined per combination, a straight-line body (with the op and act
   switches inside, the loop ran 4-5 branches per vector, ~14 instructions; EfficientNet's squeeze-excite Mul). */
static inline __attribute__((always_inline)) void bin_loop(int op, int act, int same, const float *ab, const float *bb, VF b1, VF m,
                                                           float *yb, int64_t HW)
{
#pragma GCC unroll 4
    for (int64_t q = 0; q < HW; q++) {
        VF v = bin_v(op, VLD(ab + q * NB), same ? VLD(bb + q * NB) : b1);
        if (act == SO_ACT_RELU) v = VMAX(VZERO, v);
        VST(yb + q * NB, VAND(v, m));
    }
}

static void binary_run(int op, int bcast, int act, int64_t N, int64_t C, int64_t HW, const float *a, const float *bv, float *y, int T)
{
    const int64_t Cb = cdiv(C, NB);
    T = team(T, N * C * HW);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t nc = 0; nc < N * Cb; nc++) {
        const int64_t cb = nc % Cb;
        const float *ab = a + nc * HW * NB;
        float *yb = y + nc * HW * NB;
        const VF m = lane_mask(C, cb);
        VF b1 = VZERO;
        if (bcast == SO_NCHWC_SCALAR)
            b1 = VSET1(bv[0]);
        else if (bcast == SO_NCHWC_CHANNEL) {
            float t[NB] = {0};
            for (int64_t l = 0; l < min64(NB, C - cb * NB); l++) t[l] = bv[cb * NB + l];
            b1 = VLD(t);
        }
        const int same = bcast == SO_NCHWC_SAME;
        const float *bb = same ? bv + nc * HW * NB : NULL;
        if (op == SO_OP_MUL && act == SO_ACT_NONE && !same) bin_loop(SO_OP_MUL, SO_ACT_NONE, 0, ab, bb, b1, m, yb, HW);
        else if (op == SO_OP_ADD && act == SO_ACT_NONE && same) bin_loop(SO_OP_ADD, SO_ACT_NONE, 1, ab, bb, b1, m, yb, HW);
        else if (op == SO_OP_ADD && act == SO_ACT_RELU && same) bin_loop(SO_OP_ADD, SO_ACT_RELU, 1, ab, bb, b1, m, yb, HW);
        else if (op == SO_OP_MUL && act == SO_ACT_NONE && same) bin_loop(SO_OP_MUL, SO_ACT_NONE, 1, ab, bb, b1, m, yb, HW);
        else bin_loop(op, act, same, ab, bb, b1, m, yb, HW);
    }
}

static void concat_run(int n_in, const int64_t *Cs, int64_t N, int64_t HW, const float *const *x, float *y, int T)
{
    int64_t C = 0;
    int aligned = 1;
    for (int i = 0; i < n_in; i++) {
        if (i < n_in - 1 && Cs[i] % NB) aligned = 0;
        C += Cs[i];
    }
    const int64_t Cb = cdiv(C, NB);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t n = 0; n < N; n++) {
        float *yi = y + n * Cb * HW * NB;
        int64_t off = 0;
        for (int i = 0; i < n_in; i++) {
            const int64_t cbi = cdiv(Cs[i], NB);
            const float *xi = x[i] + n * cbi * HW * NB;
            if (aligned) /* whole blocks (only the last input has padding lanes, and they land in the output's) */
                memcpy(yi + off / NB * HW * NB, xi, sizeof(float) * (size_t)(cbi * HW * NB));
            else
                for (int64_t c = 0; c < Cs[i]; c++) {
                    const int64_t co = off + c;
                    const float *xs = xi + (c / NB) * HW * NB + c % NB;
                    float *yd = yi + (co / NB) * HW * NB + co % NB;
                    for (int64_t q = 0; q < HW; q++) yd[q * NB] = xs[q * NB];
                }
            off += Cs[i];
        }
        if (!aligned && C % NB) {
            float *yl = yi + (Cb - 1) * HW * NB;
            for (int64_t q = 0; q < HW; q++)
                for (int64_t l = C % NB; l < NB; l++) yl[q * NB + l] = 0.0f;
        }
    }
}

/* concat_run of whole blocks fused with y = act(x*scale + shift) per lane (act: Relu or none); work items are
   (image, output block) pairs. */
static void concat_ssa_run(int n_in, const int64_t *Cs, int64_t N, int64_t HW, const float *const *x, const float *scale,
                           const float *shift, int relu, float *y, int T)
{
    int64_t C = 0;
    for (int i = 0; i < n_in; i++) C += Cs[i];
    const int64_t Cb = cdiv(C, NB), items = N * Cb;
    T = team(T, items * HW * NB);
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
    for (int64_t it = 0; it < items; it++) {
        const int64_t n = it / Cb, cb = it % Cb;
        int i = 0;
        int64_t b0 = 0; /* first output block of input i */
        while (i + 1 < n_in && cb >= b0 + Cs[i] / NB) b0 += Cs[i] / NB, i++;
        const int64_t cbi = cdiv(Cs[i], NB);
        const float *xs = x[i] + (n * cbi + cb - b0) * HW * NB;
        float *yd = y + (n * Cb + cb) * HW * NB;
        const VF sv = VLD(scale + cb * NB), tv = VLD(shift + cb * NB), z = VZERO;
        for (int64_t q = 0; q < HW; q++) {
            const VF v = VFMA(VLD(xs + q * NB), sv, tv);
            VST(yd + q * NB, relu ? VMAX(z, v) : v); /* NaN stays NaN, as the blocked Relu */
        }
    }
}

const so_nchwc_impl NCHWC_TABLE = {
    .b = NB,
    .isa = NCHWC_ISA,
    .to_blocked = to_blocked,
    .from_blocked = from_blocked,
    .to_nhwc = to_nhwc,
    .from_nhwc = from_nhwc,
    .conv = conv_run,
    .conv_pad = convp_run,
    .stem = stem_run,
    .stem_pool = stem_pool_run,
    .stem_dw = stem_dw_run,
    .wino = wino_run,
    .pool = pool_run,
    .global_pool = global_pool,
    .unary = unary_run,
    .binary = binary_run,
    .concat = concat_run,
    .concat_ssa = concat_ssa_run,
};
