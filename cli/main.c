/* main.c - the superopt command line: dispatches optimize, run, inspect, generate, verify, bench. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../kernels/exec.h"
#include "../kernels/isa.h"
#include "args.h"
#include "commands.h"
#include "../src/common.h"
#include "../src/graph.h"
#include "../src/feed.h"
#include "../src/onnx_io.h"

static const char usage_text[] =
    "usage:\n"
    "  superopt MODEL.onnx [-o OUT.onnx] [--rules FILE] [--search backtrack|greedy|none]\n"
    "           [--alpha A] [--budget N] [--time-limit S] [--cost measured|flops]\n"
    "           [--report FILE.json] [--dot DIR] [--threads N] [--seed N] [-q]\n"
    "  superopt run MODEL.onnx [--iters N] [--warmup N] [--threads N] [--inputs FILE|DIR]\n"
    "           [--outputs FILE|DIR/] [--json] [--profile] [--reference] [--seed N]\n"
    "           FILE: raw, all inputs (outputs) back to back, each in its own element type (float32, int64,\n"
    "           int32, bool: 4, 8, 4, 1 bytes; numpy's tobytes()); DIR: input_0.pb, input_1.pb, ...\n"
    "           (ONNX TensorProto, graph input order); DIR/: writes output_0.pb, ...; without --inputs, seeded\n"
    "           values (integers valid for their use: indices in range, 0/1 masks)\n"
    "  superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N] [--json FILE]\n"
    "  superopt rules merge A.rules B.rules ... -o OUT.rules\n"
    "  superopt verify FILE.rules [--json]\n"
    "  superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE]\n"
    "  superopt inspect MODEL.onnx\n"
    "  any command: --max-memory BYTES (suffix K/M/G; default 8G) caps each allocation sized by a model\n"
    "  any command: --isa scalar|avx2|avx512 (or SUPEROPT_ISA) runs the kernels of that level, at most the CPU's\n"
    "  any command that loads a model: --input-shape NAME=D0,D1,... (repeatable) fixes the shape of input NAME,\n"
    "           --dim SYMBOL=N (repeatable) fixes the symbolic dimension SYMBOL wherever it appears\n";

static int usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt: %s\n", msg);
    fputs(usage_text, stderr);
    return 2;
}

static int fail(void)
{
    fprintf(stderr, "superopt: %s\n", so_error());
    return 1;
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

static int cmd_run(int argc, char **argv)
{
    const char *model_path = NULL, *in_path = NULL, *out_path = NULL;
    long long iters = 10, warmup = 2, threads = 1, seed = 1;
    int json = 0, profile = 0, reference = 0;
    const so_arg args[] = {
        SO_ARG_FLAG_("--json", &json),
        SO_ARG_FLAG_("--profile", &profile),
        SO_ARG_FLAG_("--reference", &reference),
        SO_ARG_INT_("--iters", &iters, 1, 1000000, "--iters needs a positive integer"),
        SO_ARG_INT_("--warmup", &warmup, 0, 1000000, "--warmup needs an integer >= 0"),
        SO_ARG_INT_("--threads", &threads, 1, 256, "--threads needs an integer in 1..256"),
        SO_ARG_INT_("--seed", &seed, 0, 0x7fffffffL, "--seed needs an integer >= 0"),
        SO_ARG_STR_("--inputs", &in_path),
        SO_ARG_STR_("--outputs", &out_path),
        SO_ARG_END,
    };
    int n_pos, rc_args = so_args_parse(args, argc, argv, &model_path, 1, &n_pos, usage);
    if (rc_args) return rc_args < 0 ? 0 : rc_args; /* -1: --help */
    if (!model_path) return usage("run: no model given");

    int rc = 1;
    so_model *m = NULL;
    so_exec *e = NULL;
    float **ins = NULL, **outs = NULL;
    double *times = NULL;
    size_t charged = 0; /* so_mem_charge'd for ins and outs */
    so_tfile *given = NULL;
    int n_given = 0;
    struct stat in_st;
    int in_dir = in_path && stat(in_path, &in_st) == 0 && S_ISDIR(in_st.st_mode);
    int out_dir = out_path && (out_path[strlen(out_path) - 1] == '/' ||
                               (stat(out_path, &in_st) == 0 && S_ISDIR(in_st.st_mode)));
    if (in_dir && read_input_dir(in_path, &given, &n_given) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        return 1;
    }
    so_onnx_bind_inputs(given, n_given, in_dir);
    so_status ls = so_onnx_load(model_path, &m);
    if (ls != SO_OK) {
        rc = fail();
        goto free_given;
    }
    so_graph *g = m->graph;

    /* inputs: one buffer per model input in its storage type (float32, or int64 for int64 / int32 / bool) */
    size_t in_bytes = 0; /* of the raw FILE form: each input in its own element type, back to back */
    int n_specialised = 0;
    ins = so_xcalloc((size_t)m->n_inputs + 1, sizeof *ins);
    for (int32_t k = 0; k < m->n_inputs; k++) {
        int64_t n = so_shape_numel(&m->inputs[k].shape);
        size_t sb = (size_t)n * (m->inputs[k].shape.dtype == SO_I64 ? 8 : 4);
        if (so_mem_charge(sb, "run's input buffers") != SO_OK) { /* --max-memory counts the total */
            so_error_prefix(model_path);
            goto done;
        }
        charged += sb;
        ins[k] = so_xmalloc(sb ? sb : 8);
        in_bytes += (size_t)n * so_dtype_size(so_input_elem_type(m, k));
    }
    if (in_dir) {
        /* the tensors fill the model's inputs in order; those the importer bound as constants (their
           value was needed at import) are the ones whose position no model input has (it checked the
           types and shapes) */
        int32_t k = 0;
        for (int j = 0; j < n_given; j++) {
            if (!so_onnx_input_bound_const(j) && k < m->n_inputs) {
                memcpy(ins[k], given[j].data, (size_t)so_shape_numel(&given[j].shape) * (given[j].shape.dtype == SO_I64 ? 8 : 4));
                k++;
                continue;
            }
            n_specialised++;
            if (!json)
                fprintf(stderr, "superopt: note: input #%d (%s) of %s is needed at import (a shape or parameter): the graph is specialised to its value\n", j,
                        so_dtype_name(given[j].onnx_type), in_path);
        }
        if (k < m->n_inputs) {
            so_errorf("%s: inputs of %s: fewer tensors than the model's inputs", model_path, in_path);
            goto done;
        }
    } else if (in_path) {
        unsigned char *all = so_xmalloc(in_bytes ? in_bytes : 1);
        if (so_read_file_exact(in_path, all, in_bytes) != SO_OK) {
            free(all);
            goto done;
        }
        size_t off = 0;
        for (int32_t k = 0; k < m->n_inputs; k++) {
            int64_t n = so_shape_numel(&m->inputs[k].shape);
            so_to_storage(so_input_elem_type(m, k), all + off, n, ins[k]);
            off += (size_t)n * so_dtype_size(so_input_elem_type(m, k));
        }
        free(all);
    } else {
        uint64_t st = (uint64_t)seed;
        for (int32_t k = 0; k < m->n_inputs; k++) so_feed_fill(g, k, &st, ins[k]);
    }
    /* outputs */
    size_t out_total = 0;
    outs = so_xcalloc((size_t)m->n_outputs + 1, sizeof *outs);
    for (int32_t k = 0; k < m->n_outputs; k++) {
        const so_shape *s = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
        int64_t n = so_shape_numel(s);
        if (n < 0) {
            so_graph_unknown_shape_error(g, g->outputs[k], m->outputs[k].name);
            so_error_prefix(model_path);
            goto done;
        }
        if ((size_t)n > so_max_alloc_bytes / sizeof(float) - out_total) {
            so_errorf("%s: outputs exceed the allocation limit (%zu bytes; see --max-memory)", model_path, so_max_alloc_bytes);
            goto done;
        }
        size_t obytes = (size_t)n * (s->dtype == SO_I64 ? 8 : sizeof(float)); /* int64 values: 8 bytes */
        if (so_mem_charge(obytes, "run's output buffers") != SO_OK) {
            so_error_prefix(model_path);
            goto done;
        }
        charged += obytes;
        outs[k] = so_xcalloc((size_t)(n > 0 ? n : 1), s->dtype == SO_I64 ? 8 : sizeof(float));
        out_total += (size_t)n;
    }

    /* the model is only run, then freed: weights the fast kernels packed need not stay resident */
    so_exec_opts opts = {.threads = (int)threads, .reference = reference, .profile = profile, .consume_weights = !reference};
    if (so_exec_new(g, &opts, &e) != SO_OK) {
        so_error_prefix(model_path);
        goto done;
    }
    for (long it = 0; it < warmup; it++)
        if (so_exec_run(e, (const float *const *)ins, outs) != SO_OK) goto run_failed;
    times = so_xmalloc((size_t)iters * sizeof *times);
    for (long it = 0; it < iters; it++) {
        double t0 = so_now();
        if (so_exec_run(e, (const float *const *)ins, outs) != SO_OK) goto run_failed;
        times[it] = (so_now() - t0) * 1e3;
    }
    double median = so_median(times, (size_t)iters);
    so_sort_doubles(times, (size_t)iters); /* times[0]: the fastest run */

    if (out_dir) {
        for (int32_t k = 0; k < m->n_outputs; k++) {
            so_tfile t = {.shape = g->nodes[g->outputs[k].node].out[g->outputs[k].slot], .data = outs[k]};
            t.onnx_type = so_graph_output_type(g, k);
            char p[4096];
            snprintf(p, sizeof p, "%s%soutput_%d.pb", out_path, out_path[strlen(out_path) - 1] == '/' ? "" : "/", (int)k);
            if (so_onnx_tensor_write(p, m->outputs[k].name, &t) != SO_OK) goto done;
        }
    } else if (out_path) { /* each output in its element type, back to back */
        size_t total = 0;
        for (int32_t k = 0; k < m->n_outputs; k++)
            total += (size_t)so_shape_numel(&g->nodes[g->outputs[k].node].out[g->outputs[k].slot]) * so_dtype_size(so_graph_output_type(g, k));
        unsigned char *all = so_xmalloc(total ? total : 1);
        size_t off = 0;
        for (int32_t k = 0; k < m->n_outputs; k++) {
            int64_t n = so_shape_numel(&g->nodes[g->outputs[k].node].out[g->outputs[k].slot]);
            so_from_storage(so_graph_output_type(g, k), outs[k], n, all + off);
            off += (size_t)n * so_dtype_size(so_graph_output_type(g, k));
        }
        so_status st = so_write_file_atomic(out_path, all, total);
        free(all);
        if (st != SO_OK) goto done;
    }
    if (json) {
        printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"iters\": %lld, \"peak_activation_bytes\": %zu, \"isa\": \"%s\", \"specialised_inputs\": %d}\n",
               median, times[0], iters, so_exec_peak_activation_bytes(e), so_exec_isa_name(e), n_specialised);
    } else {
        printf("%s: %d nodes, %lld iterations, %lld thread%s, %s kernels: median %.4f ms, min %.4f ms, peak activations %.2f MB\n",
               model_path, (int)g->n_nodes, iters, threads, threads == 1 ? "" : "s", so_exec_isa_name(e), median, times[0],
               (double)so_exec_peak_activation_bytes(e) / 1e6);
        for (int32_t k = 0; k < m->n_outputs; k++) {
            const so_shape *s = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
            char sb[128];
            size_t n = (size_t)so_shape_numel(s);
            printf("  output '%s' %s:", m->outputs[k].name, so_shape_str(s, sb, sizeof sb));
            for (size_t j = 0; j < n && j < 6; j++)
                if (s->dtype == SO_I64) printf(" %lld", (long long)((const int64_t *)outs[k])[j]);
                else printf(" %.6g", (double)outs[k][j]);
            printf("%s\n", n > 6 ? " ..." : "");
        }
    }
    if (profile) so_exec_profile_print(e, json ? stderr : stdout);
    rc = 0;
    goto done;
run_failed:
    so_error_prefix(model_path);
done:
    if (rc) fail();
    so_exec_free(e);
    if (ins)
        for (int32_t k = 0; k < m->n_inputs; k++) free(ins[k]);
    if (outs)
        for (int32_t k = 0; k < m->n_outputs; k++) free(outs[k]);
    free(ins);
    free(outs);
    so_mem_release(charged);
    free(times);
    so_model_free(m);
free_given:
    so_onnx_bind_inputs(NULL, 0, 0);
    for (int j = 0; j < n_given; j++) free(given[j].data);
    free(given);
    return rc;
}

static int cmd_inspect(int argc, char **argv)
{
    if (argc != 2) return usage("inspect: give exactly one model");
    so_model *m = NULL;
    if (so_onnx_load(argv[1], &m) != SO_OK) return fail();
    so_graph *g = m->graph;
    int64_t count[SO_OP_COUNT] = {0}, flops[SO_OP_COUNT] = {0}, total_flops = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int64_t f = so_node_flops(g, i);
        count[g->nodes[i].op]++;
        flops[g->nodes[i].op] += f;
        total_flops += f;
    }
    size_t param_bytes = 0;
    int32_t n_params = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op != SO_OP_WEIGHT) continue;
        const so_weight *w = &m->weights[g->nodes[i].ref];
        param_bytes += (size_t)so_shape_numel(&w->shape) * (w->shape.dtype == SO_I64 ? 8 : 4);
        n_params++;
    }
    char sb[128];
    printf("model %s: ir_version %lld, opset %lld, producer '%s'\n", m->path, (long long)m->ir_version,
           (long long)m->opset, m->producer_name ? m->producer_name : "");
    for (int32_t k = 0; k < m->n_inputs; k++)
        printf("  input  '%s' %s\n", m->inputs[k].name, so_shape_str(&m->inputs[k].shape, sb, sizeof sb));
    for (int32_t k = 0; k < m->n_outputs; k++)
        printf("  output '%s' %s\n", m->outputs[k].name,
               so_shape_str(&g->nodes[g->outputs[k].node].out[g->outputs[k].slot], sb, sizeof sb));
    printf("  %d nodes, %d weights (%.2f MB), %.3f GFLOP\n", (int)g->n_nodes, (int)n_params, (double)param_bytes / 1e6,
           (double)total_flops / 1e9);
    printf("  %-22s %6s %12s\n", "op", "count", "MFLOP");
    for (int op = 0; op < SO_OP_COUNT; op++) {
        if (!count[op] || op == SO_OP_WEIGHT || op == SO_OP_INPUT) continue;
        printf("  %-22s %6lld %12.3f\n", so_ops[op].onnx ? so_ops[op].onnx : so_ops[op].name, (long long)count[op],
               (double)flops[op] / 1e6);
    }
    for (int32_t i = 0; i < m->n_opaque; i++)
        printf("  opaque operator '%s' (domain '%s') kept verbatim\n", m->opaque[i].op_type,
               m->opaque[i].domain ? m->opaque[i].domain : "");
    so_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    /* --max-memory BYTES, --isa LEVEL, --input-shape and --dim apply to every command: taken out
       of argv before dispatch (the pins to every model a command loads). */
    int kept = 1;
    const char *isa = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int is_shape = !strcmp(argv[i], "--input-shape"), is_dim = !strcmp(argv[i], "--dim");
        if (is_shape || is_dim || !strncmp(argv[i], "--input-shape=", 14) || !strncmp(argv[i], "--dim=", 6)) {
            if ((is_shape || is_dim) && i + 1 >= argc) return usage(is_shape ? "--input-shape needs NAME=D0,D1,..." : "--dim needs SYMBOL=N");
            const char *spec = is_shape || is_dim ? argv[++i] : strchr(argv[i], '=') + 1;
            int shape = is_shape || !strncmp(argv[i - (is_shape || is_dim)], "--input-shape", 13);
            if ((shape ? so_onnx_pin_input(spec) : so_onnx_pin_dim(spec)) != SO_OK) {
                fprintf(stderr, "superopt: %s\n", so_error());
                return 2;
            }
            continue;
        }
        if (!strcmp(argv[i], "--isa")) {
            if (i + 1 >= argc) return usage("--isa needs a level: scalar, avx2 or avx512");
            isa = argv[++i];
            continue;
        } else if (!strncmp(argv[i], "--isa=", 6)) {
            isa = argv[i] + 6;
            continue;
        } else if (!strcmp(argv[i], "--max-memory")) {
            if (i + 1 >= argc) return usage("--max-memory needs a byte count (e.g. 512M, 2G)");
            v = argv[++i];
        } else if (!strncmp(argv[i], "--max-memory=", 13)) v = argv[i] + 13;
        else {
            argv[kept++] = argv[i];
            continue;
        }
        if (so_parse_bytes(v, &so_max_alloc_bytes)) return usage("--max-memory needs a byte count (e.g. 512M, 2G)");
    }
    argc = kept;
    argv[argc] = NULL;
    if (argc < 2) return usage(NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    /* the kernels' ISA level: --isa, else SUPEROPT_ISA, else the CPU's; a level above the CPU's fails */
    so_isa level;
    if (isa) {
        if (so_isa_parse(isa, &level) != SO_OK) return usage("--isa needs a level: scalar, avx2 or avx512");
        if (so_isa_set(level) != SO_OK) {
            fprintf(stderr, "superopt: --isa %s: %s\n", isa, so_error());
            return 1;
        }
    } else if (so_isa_current(&level) != SO_OK)
        return fail();
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate")) return so_gen_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "rules")) return so_rules_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "verify")) return so_verify_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return so_bench_main(argc - 1, argv + 1);
    /* default: optimize MODEL.onnx [options]; options may also come first (superopt -q M.onnx):
       the optimize parser takes the model wherever it stands and refuses unknown options */
    return so_optimize_main(argc, argv);
}
