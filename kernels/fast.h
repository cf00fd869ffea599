/* fast.h - fast kernels (OpenBLAS sgemm conv/matmul, vectorised loops) selected per node at load time, with weights pre-packed. */
#ifndef SO_FAST_H
#define SO_FAST_H

#include "ref.h"

/* A kernel bound to one node: run(priv, in, out, scratch) computes the node's outputs
   from its inputs (shapes fixed at selection). scratch has at least scratch_bytes
   (64-byte aligned) and is shared between steps. run == NULL: no fast kernel, use the
   reference kernel. priv is owned by the kernel: release with free_priv(priv). */
typedef struct so_fast_kernel {
    void (*run)(void *priv, const so_tensor *in, so_tensor *out, float *scratch);
    void *priv;
    void (*free_priv)(void *priv);
    size_t scratch_bytes;
    size_t packed_bytes; /* bytes of pre-packed weights held in priv */
    const char *name;
} so_fast_kernel;

/* Selects (and prepares: packs WEIGHT inputs) a fast kernel for node i of g. Sets
   k->run = NULL when the reference kernel should be used. Errors name the node. */
so_status so_fast_select(const so_graph *g, int32_t i, so_fast_kernel *k);

#endif
