/* cmd_run.c - the run command: a client of the library's sessions (superopt_session_*): feeds inputs, times runs, writes and prints outputs. */
#include "args.h"
#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/superopt.h"
#include "../src/common.h"
#include "../src/json.h"
#include "../src/onnx_io.h"

static const char run_head[] = "usage: superopt run MODEL.onnx [--iters N] [--warmup N] [--inputs FILE|DIR] [--outputs FILE|DIR/] [--json] [--seed N] [--no-hugepages] [--serve]\n";
static const char run_tail[] =
    "  Runs MODEL.onnx on our backend and prints the median and fastest of --iters timed runs.\n"
    "  Inputs: seeded random values (float32 uniform in [-1, 1), integers and booleans 0), or --inputs FILE\n"
    "  (raw, all inputs back to back, each in its own element type: float32, int64, int32, bool = 4, 8, 4,\n"
    "  1 bytes, numpy's tobytes()) or DIR (input_0.pb, input_1.pb, ...: ONNX TensorProto, graph input order).\n"
    "  Every input is fed at run time except one whose value the importer needs (a shape or parameter:\n"
    "  Reshape's shape, Slice's starts, ...), which --inputs DIR binds as a constant (the graph is specialised\n"
    "  to it; --json reports \"specialised_inputs\"). --outputs FILE writes the outputs back to back, each in\n"
    "  its own type; DIR/ writes output_0.pb, .... --profile prints per-kernel times. The process heap goes onto\n"
    "  huge pages after loading (the library's hugepages key, on here; --no-hugepages leaves it alone).\n"
    "  --serve (for bench/lockstep.py): after loading and the --warmup runs, print {\"ready\": ...} and answer\n"
    "  each stdin line 'run K [W]' (W untimed runs, then K timed) with one JSON line {\"times_ms\": [...],\n"
    "  \"median_ms\": ..., \"min_ms\": ...} (a bad line: {\"error\": ...}, serving on) until 'quit' or end of\n"
    "  input; then --outputs are written from the last run and the exit status is 0. --iters is not used.\n";

static int usage(const char *msg) { return so_args_config_usage(run_head, SUPEROPT_SCOPE_SESSION, run_tail, msg); }

static const char *type_name(int32_t t)
{
    const char *n = superopt_dtype_name((superopt_dtype)t);
    return n ? n : "of another element type";
}

/* Reads DIR/input_0.pb, input_1.pb, ... (test_data_set layout) until the first missing one; any
   other input_K.pb beyond a gap, or a file that does not parse, is an error. */
static so_status read_input_dir(const char *dir, so_tfile **out, int *n_out)
{
    so_tfile *t = NULL;
    int n = 0;
    char p[4096];
    for (;; n++) {
        snprintf(p, sizeof p, "%s/input_%d.pb", dir, n);
        if (access(p, F_OK) != 0) break;
        t = so_xrealloc(t, (size_t)(n + 1) * sizeof *t);
        if (so_onnx_tensor_read(p, &t[n]) != SO_OK) goto fail;
    }
    DIR *d = opendir(dir);
    if (!d) {
        so_errorf("%s: cannot open directory: %s", dir, strerror(errno));
        goto fail;
    }
    for (struct dirent *de; (de = readdir(d));) {
        int k, len = 0;
        if (sscanf(de->d_name, "input_%d.pb%n", &k, &len) == 1 && de->d_name[len] == 0 && (k < 0 || k >= n)) {
            so_errorf("%s: %s is given but input_%d.pb is missing", dir, de->d_name, n);
            closedir(d);
            goto fail;
        }
    }
    closedir(d);
    *out = t;
    *n_out = n;
    return SO_OK;
fail:
    for (int j = 0; j < n; j++) free(t[j].data);
    free(t);
    return SO_ERR;
}

/* Writes output k (typed as the session says) as an ONNX TensorProto; integer values widened to the
   int64 the tensor writer reads. */
static so_status write_output_pb(const char *path, const superopt_tensor_info *info, const void *data)
{
    so_tfile t = {.shape = so_shape_make(info->rank, info->dims), .onnx_type = (int32_t)info->dtype, .data = (void *)data};
    int64_t *wide = NULL;
    if (info->dtype != SUPEROPT_FLOAT32) {
        size_t n = info->bytes / superopt_dtype_size(info->dtype);
        wide = so_xmalloc((n ? n : 1) * sizeof *wide);
        so_to_storage((int32_t)info->dtype, data, (int64_t)n, wide);
        t.shape.dtype = SO_I64;
        t.data = wide;
    }
    so_status st = so_onnx_tensor_write(path, info->name, &t);
    free(wide);
    return st;
}

/* the ISA level the session's kernels run (its stats JSON), for the --serve ready line; "?" if unknown */
static void isa_of_stats(superopt_session *s, char *buf, size_t n)
{
    snprintf(buf, n, "?");
    const char *stats = superopt_session_stats(s);
    so_json sj;
    if (!stats || so_json_parse(stats, "session stats", &sj) != SO_OK) return;
    const so_json *isa = so_json_get(&sj, "isa");
    if (isa && isa->kind == SO_JSON_STR) snprintf(buf, n, "%s", isa->str);
    so_json_free(&sj);
}

/* --serve: answers stdin lines until 'quit' or end of input (protocol in run_tail). One line is at most
   SERVE_LINE bytes (a longer one is an error line); K <= SERVE_MAX_K, W <= SERVE_MAX_K, so the time buffer
   stays bounded. Returns 0 after quit / EOF, -1 when a session run failed (superopt_session_error says why),
   1 on an output error. */
#define SERVE_LINE 256
#define SERVE_MAX_K 100000
static int serve_loop(superopt_session *s, superopt_tensor *ins, size_t n_in, superopt_tensor *outs, size_t n_out,
                      const char *isa)
{
    char line[SERVE_LINE];
    double *t = NULL;
    long cap = 0;
    printf("{\"ready\": true, \"isa\": \"%s\", \"pid\": %ld}\n", isa, (long)getpid());
    if (fflush(stdout)) return 1;
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n' && !feof(stdin)) { /* too long: skip the rest of it */
            int c;
            while ((c = getchar()) != EOF && c != '\n') {}
            printf("{\"error\": \"line longer than %d bytes\"}\n", SERVE_LINE - 2);
            if (fflush(stdout)) break;
            continue;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
        if (!strcmp(line, "quit")) break;
        if (!len) continue;
        long k = 0, w = 0; /* "run K" or "run K W", numbers in range, nothing after */
        char *e = line + 4, *e2 = NULL;
        int ok = !strncmp(line, "run ", 4);
        if (ok) k = strtol(line + 4, &e, 10), ok = e != line + 4;
        while (ok && *e == ' ') e++;
        if (ok && *e) w = strtol(e, &e2, 10), ok = e2 != e && !*e2;
        if (!ok || k < 1 || k > SERVE_MAX_K || w < 0 || w > SERVE_MAX_K) {
            printf("{\"error\": \"bad command (expected 'run K [W]' with 1 <= K <= %d, 0 <= W <= %d, or 'quit'): ", SERVE_MAX_K,
                   SERVE_MAX_K);
            for (const char *c = line; *c && c - line < 60; c++) putchar(*c == '"' || *c == '\\' || (unsigned char)*c < 32 ? '?' : *c);
            printf("\"}\n");
            if (fflush(stdout)) break;
            continue;
        }
        if (k > cap) {
            t = so_xrealloc(t, (size_t)k * sizeof *t);
            cap = k;
        }
        for (long i = 0; i < w; i++)
            if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) goto run_failed;
        for (long i = 0; i < k; i++) {
            double t0 = so_now();
            if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) goto run_failed;
            t[i] = (so_now() - t0) * 1e3;
        }
        fputs("{\"times_ms\": [", stdout);
        for (long i = 0; i < k; i++) printf("%s%.6f", i ? ", " : "", t[i]);
        double med = so_median(t, (size_t)k);
        so_sort_doubles(t, (size_t)k);
        printf("], \"median_ms\": %.6f, \"min_ms\": %.6f}\n", med, t[0]);
        if (fflush(stdout)) break;
    }
    free(t);
    return 0;
run_failed:
    free(t);
    return -1;
}

int so_run_main(int argc, char **argv, const char *const *pins, int n_pins)
{
    const char *model_path = NULL, *in_path = NULL, *out_path = NULL;
    long long iters = 10, warmup = 2, seed = 1;
    int json = 0, no_huge = 0, serve = 0;
    superopt_config *cfg = NULL;
    if (superopt_config_new(&cfg) != SUPEROPT_OK) {
        fprintf(stderr, "superopt: %s\n", superopt_last_error());
        return 1;
    }
    /* the command's own options, then the library's (--threads, --reference, --profile: set into cfg as parsed) */
    so_arg args[32] = {
        SO_ARG_FLAG_("--json", &json),
        SO_ARG_INT_("--iters", &iters, 1, 1000000, "--iters needs a positive integer"),
        SO_ARG_INT_("--warmup", &warmup, 0, 1000000, "--warmup needs an integer >= 0"),
        SO_ARG_INT_("--seed", &seed, 0, 0x7fffffffL, "--seed needs an integer >= 0"),
        SO_ARG_STR_("--inputs", &in_path),
        SO_ARG_STR_("--outputs", &out_path),
        SO_ARG_FLAG_("--no-hugepages", &no_huge),
        SO_ARG_FLAG_("--serve", &serve),
    };
    int n_args = 8, n_pos, rc_args;
    if (so_args_config_opts(args, &n_args, (int)SO_ARRAY_LEN(args) - 1, cfg, SUPEROPT_SCOPE_SESSION)) {
        fprintf(stderr, "superopt: internal error: too many library options for the command line\n");
        superopt_config_free(cfg);
        return 1;
    }
    args[n_args] = (so_arg)SO_ARG_END;
    if ((rc_args = so_args_parse(args, argc, argv, &model_path, 1, &n_pos, usage)) || !model_path) {
        superopt_config_free(cfg);
        return rc_args < 0 ? 0 : rc_args ? rc_args : usage("run: no model given"); /* -1: --help */
    }

    int rc = 1;
    superopt_session *s = NULL;
    superopt_tensor *ins = NULL, *outs = NULL;
    superopt_tensor_info *oinfo = NULL;
    double *times = NULL;
    size_t charged = 0; /* so_mem_charge'd for the input and output buffers */
    so_tfile *given = NULL;
    int n_given = 0;
    size_t n_in = 0, n_out = 0;
    int n_specialised = 0; /* --inputs DIR tensors bound as constants at import */
    const char *msg = NULL; /* a library message (else the thread's so_error) */
    struct stat in_st;
    int in_dir = in_path && stat(in_path, &in_st) == 0 && S_ISDIR(in_st.st_mode);
    int out_dir = out_path && (out_path[strlen(out_path) - 1] == '/' ||
                               (stat(out_path, &in_st) == 0 && S_ISDIR(in_st.st_mode)));
    /* huge pages for the heap: on for this command (it owns its process), off in the library */
    if (!no_huge && superopt_config_set(cfg, "hugepages", "1") != SUPEROPT_OK) goto done;
    if (so_args_config_pins(cfg, pins, n_pins)) goto done;
    /* --inputs DIR: the tensors are bound at load; those whose value the importer needs (shapes,
       parameters) become constants of the graph (src/onnx_io.h so_onnx_bind_inputs), the others stay inputs */
    if (in_dir && read_input_dir(in_path, &given, &n_given) != SO_OK) goto failed;
    so_onnx_bind_inputs(given, n_given, in_dir);
    if (superopt_session_open(model_path, cfg, &s) != SUPEROPT_OK) {
        msg = superopt_last_error();
        goto failed;
    }

    /* inputs */
    n_in = superopt_session_input_count(s);
    n_out = superopt_session_output_count(s);
    ins = so_xcalloc(n_in + 1, sizeof *ins);
    size_t in_bytes = 0;
    for (size_t k = 0; k < n_in; k++) {
        superopt_tensor_info ii;
        superopt_session_input_info(s, k, &ii);
        if (so_mem_charge(ii.bytes, "run's input buffers") != SO_OK) { /* --max-memory counts the total */
            so_error_prefix(model_path);
            goto failed;
        }
        charged += ii.bytes;
        in_bytes += ii.bytes;
        ins[k] = (superopt_tensor){.name = ii.name, .dtype = ii.dtype, .rank = ii.rank, .dims = ii.dims, .bytes = ii.bytes,
                                   .data = so_xcalloc(ii.bytes ? ii.bytes : 1, 1)}; /* integers: 0 unless given */
    }
    if (in_dir) {
        /* tensors fill the model's inputs in order; those the importer bound as constants are the
           ones whose position no model input has (it checked the types and shapes) */
        size_t k = 0;
        for (int j = 0; j < n_given; j++) {
            if (!so_onnx_input_bound_const(j) && k < n_in) { /* given[j] holds float32 or int64 storage */
                so_from_storage((int32_t)ins[k].dtype, given[j].data, so_shape_numel(&given[j].shape), ins[k].data);
                k++;
                continue;
            }
            n_specialised++;
            if (!json)
                fprintf(stderr, "superopt: note: input #%d (%s) of %s is needed at import (a shape or parameter): the graph is specialised to its value\n",
                        j, type_name(given[j].onnx_type), in_path);
        }
        if (k < n_in) {
            so_errorf("%s: inputs of %s: fewer tensors than the model's inputs", model_path, in_path);
            goto failed;
        }
    } else if (in_path) {
        char *all = so_xmalloc(in_bytes ? in_bytes : 1);
        if (so_read_file_exact(in_path, all, in_bytes) != SO_OK) {
            free(all);
            goto failed;
        }
        size_t off = 0;
        for (size_t k = 0; k < n_in; k++) {
            memcpy(ins[k].data, all + off, ins[k].bytes);
            off += ins[k].bytes;
        }
        free(all);
    } else {
        uint64_t st = (uint64_t)seed; /* float32 inputs, in order (the stream tools/ort/ort_run.js draws) */
        for (size_t k = 0; k < n_in; k++)
            if (ins[k].dtype == SUPEROPT_FLOAT32) so_rng_fill(&st, ins[k].data, ins[k].bytes / sizeof(float));
    }
    /* outputs */
    outs = so_xcalloc(n_out + 1, sizeof *outs);
    oinfo = so_xcalloc(n_out + 1, sizeof *oinfo);
    for (size_t k = 0; k < n_out; k++) {
        superopt_session_output_info(s, k, &oinfo[k]);
        if (so_mem_charge(oinfo[k].bytes, "run's output buffers") != SO_OK) {
            so_error_prefix(model_path);
            goto failed;
        }
        charged += oinfo[k].bytes;
        outs[k] = (superopt_tensor){.name = oinfo[k].name, .dtype = oinfo[k].dtype, .rank = oinfo[k].rank, .dims = oinfo[k].dims,
                                    .bytes = oinfo[k].bytes, .data = so_xcalloc(oinfo[k].bytes ? oinfo[k].bytes : 1, 1)};
    }

    for (long it = 0; it < warmup; it++)
        if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) goto run_failed;
    if (serve) {
        char isa_buf[32];
        isa_of_stats(s, isa_buf, sizeof isa_buf);
        int sr = serve_loop(s, ins, n_in, outs, n_out, isa_buf);
        if (sr < 0) goto run_failed;
        if (sr > 0) goto failed;
        iters = 0;
    }
    times = so_xmalloc((size_t)(iters ? iters : 1) * sizeof *times);
    for (long it = 0; it < iters; it++) {
        double t0 = so_now();
        if (superopt_session_run(s, ins, n_in, outs, n_out) != SUPEROPT_OK) goto run_failed;
        times[it] = (so_now() - t0) * 1e3;
    }
    double median = iters ? so_median(times, (size_t)iters) : 0;
    so_sort_doubles(times, (size_t)iters); /* times[0]: the fastest run */

    if (out_dir) {
        for (size_t k = 0; k < n_out; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s%soutput_%d.pb", out_path, out_path[strlen(out_path) - 1] == '/' ? "" : "/", (int)k);
            if (write_output_pb(p, &oinfo[k], outs[k].data) != SO_OK) goto failed;
        }
    } else if (out_path) {
        size_t total = 0;
        for (size_t k = 0; k < n_out; k++) total += oinfo[k].bytes; /* each in its own type */
        char *all = so_xmalloc(total ? total : 1);
        size_t off = 0;
        for (size_t k = 0; k < n_out; k++) {
            memcpy(all + off, outs[k].data, oinfo[k].bytes);
            off += oinfo[k].bytes;
        }
        so_status st = so_write_file_atomic(out_path, all, total);
        free(all);
        if (st != SO_OK) goto failed;
    }
    /* the session's facts (nodes, ISA, memory, profile) come from its stats JSON */
    if (serve) { /* the summary belongs to the served batches, printed as they ran */
        rc = 0;
        goto done;
    }
    const char *stats = superopt_session_stats(s);
    so_json sj;
    if (!stats || so_json_parse(stats, "session stats", &sj) != SO_OK) {
        so_errorf("%s: session stats unavailable", model_path);
        goto failed;
    }
    double nodes = 0, peak = 0, threads = 1, wait_runs = 0, short_runs = 0;
    so_json_get_num(&sj, "wait_runs", "session stats", 0, &wait_runs);
    so_json_get_num(&sj, "short_spin_runs", "session stats", 0, &short_runs);
    so_json_get_num(&sj, "nodes", "session stats", 0, &nodes);
    so_json_get_num(&sj, "threads", "session stats", 0, &threads);
    so_json_get_num(&sj, "peak_activation_bytes", "session stats", 0, &peak);
    const so_json *isa = so_json_get(&sj, "isa"), *prof = so_json_get(&sj, "profile");
    const char *isa_name = isa && isa->kind == SO_JSON_STR ? isa->str : "?";
    const so_json *blas = so_json_get(&sj, "blas");
    const char *blas_name = blas && blas->kind == SO_JSON_STR ? blas->str : "?";
    if (json) {
        printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"iters\": %lld, \"peak_activation_bytes\": %.0f, \"isa\": \"%s\", \"blas\": ",
               median, times[0], iters, peak, isa_name);
        so_json_fstr(stdout, blas_name);
        printf(", \"specialised_inputs\": %d, \"wait_runs\": %.0f, \"short_spin_runs\": %.0f}\n", n_specialised, wait_runs,
               short_runs);
    } else {
        printf("%s: %.0f nodes, %lld iterations, %.0f thread%s, %s kernels, %s: median %.4f ms, min %.4f ms, peak activations %.2f MB\n",
               model_path, nodes, iters, threads, threads == 1 ? "" : "s", isa_name, blas_name, median, times[0], peak / 1e6);
        for (size_t k = 0; k < n_out; k++) {
            so_shape sh = so_shape_make(oinfo[k].rank, oinfo[k].dims);
            char sb[128];
            size_t n = oinfo[k].bytes / superopt_dtype_size(oinfo[k].dtype);
            sh.dtype = oinfo[k].dtype == SUPEROPT_FLOAT32 ? SO_F32 : SO_I64;
            printf("  output '%s' %s:", oinfo[k].name, so_shape_str(&sh, sb, sizeof sb));
            for (size_t j = 0; j < n && j < 6; j++) {
                const void *d = outs[k].data;
                switch (oinfo[k].dtype) {
                case SUPEROPT_FLOAT32: printf(" %.6g", (double)((const float *)d)[j]); break;
                case SUPEROPT_INT64: printf(" %lld", (long long)((const int64_t *)d)[j]); break;
                case SUPEROPT_INT32: printf(" %d", ((const int32_t *)d)[j]); break;
                case SUPEROPT_BOOL: printf(" %d", ((const unsigned char *)d)[j]); break;
                }
            }
            printf("%s\n", n > 6 ? " ..." : "");
        }
    }
    if (prof && prof->kind == SO_JSON_STR) fputs(prof->str, json ? stderr : stdout);
    so_json_free(&sj);
    rc = 0;
    goto done;
run_failed:
    msg = superopt_session_error(s);
failed:
    fprintf(stderr, "superopt: %s\n", msg ? msg : so_error());
done:
    superopt_session_close(s);
    for (size_t k = 0; ins && k < n_in; k++) free(ins[k].data);
    for (size_t k = 0; outs && k < n_out; k++) free(outs[k].data);
    free(ins);
    free(outs);
    free(oinfo);
    so_mem_release(charged);
    free(times);
    superopt_config_free(cfg);
    so_onnx_bind_inputs(NULL, 0, 0);
    for (int j = 0; j < n_given; j++) free(given[j].data);
    free(given);
    return rc;
}
