/* bench_priv.h - private to the bench harness (cli/bench_*.c): limits, the bench state, results of optimize runs and measurements. */
#ifndef SO_BENCH_PRIV_H
#define SO_BENCH_PRIV_H

#include "commands.h"
#include "../src/common.h"
#include "../src/json.h"
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* limits */
#define MAX_MODELS 32
#define MAX_THREADS 4
#define MAX_ROUNDS 15
#define MAX_SWEEP 12
#define MAX_ALPHA 8
#define MAX_SIZES 6
#define MAX_MEMO 64 /* > 4 + MAX_SIZES + MAX_ALPHA + MAX_SWEEP */

enum { S_NONE = 0, S_GREEDY = 1, S_BACKTRACK = 2, S_EQSAT = 3, N_STRAT = 4 };
extern const char *const strat_name[N_STRAT]; /* "none", "greedy", "backtrack", "eqsat" */

typedef struct proc {
    int code;          /* exit status; -1 if killed by a signal */
    int timed_out;
    double seconds;    /* wall time */
    char *out, *err;   /* captured stdout / stderr, NUL-terminated, malloc'd */
} proc;
/* ======================================================================================
   the bench state
   ====================================================================================== */

/* One optimize invocation. */
typedef struct spec {
    int search;
    int flops;             /* 1: --cost flops whatever the bench's cost model (the deterministic cross-check) */
    double alpha;
    long budget;
    double time_limit;
    int layout_none;       /* 1: --layout none (standard ONNX for other runtimes: what ONNX Runtime times) */
    const char *rules;     /* NULL: the bench's rule set */
    char rules_id[32];     /* identifies the rule set for reuse ("all", "k<=3") */
    char tag[32];          /* file name part */
} spec;

typedef struct opt_res {
    spec sp;
    int ok;
    char err[512];
    char out[PATH_MAX], report[PATH_MAX];
    double cost_before, cost_after, lat_before, lat_after, search_s, wall_s;
    double search_cpu_s;        /* the report's search_cpu_seconds (NAN: not reported) */
    double alpha, time_limit;
    long long explored, budget;
    int nodes_before, nodes; /* the optimizer's graph (report), -1 if not reported */
    int onnx_nodes;          /* operators in the written ONNX file (fused epilogues come apart) */
    double gflop;
    int rules_total, rules_distinct;
    char *rules_json;      /* the report's rules_applied object, compact (malloc'd) */
    char rules_top[96];    /* the most applied rules, e.g. "12x4, 7x2, +3 more" */
    char stopped_by[16];
    int layout_applied;    /* the report's layout.applied: the file has blocked-channel operators (ai.superopt) */
    long long enodes;      /* eqsat: live e-nodes at the end of saturation (-1: not eqsat) */
    char extraction[16];   /* eqsat: "greedy", "ilp-optimal", "ilp-feasible", "moves" */
    char rules_file[PATH_MAX];
} opt_res;

/* One latency measurement series (the same command in every round). */
typedef struct meas {
    int used, ort, threads, iters, warmup;
    const char *model;     /* path */
    char label[64];
    int n;
    double round_ms[MAX_ROUNDS];
    double ms, lo, hi;     /* median of the round medians, smallest, largest; NaN if failed */
    char err[400];
} meas;

typedef struct abl {
    char label[24];        /* "k<=3", "alpha 1.05", "budget 100" */
    double x;              /* the parameter */
    int n_rules;           /* rule-size ablation: rules in the set */
    opt_res *r;
} abl;

typedef struct model_res {
    char name[64];
    char path[PATH_MAX];
    int literature;
    int ablate;
    opt_res *strat[N_STRAT];
    opt_res *fstrat[N_STRAT]; /* greedy, backtrack and eqsat under the flops cost model (NULL if not run) */
    opt_res *ostrat[N_STRAT]; /* the same search with --layout none, for ONNX Runtime, where strat[s]'s layout step
                                 applied (ONNX Runtime has no blocked-channel operators); NULL: strat[s]'s file */
    int same_as[N_STRAT];  /* earliest strategy whose optimized model is byte-identical (itself if none) */
    int ort_as[N_STRAT];   /* the same among the strategies measured under ONNX Runtime (greedy, backtrack) */
    meas ours[N_STRAT][MAX_THREADS];
    meas ort_orig, ort[N_STRAT];
    double est_ms;
    int rounds;            /* latency rounds for this model */
    abl size[MAX_SIZES], alpha[MAX_ALPHA], budget[MAX_SWEEP];
    int n_size, n_alpha, n_budget;
    opt_res *memo[MAX_MEMO];
    int n_memo;
    double seconds;
} model_res;

typedef struct bench {
    const char *const *pins;     /* the command line's --input-shape / --dim ("s:..." / "d:..."), for the subprocesses */
    int n_pins;
    char self[PATH_MAX], node[PATH_MAX], ort_script[PATH_MAX];
    char ort_version[32], node_version[32], git[64];
    char work[PATH_MAX], cache[PATH_MAX];
    char table[PATH_MAX];        /* the measured cost table every measured run reads (--cost-table; default <work>/cost-table.tsv) */
    char rules_file[PATH_MAX];   /* resolved rule set used by the ablation filter */
    int keep;
    const char *json_path, *svg_path, *rules, *cost, *abl_names;
    int rounds;
    double target_s, proc_timeout;
    int threads[MAX_THREADS], n_threads, ort_threads, no_ort, allow_unverified, quiet, ablations;
    int flops_check;             /* also search greedy/backtrack with --cost flops */
    double alpha, time_limit, sweep_time_limit;
    long budget;
    long sweep[MAX_SWEEP];
    int n_sweep;
    double alphas[MAX_ALPHA];
    int n_alphas;
    int sizes[MAX_SIZES], n_sizes;
    model_res *models;
    int n_models;
    int small_set;
    int failures;
    char first_failure[512];
    double t_start, t_total;
    char cmdline[2048];
    char date[64];
    char cpu[160], os[160];
    char blas[160]; /* kernels/blas.h so_blas_describe at the current level: OpenBLAS's core, routed around or not */
    int ncpu;
    double mem_gb;
    char load_start[64], load_end[64]; /* /proc/loadavg: 1, 5, 15 minutes */
    int n_opt_runs, n_meas_runs;
} bench;

/* bench_util.c */
so_status bn_sfmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int bn_is_file(const char *p);
int bn_is_dir(const char *p);
int bn_files_equal(const char *a, const char *c);
/* Entries of a cost table file (lines not starting with '#'); 0 if it does not exist. */
long bn_table_entries(const char *path);
int bn_in_list(const char *name, const char *const *list, size_t n);
void bn_sb_xml_str(so_sbuf *b, const char *s);
void bn_rm_tree(const char *path);
void bn_note(const bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bn_record_failure(bench *b, const char *msg);


/* bench_proc.c */
/* Set by SIGINT/SIGTERM (bn_on_signal): the running child is killed, no new step starts. */
extern volatile sig_atomic_t bn_interrupted;
void bn_on_signal(int sig);
void bn_proc_free(proc *r);
void bn_last_line(const char *s, char *buf, size_t n);
so_status bn_run_proc(char *const *argv, double timeout_s, proc *r);
/* Appends the command line's pins to argv at k (as --input-shape SPEC / --dim SPEC); returns the new k.
   argv needs room for BN_PIN_ARGV more entries. */
#define BN_PIN_ARGV (2 * SO_CLI_MAX_PINS)
int bn_add_pins(const struct bench *b, char **argv, int k);
void bn_proc_failure(const proc *r, const char *what, double timeout_s, char *buf, size_t n);

/* bench_env.c */
int bn_find_repo_file(const bench *b, const char *rel, char *out, size_t n);
void bn_load_avg(char *buf, size_t n);
void bn_machine_info(bench *b);
so_status bn_find_ort(bench *b);

/* bench_opt.c */
void bn_opt_free(opt_res *r);
opt_res *bn_optimize(bench *b, model_res *m, const spec *sp);

/* bench_measure.c */
void bn_meas_init(meas *x, int ort, const char *model, int threads, const char *label);
so_status bn_measure_once(bench *b, const meas *x, int iters, int warmup, double *ms);
void bn_pick_iters(const bench *b, double est_ms, int *iters, int *warmup);
void bn_measure_rounds(bench *b, model_res *m, meas **xs, int n);

/* bench_model.c */
so_status bn_write_rule_subsets(bench *b, char paths[][PATH_MAX], int *n_rules, int *max_size);
void bn_bench_model(bench *b, model_res *m, char subset_paths[][PATH_MAX], const int *subset_n, int total_rules);

/* bench_report.c */
int bn_is_ablation_done(const bench *b);
void bn_md_report(const bench *b, so_sbuf *o);
void bn_json_report(const bench *b, so_sbuf *o);
void bn_svg_report(const bench *b, so_sbuf *o);

#endif
