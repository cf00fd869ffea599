/* kset_avx2.c - the kernel set compiled for AVX2 + FMA (Makefile: -mavx2 -mfma); reached only through so_kset_at(SO_ISA_AVX2) after the dispatch checked the CPU. */
#if defined(__x86_64__) || defined(__i386__)
#define SO_KSET_SUFFIX avx2
#define SO_KSET_LEVEL SO_ISA_AVX2
#include "kset.c"
#include "fast.c"
#include "chain.c"
#include "epi.c"
#include "sgemm.c"
#include "conv.c"
#include "dconv.c"
#include "gemm.c"
#include "gemv.c"
#include "winograd.c"
#include "matmul.c"
#include "elem.c"
#include "norm.c"
#include "pool.c"
#include "move.c"
#include "deconv.c"
#else
/* not x86: this level does not exist (so_isa_cpu() is scalar, so_kset_at never returns it) */
typedef int so_kset_avx2_absent;
#endif
