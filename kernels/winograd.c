/* winograd.c - Winograd F(4x4, 3x3) (Lavin & Gray): input tiles 6x6 -> V [36][C][tiles], 36 sgemms with the pre-transformed weights U [36][O][C], output transform to 4x4 tiles. */
#include "kset_names.h"

#include "winograd.h"

#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "../src/common.h"
#include "sgemm.h"

#define WINO_PAR_MIN 16384

/* B^T d for one column/row of 6 values (stride s). */
static inline void bt6(const float *d, int s, float *o, int so)
{
    float d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    o[0] = 4.f * d0 - 5.f * d2 + d4;
    o[so] = -4.f * d1 - 4.f * d2 + d3 + d4;
    o[2 * so] = 4.f * d1 - 4.f * d2 - d3 + d4;
    o[3 * so] = -2.f * d1 - d2 + 2.f * d3 + d4;
    o[4 * so] = 2.f * d1 - d2 - 2.f * d3 + d4;
    o[5 * so] = 4.f * d1 - 5.f * d3 + d5;
}

/* A^T m for 6 values (stride s) -> 4 values (stride so). */
static inline void at6(const float *m, int s, float *o, int so)
{
    float m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
    float a = m1 + m2, b = m1 - m2, c = m3 + m4, d = m3 - m4;
    o[0] = m0 + a + c;
    o[so] = b + 2.f * d;
    o[2 * so] = a + 4.f * c;
    o[3 * so] = b + 8.f * d + m5;
}

float *so_wino_pack(const float *w, int64_t O, int64_t C)
{
    float *U = so_xmalloc(sizeof *U * (size_t)(45 * O * C));
    memcpy(U + 36 * O * C, w, sizeof *U * (size_t)(9 * O * C));
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (o * C + c) * 9;
            double t[6][3], u[6][6];
            for (int j = 0; j < 3; j++) { /* G g (columns) */
                double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
                t[0][j] = g0 / 4;
                t[1][j] = -(g0 + g1 + g2) / 6;
                t[2][j] = -(g0 - g1 + g2) / 6;
                t[3][j] = g0 / 24 + g1 / 12 + g2 / 6;
                t[4][j] = g0 / 24 - g1 / 12 + g2 / 6;
                t[5][j] = g2;
            }
            for (int i = 0; i < 6; i++) { /* (G g) G^T (rows) */
                double g0 = t[i][0], g1 = t[i][1], g2 = t[i][2];
                u[i][0] = g0 / 4;
                u[i][1] = -(g0 + g1 + g2) / 6;
                u[i][2] = -(g0 - g1 + g2) / 6;
                u[i][3] = g0 / 24 + g1 / 12 + g2 / 6;
                u[i][4] = g0 / 24 - g1 / 12 + g2 / 6;
                u[i][5] = g2;
            }
            for (int xi = 0; xi < 36; xi++) U[(xi * O + o) * C + c] = (float)u[xi / 6][xi % 6];
        }
    return U;
}

int64_t so_wino_plan(so_wino *p, int64_t C, int64_t O, int64_t H, int64_t W, int64_t Ho, int64_t Wo, int64_t pt, int64_t pl,
                     const float *U)
{
    p->C = C;
    p->O = O;
    p->H = H;
    p->W = W;
    p->Ho = Ho;
    p->Wo = Wo;
    p->pt = pt;
    p->pl = pl;
    p->U = U;
    p->th = (Ho + 3) / 4;
    p->tw = (Wo + 3) / 4;
    p->T = p->th * p->tw;
    int64_t tb = ((int64_t)1 << 20) / (36 * (C + O));
    if (tb < 16) tb = 16;
    if (tb > p->T) tb = p->T;
    p->tb = tb;
    return 36 * (C + O) * tb;
}

/* Output tile (oy, ox) [nr][nc] of channel o by direct convolution (the non-finite case). */
static void direct_tile(const so_wino *p, const float *x, int64_t o, int64_t oy, int64_t ox, int64_t nr, int64_t nc, float *yo)
{
    const float *w = p->U + 36 * p->O * p->C + o * p->C * 9;
    for (int64_t i = 0; i < nr; i++)
        for (int64_t j = 0; j < nc; j++) {
            double acc = 0.0;
            for (int64_t c = 0; c < p->C; c++)
                for (int kh = 0; kh < 3; kh++) {
                    int64_t r = oy + i - p->pt + kh;
                    if (r < 0 || r >= p->H) continue;
                    for (int kw = 0; kw < 3; kw++) {
                        int64_t cc = ox + j - p->pl + kw;
                        if (cc >= 0 && cc < p->W) acc += (double)x[(c * p->H + r) * p->W + cc] * w[c * 9 + kh * 3 + kw];
                    }
                }
            yo[(oy + i) * p->Wo + ox + j] = (float)acc;
        }
}

void so_wino_run(const so_wino *p, const float *x, float *y, float *scratch)
{
    const int64_t C = p->C, O = p->O, H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, tw = p->tw;
    for (int64_t b0 = 0; b0 < p->T; b0 += p->tb) {
        const int64_t nb = SO_MIN(p->tb, p->T - b0);
        float *V = scratch, *M = scratch + 36 * C * nb;
        const int64_t vs = C * nb, ms = O * nb;
#pragma omp parallel for if (C * nb * 36 > WINO_PAR_MIN)
        for (int64_t c = 0; c < C; c++) {
            const float *xc = x + c * H * W;
            float d[36], t1[36], v[36];
            for (int64_t t = 0; t < nb; t++) {
                int64_t idx = b0 + t, r0 = (idx / tw) * 4 - p->pt, c0 = (idx % tw) * 4 - p->pl;
                if (r0 >= 0 && c0 >= 0 && r0 + 6 <= H && c0 + 6 <= W) {
                    for (int i = 0; i < 6; i++) memcpy(d + 6 * i, xc + (r0 + i) * W + c0, 6 * sizeof(float));
                } else {
                    for (int i = 0; i < 6; i++)
                        for (int j = 0; j < 6; j++) {
                            int64_t r = r0 + i, cc = c0 + j;
                            d[6 * i + j] = (r >= 0 && r < H && cc >= 0 && cc < W) ? xc[r * W + cc] : 0.f;
                        }
                }
                for (int j = 0; j < 6; j++) bt6(d + j, 6, t1 + j, 6); /* columns: t1 = B^T d */
                for (int i = 0; i < 6; i++) bt6(t1 + 6 * i, 1, v + 6 * i, 1); /* rows: v = t1 B */
                float *vt = V + c * nb + t;
                for (int xi = 0; xi < 36; xi++) vt[xi * vs] = v[xi];
            }
        }
        const int lib = so_sgemm_onednn() || so_sgemm_ours(); /* oneDNN, or ours around an OpenBLAS below this level */
#pragma omp parallel for schedule(static) /* 36 single-threaded products over the team */
        for (int xi = 0; xi < 36; xi++)
            if (lib) /* (single-threaded inside the team's region) */
                so_sgemm(0, 0, O, nb, C, 1.f, p->U + xi * O * C, C, V + xi * vs, nb, 0.f, M + xi * ms, nb);
            else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)O, (int)nb, (int)C, 1.f, p->U + xi * O * C, (int)C,
                        V + xi * vs, (int)nb, 0.f, M + xi * ms, (int)nb);
#pragma omp parallel for if (O * nb * 36 > WINO_PAR_MIN)
        for (int64_t o = 0; o < O; o++) {
            float m[36], t1[24], r[16];
            float *yo = y + o * Ho * Wo;
            for (int64_t t = 0; t < nb; t++) {
                const float *mt = M + o * nb + t;
                for (int xi = 0; xi < 36; xi++) m[xi] = mt[xi * ms];
                for (int j = 0; j < 6; j++) at6(m + j, 6, t1 + j, 6); /* columns: t1 [4][6] = A^T m */
                for (int i = 0; i < 4; i++) at6(t1 + 6 * i, 1, r + 4 * i, 1); /* rows: r = t1 A */
                int64_t idx = b0 + t, oy = (idx / tw) * 4, ox = (idx % tw) * 4;
                int64_t nr = SO_MIN(4, Ho - oy), nc = SO_MIN(4, Wo - ox);
                float z = 0.f; /* NaN iff some r is NaN or inf */
                for (int i = 0; i < 16; i++) z += r[i] * 0.f;
                if (z != z) {
                    direct_tile(p, x, o, oy, ox, nr, nc, yo);
                    continue;
                }
                for (int64_t i = 0; i < nr; i++)
                    for (int64_t j = 0; j < nc; j++) yo[(oy + i) * Wo + ox + j] = r[4 * i + j];
            }
        }
    }
}
