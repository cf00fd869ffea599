/* elem.h - element-wise kernels: binary with broadcasting, unary, the fused erf-form GELU. */
#ifndef SO_ELEM_H
#define SO_ELEM_H

#include "fast.h"

/* Selects a kernel for node i when it is one of Add, Sub, Mul, Div (GELU chain), Pow and the unary operators (so_fast_select's contract); SO_OK with
   k->run == NULL for any other node. */
so_status so_elem_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

#endif
