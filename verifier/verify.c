/* verify.c - rule proving: one rule with a timeout (watchdog), per-thread verifiers. */
#include "verify_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <z3.h>

void vp_set_why(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

typedef struct watchdog {
    Z3_context ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    double deadline;
} watchdog;

static void *watchdog_main(void *arg)
{
    watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        double now = so_now();
        if (now >= w->deadline) {
            Z3_interrupt(w->ctx);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = SO_MIN(w->deadline - now, 0.25);
        ts.tv_sec += (time_t)wait;
        ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Z3_solver_check with a watchdog thread that interrupts the context 0.5 s after the
   timeout: Z3's own timeout is not checked inside every E-matching loop. */
Z3_lbool vp_check_with_watchdog(Z3_context c, Z3_solver s, unsigned ms)
{
    watchdog wd = {.ctx = c, .done = 0, .deadline = so_now() + (double)ms / 1000.0 + 0.5};
    pthread_mutex_init(&wd.mu, NULL);
    pthread_cond_init(&wd.cv, NULL);
    pthread_t wt;
    int have_wd = pthread_create(&wt, NULL, watchdog_main, &wd) == 0;
    Z3_lbool res = Z3_solver_check(c, s);
    if (have_wd) {
        pthread_mutex_lock(&wd.mu);
        wd.done = 1;
        pthread_cond_signal(&wd.cv);
        pthread_mutex_unlock(&wd.mu);
        pthread_join(wt, NULL);
    }
    pthread_cond_destroy(&wd.cv);
    pthread_mutex_destroy(&wd.mu);
    return res;
}

so_status so_verifier_prove(so_verifier *v, const so_rule *r, double timeout_s, int *status, double *seconds, char *why, size_t why_len)
{
    Z3_context c = v->ctx;
    double t0 = so_now();
    *status = SO_RULE_FAILED;
    renc *e = so_xcalloc(1, sizeof *e);
    e->v = v;
    e->r = r;
    Z3_solver_push(c, v->s);
    int uns = vp_encode_rule(e);
    if (Z3_get_error_code(c) != Z3_OK) {
        vp_set_why(why, why_len, "Z3 error while encoding: %s", Z3_get_error_msg(c, Z3_get_error_code(c)));
        Z3_set_error(c, Z3_OK);
    } else if (uns) {
        vp_set_why(why, why_len, "%s", e->unsupported);
    } else {
        Z3_params p = Z3_mk_params(c);
        Z3_params_inc_ref(c, p);
        unsigned ms = timeout_s > 0 ? (unsigned)(timeout_s * 1000.0) : 2000u;
        Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), ms);
        Z3_solver_set_params(c, v->s, p);
        Z3_params_dec_ref(c, p);
        Z3_lbool res = vp_check_with_watchdog(c, v->s, ms);
        double dt = so_now() - t0;
        if (res == Z3_L_FALSE) {
            *status = SO_RULE_PROVED;
            vp_set_why(why, why_len, "proved");
        } else if (res == Z3_L_TRUE) {
            vp_set_why(why, why_len, "counter-model found");
        } else {
            Z3_string reason = Z3_solver_get_reason_unknown(c, v->s);
            if (reason && (strstr(reason, "timeout") || strstr(reason, "canceled")))
                vp_set_why(why, why_len, "timeout after %.1f s", dt);
            else
                vp_set_why(why, why_len, "unknown (%s)", reason ? reason : "?");
        }
    }
    Z3_solver_pop(c, v->s, 1);
    free(e);
    if (seconds) *seconds = so_now() - t0;
    return SO_OK;
}

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static void tls_free(void *p) { so_verifier_free(p); }
static void tls_init(void) { pthread_key_create(&tls_key, tls_free); }

so_status so_verify_rule(const so_rule *r, double timeout_s, int *status, double *seconds, char *why, size_t why_len)
{
    pthread_once(&tls_once, tls_init);
    so_verifier *v = pthread_getspecific(tls_key);
    if (!v) {
        if (so_verifier_new(&v) != SO_OK) return SO_ERR;
        pthread_setspecific(tls_key, v);
    }
    return so_verifier_prove(v, r, timeout_s, status, seconds, why, why_len);
}

void so_verify_thread_cleanup(void)
{
    pthread_once(&tls_once, tls_init);
    so_verifier *v = pthread_getspecific(tls_key);
    if (v) {
        so_verifier_free(v);
        pthread_setspecific(tls_key, NULL);
    }
}
