/* wait.c - adaptive OpenMP wait policy (wait.h): run-queue delay windows, and the idle pool that makes libgomp spin short. */
#include "wait.h"

#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int so_wait_window_add(so_wait_window *w, double wall_s, double delay_s)
{
    if (!(wall_s >= 0) || !(delay_s >= 0) || !isfinite(wall_s) || !isfinite(delay_s)) return w->throttled;
    w->wall_s += wall_s, w->delay_s += delay_s;
    if (w->wall_s < SO_WAIT_WINDOW_S) return w->throttled;
    const double share = w->delay_s / w->wall_s;
    w->wall_s = w->delay_s = 0;
    if (!w->throttled) {
        if (share > SO_WAIT_LOAD_HI) w->throttled = 1, w->quiet_run = 0;
    } else if (share < SO_WAIT_LOAD_LO) {
        if (++w->quiet_run >= SO_WAIT_QUIET_WINDOWS) w->throttled = 0, w->quiet_run = 0;
    } else
        w->quiet_run = 0;
    return w->throttled;
}

/* ---- the idle pool ---- */
static pthread_mutex_t set_mu = PTHREAD_MUTEX_INITIALIZER;  /* serializes so_wait_set_throttled; guards hold_on */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER; /* guards hold_release */
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_on;      /* a holder thread is running */
static int hold_release; /* tells the holder to return */
static pthread_t holder;
static atomic_int short_now;            /* hold_on, readable without set_mu */
static atomic_long n_ticks, n_short;    /* so_wait_counts */

/* Starts an OpenMP team of omp_get_num_procs() threads from a thread outside our pool: libgomp keeps that team's
   threads docked in this thread's own pool (asleep once their short spin ends) until the thread returns, and counts
   them among the threads it manages: procs + (our team - 1) > procs, so every wait spins libgomp's throttled count. */
static void *hold_main(void *arg)
{
    (void)arg;
    const int n = omp_get_num_procs();
    int team = 0;
#pragma omp parallel num_threads(n > 1 ? n : 2) shared(team)
    {
        if (omp_get_thread_num() == 0) team = omp_get_num_threads(); /* a body: an empty region is compiled away */
    }
    (void)team;
    pthread_mutex_lock(&hold_mu);
    while (!hold_release) pthread_cond_wait(&hold_cv, &hold_mu);
    pthread_mutex_unlock(&hold_mu);
    return NULL; /* libgomp's thread destructor frees the pool: its threads exit */
}

so_status so_wait_set_throttled(int on)
{
    so_status st = SO_OK;
    on = !!on;
    pthread_mutex_lock(&set_mu);
    if (on != hold_on) {
        if (on) {
            hold_release = 0; /* no holder runs: no reader */
            if (pthread_create(&holder, NULL, hold_main, NULL)) st = so_errorf("adaptive wait: cannot start a thread");
            else hold_on = 1, atomic_store(&short_now, 1);
        } else {
            pthread_mutex_lock(&hold_mu);
            hold_release = 1;
            pthread_cond_broadcast(&hold_cv);
            pthread_mutex_unlock(&hold_mu);
            pthread_join(holder, NULL);
            hold_on = 0, atomic_store(&short_now, 0);
        }
    }
    pthread_mutex_unlock(&set_mu);
    return st;
}

int so_wait_throttled(void)
{
    pthread_mutex_lock(&set_mu);
    int on = hold_on;
    pthread_mutex_unlock(&set_mu);
    return on;
}

/* ---- the ticks ---- */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int adaptive;

static void read_env(void)
{
    const char *a = getenv("SUPEROPT_ADAPTIVE_WAIT");
    adaptive = !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") && !(a && !strcmp(a, "0"));
}

int so_wait_adaptive(void)
{
    pthread_once(&env_once, read_env);
    return adaptive;
}

/* per calling thread: its schedstat file (kept open; /proc/thread-self names the opening thread), the last reading */
static pthread_key_t fd_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static void close_fd(void *p) { close((int)(intptr_t)p - 1); }
static void make_key(void) { (void)pthread_key_create(&fd_key, close_fd); }

static _Thread_local struct {
    int state; /* 0: not opened, 1: open, -1: unreadable */
    double last_wall, last_delay;
    so_wait_window w;
} tl;

/* the calling thread's run-queue delay in seconds (schedstat's second field, ns), < 0 when unreadable */
static double read_delay(void)
{
    if (tl.state == 0) {
        pthread_once(&key_once, make_key);
        int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        tl.state = fd >= 0 ? 1 : -1;
        if (fd >= 0) pthread_setspecific(fd_key, (void *)(intptr_t)(fd + 1));
    }
    if (tl.state < 0) return -1;
    char b[128];
    ssize_t n = pread((int)(intptr_t)pthread_getspecific(fd_key) - 1, b, sizeof b - 1, 0);
    unsigned long long run_ns, delay_ns;
    if (n <= 0) return -1;
    b[n] = 0;
    if (sscanf(b, "%llu %llu", &run_ns, &delay_ns) != 2) return -1;
    return (double)delay_ns * 1e-9;
}

void so_wait_tick(void)
{
    if (!so_wait_adaptive()) return;
    const double now = so_now(), delay = read_delay();
    if (delay < 0) {
        if (!tl.w.throttled) tl.w.throttled = 1, so_wait_set_throttled(1);
        atomic_fetch_add(&n_ticks, 1), atomic_fetch_add(&n_short, 1);
        return;
    }
    if (tl.last_wall > 0) {
        const int was = tl.w.throttled, want = so_wait_window_add(&tl.w, now - tl.last_wall, delay - tl.last_delay);
        if (want != was) so_wait_set_throttled(want);
    }
    tl.last_wall = now, tl.last_delay = delay;
    atomic_fetch_add(&n_ticks, 1);
    if (atomic_load(&short_now)) atomic_fetch_add(&n_short, 1);
}

void so_wait_counts(long *ticks, long *short_ticks)
{
    *ticks = atomic_load(&n_ticks), *short_ticks = atomic_load(&n_short);
}
