/* fuzz_common.h - checks shared by the libFuzzer targets: error messages must be one non-empty line with the expected prefix. */
#ifndef SO_FUZZ_COMMON_H
#define SO_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Aborts (libFuzzer reports a crash with this input) unless the current error message is
   one non-empty line starting with prefix. */
static inline void fuzz_check_message(const char *prefix)
{
    const char *msg = so_error();
    size_t n = strlen(prefix);
    if (!msg[0] || strchr(msg, '\n') || strncmp(msg, prefix, n) != 0) {
        fprintf(stderr, "fuzz: bad error message (want one line starting with '%s'): '%s'\n", prefix, msg);
        abort();
    }
}

#endif
