/* bench_opt.c - bench harness optimize runs: one superopt optimize invocation per search setting, its report parsed. */
#include "bench_priv.h"
#include "../src/graph.h"
#include "../src/onnx_io.h"
#include "../kernels/exec.h"

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

/* ======================================================================================
   optimize runs
   ====================================================================================== */

void bn_opt_free(opt_res *r)
{
    if (!r) return;
    free(r->rules_json);
    free(r);
}

static int spec_eq(const spec *a, const spec *c)
{
    return a->search == c->search && a->flops == c->flops && a->alpha == c->alpha && a->budget == c->budget && a->time_limit == c->time_limit &&
           !strcmp(a->rules_id, c->rules_id);
}

/* Compact text of a JSON object {"k": n, ...} and its totals. */
static void rules_applied_text(const so_json *o, opt_res *r)
{
    so_sbuf s = {0};
    so_sbuf_printf(&s, "{");
    r->rules_total = r->rules_distinct = 0;
    for (int i = 0; i < o->n; i++) {
        double c = o->items[i].kind == SO_JSON_NUM ? o->items[i].num : 0;
        so_sbuf_printf(&s, "%s", i ? ", " : "");
        so_json_str(&s, o->keys[i]);
        so_sbuf_printf(&s, ": %.0f", c);
        r->rules_total += (int)c;
        r->rules_distinct += c > 0;
    }
    so_sbuf_printf(&s, "}");
    r->rules_json = s.s;
    /* top three by count (ties: file order) */
    int used[3] = {-1, -1, -1}, n_top = 0;
    size_t k = 0;
    r->rules_top[0] = 0;
    for (int t = 0; t < 3; t++) {
        int best = -1;
        for (int i = 0; i < o->n; i++) {
            if (o->items[i].kind != SO_JSON_NUM || o->items[i].num <= 0 || i == used[0] || i == used[1]) continue;
            if (best < 0 || o->items[i].num > o->items[best].num) best = i;
        }
        if (best < 0) break;
        used[t] = best;
        n_top++;
        int w = snprintf(r->rules_top + k, sizeof r->rules_top - k, "%s%.24s×%.0f", t ? ", " : "", o->keys[best], o->items[best].num);
        if (w < 0 || (size_t)w >= sizeof r->rules_top - k) break;
        k += (size_t)w;
    }
    if (r->rules_distinct > n_top && k + 16 < sizeof r->rules_top)
        snprintf(r->rules_top + k, sizeof r->rules_top - k, ", +%d more", r->rules_distinct - n_top);
}

/* Reads the optimize report into r (fails naming a missing key). */
static so_status parse_report(const char *path, opt_res *r)
{
    char *text = NULL;
    so_json v = {0};
    so_status st = SO_ERR;
    if (so_read_file(path, &text, NULL) != SO_OK) goto done;
    if (so_json_parse(text, path, &v) != SO_OK) goto done;
    if (v.kind != SO_JSON_OBJ) {
        so_errorf("%s: not a JSON object", path);
        goto done;
    }
    double ge;
    if (so_json_get_num(&v, "cost_before", path, 0, &r->cost_before) || so_json_get_num(&v, "cost_after", path, 0, &r->cost_after) ||
        so_json_get_num(&v, "latency_before_ms", path, 1, &r->lat_before) || so_json_get_num(&v, "latency_after_ms", path, 1, &r->lat_after) ||
        so_json_get_num(&v, "search_seconds", path, 0, &r->search_s) || so_json_get_num(&v, "graphs_explored", path, 0, &ge))
        goto done;
    r->explored = (long long)ge;
    const so_json *ra = so_json_get(&v, "rules_applied");
    if (!ra) {
        so_errorf("%s: key 'rules_applied' is missing", path);
        goto done;
    }
    if (ra->kind != SO_JSON_OBJ) {
        so_errorf("%s: key 'rules_applied' is not an object", path);
        goto done;
    }
    rules_applied_text(ra, r);
    /* optional keys */
    const so_json *x;
    r->nodes_before = (x = so_json_get(&v, "nodes_before")) && x->kind == SO_JSON_NUM ? (int)x->num : -1;
    r->nodes = (x = so_json_get(&v, "nodes_after")) && x->kind == SO_JSON_NUM ? (int)x->num : -1;
    r->alpha = (x = so_json_get(&v, "alpha")) && x->kind == SO_JSON_NUM ? x->num : NAN;
    r->budget = (x = so_json_get(&v, "budget")) && x->kind == SO_JSON_NUM ? (long long)x->num : -1;
    r->time_limit = (x = so_json_get(&v, "time_limit")) && x->kind == SO_JSON_NUM ? x->num : NAN;
    r->search_cpu_s = (x = so_json_get(&v, "search_cpu_seconds")) && x->kind == SO_JSON_NUM ? x->num : NAN;
    if ((x = so_json_get(&v, "stopped_by")) && x->kind == SO_JSON_STR) snprintf(r->stopped_by, sizeof r->stopped_by, "%s", x->str);
    r->enodes = -1;
    if ((x = so_json_get(&v, "eqsat")) && x->kind == SO_JSON_OBJ) {
        const so_json *y;
        if ((y = so_json_get(x, "enodes")) && y->kind == SO_JSON_NUM) r->enodes = (long long)y->num;
        if ((y = so_json_get(x, "extraction")) && y->kind == SO_JSON_STR) snprintf(r->extraction, sizeof r->extraction, "%s", y->str);
    }
    st = SO_OK;
done:
    so_json_free(&v);
    free(text);
    return st;
}

/* Nodes (operators, sources excluded) and GFLOP of a model file, loaded in this process. */
static so_status model_stats(const char *path, int *nodes, double *gflop)
{
    so_model *m = NULL;
    if (so_onnx_load(path, &m) != SO_OK) return SO_ERR;
    const so_graph *g = m->graph;
    int n = 0;
    double f = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (so_ops[g->nodes[i].op].flags & SO_F_SOURCE) continue;
        n++;
        f += (double)so_node_flops(g, i);
    }
    so_model_free(m);
    *nodes = n;
    *gflop = f / 1e9;
    return SO_OK;
}

static const char *fmt_num(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%g", v);
    return buf;
}

/* Runs (or reuses) one optimize invocation of model m. Never NULL; r->ok says whether it worked. */
opt_res *bn_optimize(bench *b, model_res *m, const spec *sp)
{
    for (int i = 0; i < m->n_memo; i++)
        if (spec_eq(&m->memo[i]->sp, sp)) return m->memo[i];
    if (bn_interrupted) {
        opt_res *x = so_xcalloc(1, sizeof *x);
        x->sp = *sp;
        snprintf(x->err, sizeof x->err, "interrupted");
        assert(m->n_memo < MAX_MEMO);
        m->memo[m->n_memo++] = x;
        return x;
    }
    opt_res *r = so_xcalloc(1, sizeof *r);
    r->sp = *sp;
    r->cost_before = r->cost_after = r->lat_before = r->lat_after = r->search_s = r->search_cpu_s = r->gflop = NAN;
    r->nodes = r->nodes_before = r->onnx_nodes = -1;
    assert(m->n_memo < MAX_MEMO); /* 4 strategies + at most MAX_SIZES + MAX_ALPHA + MAX_SWEEP ablation runs */
    m->memo[m->n_memo++] = r;
    int idx = b->n_opt_runs++;
    char what[200];
    snprintf(what, sizeof what, "%s: optimize --search %s (%s)", m->name, strat_name[sp->search], sp->tag);
    if (bn_sfmt(r->out, sizeof r->out, "%s/%s.%d.%s.onnx", b->work, m->name, idx, sp->tag) != SO_OK ||
        bn_sfmt(r->report, sizeof r->report, "%s/%s.%d.%s.json", b->work, m->name, idx, sp->tag) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        bn_record_failure(b, r->err);
        return r;
    }
    char a_alpha[32], a_budget[32], a_tl[32];
    fmt_num(a_alpha, sizeof a_alpha, sp->alpha);
    snprintf(a_budget, sizeof a_budget, "%ld", sp->budget);
    fmt_num(a_tl, sizeof a_tl, sp->time_limit);
    char *argv[32 + BN_PIN_ARGV];
    int k = 0;
    argv[k++] = b->self;
    argv[k++] = m->path;
    argv[k++] = "--search";
    argv[k++] = (char *)strat_name[sp->search];
    argv[k++] = "--cost";
    argv[k++] = sp->flops ? "flops" : (char *)b->cost;
    argv[k++] = "--alpha";
    argv[k++] = a_alpha;
    argv[k++] = "--budget";
    argv[k++] = a_budget;
    argv[k++] = "--time-limit";
    argv[k++] = a_tl;
    argv[k++] = "--cache-dir";
    argv[k++] = b->cache;
    if (!sp->flops && !strcmp(b->cost, "measured")) {
        argv[k++] = "--cost-table";
        argv[k++] = b->table;
    }
    argv[k++] = "--threads";
    argv[k++] = "1";
    argv[k++] = "-o";
    argv[k++] = r->out;
    argv[k++] = "--report";
    argv[k++] = r->report;
    argv[k++] = "-q";
    const char *rules = sp->rules ? sp->rules : b->rules_file;
    if (rules[0]) {
        argv[k++] = "--rules";
        argv[k++] = (char *)rules;
        snprintf(r->rules_file, sizeof r->rules_file, "%s", rules);
    }
    if (b->allow_unverified) argv[k++] = "--allow-unverified";
    k = bn_add_pins(b, argv, k);
    argv[k] = NULL;

    proc p;
    if (bn_run_proc(argv, b->proc_timeout, &p) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        bn_record_failure(b, r->err);
        return r;
    }
    r->wall_s = p.seconds;
    if (p.code != 0 || p.timed_out) {
        bn_proc_failure(&p, what, b->proc_timeout, r->err, sizeof r->err);
        bn_proc_free(&p);
        bn_record_failure(b, r->err);
        return r;
    }
    bn_proc_free(&p);
    if (parse_report(r->report, r) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        bn_record_failure(b, r->err);
        return r;
    }
    if (model_stats(r->out, &r->onnx_nodes, &r->gflop) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: the optimized model does not load: %s", what, so_error());
        bn_record_failure(b, r->err);
        return r;
    }
    if (r->nodes < 0) r->nodes = r->onnx_nodes;
    r->ok = 1;
    bn_note(b, "%s: %s%s%s: cost %.4g -> %.4g, %d nodes, search %.2f s (%lld graphs%s%s), %d rewrites, wall %.1f s", m->name,
         strat_name[sp->search], sp->tag[0] && strcmp(sp->tag, strat_name[sp->search]) ? " " : "",
         sp->tag[0] && strcmp(sp->tag, strat_name[sp->search]) ? sp->tag : "", r->cost_before, r->cost_after, r->nodes,
         r->search_s, r->explored, r->stopped_by[0] ? ", stopped by " : "", r->stopped_by, r->rules_total, r->wall_s);
    return r;
}
