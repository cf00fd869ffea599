/* bench_report.c - bench harness reports: Markdown table, JSON and SVG from the results. */
#include "bench_priv.h"

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
   reports: Markdown, JSON, SVG
   ====================================================================================== */

static const char *fms(char *buf, size_t n, double v)
{
    if (!isfinite(v)) snprintf(buf, n, "–");
    else if (fabs(v) >= 100) snprintf(buf, n, "%.1f", v);
    else if (fabs(v) >= 1) snprintf(buf, n, "%.3f", v);
    else if (fabs(v) >= 0.01) snprintf(buf, n, "%.4f", v);
    else snprintf(buf, n, "%.3g", v);
    return buf;
}

static double ratio(double a, double c)
{
    return isfinite(a) && isfinite(c) && c > 0 ? a / c : NAN;
}

/* a / c per round (the two series ran in the same round), median over the rounds; the ratio of
   the medians if the series do not have the same rounds. */
static double paired_ratio(const meas *a, const meas *c)
{
    if (!a->used || !c->used || a->err[0] || c->err[0]) return NAN;
    if (a == c || (a->n == c->n && a->n > 0 && !memcmp(a->round_ms, c->round_ms, (size_t)a->n * sizeof *a->round_ms))) return 1.0;
    if (a->n != c->n || a->n == 0) return ratio(a->ms, c->ms);
    double q[MAX_ROUNDS];
    for (int k = 0; k < a->n; k++) q[k] = ratio(a->round_ms[k], c->round_ms[k]);
    return (a->n > 0 ? so_median(q, (size_t)(a->n)) : NAN);
}

/* speedup of strategy s over none on our backend at thread index t */
static double speedup(const model_res *m, int s, int t)
{
    return paired_ratio(&m->ours[S_NONE][t], &m->ours[s][t]);
}

/* ONNX Runtime: our strategy-s model's time over the original's (< 1: ours is faster) */
static double ort_ratio(const model_res *m, int s)
{
    return paired_ratio(&m->ort[s], &m->ort_orig);
}

static const char *fx(char *buf, size_t n, double v)
{
    if (!isfinite(v)) snprintf(buf, n, "–");
    else snprintf(buf, n, "%.2f×", v);
    return buf;
}

/* Smallest and largest per-round ratio a/c (NaN if the series are not paired round by round). */
static void paired_range(const meas *a, const meas *c, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!a->used || !c->used || a->err[0] || c->err[0] || a->n != c->n || a->n == 0) return;
    if (a == c || !memcmp(a->round_ms, c->round_ms, (size_t)a->n * sizeof *a->round_ms)) {
        *lo = *hi = 1.0;
        return;
    }
    for (int k = 0; k < a->n; k++) {
        double q = ratio(a->round_ms[k], c->round_ms[k]);
        if (k == 0 || q < *lo) *lo = q;
        if (k == 0 || q > *hi) *hi = q;
    }
}

/* ORT verdict of ours against the original, a sign test over the rounds: faster (slower) only if
   every round says so; otherwise the rounds disagree and the difference is within the noise. */
enum { V_NONE, V_FASTER, V_NOISE, V_SLOWER };
static int ort_verdict(const model_res *m, int s)
{
    double lo, hi;
    paired_range(&m->ort[s], &m->ort_orig, &lo, &hi);
    if (!isfinite(lo)) return V_NONE;
    return hi < 1 ? V_FASTER : lo > 1 ? V_SLOWER : V_NOISE;
}
static const char *const verdict_name[] = {"not measured", "faster in every round", "no clear difference (rounds disagree)",
                                           "SLOWER in every round"};

/* backtracking's cost strictly below greedy's (both under the same cost table) */
static int cheaper(const opt_res *g, const opt_res *t)
{
    return g && t && g->ok && t->ok && t->cost_after < g->cost_after;
}

static int bt_cheaper(const model_res *m)
{
    return cheaper(m->strat[S_GREEDY], m->strat[S_BACKTRACK]);
}

static int bt_cheaper_flops(const model_res *m)
{
    return cheaper(m->fstrat[S_GREEDY], m->fstrat[S_BACKTRACK]);
}

int bn_is_ablation_done(const bench *b)
{
    for (int i = 0; i < b->n_models; i++)
        if (b->models[i].ablate) return 1;
    return 0;
}

/* A Markdown table's header row and alignment row, built together so that they always agree;
   n counts the columns (failed rows are padded to it). */
typedef struct mdhead {
    so_sbuf names, align;
    int n;
} mdhead;

/* Appends columns: titles (printf format) separated by '|', a leading '>' right-aligns
   a column (numbers). */
static void md_cols(mdhead *h, const char *titles, ...) __attribute__((format(printf, 2, 3)));
static void md_cols(mdhead *h, const char *titles, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, titles);
    vsnprintf(buf, sizeof buf, titles, ap);
    va_end(ap);
    for (char *c = buf, *end; c; c = end ? end + 1 : NULL) {
        end = strchr(c, '|');
        if (end) *end = 0;
        int right = *c == '>';
        so_sbuf_printf(&h->names, "%s %s |", h->n ? "" : "|", c + right);
        so_sbuf_printf(&h->align, "%s%s|", h->n ? "" : "|", right ? "---:" : "---");
        h->n++;
    }
}

/* Writes the two header rows (each ending in a newline) and frees them; n stays. */
static void md_head_end(so_sbuf *o, mdhead *h)
{
    so_sbuf_printf(o, "%s\n%s\n", h->names.s, h->align.s);
    free(h->names.s);
    free(h->align.s);
    h->names = h->align = (so_sbuf){0};
}

/* The rest of a row whose first `done` cells are written: a failure message, empty cells. */
static void md_failed(so_sbuf *o, const mdhead *h, int done, const char *err)
{
    so_sbuf_printf(o, " failed: %s |", err);
    for (int k = done + 1; k < h->n; k++) so_sbuf_printf(o, " |");
    so_sbuf_printf(o, "\n");
}

/* "Equality saturation against backtracking": eqsat's final cost over backtracking's per model, under
   the bench's cost model (one cost table) and, with the flops check, the FLOP/byte model. */
static void eqsat_section(const bench *b, so_sbuf *o)
{
    char x1[32], x2[32], x3[32];
    so_sbuf_printf(o, "\n## Equality saturation against backtracking\n\n");
    so_sbuf_printf(o, "`eqsat` (search/eqsat.c: e-graph over the same proven rules, cycle filtering, ILP/greedy extraction "
                      "plus whole-rewrite moves) against `backtrack`, final cost under the same cost model; e-graph size "
                      "at the end of saturation. Search times on a shared machine are indicative.\n\n");
    mdhead h = {0};
    md_cols(&h, "model|>backtrack (%s)|>eqsat|>eqsat / backtrack|>search bt / eqsat (s)|>search CPU bt / eqsat (s)|>e-nodes|extraction", b->cost);
    if (b->flops_check) md_cols(&h, ">backtrack (flops)|>eqsat|>eqsat / backtrack|>e-nodes");
    md_head_end(o, &h);
    int n = 0, le = 0, lt = 0, nf = 0, lef = 0, ltf = 0;
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        const opt_res *t = m->strat[S_BACKTRACK], *e = m->strat[S_EQSAT];
        int ok = t->ok && e->ok;
        if (m->literature && ok) {
            n++;
            le += e->cost_after <= t->cost_after;
            lt += e->cost_after < t->cost_after;
        }
        so_sbuf_printf(o, "| %s%s | %s | %s | %s | ", m->name, m->literature ? "" : " (not counted)", t->ok ? fms(x1, sizeof x1, t->cost_after) : "failed",
                       e->ok ? fms(x2, sizeof x2, e->cost_after) : "failed", ok ? (snprintf(x3, sizeof x3, "%.4f", ratio(e->cost_after, t->cost_after)), x3) : "–");
        so_sbuf_printf(o, "%.1f / %.1f | %.1f / %.1f | %lld | %s |", t->ok ? t->search_s : NAN, e->ok ? e->search_s : NAN, t->ok ? t->search_cpu_s : NAN,
                       e->ok ? e->search_cpu_s : NAN, e->ok ? e->enodes : -1LL, e->ok ? e->extraction : "–");
        if (b->flops_check) {
            const opt_res *ft = m->fstrat[S_BACKTRACK], *fe = m->fstrat[S_EQSAT];
            int okf = ft && fe && ft->ok && fe->ok;
            if (m->literature && okf) {
                nf++;
                lef += fe->cost_after <= ft->cost_after;
                ltf += fe->cost_after < ft->cost_after;
            }
            so_sbuf_printf(o, " %s | %s | %s | %lld |", okf ? fms(x1, sizeof x1, ft->cost_after) : "–", okf ? fms(x2, sizeof x2, fe->cost_after) : "–",
                           okf ? (snprintf(x3, sizeof x3, "%.4f", ratio(fe->cost_after, ft->cost_after)), x3) : "–", okf ? fe->enodes : -1LL);
        }
        so_sbuf_printf(o, "\n");
    }
    so_sbuf_printf(o, "\neqsat's cost is at most backtracking's on %d of %d literature models under `%s` (strictly lower on %d)", le, n, b->cost, lt);
    if (b->flops_check) so_sbuf_printf(o, "; on %d of %d under `flops` (strictly lower on %d)", lef, nf, ltf);
    so_sbuf_printf(o, ".\n");
}


void bn_md_report(const bench *b, so_sbuf *o)
{
    char x1[32], x2[32], x3[32], x4[32], x6[32];
    so_sbuf_printf(o, "# superopt bench\n\n");
    so_sbuf_printf(o, "- Machine: %s, %d logical CPUs, %.1f GB RAM, %s; load average (1/5/15 min) %s at the start, %s at the end\n",
              b->cpu, b->ncpu, b->mem_gb, b->os, b->load_start, b->load_end);
    so_sbuf_printf(o, "- Libraries: %s\n", b->blas);
    so_sbuf_printf(o, "- superopt commit %s; ONNX Runtime %s (onnxruntime-node, Node.js %s)\n", b->git,
              b->no_ort ? "not run" : b->ort_version, b->no_ort ? "-" : b->node_version);
    so_sbuf_printf(o, "- Date: %s; total bench time %.1f min (%d optimize runs, %d timed runs)\n", b->date, b->t_total / 60,
              b->n_opt_runs, b->n_meas_runs);
    so_sbuf_printf(o, "- Command: `%s`\n", b->cmdline);
    so_sbuf_printf(o, "- Search settings: cost model `%s` (one cost table shared by every measured run of this bench, `%s`, "
                 "%ld entries: equal operator configurations cost the same in every strategy, and the table given again with "
                 "`--cost-table` reproduces the costs), alpha %g, budget %ld, time limit %g s per search, rules %s\n",
              b->cost, b->table, bn_table_entries(b->table), b->alpha, b->budget, b->time_limit, b->rules_file);
    char rounds_txt[64];
    if (b->rounds > 0) snprintf(rounds_txt, sizeof rounds_txt, "%d rounds", b->rounds);
    else snprintf(rounds_txt, sizeof rounds_txt, "5 rounds (3 for models over 1 s per inference)");
    so_sbuf_printf(o, "- Latency: each variant is one process per round (`superopt run --json` / `node tools/ort/ort_run.js --json`), "
                 "the variants of a model interleaved in %s, in alternating order (A B C, C B A, ...); a latency is the median "
                 "of the per-round medians, a speedup or ratio the median of the per-round ratios (both variants measured in "
                 "the same round). ONNX Runtime: %d intra-op thread, sequential execution.\n",
              rounds_txt, b->ort_threads);
    if (b->small_set)
        so_sbuf_printf(o, "- **Note:** data/full/ is missing (run `make models`): these are the small stand-in models from data/, "
                     "not the benchmark suite.\n");
    so_sbuf_printf(o, "\n## Search strategies (our backend)\n\n");
    so_sbuf_printf(o, "Speedup is over `none` (the model as imported and canonicalised, no rewrites), measured side by side.\n\n");
    mdhead h = {0};
    md_cols(&h, "model|search|>nodes|>cost (%s)|>GFLOP|>search (s)|>search CPU (s)|>graphs|>e-graph (e-nodes)|>rewrites|rules applied (id×count)",
            !strcmp(b->cost, "measured") ? "ms" : "est. ms");
    for (int t = 0; t < b->n_threads; t++) md_cols(&h, ">ours %dT (ms)", b->threads[t]);
    for (int t = 0; t < b->n_threads; t++) md_cols(&h, ">speedup %dT", b->threads[t]);
    md_head_end(o, &h);
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        for (int s = 0; s < N_STRAT; s++) {
            const opt_res *r = m->strat[s];
            so_sbuf_printf(o, "| %s | %s |", s == 0 ? m->name : "", strat_name[s]);
            if (!r->ok) {
                md_failed(o, &h, 2, r->err);
                continue;
            }
            char en[48] = "–";
            if (r->enodes >= 0) snprintf(en, sizeof en, "%lld (%s)", r->enodes, r->extraction);
            so_sbuf_printf(o, " %d | %s | %s | %.2f | %.2f | %lld | %s | %d | %s |", r->nodes, fms(x1, sizeof x1, r->cost_after),
                      fms(x2, sizeof x2, r->gflop), r->search_s, r->search_cpu_s, r->explored, en, r->rules_total, r->rules_top[0] ? r->rules_top : "–");
            for (int t = 0; t < b->n_threads; t++)
                so_sbuf_printf(o, " %s |", m->ours[s][t].err[0] ? "failed" : fms(x3, sizeof x3, m->ours[s][t].ms));
            for (int t = 0; t < b->n_threads; t++)
                so_sbuf_printf(o, " %s |", fx(x4, sizeof x4, speedup(m, s, t)));
            so_sbuf_printf(o, "\n");
        }
    }

    if (!b->no_ort) {
        so_sbuf_printf(o, "\n## ONNX Runtime %s at graph optimization level 'all' (%d thread)\n\n", b->ort_version, b->ort_threads);
        so_sbuf_printf(o, "The original model and our optimized models, each under ONNX Runtime's own optimizer at 'all'. "
                     "Ratio = ours (backtrack) / original, the median of the per-round ratios; the verdict is a sign test "
                     "over the rounds.\n\n");
        h = (mdhead){0};
        md_cols(&h, "model|>original (ms)|>ours greedy (ms)|>ours backtrack (ms)|>ratio|>per-round ratios|verdict");
        md_head_end(o, &h);
        for (int i = 0; i < b->n_models; i++) {
            const model_res *m = &b->models[i];
            double r = ort_ratio(m, S_BACKTRACK), lo, hi;
            paired_range(&m->ort[S_BACKTRACK], &m->ort_orig, &lo, &hi);
            so_sbuf_printf(o, "| %s | %s | %s | %s | %s | ", m->name, fms(x1, sizeof x1, m->ort_orig.ms),
                      fms(x2, sizeof x2, m->ort[S_GREEDY].ms), fms(x3, sizeof x3, m->ort[S_BACKTRACK].ms),
                      isfinite(r) ? (snprintf(x6, sizeof x6, "%.3f", r), x6) : "–");
            if (isfinite(lo)) so_sbuf_printf(o, "%.3f–%.3f", lo, hi);
            else so_sbuf_printf(o, "–");
            so_sbuf_printf(o, " | %s |\n", verdict_name[ort_verdict(m, S_BACKTRACK)]);
        }
    }

    so_sbuf_printf(o, "\n## Backtracking against greedy\n\n");
    so_sbuf_printf(o, "Final cost of each search under the cost model it searched with (`%s`: the runs above%s).\n\n", b->cost,
              b->flops_check ? "; `flops`: the same searches with the deterministic FLOP/byte model, which no timing noise "
                               "can sway" : "");
    h = (mdhead){0};
    md_cols(&h, "model|>original (%s)|>greedy|>backtrack|>backtrack / greedy|strictly cheaper", b->cost);
    if (b->flops_check) md_cols(&h, ">original (flops)|>greedy|>backtrack|>backtrack / greedy|strictly cheaper");
    md_head_end(o, &h);
    int n_lit = 0, n_cheaper = 0, n_cheaper_f = 0;
    so_sbuf which = {0}, which_f = {0};
    so_sbuf_printf(&which, "%s", "");
    so_sbuf_printf(&which_f, "%s", "");
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        const opt_res *g = m->strat[S_GREEDY], *t = m->strat[S_BACKTRACK];
        int c = bt_cheaper(m);
        if (m->literature) {
            n_lit++;
            if (c) {
                n_cheaper++;
                so_sbuf_printf(&which, "%s%s", which.n ? ", " : "", m->name);
            }
        }
        so_sbuf_printf(o, "| %s%s | %s | %s | %s | %s | %s |", m->name, m->literature ? "" : " (not counted)",
                  fms(x1, sizeof x1, m->strat[S_NONE]->cost_before), g->ok ? fms(x2, sizeof x2, g->cost_after) : "failed",
                  t->ok ? fms(x3, sizeof x3, t->cost_after) : "failed",
                  g->ok && t->ok ? (snprintf(x4, sizeof x4, "%.4f", ratio(t->cost_after, g->cost_after)), x4) : "–",
                  c ? "**yes**" : "no");
        if (b->flops_check) {
            const opt_res *fg = m->fstrat[S_GREEDY], *ft = m->fstrat[S_BACKTRACK];
            int cf = bt_cheaper_flops(m);
            if (m->literature && cf) {
                n_cheaper_f++;
                so_sbuf_printf(&which_f, "%s%s", which_f.n ? ", " : "", m->name);
            }
            so_sbuf_printf(o, " %s | %s | %s | %s | %s |", fg->ok ? fms(x1, sizeof x1, fg->cost_before) : "–",
                      fg->ok ? fms(x2, sizeof x2, fg->cost_after) : "failed", ft->ok ? fms(x3, sizeof x3, ft->cost_after) : "failed",
                      fg->ok && ft->ok ? (snprintf(x4, sizeof x4, "%.4f", ratio(ft->cost_after, fg->cost_after)), x4) : "–",
                      cf ? "**yes**" : "no");
        }
        so_sbuf_printf(o, "\n");
    }
    so_sbuf_printf(o, "\nBacktracking finds a strictly cheaper graph than greedy on %d of %d literature models under `%s`%s%s",
              n_cheaper, n_lit, b->cost, n_cheaper ? ": " : "", which.s);
    if (b->flops_check)
        so_sbuf_printf(o, "; on %d of %d under `flops`%s%s", n_cheaper_f, n_lit, n_cheaper_f ? ": " : "", which_f.s);
    so_sbuf_printf(o, ".\n");
    eqsat_section(b, o);

    if (bn_is_ablation_done(b)) {
        so_sbuf_printf(o, "\n## Ablations (backtracking; only on ");
        int first = 1;
        for (int i = 0; i < b->n_models; i++)
            if (b->models[i].ablate) {
                so_sbuf_printf(o, "%s%s", first ? "" : ", ", b->models[i].name);
                first = 0;
            }
        so_sbuf_printf(o, ", to keep `make bench` within its time budget)\n\n");
        so_sbuf_printf(o, "Cost relative to the original model; every other setting as in the main runs.\n\n");
        for (int kind = 0; kind < 3; kind++) {
            if (kind == 0) so_sbuf_printf(o, "### Maximum rule size (operators per pattern, either side)");
            else if (kind == 1) so_sbuf_printf(o, "### Alpha (keep graphs costing less than alpha x best)");
            else so_sbuf_printf(o, "### Search budget (graphs expanded; time limit %g s)", b->sweep_time_limit);
            so_sbuf_printf(o, "\n\n");
            h = (mdhead){0};
            md_cols(&h, "model|setting%s|>cost|>vs original|>search (s)|>graphs|stopped by", kind == 0 ? "|>rules" : "");
            md_head_end(o, &h);
            for (int i = 0; i < b->n_models; i++) {
                const model_res *m = &b->models[i];
                const abl *as = kind == 0 ? m->size : kind == 1 ? m->alpha : m->budget;
                int na = kind == 0 ? m->n_size : kind == 1 ? m->n_alpha : m->n_budget;
                for (int k = 0; k < na; k++) {
                    const opt_res *r = as[k].r;
                    so_sbuf_printf(o, "| %s | %s |", k == 0 ? m->name : "", as[k].label);
                    if (kind == 0) so_sbuf_printf(o, " %d |", as[k].n_rules);
                    if (!r->ok) {
                        md_failed(o, &h, kind == 0 ? 3 : 2, r->err);
                        continue;
                    }
                    so_sbuf_printf(o, " %s | %.4f | %.2f | %lld | %s |\n", fms(x1, sizeof x1, r->cost_after),
                              ratio(r->cost_after, r->cost_before), r->search_s, r->explored,
                              r->stopped_by[0] ? r->stopped_by : "?");
                }
            }
            so_sbuf_printf(o, "\n");
        }
    }

    /* acceptance summary (the ablation tables end with a blank line; the eqsat sentence does not) */
    so_sbuf_printf(o, "%s## Acceptance checks\n\n", bn_is_ablation_done(b) ? "" : "\n");
    if (!b->no_ort) {
        int n = 0, ok = 0;
        so_sbuf bad = {0}, noise = {0};
        so_sbuf_printf(&bad, "%s", "");
        so_sbuf_printf(&noise, "%s", "");
        for (int i = 0; i < b->n_models; i++) {
            const model_res *m = &b->models[i];
            int v = ort_verdict(m, S_BACKTRACK);
            double r = ort_ratio(m, S_BACKTRACK);
            n++;
            if (v == V_FASTER || v == V_NOISE) ok++;
            else so_sbuf_printf(&bad, "%s%s (%s)", bad.n ? ", " : "", m->name, v == V_NONE ? "not measured" : (snprintf(x1, sizeof x1, "%.3f", r), x1));
            if (v == V_NOISE) so_sbuf_printf(&noise, "%s%s %.3f", noise.n ? ", " : "", m->name, r);
        }
        so_sbuf_printf(o, "- ONNX Runtime runs our backtracking result at least as fast as the original (not slower in every round): "
                     "%d of %d models%s%s%s%s.\n",
                  ok, n, bad.n ? "; slower on " : "", bad.s, noise.n ? "; within the noise (median ratio): " : "", noise.s);
        free(bad.s);
        free(noise.s);
        for (int i = 0; i < b->n_models; i++) {
            const model_res *m = &b->models[i];
            if (strstr(m->name, "nasrnn") || strstr(m->name, "bert")) {
                double r = ort_ratio(m, S_BACKTRACK);
                so_sbuf_printf(o, "- ONNX Runtime faster on %s (every round): %s (median ratio %s)\n", m->name,
                          ort_verdict(m, S_BACKTRACK) == V_FASTER ? "yes" : "no",
                          isfinite(r) ? (snprintf(x1, sizeof x1, "%.3f", r), x1) : "–");
            }
        }
    }
    so_sbuf_printf(o, "- Backtracking strictly cheaper than greedy on at least 3 of the 7 literature models (`%s`): %s (%d of %d%s%s)\n",
              b->cost, n_cheaper >= 3 ? "met" : "NOT met", n_cheaper, n_lit, n_cheaper ? ": " : "", which.s);
    if (b->flops_check)
        so_sbuf_printf(o, "- The same under the deterministic `flops` model: %s (%d of %d%s%s)\n", n_cheaper_f >= 3 ? "met" : "NOT met",
                  n_cheaper_f, n_lit, n_cheaper_f ? ": " : "", which_f.s);
    if (b->failures) so_sbuf_printf(o, "- %d run%s failed; first: %s\n", b->failures, b->failures == 1 ? "" : "s", b->first_failure);
    else so_sbuf_printf(o, "- No run failed.\n");
    free(which.s);
    free(which_f.s);
}

static void json_opt(so_sbuf *o, const opt_res *r)
{
    so_sbuf_printf(o, "{\"ok\": %s", r->ok ? "true" : "false");
    if (!r->ok) {
        so_json_kstr(o, ", ", "error", r->err);
        so_sbuf_printf(o, "}");
        return;
    }
    so_sbuf_printf(o, ", \"nodes\": %d, \"nodes_before\": %d, \"onnx_nodes\": %d", r->nodes, r->nodes_before, r->onnx_nodes);
    so_json_knum(o, ", ", "gflop", r->gflop);
    so_json_knum(o, ", ", "cost_before", r->cost_before);
    so_json_knum(o, ", ", "cost_after", r->cost_after);
    so_json_knum(o, ", ", "latency_before_ms", r->lat_before);
    so_json_knum(o, ", ", "latency_after_ms", r->lat_after);
    so_json_knum(o, ", ", "search_seconds", r->search_s);
    so_json_knum(o, ", ", "search_cpu_seconds", r->search_cpu_s);
    so_json_knum(o, ", ", "wall_seconds", r->wall_s);
    so_sbuf_printf(o, ", \"graphs_explored\": %lld", r->explored);
    so_json_kstr(o, ", ", "stopped_by", r->stopped_by);
    so_json_knum(o, ", ", "alpha", r->alpha);
    so_sbuf_printf(o, ", \"budget\": %lld", r->budget);
    so_json_knum(o, ", ", "time_limit", r->time_limit);
    if (r->enodes >= 0) {
        so_sbuf_printf(o, ", \"egraph_enodes\": %lld", r->enodes);
        so_json_kstr(o, ", ", "extraction", r->extraction);
    }
    so_sbuf_printf(o, ", \"rewrites\": %d, \"rules_applied\": %s}", r->rules_total, r->rules_json ? r->rules_json : "{}");
}

static void json_meas(so_sbuf *o, const meas *x)
{
    if (!x->used) {
        so_sbuf_printf(o, "null");
        return;
    }
    so_json_knum(o, "{", "median_ms", x->ms);
    so_json_knum(o, ", ", "min_round_ms", x->lo);
    so_json_knum(o, ", ", "max_round_ms", x->hi);
    so_sbuf_printf(o, ", \"iters\": %d, \"warmup\": %d, \"threads\": %d, \"rounds_ms\": [", x->iters, x->warmup, x->threads);
    for (int k = 0; k < x->n; k++) {
        so_sbuf_printf(o, "%s", k ? ", " : "");
        so_json_num(o, x->round_ms[k]);
    }
    so_sbuf_printf(o, "]");
    if (x->err[0]) so_json_kstr(o, ", ", "error", x->err);
    so_sbuf_printf(o, "}");
}

static void json_abl(so_sbuf *o, const char *key, const abl *as, int n, int with_rules, int first)
{
    so_sbuf_printf(o, "%s\n        \"%s\": [", first ? "" : ",", key);
    for (int k = 0; k < n; k++) {
        so_json_knum(o, k ? ",\n        {" : "\n        {", "setting", as[k].x);
        if (with_rules) so_sbuf_printf(o, ", \"rules\": %d", as[k].n_rules);
        so_sbuf_printf(o, ", \"result\": ");
        json_opt(o, as[k].r);
        so_sbuf_printf(o, "}");
    }
    so_sbuf_printf(o, "]");
}

void bn_json_report(const bench *b, so_sbuf *o)
{
    so_json_kstr(o, "{\n  \"machine\": {", "cpu", b->cpu);
    so_json_kstr(o, ", ", "blas", b->blas);
    so_sbuf_printf(o, ", \"logical_cpus\": %d, \"memory_gb\": %.1f", b->ncpu, b->mem_gb);
    so_json_kstr(o, ", ", "os", b->os);
    so_json_kstr(o, ", ", "load_average_start", b->load_start);
    so_json_kstr(o, ", ", "load_average_end", b->load_end);
    so_json_kstr(o, "},\n  ", "date", b->date);
    so_json_kstr(o, ",\n  ", "commit", b->git);
    so_json_kstr(o, ",\n  ", "command", b->cmdline);
    if (b->no_ort) so_sbuf_printf(o, ",\n  \"onnxruntime\": null");
    else {
        so_json_kstr(o, ",\n  ", "onnxruntime", b->ort_version);
        so_json_kstr(o, ",\n  ", "node", b->node_version);
    }
    so_json_kstr(o, ",\n  \"settings\": {", "cost", b->cost);
    so_sbuf_printf(o, ", \"alpha\": %g, \"budget\": %ld, \"time_limit\": %g, \"rounds\": %d, \"target_seconds\": %g, "
                 "\"ort_threads\": %d, \"ort_opt\": \"all\", \"flops_check\": %s, \"small_set\": %s",
              b->alpha, b->budget, b->time_limit, b->rounds, b->target_s, b->ort_threads, b->flops_check ? "true" : "false",
              b->small_set ? "true" : "false");
    so_json_kstr(o, ", ", "rules", b->rules_file);
    so_json_kstr(o, ", ", "cost_table", b->table);
    so_sbuf_printf(o, ", \"cost_table_entries\": %ld", bn_table_entries(b->table));
    so_sbuf_printf(o, ", \"threads\": [");
    for (int t = 0; t < b->n_threads; t++) so_sbuf_printf(o, "%s%d", t ? ", " : "", b->threads[t]);
    so_sbuf_printf(o, "]},\n  \"total_seconds\": %.1f,\n  \"failures\": %d,\n  \"models\": [", b->t_total, b->failures);
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        so_json_kstr(o, i ? ",\n    {" : "\n    {", "name", m->name);
        so_json_kstr(o, ", ", "path", m->path);
        so_sbuf_printf(o, ", \"rounds\": %d", m->rounds);
        so_sbuf_printf(o, ", \"literature\": %s, \"seconds\": %.1f, \"backtrack_strictly_cheaper_than_greedy\": %s,",
                  m->literature ? "true" : "false", m->seconds, bt_cheaper(m) ? "true" : "false");
        so_sbuf_printf(o, "\n      \"strategies\": {");
        for (int s = 0; s < N_STRAT; s++) {
            so_sbuf_printf(o, "%s\n        \"%s\": {\"same_model_as\": \"%s\", \"optimize\": ", s ? "," : "", strat_name[s],
                      strat_name[m->same_as[s]]);
            json_opt(o, m->strat[s]);
            so_sbuf_printf(o, ", \"ours\": {");
            for (int t = 0; t < b->n_threads; t++) {
                so_sbuf_printf(o, "%s\"%d\": ", t ? ", " : "", b->threads[t]);
                json_meas(o, &m->ours[s][t]);
            }
            so_sbuf_printf(o, "}, \"speedup_over_none\": {");
            for (int t = 0; t < b->n_threads; t++) {
                so_sbuf_printf(o, "%s\"%d\": ", t ? ", " : "", b->threads[t]);
                so_json_num(o, speedup(m, s, t));
            }
            so_sbuf_printf(o, "}, \"ort_all\": ");
            json_meas(o, s == S_NONE ? &(meas){0} : &m->ort[s]);
            so_sbuf_printf(o, "}");
        }
        so_sbuf_printf(o, "},\n      \"ort_original_all\": ");
        json_meas(o, &m->ort_orig);
        so_json_knum(o, ",\n      ", "ort_backtrack_over_original", ort_ratio(m, S_BACKTRACK));
        {
            double lo, hi;
            paired_range(&m->ort[S_BACKTRACK], &m->ort_orig, &lo, &hi);
            so_sbuf_printf(o, ", \"ort_backtrack_over_original_rounds\": [");
            so_json_num(o, lo);
            so_sbuf_printf(o, ", ");
            so_json_num(o, hi);
            so_sbuf_printf(o, "], \"ort_verdict\": \"%s\"", verdict_name[ort_verdict(m, S_BACKTRACK)]);
        }
        if (m->fstrat[S_GREEDY]) {
            so_sbuf_printf(o, ",\n      \"flops_check\": {\"greedy\": ");
            json_opt(o, m->fstrat[S_GREEDY]);
            so_sbuf_printf(o, ",\n        \"backtrack\": ");
            json_opt(o, m->fstrat[S_BACKTRACK]);
            so_sbuf_printf(o, ",\n        \"eqsat\": ");
            json_opt(o, m->fstrat[S_EQSAT]);
            so_sbuf_printf(o, ",\n        \"backtrack_strictly_cheaper_than_greedy\": %s}", bt_cheaper_flops(m) ? "true" : "false");
        }
        if (m->ablate) {
            so_sbuf_printf(o, ",\n      \"ablations\": {");
            json_abl(o, "max_rule_size", m->size, m->n_size, 1, 1);
            json_abl(o, "alpha", m->alpha, m->n_alpha, 0, 0);
            json_abl(o, "budget", m->budget, m->n_budget, 0, 0);
            so_sbuf_printf(o, "}");
        }
        so_sbuf_printf(o, "}");
    }
    so_sbuf_printf(o, "\n  ]\n}\n");
}

/* ---- SVG ---- */

static const char *const colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

static double nice_step(double range, int ticks)
{
    double raw = range / ticks, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

static void svg_text(so_sbuf *o, double x, double y, const char *anchor, int size, const char *extra, const char *text)
{
    so_sbuf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s>", x, y, anchor, size, extra ? " " : "",
              extra ? extra : "");
    bn_sb_xml_str(o, text);
    so_sbuf_printf(o, "</text>\n");
}

void bn_svg_report(const bench *b, so_sbuf *o)
{
    const double W = 960, H1 = 400, H2 = 380;
    double H = H1 + H2 + 40;
    so_sbuf_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    so_sbuf_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                 "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
              W, H, W, H);
    so_sbuf_printf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");

    /* ---- panel 1: speedup per model and strategy ---- */
    const int nser = b->no_ort ? 3 : 4;
    const char *ser_name[4] = {"greedy (ours)", "backtrack (ours)", "eqsat (ours)", "backtrack on ONNX Runtime 'all' (vs original)"};
    char title[200];
    snprintf(title, sizeof title, "Speedup over no search, %d thread%s (median of per-round ratios)", b->threads[0],
             b->threads[0] == 1 ? "" : "s");
    svg_text(o, W / 2, 26, "middle", 16, "font-weight=\"bold\"", title);
    double px0 = 70, px1 = W - 20, py0 = 50, py1 = H1 - 70;
    double vmax = 1.2;
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        double v[4] = {speedup(m, S_GREEDY, 0), speedup(m, S_BACKTRACK, 0), speedup(m, S_EQSAT, 0), 1.0 / ort_ratio(m, S_BACKTRACK)};
        for (int k = 0; k < nser; k++)
            if (isfinite(v[k]) && v[k] > vmax) vmax = v[k];
    }
    double step = nice_step(vmax, 6);
    vmax = ceil(vmax * 1.08 / step) * step;
    for (double t = 0; t <= vmax + 1e-9; t += step) {
        double y = py1 - (py1 - py0) * t / vmax;
        so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px0, y, px1, y);
        char lab[32];
        snprintf(lab, sizeof lab, "%g×", t);
        svg_text(o, px0 - 6, y + 4, "end", 11, NULL, lab);
    }
    double y1 = py1 - (py1 - py0) * 1.0 / vmax;
    so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>\n", px0, y1, px1, y1);
    so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px0, py1, px1, py1);
    so_sbuf_printf(o, "<text x=\"18\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">speedup</text>\n",
              (py0 + py1) / 2, (py0 + py1) / 2);
    double gw = b->n_models ? (px1 - px0) / b->n_models : 1, bw = gw * 0.75 / nser;
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        double v[4] = {speedup(m, S_GREEDY, 0), speedup(m, S_BACKTRACK, 0), speedup(m, S_EQSAT, 0), 1.0 / ort_ratio(m, S_BACKTRACK)};
        double gx = px0 + gw * i + gw * 0.125;
        for (int k = 0; k < nser; k++) {
            double x = gx + bw * k;
            if (!isfinite(v[k])) {
                svg_text(o, x + bw / 2, py1 - 4, "middle", 9, "fill=\"#999\"", "n/a");
                continue;
            }
            double h = (py1 - py0) * v[k] / vmax;
            so_sbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, py1 - h, bw - 1, h,
                      colors[k]);
            char lab[32];
            snprintf(lab, sizeof lab, "%.2f", v[k]);
            svg_text(o, x + bw / 2, py1 - h - 3, "middle", bw > 26 ? 10 : 8, NULL, lab);
        }
        svg_text(o, px0 + gw * i + gw / 2, py1 + 16, "middle", gw > 100 ? 11 : 9, NULL, m->name);
    }
    for (int k = 0; k < nser; k++) {
        double lx = px0 + 10 + k * 190, ly = H1 - 28;
        so_sbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ly - 10, colors[k]);
        svg_text(o, lx + 16, ly, "start", 11, NULL, ser_name[k]);
    }

    /* ---- panel 2: cost against search time (budget sweep) ---- */
    double top = H1 + 20;
    svg_text(o, W / 2, top + 16, "middle", 16, "font-weight=\"bold\"",
             "Cost against search time (backtracking, budget sweep; square: greedy)");
    double qx0 = 80, qx1 = W - 200, qy0 = top + 40, qy1 = top + H2 - 50;
    double tmin = INFINITY, tmax = -INFINITY, cmin = INFINITY, cmax = -INFINITY;
    int any = 0;
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        if (!m->ablate) continue;
        for (int k = 0; k <= m->n_budget; k++) {
            const opt_res *r = k < m->n_budget ? m->budget[k].r : m->strat[S_GREEDY];
            if (!r->ok) continue;
            double t = r->search_s > 1e-3 ? r->search_s : 1e-3, c = ratio(r->cost_after, r->cost_before);
            if (!isfinite(c)) continue;
            any = 1;
            tmin = fmin(tmin, t);
            tmax = fmax(tmax, t);
            cmin = fmin(cmin, c);
            cmax = fmax(cmax, c);
        }
    }
    if (!any) {
        svg_text(o, W / 2, (qy0 + qy1) / 2, "middle", 13, "fill=\"#777\"", "no budget sweep in this run");
    } else {
        double lt0 = floor(log10(tmin)), lt1 = ceil(log10(tmax));
        if (lt1 <= lt0) lt1 = lt0 + 1;
        cmax = fmax(cmax, 1.0);
        if (cmax - cmin < 0.01) { /* flat: show a 1% window around the points */
            double mid = 0.5 * (cmax + cmin);
            cmin = mid - 0.005;
            cmax = mid + 0.005;
        }
        double cstep = nice_step(cmax - cmin, 5);
        double c0 = floor(cmin / cstep + 1e-9) * cstep, c1 = ceil(cmax / cstep - 1e-9) * cstep;
        if (c1 <= c0) c1 = c0 + cstep;
        int dec = cstep >= 1 ? 0 : (int)ceil(-log10(cstep) - 1e-9);
#define QX(t) (qx0 + (qx1 - qx0) * (log10(t) - lt0) / (lt1 - lt0))
#define QY(c) (qy1 - (qy1 - qy0) * ((c) - c0) / (c1 - c0))
        for (int ci = 0; c0 + ci * cstep <= c1 + cstep * 1e-6; ci++) {
            double c = c0 + ci * cstep;
            so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", qx0, QY(c), qx1, QY(c));
            char lab[32];
            snprintf(lab, sizeof lab, "%.*f", dec, c);
            svg_text(o, qx0 - 6, QY(c) + 4, "end", 11, NULL, lab);
        }
        for (double l = lt0; l <= lt1 + 1e-9; l += 1) {
            double x = QX(pow(10, l));
            so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, qy0, x, qy1);
            char lab[32];
            snprintf(lab, sizeof lab, "%g s", pow(10, l));
            svg_text(o, x, qy1 + 16, "middle", 11, NULL, lab);
        }
        so_sbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", qx0, qy0,
                  qx1 - qx0, qy1 - qy0);
        svg_text(o, (qx0 + qx1) / 2, qy1 + 34, "middle", 12, NULL, "search time (s, log scale)");
        so_sbuf_printf(o, "<text x=\"22\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 22 %.1f)\">"
                     "cost / original cost</text>\n",
                  (qy0 + qy1) / 2, (qy0 + qy1) / 2);
        int series = 0;
        for (int i = 0; i < b->n_models; i++) {
            const model_res *m = &b->models[i];
            if (!m->ablate) continue;
            const char *col = colors[series % (int)SO_ARRAY_LEN(colors)];
            so_sbuf pts = {0};
            so_sbuf_printf(&pts, "%s", "");
            for (int k = 0; k < m->n_budget; k++) {
                const opt_res *r = m->budget[k].r;
                double c = r->ok ? ratio(r->cost_after, r->cost_before) : NAN;
                if (!isfinite(c)) continue;
                double t = r->search_s > 1e-3 ? r->search_s : 1e-3;
                so_sbuf_printf(&pts, "%.1f,%.1f ", QX(t), QY(c));
                so_sbuf_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", QX(t), QY(c), col);
                char lab[32];
                snprintf(lab, sizeof lab, "%.0f", m->budget[k].x);
                svg_text(o, QX(t) + 5, QY(c) - 6, "start", 9, "fill=\"#555\"", lab);
            }
            so_sbuf_printf(o, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts.s, col);
            free(pts.s);
            const opt_res *g = m->strat[S_GREEDY];
            double gc = g->ok ? ratio(g->cost_after, g->cost_before) : NAN;
            if (isfinite(gc)) {
                double t = g->search_s > 1e-3 ? g->search_s : 1e-3;
                so_sbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"white\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                          QX(t) - 4.5, QY(gc) - 4.5, col);
            }
            double ly = qy0 + 14 + series * 20;
            so_sbuf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", qx1 + 14, ly - 4,
                      qx1 + 38, ly - 4, col);
            svg_text(o, qx1 + 44, ly, "start", 11, NULL, m->name);
            series++;
        }
        svg_text(o, qx1 + 14, qy0 + 14 + series * 20 + 6, "start", 9, "fill=\"#555\"", "labels: budget (graphs)");
#undef QX
#undef QY
    }
    so_sbuf_printf(o, "</svg>\n");
}
