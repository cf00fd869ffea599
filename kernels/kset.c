/* kset.c - the table of this compilation's ISA level (kset_names.h): built as the scalar level, and included by kset_avx2.c / kset_avx512.c for theirs. */
#include "kset_names.h"

#include "kset.h"

#ifndef SO_KSET_LEVEL
#define SO_KSET_LEVEL SO_ISA_SCALAR
#endif

const so_kset SO_KN(so_kset) = {
#define SO_KFN(ret, name, params, args) name,
#define SO_KFV(name, params, args) name,
#define SO_KFS(name, params, args) name,
#include "kset.def"
#undef SO_KFN
#undef SO_KFV
#undef SO_KFS
    SO_KSET_LEVEL,
};
