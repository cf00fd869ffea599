/* dispatch.c - the public kernel entry points (fast.h, conv.h, dconv.h, gemm.h, winograd.h): each forwards to the kernel set of the current ISA level (so_isa_current). */
#include "kset.h"

const so_kset *so_kset_at(so_isa l)
{
#if defined(__x86_64__) || defined(__i386__)
    static const so_kset *const sets[SO_ISA_COUNT] = {&so_kset_scalar, &so_kset_avx2, &so_kset_avx512};
#else
    static const so_kset *const sets[SO_ISA_COUNT] = {&so_kset_scalar, NULL, NULL}; /* so_isa_cpu() is scalar */
#endif
    return sets[l];
}

/* The current level's set. An invalid SUPEROPT_ISA makes so_isa_current fail: the entry points
   returning so_status (so_fast_select: the executor, the cost model and the CLI select through it)
   report it; the others cannot, and run the scalar level, which every CPU has. */
static const so_kset *cur(void)
{
    so_isa l;
    return so_kset_at(so_isa_current(&l) == SO_OK ? l : SO_ISA_SCALAR);
}

#define SO_KFN(ret, name, params, args) \
    ret name params { return cur()->name##_fn args; }
#define SO_KFV(name, params, args) \
    void name params { cur()->name##_fn args; }
#define SO_KFS(name, params, args)                   \
    so_status name params                            \
    {                                                \
        so_isa l;                                    \
        if (so_isa_current(&l) != SO_OK) return SO_ERR; \
        return so_kset_at(l)->name##_fn args;        \
    }
#include "kset.def"
#undef SO_KFN
#undef SO_KFV
#undef SO_KFS
