/* blas.h - which kernels OpenBLAS runs on this CPU (its core, classified to our ISA levels) and whether the library products go around it (OpenBLAS below the level we run at). */
#ifndef SO_BLAS_H
#define SO_BLAS_H

#include "isa.h"

/* The ISA level of the kernels OpenBLAS uses for a core name (openblas_get_corename(), case-insensitive):
   SO_ISA_AVX512 for SkylakeX / Cooperlake / SapphireRapids, SO_ISA_AVX2 for Haswell / Zen, SO_ISA_SCALAR for every
   older core (Prescott, OpenBLAS's fallback for a CPU it does not recognise; Nehalem, Sandybridge: AVX without FMA;
   the AMD FMA4 cores; ...), -1 for a name not in the table (then OpenBLAS is trusted: nothing is routed around it). */
int so_blas_core_isa(const char *core);

/* This process's OpenBLAS core name (read once, at load: OpenBLAS picks its core in its own constructor, from cpuid
   or OPENBLAS_CORETYPE). Static storage. */
const char *so_blas_core(void);

/* 1 when so_sgemm's products run on our kernels instead of OpenBLAS at level l: by default when OpenBLAS's core is
   classified below l (OpenBLAS "degraded": a CPU newer than the OpenBLAS build, e.g. Debian's 0.3.21 on an Emerald
   Rapids Xeon falls back to Prescott's SSE3 kernels). Never at the scalar level. so_blas_route (or SUPEROPT_BLAS_ROUTE,
   read at load) overrides the rule: -1 (default, "auto") the rule, 0 OpenBLAS always, 1 ours always (tests on any CPU,
   A/B runs). */
int so_blas_ours(so_isa l);
extern int so_blas_route;

/* One line for reports: "OpenBLAS SkylakeX" or, when routed, "OpenBLAS Prescott (below avx512; sgemv/sgemm on
   superopt's kernels)". Returns buf. */
const char *so_blas_describe(so_isa l, char *buf, size_t n);

#endif
