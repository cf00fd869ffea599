/* gen_eval.c - generator fingerprint semantics: every generator operator evaluated in residue arithmetic modulo GEN_P; value hashes. */
#include "enum_priv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static uint32_t apply_act(int act, uint32_t x)
{
    switch (act) {
    case SO_ACT_RELU: return nonlin(x, SALT_RELU);
    case SO_ACT_SIGMOID: return nonlin(x, SALT_SIGM);
    case SO_ACT_TANH: return nonlin(x, SALT_TANH);
    default: return x;
    }
}

int64_t gen_numel(const gen_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dim[i];
    return n;
}

int enp_type_eq(const gen_type *a, const gen_type *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

uint64_t gen_value_hash_default(const uint32_t *v, int64_t n, const gen_type *t)
{
    gen_type tt;
    memset(&tt, 0, sizeof tt);
    tt.rank = t->rank;
    for (int i = 0; i < t->rank; i++) tt.dim[i] = t->dim[i];
    return XXH3_64bits_withSeed(v, (size_t)n * sizeof *v, XXH3_64bits(&tt, sizeof tt));
}
uint64_t (*gen_value_hash)(const uint32_t *v, int64_t n, const gen_type *t) = gen_value_hash_default;

/* ---------------- evaluation ---------------- */

/* Conv results are memoised per thread (the same conv of the same tensors recurs under every
   prefix the enumeration extends): a direct-mapped table keyed by XXH3 of the instance and the
   input types and values, hits confirmed by comparing the stored inputs in full (exact). */
#define CONV_MEMO_SLOTS 16384
#define CONV_MEMO_WORDS 320 /* inputs + output, uint32 */
typedef struct conv_memo_entry {
    uint64_t h;
    int valid, n_key;
    uint32_t data[CONV_MEMO_WORDS];
} conv_memo_entry;
static _Thread_local conv_memo_entry *conv_memo;

void gen_memo_release(void)
{
    free(conv_memo);
    conv_memo = NULL;
}

/* The slot for these inputs, its key written and valid set when it already holds the result;
   NULL when the inputs and output do not fit. */
static conv_memo_entry *conv_memo_find(int inst, const gen_type *it, uint32_t *const *iv, int n_in, int64_t n_out)
{
    uint32_t key[CONV_MEMO_WORDS];
    int nk = 0;
    key[nk++] = (uint32_t)inst;
    for (int a = 0; a < n_in; a++) {
        int64_t m = gen_numel(&it[a]);
        if (nk + 5 + m + n_out > CONV_MEMO_WORDS) return NULL;
        key[nk++] = (uint32_t)it[a].rank;
        for (int d = 0; d < 4; d++) key[nk++] = (uint32_t)it[a].dim[d];
        memcpy(key + nk, iv[a], (size_t)m * sizeof *key);
        nk += (int)m;
    }
    if (!conv_memo) conv_memo = so_xcalloc(CONV_MEMO_SLOTS, sizeof *conv_memo); /* gen_memo_release */
    uint64_t h = XXH3_64bits(key, (size_t)nk * sizeof *key);
    conv_memo_entry *e = &conv_memo[h % CONV_MEMO_SLOTS];
    if (e->valid && e->h == h && e->n_key == nk && memcmp(e->data, key, (size_t)nk * sizeof *key) == 0) return e;
    e->h = h;
    e->valid = 0;
    e->n_key = nk;
    memcpy(e->data, key, (size_t)nk * sizeof *key);
    return e;
}

/* Same-padding stride-1 conv of x [N,C,H,W] with w [O,C/g,KH,KW] (+ bias), act applied. */
static void conv_vals(const gen_type *x, const gen_type *w, const uint32_t *xv, const uint32_t *wv, const uint32_t *bv,
                      int act, uint32_t *y);
static void conv_vals_win(const gen_inst *g, const gen_type *x, const gen_type *w, const uint32_t *xv, const uint32_t *wv,
                          const uint32_t *bv, uint32_t *y);

/* Blocked layout permutations: C channels in Cb = ceil(C / b) blocks, zero padding lanes. */
static void block_vals(const gen_type *x, int b, const uint32_t *xv, uint32_t *y, int inverse)
{
    int N = x->dim[0], C = x->dim[1], HW = x->dim[2] * x->dim[3], Cb = (C + b - 1) / b;
    if (!inverse && C % b) memset(y, 0, (size_t)N * Cb * HW * b * sizeof *y); /* zero padding lanes */
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < HW; i++) {
                int64_t plain = ((int64_t)n * C + c) * HW + i, blk = (((int64_t)n * Cb + c / b) * HW + i) * b + c % b;
                if (inverse) y[plain] = xv[blk];
                else y[blk] = xv[plain];
            }
}

static void conv_vals(const gen_type *x, const gen_type *w, const uint32_t *xv, const uint32_t *wv, const uint32_t *bv,
                      int act, uint32_t *y)
{
    int N = x->dim[0], C = x->dim[1], H = x->dim[2], W = x->dim[3];
    int O = w->dim[0], CG = w->dim[1], KH = w->dim[2], KW = w->dim[3];
    int grp = C / CG, OG = O / grp, ph = KH / 2, pw = KW / 2;
        for (int b = 0; b < N; b++)
            for (int o = 0; o < O; o++) {
                int gi = o / OG;
                const uint32_t *xb = xv + (int64_t)(b * C + gi * CG) * H * W;
                const uint32_t *wb = wv + (int64_t)o * CG * KH * KW;
                for (int r = 0; r < H; r++) {
                    /* taps inside the image: ky in [ky0, ky1), kx in [kx0, kx1) (same padding) */
                    int ky0 = ph - r > 0 ? ph - r : 0, ky1 = H + ph - r < KH ? H + ph - r : KH;
                    for (int c = 0; c < W; c++) {
                        int kx0 = pw - c > 0 ? pw - c : 0, kx1 = W + pw - c < KW ? W + pw - c : KW;
                        u128 acc = bv ? bv[o] : 0;
                        for (int ci = 0; ci < CG; ci++) {
                            int64_t x0 = (int64_t)ci * H * W + (int64_t)(r - ph) * W + (c - pw); /* + ky*W + kx >= 0 */
                            const uint32_t *wp = wb + (int64_t)ci * KH * KW;
                            for (int ky = ky0; ky < ky1; ky++)
                                for (int kx = kx0; kx < kx1; kx++) acc += (uint64_t)xb[x0 + ky * W + kx] * wp[ky * KW + kx];
                        }
                        y[((int64_t)(b * O + o) * H + r) * W + c] = apply_act(act, mred128(acc));
                    }
                }
            }
}

/* conv with instance g's window (stride, same or no padding): plain loops, for the extended layout universes */
static void conv_vals_win(const gen_inst *g, const gen_type *x, const gen_type *w, const uint32_t *xv, const uint32_t *wv,
                          const uint32_t *bv, uint32_t *y)
{
    int N = x->dim[0], C = x->dim[1], H = x->dim[2], W = x->dim[3];
    int O = w->dim[0], CG = w->dim[1], KH = w->dim[2], KW = w->dim[3];
    int grp = C / CG, OG = O / grp, ph = g->valid ? 0 : KH / 2, pw = g->valid ? 0 : KW / 2, st = g->stride > 1 ? g->stride : 1;
    int HO = gen_win_out(g, H, KH), WO = gen_win_out(g, W, KW);
    for (int b = 0; b < N; b++)
        for (int o = 0; o < O; o++) {
            int gi = o / OG;
            for (int r = 0; r < HO; r++)
                for (int c = 0; c < WO; c++) {
                    u128 acc = bv ? bv[o] : 0;
                    for (int ci = 0; ci < CG; ci++)
                        for (int ky = 0; ky < KH; ky++)
                            for (int kx = 0; kx < KW; kx++) {
                                int rr = r * st + ky - ph, cc = c * st + kx - pw;
                                if (rr < 0 || rr >= H || cc < 0 || cc >= W) continue;
                                acc += (uint64_t)xv[((int64_t)(b * C + gi * CG + ci) * H + rr) * W + cc] *
                                       wv[(((int64_t)o * CG + ci) * KH + ky) * KW + kx];
                            }
                    y[((int64_t)(b * O + o) * HO + r) * WO + c] = apply_act(g->act, mred128(acc));
                }
        }
}

/* 3x3 max / average pooling with instance g's window over [planes, H, W] (padding skipped by max,
   counted by average); out [planes, HO, WO]. */
static void pool_vals(const gen_inst *g, int avg, int planes, int H, int W, const uint32_t *xv, uint32_t *y)
{
    int p0 = g->valid ? 0 : 1, st = g->stride > 1 ? g->stride : 1, HO = gen_win_out(g, H, 3), WO = gen_win_out(g, W, 3);
    uint32_t inv9 = minv(9);
    for (int p = 0; p < planes; p++)
        for (int r = 0; r < HO; r++)
            for (int c = 0; c < WO; c++) {
                uint64_t acc = 0;
                uint32_t mx = 0;
                for (int dy = 0; dy < 3; dy++)
                    for (int dx = 0; dx < 3; dx++) {
                        int rr = r * st + dy - p0, cc = c * st + dx - p0;
                        if (rr < 0 || rr >= H || cc < 0 || cc >= W) continue;
                        uint32_t v = xv[((int64_t)p * H + rr) * W + cc];
                        acc += v;
                        if (v > mx) mx = v;
                    }
                y[((int64_t)p * HO + r) * WO + c] = avg ? mmul(mred(acc), inv9) : mx;
            }
}

/* global average pooling over [planes, HW]: sum times the inverse of HW */
static void gap_vals(int planes, int HW, const uint32_t *xv, uint32_t *y)
{
    uint32_t inv = minv((uint32_t)HW);
    for (int p = 0; p < planes; p++) {
        uint64_t acc = 0;
        for (int i = 0; i < HW; i++) acc += xv[(int64_t)p * HW + i];
        y[p] = mmul(mred(acc), inv);
    }
}

void enp_eval_inst(const gen_universe *u, int inst, const gen_type *it, uint32_t *const *iv, const gen_type *ot,
                      uint32_t **ov)
{
    const gen_inst *g = &u->insts[inst];
    int64_t n = gen_numel(&ot[0]);
    uint32_t *y = ov[0];
    switch (g->op) {
    case SO_OP_ADD:
        if (it[0].rank == 1 && it[1].rank > 1) { /* bias add on the last axis */
            int64_t k = it[0].dim[0];
            for (int64_t i = 0; i < n; i++) y[i] = madd(iv[1][i], iv[0][i % k]);
            break;
        }
        for (int64_t i = 0; i < n; i++) y[i] = madd(iv[0][i], iv[1][i]);
        break;
    case SO_OP_MUL:
        if (it[1].rank == 0)
            for (int64_t i = 0; i < n; i++) y[i] = mmul(iv[0][i], iv[1][0]);
        else
            for (int64_t i = 0; i < n; i++) y[i] = mmul(iv[0][i], iv[1][i]);
        break;
    case SO_OP_TRANSPOSE: {
        int R = it[0].dim[0], C = it[0].dim[1];
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) y[c * R + r] = iv[0][r * C + c];
        break;
    }
    case SO_OP_MATMUL: {
        int K = it[0].dim[it[0].rank - 1], N = it[1].dim[1], M = (int)(gen_numel(&it[0]) / K);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                u128 acc = 0;
                for (int k = 0; k < K; k++) acc += (uint64_t)iv[0][i * K + k] * iv[1][k * N + j];
                y[i * N + j] = apply_act(g->act, mred128(acc));
            }
        break;
    }
    case SO_OP_CONV: {
        const gen_type *x = &it[0], *w = &it[1];
        conv_memo_entry *me = conv_memo_find(inst, it, iv, g->n_in, n);
        if (me && me->valid) {
            memcpy(y, me->data + me->n_key, (size_t)n * sizeof *y);
            break;
        }
        if (g->stride > 1 || g->valid) conv_vals_win(g, x, w, iv[0], iv[1], gen_biased(g) ? iv[2] : NULL, y);
        else conv_vals(x, w, iv[0], iv[1], gen_biased(g) ? iv[2] : NULL, g->act, y);
        if (me) {
            memcpy(me->data + me->n_key, y, (size_t)n * sizeof *y);
            me->valid = 1;
        }
        break;
    }
    case SO_OP_NCHWC_IN:
        block_vals(&it[0], u->block, iv[0], y, 0);
        break;
    case SO_OP_NCHWC_OUT:
        block_vals(&ot[0], u->block, iv[0], y, 1);
        break;
    case SO_OP_CONV_NCHWC: {
        /* by definition: block(conv(unblock(x))) */
        int b = u->block;
        gen_type xp = it[0], yp = ot[0];
        xp.rank = yp.rank = 4;
        /* depthwise: the kernel's C; grouped: the kernel's dim 1 x the group; else the weight's channels (the real ones of a
           padded input) */
        xp.dim[1] = u->dw && it[1].dim[1] == 1 ? it[1].dim[0] : u->group > 1 ? it[1].dim[1] * u->group : it[1].dim[1];
        yp.dim[1] = it[1].dim[0];
        xp.dim[4] = yp.dim[4] = 0;
        uint32_t *xu = so_xmalloc((size_t)gen_numel(&xp) * sizeof *xu), *yu = so_xmalloc((size_t)n * sizeof *yu);
        block_vals(&xp, b, iv[0], xu, 1);
        if (g->stride > 1 || g->valid) conv_vals_win(g, &xp, &it[1], xu, iv[1], gen_biased(g) ? iv[2] : NULL, yu);
        else conv_vals(&xp, &it[1], xu, iv[1], gen_biased(g) ? iv[2] : NULL, g->act, yu);
        block_vals(&yp, b, yu, y, 0);
        free(xu);
        free(yu);
        break;
    }
    case SO_OP_ENLARGE: {
        int O = it[0].dim[0], I = it[0].dim[1], kh = it[0].dim[2], kw = it[0].dim[3];
        int oh = (3 - kh) / 2, ow = (3 - kw) / 2;
        memset(y, 0, (size_t)n * sizeof *y);
        for (int o = 0; o < O * I; o++)
            for (int r = 0; r < kh; r++)
                for (int c = 0; c < kw; c++) y[o * 9 + (r + oh) * 3 + c + ow] = iv[0][(o * kh + r) * kw + c];
        break;
    }
    case SO_OP_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = nonlin(iv[0][i], SALT_RELU);
        break;
    case SO_OP_SIGMOID:
        for (int64_t i = 0; i < n; i++) y[i] = nonlin(iv[0][i], SALT_SIGM);
        break;
    case SO_OP_TANH:
        for (int64_t i = 0; i < n; i++) y[i] = nonlin(iv[0][i], SALT_TANH);
        break;
    case SO_OP_AVGPOOL:
    case SO_OP_MAXPOOL:
        pool_vals(g, g->op == SO_OP_AVGPOOL, it[0].dim[0] * it[0].dim[1], it[0].dim[2], it[0].dim[3], iv[0], y);
        break;
    case SO_OP_AVGPOOL_NCHWC:
    case SO_OP_MAXPOOL_NCHWC:
    case SO_OP_GLOBALAVGPOOL_NCHWC: {
        /* by definition: block(pool(unblock(x))) */
        int b = u->block;
        gen_type xp = it[0], yp = ot[0];
        xp.rank = yp.rank = 4;
        xp.dim[1] = yp.dim[1] = (int16_t)(it[0].dim[1] * b);
        xp.dim[4] = yp.dim[4] = 0;
        uint32_t *xu = so_xmalloc((size_t)gen_numel(&xp) * sizeof *xu), *yu = so_xmalloc((size_t)n * sizeof *yu);
        block_vals(&xp, b, iv[0], xu, 1);
        if (g->op == SO_OP_GLOBALAVGPOOL_NCHWC) gap_vals(xp.dim[0] * xp.dim[1], xp.dim[2] * xp.dim[3], xu, yu);
        else pool_vals(g, g->op == SO_OP_AVGPOOL_NCHWC, xp.dim[0] * xp.dim[1], xp.dim[2], xp.dim[3], xu, yu);
        block_vals(&yp, b, yu, y, 0);
        free(xu);
        free(yu);
        break;
    }
    case SO_OP_GLOBALAVGPOOL:
        gap_vals(it[0].dim[0] * it[0].dim[1], it[0].dim[2] * it[0].dim[3], iv[0], y);
        break;
    case SO_OP_CONCAT: {
        int ax = g->axis;
        int64_t outer = 1, in0 = 1, in1 = 1;
        for (int i = 0; i < ax; i++) outer *= it[0].dim[i];
        for (int i = ax; i < it[0].rank; i++) {
            in0 *= it[0].dim[i];
            in1 *= it[1].dim[i];
        }
        for (int64_t o = 0; o < outer; o++) {
            memcpy(y + o * (in0 + in1), iv[0] + o * in0, (size_t)in0 * sizeof *y);
            memcpy(y + o * (in0 + in1) + in0, iv[1] + o * in1, (size_t)in1 * sizeof *y);
        }
        break;
    }
    case SO_OP_SPLIT: {
        int ax = g->axis;
        int64_t outer = 1, o0 = 1, o1 = 1;
        for (int i = 0; i < ax; i++) outer *= it[0].dim[i];
        for (int i = ax; i < it[0].rank; i++) {
            o0 *= ot[0].dim[i];
            o1 *= ot[1].dim[i];
        }
        for (int64_t o = 0; o < outer; o++) {
            memcpy(ov[0] + o * o0, iv[0] + o * (o0 + o1), (size_t)o0 * sizeof *y);
            memcpy(ov[1] + o * o1, iv[0] + o * (o0 + o1) + o0, (size_t)o1 * sizeof *y);
        }
        break;
    }
    case SO_OP_BATCHNORM: {
        int N = it[0].dim[0], C = it[0].dim[1];
        int64_t HW = (int64_t)it[0].dim[2] * it[0].dim[3];
        for (int c = 0; c < C; c++) {
            /* y = (x - mean) * scale / R(var) + bias, R a fixed non-zero pseudo-random function */
            uint32_t r = nonlin(iv[4][c], SALT_BN);
            if (r == 0) r = 1;
            uint32_t f = mmul(iv[1][c], minv(r));
            for (int b = 0; b < N; b++)
                for (int64_t i = 0; i < HW; i++) {
                    int64_t k = (int64_t)(b * C + c) * HW + i;
                    y[k] = madd(mmul(msub(iv[0][k], iv[3][c]), f), iv[2][c]);
                }
        }
        break;
    }
    case SO_OP_CONST_POOL: {
        uint32_t inv = minv((uint32_t)(g->ct.dim[2] * g->ct.dim[3]));
        for (int64_t i = 0; i < n; i++) y[i] = inv;
        break;
    }
    case SO_OP_CONST_IDCONV: {
        int C = g->ct.dim[0], KH = g->ct.dim[2], KW = g->ct.dim[3];
        memset(y, 0, (size_t)n * sizeof *y);
        for (int c = 0; c < C; c++) y[((c * C + c) * KH + KH / 2) * KW + KW / 2] = 1;
        break;
    }
    case SO_OP_CONST_IDMAT: {
        int R = g->ct.dim[0];
        memset(y, 0, (size_t)n * sizeof *y);
        for (int i = 0; i < R; i++) y[i * R + i] = 1;
        break;
    }
    case SO_OP_CONST_ONES:
        for (int64_t i = 0; i < n; i++) y[i] = 1;
        break;
    case SO_OP_BNFOLD_W: {
        /* W[o] * scale[o] / R(var[o]), R as in SO_OP_BATCHNORM */
        int O = it[0].dim[0];
        int64_t inner = n / O;
        for (int o = 0; o < O; o++) {
            uint32_t r = nonlin(iv[2][o], SALT_BN);
            if (r == 0) r = 1;
            uint32_t f = mmul(iv[1][o], minv(r));
            for (int64_t i = 0; i < inner; i++) y[o * inner + i] = mmul(iv[0][o * inner + i], f);
        }
        break;
    }
    case SO_OP_BNFOLD_B: {
        /* bias + (cbias - mean) * scale / R(var) */
        for (int64_t o = 0; o < n; o++) {
            uint32_t r = nonlin(iv[3][o], SALT_BN);
            if (r == 0) r = 1;
            uint32_t f = mmul(iv[0][o], minv(r));
            uint32_t cb = gen_biased(g) ? iv[4][o] : 0;
            y[o] = madd(iv[1][o], mmul(msub(cb, iv[2][o]), f));
        }
        break;
    }
    default:
        break;
    }
}

/* ---------------- evaluation of a stored graph ---------------- */

int gen_eval_graph(const gen_universe *u, const gen_inputs *in, const gen_graph *g, gen_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    for (int v = 0; v < u->n_vars; v++) {
        ev->type[v] = u->vars[v].t;
        ev->val[v] = in->val[v]; /* borrowed */
    }
    /* types first (one block for every node output), then values */
    int64_t off[GEN_MAX_NODES * GEN_MAX_OUT], total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const gen_node *nd = &g->nodes[i];
        const gen_inst *gi = &u->insts[nd->inst];
        gen_type it[GEN_MAX_NIN], ot[GEN_MAX_OUT];
        for (int a = 0; a < gi->n_in; a++) it[a] = ev->type[nd->in[a]];
        int cut = gi->op == SO_OP_SPLIT ? enp_split_cut(u, g->nodes, ev->type, nd->in[0], gi->axis) : 0;
        if (!gen_typecheck(u, nd->inst, it, gi->n_in, cut, ot)) {
            memset(ev->val, 0, sizeof ev->val);
            return 0;
        }
        int base = u->n_vars + GEN_MAX_OUT * i;
        for (int s2 = 0; s2 < gi->n_out; s2++) {
            ev->type[base + s2] = ot[s2];
            off[i * GEN_MAX_OUT + s2] = total;
            int64_t n = gen_numel(&ot[s2]);
            total += n ? n : 1;
        }
    }
    ev->block = so_xmalloc((size_t)(total ? total : 1) * sizeof(uint32_t));
    for (int i = 0; i < g->n_nodes; i++) {
        const gen_node *nd = &g->nodes[i];
        const gen_inst *gi = &u->insts[nd->inst];
        gen_type it[GEN_MAX_NIN];
        uint32_t *iv[GEN_MAX_NIN], *ov[GEN_MAX_OUT];
        for (int a = 0; a < gi->n_in; a++) {
            it[a] = ev->type[nd->in[a]];
            iv[a] = ev->val[nd->in[a]];
        }
        int base = u->n_vars + GEN_MAX_OUT * i;
        for (int s2 = 0; s2 < gi->n_out; s2++) ov[s2] = ev->val[base + s2] = ev->block + off[i * GEN_MAX_OUT + s2];
        enp_eval_inst(u, nd->inst, it, iv, &ev->type[base], ov);
    }
    return 1;
}

void gen_eval_free(gen_eval *ev)
{
    free(ev->block);
    memset(ev, 0, sizeof *ev);
}
