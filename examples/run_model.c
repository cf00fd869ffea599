/* run_model.c - example client of libsuperopt's C API: opens a model, lists its inputs and outputs, runs it on
   inputs read from a file and compares the outputs with a stored reference.

   Build against an installed superopt:  cc run_model.c $(pkg-config --cflags --libs superopt) -o run_model
   Usage: run_model MODEL.onnx INPUTS.bin EXPECTED.bin [RUNS]
   INPUTS.bin / EXPECTED.bin: raw float32, every graph input (output) back to back in graph order (data/NAME.in.bin,
   data/NAME.out.bin). Prints the model's tensors and "OK" when every output is within |a-b| <= 1e-5 + 1e-4 |b|;
   exit 0 on OK, 1 otherwise (with the library's message). RUNS (default 3) repeats the run on the same
   caller-owned buffers: the session allocates nothing per run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <superopt.h>

/* Reads the whole file into a malloc'd buffer; NULL on failure (message printed). */
static void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "run_model: %s: cannot open\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "run_model: %s: read error\n", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void print_info(const char *kind, const superopt_tensor_info *t)
{
    printf("  %s '%s' %s [", kind, t->name, superopt_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->rank; d++) printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
    printf("]\n");
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: run_model MODEL.onnx INPUTS.bin EXPECTED.bin [RUNS]\n");
        return 2;
    }
    int runs = argc == 5 ? atoi(argv[4]) : 3, rc = 1;
    size_t in_len = 0, want_len = 0;
    char *in_data = read_file(argv[2], &in_len), *want = read_file(argv[3], &want_len);
    superopt_config *cfg = NULL;
    superopt_session *s = NULL;
    superopt_tensor *ins = NULL, *outs = NULL;
    if (!in_data || !want) goto done;

    /* options are key/value strings, checked when set */
    if (superopt_config_new(&cfg) != SUPEROPT_OK || superopt_config_set(cfg, "threads", "1") != SUPEROPT_OK) {
        fprintf(stderr, "run_model: %s\n", cfg ? superopt_config_error(cfg) : superopt_last_error());
        goto done;
    }
    if (superopt_session_open(argv[1], cfg, &s) != SUPEROPT_OK) {
        fprintf(stderr, "run_model: %s\n", superopt_last_error()); /* no session: the thread's message */
        goto done;
    }
    printf("%s (libsuperopt %s)\n", argv[1], superopt_version());

    /* inputs: pointers into the file's bytes, described by the session's own infos */
    size_t n_in = superopt_session_input_count(s), n_out = superopt_session_output_count(s), off = 0;
    ins = calloc(n_in + 1, sizeof *ins);
    outs = calloc(n_out + 1, sizeof *outs);
    for (size_t i = 0; i < n_in; i++) {
        superopt_tensor_info t;
        superopt_session_input_info(s, i, &t);
        print_info("input ", &t);
        if (off + t.bytes > in_len) {
            fprintf(stderr, "run_model: %s holds %zu bytes, the inputs need more\n", argv[2], in_len);
            goto done;
        }
        ins[i] = (superopt_tensor){.name = t.name, .dtype = t.dtype, .rank = t.rank, .dims = t.dims, .data = in_data + off, .bytes = t.bytes};
        off += t.bytes;
    }
    if (off != in_len) {
        fprintf(stderr, "run_model: %s holds %zu bytes, the inputs take %zu\n", argv[2], in_len, off);
        goto done;
    }
    /* outputs: caller-owned buffers, allocated once */
    size_t out_total = 0;
    for (size_t i = 0; i < n_out; i++) {
        superopt_tensor_info t;
        superopt_session_output_info(s, i, &t);
        print_info("output", &t);
        outs[i] = (superopt_tensor){.name = t.name, .dtype = t.dtype, .rank = t.rank, .dims = t.dims, .data = malloc(t.bytes ? t.bytes : 1), .bytes = t.bytes};
        out_total += t.bytes;
    }
    if (out_total != want_len) {
        fprintf(stderr, "run_model: %s holds %zu bytes, the outputs take %zu\n", argv[3], want_len, out_total);
        goto done;
    }
    for (int r = 0; r < runs; r++)
        if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) {
            fprintf(stderr, "run_model: %s\n", superopt_session_error(s)); /* the session's message */
            goto done;
        }

    /* compare with the reference */
    size_t bad = 0, count = 0;
    off = 0;
    for (size_t i = 0; i < n_out; i++) {
        const float *a = outs[i].data;
        size_t n = outs[i].bytes / sizeof(float);
        for (size_t j = 0; j < n; j++, count++) {
            float b;
            memcpy(&b, want + off + j * sizeof(float), sizeof b);
            if (!(fabsf(a[j] - b) <= 1e-5f + 1e-4f * fabsf(b)) && !(isnan(a[j]) && isnan(b))) bad++;
        }
        off += outs[i].bytes;
    }
    printf("%s: %zu output values, %zu beyond tolerance\n", bad ? "MISMATCH" : "OK", count, bad);
    rc = bad ? 1 : 0;
done:
    for (size_t i = 0; outs && i < superopt_session_output_count(s); i++) free(outs[i].data);
    free(ins);
    free(outs);
    superopt_session_close(s);
    superopt_config_free(cfg);
    free(in_data);
    free(want);
    return rc;
}
