/* nchwc.h - blocked-channel (NCHWc) kernels: values laid out [N][ceil(C/b)][H][W][b] with zero channel padding; reorders, direct, Winograd and depthwise conv (weights packed once, fused epilogue), pooling, element-wise and channel concat, one implementation table per ISA level. */
#ifndef SO_NCHWC_H
#define SO_NCHWC_H

#include <stddef.h>
#include <stdint.h>

#include "epi.h"
#include "fast.h"
#include "isa.h"

/* Layout contract (every kernel below, every level): a blocked value of C channels and H x W pixels per
   image holds Cb = ceil(C/b) blocks of [H][W][b] floats; channel c of pixel p is at
   ((n*Cb + c/b)*H*W + p)*b + c%b. The b*Cb - C padding lanes of the last block are zero in every input a
   kernel reads and in every output it writes (a kernel whose operation maps 0 to non-zero, e.g. sigmoid or
   an epilogue shift, clears them again). Kernels take the OpenMP team size T (>= 1); the work split is
   static, so results do not depend on T. */

#define SO_NCHWC_MAX_B 16
#define SO_NCHWC_WINO_G 4 /* a multiple of every level's CONV_OBK (nchwc_body.h) */

/* A convolution planned for one block size: weights [O][C/group][kh][kw] packed per output block as
   [nic][kh][kw][b] over the input channels its b outputs read (a grouped conv whose groups do not align
   with blocks reads the union with zero weights), per-channel epilogue y = act2(act1(acc*scale + shift) + res). */
typedef struct so_nchwc_conv {
    int b;
    int64_t C, H, W, O, Ho, Wo, kh, kw, sh, sw, pt, pl, dh, dw, group; /* a 1x1, stride-1, unpadded conv is planned as
                                                                         one row: H = Ho = 1, W = Wo = H*W */
    int64_t Cb, Ob;
    int depthwise;       /* group == C == O: per-lane taps, weights [Cb][kh][kw][b] */
    int64_t gsub;        /* groups inside a block (1 < C/group == O/group < b, b a multiple of it; ResNeXt's groups of
                            4 and 8 at b = 16): each block holds b/gsub whole groups of input and output, lane o reads
                            lanes (o/gsub)*gsub + c (c < gsub) of the same input block (a lane permutation per c), weights
                            [Ob][kh][kw][gsub][b]; 0 otherwise */
    uint32_t gidx[8][SO_NCHWC_MAX_B]; /* gsub: the permutation of each c, gidx[c][o] = (o/gsub)*gsub + c */
    int64_t *ic0, *nic;  /* [Ob]: first input channel and count read by each output block (owned) */
    int64_t *wofs;       /* [Ob]: offset of each block's packed weights in wp (owned) */
    float *wp;           /* packed weights (owned, 64-byte aligned) */
    float *scale, *shift; /* [Ob*b]: zero in the padding lanes (owned) */
    int act1, act2;      /* so_act */
    float lo1, hi1, lo2, hi2;
    int has_res;         /* run() adds res (same blocked shape as the output) */
    float *wu;           /* Winograd (so_nchwc_conv_wino): transformed weights [P][ceil(Ob/G)][Cb*b][G][b], P positions, G =
                            SO_NCHWC_WINO_G output blocks interleaved per input lane (one stream for the register tile), the
                            padding zero (owned), or NULL */
    int64_t wm;          /* Winograd: outputs per tile side, 4 (F(4x4, 3x3), 36 positions) or 2 (F(2x2, 3x3), 16) */
    int64_t wtc;         /* Winograd: tiles per chunk (the scratch holds one chunk per thread) */
} so_nchwc_conv;

/* Plans a conv of x [C][H][W] -> y [O][Ho][Wo] in blocks of b (kernel kh x kw, strides, top/left pads,
   dilations, groups) and packs w [O][C/group][kh][kw] (read only here). ep: the epilogue (scale/shift of
   length O or NULL; activations; has_res), NULL for none. Returns 0, or -1 when memory runs out (p then
   holds nothing). Free with so_nchwc_conv_free. */
int so_nchwc_conv_plan(so_nchwc_conv *p, int b, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh,
                       int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t group,
                       const float *w, const so_epi *ep);
void so_nchwc_conv_free(so_nchwc_conv *p);
/* Adds Winograd F(m x m, 3x3) (Lavin & Gray; m = 4 or 2) to a planned 3x3, stride-1, dilation-1, group-1 conv p
   with weights w [O][C][3][3]: U = G g G^T per (o, c), computed in double, stored as wu above (zero padding lanes); the
   level's wino() then runs p. Returns 0, or -1 (p not such a conv, or no memory: p unchanged). Numerics: float
   transforms with coefficients up to 8 (inputs) and 1/24 (weights); tests/test_nchwc.c holds it to 1e-4 of the
   largest output magnitude against the double-accumulating reference. */
int so_nchwc_conv_wino(so_nchwc_conv *p, const float *w, int m);
/* Input and output channels from which the conv backend (nchwc.c) also times our Winograd on a blocked 3x3
   stride-1 conv (default 16); negative: never (tests that pin a kernel). */
extern int64_t so_nchwc_wino_min_c;
/* Tests that pin the conv backend: -1 (default) keeps the fastest candidate measured; 1 keeps oneDNN's direct
   primitive whenever oneDNN plans one (nothing timed, nothing remembered), else the measured choice. */
extern int so_nchwc_backend_pin;
/* The conv backend's recorded choices (nchwc.c conv_backend): per configuration key (a 64-bit hash of the conv's shape,
   epilogue, thread count, level, candidate set and A/B knobs) the candidate kept: 0 ours, 1 oneDNN direct, 2 oneDNN
   Winograd, 3 our Winograd F(4x4, 3x3), 4 our F(2x2, 3x3). Process-wide and thread-safe. The timing records each
   choice it makes; the cost cache (search/cost.c) loads the choices it saved (so_nchwc_choice_put) and saves the
   process's (so_nchwc_choice_list), so a later process on that cache plans every conv it has a choice for without
   timing it. so_nchwc_choice_get: the pick, or -1. so_nchwc_choice_put: records a pick unless key has one (returns 1
   when recorded). so_nchwc_choice_list: copies up to cap (key, pick) pairs, returns how many there are.
   so_nchwc_choice_clear: forgets them all (tests). */
#define SO_NCHWC_PICKS 5
int so_nchwc_choice_get(uint64_t key);
int so_nchwc_choice_put(uint64_t key, int pick);
size_t so_nchwc_choice_list(uint64_t *keys, int *picks, size_t cap);
void so_nchwc_choice_clear(void);
/* Timed candidate runs of the conv backend so far, all convs (tests: none when every choice is recorded). */
int64_t so_nchwc_timings(void);
/* Tests only (NULL in use): called after each timed candidate run with the candidate, the run's number in the
   process (so_nchwc_timings before it) and the time measured (ms); returns the time the choice uses. */
extern double (*so_nchwc_time_hook)(void *ctx, int cand, int64_t seq, double ms);
extern void *so_nchwc_time_ctx;
/* Floats from one Winograd position's slice of a chunk's V or M (n floats) to the next: n rounded up to an odd number
   of 64-byte lines. The transforms read or write a tile's P slices together, one vector from each: at a stride of a
   multiple of 4 KB they all fell in one L1 set (SqueezeNet's 13x13 48->192 F(4x4): M's slices 12 KB apart, 36 loads
   per output tile in 8 ways; the output transform took half the time of the products). An odd number of lines puts
   64 consecutive slices in 64 different sets. Non-decreasing in n. */
static inline int64_t so_nchwc_wino_pstride(int64_t n) { return (((n + 15) / 16) | 1) * 16; }
/* Floats of scratch the Winograd conv p needs per call at T threads: T * P * (so_nchwc_wino_pstride(p->wtc * Cb * b) +
   so_nchwc_wino_pstride(p->wtc * Ob * b)). */
int64_t so_nchwc_wino_scratch(const so_nchwc_conv *p, int T);
/* The direct conv's work split (conv_run at every level): the Ob output blocks in nobg = ceil(Ob / obk_max) groups of
   near-equal size (group g: blocks [so_nchwc_group_ob(Ob, nobg, g), so_nchwc_group_ob(Ob, nobg, g + 1)), at most
   obk_max; before session 18 every group but the last had obk_max, so Ob = 5 at obk_max 4 ran 4 + 1 blocks: a
   one-block group's tile is 6 accumulators, FMA-latency bound), each group's Lb units (rows, or px-pixel column
   units of a flattened 1x1) in nband bands of near-equal size (band j: units [so_nchwc_band_start(s, j),
   so_nchwc_band_start(s, j + 1)); a band's partial sums within psum_floats); with T > 1 at least 4 items per thread
   and, where the units allow, a multiple of T items. items = N x nobg x nband, in the order the threads' static
   chunks take them: group-major (a thread streams only its groups' weights) unless T > 1 and the groups differ in
   size, then band-major (each thread gets its share of every group; group-major gave one of two threads 3 of 5
   blocks, and before the balanced groups MNASNet's 480->80 on 14x14 a 4-block group on one thread against 1 block
   on the other: 80 % of the work). Which items run together changes nothing in the sums: each output's channels
   are added in the same order whatever its group or band (the same bits at any T). */
typedef struct so_nchwc_split {
    int64_t nobg, nband, Lb, items;
    int band_major;
} so_nchwc_split;
void so_nchwc_conv_split(const so_nchwc_conv *p, int64_t N, int T, int obk_max, int64_t px, int64_t psum_floats, so_nchwc_split *s);
/* The work split of the pointwise path (nchwc_body.h pw_run: 1x1, group 1, levels with a pointwise tile): items of N
   images x nband bands of units (rows, or px-pixel units of a flattened 1x1, as above) x ngs sets of the nobg groups of
   <= obk_max output blocks (group set j: groups [j*nobg/ngs, (j+1)*nobg/ngs)), image-major, then band. An item runs
   the input channels in chunks of kc over its band, in one of two orders:
   - gouter (the image's input fits l2_bytes: the deep layers' small planes, whose weights dominate): per group, every
     chunk; one band; the weights are read once, the input from L2 by every group;
   - else per chunk, every group: a band is sized so that its partial sums of every output block and one chunk of its
     input stay in l2_bytes (the input read once from memory, then from L2 by every group; the weights once per band).
   With T > 1 bands come in whole rounds of T, or, when there are few, each thread takes a share of the groups
   (ngs = T) and nobg is then rounded up to whole rounds of T where Ob allows (equal group counts per share, so the
   shares' output blocks differ by at most one). Which items run together and in which order changes nothing in the sums (the same bits at any T). */
typedef struct so_nchwc_pwsplit {
    int64_t nobg, nband, Lb, ngs, items;
    int gouter;
} so_nchwc_pwsplit;
void so_nchwc_pw_split(const so_nchwc_conv *p, int64_t N, int T, int obk_max, int64_t px, int64_t kc, int64_t l2_bytes, so_nchwc_pwsplit *s);
static inline void so_nchwc_pw_item(const so_nchwc_pwsplit *s, int64_t it, int64_t *n, int64_t *band, int64_t *g0, int64_t *g1)
{
    const int64_t j = it % s->ngs;
    *n = it / (s->nband * s->ngs), *band = it / s->ngs % s->nband;
    *g0 = j * s->nobg / s->ngs, *g1 = (j + 1) * s->nobg / s->ngs;
}
/* 1 (default): levels with a pointwise tile run 1x1 group-1 convs on it; 0: on the direct conv's tile (tests compare
   the two bitwise; SUPEROPT_NCHWC_PW=0 at load for A/B runs). */
extern int so_nchwc_pw_on;
/* Block-diagonal grouped convs (so_nchwc_gblk) on gb_run (default 1; 0: the direct conv / conv_pad as before session 24,
   for tests and A/B runs; SUPEROPT_NCHWC_GB=0). Read at each conv call. */
extern int so_nchwc_gb_on;
/* The pointwise path's input channels per chunk (a multiple of b; 128 at 4 blocks of 8: 16 KB of packed weights per
   group, in L1 over a band's tiles) and its L2 budget per band (bytes: the band's partial sums and one chunk of its
   input; half of Zen 3's 512 KB L2). */
extern int64_t so_nchwc_pw_kc, so_nchwc_pw_l2;
static inline int64_t so_nchwc_group_ob(int64_t Ob, int64_t nobg, int64_t g) { return g * Ob / nobg; }
static inline int64_t so_nchwc_band_start(const so_nchwc_split *s, int64_t j) { return j * s->Lb / s->nband; }
/* Item it of split s: image *n, block group *g, band *band. */
static inline void so_nchwc_split_item(const so_nchwc_split *s, int64_t it, int64_t *n, int64_t *g, int64_t *band)
{
    const int64_t per_n = s->nobg * s->nband, r = it % per_n;
    *n = it / per_n;
    if (s->band_major) *band = r / s->nobg, *g = r % s->nobg;
    else *g = r / s->nband, *band = r % s->nband;
}
/* The direct conv on a zero-bordered copy of the input (impl conv_pad, session 22): p a conv of more than one tap that is
   neither depthwise nor gsub. The copy of one image holds p->Cb blocks of Hp x Wp pixels, row r / column q of it being input
   row r - pt / column q - pl (zero outside the input), just large enough for every tap of every output pixel, so every
   output pixel is interior: the register tiles run over consecutive output pixels across row ends (no one-pixel border
   tiles: on a 7x7 plane 2 of 7 pixels per row ran as one-pixel tiles, FMA-latency bound). Scratch: so_nchwc_pad_scratch
   floats (one image's copy). The sums are the direct conv's (conv) in the same order; the taps that read padding add
   0 * w, so with finite weights the values are conv's (a NaN / inf weight makes the border outputs NaN, as a Winograd
   tile does). */
static inline void so_nchwc_pad_dims(const so_nchwc_conv *p, int64_t *Hp, int64_t *Wp)
{
    *Hp = (p->Ho - 1) * p->sh + (p->kh - 1) * p->dh + 1;
    *Wp = (p->Wo - 1) * p->sw + (p->kw - 1) * p->dw + 1;
}
#define SO_NCHWC_PAD_TAPS 64 /* taps (kh x kw) conv_pad takes at most */
/* A strided 1x1 (session 23: ResNet's downsample, RegNet's projections): conv_pad's copy is then the gathered input, the
   pixels (oh * sh, ow * sw) of every block as one contiguous Ho x Wo plane, and the copy runs as the stride-1 1x1 over
   it (flattened to one row, as so_nchwc_conv_plan plans those; the pointwise path where the level has one). Why: read
   in place, every strided tile's broadcasts touch a new cache line per pixel (a pixel is half a line at b = 8 and the
   other half is skipped), and the pointwise path's L2 bands count every input row. Same sums in the same order. */
static inline int so_nchwc_gather_ok(const so_nchwc_conv *p)
{
    return p->kh == 1 && p->kw == 1 && (p->sh > 1 || p->sw > 1) && p->group == 1 && !p->depthwise && !p->gsub && p->pt == 0 &&
           p->pl == 0 && p->Ho > 0 && p->Wo > 0 && (p->Ho - 1) * p->sh < p->H && (p->Wo - 1) * p->sw < p->W;
}
/* Block-diagonal grouped convs (session 24, nchwc_body.h gb_run): a band of output rows of one output block runs on a
   zero-bordered copy of its input rows of the group's blocks, a stack buffer of SO_NCHWC_GB_FLOATS floats (64 KB).
   so_nchwc_gb_rows: the input rows a band of r output rows reads; so_nchwc_gb_wp: the copy's row width (pixels);
   so_nchwc_gb_band: output rows per band, as many as fit the buffer (0: not even one). */
#define SO_NCHWC_GB_FLOATS 16384
static inline int64_t so_nchwc_gb_rows(const so_nchwc_conv *p, int64_t r) { return (r - 1) * p->sh + (p->kh - 1) * p->dh + 1; }
static inline int64_t so_nchwc_gb_wp(const so_nchwc_conv *p) { return (p->Wo - 1) * p->sw + (p->kw - 1) * p->dw + 1; }
static inline int64_t so_nchwc_gb_band(const so_nchwc_conv *p)
{
    const int64_t per = p->group > 0 ? p->C / p->group * so_nchwc_gb_wp(p) : 0; /* floats per input row of the group */
    if (per <= 0 || p->Ho <= 0 || so_nchwc_gb_rows(p, 1) * per > SO_NCHWC_GB_FLOATS) return 0;
    int64_t r = 1;
    while (r < p->Ho && so_nchwc_gb_rows(p, r + 1) * per <= SO_NCHWC_GB_FLOATS) r++;
    return r;
}
/* A grouped conv (not 1x1) whose groups are whole blocks at b = 8 (C / group = O / group, a multiple of 8: RegNet's group
   width 8, ResNeXt-50's 8, 16, 32; AVX-512's b = 16 unchanged, not measured) and whose band fits the buffer: conv runs
   it block-diagonally (gb_run) when so_nchwc_gb_on, so conv_pad leaves it alone. Why: the direct conv ran such groups
   as 1-block tiles from the input with each border pixel its own 1-pixel tile (72-deep FMA chains at group width 8,
   latency-bound: RegNet-Y-400MF's 7x7 grouped 3x3s at 22-26 GFLOP/s in-model), conv_pad as 6-pixel tiles. */
static inline int so_nchwc_gblk(const so_nchwc_conv *p)
{
    return p->b == 8 && p->kh * p->kw > 1 && p->group > 1 && !p->depthwise && !p->gsub && p->C % p->group == 0 && p->O % p->group == 0 &&
           p->C / p->group == p->O / p->group && (p->C / p->group) % p->b == 0 && so_nchwc_gb_band(p) > 0;
}
static inline int so_nchwc_pad_ok(const so_nchwc_conv *p)
{
    return (p->kh * p->kw > 1 && p->kh * p->kw <= SO_NCHWC_PAD_TAPS && !p->depthwise && !p->gsub && !(so_nchwc_gb_on && so_nchwc_gblk(p)) && p->Ho > 0 && p->Wo > 0) ||
           so_nchwc_gather_ok(p);
}
static inline int64_t so_nchwc_pad_scratch(const so_nchwc_conv *p)
{
    int64_t Hp, Wp;
    so_nchwc_pad_dims(p, &Hp, &Wp);
    if (so_nchwc_gather_ok(p)) Hp = p->Ho, Wp = p->Wo;
    return so_nchwc_pad_ok(p) ? p->Cb * Hp * Wp * p->b : 0;
}
/* The plan-time rule for conv_pad (kernels/nchwc.c plan_conv): block 8 (the AVX2 and scalar levels; AVX-512 keeps conv and
   oneDNN) and either a strided 1x1 (so_nchwc_gather_ok) of at least SO_NCHWC_GATHER_MIN_O outputs or output rows of at
   most so_nchwc_pad_max_wo pixels (default 32; tests set it). The gather costs a copy of Ho * Wo * C floats against
   2 * O flops per copied float: bench/conv1x1_bench.c (AMD EPYC Zen 3, 1 thread, thread CPU time, minima of 30-40
   interleaved runs, load 10-11: design evidence) read gathered / in place 0.75-0.93 on ResNet-50's three downsamples
   (O 512-2048), 0.85-0.94 on RegNet-Y-400MF's 104->208 and 208->440, 0.98-1.02 on its 48->104, 1.16-1.20 on 32->48.
   The width bound, measured (AMD EPYC Zen 3, 1 thread, loaded machine, paired interleaved against conv,
   bench/conv3x3_ab.sh): ResNet-50's 3x3s 0.83 on 28x28, 0.79 on 14x14, 0.74 on 7x7, the stride-2 ones 0.82-0.93,
   GoogLeNet's 96->208 on 14x14 0.85; on 56x56 0.96-1.07 and Inception-v3's 147x147 1.11 (few border tiles there; the copy
   and the per-pixel offsets cost), so wide rows keep conv. */
#define SO_NCHWC_GATHER_MIN_O 128
extern int64_t so_nchwc_pad_max_wo;
int so_nchwc_pad_rule(const so_nchwc_conv *p);
/* Bytes of packed weights and epilogue vectors held by p; of the direct conv's packed weights p->wp alone; of
   the Winograd weights p->wu alone (0 when not planned). */
size_t so_nchwc_conv_bytes(const so_nchwc_conv *p);
size_t so_nchwc_packed_bytes(const so_nchwc_conv *p);
size_t so_nchwc_wino_bytes(const so_nchwc_conv *p);

/* Max or average pooling (kernel, strides, pads top/left/bottom/right, dilations for max). */
typedef struct so_nchwc_pool {
    int64_t C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
    int is_max, count_include_pad;
} so_nchwc_pool;

/* Floats of scratch stem_pool(p, q) needs at T threads: T rows of q->kh conv rows of every output block. */
int64_t so_nchwc_stem_pool_scratch(const so_nchwc_conv *p, const so_nchwc_pool *q, int T);
/* Pixels of one row stem_dw keeps of the stem's output (W pixels wide) for a depthwise conv to Wo pixels (kernel K,
   stride S, left pad pl): the row with its zero border, wide enough for every tap. */
static inline int64_t so_nchwc_stem_dw_width(int64_t W, int64_t Wo, int64_t K, int64_t S, int64_t pl)
{
    const int64_t span = (Wo - 1) * S + K;
    return span > pl + W ? span : pl + W;
}
/* Floats of scratch stem_dw(p, d) needs at T threads: per thread, d->kh + d->sh such rows of every output block
   of p (the rows two output rows of d read). */
int64_t so_nchwc_stem_dw_scratch(const so_nchwc_conv *p, const so_nchwc_conv *d, int T);

/* Element-wise operations: unary ops are so_op values (RELU, SIGMOID, TANH, CLIP, NEG, EXP, ... any
   SO_F_UNARY op); alpha/beta/lo/hi their attributes. Binary: so_op ADD/SUB/MUL/DIV with the second
   operand of the same blocked shape, one value per channel (a plain float[C]) or one scalar; act: so_act
   applied after (Add+Relu). */
typedef struct so_nchwc_unary {
    int op;
    float alpha, beta, lo, hi;
} so_nchwc_unary;
enum { SO_NCHWC_SAME = 0, SO_NCHWC_CHANNEL, SO_NCHWC_SCALAR };

/* One ISA level's kernels. N images; C channels; HW pixels per image. */
typedef struct so_nchwc_impl {
    int b;           /* block size of this level */
    const char *isa; /* "scalar", "avx2", "avx512" */
    /* x NCHW -> y blocked (padding lanes zero) and back (padding dropped) */
    void (*to_blocked)(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T);
    void (*from_blocked)(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T);
    /* blocked x -> channels-last y [N][HW][C] (padding dropped); channels-last x [N][HW][C] -> blocked y (padding
       lanes zero), each channel c times scale[c] when scale (float[ceil(C/b)*b], zero padding lanes) is not NULL, then
       plus the blocked res when not NULL: the steps so_fuse_nhwc absorbs, the same bits */
    void (*to_nhwc)(const float *x, float *y, int64_t N, int64_t C, int64_t HW, int T);
    void (*from_nhwc)(const float *x, const float *scale, const float *res, float *y, int64_t N, int64_t C, int64_t HW, int T);
    void (*conv)(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, int T);
    /* p (group 1, few input channels: a stem) from the plain x [N][C][H][W], no residual: conv(p, to_blocked(x)) */
    void (*stem)(const so_nchwc_conv *p, int64_t N, const float *x, float *y, int T);
    /* stem(p) then pool(q) (max, dilation 1, of p's output) as one pass, the same values; scratch:
       so_nchwc_stem_pool_scratch(p, q, T) floats */
    void (*stem_pool)(const so_nchwc_conv *p, const so_nchwc_pool *q, int64_t N, const float *x, float *y, float *scratch, int T);
    /* stem(p) then conv(d) (depthwise, square kernel, stride 1 or 2, dilation 1, no residual; d's input: p's output)
       as one pass, the same values (finite weights); scratch: so_nchwc_stem_dw_scratch(p, d, T) floats */
    void (*stem_dw)(const so_nchwc_conv *p, const so_nchwc_conv *d, int64_t N, const float *x, float *y, float *scratch, int T);
    /* p planned with so_nchwc_conv_wino; scratch: so_nchwc_wino_scratch(p, T) floats, 64-byte aligned */
    void (*wino)(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, float *scratch, int T);
    void (*pool)(const so_nchwc_pool *p, int64_t N, const float *x, float *y, int T);
    /* y [N][Cb][1][1][b] = mean (or max) of x over its HW pixels */
    void (*global_pool)(int is_max, int64_t N, int64_t C, int64_t HW, const float *x, float *y, int T);
    void (*unary)(const so_nchwc_unary *u, int64_t N, int64_t C, int64_t HW, const float *x, float *y, int T);
    void (*binary)(int op, int bcast, int act, int64_t N, int64_t C, int64_t HW, const float *a, const float *bv, float *y, int T);
    /* y (sum of Cs channels) = the n_in inputs x[i] (Cs[i] channels each) concatenated on the channel axis */
    void (*concat)(int n_in, const int64_t *Cs, int64_t N, int64_t HW, const float *const *x, float *y, int T);
    /* the same concat (every input but the last of whole blocks) followed by a per-channel y = x*scale + shift and
       Relu when relu (a blocked pre-activation batchnorm: DenseNet); scale, shift [Cb*b], zero in the padding lanes */
    void (*concat_ssa)(int n_in, const int64_t *Cs, int64_t N, int64_t HW, const float *const *x, const float *scale,
                       const float *shift, int relu, float *y, int T);
    /* conv on a zero-bordered copy of each image (so_nchwc_pad_ok(p); scratch: so_nchwc_pad_scratch(p) floats, 64-byte
       aligned): the same values as conv with finite weights (above) */
    void (*conv_pad)(const so_nchwc_conv *p, int64_t N, const float *x, float *y, const float *res, float *scratch, int T);
} so_nchwc_impl;

/* The levels. so_nchwc_scalar (b = 8, portable C) runs everywhere; so_nchwc_avx2 (b = 8) and
   so_nchwc_avx512 (b = 16) are compiled for their ISA (nchwc_avx2.c, nchwc_avx512.c) and are reached through
   so_nchwc_level, which only returns a level up to the one the dispatch allows (kernels/isa.h). */
extern const so_nchwc_impl so_nchwc_scalar;
extern const so_nchwc_impl so_nchwc_avx2;
extern const so_nchwc_impl so_nchwc_avx512;

/* Floats of a blocked value: N * ceil(C/b) * HW * b. */
int64_t so_nchwc_numel(int b, int64_t N, int64_t C, int64_t HW);
/* One element of a unary op, the reference kernels' expression (the levels' fallback for ops that have
   no vector form). */
float so_nchwc_unary1(const so_nchwc_unary *u, float x);


/* The kernels for block b at ISA level l or below (b = 16: AVX-512; b = 8: AVX2, else the portable level), or
   NULL (the reference kernels then run). l must not exceed so_isa_cpu() (so_isa_current guarantees it). */
const so_nchwc_impl *so_nchwc_level(int b, so_isa l);
/* The block size the layout rewrite uses at the current level (so_isa_current): 16 at AVX-512, else 8. */
int so_nchwc_block(void);
/* so_fast_select for the layout operators (ops.def NCHWC_IN ... GLOBALAVGPOOL_NCHWC) at level l (the kernel set
   being selected from): CONV_NCHWC with constant weights absorbs a chain of single-use successors
   (Relu/Clip/Sigmoid/Tanh, an Add of a same-shape residual, its activation). Leaves k->run NULL (reference
   kernel) when level l has no kernels for the block size. */
so_status so_nchwc_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k, so_isa l);

#endif
