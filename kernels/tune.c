/* tune.c - the kernels' tunable thresholds and block sizes (declared in fast.h, conv.h, deconv.h, gemm.h): defined once, shared by every ISA level's kernel set, changed only by tests and benchmarks. */
#include "conv.h"
#include "deconv.h"
#include "gemm.h"

/* MatMul/Gemm on our GEMM (gemm.c) where selected; 0: OpenBLAS everywhere (A/B runs). */
int so_fast_use_gemm = 1;
int64_t so_fast_gemm_max_m = 1024, so_fast_gemm_tall_k = 384; /* mm_use_gemm's rule (fast.h) */
/* oneDNN's sgemm at the avx512 level (kernels/sgemm.c). */
int so_fast_use_onednn = 1;
/* MatMul/Gemm with M = 1 and a weight B on our GEMV (kernels/matmul.c mm_use_gemv); 0: sgemv (A/B runs). */
int so_fast_use_gemv = 1;
int64_t so_fast_gemv_min = 65536;

int64_t so_conv_wino_min_hw = 27 * 27; /* SqueezeNet 27x27, 32 -> 128: 0.63 vs 0.745 ms im2col (paired, 1 thread) */
int64_t so_conv_wino_min_ch = 32;
int64_t so_conv_direct_max_cg = 32;
int64_t so_conv_dconv_min_c = 4, so_conv_dconv_max_wino_c = 32;
int64_t so_conv_pw_max_k = 96, so_conv_pw_max_ko = 8192, so_conv_pw_max_hw = 28 * 28;
int64_t so_conv_dw_c8_max_hw = 14 * 14; /* vs the row kernel: 14x14 s1 0.86x, 7x7 0.45x, 14x14 -> 7x7 0.64x; 28x28 s1 1.18x, 28x28 -> 14x14 1.12x */
int64_t so_conv_pk_kc = 1024, so_conv_pk_np = 96, so_conv_pk_max_hw = 8 * 8;

/* GEMM cache blocking (L1d 32 KB, L2 512 KB per core at the time of measuring): a KC x NR packed B
   micro-panel (KC = 384: 24 KB) stays in L1 while the MC x KC packed A block (at most 216 KB) stays
   in L2 and its MR-row micro-panels stream through the micro-kernel. */
int64_t so_gemm_kc = 384;
int64_t so_gemm_mc = 144; /* a multiple of MR: rounded down by the kernels otherwise */
/* Small M (M <= MC): all of op(A) is packed once per call (shared by the threads) and the
   column panels are walked in blocks whose C block (M x NC) stays in L2 over the K blocks
   (C is written back once instead of re-read from L3 per K block). */
int64_t so_gemm_nc_bytes = 192 << 10;
/* Small M, A not transposed: full row panels read A in place (no packing pass). */
int so_gemm_direct_a = 1;
/* Column block of the per-thread packed B (weights-as-A path): KC x NC floats (NC = 384:
   576 KB at KC = 384, L3-resident; each KC x NR micro-panel is reused from L1 over an MC
   block of rows). */
int64_t so_gemm_ap_nc = 384;
int64_t so_gemm_conv_max_w = (int64_t)1 << 18;
/* ConvTranspose column tile: 256 K floats (1 MB, about an L2) of GEMM result per col2im pass */
int64_t so_deconv_tile_floats = (int64_t)1 << 18;
