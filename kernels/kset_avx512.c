/* kset_avx512.c - the kernel set compiled for AVX-512 F/BW/VL/DQ + FMA (Makefile flags); reached only through so_kset_at(SO_ISA_AVX512) after the dispatch checked the CPU. */
#if defined(__x86_64__) || defined(__i386__)
#define SO_KSET_SUFFIX avx512
#define SO_KSET_LEVEL SO_ISA_AVX512
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
typedef int so_kset_avx512_absent;
#endif
