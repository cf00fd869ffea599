/* isa_levels.h - runs a cmocka test group once per kernel ISA level, scalar up to the current one (SUPEROPT_ISA or the CPU's). */
#ifndef SO_TEST_ISA_LEVELS_H
#define SO_TEST_ISA_LEVELS_H

#include <stdio.h>

#include "../kernels/isa.h"

/* The level the running group tests (set by run_at_levels before each pass). */
static so_isa test_level = SO_ISA_SCALAR;

/* Kernel names that only some levels have: `name` at test_level >= min, else NULL (no assertion). */
static inline const char *kernel_from(so_isa min, const char *name) { return test_level >= min ? name : NULL; }

/* Runs tests[0..n) at every level from scalar to so_isa_current() (SUPEROPT_ISA caps it: valgrind
   runs at avx2). Returns the number of failed tests over all passes (the process exit status). */
static inline int run_at_levels(const char *group, const struct CMUnitTest *tests, size_t n)
{
    so_isa top;
    if (so_isa_current(&top) != SO_OK) {
        fprintf(stderr, "%s: %s\n", group, so_error());
        return 1;
    }
    int failed = 0;
    for (int l = SO_ISA_SCALAR; l <= (int)top; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s at %s", group, so_isa_name((so_isa)l));
        test_level = (so_isa)l;
        if (so_isa_set(test_level) != SO_OK) return 1;
        failed += _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    }
    (void)so_isa_set(top);
    return failed;
}

#endif
