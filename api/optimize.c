/* optimize.c - superopt_optimize: load, canonicalise, search with proven rules, check the result numerically
   against the original, measure, write atomically, report (JSON, summary text, Graphviz). */
#include "api_priv.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kernels/blas.h"
#include "../kernels/exec.h"
#include "../kernels/isa.h"
#include "../kernels/nchwc.h"
#include "../kernels/safety.h"
#include "../search/cost.h"
#include "../search/extract.h"
#include "../search/fold.h"
#include "../search/layout.h"
#include "../search/match.h"
#include "../search/search.h"
#include "../src/feed.h"
#include "../src/json.h"
#include "../src/onnx_io.h"
#include "../verifier/proofs.h"

enum { LAYOUT_NONE = 0, LAYOUT_AUTO, LAYOUT_NCHWC, LAYOUT_PASS };

/* so_search_result.stopped_by in the report: "time-limit" is the safety net (CPU time) */
static const char *stop_name(int stopped_by)
{
    static const char *const n[] = {"exhausted", "budget", "time-limit", "work-limit"};
    return stopped_by >= 0 && stopped_by <= 3 ? n[stopped_by] : "?";
}

typedef struct opts {
    const char *model, *out, *rules, *report, *dot, *cache_dir, *inputs, *cost_table, *trace, *trace_path;
    int search, cost, quiet, allow_unverified, allow_unchecked, reverse, check_incremental, check_noise, layout;
    double alpha, time_limit, layout_retime_budget;
    long long budget, threads, seed, work_limit;
} opts;

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Looks for `rel` in the folders above `file`'s folder: "<dir of file>/../<rel>". */
static const char *beside(const char *file, const char *rel, char *buf, size_t n)
{
    const char *s = strrchr(file, '/');
    if (!s) return NULL;
    snprintf(buf, n, "%.*s/../%s", (int)(s - file), file, rel);
    return file_exists(buf) ? buf : NULL;
}

/* The rule set (issue 19: one documented place): the "rules" option, else the one installed with the
   library or executable that holds this code (PREFIX/lib/libsuperopt.so or PREFIX/bin/superopt ->
   PREFIX/share/superopt/default.rules), else a build's (build/libsuperopt.so or build/superopt ->
   rules/default.rules of the source tree). Never the working directory, never the environment: a
   model folder cannot bring its own rules. */
static const char *find_rules(const char *given, char *buf, size_t n)
{
    if (given) return given;
    Dl_info di;
    char self[PATH_MAX];
    const char *me = NULL;
    if (dladdr((void *)superopt_optimize, &di) && di.dli_fname && strchr(di.dli_fname, '/') && realpath(di.dli_fname, self)) me = self;
    if (!me) { /* a static link: this code is in the executable */
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k > 0) self[k] = 0, me = self;
    }
    if (!me) return NULL;
    const char *r = beside(me, "share/superopt/default.rules", buf, n);
    return r ? r : beside(me, "rules/default.rules", buf, n);
}

/* ---------------- output files ---------------- */

static so_status write_dot(const so_graph *g, const char *path)
{
    so_atomic out;
    if (so_atomic_open(&out, path, "w") != SO_OK) return SO_ERR;
    FILE *f = out.f;
    fprintf(f, "digraph superopt {\n  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n");
    char sb[96], d[200];
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        if (n->op == SO_OP_WEIGHT) continue;
        so_node_desc(g, i, d, sizeof d);
        const char *name = so_ops[n->op].name;
        if (n->op == SO_OP_OPAQUE && n->ref >= 0 && n->ref < g->model->n_opaque) name = g->model->opaque[n->ref].op_type;
        fprintf(f, "  n%d [label=\"%s%s%s\\n%s\"%s];\n", (int)i, name,
                (so_ops[n->op].flags & SO_F_ACT) && n->attr->act ? "+" : "",
                (so_ops[n->op].flags & SO_F_ACT) && n->attr->act ? so_act_names[n->attr->act] : "",
                n->n_out > 0 ? so_shape_str(&n->out[0], sb, sizeof sb) : "",
                n->op == SO_OP_INPUT ? ", shape=ellipse" : n->op == SO_OP_OPAQUE ? ", style=dashed" : "");
        for (int k = 0; k < n->n_in; k++) {
            const so_node *p = &g->nodes[n->in[k].node];
            if (p->op == SO_OP_WEIGHT) continue;
            fprintf(f, "  n%d -> n%d;\n", (int)n->in[k].node, (int)i);
        }
    }
    for (int32_t o = 0; o < g->model->n_outputs; o++) {
        fprintf(f, "  out%d [shape=ellipse, label=\"output %d\"];\n  n%d -> out%d;\n", (int)o, (int)o,
                (int)g->outputs[o].node, (int)o);
    }
    fprintf(f, "}\n");
    return so_atomic_commit(&out, path, 1);
}

/* Runs `dot -Tsvg IN -o OUT` (found on PATH) and waits: 0 done, 1 dot failed, -1 no dot. */
static int run_dot(const char *in, const char *out)
{
    char *const argv[] = {"dot", "-Tsvg", (char *)in, "-o", (char *)out, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "dot", NULL, NULL, argv, environ);
    if (err) return err == ENOENT ? -1 : 1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* Do paths a and b name the same file? Existing files: the same device and inode (links,
   "./x" and "x" alike); otherwise the same real folder and the same last component. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
    const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
    snprintf(da, sizeof da, "%.*s", ba ? (int)(ba - a) + (ba == a) : 1, ba ? a : ".");
    snprintf(db, sizeof db, "%.*s", bb ? (int)(bb - b) + (bb == b) : 1, bb ? b : ".");
    if (!realpath(da, ra) || !realpath(db, rb)) return 0;
    return !strcmp(ra, rb) && !strcmp(ba ? ba + 1 : a, bb ? bb + 1 : b);
}

static so_status write_dots(const so_graph *before, const so_graph *after, const char *dir, FILE *warn)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return so_errorf("%s: cannot create directory: %s", dir, strerror(errno));
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/before.dot", dir);
    snprintf(p2, sizeof p2, "%s/after.dot", dir);
    if (write_dot(before, p1) != SO_OK || write_dot(after, p2) != SO_OK) return SO_ERR;
    /* SVGs when Graphviz is installed: dot run with an argument vector, no shell (the folder name
       is data, never code); a path starting with '-' gets "./" so dot cannot read it as an option */
    const char *pre = dir[0] == '-' ? "./" : "";
    char s1[4300], s2[4300], d1[4300], d2[4300];
    snprintf(d1, sizeof d1, "%s%s", pre, p1);
    snprintf(d2, sizeof d2, "%s%s", pre, p2);
    snprintf(s1, sizeof s1, "%s%s/before.svg", pre, dir);
    snprintf(s2, sizeof s2, "%s%s/after.svg", pre, dir);
    int r1 = run_dot(d1, s1), r2 = r1 < 0 ? -1 : run_dot(d2, s2);
    if (r1 > 0 || r2 > 0) fprintf(warn, "  warning: dot failed to render SVGs in %s\n", dir);
    return SO_OK;
}

/* ---------------- the command ---------------- */

static int count_work_nodes(const so_graph *g)
{
    int c = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (!(so_ops[g->nodes[i].op].flags & SO_F_SOURCE)) c++;
    return c;
}

static int src_has_const(const so_rule *r)
{
    for (int p = 0; p < r->src.n_nodes; p++)
        if (so_ops[r->src.nodes[p].op].flags & SO_F_CONST) return 1;
    return r->src.n_nodes == 0;
}

/* The hand-written placement (search/layout.c so_layout_nchwc, session 5): fold the batchnorms, block
   every qualifying conv, then one greedy refinement in graph order that leaves a conv in NCHW when the
   whole graph then prices lower (so_layout_gain: clearly, under the measured model). Each of its steps
   is an instance of the layout axioms (verifier/AXIOMS.md: conv = unblk . convb . blk, unblk . blk =
   id), not of a generated rule. On success *out
   (caller frees) holds the placed graph and *cost its price under cm. */
static so_status layout_pass(so_cost_model *cm, const so_graph *g, int b, so_graph **out, double *cost, so_layout_stats *lst,
                             int32_t *kept)
{
    so_graph *fg = NULL, *lg = NULL;
    int32_t nf = 0;
    *out = NULL;
    *kept = 0;
    if (so_layout_fold_bn(g, b, &fg, &nf) != SO_OK || so_layout_nchwc(fg, b, NULL, &lg, lst) != SO_OK) {
        so_graph_free(fg);
        return SO_ERR;
    }
    lst->bn_folded = nf;
    double cb = so_cost_graph(cm, lg);
    if (lst->convs > 0) {
        /* the folded graph's weights are shared, so a try adds none */
        char *keep = so_xcalloc((size_t)fg->n_nodes + 1, 1);
        for (int32_t i = 0; i < fg->n_nodes; i++) {
            if (fg->nodes[i].op != SO_OP_CONV) continue;
            keep[i] = 1;
            so_graph *cand = NULL;
            so_layout_stats cs;
            if (so_layout_nchwc(fg, b, keep, &cand, &cs) != SO_OK) {
                free(keep);
                so_graph_free(fg);
                so_graph_free(lg);
                return SO_ERR;
            }
            const double cc = so_cost_graph(cm, cand);
            if (so_layout_gain(cm, cand, cc, lg, cb, fg, i)) {
                so_graph_free(lg);
                lg = cand, cb = cc, *lst = cs, lst->bn_folded = nf;
                (*kept)++;
            } else {
                so_graph_free(cand);
                keep[i] = 0;
            }
        }
        free(keep);
    }
    so_graph_free(fg);
    *out = lg;
    *cost = cb;
    return SO_OK;
}

/* counts[r] (r < n_rules): applications of rule r on res's path */
static void count_rules(const so_search_result *res, int32_t *counts, int32_t n_rules)
{
    memset(counts, 0, ((size_t)n_rules + 1) * sizeof *counts);
    for (int32_t k = 0; k < res->n_path; k++) counts[res->path[k]]++;
}

/* What the layout step works with (one optimization). */
typedef struct layout_env {
    so_cost_model *cm;
    const so_rule *rules;
    int32_t n_rules;
    so_fold_ctx *fc;
    int layout;                 /* LAYOUT_* (auto under the flops model already turned into none) */
    int b;                      /* the block (so_nchwc_block) */
    int search;                 /* 1: the strategy's layout search runs over the cheaper placement */
    so_search_opts so;          /* its options: the strategy, budget, work limit */
    double time_left;           /* its safety net (CPU seconds; 0: none) */
} layout_env;

/* What the layout step made of one searched graph. */
typedef struct placed {
    so_graph *g;                /* the placed graph when applied (owned), else NULL: the searched graph stays */
    int applied;
    double cost_plain, cost_blocked; /* the searched graph's cost, the placed graph's (-1: none) */
    double cost_rules, cost_pass;    /* under auto, each placement's cost (-1: not tried) */
    const char *method;         /* "none", "rules" or "pass" */
    so_layout_stats lst;
    int32_t kept;               /* convs a refinement left in NCHW */
    int32_t *lc;                /* per rule: applications by the layout step (n_rules + 1, malloc'd) */
    double search_seconds;      /* the layout search (wall) */
    double search_cpu_seconds;  /* the layout search (CPU time of the calling thread) */
    double search_measure_seconds; /* of search_seconds: timing new cost configurations (wall) */
    int64_t search_graphs, search_work;
    int32_t search_steps;       /* rewrites of the layout search kept */
    int search_stopped_by;      /* so_search_result.stopped_by of the layout search (-1: not run) */
    int choice_retimed;         /* auto: the rules-or-pass choice decided by paired re-timing (so_layout_prefer) */
    int apply_retimed;          /* auto: whether to apply the placement decided by paired re-timing */
} placed;

static double placed_cost(const placed *p) { return p->applied ? p->cost_blocked : p->cost_plain; }

static void placed_free(placed *p)
{
    so_graph_free(p->g);
    free(p->lc);
    memset(p, 0, sizeof *p);
}

/* The layout step of --layout auto / nchwc / pass for the searched graph g (priced cost_g): the
   placement by proven rules (auto: each blocked conv then tried plain again by an UNBLOCK rule and
   its cancellations, and the hand-written pass priced too, the cheaper kept), then under e->search
   the strategy's own search over the kept placement with the block's layout rules; the placed graph
   is applied when it prices lower (auto, pass) or always (nchwc). On failure *p is freed. */
static so_status place_layout(const layout_env *e, const so_graph *g, double cost_g, placed *p)
{
    memset(p, 0, sizeof *p);
    p->cost_plain = cost_g;
    p->cost_blocked = p->cost_rules = p->cost_pass = -1;
    p->method = "none";
    p->search_stopped_by = -1;
    p->lc = so_xcalloc((size_t)e->n_rules + 1, sizeof *p->lc);
    const int32_t n_rules = e->n_rules;
    so_cost_model *cm = e->cm;
    if (e->layout == LAYOUT_PASS) {
        so_graph *lg = NULL;
        if (layout_pass(cm, g, e->b, &lg, &p->cost_blocked, &p->lst, &p->kept) != SO_OK) goto fail;
        p->cost_plain = so_cost_graph(cm, g);
        p->method = "pass";
        if (p->lst.convs > 0 && p->cost_blocked < p->cost_plain) p->g = lg, p->applied = 1;
        else so_graph_free(lg);
        return SO_OK;
    }
    if (e->layout != LAYOUT_AUTO && e->layout != LAYOUT_NCHWC) return SO_OK;
    /* by proven rules (search/layout.c so_layout_by_rules): the rules applied are reported with the
       search's; auto then tries each blocked conv plain again by an UNBLOCK rule, kept when cheaper
       (so_layout_gain) */
    int32_t *lc = p->lc, *lc2 = so_xcalloc((size_t)n_rules + 1, sizeof *lc2);
    so_graph *lg = NULL;
    if (so_layout_by_rules(g, e->rules, n_rules, e->b, e->fc, &lg, lc, &p->lst) != SO_OK) {
        free(lc2);
        goto fail;
    }
    p->cost_plain = so_cost_graph(cm, g);
    double cost_blocked = so_cost_graph(cm, lg);
    for (int32_t k = 0, seen = 0; e->layout == LAYOUT_AUTO && k < lg->n_nodes; k++) {
        if (lg->nodes[k].op != SO_OP_CONV_NCHWC) continue;
        so_graph *cand = NULL;
        int32_t ru = -1;
        if (so_layout_unblock_at(lg, e->rules, n_rules, e->b, k, e->fc, &cand, &ru) != SO_OK) goto fail_lg;
        seen++;
        if (!cand) continue;
        /* then cancel the reorder pairs the unblock made next to an unblocked neighbour */
        so_graph *cc_g = NULL;
        memset(lc2, 0, ((size_t)n_rules + 1) * sizeof *lc2);
        if (so_layout_cancel(cand, e->rules, n_rules, e->b, e->fc, &cc_g, lc2) != SO_OK) {
            so_graph_free(cand);
            goto fail_lg;
        }
        so_graph_free(cand);
        cand = cc_g;
        const double cc = so_cost_graph(cm, cand);
        if (so_layout_gain(cm, cand, cc, lg, cost_blocked, lg, k)) {
            so_graph_free(lg);
            lg = cand, cost_blocked = cc;
            lc[ru]++;
            for (int32_t r = 0; r < n_rules; r++) lc[r] += lc2[r];
            p->kept++;
            k = -1; /* node numbers changed: rescan, skipping the blocked convs already tried */
            for (int32_t q = 0, s2 = 0; q < lg->n_nodes; q++)
                if (lg->nodes[q].op == SO_OP_CONV_NCHWC && ++s2 == seen) k = q;
            if (k < 0) break;
        } else {
            so_graph_free(cand);
        }
    }
    free(lc2);
    lc2 = NULL;
    p->lst.convs = 0;
    for (int32_t k = 0; k < lg->n_nodes; k++) p->lst.convs += lg->nodes[k].op == SO_OP_CONV_NCHWC;
    p->cost_rules = cost_blocked;
    p->method = "rules";
    if (e->layout == LAYOUT_AUTO) {
        /* auto also prices the hand-written pass (layout_pass) and keeps whichever placement the
           measured cost prices lower (ties: the proven rules; so_layout_prefer: a close call under the
           measured model re-timed paired); the report gives both costs */
        so_graph *pg = NULL;
        so_layout_stats pls;
        int32_t pkept = 0;
        memset(&pls, 0, sizeof pls);
        if (layout_pass(cm, g, e->b, &pg, &p->cost_pass, &pls, &pkept) != SO_OK) goto fail_lg;
        if (pls.convs > 0 && (p->lst.convs == 0 || so_layout_prefer(cm, pg, p->cost_pass, lg, p->cost_rules, 1 - SO_COST_NOISE, 1 / (1 - SO_COST_NOISE), &p->choice_retimed))) {
            so_graph_free(lg);
            lg = pg, cost_blocked = p->cost_pass, p->lst = pls, p->kept = pkept;
            p->method = "pass";
            memset(lc, 0, ((size_t)n_rules + 1) * sizeof *lc);
        } else
            so_graph_free(pg);
    }
    if (e->search) {
        /* layout as a search decision: the strategy's own search over the cheaper placement (rules or
           pass) with the proven layout rules of this block only (both directions: unblock a conv, move
           a reorder, cancel a pair); greedy takes only steps that pay at once, backtracking may take an
           uphill step (an UNBLOCK: two reorders) whose cancellations pay later. Its time counts in
           search_seconds; it has the work limit of its own (deterministic) and, as a safety net, what
           the first search left of the time limit. Its best graph replaces the placement only when the
           nodes it changed price clearly lower (so_layout_search_keep: the refinements' margin). */
        int32_t n_lr = 0;
        int32_t *lidx = so_xmalloc(((size_t)n_rules + 1) * sizeof *lidx);
        for (int32_t i = 0; i < n_rules; i++)
            if (so_layout_rule_block(&e->rules[i]) == e->b) lidx[n_lr++] = i;
        if (n_lr > 0) {
            so_rule *lr = so_xmalloc((size_t)n_lr * sizeof *lr);
            for (int32_t i = 0; i < n_lr; i++) lr[i] = e->rules[lidx[i]];
            double t2 = so_now(), c2 = so_cpu_now(), m2 = cm->measure_seconds;
            so_search_opts so2 = e->so;
            so2.progress = 0;
            so2.time_limit = e->time_left;
            so_search_result r2;
            memset(&r2, 0, sizeof r2);
            if (so_search_run(lg, lr, n_lr, cm, e->fc, &so2, &r2) != SO_OK) {
                free(lr);
                free(lidx);
                goto fail_lg;
            }
            p->search_seconds = so_now() - t2;
            p->search_measure_seconds = cm->measure_seconds - m2;
            p->search_cpu_seconds = so_cpu_now() - c2;
            p->search_graphs = r2.graphs_explored;
            p->search_work = r2.work;
            p->search_stopped_by = r2.stopped_by;
            if (so_layout_search_keep(cm, r2.best, r2.cost_after, lg, cost_blocked)) {
                so_graph_free(lg);
                lg = r2.best;
                r2.best = NULL;
                cost_blocked = r2.cost_after;
                for (int32_t k = 0; k < r2.n_path; k++) lc[lidx[r2.path[k]]]++;
                p->lst.convs = p->lst.reorders = 0;
                for (int32_t k = 0; k < lg->n_nodes; k++) {
                    p->lst.convs += lg->nodes[k].op == SO_OP_CONV_NCHWC;
                    p->lst.reorders += lg->nodes[k].op == SO_OP_NCHWC_IN || lg->nodes[k].op == SO_OP_NCHWC_OUT;
                }
                p->search_steps = r2.n_path;
            }
            so_search_result_free(&r2);
            free(lr);
        }
        free(lidx);
    }
    p->cost_blocked = cost_blocked;
    /* auto applies the placement when it prices lower than the searched graph; when the cached prices say it does
       not, the two are re-timed paired (so_layout_prefer): a blocked placement priced at its loaded moment must not
       leave a whole CNN in NCHW */
    if (p->lst.convs > 0 && (e->layout == LAYOUT_NCHWC || so_layout_prefer(cm, lg, cost_blocked, g, p->cost_plain, 1.0, INFINITY, &p->apply_retimed)))
        p->g = lg, p->applied = 1;
    else so_graph_free(lg);
    if (!p->applied) memset(lc, 0, ((size_t)n_rules + 1) * sizeof *lc);
    return SO_OK;
fail_lg:
    free(lc2);
    so_graph_free(lg);
fail:
    placed_free(p);
    return SO_ERR;
}

/* Parses trace_path, rule labels separated by commas, each optionally followed by *N (N times), into
   indices of labels[0..n) (*script malloc'd). An unknown label or a bad count: SO_ERR with a message. */
static so_status parse_trace_path(const char *text, const char (*labels)[24], int32_t n, int32_t **script, int32_t *n_script)
{
    int32_t cap = 16, k = 0;
    int32_t *v = so_xmalloc((size_t)cap * sizeof *v);
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",*");
        int32_t r = -1;
        for (int32_t i = 0; i < n && r < 0; i++)
            if (strlen(labels[i]) == len && !strncmp(labels[i], p, len)) r = i;
        if (r < 0) {
            free(v);
            return so_errorf("trace_path %s: no searched rule is named '%.*s'", text, (int)len, p);
        }
        p += len;
        long times = 1;
        if (*p == '*') {
            char *end;
            times = strtol(p + 1, &end, 10);
            if (end == p + 1 || times < 1 || times > 100000 || (*end && *end != ',')) {
                free(v);
                return so_errorf("trace_path %s: expected a count from 1 to 100000 after '*'", text);
            }
            p = end;
        }
        for (long t = 0; t < times; t++) {
            if (k == cap) v = so_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
            v[k++] = r;
        }
        if (*p == ',') p++;
    }
    *script = v;
    *n_script = k;
    return SO_OK;
}

/* superopt_optimize's work (the caller holds the API lock): on success *json and *text receive the
   report (malloc'd); on failure nothing is written and the thread's message says why. */
static so_status optimize(const char *src, const char *dst, const struct superopt_config *c, char **json, char **text)
{
    static const so_search_kind searches[] = {SO_SEARCH_BACKTRACK, SO_SEARCH_GREEDY, SO_SEARCH_NONE, SO_SEARCH_EQSAT};
    opts o = {.model = src, .out = dst, .rules = c->rules, .report = c->report, .dot = c->dot, .cache_dir = c->cache_dir, .cost_table = c->cost_table,
              .trace = c->trace, .trace_path = c->trace_path, .search = searches[c->search], .cost = c->cost == 0 ? SO_COST_MEASURED : SO_COST_FLOPS,
              .quiet = !c->progress, .allow_unverified = c->allow_unverified, .allow_unchecked = c->allow_unchecked,
              .inputs = c->inputs, .reverse = c->reverse,
              .check_incremental = c->check_incremental, .check_noise = c->check_noise, .layout = c->layout == 0 ? LAYOUT_AUTO : c->layout == 1 ? LAYOUT_NCHWC : c->layout == 3 ? LAYOUT_PASS : LAYOUT_NONE,
              .alpha = c->alpha, .time_limit = c->time_limit, .layout_retime_budget = c->layout_retime_budget, .budget = c->budget, .threads = c->threads, .seed = c->seed,
              .work_limit = c->work_limit};
    /* the report: JSON and the summary for people, both built in memory */
    size_t jlen = 0, tlen = 0;
    FILE *jf = open_memstream(json, &jlen), *tf = open_memstream(text, &tlen);
    if (!jf || !tf) {
        if (jf) fclose(jf);
        if (tf) fclose(tf);
        free(*json);
        free(*text);
        *json = *text = NULL;
        return so_errorc(SO_ERR_LIMIT, "%s: out of memory for the report", src);
    }

    so_status rc = SO_ERR;
    so_ruleset rs = {0};
    so_model *m = NULL;
    so_rule *rules = NULL;
    char (*labels)[24] = NULL;
    const char **label_ptrs = NULL;
    int32_t *script = NULL;
    FILE *trace = NULL;
    so_graph *start = NULL;
    so_fold_ctx fc;
    int fc_init = 0, cm_init = 0;
    so_cost_model cm;
    so_search_result res;
    memset(&res, 0, sizeof res);
    placed pl, pl_greedy; /* the layout step of the searched graph, and of backtracking's greedy warm start */
    memset(&pl, 0, sizeof pl);
    memset(&pl_greedy, 0, sizeof pl_greedy);
    double cost_final_bt = -1, cost_final_greedy = -1; /* both after the layout step (-1: not compared) */
    int kept_greedy = 0;
    int32_t *counts = NULL;
    char *out_path = NULL;
    char rbuf[PATH_MAX + 64];
    so_proof_stats pst;
    memset(&pst, 0, sizeof pst);
    so_atomic rep; /* --report, open from before the model is written until after */
    int rep_open = 0;

    if (o.out) {
        out_path = so_xstrdup(o.out);
    } else {
        size_t n = strlen(o.model);
        out_path = so_xmalloc(n + 16);
        memcpy(out_path, o.model, n + 1);
        if (n > 5 && !strcmp(out_path + n - 5, ".onnx")) out_path[n - 5] = 0;
        strcat(out_path, ".opt.onnx");
    }
    /* a report written over the model it describes (or over the input) is refused before anything
       is read or written */
    if (o.report && (same_file(o.report, out_path) || same_file(o.report, o.model))) {
        so_errorf("--report %s names the %s; give the report its own file", o.report,
                  same_file(o.report, o.model) ? "input model" : "output model");
        goto fail;
    }
    if (o.dot && (same_file(o.dot, out_path) || same_file(o.dot, o.model))) {
        so_errorf("--dot %s names a model file; give it a folder", o.dot);
        goto fail;
    }

    /* rules */
    const double t_begin = so_now();
    double t_rules = 0, t_import = 0, t_input_cost = 0, t_check = 0; /* the report's "seconds" (wall) */
    const char *rules_path = find_rules(o.rules, rbuf, sizeof rbuf);
    if (!rules_path) {
        so_errorf("no rule set found (installed: <prefix>/share/superopt/default.rules next to the library or executable; build tree: rules/default.rules); pass --rules FILE");
        goto fail;
    }
    if (so_rules_load(rules_path, &rs) != SO_OK) goto fail;
    /* proofs bound to content: every rule is proved by this build (or found in its proof cache);
       a forged 'proof proved' is refused here, before the search (verifier/proofs.h) */
    so_proof_opts po = {.allow_unverified = o.allow_unverified, .threads = 2, .timeout_s = 0, .cache_dir = o.cache_dir};
    if (so_proofs_bind(&rs, rules_path, &po, &pst) != SO_OK) goto fail;
    if (pst.unproved) /* said even under -q: the output may hold unproved rewrites */
    {
        fprintf(stderr, "superopt: warning: %s: %d of %d rules are not proved by this build (%d tagged 'proof proved'); used because of --allow-unverified\n",
                rules_path, (int)pst.unproved, (int)pst.rules, (int)pst.forged);
        fprintf(tf, "  warning: %s: %d of %d rules are not proved by this build (%d tagged 'proof proved'); used because of --allow-unverified\n",
                rules_path, (int)pst.unproved, (int)pst.rules, (int)pst.forged);
    }
    /* the rules to search with (each, then its reverse) built in the rule set's own array: a
       rule is ~10 KB, and a second array of them was a third of the memory of a large set
       (100,000 rules: 2.9 GB). The array is doubled, the read rules moved to its back half, and
       rule i is read (copied out) before its slots are written: writes reach at most 2i+1,
       below rule i+1's place n+i+1. */
    const size_t nr = (size_t)rs.n_rules;
    rs.rules = so_xrealloc(rs.rules, (2 * nr + 1) * sizeof *rs.rules);
    rs.cap_rules = (int32_t)(2 * nr + 1);
    memmove(rs.rules + nr, rs.rules, nr * sizeof *rs.rules);
    rules = rs.rules; /* owned by rs */
    labels = so_xmalloc((2 * nr + 1) * sizeof *labels);
    int32_t n_rules = 0;
    const int block = so_nchwc_block();
    for (size_t i = 0; i < nr; i++) {
        so_rule cur = rs.rules[nr + i], rv;
        /* layout rules of another block are for another ISA level's kernels: not searched */
        const int rb = so_layout_rule_block(&cur);
        if (rb && rb != block) continue;
        if (!src_has_const(&cur)) {
            rules[n_rules] = cur;
            snprintf(labels[n_rules++], sizeof *labels, "%d", (int)cur.id);
        }
        if (o.reverse) {
            so_rule_reverse(&cur, &rv);
            if (!src_has_const(&rv) && !so_rule_eq(&rv, &cur)) {
                rules[n_rules] = rv;
                snprintf(labels[n_rules++], sizeof *labels, "%d-rev", (int)cur.id);
            }
        }
    }
    rs.n_rules = n_rules; /* rs now holds exactly the search's rules */
    /* layout rules last (stable): under --layout auto the search runs on the others only
       (rules[0..n_search)), and the placement after it (so_layout_by_rules, or the pass,
       whichever the measured cost prices lower) decides the layout: a search that blocks a few
       convs by rules first leaves a graph on which neither placement does as well (ResNet-50:
       32.1 ms measured cost against 29.5 ms from the plain searched graph); under --layout none they are not
       searched at all */
    int32_t n_search = n_rules;
    {
        int32_t n_lay = 0, w = 0;
        for (int32_t i = 0; i < n_rules; i++) n_lay += so_layout_rule_block(&rules[i]) != 0;
        if (n_lay > 0) {
            so_rule *lr = so_xmalloc((size_t)n_lay * sizeof *lr);
            char (*ll)[sizeof *labels] = so_xmalloc((size_t)n_lay * sizeof *ll);
            int32_t q = 0;
            for (int32_t i = 0; i < n_rules; i++) {
                if (so_layout_rule_block(&rules[i]) != 0) {
                    lr[q] = rules[i];
                    memcpy(ll[q++], labels[i], sizeof *labels);
                } else {
                    if (w != i) {
                        rules[w] = rules[i];
                        memcpy(labels[w], labels[i], sizeof *labels);
                    }
                    w++;
                }
            }
            memcpy(rules + w, lr, (size_t)n_lay * sizeof *lr);
            memcpy(labels + w, ll, (size_t)n_lay * sizeof *ll);
            free(lr);
            free(ll);
            /* --layout none: standard ONNX out, so the search never places blocked-layout operators either */
            if ((o.layout == LAYOUT_AUTO && o.cost == SO_COST_MEASURED) || o.layout == LAYOUT_NONE) n_search = w;
        }
    }

    t_rules = so_now() - t_begin;
    /* model (its file's identity first: an unchanged standard-ONNX result is that file, copied below) */
    struct stat st_model;
    const int model_regular = stat(o.model, &st_model) == 0 && S_ISREG(st_model.st_mode);
    if (so_onnx_load(o.model, &m) != SO_OK) goto fail;
    so_fold_init(&fc, m);
    fc_init = 1;
    start = so_graph_clone(m->graph);
    so_normalize_attrs(start);
    so_canon_stats cst = {0, 0, 0, 0};
    if (so_canonicalize(&fc, start, &cst) != SO_OK) {
        so_error_prefix(o.model);
        goto fail;
    }
    t_import = so_now() - t_begin - t_rules;
    /* a cost table (measured) replaces the disk cache: the costs, and so the output, depend on it alone */
    const int use_table = o.cost_table && o.cost == SO_COST_MEASURED;
    if (so_cost_init(&cm, (so_cost_kind)o.cost, (int)o.threads, use_table ? "" : o.cache_dir) != SO_OK) goto fail;
    /* --layout none writes standard ONNX for other runtimes: what our executor makes a zero-copy view of
       (concats, splits) they copy, so the search prices it as a copy (search/cost.h copies) */
    cm.copies = o.layout == LAYOUT_NONE;
    cm.paired_budget = o.layout_retime_budget;
    cm_init = 1;
    if (use_table && so_cost_table_load(&cm, o.cost_table) != SO_OK) goto fail;
    /* a damaged disk cache is not an error: what it lacks is measured again and the file rewritten */
    if (cm.path && cm.foreign)
        fprintf(stderr, "superopt: warning: %s: not a cost cache of this build's format (damaged?): ignored, measured again\n", cm.path);
    else if (cm.path && cm.malformed)
        fprintf(stderr, "superopt: warning: %s: %lld damaged cost cache line%s ignored, measured again\n", cm.path, (long long)cm.malformed,
                cm.malformed == 1 ? "" : "s");
    /* the input as imported, attributes normalised so that its nodes share cost keys with the
       search's graphs (folding and identity removal are not applied here) */
    so_graph *orig_norm = so_graph_clone(m->graph);
    so_normalize_attrs(orig_norm);
    t_input_cost = so_now();
    double cost_orig = so_cost_graph(&cm, orig_norm);
    const double meas_input = cm.measure_seconds; /* timing the input's configurations (before the search) */
    const int64_t cfg_input = cm.measured;
    so_graph_free(orig_norm);
    t_input_cost = so_now() - t_input_cost;

    /* search */
    so_search_opts so = {.kind = o.search, .alpha = o.alpha, .budget = o.budget, .time_limit = o.time_limit,
                         .work_limit = o.work_limit > 0 ? o.work_limit : -1,
                         .progress = !o.quiet && isatty(2), .queue_cap = 0, .verify_incremental = o.check_incremental};
    /* with a layout search after it (auto, measured, greedy or backtracking, a model with a conv: below),
       the search of the other rules gets 60 % of the time limit and the layout search the rest */
    int has_conv = 0;
    for (int32_t i = 0; i < start->n_nodes; i++) has_conv |= start->nodes[i].op == SO_OP_CONV;
    const int layout_search = has_conv && o.layout == LAYOUT_AUTO && o.cost == SO_COST_MEASURED &&
                              (o.search == SO_SEARCH_GREEDY || o.search == SO_SEARCH_BACKTRACK);
    if (layout_search && so.time_limit > 0) so.time_limit *= 0.6;
    /* search_seconds is wall time; search_cpu_seconds the CPU time of this thread over the same
       searches (timing new cost configurations included, as in search_seconds; on a loaded machine
       the figure that still means something) */
    /* the trace (search/README.md "Tracing"): the graphs greedy and backtracking expand, and before
       them the replay of trace_path, a rule sequence given by labels ("473-rev*32,506-rev") */
    if (o.trace) {
        if (!(trace = fopen(o.trace, "w"))) {
            so_errorf("%s: cannot write the trace: %s", o.trace, strerror(errno));
            goto fail;
        }
        label_ptrs = so_xmalloc(((size_t)n_rules + 1) * sizeof *label_ptrs);
        for (int32_t i = 0; i < n_rules; i++) label_ptrs[i] = labels[i];
        so.trace = trace;
        so.labels = label_ptrs;
    }
    if (o.trace_path) {
        int32_t n_script = 0;
        if (parse_trace_path(o.trace_path, (const char(*)[24])labels, n_search, &script, &n_script) != SO_OK) goto fail;
        int32_t done = 0;
        double c_end = 0, c_max = 0;
        if (so_search_replay(start, rules, n_search, &cm, &fc, &so, script, n_script, &done, &c_end, &c_max, NULL) != SO_OK) goto fail;
        const double c0 = so_cost_graph(&cm, start);
        fprintf(tf, "  trace path: %d of %d steps, cost %.6g -> %.6g (%.4fx of the start), highest %.6g (%.4fx)\n", (int)done, (int)n_script, c0,
                c_end, c_end / c0, c_max, c_max / c0);
    }
    double t_search = so_now(), c_search = so_cpu_now(), m_search = cm.measure_seconds;
    if (so_search_run(start, rules, n_search, &cm, &fc, &so, &res) != SO_OK) goto fail;
    m_search = cm.measure_seconds - m_search; /* of t_search: timing new configurations */
    const int64_t cfg_search = cm.measured - cfg_input;
    so.trace = NULL; /* the layout search is not traced */
    t_search = so_now() - t_search;
    c_search = so_cpu_now() - c_search;
    /* standard ONNX for other runtimes (--layout none) under measured costs: what pays on our kernels must
       not cost more in FLOPs and bytes (so_search_standard_check) */
    so_standard_check nck = {0, -1, -1, -1, 0};
    if (cm.copies && o.cost == SO_COST_MEASURED && res.n_path > 0) so_search_standard_check(start, &res, (int)o.threads, &nck);
    counts = so_xcalloc((size_t)n_rules + 1, sizeof *counts);
    count_rules(&res, counts, n_rules);

    /* layout: the blocked-channel rewrite of the searched graph, kept when the cost model prices it lower
       (auto, pass) or always (nchwc) */
    const int standard_asked = o.layout == LAYOUT_NONE; /* --layout none: the file is for other runtimes */
    /* auto under the FLOP/byte model: off (that model prices layout as neutral at best: it cannot see it) */
    if (o.layout == LAYOUT_AUTO && o.cost != SO_COST_MEASURED) o.layout = LAYOUT_NONE;
    const int layout_b = o.layout != LAYOUT_NONE ? so_nchwc_block() : 0;
    layout_env le = {.cm = &cm, .rules = rules, .n_rules = n_rules, .fc = &fc, .layout = o.layout, .b = layout_b, .search = layout_search, .so = so,
                     .time_left = o.time_limit > 0 ? SO_MAX(o.time_limit - res.cpu_seconds, 0.5) : 0};
    double t_layout = so_now(), m_layout = cm.measure_seconds;
    const int64_t cfg_layout0 = cm.measured;
    if (place_layout(&le, res.best, res.cost_after, &pl) != SO_OK) goto fail;
    double t_layout_search = pl.search_seconds, c_layout_search = pl.search_cpu_seconds, m_layout_search = pl.search_measure_seconds;
    /* backtracking against greedy after the layout step: the two searches are not priced jointly with
       the layout, so backtracking's cheaper plain graph can end costlier once placed (inception_v3,
       session 8: 1.0071 of greedy). Its greedy warm start is the graph --search greedy finds (same
       options, same work limit), so that graph is placed too (with backtracking's layout search, which
       starts with greedy's) and the cheaper final graph is kept: backtracking never ends above greedy. */
    if (o.search == SO_SEARCH_BACKTRACK && o.layout != LAYOUT_NONE && res.greedy_best && res.cost_after < res.greedy_cost) {
        if (place_layout(&le, res.greedy_best, res.greedy_cost, &pl_greedy) != SO_OK) goto fail;
        t_layout_search += pl_greedy.search_seconds;
        m_layout_search += pl_greedy.search_measure_seconds;
        c_layout_search += pl_greedy.search_cpu_seconds;
        cost_final_bt = placed_cost(&pl);
        cost_final_greedy = placed_cost(&pl_greedy);
        if (cost_final_greedy < cost_final_bt) {
            placed tmp = pl;
            pl = pl_greedy;
            pl_greedy = tmp;
            so_search_take(&res, NULL, 0);
            count_rules(&res, counts, n_rules);
            kept_greedy = 1;
        }
    }
    t_search += t_layout_search;
    c_search += c_layout_search;
    if (pl.applied) {
        so_graph_free(res.best);
        res.best = pl.g;
        pl.g = NULL;
        res.cost_after = pl.cost_blocked;
        for (int32_t r = 0; r < n_rules; r++) counts[r] += pl.lc[r];
    }
    t_layout = so_now() - t_layout - t_layout_search; /* the layout search counts in search_seconds */
    m_layout = cm.measure_seconds - m_layout - m_layout_search; /* of t_layout: timing (placement, its pricing) */
    const int64_t cfg_layout = cm.measured - cfg_layout0;
    /* safety net (kernels/safety.h): both graphs on several input sets, element by element */
    so_safety_opts sfo = {.threads = (int)o.threads, .seed = (uint64_t)o.seed, .inputs_path = o.inputs, .time_it = 1,
                          .noise_always = o.check_noise};
    so_safety_result sr;
    t_check = so_now();
    if (so_safety_check(m->graph, res.best, &sfo, &sr) != SO_OK) {
        so_error_prefix(o.inputs ? o.inputs : o.model);
        goto fail;
    }
    t_check = so_now() - t_check;
    double err = sr.worst * SO_SAFETY_RTOL, lat_before = sr.lat_before_ms, lat_after = sr.lat_after_ms;
    int checked = sr.ran;
    if (sr.ran && !sr.agree) {
        so_errorf("optimized graph differs from the original (%s); nothing written", sr.why);
        goto fail_rules;
    }
    if (!sr.ran) {
        if (!o.allow_unchecked) {
            so_errorf("%s: the model cannot be executed here (%s), so the optimized graph cannot be checked numerically; "
                      "nothing written (pass --allow-unchecked to write it unchecked)", o.model, sr.why);
            goto fail;
        }
        /* said even under -q (on stderr, not only in the summary): the written model was not checked */
        fprintf(stderr, "superopt: warning: %s: %s; numeric check and latency skipped (--allow-unchecked)\n", o.model, sr.why);
        fprintf(tf, "  warning: %s: %s; numeric check and latency skipped (--allow-unchecked)\n", o.model, sr.why);
    }

    /* --layout none and no rewrite kept (the search found none, or the standard check went back to the
       start graph): the written file is the input file itself, byte for byte. Re-serialising the start graph
       is equivalent in value but not in form (renamed values, Constant nodes as initializers, default
       attributes dropped, another node order, which ONNX Runtime's execution order can follow: ResNet-50's
       downsample convs ran earlier); another runtime given the copy does exactly what it does with the
       original. Not where the input cannot stand for the result: shapes pinned by --dim / --input-shape (the
       file does not carry them), weights in external data files (the copy would need them beside it; the
       written graph holds them inline), an input that is not a regular file. */
    const char *written_note = NULL;
    int write_input = 0;
    if (standard_asked && res.n_path == 0 && !pl.applied) {
        int pinned = 0;
        for (int32_t k = 0; k < m->n_inputs; k++) pinned |= m->inputs[k].pinned;
        if (pinned) written_note = "input shapes pinned by --dim / --input-shape, which the input file does not carry";
        else if (m->n_external) written_note = "weights in external data files, which the written model holds inline";
        else if (!model_regular) written_note = "the input is not a regular file";
        else write_input = 1;
    }

    /* write. Whatever can fail on a path comes before the model, so that a --dot or --report
       failure never ends in exit 1 with the model written: the dot files, then the report into
       its temporary (flushed: a full disk shows here), then the model, then the report renamed
       into place. */
    if (o.dot && write_dots(m->graph, res.best, o.dot, tf) != SO_OK) goto fail;
    so_cost_take_picks(&cm); /* the executor's conv choices of this run, counted in the report (saved below) */
    {
        FILE *f = jf;
        const char *sname[] = {"none", "greedy", "backtrack", "eqsat"};
        fprintf(f, "{\n  \"model\": ");
        so_json_fstr(f, o.model);
        fprintf(f, ",\n  \"output\": ");
        so_json_fstr(f, out_path);
        /* what the output file is: "input" (the input's bytes, --layout none with no rewrite kept) or "graph"
           (the result written by the ONNX exporter); written_note: why an unchanged --layout none result was
           written as a graph */
        fprintf(f, ",\n  \"written\": \"%s\",\n  \"written_note\": ", write_input ? "input" : "graph");
        if (written_note) so_json_fstr(f, written_note);
        else fprintf(f, "null");
        fprintf(f, ",\n  \"rules\": ");
        so_json_fstr(f, rules_path);
        char b0[SO_JSON_NUM_CHARS], b1[SO_JSON_NUM_CHARS], b2[SO_JSON_NUM_CHARS], b3[SO_JSON_NUM_CHARS], b4[SO_JSON_NUM_CHARS]; /* every double through so_json_fmt: never a bare inf or nan */
        fprintf(f, ",\n  \"search\": \"%s\",\n  \"cost_model\": \"%s\",\n  \"alpha\": %s,\n  \"budget\": %lld,\n  \"time_limit\": %s,\n",
                sname[o.search], o.cost == SO_COST_MEASURED ? "measured" : "flops", so_json_fmt(b0, o.alpha, 6), o.budget, so_json_fmt(b1, o.time_limit, 6));
        so_isa isa = SO_ISA_SCALAR;
        (void)so_isa_current(&isa); /* checked at start (main.c) */
        fprintf(f, "  \"isa\": \"%s\",\n  \"cpu\": ", so_isa_name(isa));
        so_json_fstr(f, so_isa_cpu_model());
        char blas[160];
        fprintf(f, ",\n  \"blas\": ");
        so_json_fstr(f, so_blas_describe(isa, blas, sizeof blas));
        fprintf(f, ",\n");
        /* the shapes the written model is specialised for (inputs whose file shape had symbolic
           or unknown dimensions that --dim / --input-shape fixed carry "pinned": true) */
        fprintf(f, "  \"input_shapes\": {");
        for (int32_t k = 0; k < m->n_inputs; k++) {
            fprintf(f, "%s", k ? ", " : "");
            so_json_fstr(f, m->inputs[k].name);
            fprintf(f, ": {\"shape\": [");
            for (int d = 0; d < m->inputs[k].shape.rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)m->inputs[k].shape.dim[d]);
            fprintf(f, "], \"pinned\": %s}", m->inputs[k].pinned ? "true" : "false");
        }
        fprintf(f, "},\n");
        fprintf(f, "  \"cost_before\": %s,\n  \"cost_start\": %s,\n  \"cost_after\": %s,\n", so_json_fmt(b0, cost_orig, 9), so_json_fmt(b1, res.cost_before, 9),
                so_json_fmt(b2, res.cost_after, 9));
        if (checked)
            fprintf(f, "  \"latency_before_ms\": %s,\n  \"latency_after_ms\": %s,\n  \"speedup\": %s,\n", so_json_fmt(b0, lat_before, 6), so_json_fmt(b1, lat_after, 6),
                    so_json_fmt(b2, lat_after > 0 ? lat_before / lat_after : 0, 5));
        else fprintf(f, "  \"latency_before_ms\": null,\n  \"latency_after_ms\": null,\n  \"speedup\": null,\n");
        fprintf(f, "  \"search_seconds\": %s,\n  \"search_cpu_seconds\": %s,\n  \"graphs_explored\": %lld,\n  \"graphs_generated\": %lld,\n  \"matches\": %lld,\n"
                   "  \"stopped_by\": \"%s\",\n  \"nodes_before\": %d,\n  \"nodes_after\": %d,\n  \"folded_at_start\": %d,\n"
                   "  \"numeric_check\": %s,\n  \"max_rel_err\": %s,\n  \"numeric_check_sets\": %d,\n  \"numeric_check_noise\": %s,\n  \"numeric_check_noise_sets\": %d,\n"
                   "  \"numeric_check_identical\": %s,\n",
                so_json_fmt(b0, t_search, 6), so_json_fmt(b3, c_search, 6), (long long)res.graphs_explored, (long long)res.graphs_generated, (long long)res.matches,
                stop_name(res.stopped_by), count_work_nodes(m->graph),
                count_work_nodes(res.best), (int)cst.folded, checked ? "true" : "false", so_json_fmt(b1, err, 3), sr.sets,
                sr.noise_sets ? so_json_fmt(b2, sr.noise, 6) : "null", sr.noise_sets, /* null: no set needed its floor (lazy) */
                sr.identical ? "true" : "false"); /* true: the written graph is the original program, nothing to compare (sets 0) */
        /* proofs: which rules this build proved, how, and whether unproved ones were allowed */
        /* from_cache counts the build's proof store too (from_store of them: found only there) */
        fprintf(f, "  \"proofs\": {\"rules\": %d, \"from_cache\": %d, \"from_store\": %d, \"proved_now\": %d, \"proof_seconds\": %s, \"bind_seconds\": %s, \"unproved_used\": %d, "
                   "\"allow_unverified\": %s, \"cache\": ",
                (int)pst.rules, (int)pst.cached, (int)pst.from_store, (int)pst.proved_now, so_json_fmt(b0, pst.seconds, 4), so_json_fmt(b1, pst.bind_seconds, 4), (int)pst.unproved,
                o.allow_unverified ? "true" : "false");
        if (pst.cache_path[0]) so_json_fstr(f, pst.cache_path);
        else fprintf(f, "null");
        fprintf(f, ", \"store\": ");
        if (pst.store_path[0]) so_json_fstr(f, pst.store_path);
        else fprintf(f, "null");
        fprintf(f, "},\n");
        fprintf(f, "  \"search_detail\": {\"work\": %lld, \"materialized\": %lld, \"full_passes\": %lld, \"carried\": %lld, \"anchors\": %lld, "
                   "\"greedy_explored\": %lld, \"chain_probes\": %lld, \"preview_bounded\": %lld, \"rejected\": %lld, \"duplicates\": %lld, \"costs_measured\": %lld, "
                   "\"costs_under_load\": %lld, \"cost_cache_loaded\": %lld, \"cost_cache_stale\": %lld, \"cost_cache_retimed\": %lld, "
                   "\"measure_seconds\": %s, \"incremental_mismatches\": %lld, \"confirm_timed\": %lld, \"confirm_vetoed\": %d, "
                   "\"layout_paired\": %lld, \"layout_paired_timed\": %lld, \"layout_paired_seconds\": %.6f, \"layout_paired_cut\": %lld, "
                   "\"layout_retime_budget\": %s, \"conv_picks_loaded\": %lld, \"conv_picks_new\": %lld},\n",
                (long long)res.work, (long long)res.materialized, (long long)res.full_passes, (long long)res.carried, (long long)res.anchors,
                (long long)res.greedy_explored, (long long)res.probes, (long long)res.preview_bounded, (long long)res.rejected, (long long)res.duplicates, (long long)cm.measured,
                (long long)cm.noisy, cm.table ? 0LL : (long long)cm.loaded, (long long)cm.stale, (long long)cm.retimed, so_json_fmt(b0, cm.measure_seconds, 6), (long long)res.incremental_mismatches, (long long)res.confirm_timed, res.confirm_vetoed,
                (long long)cm.paired, (long long)cm.paired_timed, cm.paired_seconds, (long long)cm.paired_cut, so_json_fmt(b1, o.layout_retime_budget, 6),
                (long long)cm.picks_loaded, (long long)cm.picks_new);
        /* where the run's time went (wall seconds): loading and binding the rules (proofs), importing and
           canonicalising the model, pricing the input (timing its configurations), the searches (search_seconds:
           the first search and the layout search), the layout step around the layout search, the numeric check
           (both graphs run on several input sets, latency timed); writing comes after the report */
        fprintf(f, "  \"seconds\": {\"rules\": %.3f, \"import\": %.3f, \"input_cost\": %.3f, \"search\": %.3f, \"layout\": %.3f, \"check\": %.3f, "
                   "\"until_report\": %.3f},\n",
                t_rules, t_import, t_input_cost, t_search, t_layout, t_check, so_now() - t_begin);
        /* the measured cost model's timing of new configurations (wall seconds), by phase: the input's pricing, the
           first search, the layout step's placements and pricing, the layout search (layout_configurations counts
           both: those the layout step timed, its search included); search_measure_seconds (the
           first search's and the layout search's) is part of search_seconds. Then where the timer's time went:
           kernel selection (plans, packed weights), buffers, cache eviction and weight flushes, the runs */
        /* one format for all of them (%.6f): a part never prints above its whole */
        fprintf(f, "  \"search_measure_seconds\": %.6f,\n", m_search + m_layout_search);
        fprintf(f, "  \"measure\": {\"configurations\": %lld, \"timed_runs\": %lld, \"seconds\": %.6f, \"cpu_seconds\": %.6f, "
                   "\"input_configurations\": %lld, \"input_seconds\": %.6f, \"search_configurations\": %lld, \"search_seconds\": %.6f, "
                   "\"layout_configurations\": %lld, \"layout_seconds\": %.6f, \"layout_search_seconds\": %.6f, "
                   "\"select_seconds\": %.6f, \"setup_seconds\": %.6f, \"flush_seconds\": %.6f, \"kernel_seconds\": %.6f},\n",
                (long long)cm.measured, (long long)cm.timed_runs, cm.measure_seconds, cm.measure_cpu_seconds, (long long)cfg_input, meas_input,
                (long long)cfg_search, m_search, (long long)cfg_layout, m_layout, m_layout_search, cm.select_seconds, cm.setup_seconds,
                cm.flush_seconds, cm.kernel_seconds);
        if (nck.ran) {
            static const char *const kept[] = {"search", "greedy", "start"};
            fprintf(f, "  \"standard_check\": {\"flops_before\": %s, \"flops_searched\": %s, \"flops_greedy\": %s, \"kept\": \"%s\"},\n",
                    so_json_fmt(b0, nck.before, 9), so_json_fmt(b1, nck.searched, 9), nck.greedy >= 0 ? so_json_fmt(b2, nck.greedy, 9) : "null",
                    kept[nck.kept]);
        }
        if (o.search == SO_SEARCH_EQSAT) { /* equality saturation: the e-graph and the extraction */
            const struct so_eqsat_stats *es = &res.eqsat;
            static const char *const stop[] = {"saturated", "node-limit", "iteration-limit", "time-limit", "work-limit"};
            static const char *const meth[] = {"greedy", "ilp-optimal", "ilp-feasible", "moves", "start", "?", "?", "?"};
            fprintf(f, "  \"eqsat\": {\"enodes\": %lld, \"eclasses\": %lld, \"iterations\": %lld, \"applied\": %lld, "
                       "\"dropped_cyclic\": %lld, \"congruences\": %lld, \"banned\": %lld, \"stopped_by\": \"%s\", \"extraction\": \"%s\", "
                       "\"extract_cost\": %s, \"greedy_extract_cost\": %s, \"ilp_vars\": %d, \"ilp_rows\": %d, \"ilp_stop\": \"%s\", "
                       "\"ilp_bb_nodes\": %d, \"ilp_iterations\": %lld, \"why_greedy\": ",
                    (long long)es->enodes, (long long)es->eclasses, (long long)es->iterations, (long long)es->applied,
                    (long long)es->dropped_cyclic, (long long)es->congruences, (long long)es->banned, stop[es->stop >= 0 && es->stop <= 4 ? es->stop : 0], meth[es->extract_method & 7],
                    so_json_fmt(b0, es->extract_cost, 9), so_json_fmt(b1, es->greedy_cost, 9), (int)es->ilp_vars, (int)es->ilp_rows,
                    so_ilp_stop_name(es->ilp_stop), (int)es->ilp_bb_nodes, (long long)es->ilp_iters);
            so_json_fstr(f, es->why_greedy);
            fprintf(f, ", \"saturate_seconds\": %s, \"cost_seconds\": %s, \"extract_seconds\": %s, \"unpriced\": %lld, \"polished\": %lld, \"merged\": %lld, \"start_kept\": %s},\n",
                    so_json_fmt(b0, es->saturate_seconds, 4), so_json_fmt(b1, es->cost_seconds, 4), so_json_fmt(b2, es->extract_seconds, 4),
                    (long long)es->unpriced, (long long)es->polished, (long long)es->merged, es->start_kept ? "true" : "false");
        }
        /* the cost table (measured): where, entries read, configurations measured by this run */
        fprintf(f, "  \"cost_table\": ");
        if (cm.table) so_json_fstr(f, cm.table);
        else fprintf(f, "null");
        fprintf(f, ",\n  \"cost_table_loaded\": %lld,\n  \"cost_table_new\": %lld,\n", (long long)cm.table_loaded, (long long)cm.table_new);
        fprintf(f, "  \"layout\": {\"mode\": \"%s\", \"block\": %d, \"applied\": %s, \"cost_plain\": %s, \"cost_blocked\": %s, "
                   "\"method\": \"%s\", \"cost_rules\": %s, \"cost_pass\": %s, "
                   "\"convs\": %d, \"convs_kept_nchw\": %d, \"bn_folded\": %d, \"pools\": %d, \"elementwise\": %d, \"concats\": %d, \"reorders\": %d, \"seconds\": %.3f, "
                   "\"search_seconds\": %.3f, \"search_graphs\": %lld, \"search_steps\": %d, \"search_work\": %lld, \"search_stopped_by\": %s%s%s, "
                   "\"choice_retimed\": %s, \"apply_retimed\": %s, \"backtrack_vs_greedy\": ",
                o.layout == LAYOUT_NONE ? "none" : o.layout == LAYOUT_AUTO ? "auto" : o.layout == LAYOUT_PASS ? "pass" : "nchwc", layout_b, pl.applied ? "true" : "false",
                so_json_fmt(b1, pl.cost_plain, 9), so_json_fmt(b2, pl.cost_blocked, 9), pl.method,
                pl.cost_rules < 0 ? "null" : so_json_fmt(b3, pl.cost_rules, 9), pl.cost_pass < 0 ? "null" : so_json_fmt(b4, pl.cost_pass, 9), (int)pl.lst.convs, (int)pl.kept,
                (int)pl.lst.bn_folded, (int)pl.lst.pools, (int)pl.lst.elementwise, (int)pl.lst.concats, (int)pl.lst.reorders, t_layout, t_layout_search,
                (long long)pl.search_graphs, (int)pl.search_steps, (long long)pl.search_work, pl.search_stopped_by < 0 ? "" : "\"",
                pl.search_stopped_by < 0 ? "null" : stop_name(pl.search_stopped_by), pl.search_stopped_by < 0 ? "" : "\"",
                pl.choice_retimed ? "true" : "false", pl.apply_retimed ? "true" : "false");
        /* backtracking's final graph against its greedy warm start's, both after the layout step */
        if (cost_final_bt < 0) fprintf(f, "null},\n");
        else
            fprintf(f, "{\"cost_backtrack\": %s, \"cost_greedy\": %s, \"kept\": \"%s\"}},\n", so_json_fmt(b1, cost_final_bt, 9),
                    so_json_fmt(b2, cost_final_greedy, 9), kept_greedy ? "greedy" : "backtrack");
        fprintf(f, "  \"rules_applied\": {");
        int first = 1;
        for (int32_t r = 0; r < n_rules; r++)
            if (counts[r]) {
                fprintf(f, "%s\"%s\": %d", first ? "" : ", ", labels[r], (int)counts[r]);
                first = 0;
            }
        fprintf(f, "},\n  \"rules_path\": [");
        for (int32_t k = 0; k < res.n_path; k++) fprintf(f, "%s\"%s\"", k ? ", " : "", labels[res.path[k]]);
        fprintf(f, "]\n}\n");
    }
    if (fflush(jf) != 0 || ferror(jf)) {
        so_errorc(SO_ERR_LIMIT, "%s: out of memory for the report", o.model);
        goto fail;
    }
    if (o.report) {
        if (so_atomic_open(&rep, o.report, "w") != SO_OK) goto fail;
        rep_open = 1;
        if (fwrite(*json, 1, jlen, rep.f) != jlen || fflush(rep.f) != 0 || ferror(rep.f)) {
            rep_open = 0;
            so_atomic_commit(&rep, o.report, 0); /* the message names the report and the errno */
            goto fail;
        }
    }
    if ((write_input ? so_copy_file_unchanged(o.model, &st_model, out_path) : so_onnx_save(res.best, out_path)) != SO_OK) goto fail;
    if (rep_open) {
        rep_open = 0;
        if (so_atomic_commit(&rep, o.report, 1) != SO_OK) goto fail;
    }
    if (cm_init && so_cost_save(&cm) != SO_OK) fprintf(tf, "  warning: %s\n", so_error());

    {
        fprintf(tf, "superopt: %s -> %s\n", o.model, out_path);
        for (int32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k].pinned) {
                char sb[160];
                fprintf(tf, "  specialised for input '%s' %s (symbolic dimensions pinned by --dim / --input-shape)\n",
                        m->inputs[k].name, so_shape_str(&m->inputs[k].shape, sb, sizeof sb));
            }
        if (m->n_widened_half)
            fprintf(tf, "  note: %d float16 / bfloat16 initializers (%lld values) were widened to float32 at import and computed in float32; "
                        "those left as they were are written back in their type, those folded into other weights as float32\n",
                    (int)m->n_widened_half, (long long)m->widened_half_values);
        fprintf(tf, "  cost (%s): %.4g -> %.4g (%.2fx)\n", o.cost == SO_COST_MEASURED ? "measured ms" : "flops model",
                cost_orig, res.cost_after, res.cost_after > 0 ? cost_orig / res.cost_after : 0);
        if (checked && sr.identical)
            fprintf(tf, "  latency: %.3f ms (unchanged); the optimized graph is the original program (same nodes, attributes and weights): "
                        "nothing to compare numerically\n", lat_before);
        else if (checked)
            fprintf(tf, "  latency: %.3f ms -> %.3f ms (%.2fx), outputs agree on %d input sets (worst element at %.2g of its tolerance)\n",
                    lat_before, lat_after, lat_after > 0 ? lat_before / lat_after : 0, sr.sets, sr.worst);
        fprintf(tf, "  rules: %s, %d rules (%d from the proof cache, %d proved now in %.2f s%s)\n", rules_path, (int)pst.rules,
                (int)pst.cached, (int)pst.proved_now, pst.seconds, pst.unproved ? ", SOME UNPROVED: --allow-unverified" : "");
        fprintf(tf, "  search: %.2f s (%.2f s CPU), %lld graphs explored, %lld generated, %d nodes -> %d\n", t_search, c_search,
                (long long)res.graphs_explored, (long long)res.graphs_generated, count_work_nodes(m->graph), count_work_nodes(res.best));
        if (cm.noisy)
            fprintf(tf, "  costs: %lld of %lld timings taken under load (other threads waiting for a CPU or preempting this one): "
                        "best round used, kept marked loaded in the cost cache (a later run times each once more)\n",
                    (long long)cm.noisy, (long long)cm.measured);
        if (o.layout != LAYOUT_NONE)
            fprintf(tf, "  layout nchwc (b=%d, placed by %s): cost %.4g -> %.4g, %s (%d convs blocked, %d kept in NCHW, %d batchnorms folded, %d pools, %d element-wise, %d concats, %d reorders)\n",
                    layout_b, strcmp(pl.method, "rules") == 0 ? "proven layout rules" : strcmp(pl.method, "pass") == 0 ? "the layout pass (axiom instances)" : "-",
                    pl.cost_plain, pl.cost_blocked, pl.applied ? "applied" : "not applied", (int)pl.lst.convs, (int)pl.kept, (int)pl.lst.bn_folded,
                    (int)pl.lst.pools, (int)pl.lst.elementwise, (int)pl.lst.concats, (int)pl.lst.reorders);
        if (cm.paired_cut)
            fprintf(tf, "  layout: the paired re-timing's budget (layout_retime_budget %.3g s) was spent after %.2f s: %lld decision%s left to the "
                        "cached prices, not re-timed\n",
                    o.layout_retime_budget, cm.paired_seconds, (long long)cm.paired_cut, cm.paired_cut == 1 ? "" : "s");
        if (nck.ran && nck.kept)
            fprintf(tf, "  standard ONNX: the searched graph costs more than the original under the FLOP/byte model (%.6g > %.6g), "
                        "which other runtimes pay: %s kept\n", nck.searched, nck.before, nck.kept == 1 ? "greedy's graph" : "the original");
        if (write_input)
            fprintf(tf, "  standard ONNX: no rewrite kept, so the input file is written unchanged (other runtimes run exactly the original)\n");
        else if (written_note) fprintf(tf, "  standard ONNX: no rewrite kept; the graph is written re-serialised (%s)\n", written_note);
        if (cost_final_bt >= 0)
            fprintf(tf, "  backtracking's graph %.6g after the layout step, its greedy warm start's %.6g: %s kept\n", cost_final_bt, cost_final_greedy,
                    kept_greedy ? "greedy's" : "backtracking's");
        fprintf(tf, "  rules applied:");
        int any = 0;
        for (int32_t r = 0; r < n_rules; r++)
            if (counts[r]) {
                fprintf(tf, " %s x%d", labels[r], (int)counts[r]);
                any = 1;
            }
        fprintf(tf, "%s\n", any ? "" : " none");
    }
    rc = SO_OK;
    goto done;

fail_rules: {
        /* name the rules on the path from the input to the rejected graph, with counts */
        char msg[1024], list[600] = "";
        size_t k = 0;
        int32_t *cnt = so_xcalloc((size_t)n_rules + 1, sizeof *cnt);
        for (int32_t i = 0; i < res.n_path; i++) cnt[res.path[i]]++;
        for (int32_t i = 0, first = 1; i < res.n_path && k + 40 < sizeof list; i++) {
            int32_t r = res.path[i];
            if (!cnt[r]) continue;
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s (x%d)", first ? "" : ", ", labels[r], (int)cnt[r]);
            cnt[r] = 0;
            first = 0;
        }
        free(cnt);
        snprintf(msg, sizeof msg, "%s", so_error());
        so_errorf("%s: %s; rules on the path: %s", o.model, msg, res.n_path ? list : "none (canonicalisation only)");
    }
fail:
    if (rep_open) { /* the model was not written: neither is the report */
        char keep[1024];
        snprintf(keep, sizeof keep, "%s", so_error());
        so_atomic_commit(&rep, o.report, 0);
        so_errorf("%s", keep);
    }
done:
    free(counts);
    free(out_path);
    so_search_result_free(&res);
    placed_free(&pl);
    placed_free(&pl_greedy);
    so_graph_free(start);
    if (cm_init) so_cost_free(&cm);
    if (fc_init) so_fold_free(&fc);
    so_model_free(m);
    if (trace) fclose(trace);
    free(label_ptrs);
    free(script);
    free(labels);
    so_ruleset_free(&rs); /* also `rules` */
    /* the memory streams' buffers stay: handed over on success, freed on failure */
    fclose(jf);
    fclose(tf);
    if (rc != SO_OK) {
        free(*json);
        free(*text);
        *json = *text = NULL;
    }
    return rc;
}

struct superopt_report {
    char *json, *text;
};

superopt_status superopt_optimize(const char *src, const char *dst, const superopt_config *cfg, superopt_report **report)
{
    if (report) *report = NULL;
    if (!src) {
        so_errorf("superopt_optimize: src is NULL");
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    struct superopt_config defaults;
    if (!cfg) {
        so_api_config_defaults(&defaults);
        cfg = &defaults;
    }
    char *json = NULL, *text = NULL;
    so_api_lock();
    so_status st = so_api_pins_apply(cfg);
    if (st == SO_OK) st = optimize(src, dst, cfg, &json, &text);
    so_onnx_pins_clear();
    so_api_unlock();
    if (st != SO_OK) return so_api_fail_thread(so_api_status(so_error_code()));
    superopt_report *r = calloc(1, sizeof *r);
    if (!r) {
        free(json);
        free(text);
        so_errorf("%s: out of memory for the report", src);
        return so_api_fail_thread(SUPEROPT_LIMIT);
    }
    r->json = json;
    r->text = text;
    if (report) *report = r;
    else superopt_report_free(r);
    return SUPEROPT_OK;
}

const char *superopt_report_json(const superopt_report *r) { return r ? r->json : NULL; }
const char *superopt_report_text(const superopt_report *r) { return r ? r->text : NULL; }

void superopt_report_free(superopt_report *r)
{
    if (!r) return;
    free(r->json);
    free(r->text);
    free(r);
}
