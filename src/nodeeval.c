/* nodeeval.c - the registered node evaluator (see nodeeval.h). */
#include "nodeeval.h"

#include <stdatomic.h>

static _Atomic(so_node_eval_fn) evaluator;

void so_node_eval_register(so_node_eval_fn fn) { atomic_store(&evaluator, fn); }

so_status so_node_eval(const so_graph *g, int32_t i, const so_tensor *in, so_tensor *out)
{
    so_node_eval_fn fn = atomic_load(&evaluator);
    if (!fn) return so_errorf("no node evaluator registered (the kernels are not linked)");
    return fn(g, i, in, out);
}
