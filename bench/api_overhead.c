/* api_overhead.c - benchmark (make bench-api): what the public C API adds to a run. DeepAndWide (a 9-node model
   whose run takes about a microsecond, so any overhead shows) is run through superopt_session_run and through the
   executor underneath it (so_exec_run on the same model, same options), interleaved over rounds; per round the
   median per-call time of each; prints the medians and the overhead (API - executor) as one JSON line.
   Usage: api_overhead [MODEL.onnx] [ROUNDS] [CALLS]   (defaults data/deepandwide.onnx 21 20000)
   It links the static library whole (the executor and the core's timer, random fill and median: src/common.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/superopt.h"
#include "../kernels/exec.h"
#include "../src/common.h"
#include "../src/onnx_io.h"

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "data/deepandwide.onnx";
    int rounds = argc > 2 ? atoi(argv[2]) : 21, calls = argc > 3 ? atoi(argv[3]) : 20000;
    if (rounds < 1 || calls < 1) return 2;
    superopt_session *s = NULL;
    if (superopt_session_open(path, NULL, &s) != SUPEROPT_OK) {
        fprintf(stderr, "api_overhead: %s\n", superopt_last_error());
        return 1;
    }
    so_model *m = NULL;
    so_exec *e = NULL;
    so_exec_opts eo = {.threads = 1, .consume_weights = 1}; /* what a session's executor gets */
    if (so_onnx_load(path, &m) != SO_OK || so_exec_new(m->graph, &eo, &e) != SO_OK) {
        fprintf(stderr, "api_overhead: %s\n", so_error());
        return 1;
    }
    size_t n_in = superopt_session_input_count(s), n_out = superopt_session_output_count(s);
    superopt_tensor *ins = calloc(n_in + 1, sizeof *ins), *outs = calloc(n_out + 1, sizeof *outs);
    const float **eins = calloc(n_in + 1, sizeof *eins);
    float **eouts = calloc(n_out + 1, sizeof *eouts);
    uint64_t seed = 1;
    for (size_t i = 0; i < n_in; i++) {
        superopt_tensor_info t;
        superopt_session_input_info(s, i, &t);
        float *d = malloc(t.bytes);
        so_rng_fill(&seed, d, t.bytes / 4);
        ins[i] = (superopt_tensor){t.name, t.dtype, t.rank, t.dims, d, t.bytes};
        eins[i] = d;
    }
    for (size_t i = 0; i < n_out; i++) {
        superopt_tensor_info t;
        superopt_session_output_info(s, i, &t);
        outs[i] = (superopt_tensor){t.name, t.dtype, t.rank, t.dims, malloc(t.bytes), t.bytes};
        eouts[i] = outs[i].data;
    }
    double *api = malloc((size_t)rounds * sizeof *api), *ex = malloc((size_t)rounds * sizeof *ex), *diff = malloc((size_t)rounds * sizeof *diff);
    for (int w = 0; w < 1000; w++) { /* warm-up */
        so_exec_run(e, eins, eouts);
        superopt_session_run(s, ins, n_in, outs, n_out);
    }
    for (int r = 0; r < rounds; r++) {
        /* alternate which goes first, so that a drift of the machine falls on both */
        for (int half = 0; half < 2; half++) {
            int use_api = (r + half) % 2;
            double t0 = so_now();
            if (use_api) {
                for (int c = 0; c < calls; c++)
                    if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) {
                        fprintf(stderr, "api_overhead: %s\n", superopt_session_error(s));
                        return 1;
                    }
            } else
                for (int c = 0; c < calls; c++) so_exec_run(e, eins, eouts);
            double us = (so_now() - t0) * 1e6 / calls;
            if (use_api) api[r] = us;
            else ex[r] = us;
        }
        diff[r] = api[r] - ex[r];
    }
    double d = so_median(diff, (size_t)rounds);
    printf("{\"model\": \"%s\", \"rounds\": %d, \"calls\": %d, \"exec_run_us\": %.4f, \"session_run_us\": %.4f, \"overhead_us\": %.4f}\n", path,
           rounds, calls, so_median(ex, (size_t)rounds), so_median(api, (size_t)rounds), d);
    for (size_t i = 0; i < n_in; i++) free(ins[i].data);
    for (size_t i = 0; i < n_out; i++) free(outs[i].data);
    free(ins);
    free(outs);
    free(eins);
    free(eouts);
    free(api);
    free(ex);
    free(diff);
    so_exec_free(e);
    so_model_free(m);
    superopt_session_close(s);
    return 0;
}
