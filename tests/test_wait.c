/* test_wait.c - the adaptive wait policy (kernels/wait.h): the window decision, the idle pool, same results either way. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <omp.h>

#include "../kernels/exec.h"
#include "../kernels/wait.h"
#include "test_util.h"

/* The decision: windows of >= SO_WAIT_WINDOW_S wall; over SO_WAIT_LOAD_HI throttles at once, SO_WAIT_QUIET_WINDOWS
   windows in a row under SO_WAIT_LOAD_LO release it; a share in between restarts the count; bad inputs change nothing. */
static void test_window_decision(void **state)
{
    (void)state;
    so_wait_window w = {0};
    const double W = SO_WAIT_WINDOW_S;
    assert_int_equal(so_wait_window_add(&w, W, 0), 0);              /* quiet */
    assert_int_equal(so_wait_window_add(&w, W, W * 0.09), 0);       /* under the high mark */
    assert_int_equal(so_wait_window_add(&w, W / 4, W / 4), 0);      /* all delay, but the window is still open */
    assert_int_equal(so_wait_window_add(&w, W / 4, W / 4), 0);
    assert_int_equal(so_wait_window_add(&w, W / 2, 0), 1);          /* closes at W: share 0.5 */
    assert_int_equal(w.wall_s, 0);
    for (int k = 1; k < SO_WAIT_QUIET_WINDOWS; k++) assert_int_equal(so_wait_window_add(&w, W, W * 0.01), 1);
    assert_int_equal(so_wait_window_add(&w, W, W * 0.07), 1);       /* between the marks: the count restarts */
    for (int k = 1; k < SO_WAIT_QUIET_WINDOWS; k++) assert_int_equal(so_wait_window_add(&w, W, 0), 1);
    assert_int_equal(so_wait_window_add(&w, W, 0), 0);              /* the 4th quiet window in a row */
    assert_int_equal(so_wait_window_add(&w, NAN, W), 0);
    assert_int_equal(so_wait_window_add(&w, W, -1), 0);
    assert_int_equal(so_wait_window_add(&w, INFINITY, 0), 0);
    assert_int_equal(w.wall_s, 0);
    assert_int_equal(so_wait_window_add(&w, 10 * W, 2 * W), 1);     /* one long run: share 0.2 */
}

static int n_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* The idle pool: while throttled the process holds omp_get_num_procs() more threads (the holder and its team's
   threads but one), none after release; set twice is one pool. */
static void test_idle_pool(void **state)
{
    (void)state;
    if (so_wait_throttled()) assert_int_equal(so_wait_set_throttled(0), SO_OK);
    const int base = n_threads();
    if (base < 0) skip();
    assert_int_equal(so_wait_set_throttled(1), SO_OK);
    assert_int_equal(so_wait_set_throttled(1), SO_OK);
    assert_true(so_wait_throttled());
    const int procs = omp_get_num_procs(), want = base + (procs > 1 ? procs : 2);
    int n = 0;
    for (int k = 0; k < 2000 && (n = n_threads()) < want; k++) usleep(1000); /* the holder starts its team */
    assert_int_equal(n, want);
    assert_int_equal(so_wait_set_throttled(0), SO_OK);
    assert_false(so_wait_throttled());
    for (int k = 0; k < 2000 && (n = n_threads()) > base; k++) usleep(1000); /* the pool's threads exit */
    assert_int_equal(n, base);
}

/* A 2-thread conv graph gives the same bits with the spin throttled and not (one executor, so the same kernels);
   the executor's ticks run through it. */
static void test_same_results(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 0);
    int32_t x = tb_input(&t, shp(4, 1, 16, 20, 20));
    int64_t n = 32 * 16 * 9;
    float *wd = malloc(sizeof *wd * (size_t)n);
    for (int64_t j = 0; j < n; j++) wd[j] = 0.01f * (float)(j % 7 - 3);
    int32_t w = tb_weight_data(&t, shp(4, 32, 16, 3, 3), wd);
    so_attr a = {0};
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    int32_t ins[2] = {x, w};
    int32_t c = tb_node_named(&t, SO_OP_CONV, ins, 2, 1, &a, "conv");
    int32_t r = tb_node_named(&t, SO_OP_RELU, &c, 1, 1, NULL, "relu");
    t.g->outputs[0] = (so_edge){r, 0};
    static float in[16 * 400], o[2][32 * 400];
    for (int j = 0; j < 16 * 400; j++) in[j] = (float)((j * 37) % 101) / 50.f - 1.f;
    const float *inp[1] = {in};
    so_exec_opts opts = {.threads = 2};
    so_exec *e = NULL;
    assert_int_equal(so_exec_new(t.g, &opts, &e), SO_OK);
    long t0 = 0, s0 = 0, t1 = 0, s1 = 0;
    so_wait_counts(&t0, &s0);
    for (int v = 0; v < 2; v++) {
        assert_int_equal(so_wait_set_throttled(v), SO_OK);
        float *out[1] = {o[v]};
        for (int k = 0; k < 3; k++) assert_int_equal(so_exec_run(e, inp, out), SO_OK);
    }
    so_wait_counts(&t1, &s1);
    so_exec_free(e);
    assert_memory_equal(o[0], o[1], sizeof o[0]);
    assert_int_equal(t1 - t0, so_wait_adaptive() ? 6 : 0); /* one tick per run at 2 threads */
    assert_true(s1 - s0 <= t1 - t0);
    assert_int_equal(so_wait_set_throttled(0), SO_OK);
    so_model_free(t.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_decision),
        cmocka_unit_test(test_idle_pool),
        cmocka_unit_test(test_same_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
