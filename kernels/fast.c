/* fast.c - fast kernel selection: so_fast_select asks the conv module, then each kernel module in turn. */
#include "kset_names.h"

#include "fast.h"

#include <string.h>

#include "conv.h"
#include "elem.h"
#include "matmul.h"
#include "move.h"
#include "nchwc.h"
#include "norm.h"
#include "pool.h"

#ifdef SO_KSET_LEVEL
#define SO_NCHWC_LEVEL SO_KSET_LEVEL /* this kernel set's level picks the blocked kernels too */
#else
#define SO_NCHWC_LEVEL SO_ISA_SCALAR
#endif

static so_status conv_module(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    return c->g->nodes[i].op == SO_OP_CONV ? so_conv_select(c, i, k) : SO_OK;
}

/* the blocked-layout operators (kernels/nchwc.c, one set per level chosen by the level argument) */
static so_status nchwc_module(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    return so_ops[c->g->nodes[i].op].flags & SO_F_LAYOUT ? so_nchwc_select(c, i, k, SO_NCHWC_LEVEL) : SO_OK;
}

/* Each module handles its own operators (returns with k->run == NULL on any other node): the first
   that binds a kernel wins. */

so_status so_fast_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    static so_status (*const modules[])(const so_fast_ctx *, int32_t, so_fast_kernel *) = {
        conv_module, nchwc_module, so_matmul_select, so_elem_select, so_norm_select, so_pool_select, so_move_select};
    memset(k, 0, sizeof *k);
    const so_node *n = &c->g->nodes[i];
    for (int32_t q = 0; q < n->n_out; q++)
        if (n->out[q].rank < 0) return SO_OK;
    for (size_t m = 0; m < sizeof modules / sizeof *modules; m++) {
        if (modules[m](c, i, k) != SO_OK) return SO_ERR;
        if (k->run) break;
    }
    return SO_OK;
}
