/* pool.c - rule sets: proves a rule set on a pool of threads and summarises. */
#include "verify_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

/* ------------------------------------------------------------------ rule sets */

typedef struct pool_job {
    so_ruleset *rs;
    double timeout_s;
    int next;
    char **reasons;
    pthread_mutex_t mu;
    so_status st;
    char err[256];
} pool_job;

static void *pool_worker(void *arg)
{
    pool_job *j = arg;
    so_verifier *v = NULL;
    if (so_verifier_new(&v) != SO_OK) {
        pthread_mutex_lock(&j->mu);
        j->st = SO_ERR;
        snprintf(j->err, sizeof j->err, "%s", so_error());
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i = j->next++;
        pthread_mutex_unlock(&j->mu);
        if (i >= j->rs->n_rules) break;
        so_rule *r = &j->rs->rules[i];
        int status;
        double secs;
        char why[160];
        if (so_verifier_prove(v, r, j->timeout_s, &status, &secs, why, sizeof why) != SO_OK) {
            status = SO_RULE_FAILED;
            snprintf(why, sizeof why, "%s", so_error());
        }
        r->status = status;
        r->proof_seconds = secs;
        if (j->reasons) j->reasons[i] = so_xstrdup(why);
    }
    so_verifier_free(v);
    return NULL;
}

so_status so_verify_ruleset(so_ruleset *rs, int threads, double timeout_s, so_verify_summary *sum, char ***reasons)
{
    double t0 = so_now();
    if (threads < 1) threads = 1;
    if (threads > 2) threads = 2;
    pool_job j = {.rs = rs, .timeout_s = timeout_s, .next = 0, .reasons = NULL, .st = SO_OK};
    pthread_mutex_init(&j.mu, NULL);
    if (reasons) j.reasons = so_xcalloc((size_t)rs->n_rules + 1, sizeof *j.reasons);
    pthread_t th[2];
    int started = 0;
    for (int t = 1; t < threads; t++)
        if (pthread_create(&th[t], NULL, pool_worker, &j) == 0) started++;
    pool_worker(&j);
    for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    if (j.st != SO_OK) {
        if (j.reasons) {
            for (int i = 0; i < rs->n_rules; i++) free(j.reasons[i]);
            free(j.reasons);
        }
        return so_errorf("%s", j.err);
    }
    so_verify_summary s = {rs->n_rules, 0, 0, 0.0};
    for (int i = 0; i < rs->n_rules; i++) {
        if (rs->rules[i].status == SO_RULE_PROVED) s.proved++;
        else s.failed++;
    }
    s.seconds = so_now() - t0;
    if (sum) *sum = s;
    if (reasons) *reasons = j.reasons;
    return SO_OK;
}
