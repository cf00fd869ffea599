/* isa.h - instruction-set levels of the fast kernels: what the CPU supports (cpuid, read once at load), the level the kernels run at (SUPEROPT_ISA, --isa), names. */
#ifndef SO_ISA_H
#define SO_ISA_H

#include "../src/common.h"

/* Kernel levels, ordered: each includes the ones before it.
   SO_ISA_SCALAR: the portable C path, compiled for the build's baseline (x86-64-v2 by default).
   SO_ISA_AVX2:   AVX2 + FMA (kernels/kset_avx2.c).
   SO_ISA_AVX512: AVX-512 F, BW, VL, DQ + FMA (kernels/kset_avx512.c). */
typedef enum so_isa { SO_ISA_SCALAR = 0, SO_ISA_AVX2 = 1, SO_ISA_AVX512 = 2, SO_ISA_COUNT = 3 } so_isa;

/* "scalar", "avx2", "avx512". */
const char *so_isa_name(so_isa l);
/* Parses a level name; SO_ERR with "unknown ISA level 'x' (scalar, avx2, avx512)" otherwise. */
so_status so_isa_parse(const char *s, so_isa *out);

/* The highest level this CPU and its OS support (cpuid and XCR0 through the compiler's
   __builtin_cpu_supports; under valgrind, what valgrind emulates). */
so_isa so_isa_cpu(void);
/* The CPU's brand string (cpuid 0x80000002..4, spaces trimmed; "unknown" without it). Static storage. */
const char *so_isa_cpu_model(void);

/* The level kernels are selected at: the last so_isa_set, else SUPEROPT_ISA (read once, at
   load), else so_isa_cpu(). SO_ERR with a message naming SUPEROPT_ISA when that variable holds
   an unknown name or a level above the CPU's. */
so_status so_isa_current(so_isa *out);
/* Selects level l for kernels selected from now on (executors already built keep theirs).
   SO_ERR ("this CPU supports up to avx2") above so_isa_cpu(). Not thread-safe: call it
   between executor builds (the CLI once at start, tests between cases). */
so_status so_isa_set(so_isa l);

#endif
