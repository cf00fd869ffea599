/* bench_measure.c - bench harness latency measurements: superopt run / ONNX Runtime interleaved in rounds. */
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
   latency measurements, interleaved in rounds
   ====================================================================================== */

void bn_meas_init(meas *x, int ort, const char *model, int threads, const char *label)
{
    memset(x, 0, sizeof *x);
    x->used = 1;
    x->ort = ort;
    x->model = model;
    x->threads = threads;
    x->ms = x->lo = x->hi = NAN;
    snprintf(x->label, sizeof x->label, "%s", label);
}

/* One timed command: `superopt run` or ort_run.js with --json; *ms = its median. */
so_status bn_measure_once(bench *b, const meas *x, int iters, int warmup, double *ms)
{
    char a_it[16], a_wu[16], a_th[16];
    snprintf(a_it, sizeof a_it, "%d", iters);
    snprintf(a_wu, sizeof a_wu, "%d", warmup);
    snprintf(a_th, sizeof a_th, "%d", x->threads);
    char *argv[20 + BN_PIN_ARGV];
    int k = 0;
    if (x->ort) {
        argv[k++] = b->node;
        argv[k++] = b->ort_script;
    } else {
        argv[k++] = b->self;
        argv[k++] = "run";
    }
    argv[k++] = (char *)x->model;
    argv[k++] = "--json";
    argv[k++] = "--iters";
    argv[k++] = a_it;
    argv[k++] = "--warmup";
    argv[k++] = a_wu;
    argv[k++] = "--threads";
    argv[k++] = a_th;
    if (x->ort) {
        argv[k++] = "--opt";
        argv[k++] = "all";
    }
    k = bn_add_pins(b, argv, k);
    argv[k] = NULL;
    b->n_meas_runs++;
    proc p;
    if (bn_run_proc(argv, b->proc_timeout, &p) != SO_OK) return SO_ERR;
    char line[1024];
    so_status st = SO_ERR;
    if (p.code != 0 || p.timed_out) {
        char msg[512];
        bn_proc_failure(&p, x->ort ? "ONNX Runtime" : "superopt run", b->proc_timeout, msg, sizeof msg);
        so_errorf("%s", msg);
        goto done;
    }
    bn_last_line(p.out, line, sizeof line);
    so_json v;
    if (so_json_parse(line, x->ort ? "ort_run.js --json output" : "superopt run --json output", &v) != SO_OK) goto done;
    st = so_json_get_num(&v, "median_ms", x->ort ? "ort_run.js --json output" : "superopt run --json output", 0, ms);
    so_json_free(&v);
done:
    bn_proc_free(&p);
    return st;
}

/* Iterations so that one measurement takes about target_s of timed work. */
void bn_pick_iters(const bench *b, double est_ms, int *iters, int *warmup)
{
    double it = est_ms > 0 ? b->target_s * 1000.0 / est_ms : 10;
    *iters = it < 1 ? 1 : it > 1000 ? 1000 : (int)it;
    *warmup = *iters / 10 < 1 ? 1 : *iters / 10 > 20 ? 20 : *iters / 10;
    if (est_ms > 2000) *warmup = 0; /* multi-second models: the untimed first run would double the cost */
}

/* Runs every series in xs once per round, in the same order each round (A B C A B C ...),
   and keeps the median of the per-round medians. */
void bn_measure_rounds(bench *b, model_res *m, meas **xs, int n)
{
    for (int r = 0; r < m->rounds; r++) {
        for (int j = 0; j < n; j++) {
            meas *x = xs[r % 2 ? n - 1 - j : j]; /* A B C, C B A, ...: cancels a linear drift */
            if (x->err[0] || bn_interrupted) continue;
            double ms;
            if (bn_measure_once(b, x, x->iters, x->warmup, &ms) != SO_OK) {
                snprintf(x->err, sizeof x->err, "%s: %s: %s", m->name, x->label, so_error());
                bn_record_failure(b, x->err);
                continue;
            }
            x->round_ms[x->n++] = ms;
        }
        bn_note(b, "%s: measured round %d/%d", m->name, r + 1, m->rounds);
    }
    for (int i = 0; i < n; i++) {
        meas *x = xs[i];
        if (x->err[0] || !x->n) continue;
        x->ms = (x->n > 0 ? so_median(x->round_ms, (size_t)(x->n)) : NAN);
        x->lo = x->hi = x->round_ms[0];
        for (int k = 1; k < x->n; k++) {
            if (x->round_ms[k] < x->lo) x->lo = x->round_ms[k];
            if (x->round_ms[k] > x->hi) x->hi = x->round_ms[k];
        }
    }
}
