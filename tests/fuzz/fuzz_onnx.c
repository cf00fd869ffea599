/* fuzz_onnx.c - libFuzzer target: so_onnx_load_buffer (protobuf decode, initializers, node import,
   constant folding, shape inference) on arbitrary bytes; checks clean errors and graph invariants. */
#include <stdint.h>

#include "fuzz_common.h"
#include "graph.h"
#include "onnx_io.h"

/* A directory that does not exist: external-data references can never reach a real file. */
#define FUZZ_PATH "/nonexistent-superopt-fuzz/model.onnx"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* 16 MiB: keeps accepted models under the rss limit and constant folding (linear in the
       folded size, ~1 s for 4M elements under the sanitizers) under the 10 s timeout */
    so_max_alloc_bytes = (size_t)16 << 20;
    return 0;
}

static void check_graph(const so_model *m)
{
    const so_graph *g = m->graph;
    if (!g || g->model != m || m->n_outputs < 1) abort();
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        if ((int)n->op < 0 || n->op >= SO_OP_COUNT || !n->attr || n->n_out < 1) abort();
        for (int32_t k = 0; k < n->n_in; k++) {
            so_edge e = n->in[k];
            if (e.node < 0) continue; /* absent optional input */
            /* toposorted: every input comes from an earlier node */
            if (e.node >= i || e.slot < 0 || e.slot >= g->nodes[e.node].n_out) abort();
        }
        for (int32_t k = 0; k < n->n_out; k++)
            if (n->out[k].rank > SO_MAX_RANK) abort();
        if (n->op == SO_OP_WEIGHT && (n->ref < 0 || n->ref >= m->n_weights)) abort();
        if (n->op == SO_OP_INPUT && (n->ref < 0 || n->ref >= m->n_inputs)) abort();
        if (n->op == SO_OP_OPAQUE && (n->ref < 0 || n->ref >= m->n_opaque)) abort();
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        so_edge e = g->outputs[o];
        if (e.node < 0 || e.node >= g->n_nodes || e.slot < 0 || e.slot >= g->nodes[e.node].n_out) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    so_model *m = NULL;
    if (so_onnx_load_buffer(FUZZ_PATH, data, size, &m) == SO_OK) {
        check_graph(m);
        so_model_free(m);
    } else {
        if (m) abort(); /* *out must be NULL on failure */
        fuzz_check_message(FUZZ_PATH ": ");
    }
    return 0;
}
