/* bench_model.c - bench harness per model: the search settings, rule-size ablations and measurements of one model. */
#include "bench_priv.h"
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

/* ======================================================================================
   ablations
   ====================================================================================== */

static int rule_size(const so_rule *r)
{
    return r->src.n_nodes > r->dst.n_nodes ? r->src.n_nodes : r->dst.n_nodes;
}

/* Writes the rule subsets "at most k operators per pattern" once per bench; *n_rules gets
   each subset's size. Returns SO_ERR with a message if the rule set cannot be read. */
so_status bn_write_rule_subsets(bench *b, char paths[][PATH_MAX], int *n_rules, int *max_size)
{
    so_ruleset rs = {0}, sub = {0};
    so_status st = SO_ERR;
    if (so_rules_load(b->rules_file, &rs) != SO_OK) goto done;
    *max_size = 0;
    for (int32_t i = 0; i < rs.n_rules; i++)
        if (rule_size(&rs.rules[i]) > *max_size) *max_size = rule_size(&rs.rules[i]);
    for (int s = 0; s < b->n_sizes; s++) {
        so_ruleset_free(&sub);
        memset(&sub, 0, sizeof sub);
        (void)bn_sfmt(sub.header, sizeof sub.header, "bench subset of %s: rules with at most %d operators per pattern",
                   b->rules_file, b->sizes[s]); /* may truncate: a comment only */
        for (int32_t i = 0; i < rs.n_rules; i++)
            if (rule_size(&rs.rules[i]) <= b->sizes[s]) so_ruleset_push(&sub, &rs.rules[i]);
        n_rules[s] = sub.n_rules;
        if (bn_sfmt(paths[s], PATH_MAX, "%s/rules.max%d.rules", b->work, b->sizes[s]) != SO_OK) goto done;
        if (so_rules_save(&sub, paths[s]) != SO_OK) goto done;
    }
    st = SO_OK;
done:
    so_ruleset_free(&sub);
    so_ruleset_free(&rs);
    return st;
}

static void run_ablations(bench *b, model_res *m, char subset_paths[][PATH_MAX], const int *subset_n, int total_rules)
{
    spec base = {.search = S_BACKTRACK, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
    snprintf(base.rules_id, sizeof base.rules_id, "all");
    /* maximum rule size */
    for (int s = 0; subset_paths && s < b->n_sizes; s++) {
        abl *a = &m->size[m->n_size++];
        snprintf(a->label, sizeof a->label, "max %d ops", b->sizes[s]);
        a->x = b->sizes[s];
        a->n_rules = subset_n[s];
        spec sp = base;
        if (subset_n[s] == total_rules) {
            snprintf(sp.rules_id, sizeof sp.rules_id, "all"); /* the whole set: same run as the main one */
        } else {
            sp.rules = subset_paths[s];
            snprintf(sp.rules_id, sizeof sp.rules_id, "n=%d", subset_n[s]); /* equal subsets are equal runs */
        }
        snprintf(sp.tag, sizeof sp.tag, "max%d", b->sizes[s]);
        a->r = bn_optimize(b, m, &sp);
    }
    /* alpha */
    for (int i = 0; i < b->n_alphas; i++) {
        abl *a = &m->alpha[m->n_alpha++];
        snprintf(a->label, sizeof a->label, "alpha %g", b->alphas[i]);
        a->x = b->alphas[i];
        spec sp = base;
        sp.alpha = b->alphas[i];
        snprintf(sp.tag, sizeof sp.tag, "alpha%g", b->alphas[i]);
        a->r = bn_optimize(b, m, &sp);
    }
    /* budget sweep */
    for (int i = 0; i < b->n_sweep; i++) {
        abl *a = &m->budget[m->n_budget++];
        snprintf(a->label, sizeof a->label, "budget %ld", b->sweep[i]);
        a->x = (double)b->sweep[i];
        spec sp = base;
        sp.budget = b->sweep[i];
        sp.time_limit = b->sweep_time_limit;
        snprintf(sp.tag, sizeof sp.tag, "budget%ld", b->sweep[i]);
        a->r = bn_optimize(b, m, &sp);
    }
}

/* ======================================================================================
   one model
   ====================================================================================== */

void bn_bench_model(bench *b, model_res *m, char subset_paths[][PATH_MAX], const int *subset_n, int total_rules)
{
    double t0 = so_now();
    bn_note(b, "%s: %s", m->name, m->path);
    for (int s = 0; s < N_STRAT; s++) {
        spec sp = {.search = s, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
        snprintf(sp.rules_id, sizeof sp.rules_id, "all");
        snprintf(sp.tag, sizeof sp.tag, "%s", strat_name[s]);
        m->strat[s] = bn_optimize(b, m, &sp);
    }
    if (b->flops_check)
        for (int s = S_GREEDY; s < N_STRAT; s++) {
            spec sp = {.search = s, .flops = 1, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
            snprintf(sp.rules_id, sizeof sp.rules_id, "all");
            snprintf(sp.tag, sizeof sp.tag, "flops-%s", strat_name[s]);
            m->fstrat[s] = bn_optimize(b, m, &sp);
        }
    /* ONNX Runtime times the same search written for other runtimes (--layout none, standard ONNX): no
       blocked-channel operators, which it cannot load, and priced with its copies and the FLOP/byte check
       (search/README.md "Standard ONNX"); byte-identical files are timed once */
    if (!b->no_ort)
        for (int s = S_GREEDY; s < N_STRAT; s++)
            if (m->strat[s]->ok) {
                spec sp = {.search = s, .layout_none = 1, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
                snprintf(sp.rules_id, sizeof sp.rules_id, "all");
                snprintf(sp.tag, sizeof sp.tag, "ort-%s", strat_name[s]);
                m->ostrat[s] = bn_optimize(b, m, &sp);
            }
    if (m->ablate) run_ablations(b, m, subset_paths, subset_n, total_rules);

    /* iterations per measurement from the optimizer's own latency of the original */
    m->est_ms = NAN;
    for (int s = 0; s < N_STRAT && !isfinite(m->est_ms); s++)
        if (m->strat[s]->ok && isfinite(m->strat[s]->lat_before) && m->strat[s]->lat_before > 0) m->est_ms = m->strat[s]->lat_before;
    if (!isfinite(m->est_ms)) {
        meas cal;
        bn_meas_init(&cal, 0, m->path, 1, "calibration");
        double ms;
        if (bn_measure_once(b, &cal, 1, 1, &ms) == SO_OK) m->est_ms = ms;
    }
    int iters, warmup;
    bn_pick_iters(b, isfinite(m->est_ms) ? m->est_ms : 0, &iters, &warmup);
    /* rounds: as given, else 5 for models under 1 s per inference and 3 above */
    m->rounds = b->rounds > 0 ? b->rounds : isfinite(m->est_ms) && m->est_ms > 1000 ? 3 : 5;

    /* byte-identical results are measured once (identical graphs, identical figures) */
    for (int s = 0; s < N_STRAT; s++) {
        m->same_as[s] = s;
        for (int t = 0; t < s && m->same_as[s] == s; t++)
            if (m->strat[s]->ok && m->strat[t]->ok && m->same_as[t] == t && bn_files_equal(m->strat[s]->out, m->strat[t]->out))
                m->same_as[s] = t;
    }
    /* what ONNX Runtime times per strategy: the --layout none file where there is one, and byte-identical
       files once */
    const opt_res *ortf[N_STRAT];
    for (int s = S_GREEDY; s < N_STRAT; s++) {
        ortf[s] = m->ostrat[s] ? m->ostrat[s] : m->strat[s];
        m->ort_as[s] = s;
        for (int t = S_GREEDY; t < s && m->ort_as[s] == s; t++)
            if (ortf[s]->ok && ortf[t]->ok && m->ort_as[t] == t && bn_files_equal(ortf[s]->out, ortf[t]->out)) m->ort_as[s] = t;
    }

    meas *xs[N_STRAT * MAX_THREADS + N_STRAT + 1];
    int n = 0;
    for (int t = 0; t < b->n_threads; t++)
        for (int s = 0; s < N_STRAT; s++) {
            if (!m->strat[s]->ok || m->same_as[s] != s) continue;
            char label[64];
            snprintf(label, sizeof label, "ours %s %dT", strat_name[s], b->threads[t]);
            bn_meas_init(&m->ours[s][t], 0, m->strat[s]->out, b->threads[t], label);
            m->ours[s][t].iters = iters;
            m->ours[s][t].warmup = warmup;
            xs[n++] = &m->ours[s][t];
        }
    if (!b->no_ort) {
        bn_meas_init(&m->ort_orig, 1, m->path, b->ort_threads, "ORT original");
        m->ort_orig.iters = iters;
        m->ort_orig.warmup = warmup;
        xs[n++] = &m->ort_orig;
        for (int s = S_GREEDY; s < N_STRAT; s++) {
            if (!ortf[s]->ok || m->ort_as[s] != s) continue;
            char label[64];
            snprintf(label, sizeof label, "ORT ours %s%s", strat_name[s], m->ostrat[s] ? " (--layout none)" : "");
            bn_meas_init(&m->ort[s], 1, ortf[s]->out, b->ort_threads, label);
            m->ort[s].iters = iters;
            m->ort[s].warmup = warmup;
            xs[n++] = &m->ort[s];
        }
    }
    for (int s = 1; s < N_STRAT; s++)
        if (m->same_as[s] != s) bn_note(b, "%s: %s gives the same model as %s: measured once", m->name, strat_name[s], strat_name[m->same_as[s]]);
    bn_note(b, "%s: measuring %d variants x %d rounds, %d iterations + %d warm-up each (estimate %.3g ms per run)", m->name, n,
         m->rounds, iters, warmup, m->est_ms);
    bn_measure_rounds(b, m, xs, n);
    for (int s = 0; s < N_STRAT; s++) {
        int t = m->same_as[s];
        if (t != s)
            for (int k = 0; k < b->n_threads; k++) m->ours[s][k] = m->ours[t][k];
        if (s >= S_GREEDY && m->ort_as[s] != s) m->ort[s] = m->ort[m->ort_as[s]];
    }

    if (!b->keep) /* the optimized models are not needed any more (bert_taso's are 400 MB each) */
        for (int i = 0; i < m->n_memo; i++) unlink(m->memo[i]->out);
    m->seconds = so_now() - t0;
    bn_note(b, "%s: done in %.0f s", m->name, m->seconds);
}
