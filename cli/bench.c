/* bench.c - the bench command: command line of the harness that measures search strategies, our backend and ONNX Runtime side by side. */
#include "args.h"
#include "bench_priv.h"
#include "../src/graph.h"
#include "../src/onnx_io.h"
#include "../rules/rule.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The seven models of the graph-substitution literature (TASO, PET, Tensat...) as exported by
   data/export_models.py --set full, then DeepAndWide; and the small stand-ins in data/. */
static const char *const full_models[] = {"bert_taso", "resnext50_32x4d", "nasnet_a", "nasrnn_512",
                                          "inception_v3", "squeezenet1_1", "resnet50", "deepandwide"};
static const char *const literature_models[] = {"bert_taso", "resnext50_32x4d", "nasnet_a", "nasrnn_512",
                                                "inception_v3", "squeezenet1_1", "resnet50"};
static const char *const small_models[] = {"deepandwide", "nasrnn", "bert2", "squeezenet", "resnet_small", "lstm2"};
static const char *const small_literature[] = {"nasrnn", "bert2", "squeezenet", "resnet_small"};
/* ======================================================================================
   command line
   ====================================================================================== */

static const char bench_usage[] =
    "usage: superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE] [-q]\n"
    "         [--rounds N] [--target-seconds S] [--threads LIST] [--ort-threads N] [--no-ort]\n"
    "         [--cost measured|flops] [--no-flops-check] [--rules FILE] [--allow-unverified]\n"
    "         [--alpha A] [--budget N] [--time-limit S]\n"
    "         [--ablation-models NAME,... | --no-ablations] [--sizes LIST] [--alphas LIST]\n"
    "         [--sweep LIST] [--sweep-time-limit S] [--work-dir DIR] [--timeout S] [--cost-table FILE]\n"
    "Without models: the benchmark suite in data/full/ (make models), else the small models in data/.\n"
    "See docs/BENCHMARKS.md.\n";

static int busage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt bench: %s\n", msg);
    fputs(bench_usage, stderr);
    return 2;
}

static void model_name(const char *path, char *out, size_t n)
{
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    size_t len = strlen(s);
    if (len > 5 && !strcmp(s + len - 5, ".onnx")) len -= 5;
    snprintf(out, n, "%.*s", (int)len, s);
}

int so_bench_main(int argc, char **argv, const char *const *pins, int n_pins)
{
    bench B;
    memset(&B, 0, sizeof B);
    bench *b = &B;
    b->pins = pins;
    b->n_pins = n_pins;
    b->t_start = so_now();
    b->rounds = 0; /* auto */
    b->target_s = 1.0;
    b->threads[0] = 1;
    b->threads[1] = 2;
    b->n_threads = 2;
    b->ort_threads = 1;
    b->cost = "measured";
    b->alpha = 1.05;
    b->budget = 1000;
    b->time_limit = 30;
    b->sweep_time_limit = 30;
    b->ablations = 1;
    b->flops_check = 1;
    b->proc_timeout = 1800;
    long def_sweep[] = {10, 30, 100, 300, 1000};
    b->n_sweep = (int)SO_ARRAY_LEN(def_sweep);
    memcpy(b->sweep, def_sweep, sizeof def_sweep);
    double def_alpha[] = {1.0, 1.02, 1.05, 1.1};
    b->n_alphas = (int)SO_ARRAY_LEN(def_alpha);
    memcpy(b->alphas, def_alpha, sizeof def_alpha);
    int def_sizes[] = {2, 3, 4};
    b->n_sizes = 3;
    memcpy(b->sizes, def_sizes, sizeof def_sizes);
    const char *work_dir = NULL, *cost_table = NULL;
    const char *given[MAX_MODELS];
    int n_given = 0;

    /* command line (as typed, for the report) */
    size_t cl = 0;
    cl += (size_t)snprintf(b->cmdline, sizeof b->cmdline, "superopt");
    for (int i = 0; i < argc && cl < sizeof b->cmdline; i++)
        cl += (size_t)snprintf(b->cmdline + cl, sizeof b->cmdline - cl, " %s", argv[i]);

    static const char *const costs[] = {"measured", "flops", NULL};
    int help = 0, h = 0, no_ablations = 0, no_flops_check = 0, cost = 0;
    long long rounds = b->rounds, ort_threads = b->ort_threads, budget = b->budget;
    const char *threads = NULL, *alphas = NULL, *sizes = NULL, *sweep = NULL;
    const so_arg args[] = {
        SO_ARG_FLAG_("--help", &help),
        SO_ARG_FLAG_("-h", &h),
        SO_ARG_FLAG_("-q", &b->quiet),
        SO_ARG_FLAG_("--no-ort", &b->no_ort),
        SO_ARG_FLAG_("--no-ablations", &no_ablations),
        SO_ARG_FLAG_("--no-flops-check", &no_flops_check),
        SO_ARG_FLAG_("--allow-unverified", &b->allow_unverified),
        SO_ARG_STR_("--json", &b->json_path),
        SO_ARG_STR_("--svg", &b->svg_path),
        SO_ARG_STR_("--rules", &b->rules),
        SO_ARG_STR_("--work-dir", &work_dir),
        SO_ARG_STR_("--cost-table", &cost_table),
        SO_ARG_STR_("--ablation-models", &b->abl_names),
        SO_ARG_CHOICE_("--cost", &cost, costs, "--cost takes measured or flops"),
        SO_ARG_INT_("--rounds", &rounds, 1, MAX_ROUNDS, "--rounds needs an integer in 1..15"),
        SO_ARG_DOUBLE_("--target-seconds", &b->target_s, 0.001, 60, "--target-seconds needs a number in (0, 60]"),
        SO_ARG_DOUBLE_("--timeout", &b->proc_timeout, 1, 1e6, "--timeout needs seconds >= 1"),
        SO_ARG_STR_("--threads", &threads),
        SO_ARG_INT_("--ort-threads", &ort_threads, 1, 256, "--ort-threads needs an integer in 1..256"),
        SO_ARG_DOUBLE_("--alpha", &b->alpha, 1, 100, "--alpha needs a number in [1, 100]"),
        SO_ARG_INT_("--budget", &budget, 0, 1000000000000LL, "--budget needs an integer >= 0"),
        SO_ARG_DOUBLE_("--time-limit", &b->time_limit, 0, 1e6, "--time-limit needs seconds >= 0"),
        SO_ARG_DOUBLE_("--sweep-time-limit", &b->sweep_time_limit, 0, 1e6, "--sweep-time-limit needs seconds >= 0"),
        SO_ARG_STR_("--alphas", &alphas),
        SO_ARG_STR_("--sizes", &sizes),
        SO_ARG_STR_("--sweep", &sweep),
        SO_ARG_END,
    };
    int rc_args = so_args_parse(args, argc, argv, given, MAX_MODELS, &n_given, busage);
    if (help || h) {
        fputs(bench_usage, stdout);
        return 0;
    }
    if (rc_args) return rc_args < 0 ? 0 : rc_args; /* -1: --help */
    if (no_ablations) b->ablations = 0;
    if (no_flops_check) b->flops_check = 0;
    b->cost = costs[cost];
    b->rounds = (int)rounds;
    b->ort_threads = (int)ort_threads;
    b->budget = (long)budget;
    if (threads) { /* lists: comma-separated numbers */
        double t[MAX_THREADS];
        int n = so_parse_doubles(threads, t, MAX_THREADS, 1, 256);
        if (n < 1) return busage("--threads needs a list of 1 to 4 thread counts, e.g. 1,2");
        b->n_threads = n;
        for (int k = 0; k < n; k++) {
            if (t[k] != floor(t[k])) return busage("--threads needs integers");
            b->threads[k] = (int)t[k];
        }
    }
    if (alphas && (b->n_alphas = so_parse_doubles(alphas, b->alphas, MAX_ALPHA, 1, 100)) < 1) return busage("--alphas needs a list of numbers >= 1");
    if (sizes) {
        double t[MAX_SIZES];
        int n = so_parse_doubles(sizes, t, MAX_SIZES, 1, SO_RULE_MAX_NODES);
        if (n < 1) return busage("--sizes needs a list of operator counts, e.g. 2,3,4");
        b->n_sizes = n;
        for (int k = 0; k < n; k++) b->sizes[k] = (int)t[k];
    }
    if (sweep) {
        double t[MAX_SWEEP];
        int n = so_parse_doubles(sweep, t, MAX_SWEEP, 1, 1e12);
        if (n < 1) return busage("--sweep needs a list of budgets, e.g. 10,100,1000");
        b->n_sweep = n;
        for (int k = 0; k < n; k++) b->sweep[k] = (long)t[k];
    }

    int rc = 1;
    char subset_paths[MAX_SIZES][PATH_MAX];
    int subset_n[MAX_SIZES] = {0}, total_rules = 0, max_size = 0, have_subsets = 0;
    so_sbuf md = {0}, js = {0}, sv = {0};
    int made_work = 0;

    ssize_t k = readlink("/proc/self/exe", b->self, sizeof b->self - 1);
    if (k <= 0) {
        fprintf(stderr, "superopt bench: cannot locate the running executable (/proc/self/exe)\n");
        return 1;
    }
    b->self[k] = 0;

    /* models */
    b->models = so_xcalloc(MAX_MODELS, sizeof *b->models);
    if (n_given) {
        for (int i = 0; i < n_given; i++) {
            if (!bn_is_file(given[i])) {
                fprintf(stderr, "superopt bench: %s: no such model file\n", given[i]);
                goto done;
            }
            model_res *m = &b->models[b->n_models++];
            snprintf(m->path, sizeof m->path, "%s", given[i]);
            model_name(given[i], m->name, sizeof m->name);
        }
    } else {
        char dir[PATH_MAX];
        if (bn_find_repo_file(b, "data/full/bert_taso.onnx", dir, sizeof dir)) {
            *strrchr(dir, '/') = 0;
            for (size_t i = 0; i < SO_ARRAY_LEN(full_models); i++) {
                model_res *m = &b->models[b->n_models++];
                if (bn_sfmt(m->path, sizeof m->path, "%s/%s.onnx", dir, full_models[i]) != SO_OK) goto fail;
                if (!bn_is_file(m->path)) {
                    fprintf(stderr, "superopt bench: %s: missing from the benchmark suite (run 'make models')\n", m->path);
                    goto done;
                }
                snprintf(m->name, sizeof m->name, "%s", full_models[i]);
            }
        } else if (bn_find_repo_file(b, "data/deepandwide.onnx", dir, sizeof dir)) {
            *strrchr(dir, '/') = 0;
            b->small_set = 1;
            fprintf(stderr, "superopt bench: note: data/full/ not found (run 'make models'); benchmarking the small models in %s\n", dir);
            for (size_t i = 0; i < SO_ARRAY_LEN(small_models); i++) {
                model_res *m = &b->models[b->n_models++];
                if (bn_sfmt(m->path, sizeof m->path, "%s/%s.onnx", dir, small_models[i]) != SO_OK) goto fail;
                if (!bn_is_file(m->path)) {
                    fprintf(stderr, "superopt bench: %s: no such model file\n", m->path);
                    goto done;
                }
                snprintf(m->name, sizeof m->name, "%s", small_models[i]);
            }
        } else {
            fprintf(stderr, "superopt bench: no models given and neither data/full/ nor data/ found (run from the repository root)\n");
            goto done;
        }
    }
    for (int i = 0; i < b->n_models; i++) {
        model_res *m = &b->models[i];
        m->literature = bn_in_list(m->name, literature_models, SO_ARRAY_LEN(literature_models)) ||
                        bn_in_list(m->name, small_literature, SO_ARRAY_LEN(small_literature));
    }
    /* which models get the ablations */
    if (b->ablations) {
        const char *names = b->abl_names ? b->abl_names : b->small_set ? "nasrnn,squeezenet" : "nasrnn_512,squeezenet1_1";
        int found = 0;
        for (int i = 0; i < b->n_models; i++) {
            const char *s = names;
            size_t len = strlen(b->models[i].name);
            while ((s = strstr(s, b->models[i].name))) {
                if ((s == names || s[-1] == ',') && (s[len] == 0 || s[len] == ',')) {
                    b->models[i].ablate = 1;
                    found++;
                    break;
                }
                s += len;
            }
        }
        if (!found && b->abl_names) {
            fprintf(stderr, "superopt bench: --ablation-models: none of '%s' is among the benchmarked models\n", b->abl_names);
            goto done;
        }
    }

    if (!strcmp(b->cost, "flops")) b->flops_check = 0; /* the main runs are the flops runs */
    /* tools */
    if (!b->no_ort && bn_find_ort(b) != SO_OK) goto fail;
    if (b->rules) snprintf(b->rules_file, sizeof b->rules_file, "%s", b->rules);
    else if (getenv("SUPEROPT_RULES") && getenv("SUPEROPT_RULES")[0]) snprintf(b->rules_file, sizeof b->rules_file, "%s", getenv("SUPEROPT_RULES"));
    else if (!bn_find_repo_file(b, "rules/default.rules", b->rules_file, sizeof b->rules_file)) b->rules_file[0] = 0;
    if (b->rules && !bn_is_file(b->rules)) {
        fprintf(stderr, "superopt bench: %s: no such rule file\n", b->rules);
        goto done;
    }
    if (!b->rules_file[0]) {
        fprintf(stderr, "superopt bench: no rule set found (rules/default.rules): run 'make rules' or pass --rules FILE\n");
        goto done;
    }

    /* work directory: optimized models, reports, rule subsets, the cost cache */
    if (work_dir) {
        if (mkdir(work_dir, 0755) != 0 && errno != EEXIST) {
            so_errorf("%s: cannot create directory: %s", work_dir, strerror(errno));
            goto fail;
        }
        snprintf(b->work, sizeof b->work, "%s", work_dir);
        b->keep = 1;
    } else {
        const char *tmp = getenv("TMPDIR");
        if (bn_sfmt(b->work, sizeof b->work, "%s/superopt-bench-XXXXXX", tmp && tmp[0] ? tmp : "/tmp") != SO_OK) goto fail;
        if (!mkdtemp(b->work)) {
            so_errorf("%s: cannot create a temporary directory: %s", b->work, strerror(errno));
            goto fail;
        }
        made_work = 1;
    }
    if (bn_sfmt(b->cache, sizeof b->cache, "%s/cost-cache", b->work) != SO_OK) goto fail;
    /* one cost table for every measured run: the first run that needs a configuration measures it,
       every other run reads it (a saved table given again reproduces the costs) */
    if (bn_sfmt(b->table, sizeof b->table, "%s", cost_table ? cost_table : "") != SO_OK ||
        (!cost_table && bn_sfmt(b->table, sizeof b->table, "%s/cost-table.tsv", b->work) != SO_OK))
        goto fail;
    bn_machine_info(b);

    if (b->ablations && bn_is_ablation_done(b) && b->n_sizes) {
        if (bn_write_rule_subsets(b, subset_paths, subset_n, &max_size) != SO_OK) {
            bn_record_failure(b, so_error());
        } else {
            so_ruleset rs = {0};
            if (so_rules_load(b->rules_file, &rs) == SO_OK) total_rules = rs.n_rules;
            so_ruleset_free(&rs);
            have_subsets = 1;
            bn_note(b, "rule-size ablation: %s has %d rules, largest pattern %d operators", b->rules_file, total_rules, max_size);
        }
    }

    bn_note(b, "%d models, work directory %s", b->n_models, b->work);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bn_on_signal; /* no SA_RESTART: poll() returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (int i = 0; i < b->n_models && !bn_interrupted; i++) {
        bn_note(b, "[%d/%d]", i + 1, b->n_models);
        bn_bench_model(b, &b->models[i], have_subsets ? subset_paths : NULL, subset_n, total_rules);
    }
    if (bn_interrupted) {
        fprintf(stderr, "superopt bench: interrupted; nothing written\n");
        goto done;
    }
    b->t_total = so_now() - b->t_start;
    bn_load_avg(b->load_end, sizeof b->load_end);

    bn_md_report(b, &md);
    fwrite(md.s, 1, md.n, stdout);
    fflush(stdout);
    if (b->json_path) {
        bn_json_report(b, &js);
        if (so_write_file_atomic(b->json_path, js.s, js.n) != SO_OK) goto fail;
    }
    if (b->svg_path) {
        bn_svg_report(b, &sv);
        if (so_write_file_atomic(b->svg_path, sv.s, sv.n) != SO_OK) goto fail;
    }
    if (b->failures) {
        fprintf(stderr, "superopt bench: %d run%s failed (first: %s)\n", b->failures, b->failures == 1 ? "" : "s", b->first_failure);
        goto done;
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "superopt bench: %s\n", so_error());
done:
    if (made_work && !b->keep) bn_rm_tree(b->work);
    for (int i = 0; b->models && i < b->n_models; i++)
        for (int j = 0; j < b->models[i].n_memo; j++) bn_opt_free(b->models[i].memo[j]);
    free(b->models);
    free(md.s);
    free(js.s);
    free(sv.s);
    return rc;
}
