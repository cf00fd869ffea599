/* kset.h - the kernel set of one ISA level as a table of its entry points (kset.def), and the table of each level. */
#ifndef SO_KSET_H
#define SO_KSET_H

#include "isa.h"
#include "chain.h"
#include "dconv.h"
#include "fast.h"
#include "gemm.h"
#include "gemv.h"
#include "sgemm.h"

/* One level's implementation of every entry point in kset.def (field so_x_fn for so_x). The
   kernels a table's so_fast_select returns (so_fast_kernel.run) belong to the same level, so a
   planned executor calls them directly: the level is decided once per node, at selection. */
typedef struct so_kset {
#define SO_KFN(ret, name, params, args) ret(*name##_fn) params;
#define SO_KFV(name, params, args) void(*name##_fn) params;
#define SO_KFS(name, params, args) so_status(*name##_fn) params;
#include "kset.def"
#undef SO_KFN
#undef SO_KFV
#undef SO_KFS
    so_isa level;
} so_kset;

/* The table of level l (l < SO_ISA_COUNT). Its functions may only run when l <= so_isa_cpu(). */
const so_kset *so_kset_at(so_isa l);

/* Each level's table, defined by kset.c compiled for that level (kset.c, kset_avx2.c, kset_avx512.c). */
extern const so_kset so_kset_scalar, so_kset_avx2, so_kset_avx512;

#endif
