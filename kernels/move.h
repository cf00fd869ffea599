/* move.h - data movement kernels: Transpose, Concat, Split, constant Pad, Resize. */
#ifndef SO_MOVE_H
#define SO_MOVE_H

#include "fast.h"

/* Selects a kernel for node i when it is one of Transpose, Concat, Split, Pad, Resize (so_fast_select's contract); SO_OK with
   k->run == NULL for any other node. */
so_status so_move_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k);

#endif
