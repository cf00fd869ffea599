/* fuzz_inputs.c - libFuzzer target: the raw float32 input reader of `superopt run --inputs`
   (so_read_file_exact) and the executor (fast and reference kernels) fed whatever it read,
   including NaN, infinities and denormals. Input: one byte choosing a model, then the file's bytes. */
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "../../kernels/exec.h"
#include "fuzz_common.h"
#include "graph.h"
#include "onnx_io.h"

#ifndef SO_FUZZ_DATA
#define SO_FUZZ_DATA "data"
#endif

static const char *const model_names[] = {"deepandwide", "lstm2", "nasrnn"};
#define N_MODELS ((int)SO_ARRAY_LEN(model_names))

typedef struct fmodel {
    so_model *m;
    so_exec *fast, *ref;
    size_t in_bytes;
    float **ins, **outs, **routs;
    size_t *out_n;
} fmodel;

static fmodel models[N_MODELS];
static char file_path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void setup(fmodel *f, const char *name)
{
    char path[512];
    const char *dir = getenv("SO_FUZZ_DATA") ? getenv("SO_FUZZ_DATA") : SO_FUZZ_DATA;
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    if (so_onnx_load(path, &f->m) != SO_OK) {
        fprintf(stderr, "fuzz_inputs: %s (set SO_FUZZ_DATA to the data/ directory)\n", so_error());
        exit(1);
    }
    so_exec_opts fast = {.threads = 1}, ref = {.threads = 1, .reference = 1};
    if (so_exec_new(f->m->graph, &fast, &f->fast) != SO_OK || so_exec_new(f->m->graph, &ref, &f->ref) != SO_OK) {
        fprintf(stderr, "fuzz_inputs: %s\n", so_error());
        exit(1);
    }
    const so_graph *g = f->m->graph;
    f->ins = so_xcalloc((size_t)f->m->n_inputs + 1, sizeof *f->ins);
    f->outs = so_xcalloc((size_t)f->m->n_outputs + 1, sizeof *f->outs);
    f->routs = so_xcalloc((size_t)f->m->n_outputs + 1, sizeof *f->routs);
    f->out_n = so_xcalloc((size_t)f->m->n_outputs + 1, sizeof *f->out_n);
    for (int32_t k = 0; k < f->m->n_inputs; k++) {
        size_t n = (size_t)so_shape_numel(&f->m->inputs[k].shape);
        f->ins[k] = so_xcalloc(n ? n : 1, sizeof(float));
        f->in_bytes += n * sizeof(float);
    }
    for (int32_t k = 0; k < f->m->n_outputs; k++) {
        size_t n = (size_t)so_shape_numel(&g->nodes[g->outputs[k].node].out[g->outputs[k].slot]);
        f->outs[k] = so_xcalloc(n ? n : 1, sizeof(float));
        f->routs[k] = so_xcalloc(n ? n : 1, sizeof(float));
        f->out_n[k] = n;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(file_path, sizeof file_path, "%s/superopt-fuzz-inputs-%ld.bin", tmp, (long)getpid());
    for (int i = 0; i < N_MODELS; i++) setup(&models[i], model_names[i]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fmodel *f = &models[data[0] % N_MODELS];
    FILE *fp = fopen(file_path, "wb");
    if (!fp || fwrite(data + 1, 1, size - 1, fp) != size - 1 || fclose(fp) != 0) abort();
    float *all = so_xmalloc(f->in_bytes + 1);
    if (so_read_file_exact(file_path, all, f->in_bytes) != SO_OK) {
        if (size - 1 == f->in_bytes) abort(); /* right size must read */
        fuzz_check_message(file_path);
        free(all);
        unlink(file_path);
        return 0;
    }
    unlink(file_path);
    if (size - 1 != f->in_bytes) abort(); /* wrong size must not read */
    size_t off = 0;
    int tame = 1; /* all inputs finite and small: fast and reference kernels must agree */
    for (size_t i = 0; i < f->in_bytes / sizeof(float); i++)
        if (!(all[i] >= -8.0f && all[i] <= 8.0f)) tame = 0;
    for (int32_t k = 0; k < f->m->n_inputs; k++) {
        size_t n = (size_t)so_shape_numel(&f->m->inputs[k].shape);
        memcpy(f->ins[k], all + off, n * sizeof(float));
        off += n;
    }
    free(all);
    if (so_exec_run(f->fast, (const float *const *)f->ins, f->outs) != SO_OK) abort();
    if (so_exec_run(f->ref, (const float *const *)f->ins, f->routs) != SO_OK) abort();
    if (!tame) return 0;
    for (int32_t k = 0; k < f->m->n_outputs; k++) {
        float scale = 1.0f;
        for (size_t i = 0; i < f->out_n[k]; i++) scale = fmaxf(scale, fabsf(f->routs[k][i]));
        for (size_t i = 0; i < f->out_n[k]; i++)
            if (!(fabsf(f->outs[k][i] - f->routs[k][i]) <= 1e-3f * scale)) {
                fprintf(stderr, "fuzz_inputs: %s output %d[%zu]: fast %g, reference %g\n", model_names[f - models],
                        (int)k, i, (double)f->outs[k][i], (double)f->routs[k][i]);
                abort();
            }
    }
    return 0;
}
