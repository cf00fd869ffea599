/* dnnl.h - oneDNN (libdnnl.so.2, dlopen'd: an optional run-time dependency) as a backend: the library handle every oneDNN user shares, convolution primitives on blocked NCHWc values (b = 8 or 16) and matmul primitives against a weight, planned once (weights reordered at plan time, primitive created there: nothing per run but the execute call). */
#ifndef SO_DNNL_H
#define SO_DNNL_H

#include <stddef.h>
#include <stdint.h>

#include "epi.h"

/* The handle of libdnnl.so.2, loaded once at the first call; NULL when it is not installed, when
   SUPEROPT_ONEDNN=0, or in a sanitizer build (with libdnnl loaded LeakSanitizer's exit-time scan crashed:
   "Tracer caught signal 11", test_exec and test_fast under make test-asan). Thread-safe. Callers look their
   symbols up with dlsym. Loading it is the caller's decision: the blocked convs of the avx2 and avx512 levels
   (kernels/nchwc.c conv_backend) and the avx512 level's sgemm / matmul do; tests/valgrind.sh sets
   SUPEROPT_ONEDNN=0, so valgrind never sees oneDNN's JIT code. */
void *so_dnnl_lib(void);

/* A oneDNN convolution on NCHWc values of b = 8 or 16 channels per block (oneDNN's nChw8c / nChw16c: the same
   layout, padding lanes zero), planned for
   N images of x [C][H][W] -> y [O][Ho][Wo], kernel kh x kw, strides, pads (top, left, bottom, right),
   dilations (1 = none), groups (group 1 or C/group > 1: depthwise is not planned here), with the epilogue
   ep (scale folded into the reordered weights, shift as the bias, act1, the residual as a binary-add
   post-op, act2; from the first Relu / Clip on, whose oneDNN post-ops lose NaN, our pass over y after the
   primitive, which also zeroes y's padding lanes, unless so_dnnl_conv_run's scan of the input finds that no NaN
   can reach them). Opaque; owns the primitives and their reordered weights. */
typedef struct so_dnnl_conv so_dnnl_conv;

/* Plans the conv: Winograd when wino is set and oneDNN has a JIT Winograd implementation for the shape,
   else its direct algorithm. w [O][C/group][kh][kw] is read only here; b (8 or 16) the block of x, y and the
   residual. Returns NULL when b is neither, oneDNN is not
   loaded, has only its reference implementation for the shape, the epilogue has a Relu / Clip before the
   residual and another activation after it, or oneDNN fails (then the caller uses its own kernel). The primitive runs on the calling thread's OpenMP team (omp_get_max_threads() at run time). */
so_dnnl_conv *so_dnnl_conv_plan(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t Ho, int64_t Wo, int64_t kh, int64_t kw,
                                int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t dh, int64_t dw,
                                int64_t group, const float *w, const so_epi *ep, int wino, int b);
/* y = conv(x) with the epilogue (res: the residual, same blocked shape as y, when the epilogue has one);
   scratch: so_dnnl_conv_scratch_bytes of the caller's memory (64-byte aligned; oneDNN's scratchpad, clobbered).
   With a Relu / Clip in the epilogue, a read-only scan of x (and of res, for a Relu / Clip after the residual) picks
   the primitive with the whole epilogue as post-ops (oneDNN's Relu / Clip: fast) when x is finite and small enough
   that no pre-activation can overflow (a bound from the weights, kernels/dnnl.c FAST_LIMIT) and res has no NaN, so no
   NaN reaches oneDNN's Relu / Clip; otherwise the primitive up to the Relu / Clip and our pass after it. The same
   results either way (within the rounding of a different order of additions). Returns 1 when the fast primitive
   ran, 0 when the pass ran or the epilogue has no Relu / Clip. */
int so_dnnl_conv_run(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch);
/* so_dnnl_conv_run with the run's absmax facts (kernels/fast.h so_fast_kernel.facts; each NULL: none): *xmax / *rmax
   the known bound of x / res (SO_ABSMAX_UNKNOWN: unknown), which the choice reads instead of scanning; a scan's
   result is stored there. *ymax is set to a bound of y this run proves (from x's and res's bounds, the weights'
   largest row sum of magnitudes and the bias: kernels/dnnl.c y_bound), else SO_ABSMAX_UNKNOWN. */
int so_dnnl_conv_run_known(so_dnnl_conv *p, const float *x, float *y, const float *res, void *scratch, uint32_t *xmax, uint32_t *rmax,
                           uint32_t *ymax);
size_t so_dnnl_conv_scratch_bytes(const so_dnnl_conv *p);
/* Whether p has the fast primitive (a Relu / Clip in the epilogue that oneDNN's post-ops may apply): then
   so_dnnl_conv_run chooses per run, and its return says which ran. */
int so_dnnl_conv_has_fast(const so_dnnl_conv *p);
/* oneDNN's implementation name (e.g. "jit_1x1:avx512_core", "jit_wino_4x3:avx512_core"). */
const char *so_dnnl_conv_impl(const so_dnnl_conv *p);
/* Bytes of reordered weights and bias held. */
size_t so_dnnl_conv_bytes(const so_dnnl_conv *p);
/* The reordered weights the primitive reads and their size in *bytes, for the caller's cache eviction before a
   timed run (kernels/nchwc.c conv_backend); NULL (and 0) without oneDNN. */
const void *so_dnnl_conv_weights(const so_dnnl_conv *p, size_t *bytes);
void so_dnnl_conv_free(so_dnnl_conv *p);

/* A oneDNN matmul primitive Y [M, N] = A [M, K] op(B) [K, N] with the epilogue ep (the per-column scale folded into
   the reordered weights, shift as the bias, act1, the residual (same [M, N]) as a binary-add post-op, act2), A and Y
   row-major and contiguous. B (a weight; transposed when trans_b, leading dimension ldb) is read only here and
   reordered once into oneDNN's own blocked layout (brgemm), so nothing is packed per run (dnnl_sgemm packs B at
   every call). Returns NULL when oneDNN is not loaded, has only its reference code for the shape or an
   activation it cannot apply (HardSigmoid; Relu and Clip, which lose NaN), or fails (the caller keeps sgemm). Opaque; owns the primitive and its weights. Runs
   on the calling thread's OpenMP team, like the convolution. */
typedef struct so_dnnl_mm so_dnnl_mm;
so_dnnl_mm *so_dnnl_mm_plan(int64_t M, int64_t K, int64_t N, int trans_b, const float *w, int64_t ldb, const so_epi *ep);
/* Y = A op(B) with the epilogue (res when the epilogue has one); scratch: so_dnnl_mm_scratch_bytes, 64-byte aligned. */
void so_dnnl_mm_run(so_dnnl_mm *p, const float *a, float *y, const float *res, void *scratch);
size_t so_dnnl_mm_scratch_bytes(const so_dnnl_mm *p);
/* oneDNN's implementation name (e.g. "brg:avx512_core"). */
const char *so_dnnl_mm_impl(const so_dnnl_mm *p);
/* The reordered weights and their bytes (cold timing's eviction). */
const void *so_dnnl_mm_weights(const so_dnnl_mm *p, size_t *bytes);
void so_dnnl_mm_free(so_dnnl_mm *p);

#endif
