/* blas.c - OpenBLAS's core (read once at load), its ISA class, and the rule that routes so_sgemm's products around an OpenBLAS below our level. */
#include "blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *openblas_get_corename(void); /* OpenBLAS's own (cblas.h declares it in some versions only) */

int so_blas_route = -1;

static char core[32] = "unknown";
static int core_isa = -1;

/* OpenBLAS's x86 core names (driver/others/dynamic.c corename[]; TARGET names of static builds are the same words in
   capitals) by the widest vector ISA of the kernels it uses for them. */
static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
static const char *const avx2_cores[] = {"Haswell", "Zen"};
static const char *const older_cores[] = {"Prescott", "Katmai", "Coppermine", "Northwood", "Banias", "Atom", "Core2", "Penryn",
                                          "Dunnington", "Nehalem", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano",
                                          "Sandybridge", "Bobcat", "Bulldozer", "Piledriver", "Steamroller", "Excavator", "Generic"};

static int in(const char *s, const char *const *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(s, t[i])) return 1;
    return 0;
}

int so_blas_core_isa(const char *s)
{
    if (!s) return -1;
    if (in(s, avx512_cores, sizeof avx512_cores / sizeof *avx512_cores)) return SO_ISA_AVX512;
    if (in(s, avx2_cores, sizeof avx2_cores / sizeof *avx2_cores)) return SO_ISA_AVX2;
    if (in(s, older_cores, sizeof older_cores / sizeof *older_cores)) return SO_ISA_SCALAR;
    return -1;
}

/* After OpenBLAS's constructor (libopenblas is a dependency of this code: its initialisers run first). */
__attribute__((constructor)) static void blas_init(void)
{
    const char *c = openblas_get_corename();
    if (c && *c) snprintf(core, sizeof core, "%s", c);
    core_isa = so_blas_core_isa(core);
    const char *e = getenv("SUPEROPT_BLAS_ROUTE");
    if (e && (!strcmp(e, "0") || !strcmp(e, "1"))) so_blas_route = *e - '0';
}

const char *so_blas_core(void) { return core; }

int so_blas_ours(so_isa l)
{
    if (l <= SO_ISA_SCALAR) return 0; /* the portable level calls OpenBLAS whatever its core */
    if (so_blas_route >= 0) return so_blas_route;
    return core_isa >= 0 && core_isa < (int)l;
}

const char *so_blas_describe(so_isa l, char *buf, size_t n)
{
    if (!so_blas_ours(l))
        snprintf(buf, n, "OpenBLAS %s", core);
    else if (so_blas_route == 1)
        snprintf(buf, n, "OpenBLAS %s (SUPEROPT_BLAS_ROUTE=1; sgemv/sgemm on superopt's kernels)", core);
    else
        snprintf(buf, n, "OpenBLAS %s (below %s; sgemv/sgemm on superopt's kernels)", core, so_isa_name(l));
    return buf;
}
