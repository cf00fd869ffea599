/* fast.h - the fast-kernel interface: a kernel bound to a node (and the nodes it absorbs), the selection context, so_fast_select. */
#ifndef SO_FAST_H
#define SO_FAST_H

#include "ref.h"

#define SO_FAST_MAX_FUSED 4

/* A kernel bound to one node (plus the nodes it absorbs): run(priv, in, out, scratch)
   computes the outputs from the inputs (shapes fixed at selection). scratch has at least
   scratch_bytes (64-byte aligned) and is shared between steps. run == NULL: no fast
   kernel, use the reference kernel. priv is owned by the kernel: free_priv(priv).

   Fusion: the kernel may absorb a chain of single-use successors fused[0..n_fused) (e.g.
   Conv -> BatchNormalization -> Add -> Relu). Then in[] is the head node's inputs
   followed by extra_in (when has_extra: e.g. the residual of an absorbed Add), and out[]
   is the outputs of the last absorbed node. The absorbed nodes' own outputs never exist. */
typedef struct so_fast_kernel {
    void (*run)(void *priv, const so_tensor *in, so_tensor *out, float *scratch);
    void *priv;
    void (*free_priv)(void *priv);
    size_t scratch_bytes;
    size_t packed_bytes; /* bytes of pre-packed weights held in priv */
    const void *packed;  /* where those packed weights start when they are one buffer (matmul's packed B), else NULL:
                            the cost model's cold timing flushes them with the weights (exec.c so_exec_time_step) */
    int in1_copied;      /* run() never reads input 1: a weight packed/transformed into priv at selection */
    const char *name;
    int32_t n_fused;
    int32_t fused[SO_FAST_MAX_FUSED];
    int has_extra;
    so_edge extra_in;
    /* NULL, or the run-time path note of a kernel that chooses between code paths per run (kernels/nchwc.c: a oneDNN
       conv's fast primitive or its exact pass): writes a short note without spaces into buf (n bytes) counting the
       runs so far (e.g. "fast", "exact", "fast3/5") and returns its length; 0 when there is nothing to say yet.
       The profiler prints it after the kernel's name (kernels/exec.c so_exec_profile_print). */
    int (*path)(const void *priv, char *buf, size_t n);
    /* NULL, or called once by the executor after planning (kernels/exec.c): in[q] / out[q] point at the run's
       absmax fact of input q / output q (NULL where there is none): an upper bound of every |v| of the value as a
       float bit pattern (0x7f800000: no NaN, maybe inf), SO_ABSMAX_UNKNOWN (kernels/epi.h) when nothing is known. The executor sets
       every fact to SO_ABSMAX_UNKNOWN before each run; a kernel may lower the fact of a value it has read entirely
       (a scan's result) or written (a bound it can prove), never raise one it did not write. The arrays are valid
       only during the call: the kernel keeps the pointers it wants. */
    void (*facts)(void *priv, uint32_t *const *in, uint32_t *const *out);
} so_fast_kernel;


/* What the selector may fuse: user[i] is the only consumer node of node i's output 0
   when that output has exactly one use and is not a graph output, else -1.
   user == NULL disables fusion. absorbed[j] != 0: node j is already fused into another
   kernel and must not be absorbed again (may be NULL). */
typedef struct so_fast_ctx {
    const so_graph *g;
    const int32_t *user;
    const char *absorbed;
} so_fast_ctx;

/* Selects (and prepares: packs WEIGHT inputs) a fast kernel for node i. Sets k->run =
   NULL when the reference kernel should be used. Errors name the node. */
so_status so_fast_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);
/* The selection table's decision for op (kernels/fast.c, expanded from ops.def): the kernel module
   whose selection function binds its fast kernels ("conv", "nchwc", "matmul", "elem", "norm", "pool",
   "move", "deconv"), or NULL: reference only. */
const char *so_fast_module(so_op op);

/* MatMul/Gemm on our GEMM (gemm.c) instead of sgemm where selected (default 1; 0: sgemm
   everywhere, for A/B measurements). Read at kernel selection. */
extern int so_fast_use_gemm;
/* Which products with a weight B go to our GEMM instead of sgemm (kernels/matmul.c mm_use_gemm): M <= so_fast_gemm_max_m
   (default 1024), or any M when K <= so_fast_gemm_tall_k (default 384: ConvNeXt-T's stage-1 Linears [3136, 96] x
   [96, 384] and [3136, 384] x [384, 96], where this OpenBLAS's Zen kernels ran 43-57 GFLOP/s in-model against our
   GEMM's 70-85 on the other stages; 0: the M bound alone, as before session 24). Read at kernel selection. */
extern int64_t so_fast_gemm_max_m, so_fast_gemm_tall_k;
/* At the avx512 level, oneDNN's sgemm for so_sgemm (and the selection that prefers it) when libdnnl.so.2
   loads (default 1; 0: OpenBLAS and our kernels, for A/B runs and tests of the kernels it displaces).
   Read at kernel selection and at each sgemm. */
extern int so_fast_use_onednn;
/* MatMul/Gemm with M = 1 and a weight B on our packed GEMV (kernels/gemv.h; default 1; 0: sgemv, for A/B
   measurements and tests). Read at kernel selection. */
extern int so_fast_use_gemv;
/* M = 1 products whose weight has fewer than this many elements (K x N) stay on sgemv (default 65536): timed
   alone, our GEMV made nasrnn's 64 x 64 products cheaper in the cost model, so the search stopped merging them,
   while the merged graph ran faster (make run on data/nasrnn.onnx: 1.06-1.09x instead of 1.31-1.38x, session 13).
   The classifiers it was written for (960 x 1280, 1280 x 1000) are far above it. Tests set it to 0. */
extern int64_t so_fast_gemv_min;

#endif
