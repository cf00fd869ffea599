/* test_api.c - the public C API (api/superopt.h): options, sessions on the data/ models against their stored
   outputs, every misuse refused with a message naming the problem, the thread-safety contract (one session
   refuses a concurrent run with SUPEROPT_BUSY; two sessions run concurrently), and optimize's report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_pb.h"
#include "../api/superopt.h"
#include "../src/graph.h"
#include "../src/onnx_io.h"

/* Reads a whole file (malloc'd) or NULL. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* A session's inputs bound to one buffer (data/NAME.in.bin) and outputs to fresh buffers. */
typedef struct io {
    superopt_tensor *in, *out;
    size_t n_in, n_out;
    char *in_data;
} io;

static void io_make(superopt_session *s, const char *in_path, io *x)
{
    size_t len = 0;
    x->in_data = slurp(in_path, &len);
    assert_non_null(x->in_data);
    x->n_in = superopt_session_input_count(s);
    x->n_out = superopt_session_output_count(s);
    x->in = calloc(x->n_in + 1, sizeof *x->in);
    x->out = calloc(x->n_out + 1, sizeof *x->out);
    size_t off = 0;
    for (size_t i = 0; i < x->n_in; i++) {
        superopt_tensor_info t;
        assert_int_equal(superopt_session_input_info(s, i, &t), SUPEROPT_OK);
        x->in[i] = (superopt_tensor){t.name, t.dtype, t.rank, t.dims, x->in_data + off, t.bytes};
        off += t.bytes;
    }
    assert_int_equal(off, len);
    for (size_t i = 0; i < x->n_out; i++) {
        superopt_tensor_info t;
        assert_int_equal(superopt_session_output_info(s, i, &t), SUPEROPT_OK);
        x->out[i] = (superopt_tensor){t.name, t.dtype, t.rank, t.dims, calloc(1, t.bytes + 1), t.bytes};
    }
}

static void io_free(io *x)
{
    for (size_t i = 0; i < x->n_out; i++) free(x->out[i].data);
    free(x->in);
    free(x->out);
    free(x->in_data);
}

/* Outputs (float32, graph order) within |a-b| <= 1e-5 + 1e-4 |b| of data/NAME.out.bin. */
static int outputs_match(const io *x, const char *want_path)
{
    size_t len = 0, off = 0;
    char *want = slurp(want_path, &len);
    int ok = want != NULL;
    for (size_t i = 0; ok && i < x->n_out; i++) {
        const float *a = x->out[i].data;
        for (size_t j = 0; j < x->out[i].bytes / 4 && ok; j++) {
            float b;
            memcpy(&b, want + off + 4 * j, 4);
            ok = a[j] - b <= 1e-5f + 1e-4f * (b < 0 ? -b : b) && b - a[j] <= 1e-5f + 1e-4f * (b < 0 ? -b : b);
        }
        off += x->out[i].bytes;
    }
    free(want);
    return ok && off == len;
}

static void test_version_and_names(void **state)
{
    (void)state;
    assert_string_equal(superopt_version(), SUPEROPT_VERSION_STRING);
    assert_string_equal(superopt_status_name(SUPEROPT_BUSY), "busy");
    assert_int_equal(superopt_dtype_size(SUPEROPT_BOOL), 1);
    assert_int_equal(superopt_dtype_size(SUPEROPT_INT64), 8);
    assert_int_equal(superopt_dtype_size((superopt_dtype)2), 0);
    assert_string_equal(superopt_dtype_name(SUPEROPT_INT32), "int32");
}

static void test_config(void **state)
{
    (void)state;
    superopt_config *c = NULL;
    assert_int_equal(superopt_config_new(&c), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "threads", "2"), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "threads", "0"), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_config_error(c), "threads=0"));
    assert_int_equal(superopt_config_set(c, "search", "genetic"), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_config_error(c), "backtrack"));
    assert_int_equal(superopt_config_set(c, "nonsense", "1"), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_config_error(c), "unknown option 'nonsense'"));
    assert_int_equal(superopt_config_set(c, "input_shape", "x=1,,2"), SUPEROPT_INVALID_ARGUMENT);
    assert_int_equal(superopt_config_set(c, "input_shape", "x=1,2"), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "dim", "batch=1"), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, NULL, "1"), SUPEROPT_INVALID_ARGUMENT);
    assert_int_equal(superopt_config_set(NULL, "threads", "1"), SUPEROPT_INVALID_ARGUMENT);
    superopt_config_free(c);
    superopt_config_free(NULL);
}

/* The option table: keys unique, every default accepted by superopt_config_set, every key named in the
   unknown-key message, NULL past the end. */
static void test_config_options(void **state)
{
    (void)state;
    superopt_config *c = NULL;
    assert_int_equal(superopt_config_new(&c), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "nonsense", "1"), SUPEROPT_INVALID_ARGUMENT);
    char unknown[1024];
    snprintf(unknown, sizeof unknown, "%s", superopt_config_error(c));
    size_t n = 0;
    for (; superopt_config_option(n); n++) {
        const superopt_option *o = superopt_config_option(n);
        assert_non_null(o->key);
        assert_non_null(o->value);
        assert_non_null(o->help);
        assert_non_null(strstr(unknown, o->key));
        for (size_t j = 0; j < n; j++) assert_string_not_equal(superopt_config_option(j)->key, o->key);
        if (o->default_value) assert_int_equal(superopt_config_set(c, o->key, o->default_value), SUPEROPT_OK);
        if (o->type == SUPEROPT_OPTION_FLAG) assert_int_equal(superopt_config_set(c, o->key, "2"), SUPEROPT_INVALID_ARGUMENT);
    }
    assert_true(n >= 20);
    assert_null(superopt_config_option(n));
    assert_string_equal(superopt_config_option(0)->key, "threads");
    superopt_config_free(c);
}

/* Every data/ model through a session (path and bytes) matches its stored outputs, twice on the same buffers. */
static void test_models(void **state)
{
    (void)state;
    const char *models[] = {"deepandwide", "bert2", "lstm2", "nasrnn", "resnet_small", "squeezenet", "tinyseg"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        char p[256], in[256], out[256];
        snprintf(p, sizeof p, "data/%s.onnx", models[m]);
        snprintf(in, sizeof in, "data/%s.in.bin", models[m]);
        snprintf(out, sizeof out, "data/%s.out.bin", models[m]);
        for (int bytes = 0; bytes < 2; bytes++) {
            superopt_session *s = NULL;
            if (bytes) {
                size_t len = 0;
                char *buf = slurp(p, &len);
                assert_non_null(buf);
                assert_int_equal(superopt_session_open_bytes(buf, len, p, NULL, &s), SUPEROPT_OK);
                free(buf); /* the session keeps nothing of the caller's bytes */
            } else
                assert_int_equal(superopt_session_open(p, NULL, &s), SUPEROPT_OK);
            io x;
            io_make(s, in, &x);
            for (int r = 0; r < 2; r++) {
                assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_OK);
                if (!outputs_match(&x, out)) fail_msg("%s (%s): outputs differ from %s", p, bytes ? "bytes" : "path", out);
            }
            const char *st = superopt_session_stats(s);
            assert_non_null(st);
            assert_non_null(strstr(st, "\"peak_activation_bytes\""));
            io_free(&x);
            superopt_session_close(s);
        }
    }
}

/* The heap's huge pages (so_heap_hugepages: MADV_COLLAPSE of the whole process heap) are the host's business: a
   session asks for them only with the "hugepages" key (superopt run sets it), never by default. */
static void test_hugepages_opt_in(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        superopt_config *cfg = NULL;
        assert_int_equal(superopt_config_new(&cfg), SUPEROPT_OK);
        if (on) assert_int_equal(superopt_config_set(cfg, "hugepages", "1"), SUPEROPT_OK);
        const long before = so_heap_hugepages_calls;
        superopt_session *s = NULL;
        assert_int_equal(superopt_session_open("data/squeezenet.onnx", cfg, &s), SUPEROPT_OK);
        assert_int_equal(so_heap_hugepages_calls - before, on);
        superopt_session_close(s);
        superopt_config_free(cfg);
    }
    superopt_session *s = NULL; /* a NULL config: the defaults, off */
    const long before = so_heap_hugepages_calls;
    assert_int_equal(superopt_session_open("data/squeezenet.onnx", NULL, &s), SUPEROPT_OK);
    assert_int_equal(so_heap_hugepages_calls, before);
    superopt_session_close(s);
}

static void test_misuse(void **state)
{
    (void)state;
    superopt_session *s = (superopt_session *)1;
    /* bad path: no session, the thread's message names the file */
    assert_int_equal(superopt_session_open("data/no_such_model.onnx", NULL, &s), SUPEROPT_IO_ERROR);
    assert_null(s);
    assert_non_null(strstr(superopt_last_error(), "data/no_such_model.onnx"));
    assert_int_equal(superopt_session_open_bytes("garbage", 7, "junk.onnx", NULL, &s), SUPEROPT_PARSE_ERROR);
    assert_non_null(strstr(superopt_last_error(), "junk.onnx"));
    assert_int_equal(superopt_session_open(NULL, NULL, &s), SUPEROPT_INVALID_ARGUMENT);
    /* NULL handles */
    assert_int_equal(superopt_session_run(NULL, NULL, 0, NULL, 0), SUPEROPT_INVALID_ARGUMENT);
    assert_int_equal(superopt_session_input_count(NULL), 0);
    superopt_session_close(NULL);

    assert_int_equal(superopt_session_open("data/deepandwide.onnx", NULL, &s), SUPEROPT_OK);
    io x;
    io_make(s, "data/deepandwide.in.bin", &x);
    superopt_tensor_info info;
    assert_int_equal(superopt_session_input_info(s, 99, &info), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "input 99"));
    /* wrong input name */
    superopt_tensor t = x.in[0];
    x.in[0].name = "no_such_input";
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "no input named 'no_such_input'"));
    x.in[0] = t;
    /* wrong dtype */
    x.in[0].dtype = SUPEROPT_INT64;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "is float32, given int64"));
    x.in[0] = t;
    /* wrong shape */
    int64_t dims[8] = {0};
    for (int d = 0; d < t.rank; d++) dims[d] = t.dims[d];
    dims[t.rank - 1] += 1;
    x.in[0].dims = dims;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "has shape"));
    x.in[0] = t;
    /* buffer too small, input missing, input twice, output name unknown */
    x.in[0].bytes = t.bytes - 1;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "needs a buffer"));
    x.in[0] = t;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in - 1, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "is not given"));
    x.in[1] = t;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "given twice"));
    io_free(&x);
    io_make(s, "data/deepandwide.in.bin", &x);
    x.out[0].name = "nope";
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "no output named 'nope'"));
    /* no outputs requested: runs; then all of them by position (NULL names) */
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, NULL, 0), SUPEROPT_OK);
    x.out[0].name = NULL;
    x.out[0].dims = NULL;
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_OK);
    assert_true(outputs_match(&x, "data/deepandwide.out.bin"));
    io_free(&x);
    superopt_session_close(s);
}

/* ---- threads ---- */
typedef struct runner {
    superopt_session *s;
    const char *model;
    int runs, ok, busy_seen;
    atomic_int *stop;
} runner;

static void *run_loop(void *arg)
{
    runner *r = arg;
    char in[256], out[256];
    snprintf(in, sizeof in, "data/%s.in.bin", r->model);
    snprintf(out, sizeof out, "data/%s.out.bin", r->model);
    io x;
    io_make(r->s, in, &x);
    r->ok = 1;
    for (int done = 0; done < r->runs;) { /* `runs` completed runs; refusals counted apart */
        superopt_status st = superopt_session_run(r->s, x.in, x.n_in, x.out, x.n_out);
        if (st == SUPEROPT_BUSY) {
            r->busy_seen++;
            continue;
        }
        if (st != SUPEROPT_OK || !outputs_match(&x, out)) r->ok = 0;
        done++;
    }
    if (r->stop) atomic_store(r->stop, 1);
    io_free(&x);
    return NULL;
}

/* One session, two threads both running it in a loop: a run that starts while the other thread's runs is
   refused with SUPEROPT_BUSY (message in the thread's superopt_last_error), and every run that is not
   refused gives the stored outputs. */
static void test_same_session_refused(void **state)
{
    (void)state;
    superopt_session *s = NULL;
    assert_int_equal(superopt_session_open("data/squeezenet.onnx", NULL, &s), SUPEROPT_OK);
    atomic_int stop = 0;
    runner a = {.s = s, .model = "squeezenet", .runs = 40, .stop = &stop};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_loop, &a), 0);
    io x;
    io_make(s, "data/squeezenet.in.bin", &x);
    int busy = 0, ok = 0;
    while (!atomic_load(&stop)) {
        superopt_status st = superopt_session_run(s, x.in, x.n_in, x.out, x.n_out);
        if (st == SUPEROPT_BUSY) {
            busy++;
            assert_non_null(strstr(superopt_last_error(), "running on another thread"));
        } else {
            assert_int_equal(st, SUPEROPT_OK);
            ok++;
        }
    }
    pthread_join(th, NULL);
    assert_true(a.ok);
    assert_true(busy + a.busy_seen > 0); /* 40 runs of squeezenet against a loop: the threads met */
    assert_true(outputs_match(&x, "data/squeezenet.out.bin") || ok == 0);
    io_free(&x);
    superopt_session_close(s);
}

/* Two sessions of two models run concurrently, each matching its stored outputs every time. */
static void test_two_sessions_concurrently(void **state)
{
    (void)state;
    superopt_session *s1 = NULL, *s2 = NULL;
    assert_int_equal(superopt_session_open("data/squeezenet.onnx", NULL, &s1), SUPEROPT_OK);
    assert_int_equal(superopt_session_open("data/bert2.onnx", NULL, &s2), SUPEROPT_OK);
    runner a = {.s = s1, .model = "squeezenet", .runs = 20}, b = {.s = s2, .model = "bert2", .runs = 20};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, run_loop, &a), 0);
    assert_int_equal(pthread_create(&t2, NULL, run_loop, &b), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_true(a.ok && b.ok);
    assert_int_equal(a.busy_seen + b.busy_seen, 0);
    superopt_session_close(s1);
    superopt_session_close(s2);
}

/* Optimize through the API: a report whose JSON names the output; a missing model and a bad option fail
   with messages and write nothing. */
static void test_optimize(void **state)
{
    (void)state;
    char dir[] = "/tmp/so_api_test_XXXXXX", out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/dw.opt.onnx", dir);
    superopt_config *c = NULL;
    assert_int_equal(superopt_config_new(&c), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "cost", "flops"), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "rules", "rules/default.rules"), SUPEROPT_OK);
    superopt_report *r = NULL;
    assert_int_equal(superopt_optimize("data/deepandwide.onnx", out, c, &r), SUPEROPT_OK);
    assert_non_null(r);
    assert_non_null(strstr(superopt_report_json(r), out));
    assert_non_null(strstr(superopt_report_json(r), "\"cost_after\""));
    assert_non_null(strstr(superopt_report_text(r), "rules applied"));
    superopt_report_free(r);
    superopt_session *s = NULL;
    assert_int_equal(superopt_session_open(out, NULL, &s), SUPEROPT_OK);
    io x;
    io_make(s, "data/deepandwide.in.bin", &x);
    assert_int_equal(superopt_session_run(s, x.in, x.n_in, x.out, x.n_out), SUPEROPT_OK);
    assert_true(outputs_match(&x, "data/deepandwide.out.bin"));
    io_free(&x);
    superopt_session_close(s);
    remove(out);
    r = (superopt_report *)1;
    assert_int_equal(superopt_optimize("data/no_such.onnx", out, c, &r), SUPEROPT_IO_ERROR);
    assert_null(r);
    assert_non_null(strstr(superopt_last_error(), "data/no_such.onnx"));
    assert_int_equal(access(out, F_OK), -1);
    superopt_config_free(c);
    rmdir(dir);
}

/* y = Relu(x @ W + b), x[N,4] (first dim symbolic "N" when sym) W[4,3] b[3]; W inline, or in `ext_file` beside
   the model (external data). */
static void tiny_model(const char *path, const char *ext_file, int sym)
{
    static const float W[12] = {0.5f, -1, 2, 0.25f, 1, -0.5f, -2, 0.75f, 1.5f, 1, 0, -1}, B[3] = {0.1f, -0.2f, 0.3f};
    int64_t xd[2] = {2, 4}, wd[2] = {4, 3}, bd[1] = {3}, yd[2] = {2, 3};
    pb g = {0}, t = {0};
    const char *const nodes[3][4] = {{"MatMul", "x", "W", "h0"}, {"Add", "h0", "b", "h"}, {"Relu", "h", NULL, "y"}};
    for (int i = 0; i < 3; i++) {
        pb n = {0};
        pb_str(&n, 1, nodes[i][1]);
        if (nodes[i][2]) pb_str(&n, 1, nodes[i][2]);
        pb_str(&n, 2, nodes[i][3]);
        pb_str(&n, 4, nodes[i][0]);
        pb_msg(&g, 1, &n);
    }
    for (int i = 0; i < 2; i++) pb_int(&t, 1, wd[i]); /* TensorProto: dims 1, data_type 2, name 8, raw_data 9 */
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "W");
    if (ext_file) { /* external_data 13 {location}, data_location 14 = EXTERNAL */
        pb kv = {0};
        pb_str(&kv, 1, "location");
        pb_str(&kv, 2, ext_file);
        pb_msg(&t, 13, &kv);
        pb_int(&t, 14, 1);
    } else pb_bytes(&t, 9, W, sizeof W);
    pb_msg(&g, 5, &t);
    pb_int(&t, 1, bd[0]);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "b");
    pb_bytes(&t, 9, B, sizeof B);
    pb_msg(&g, 5, &t);
    for (int k = 0; k < 2; k++) { /* ValueInfoProto: input 11, output 12 */
        pb v = {0}, tp = {0}, tt = {0}, sh = {0};
        for (int i = 0; i < 2; i++) {
            pb dm = {0};
            if (k == 0 && i == 0 && sym) pb_str(&dm, 2, "N");
            else pb_int(&dm, 1, k ? yd[i] : xd[i]);
            pb_msg(&sh, 1, &dm);
        }
        pb_int(&tt, 1, 1);
        pb_msg(&tt, 2, &sh);
        pb_msg(&tp, 1, &tt);
        pb_str(&v, 1, k ? "y" : "x");
        pb_msg(&v, 2, &tp);
        pb_msg(&g, k ? 12 : 11, &v);
    }
    pb m = {0}, op = {0};
    pb_int(&m, 1, 8);
    pb_str(&g, 2, "g");
    pb_msg(&m, 7, &g);
    pb_str(&op, 1, "");
    pb_int(&op, 2, 17);
    pb_msg(&m, 8, &op);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(m.d, 1, m.n, f), m.n);
    fclose(f);
    free(m.d);
    if (ext_file) {
        char p[600];
        snprintf(p, sizeof p, "%.*s/%s", (int)(strrchr(path, '/') - path), path, ext_file);
        f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(W, 1, sizeof W, f), sizeof W);
        fclose(f);
    }
}

/* 1 if files a and b hold the same bytes. */
static int same_bytes(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Optimizes src to out with cfg plus `extra` (key, value pairs, NULL-ended); returns the report's JSON (malloc'd). */
static char *optimize_json(const char *src, const char *out, const char *const *extra)
{
    superopt_config *c = NULL;
    assert_int_equal(superopt_config_new(&c), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "cost", "flops"), SUPEROPT_OK);
    assert_int_equal(superopt_config_set(c, "rules", "rules/default.rules"), SUPEROPT_OK);
    for (int i = 0; extra[i]; i += 2) assert_int_equal(superopt_config_set(c, extra[i], extra[i + 1]), SUPEROPT_OK);
    superopt_report *r = NULL;
    if (superopt_optimize(src, out, c, &r) != SUPEROPT_OK) fail_msg("%s: %s", src, superopt_last_error());
    char *j = strdup(superopt_report_json(r));
    if (strstr(j, "\"written\": \"input\"")) assert_non_null(strstr(superopt_report_text(r), "input file is written unchanged"));
    superopt_report_free(r);
    superopt_config_free(c);
    return j;
}

/* --layout none with no rewrite kept writes the input file's own bytes (issue 15 item 6: other runtimes then run
   exactly the original; the re-serialised start graph renamed values, dropped default attributes and reordered
   nodes, and ONNX Runtime followed the new order). Not with another layout, not when a rewrite was kept, and not
   (with the reason in written_note) for weights in external data (the output holds them inline and runs without
   the data file) or pinned input shapes. */
static void test_optimize_standard_unchanged(void **state)
{
    (void)state;
    char dir[] = "/tmp/so_api_std_XXXXXX", out[256], p[256], ext[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    static const char *const none_none[] = {"search", "none", "layout", "none", NULL};
    char *j = optimize_json("data/deepandwide.onnx", out, none_none);
    assert_non_null(strstr(j, "\"written\": \"input\""));
    assert_true(same_bytes("data/deepandwide.onnx", out));
    free(j);
    /* the default search finds no rewrite of it either under flops: still the input */
    static const char *const none[] = {"layout", "none", NULL};
    j = optimize_json("data/deepandwide.onnx", out, none);
    assert_non_null(strstr(j, "\"written\": \"input\""));
    assert_true(same_bytes("data/deepandwide.onnx", out));
    free(j);
    /* the default layout (auto, off under flops): the file is for superopt, the graph is written */
    static const char *const search_none[] = {"search", "none", NULL};
    j = optimize_json("data/deepandwide.onnx", out, search_none);
    assert_non_null(strstr(j, "\"written\": \"graph\", \"written_note\": null") || strstr(j, "\"written\": \"graph\",\n  \"written_note\": null"));
    assert_false(same_bytes("data/deepandwide.onnx", out));
    free(j);
    /* a rewrite kept (nasrnn: time steps' products merged under flops): the graph */
    static const char *const none_b50[] = {"layout", "none", "budget", "50", NULL};
    j = optimize_json("data/nasrnn.onnx", out, none_b50);
    assert_non_null(strstr(j, "\"written\": \"graph\""));
    assert_null(strstr(j, "\"rules_path\": []"));
    assert_false(same_bytes("data/nasrnn.onnx", out));
    free(j);
    /* the same file as input and output: copied onto itself, unchanged */
    snprintf(p, sizeof p, "%s/tiny.onnx", dir);
    tiny_model(p, NULL, 0);
    char *before = NULL;
    size_t lb = 0, la = 0;
    before = slurp(p, &lb);
    j = optimize_json(p, p, none_none);
    assert_non_null(strstr(j, "\"written\": \"input\""));
    char *after = slurp(p, &la);
    assert_true(after && la == lb && memcmp(before, after, lb) == 0);
    free(before);
    free(after);
    free(j);
    /* external data: written as a graph that holds W inline and runs without weights.bin */
    snprintf(p, sizeof p, "%s/tiny_ext.onnx", dir);
    tiny_model(p, "weights.bin", 0);
    j = optimize_json(p, out, none_none);
    assert_non_null(strstr(j, "\"written\": \"graph\""));
    assert_non_null(strstr(j, "external data"));
    free(j);
    snprintf(ext, sizeof ext, "%s/weights.bin", dir);
    assert_int_equal(remove(ext), 0);
    superopt_session *s = NULL;
    assert_int_equal(superopt_session_open(out, NULL, &s), SUPEROPT_OK);
    superopt_session_close(s);
    /* a pinned symbolic dimension: the input file does not carry it, the graph is written */
    snprintf(p, sizeof p, "%s/tiny_sym.onnx", dir);
    tiny_model(p, NULL, 1);
    static const char *const none_pin[] = {"search", "none", "layout", "none", "dim", "N=2", NULL};
    j = optimize_json(p, out, none_pin);
    assert_non_null(strstr(j, "\"written\": \"graph\""));
    assert_non_null(strstr(j, "pinned"));
    free(j);
    remove(out);
    snprintf(p, sizeof p, "%s/tiny.onnx", dir);
    remove(p);
    snprintf(p, sizeof p, "%s/tiny_ext.onnx", dir);
    remove(p);
    snprintf(p, sizeof p, "%s/tiny_sym.onnx", dir);
    remove(p);
    assert_int_equal(rmdir(dir), 0);
}

/* Typed inputs and outputs through the API: ONNX's node tests with bool (And) and int32 (Max) tensors, fed in
   their own element types from the test set's TensorProto files and compared with its expected outputs. */
static void run_node_test(const char *name)
{
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "/usr/share/libonnx-testdata/data/node/%s", name);
    snprintf(p, sizeof p, "%s/model.onnx", dir);
    superopt_session *s = NULL;
    assert_int_equal(superopt_session_open(p, NULL, &s), SUPEROPT_OK);
    size_t n_in = superopt_session_input_count(s);
    superopt_tensor in[4];
    so_tfile tf[4];
    assert_true(n_in <= 4);
    for (size_t k = 0; k < n_in; k++) {
        superopt_tensor_info t;
        superopt_session_input_info(s, k, &t);
        snprintf(p, sizeof p, "%s/test_data_set_0/input_%zu.pb", dir, k);
        assert_int_equal(so_onnx_tensor_read(p, &tf[k]), SO_OK);
        assert_int_equal((int)t.dtype, tf[k].onnx_type);
        void *typed = malloc(t.bytes + 1);
        so_from_storage(tf[k].onnx_type, tf[k].data, so_shape_numel(&tf[k].shape), typed); /* the file's values in their own type */
        in[k] = (superopt_tensor){t.name, t.dtype, t.rank, t.dims, typed, t.bytes};
    }
    superopt_tensor_info o;
    superopt_session_output_info(s, 0, &o);
    so_tfile want;
    snprintf(p, sizeof p, "%s/test_data_set_0/output_0.pb", dir);
    assert_int_equal(so_onnx_tensor_read(p, &want), SO_OK);
    assert_int_equal((int)o.dtype, want.onnx_type);
    void *got = calloc(1, o.bytes + 1), *exp = calloc(1, o.bytes + 1);
    superopt_tensor out = {o.name, o.dtype, o.rank, o.dims, got, o.bytes};
    assert_int_equal(superopt_session_run(s, in, n_in, &out, 1), SUPEROPT_OK);
    so_from_storage(want.onnx_type, want.data, so_shape_numel(&want.shape), exp);
    assert_memory_equal(got, exp, o.bytes);
    /* the same tensor declared as float32 is refused */
    in[0].dtype = SUPEROPT_FLOAT32;
    assert_int_equal(superopt_session_run(s, in, n_in, &out, 1), SUPEROPT_INVALID_ARGUMENT);
    assert_non_null(strstr(superopt_session_error(s), "given float32"));
    for (size_t k = 0; k < n_in; k++) {
        free(in[k].data);
        free(tf[k].data);
    }
    free(want.data);
    free(got);
    free(exp);
    superopt_session_close(s);
}

static void test_typed_io(void **state)
{
    (void)state;
    if (access("/usr/share/libonnx-testdata/data/node/test_and2d/model.onnx", F_OK) != 0) {
        skip(); /* Debian's libonnx-testdata (make deps) */
        return;
    }
    run_node_test("test_and2d");     /* bool x bool -> bool */
    run_node_test("test_max_int32"); /* int32 -> int32 */
    run_node_test("test_mod_int64_fmod");
}

int main(void)
{
    FILE *probe = fopen("data/deepandwide.onnx", "rb");
    if (!probe) {
        fprintf(stderr, "test_api: run from the repository root (data/ models)\n");
        return 1;
    }
    fclose(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_names),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_config_options),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_hugepages_opt_in),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_same_session_refused),
        cmocka_unit_test(test_two_sessions_concurrently),
        cmocka_unit_test(test_optimize),
        cmocka_unit_test(test_optimize_standard_unchanged),
        cmocka_unit_test(test_typed_io),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
