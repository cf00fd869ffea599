/* exec.h - the executor: plans memory once by liveness, pre-packs weights, picks a kernel per node, then runs a flat list of kernel calls; per-node profiler and FLOP counter. */
#ifndef SO_EXEC_H
#define SO_EXEC_H

#include <stdint.h>
#include <stdio.h>

#include "../src/graph.h"

typedef struct so_exec so_exec;

typedef struct so_exec_opts {
    int threads;   /* OpenBLAS + OpenMP threads; <= 0 means 1 */
    int reference; /* 1: reference kernels only (still planned memory) */
    int profile;   /* 1: collect per-node times on every run */
    int consume_weights; /* 1: the caller gives up the model's weights to this executor: a float
                            weight read only as the packed/transformed operand of kernels that
                            keep their own copy (so_gemm MatMul/Gemm B, Winograd, stem and
                            so_gemm 1x1 conv weights; not a graph output, no other reader) is
                            freed at so_exec_new and its so_weight.data set to NULL, so any later
                            read of it faults instead of seeing stale data. Only for a caller that
                            runs this executor and then frees the model (superopt run): never
                            when the model is exported, optimized, re-planned or timed later.
                            0 (default): weights untouched. */
    int hugepages;       /* 1: so_heap_hugepages() once the kernels are selected and their weights packed (a caller
                            that runs the model many times: superopt run, API sessions); 0 (default): no process-wide
                            effect (the cost model's node timings, tests) */
} so_exec_opts;

/* Plans memory (liveness-based buffer reuse), pre-packs weights, selects a kernel per
   node. Errors name the node (opaque ops: "unsupported operator 'X' at node 'y'").
   The graph must be topologically sorted with shapes inferred. The graph and its model
   must outlive the executor (weights are referenced, not copied, where not packed).
   opts may be NULL (1 thread, fast kernels, no profile). On success *out is owned by
   the caller: free with so_exec_free. */
so_status so_exec_new(const so_graph *g, const so_exec_opts *opts, so_exec **out);

/* inputs: one float buffer per model input (graph input order, shapes of the INPUT nodes);
   outputs: caller buffers, one per model output, sized from the graph's output shapes.
   Not reentrant: one run at a time per executor (it owns the activation buffers). */
so_status so_exec_run(so_exec *e, const float *const *inputs, float *const *outputs);

/* Bytes of the planned activation arena (peak live activation bytes after reuse). */
size_t so_exec_peak_activation_bytes(const so_exec *e);
/* The ISA level its fast kernels were selected at (kernels/isa.h: so_isa_current at so_exec_new):
   "scalar", "avx2", "avx512"; "reference" with opts.reference. */
const char *so_exec_isa_name(const so_exec *e);
/* The library its sgemm-based kernels call at that level (kernels/blas.h so_blas_describe): "OpenBLAS SkylakeX", or
   "OpenBLAS Prescott (below avx512; sgemv/sgemm on superopt's kernels)"; "reference" with opts.reference. */
const char *so_exec_blas_name(const so_exec *e);
/* Bytes of weights the executor holds (model weights referenced + packed copies, less released). */
size_t so_exec_weight_bytes(const so_exec *e);
/* Bytes of model weights released at so_exec_new (opts.consume_weights), and how many. */
size_t so_exec_released_weight_bytes(const so_exec *e);
int32_t so_exec_n_released_weights(const so_exec *e);

/* ---- profile (when opts.profile) ---- */
/* Number of kernel steps (nodes that do work; views and sources are not steps). */
int32_t so_exec_n_steps(const so_exec *e);

typedef struct so_exec_step_info {
    int32_t node;        /* graph node index */
    so_op op;
    const char *kernel;  /* name of the selected kernel, e.g. "conv1x1_sgemm", "ref" */
    double median_ms;    /* median over profiled runs; 0 if not profiled */
    double min_ms;       /* fastest profiled run (a loaded machine's best view of the step); 0 if not profiled */
    int64_t flops;       /* so_node_flops, the absorbed nodes' included */
    int32_t n_fused;     /* nodes the step's kernel absorbed (kernels/fuse.h decisions), in order */
    int32_t fused[4];
    char path[24];       /* the kernel's run-time path note (so_fast_kernel.path: e.g. "fast", "exact", "fast3/5"), or "" */
} so_exec_step_info;

/* Fills *info for step i in [0, n_steps). */
void so_exec_step(const so_exec *e, int32_t i, so_exec_step_info *info);
/* Number of profiled runs so far. */
int32_t so_exec_n_profiled_runs(const so_exec *e);
/* Per node and per op kind: median ms, share of total, GFLOP/s for conv/gemm/matmul. */
void so_exec_profile_print(const so_exec *e, FILE *f);

void so_exec_free(so_exec *e);

/* The one single-node timer (the measured cost model's): times node `node` of g alone with the
   kernel the executor would select (no fusion), on seeded random inputs (WEIGHT inputs are the
   model's weights), as it runs inside a model: caches overwritten before each run, weights
   flushed from the caches when `cold` (not before the warm-up under so_exec_time_lean). After one
   warm-up, at least 2 runs and more until 4 ms of kernel time (at most iters; lean and cold with
   flushes dearer than the kernel: 8 runs once runs and flushes reach 4 ms); *ms is the lower
   quartile of the runs. Source, view and opaque nodes cost 0. */
so_status so_exec_time_node(const so_graph *g, int32_t node, int threads, int cold, int iters, double *ms);
/* 1 (default): lean timing (exec.c: no weight flush before the warm-up run; a cold configuration whose
   flushes cost more than its kernel stops after 8 runs); 0: the timer before session 16 (tests, A/B runs). */
extern int so_exec_time_lean;
/* 1 (default): the cold timing flushes with clflushopt where the CPU has it (exec.c: the same lines leave
   the caches, 10-50x cheaper than clflush); 0: clflush, as before session 20 (A/B runs, tests). */
extern int so_exec_time_flushopt;
/* What so_exec_time_step timed: the kernel's name ("ref" for the reference kernel), the nodes it absorbed, and
   the bytes flushed from the caches before each timed run when `cold` (the weight inputs, and the kernel's packed
   copy of them where it reads that instead: a matmul's packed B). */
typedef struct so_exec_timed {
    const char *kernel;
    int32_t n_fused;
    int32_t fused[4];
    size_t flushed_bytes;
    const char *flush; /* the instruction that flushed them: "clflushopt", "clflush", or NULL (warm) */
    /* where the call's wall time went (seconds): selecting the kernel (plans, packed weights),
       the timing buffers (allocation, random inputs), the cache eviction and weight flushes before
       each run, the kernel runs themselves (warm-up included); runs counts them */
    double select_seconds, setup_seconds, flush_seconds, kernel_seconds;
    int32_t runs;
    /* the timed runs' (warm-up excluded) fastest kernel time and least eviction + flush time (ms) when the
       series stopped: so_exec_time_enough(runs - 1, fastest_ms, least_flush_ms, cold) held then, or iters ran */
    double fastest_ms, least_flush_ms;
} so_exec_timed;
/* The timer's stop rule after `done` timed runs whose fastest kernel time is fastest_ms and least eviction +
   flush time least_flush_ms: 1 at MIN_RUNS (2) runs or more once done * fastest_ms reaches 4 ms of kernel time; or,
   lean (so_exec_time_lean) and cold, at 8 runs or more when the flush costs more than the kernel and runs with
   their flushes reach 4 ms (done * (fastest_ms + least_flush_ms)); else 0. Reads nothing but its arguments and
   so_exec_time_lean: tests give it scripted times. */
int so_exec_time_enough(int done, double fastest_ms, double least_flush_ms, int cold);
/* The same timer for a fused step: node `node` with the kernel the executor would select given
   user[] (kernels/fuse.h so_fuse_users; NULL: no fusion, = so_exec_time_node), which may absorb
   successors (attention, GELU, pad+pool, epilogue chains): its inputs are then the node's plus the
   kernel's extra input, its outputs the last absorbed node's. *what (may be NULL) says what ran. */
so_status so_exec_time_step(const so_graph *g, int32_t node, const int32_t *user, int threads, int cold, int iters, double *ms,
                            so_exec_timed *what);

/* Floating-point operations of node i (multiply-add = 2): conv, matmul, gemm, LSTM exact;
   element-wise/normalisation/pooling approximately one per output (pool: per window
   element); 0 for sources and views. */
int64_t so_node_flops(const so_graph *g, int32_t i);
/* ops.def's FLOP decision for op, in words: "none", "per output element", "per input element",
   or "counted" (an operator-specific count: conv, matmul, pooling windows...). */
const char *so_flops_rule(so_op op);

#endif
