/* main.c - the superopt command line: dispatches optimize, run, inspect, generate, verify, bench. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/exec.h"
#include "../kernels/isa.h"
#include "args.h"
#include "commands.h"
#include "../src/common.h"
#include "../src/graph.h"
#include "../src/onnx_io.h"

static const char usage_text[] =
    "usage:\n"
    "  superopt MODEL.onnx [-o OUT.onnx] [--rules FILE] [--search backtrack|greedy|none]\n"
    "           [--alpha A] [--budget N] [--time-limit S] [--cost measured|flops]\n"
    "           [--report FILE.json] [--dot DIR] [--threads N] [--seed N] [-q]\n"
    "  superopt run MODEL.onnx [--iters N] [--warmup N] [--threads N] [--inputs FILE]\n"
    "           [--outputs FILE] [--json] [--profile] [--reference] [--seed N]\n"
    "  superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N] [--json FILE]\n"
    "  superopt rules merge A.rules B.rules ... -o OUT.rules\n"
    "  superopt verify FILE.rules [--json]\n"
    "  superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE]\n"
    "  superopt inspect MODEL.onnx\n"
    "  any command: --max-memory BYTES (suffix K/M/G; default 8G) caps each allocation sized by a model\n"
    "  any command: --isa scalar|avx2|avx512 (or SUPEROPT_ISA) runs the kernels of that level, at most the CPU's\n";

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
    if (so_onnx_load(model_path, &m) != SO_OK) return fail();
    so_graph *g = m->graph;

    /* inputs */
    size_t in_total = 0;
    ins = so_xcalloc((size_t)m->n_inputs + 1, sizeof *ins);
    for (int32_t k = 0; k < m->n_inputs; k++) {
        if (m->inputs[k].shape.dtype != SO_F32) {
            so_errorf("%s: input '%s' is not float32; superopt run feeds float32 inputs only", model_path, m->inputs[k].name);
            goto done;
        }
        int64_t n = so_shape_numel(&m->inputs[k].shape);
        if (so_mem_charge((size_t)n * sizeof(float), "run's input buffers") != SO_OK) { /* --max-memory counts the total */
            so_error_prefix(model_path);
            goto done;
        }
        charged += (size_t)n * sizeof(float);
        ins[k] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        in_total += (size_t)n;
    }
    if (in_total > so_max_alloc_bytes / sizeof(float)) {
        so_errorf("%s: inputs of %zu elements exceed the allocation limit (%zu bytes; see --max-memory)", model_path, in_total, so_max_alloc_bytes);
        goto done;
    }
    if (in_path) {
        float *all = so_xmalloc((in_total ? in_total : 1) * sizeof(float));
        if (so_read_file_exact(in_path, all, in_total * sizeof(float)) != SO_OK) {
            free(all);
            goto done;
        }
        size_t off = 0;
        for (int32_t k = 0; k < m->n_inputs; k++) {
            size_t n = (size_t)so_shape_numel(&m->inputs[k].shape);
            memcpy(ins[k], all + off, n * sizeof(float));
            off += n;
        }
        free(all);
    } else {
        uint64_t st = (uint64_t)seed;
        for (int32_t k = 0; k < m->n_inputs; k++)
            so_rng_fill(&st, ins[k], (size_t)so_shape_numel(&m->inputs[k].shape));
    }
    /* outputs */
    size_t out_total = 0;
    outs = so_xcalloc((size_t)m->n_outputs + 1, sizeof *outs);
    for (int32_t k = 0; k < m->n_outputs; k++) {
        const so_shape *s = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
        int64_t n = so_shape_numel(s);
        if (n < 0) {
            so_errorf("%s: output '%s' has an unknown shape", model_path, m->outputs[k].name);
            goto done;
        }
        if ((size_t)n > so_max_alloc_bytes / sizeof(float) - out_total) {
            so_errorf("%s: outputs exceed the allocation limit (%zu bytes; see --max-memory)", model_path, so_max_alloc_bytes);
            goto done;
        }
        if (so_mem_charge((size_t)n * sizeof(float), "run's output buffers") != SO_OK) {
            so_error_prefix(model_path);
            goto done;
        }
        charged += (size_t)n * sizeof(float);
        outs[k] = so_xcalloc((size_t)(n > 0 ? n : 1), sizeof(float));
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

    if (out_path) {
        float *all = so_xmalloc((out_total ? out_total : 1) * sizeof(float));
        size_t off = 0;
        for (int32_t k = 0; k < m->n_outputs; k++) {
            const so_shape *s = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
            size_t n = (size_t)so_shape_numel(s);
            memcpy(all + off, outs[k], n * sizeof(float));
            off += n;
        }
        so_status st = so_write_file_atomic(out_path, all, out_total * sizeof(float));
        free(all);
        if (st != SO_OK) goto done;
    }
    if (json) {
        printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"iters\": %lld, \"peak_activation_bytes\": %zu, \"isa\": \"%s\"}\n",
               median, times[0], iters, so_exec_peak_activation_bytes(e), so_exec_isa_name(e));
    } else {
        printf("%s: %d nodes, %lld iterations, %lld thread%s, %s kernels: median %.4f ms, min %.4f ms, peak activations %.2f MB\n",
               model_path, (int)g->n_nodes, iters, threads, threads == 1 ? "" : "s", so_exec_isa_name(e), median, times[0],
               (double)so_exec_peak_activation_bytes(e) / 1e6);
        for (int32_t k = 0; k < m->n_outputs; k++) {
            const so_shape *s = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
            char sb[128];
            size_t n = (size_t)so_shape_numel(s);
            printf("  output '%s' %s:", m->outputs[k].name, so_shape_str(s, sb, sizeof sb));
            for (size_t j = 0; j < n && j < 6; j++) printf(" %.6g", (double)outs[k][j]);
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
    /* --max-memory BYTES and --isa LEVEL apply to every command: taken out of argv before dispatch. */
    int kept = 1;
    const char *isa = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
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
