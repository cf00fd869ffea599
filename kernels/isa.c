/* isa.c - CPU level detection (once, at load), the SUPEROPT_ISA / --isa override, level names. */
#include "isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define ISA_X86 1
#endif
#include <stdlib.h>
#include <string.h>

static const char *const isa_names[SO_ISA_COUNT] = {"scalar", "avx2", "avx512"};

static so_isa cpu_level;   /* set at load */
static int cur_level = -1; /* -1: SUPEROPT_ISA was invalid (env_msg says why) */
static char env_msg[160];
static char cpu_model[49] = "unknown";

const char *so_isa_name(so_isa l) { return (unsigned)l < SO_ISA_COUNT ? isa_names[l] : "?"; }

so_status so_isa_parse(const char *s, so_isa *out)
{
    for (int l = 0; l < SO_ISA_COUNT; l++)
        if (!strcmp(s, isa_names[l])) {
            *out = (so_isa)l;
            return SO_OK;
        }
    return so_errorf("unknown ISA level '%s' (scalar, avx2, avx512)", s);
}

static so_isa detect(void)
{
#ifndef ISA_X86
    return SO_ISA_SCALAR; /* the portable C path only */
#else
    __builtin_cpu_init();
    /* __builtin_cpu_supports also checks that the OS saves the YMM/ZMM state (XCR0). */
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return SO_ISA_SCALAR;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return SO_ISA_AVX512;
    return SO_ISA_AVX2;
#endif
}

static void read_model(void)
{
#ifdef ISA_X86
    unsigned r[12];
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) return;
    for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    char s[49];
    memcpy(s, r, 48);
    s[48] = 0;
    char *b = s, *e = s + strlen(s);
    while (*b == ' ') b++;
    while (e > b && e[-1] == ' ') e--;
    *e = 0;
    if (*b) memcpy(cpu_model, b, (size_t)(e - b) + 1);
#endif
}

/* Once, at load: the CPU's level, then SUPEROPT_ISA. */
__attribute__((constructor)) static void isa_init(void)
{
    cpu_level = detect();
    read_model();
    cur_level = (int)cpu_level;
    const char *env = getenv("SUPEROPT_ISA");
    if (!env || !*env) return;
    so_isa l;
    if (so_isa_parse(env, &l) != SO_OK) {
        snprintf(env_msg, sizeof env_msg, "SUPEROPT_ISA=%.32s: unknown ISA level (scalar, avx2, avx512)", env);
        cur_level = -1;
    } else if (l > cpu_level) {
        snprintf(env_msg, sizeof env_msg, "SUPEROPT_ISA=%s: this CPU supports up to %s", env, isa_names[cpu_level]);
        cur_level = -1;
    } else
        cur_level = (int)l;
}

so_isa so_isa_cpu(void) { return cpu_level; }

const char *so_isa_cpu_model(void) { return cpu_model; }

so_status so_isa_current(so_isa *out)
{
    if (cur_level < 0) return so_errorf("%s", env_msg);
    *out = (so_isa)cur_level;
    return SO_OK;
}

so_status so_isa_set(so_isa l)
{
    if ((unsigned)l >= SO_ISA_COUNT) return so_errorf("unknown ISA level %d", (int)l);
    if (l > cpu_level) return so_errorf("ISA level %s: this CPU supports up to %s", isa_names[l], isa_names[cpu_level]);
    cur_level = (int)l;
    return SO_OK;
}
