/* main.c - the superopt command line: dispatches optimize, run, inspect, generate, verify, bench. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../api/superopt.h"
#include "../kernels/exec.h"
#include "../kernels/isa.h"
#include "args.h"
#include "commands.h"
#include "../src/common.h"
#include "../src/graph.h"
#include "../src/onnx_io.h"

/* the library's options of optimize and run are printed from its table (cli/args.h) between these */
static const char usage_optimize[] = "usage:\n  superopt MODEL.onnx [-o OUT.onnx] [-q]\n";
static const char usage_run[] = "  superopt run MODEL.onnx [--iters N] [--warmup N] [--inputs FILE|DIR] [--outputs FILE|DIR/] [--json] [--seed N] [--no-hugepages] [--serve]\n";
static const char usage_text[] =
    "           FILE: raw, all inputs (outputs) back to back, each in its own element type (float32, int64,\n"
    "           int32, bool: 4, 8, 4, 1 bytes; numpy's tobytes()); DIR: input_0.pb, input_1.pb, ...\n"
    "           (ONNX TensorProto, graph input order); DIR/: writes output_0.pb, ...\n"
    "  superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N] [--json FILE]\n"
    "  superopt rules merge A.rules B.rules ... -o OUT.rules\n"
    "  superopt verify FILE.rules [--json]\n"
    "  superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE]\n"
    "  superopt inspect MODEL.onnx\n"
    "  any command: --max-memory BYTES (suffix K/M/G; default 8G) caps each allocation sized by a model\n"
    "  any command: --isa scalar|avx2|avx512 (or SUPEROPT_ISA) runs the kernels of that level, at most the CPU's\n"
    "  any command that loads a model: --input-shape NAME=D0,D1,... (repeatable) fixes the shape of input NAME,\n"
    "           --dim SYMBOL=N (repeatable) fixes the symbolic dimension SYMBOL wherever it appears\n";

static void print_usage(FILE *f)
{
    fputs(usage_optimize, f);
    so_args_config_items(f, SUPEROPT_SCOPE_OPTIMIZE, "           ");
    fputs(usage_run, f);
    so_args_config_items(f, SUPEROPT_SCOPE_SESSION, "           ");
    fputs(usage_text, f);
}

static int usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt: %s\n", msg);
    print_usage(stderr);
    return 2;
}

/* --input-shape / --dim of the command line, in order: "s:NAME=D0,..." / "d:SYMBOL=N" (the form
   the run and optimize commands hand to the library's config) */
#define MAX_PIN_ARGS SO_CLI_MAX_PINS
static const char *pin_args[MAX_PIN_ARGS];
static int n_pin_args;

static int fail(void)
{
    fprintf(stderr, "superopt: %s\n", so_error());
    return 1;
}

static int cmd_inspect(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: superopt inspect MODEL.onnx\n  Prints the model's inputs, outputs, operators, weights and FLOPs.\n");
        return 0;
    }
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

/* OpenMP's wait policy for this process (kernels/README.md "Threads"). With neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT
   set, libgomp spins 300,000 pause instructions (~7 ms here: 24 ns each on Zen 5) before a waiting thread sleeps, at
   each of a model's joins and barriers (ShuffleNet-v2: ~120 regions per run) and between regions. When the other
   thread is descheduled (a loaded machine, another process on its core) the spinner holds its core for that whole
   time instead of letting the late thread run: optimized ShuffleNet-v2, 2 threads, load ~13 on the 2 cores, median ms
   per run (3 interleaved rounds): libgomp's default 164 and 1806, GOMP_SPINCOUNT 30000 504-557, 10000 178-200, 4000
   90-110, 1000 56-65, passive (no spin) 40-48. Sleeping at once costs a futex wake per region on a quiet machine
   (more in a VM, where an idle vCPU halts), while the serial gaps between a run's regions are short (the caller's CPU
   time between regions, 2 threads: ShuffleNet-v2 ~96 % under 10 us, ResNet-50 ~97 % under 100 us). Sessions 13-23
   set 2000 (~60 us) here; session 24 sets 200,000 (~6 ms: a quiet machine's 2-thread runs keep both threads awake,
   session 23 ~6 % faster), and the executor switches libgomp to its short spin (100) while the machine is loaded
   (kernels/wait.h: run-queue delay per run), which the long spin alone would make 3-10x slower.
   libgomp reads the variable once, in its own constructor, before main and before any constructor of ours (a
   .preinit_array function cannot set it either: libc's start-up resets environ after it). So when the user set
   neither variable, main sets it and executes this program again (/proc/self/exe, the same argv); not under
   valgrind (an exec would leave it). SO_OMP_SPIN_MARK tells the new process to unset both again once libgomp has
   read them, so child processes (ONNX Runtime, PyTorch in the benchmarks) keep their own defaults. */
#define SO_GOMP_SPINCOUNT "200000"
#define SO_OMP_SPIN_MARK "SUPEROPT_GOMP_SPINCOUNT_SET"
static int omp_wait_execd; /* this process is the one omp_wait_default executed */
/* The CPU affinity this process started with (taskset's, a container's, a batch system's), read before libgomp's
   constructor: with OMP_PROC_BIND or OMP_PLACES set, that constructor binds the initial thread to the first place
   (e.g. CPU 0), and an exec inherits the calling thread's mask, so the executed process's libgomp built its places
   from that one CPU and ran every thread on it (session 19's pinning probe: 2 threads on CPU 0, ~2x slower). The
   main executable's .preinit_array runs before any library's constructor; sched_getaffinity is a plain system call
   there. omp_wait_default gives the mask back to the thread before the exec. */
static cpu_set_t omp_start_mask;
static int omp_start_mask_ok;
static void omp_wait_capture(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    omp_start_mask_ok = sched_getaffinity(0, sizeof omp_start_mask, &omp_start_mask) == 0;
}
__attribute__((section(".preinit_array"), used)) static void (*const omp_wait_capture_p)(int, char **, char **) = omp_wait_capture;
static void omp_wait_default(char **argv)
{
    if (omp_wait_execd || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv(SO_OMP_SPIN_MARK)) return;
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload")) return;
    /* the start mask unknown (sched_getaffinity failed: a machine of more than CPU_SETSIZE CPUs) and an OpenMP binding
       variable set: libgomp may have narrowed this thread's mask, which the exec would keep: no re-execution */
    if (!omp_start_mask_ok && (getenv("OMP_PROC_BIND") || getenv("OMP_PLACES") || getenv("GOMP_CPU_AFFINITY"))) return;
    cpu_set_t bound;
    const int rebind = omp_start_mask_ok && sched_getaffinity(0, sizeof bound, &bound) == 0;
    if (omp_start_mask_ok && (!rebind || sched_setaffinity(0, sizeof omp_start_mask, &omp_start_mask))) return;
    if (setenv("GOMP_SPINCOUNT", SO_GOMP_SPINCOUNT, 1) || setenv(SO_OMP_SPIN_MARK, "1", 1)) {
        if (rebind) sched_setaffinity(0, sizeof bound, &bound);
        return;
    }
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* no exec: run on with libgomp's default, bound as libgomp bound it */
    unsetenv(SO_OMP_SPIN_MARK);
    if (rebind) sched_setaffinity(0, sizeof bound, &bound);
}
/* runs after libgomp's constructor (the executable's constructors run last) */
__attribute__((constructor)) static void omp_wait_unmark(void)
{
    if (!getenv(SO_OMP_SPIN_MARK)) return;
    omp_wait_execd = 1;
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(SO_OMP_SPIN_MARK);
}

int main(int argc, char **argv)
{
    omp_wait_default(argv);
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
            if (n_pin_args == MAX_PIN_ARGS) return usage("more than 128 --input-shape / --dim options");
            char *p = so_xmalloc(strlen(spec) + 3);
            sprintf(p, "%c:%s", shape ? 's' : 'd', spec);
            pin_args[n_pin_args++] = p; /* lives as long as the process */
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
        print_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("superopt %s (library %s)\n", SUPEROPT_VERSION_STRING, superopt_version());
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
    if (!strcmp(cmd, "run")) return so_run_main(argc - 1, argv + 1, pin_args, n_pin_args);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate")) return so_gen_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "rules")) return so_rules_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "verify")) return so_verify_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return so_bench_main(argc - 1, argv + 1, pin_args, n_pin_args);
    /* default: optimize MODEL.onnx [options]; options may also come first (superopt -q M.onnx):
       the optimize parser takes the model wherever it stands and refuses unknown options */
    return so_optimize_main(argc, argv, pin_args, n_pin_args);
}
