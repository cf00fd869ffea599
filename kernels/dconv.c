/* dconv.c - direct convolution for ungrouped convs with kernels larger than 1x1: a GEMM over the implicit im2col of a zero-padded image (6 pixels x 16 output channels in registers) with weights packed once at load. */
#include "kset_names.h"

#include "dconv.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "../src/common.h"
#include "kpriv.h"
#include "sgemm.h"
#include "vmath.h"

#define DC_PAR_MIN 32768 /* multiply-adds below which the run stays on one thread */
/* Block sizes (measured in isolation, 1 thread, best of 4 interleaved rounds: K blocks of 128-512 and pixel
   blocks of 48-144 all reach 80-92 GFLOP/s on Inception-v3's shapes; the machine's noise hides finer differences) */
#define DC_KC 256 /* k steps per K block: a [256][16] weight micro-panel is 16 KB (L1 32 KB) */
#define DC_PB 160 /* output pixels per work item at most (equal blocks of whole 6-pixel tiles); vs 96: in-model 1 thread,
                     10 alternating runs, summed node medians of the dconv convs Inception-v3 0.94x, ResNet-50 0.99x (fewer
                     passes over cold weights); a 128 KB partial-sum bound as well: Inception-v3 0.94x, ResNet-50 1.06x */
/* Output pixels per register tile: AVX-512 12 (one zmm of 16 channels each: 12 accumulators, per k step
   one weight load and 12 broadcast FMAs), otherwise 6 (two ymm each: 12 accumulators). */
#ifdef __AVX512F__
#define DC_TP 12
#else
#define DC_TP 6
#endif
#define DC_TB 12288 /* floats of partial sums per work item at most: [og][pb][16] (48 KB, L2) */

/* Whether a tap at offset off (= tap index * dilation - pad) reads an input row/column in [0, len) for some of
   the n outputs at stride s. */
static int tap_reads_input(int64_t off, int64_t s, int64_t n, int64_t len)
{
    int64_t o0 = off >= 0 ? 0 : (-off + s - 1) / s; /* first output whose position is >= 0 */
    return o0 < n && o0 * s + off < len;
}

int64_t so_dconv_plan(so_dconv *d, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw, int64_t sh,
                      int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, const float *w, int threads)
{
    memset(d, 0, sizeof *d);
    d->C = C, d->H = H, d->W = W, d->O = O, d->Ho = Ho, d->Wo = Wo, d->kh = kh, d->kw = kw;
    d->sh = sh, d->sw = sw, d->dh = dh, d->dw = dw;
    /* taps that read only zero padding for every output pixel are left out of K (large dilations on small
       planes, e.g. DeepLabV3's ASPP rates 12-36 on 28x28: rate 36 keeps only the centre tap) */
    int tap[SO_DCONV_MAX_TAPS], ntap = 0;
    for (int64_t i = 0; i < kh; i++)
        for (int64_t j = 0; j < kw; j++)
            if (tap_reads_input(i * dh - pt, sh, Ho, H) && tap_reads_input(j * dw - pl, sw, Wo, W)) tap[ntap++] = (int)(i * kw + j);
    if (ntap == 0) /* every tap in the padding: keep them all (the output is the epilogue of zeros) */
        for (int64_t t = 0; t < kh * kw; t++) tap[ntap++] = (int)t;
    d->K = C * ntap;
    /* the padded image only needs the rows/columns the kept taps read: tap row i reads input row
       oh*sh + i*dh - pt; with i0..i1 the kept tap rows, pad the top by what the first one reaches above
       the input and shift the rest (er) down; likewise for columns */
    int64_t i0 = kh, i1 = -1, j0 = kw, j1 = -1;
    for (int t = 0; t < ntap; t++) {
        i0 = SO_MIN(i0, tap[t] / kw), i1 = SO_MAX(i1, tap[t] / kw);
        j0 = SO_MIN(j0, tap[t] % kw), j1 = SO_MAX(j1, tap[t] % kw);
    }
    int64_t r0 = i0 * dh - pt, c0 = j0 * dw - pl;
    d->pt = r0 < 0 ? -r0 : 0, d->pl = c0 < 0 ? -c0 : 0;
    int64_t er = r0 + d->pt, ec = c0 + d->pl; /* >= 0 */
    d->Hp = SO_MAX(H + d->pt, (Ho - 1) * sh + (i1 - i0) * dh + er + 1);
    d->Wp = SO_MAX(W + d->pl, (Wo - 1) * sw + (j1 - j0) * dw + ec + 1);
    int64_t nkb = (d->K + DC_KC - 1) / DC_KC;
    d->kc = (d->K + nkb - 1) / nkb; /* equal K blocks */
    d->nob = (O + 15) / 16;
    int64_t npb = (Ho * Wo + DC_PB - 1) / DC_PB;
    d->pb = ((Ho * Wo + npb - 1) / npb + DC_TP - 1) / DC_TP * DC_TP; /* equal blocks, whole tiles */
    d->T = threads < 1 ? 1 : threads;
    /* groups of og channel blocks; with several threads at least 4 work items per thread where the
       channel blocks allow (small planes: one pixel block) */
    int64_t og = SO_MAX(1, SO_MIN(d->nob, DC_TB / (d->pb * 16))), nog = (d->nob + og - 1) / og;
    if (d->T > 1) nog = SO_MAX(nog, SO_MIN(d->nob, (4 * d->T + npb - 1) / npb));
    d->og = (d->nob + nog - 1) / nog; /* equal groups */
    size_t wb = (so_dconv_packed_bytes(d) + 63) / 64 * 64;
    d->wp = aligned_alloc(64, wb); /* aligned vector loads */
    if (!d->wp) return -1; /* the caller picks another kernel */
    memset(d->wp, 0, wb);
    const int64_t T = kh * kw;
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++)
            for (int t = 0; t < ntap; t++) d->wp[((o / 16) * d->K + c * ntap + t) * 16 + o % 16] = w[(o * C + c) * T + tap[t]];
    d->koff = so_xmalloc(sizeof *d->koff * (size_t)d->K);
    for (int64_t c = 0; c < C; c++)
        for (int t = 0; t < ntap; t++)
            d->koff[c * ntap + t] = (int32_t)(c * d->Hp * d->Wp + ((tap[t] / kw - i0) * dh + er) * d->Wp + (tap[t] % kw - j0) * dw + ec);
    d->poff = so_xmalloc(sizeof *d->poff * (size_t)(Ho * Wo));
    for (int64_t q = 0; q < Ho * Wo; q++) d->poff[q] = (int32_t)(q / Wo * sh * d->Wp + q % Wo * sw);
    return (C * d->Hp * d->Wp + 15) / 16 * 16 + (int64_t)d->T * d->og * d->pb * 16;
}

size_t so_dconv_packed_bytes(const so_dconv *d) { return sizeof(float) * (size_t)(d->nob * 16 * d->K); }

void so_dconv_free(so_dconv *d)
{
    free(d->wp);
    free(d->koff);
    free(d->poff);
    d->wp = NULL;
    d->koff = d->poff = NULL;
}

void so_dconv_pad_plane(const float *x, int64_t H, int64_t W, float *xp, int64_t Hp, int64_t Wp, int64_t pt, int64_t pl)
{
    for (int64_t r = 0; r < Hp; r++) {
        float *d = xp + r * Wp;
        int64_t ir = r - pt;
        if (ir < 0 || ir >= H) {
            memset(d, 0, sizeof *d * (size_t)Wp);
            continue;
        }
        int64_t c0 = SO_MIN(pl, Wp), c1 = SO_MIN(Wp, pl + W);
        for (int64_t c = 0; c < c0; c++) d[c] = 0.f;
        if (c1 > c0) memcpy(d + c0, x + ir * W + (c0 - pl), sizeof *d * (size_t)(c1 - c0));
        for (int64_t c = c1 > c0 ? c1 : c0; c < Wp; c++) d[c] = 0.f;
    }
}

/* One tile: NP pixels (window corners b[0..NP)) x 16 output channels over kn k steps (offsets
   koff, weights w [kn][16]); t [NP][16] holds the partial sums (first: starts from zero). Per k
   step (AVX2) two weight loads, NP broadcasts, 2*NP FMAs (NP = 6: 12 accumulators); AVX-512 one
   weight load and NP embedded-broadcast FMAs (NP = 12: 12 accumulators). */
#ifdef __AVX512F__
static inline __attribute__((always_inline)) void tile_x16(int NP, const float *const *b, const int32_t *koff, int64_t kn,
                                                          const float *w, float *t, int first)
{
    __m512 c[DC_TP];
    const float *bp[DC_TP];
#pragma GCC unroll 12
    for (int u = 0; u < NP; u++) {
        bp[u] = b[u];
        c[u] = first ? _mm512_setzero_ps() : _mm512_load_ps(t + 16 * u);
    }
    for (int64_t k = 0; k < kn; k++) {
        __m512 w0 = _mm512_load_ps(w + 16 * k);
        __asm__("" : "+v"(w0)); /* in a register, as in the AVX2 kernel */
        const int64_t o = koff[k];
#pragma GCC unroll 12
        for (int u = 0; u < NP; u++) c[u] = _mm512_fmadd_ps(_mm512_set1_ps(bp[u][o]), w0, c[u]);
    }
#pragma GCC unroll 12
    for (int u = 0; u < NP; u++) _mm512_store_ps(t + 16 * u, c[u]);
}

#elif defined(__AVX2__)
static inline __attribute__((always_inline)) void tile_x16(int NP, const float *const *b, const int32_t *koff, int64_t kn,
                                                          const float *w, float *t, int first)
{
    __m256 c[6][2];
    const float *bp[6];
#pragma GCC unroll 6
    for (int u = 0; u < NP; u++) {
        bp[u] = b[u];
        c[u][0] = first ? _mm256_setzero_ps() : _mm256_load_ps(t + 16 * u);
        c[u][1] = first ? _mm256_setzero_ps() : _mm256_load_ps(t + 16 * u + 8);
    }
    for (int64_t k = 0; k < kn; k++) {
        __m256 w0 = _mm256_load_ps(w + 16 * k), w1 = _mm256_load_ps(w + 16 * k + 8);
        __asm__("" : "+x"(w0), "+x"(w1)); /* in registers: GCC folded them into every FMA of the small tiles */
        const int64_t o = koff[k];
#pragma GCC unroll 6
        for (int u = 0; u < NP; u++) {
            __m256 a = _mm256_broadcast_ss(bp[u] + o);
            c[u][0] = _mm256_fmadd_ps(a, w0, c[u][0]);
            c[u][1] = _mm256_fmadd_ps(a, w1, c[u][1]);
        }
    }
#pragma GCC unroll 6
    for (int u = 0; u < NP; u++) {
        _mm256_store_ps(t + 16 * u, c[u][0]);
        _mm256_store_ps(t + 16 * u + 8, c[u][1]);
    }
}

#else
static inline void tile_x16(int NP, const float *const *b, const int32_t *koff, int64_t kn, const float *w, float *t, int first)
{
    if (first) memset(t, 0, sizeof(float) * 16 * (size_t)NP);
    for (int64_t k = 0; k < kn; k++)
        for (int j = 0; j < NP; j++) {
            float a = b[j][koff[k]];
            for (int l = 0; l < 16; l++) t[j * 16 + l] += a * w[16 * k + l];
        }
}
#endif

/* Pixels [p0, p0 + np) x output channels [o0, o0 + no) from the pixel-major partial sums
   t [np][16] into y (NCHW, hw apart), then the epilogue on each row. */
static void store_block(const float *t, int64_t np, int64_t o0, int64_t no, float *y, int64_t hw, int64_t p0, const so_epi *ep,
                        const float *res)
{
    int64_t j0 = 0;
#ifdef __AVX2__
    if (no == 16)
        for (; j0 + 8 <= np; j0 += 8)
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
                for (int k = 0; k < 8; k++) r[k] = _mm256_load_ps(t + (j0 + k) * 16 + 8 * h);
                so_tr8x8(r);
                for (int c = 0; c < 8; c++) _mm256_storeu_ps(y + (o0 + 8 * h + c) * hw + p0 + j0, r[c]);
            }
#endif
    for (int64_t l = 0; l < no; l++)
        for (int64_t j = j0; j < np; j++) y[(o0 + l) * hw + p0 + j] = t[j * 16 + l];
    if (!ep->scale && !ep->shift && !ep->act1 && !res) return;
    for (int64_t l = 0; l < no; l++)
        so_epi_row(ep, o0 + l, y + (o0 + l) * hw + p0, res ? res + (o0 + l) * hw + p0 : NULL, np);
}

/* so_dconv_run's work for each thread of the team (orphaned worksharing loops, kpriv.h) */
static void dconv_team(const so_dconv *d, const float *x, float *y, const so_epi *ep, const float *res, float *scratch)
{
    const int64_t hw = d->Ho * d->Wo, npb = (hw + d->pb - 1) / d->pb, plane = d->Hp * d->Wp, K = d->K;
    float *xp = scratch;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < d->C; c++) so_dconv_pad_plane(x + c * d->H * d->W, d->H, d->W, xp + c * plane, d->Hp, d->Wp, d->pt, d->pl);
    float *tb = scratch + (d->C * plane + 15) / 16 * 16; /* 64-byte aligned: scratch is */
    /* work items: (pixel block, group of og channel blocks); inside, K blocks outer so the input
       window of a K block is reused by all channel blocks of the group, partial sums in t [og][pb][16] */
    const int64_t nog = (d->nob + d->og - 1) / d->og;
#pragma omp for schedule(static) nowait
    for (int64_t q = 0; q < npb * nog; q++) {
        float *t = tb + (int64_t)omp_get_thread_num() * d->og * d->pb * 16;
        const int64_t pbi = q / nog, ob0 = q % nog * d->og, ob1 = SO_MIN(d->nob, ob0 + d->og), p0 = pbi * d->pb,
                      np = SO_MIN(d->pb, hw - p0);
        for (int64_t k0 = 0; k0 < K; k0 += d->kc) {
            const int64_t kn = SO_MIN(d->kc, K - k0);
            for (int64_t ob = ob0; ob < ob1; ob++) {
                const float *w = d->wp + (ob * K + k0) * 16;
                float *tob = t + (ob - ob0) * d->pb * 16;
                for (int64_t j = 0; j < np; j += DC_TP) {
                    const float *b[DC_TP];
                    for (int u = 0; u < DC_TP; u++) b[u] = xp + d->poff[p0 + SO_MIN(j + u, np - 1)]; /* past the end: repeat the last pixel */
                    /* a last tile of at most a third / two thirds of DC_TP pixels on the smaller variants */
                    if (np - j > DC_TP * 2 / 3)
                        tile_x16(DC_TP, b, d->koff + k0, kn, w, tob + j * 16, k0 == 0);
                    else if (np - j > DC_TP / 3)
                        tile_x16(DC_TP * 2 / 3, b, d->koff + k0, kn, w, tob + j * 16, k0 == 0);
                    else
                        tile_x16(DC_TP / 3, b, d->koff + k0, kn, w, tob + j * 16, k0 == 0);
                }
            }
        }
        for (int64_t ob = ob0; ob < ob1; ob++)
            store_block(t + (ob - ob0) * d->pb * 16, np, ob * 16, SO_MIN(16, d->O - ob * 16), y, hw, p0, ep, res);
    }
}

void so_dconv_run(const so_dconv *d, const float *x, float *y, const so_epi *ep, const float *res, float *scratch)
{
    const int nt = SO_MIN(d->T, omp_get_max_threads()); /* the scratch holds d->T threads' partial sums */
    SO_PAR_RUN(d->O * d->Ho * d->Wo * d->K > DC_PAR_MIN, num_threads(nt), dconv_team(d, x, y, ep, res, scratch));
}
