/* bench.c - the bench command: search strategies, our backend and ONNX Runtime measured side by side. */
#include "bench.h"

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

#include "../kernels/exec.h"
#include "../rules/rule.h"
#include "common.h"
#include "graph.h"
#include "onnx_io.h"

/* ======================================================================================
   small helpers
   ====================================================================================== */

#define MAX_MODELS 32
#define MAX_THREADS 4
#define MAX_ROUNDS 15
#define MAX_SWEEP 12
#define MAX_ALPHA 8
#define MAX_SIZES 6
#define MAX_MEMO 64 /* > 3 + MAX_SIZES + MAX_ALPHA + MAX_SWEEP */

enum { S_NONE = 0, S_GREEDY = 1, S_BACKTRACK = 2, N_STRAT = 3 };
static const char *const strat_name[N_STRAT] = {"none", "greedy", "backtrack"};

/* The seven models of the graph-substitution literature (TASO, PET, Tensat...) as exported by
   data/export_models.py --set full, then DeepAndWide; and the small stand-ins in data/. */
static const char *const full_models[] = {"bert_taso", "resnext50_32x4d", "nasnet_a", "nasrnn_512",
                                          "inception_v3", "squeezenet1_1", "resnet50", "deepandwide"};
static const char *const literature_models[] = {"bert_taso", "resnext50_32x4d", "nasnet_a", "nasrnn_512",
                                                "inception_v3", "squeezenet1_1", "resnet50"};
static const char *const small_models[] = {"deepandwide", "nasrnn", "bert2", "squeezenet", "resnet_small", "lstm2"};
static const char *const small_literature[] = {"nasrnn", "bert2", "squeezenet", "resnet_small"};

/* printf into a fixed buffer; SO_ERR (with a message) if it does not fit. */
static so_status sfmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static so_status sfmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) return so_errorf("path or text too long: '%.60s...'", buf);
    return SO_OK;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 if the two files have the same bytes. */
static int files_equal(const char *a, const char *c)
{
    struct stat sa, sc;
    if (stat(a, &sa) != 0 || stat(c, &sc) != 0 || sa.st_size != sc.st_size) return 0;
    FILE *fa = fopen(a, "rb"), *fc = fopen(c, "rb");
    int eq = fa && fc;
    static char ba[1 << 16], bc[1 << 16];
    while (eq) {
        size_t ka = fread(ba, 1, sizeof ba, fa), kc = fread(bc, 1, sizeof bc, fc);
        if (ka != kc || memcmp(ba, bc, ka)) eq = 0;
        if (ka == 0) break;
    }
    if (fa) fclose(fa);
    if (fc) fclose(fc);
    return eq;
}

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n)
{
    if (n <= 0) return NAN;
    double t[MAX_ROUNDS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void sb_json_str(so_sbuf *b, const char *s)
{
    so_sbuf_printf(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') so_sbuf_printf(b, "\\%c", c);
        else if (c < 0x20) so_sbuf_printf(b, "\\u%04x", c);
        else so_sbuf_printf(b, "%c", c);
    }
    so_sbuf_printf(b, "\"");
}

static void sb_xml_str(so_sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&') so_sbuf_printf(b, "&amp;");
        else if (*s == '<') so_sbuf_printf(b, "&lt;");
        else if (*s == '>') so_sbuf_printf(b, "&gt;");
        else if (*s == '"') so_sbuf_printf(b, "&quot;");
        else so_sbuf_printf(b, "%c", *s);
    }
}

/* A JSON number, or null for NaN/inf. */
static void sb_json_num(so_sbuf *b, double v)
{
    if (isfinite(v)) so_sbuf_printf(b, "%.6g", v);
    else so_sbuf_printf(b, "null");
}

/* One JSON member: sep (the text before the key: "", ", ", ",\n  ") "\"key\": " value. Keys are
   plain identifiers (not escaped). */
static void sb_json_kstr(so_sbuf *b, const char *sep, const char *key, const char *s)
{
    so_sbuf_printf(b, "%s\"%s\": ", sep, key);
    sb_json_str(b, s);
}

static void sb_json_knum(so_sbuf *b, const char *sep, const char *key, double v)
{
    so_sbuf_printf(b, "%s\"%s\": ", sep, key);
    sb_json_num(b, v);
}

/* Removes a directory tree that this command created (files and subdirectories). */
static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[PATH_MAX];
            if (sfmt(p, sizeof p, "%s/%s", path, e->d_name) != SO_OK) continue;
            if (is_dir(p)) rm_tree(p);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* ======================================================================================
   a small JSON reader (the optimize report, run --json lines, package.json)
   ====================================================================================== */

typedef enum jkind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jkind;

typedef struct jv {
    jkind kind;
    double num;        /* J_NUM; J_BOOL: 0/1 */
    char *str;         /* J_STR, malloc'd */
    int n;             /* J_ARR, J_OBJ: items */
    char **keys;       /* J_OBJ, malloc'd */
    struct jv *items;  /* J_ARR, J_OBJ, malloc'd */
} jv;

static void jv_free(jv *v)
{
    if (!v) return;
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        jv_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

typedef struct jp {
    const char *p, *end;
} jp;

static void jws(jp *p)
{
    while (p->p < p->end && isspace((unsigned char)*p->p)) p->p++;
}

static int jhex(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static int jstring(jp *p, char **out)
{
    if (p->p >= p->end || *p->p != '"') return -1;
    p->p++;
    so_sbuf b = {0};
    so_sbuf_printf(&b, "%s", "");
    while (p->p < p->end && *p->p != '"') {
        char c = *p->p++;
        if (c != '\\') {
            so_sbuf_printf(&b, "%c", c);
            continue;
        }
        if (p->p >= p->end) break;
        c = *p->p++;
        switch (c) {
        case 'n': so_sbuf_printf(&b, "\n"); break;
        case 't': so_sbuf_printf(&b, "\t"); break;
        case 'r': so_sbuf_printf(&b, "\r"); break;
        case 'b': so_sbuf_printf(&b, "\b"); break;
        case 'f': so_sbuf_printf(&b, "\f"); break;
        case 'u': {
            unsigned u;
            if (p->end - p->p < 4 || jhex(p->p, &u)) goto bad;
            p->p += 4;
            if (u < 0x80) so_sbuf_printf(&b, "%c", (char)u);
            else if (u < 0x800) so_sbuf_printf(&b, "%c%c", (char)(0xc0 | (u >> 6)), (char)(0x80 | (u & 0x3f)));
            else so_sbuf_printf(&b, "%c%c%c", (char)(0xe0 | (u >> 12)), (char)(0x80 | ((u >> 6) & 0x3f)), (char)(0x80 | (u & 0x3f)));
            break;
        }
        default: so_sbuf_printf(&b, "%c", c); break; /* \" \\ \/ */
        }
    }
    if (p->p >= p->end) goto bad;
    p->p++;
    *out = b.s;
    return 0;
bad:
    free(b.s);
    return -1;
}

static int jvalue(jp *p, jv *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > 64) return -1;
    jws(p);
    if (p->p >= p->end) return -1;
    char c = *p->p;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        out->kind = obj ? J_OBJ : J_ARR;
        p->p++;
        jws(p);
        if (p->p < p->end && *p->p == (obj ? '}' : ']')) {
            p->p++;
            return 0;
        }
        int cap = 0;
        for (;;) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 8;
                out->items = so_xrealloc(out->items, (size_t)cap * sizeof *out->items);
                if (obj) out->keys = so_xrealloc(out->keys, (size_t)cap * sizeof *out->keys);
            }
            char *key = NULL;
            if (obj) {
                jws(p);
                if (jstring(p, &key)) return -1;
                jws(p);
                if (p->p >= p->end || *p->p != ':') {
                    free(key);
                    return -1;
                }
                p->p++;
            }
            jv item;
            if (jvalue(p, &item, depth + 1)) {
                free(key);
                jv_free(&item);
                return -1;
            }
            if (obj) out->keys[out->n] = key;
            out->items[out->n++] = item;
            jws(p);
            if (p->p < p->end && *p->p == ',') {
                p->p++;
                continue;
            }
            if (p->p < p->end && *p->p == (obj ? '}' : ']')) {
                p->p++;
                return 0;
            }
            return -1;
        }
    }
    if (c == '"') {
        out->kind = J_STR;
        return jstring(p, &out->str);
    }
    if (!strncmp(p->p, "null", 4)) {
        p->p += 4;
        out->kind = J_NULL;
        return 0;
    }
    if (!strncmp(p->p, "true", 4) || !strncmp(p->p, "false", 5)) {
        out->kind = J_BOOL;
        out->num = c == 't';
        p->p += c == 't' ? 4 : 5;
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char *e;
        out->kind = J_NUM;
        out->num = strtod(p->p, &e);
        if (e == p->p || e > p->end) return -1;
        p->p = e;
        return 0;
    }
    return -1;
}

/* Parses NUL-terminated text holding one JSON value. */
static so_status jparse(const char *text, const char *what, jv *out)
{
    jp p = {text, text + strlen(text)};
    if (jvalue(&p, out, 0) != 0) {
        jv_free(out);
        return so_errorf("%s: not valid JSON", what);
    }
    jws(&p);
    if (p.p != p.end) {
        jv_free(out);
        return so_errorf("%s: trailing text after the JSON value", what);
    }
    return SO_OK;
}

static const jv *jget(const jv *o, const char *key)
{
    if (!o || o->kind != J_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}

/* A required number (null allowed when allow_null: gives NaN). */
static so_status jnum(const jv *o, const char *key, const char *what, int allow_null, double *out)
{
    const jv *v = jget(o, key);
    if (!v) return so_errorf("%s: key '%s' is missing", what, key);
    if (v->kind == J_NULL && allow_null) {
        *out = NAN;
        return SO_OK;
    }
    if (v->kind != J_NUM) return so_errorf("%s: key '%s' is not a number", what, key);
    *out = v->num;
    return SO_OK;
}

/* ======================================================================================
   subprocesses
   ====================================================================================== */

/* Set by SIGINT/SIGTERM: the running child is killed, no new step starts, the work directory is removed. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct proc {
    int code;          /* exit status; -1 if killed by a signal */
    int timed_out;
    double seconds;    /* wall time */
    char *out, *err;   /* captured stdout / stderr, NUL-terminated, malloc'd */
} proc;

static void proc_free(proc *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* The last non-empty line of s, trimmed, into buf. */
static void last_line(const char *s, char *buf, size_t n)
{
    buf[0] = 0;
    if (!s) return;
    const char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) end--;
    const char *beg = end;
    while (beg > s && beg[-1] != '\n') beg--;
    snprintf(buf, n, "%.*s", (int)(end - beg), beg);
}

static void drain(int fd, so_sbuf *b, int *open_)
{
    char tmp[8192];
    ssize_t k = read(fd, tmp, sizeof tmp);
    if (k > 0) so_sbuf_printf(b, "%.*s", (int)k, tmp);
    else if (k == 0 || (errno != EINTR && errno != EAGAIN)) *open_ = 0;
}

/* Runs argv (argv[0] is a path or a name looked up in PATH) with stdin from /dev/null,
   capturing stdout and stderr; kills it after timeout_s seconds. Fails only when the process
   cannot be started; a non-zero exit is reported in r->code (127: could not execute). */
static so_status run_proc(char *const *argv, double timeout_s, proc *r)
{
    memset(r, 0, sizeof *r);
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe(po) != 0 || pipe(pe) != 0) {
        if (po[0] >= 0) {
            close(po[0]);
            close(po[1]);
        }
        return so_errorf("cannot create a pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    double t0 = so_now();
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        return so_errorf("cannot start '%s': %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        execvp(argv[0], argv);
        dprintf(2, "cannot execute '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    so_sbuf out = {0}, err = {0};
    so_sbuf_printf(&out, "%s", "");
    so_sbuf_printf(&err, "%s", "");
    int oo = 1, eo = 1;
    while (oo || eo) {
        double left = timeout_s - (so_now() - t0);
        if (left <= 0 || interrupted) {
            r->timed_out = !interrupted;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd fds[2];
        int nf = 0, io_ = -1, ie = -1;
        if (oo) {
            fds[nf] = (struct pollfd){.fd = po[0], .events = POLLIN};
            io_ = nf++;
        }
        if (eo) {
            fds[nf] = (struct pollfd){.fd = pe[0], .events = POLLIN};
            ie = nf++;
        }
        int k = poll(fds, (nfds_t)nf, (int)(left * 1000 < 1000 ? left * 1000 + 1 : 1000));
        if (k < 0 && errno != EINTR) break;
        if (k <= 0) continue;
        if (io_ >= 0 && fds[io_].revents) drain(po[0], &out, &oo);
        if (ie >= 0 && fds[ie].revents) drain(pe[0], &err, &eo);
    }
    close(po[0]);
    close(pe[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->seconds = so_now() - t0;
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->out = out.s;
    r->err = err.s;
    return SO_OK;
}

/* One-line description of a failed process into buf. */
static void proc_failure(const proc *r, const char *what, double timeout_s, char *buf, size_t n)
{
    char line[300];
    last_line(r->err, line, sizeof line);
    if (r->timed_out) snprintf(buf, n, "%s: killed after %.0f s (timeout)", what, timeout_s);
    else if (r->code == -1) snprintf(buf, n, "%s: killed by a signal%s%s", what, line[0] ? ": " : "", line);
    else snprintf(buf, n, "%s: exit %d: %s", what, r->code, line[0] ? line : "(no message)");
}

/* ======================================================================================
   the bench state
   ====================================================================================== */

/* One optimize invocation. */
typedef struct spec {
    int search;
    int flops;             /* 1: --cost flops whatever the bench's cost model (the deterministic cross-check) */
    double alpha;
    long budget;
    double time_limit;
    const char *rules;     /* NULL: the bench's rule set */
    char rules_id[32];     /* identifies the rule set for reuse ("all", "k<=3") */
    char tag[32];          /* file name part */
} spec;

typedef struct opt_res {
    spec sp;
    int ok;
    char err[512];
    char out[PATH_MAX], report[PATH_MAX];
    double cost_before, cost_after, lat_before, lat_after, search_s, wall_s;
    double alpha, time_limit;
    long long explored, budget;
    int nodes_before, nodes; /* the optimizer's graph (report), -1 if not reported */
    int onnx_nodes;          /* operators in the written ONNX file (fused epilogues come apart) */
    double gflop;
    int rules_total, rules_distinct;
    char *rules_json;      /* the report's rules_applied object, compact (malloc'd) */
    char rules_top[96];    /* the most applied rules, e.g. "12x4, 7x2, +3 more" */
    char stopped_by[16];
    char rules_file[PATH_MAX];
} opt_res;

/* One latency measurement series (the same command in every round). */
typedef struct meas {
    int used, ort, threads, iters, warmup;
    const char *model;     /* path */
    char label[64];
    int n;
    double round_ms[MAX_ROUNDS];
    double ms, lo, hi;     /* median of the round medians, smallest, largest; NaN if failed */
    char err[400];
} meas;

typedef struct abl {
    char label[24];        /* "k<=3", "alpha 1.05", "budget 100" */
    double x;              /* the parameter */
    int n_rules;           /* rule-size ablation: rules in the set */
    opt_res *r;
} abl;

typedef struct model_res {
    char name[64];
    char path[PATH_MAX];
    int literature;
    int ablate;
    opt_res *strat[N_STRAT];
    opt_res *fstrat[N_STRAT]; /* greedy and backtrack under the flops cost model (NULL if not run) */
    int same_as[N_STRAT];  /* earliest strategy whose optimized model is byte-identical (itself if none) */
    int ort_as[N_STRAT];   /* the same among the strategies measured under ONNX Runtime (greedy, backtrack) */
    meas ours[N_STRAT][MAX_THREADS];
    meas ort_orig, ort[N_STRAT];
    double est_ms;
    int rounds;            /* latency rounds for this model */
    abl size[MAX_SIZES], alpha[MAX_ALPHA], budget[MAX_SWEEP];
    int n_size, n_alpha, n_budget;
    opt_res *memo[MAX_MEMO];
    int n_memo;
    double seconds;
} model_res;

typedef struct bench {
    char self[PATH_MAX], node[PATH_MAX], ort_script[PATH_MAX];
    char ort_version[32], node_version[32], git[64];
    char work[PATH_MAX], cache[PATH_MAX];
    char rules_file[PATH_MAX];   /* resolved rule set used by the ablation filter */
    int keep;
    const char *json_path, *svg_path, *rules, *cost, *abl_names;
    int rounds;
    double target_s, proc_timeout;
    int threads[MAX_THREADS], n_threads, ort_threads, no_ort, allow_unverified, quiet, ablations;
    int flops_check;             /* also search greedy/backtrack with --cost flops */
    double alpha, time_limit, sweep_time_limit;
    long budget;
    long sweep[MAX_SWEEP];
    int n_sweep;
    double alphas[MAX_ALPHA];
    int n_alphas;
    int sizes[MAX_SIZES], n_sizes;
    model_res *models;
    int n_models;
    int small_set;
    int failures;
    char first_failure[512];
    double t_start, t_total;
    char cmdline[2048];
    char date[64];
    char cpu[160], os[160];
    int ncpu;
    double mem_gb;
    char load_start[64], load_end[64]; /* /proc/loadavg: 1, 5, 15 minutes */
    int n_opt_runs, n_meas_runs;
} bench;

static void note(const bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const bench *b, const char *fmt, ...)
{
    if (b->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench [%5.0fs] ", so_now() - b->t_start);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void record_failure(bench *b, const char *msg)
{
    if (!b->failures) snprintf(b->first_failure, sizeof b->first_failure, "%s", msg);
    b->failures++;
    if (!b->quiet) fprintf(stderr, "bench: FAILED: %s\n", msg);
}

/* ======================================================================================
   environment: executable, node, ONNX Runtime, machine
   ====================================================================================== */

/* First existing file among rel relative to the working directory, then the executable's
   directory and its parents (the repository when run as BUILD/superopt). */
static int find_repo_file(const bench *b, const char *rel, char *out, size_t n)
{
    if (is_file(rel) || is_dir(rel)) return sfmt(out, n, "%s", rel) == SO_OK;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", b->self);
    for (int up = 0; up < 3; up++) {
        char *s = strrchr(dir, '/');
        if (!s) break;
        *s = 0;
        char p[PATH_MAX];
        if (sfmt(p, sizeof p, "%s/%s", dir, rel) == SO_OK && (is_file(p) || is_dir(p))) return sfmt(out, n, "%s", p) == SO_OK;
    }
    return 0;
}

static int find_in_path(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t len = e ? (size_t)(e - path) : strlen(path);
        char p[PATH_MAX];
        if (len > 0 && sfmt(p, sizeof p, "%.*s/%s", (int)len, path, name) == SO_OK && access(p, X_OK) == 0 && is_file(p))
            return sfmt(out, n, "%s", p) == SO_OK;
        path += len + (e ? 1 : 0);
    }
    return 0;
}

/* The 1/5/15-minute load averages, e.g. "0.52 0.61 0.70". */
static void load_avg(char *buf, size_t n)
{
    char *text = NULL;
    snprintf(buf, n, "?");
    if (so_read_file("/proc/loadavg", &text, NULL) != SO_OK) return;
    double a = 0, c = 0, d = 0;
    if (sscanf(text, "%lf %lf %lf", &a, &c, &d) == 3) snprintf(buf, n, "%.2f %.2f %.2f", a, c, d);
    free(text);
}

static void machine_info(bench *b)
{
    load_avg(b->load_start, sizeof b->load_start);
    snprintf(b->cpu, sizeof b->cpu, "unknown CPU");
    b->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char *text = NULL;
    if (so_read_file("/proc/cpuinfo", &text, NULL) == SO_OK) {
        char *p = strstr(text, "model name");
        if (p && (p = strchr(p, ':'))) {
            p++;
            while (*p == ' ' || *p == '\t') p++;
            char *e = strchr(p, '\n');
            snprintf(b->cpu, sizeof b->cpu, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
        }
        free(text);
    }
    if (so_read_file("/proc/meminfo", &text, NULL) == SO_OK) {
        char *p = strstr(text, "MemTotal:");
        if (p) b->mem_gb = strtod(p + 9, NULL) / 1048576.0;
        free(text);
    }
    struct utsname u;
    if (uname(&u) == 0) (void)sfmt(b->os, sizeof b->os, "%s %s %s", u.sysname, u.release, u.machine);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(b->date, sizeof b->date, "%Y-%m-%d %H:%M UTC", &tmv);
    /* the commit measured, if this is a git checkout */
    char *gargv[] = {"git", "rev-parse", "--short", "HEAD", NULL};
    proc r;
    snprintf(b->git, sizeof b->git, "unknown");
    if (run_proc(gargv, 10, &r) == SO_OK) {
        if (r.code == 0) {
            last_line(r.out, b->git, sizeof b->git);
            char *dargv[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
            proc d;
            if (run_proc(dargv, 10, &d) == SO_OK) {
                if (d.code == 0 && d.out[0] && strlen(b->git) + 7 < sizeof b->git) strcat(b->git, "+dirty");
                proc_free(&d);
            }
        }
        proc_free(&r);
    }
}

/* Locates node, the ORT harness and the installed onnxruntime-node. */
static so_status find_ort(bench *b)
{
    if (!find_in_path("node", b->node, sizeof b->node))
        return so_errorf("node not found in PATH: ONNX Runtime runs under Node.js (install nodejs, or pass --no-ort)");
    if (!find_repo_file(b, "tools/ort/ort_run.js", b->ort_script, sizeof b->ort_script))
        return so_errorf("tools/ort/ort_run.js not found (run from the repository root, or pass --no-ort)");
    char dir[PATH_MAX], pkg[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", b->ort_script);
    char *s = strrchr(dir, '/');
    if (s) *s = 0;
    if (sfmt(pkg, sizeof pkg, "%s/node_modules/onnxruntime-node/package.json", dir) != SO_OK) return SO_ERR;
    char *text = NULL;
    if (so_read_file(pkg, &text, NULL) != SO_OK)
        return so_errorf("%s: ONNX Runtime is not installed (run 'make %s' or 'cd %s && npm ci --ignore-scripts'; or pass --no-ort)",
                         pkg, "tools/ort/node_modules/onnxruntime-node/package.json", dir);
    jv v;
    snprintf(b->ort_version, sizeof b->ort_version, "?");
    if (jparse(text, pkg, &v) == SO_OK) {
        const jv *ver = jget(&v, "version");
        if (ver && ver->kind == J_STR) snprintf(b->ort_version, sizeof b->ort_version, "%s", ver->str);
        jv_free(&v);
    }
    free(text);
    char *argv[] = {b->node, "--version", NULL};
    proc r;
    if (run_proc(argv, 30, &r) != SO_OK) return SO_ERR;
    int ok = r.code == 0;
    if (ok) last_line(r.out, b->node_version, sizeof b->node_version);
    proc_free(&r);
    if (!ok) return so_errorf("%s --version failed: Node.js does not run (pass --no-ort to skip ONNX Runtime)", b->node);
    return SO_OK;
}

/* ======================================================================================
   optimize runs
   ====================================================================================== */

static void opt_free(opt_res *r)
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
static void rules_applied_text(const jv *o, opt_res *r)
{
    so_sbuf s = {0};
    so_sbuf_printf(&s, "{");
    r->rules_total = r->rules_distinct = 0;
    for (int i = 0; i < o->n; i++) {
        double c = o->items[i].kind == J_NUM ? o->items[i].num : 0;
        so_sbuf_printf(&s, "%s", i ? ", " : "");
        sb_json_str(&s, o->keys[i]);
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
            if (o->items[i].kind != J_NUM || o->items[i].num <= 0 || i == used[0] || i == used[1]) continue;
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
    jv v = {0};
    so_status st = SO_ERR;
    if (so_read_file(path, &text, NULL) != SO_OK) goto done;
    if (jparse(text, path, &v) != SO_OK) goto done;
    if (v.kind != J_OBJ) {
        so_errorf("%s: not a JSON object", path);
        goto done;
    }
    double ge;
    if (jnum(&v, "cost_before", path, 0, &r->cost_before) || jnum(&v, "cost_after", path, 0, &r->cost_after) ||
        jnum(&v, "latency_before_ms", path, 1, &r->lat_before) || jnum(&v, "latency_after_ms", path, 1, &r->lat_after) ||
        jnum(&v, "search_seconds", path, 0, &r->search_s) || jnum(&v, "graphs_explored", path, 0, &ge))
        goto done;
    r->explored = (long long)ge;
    const jv *ra = jget(&v, "rules_applied");
    if (!ra) {
        so_errorf("%s: key 'rules_applied' is missing", path);
        goto done;
    }
    if (ra->kind != J_OBJ) {
        so_errorf("%s: key 'rules_applied' is not an object", path);
        goto done;
    }
    rules_applied_text(ra, r);
    /* optional keys */
    const jv *x;
    r->nodes_before = (x = jget(&v, "nodes_before")) && x->kind == J_NUM ? (int)x->num : -1;
    r->nodes = (x = jget(&v, "nodes_after")) && x->kind == J_NUM ? (int)x->num : -1;
    r->alpha = (x = jget(&v, "alpha")) && x->kind == J_NUM ? x->num : NAN;
    r->budget = (x = jget(&v, "budget")) && x->kind == J_NUM ? (long long)x->num : -1;
    r->time_limit = (x = jget(&v, "time_limit")) && x->kind == J_NUM ? x->num : NAN;
    if ((x = jget(&v, "stopped_by")) && x->kind == J_STR) snprintf(r->stopped_by, sizeof r->stopped_by, "%s", x->str);
    st = SO_OK;
done:
    jv_free(&v);
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
static opt_res *optimize(bench *b, model_res *m, const spec *sp)
{
    for (int i = 0; i < m->n_memo; i++)
        if (spec_eq(&m->memo[i]->sp, sp)) return m->memo[i];
    if (interrupted) {
        opt_res *x = so_xcalloc(1, sizeof *x);
        x->sp = *sp;
        snprintf(x->err, sizeof x->err, "interrupted");
        assert(m->n_memo < MAX_MEMO);
        m->memo[m->n_memo++] = x;
        return x;
    }
    opt_res *r = so_xcalloc(1, sizeof *r);
    r->sp = *sp;
    r->cost_before = r->cost_after = r->lat_before = r->lat_after = r->search_s = r->gflop = NAN;
    r->nodes = r->nodes_before = r->onnx_nodes = -1;
    assert(m->n_memo < MAX_MEMO); /* 3 strategies + at most MAX_SIZES + MAX_ALPHA + MAX_SWEEP ablation runs */
    m->memo[m->n_memo++] = r;
    int idx = b->n_opt_runs++;
    char what[200];
    snprintf(what, sizeof what, "%s: optimize --search %s (%s)", m->name, strat_name[sp->search], sp->tag);
    if (sfmt(r->out, sizeof r->out, "%s/%s.%d.%s.onnx", b->work, m->name, idx, sp->tag) != SO_OK ||
        sfmt(r->report, sizeof r->report, "%s/%s.%d.%s.json", b->work, m->name, idx, sp->tag) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        record_failure(b, r->err);
        return r;
    }
    char a_alpha[32], a_budget[32], a_tl[32];
    fmt_num(a_alpha, sizeof a_alpha, sp->alpha);
    snprintf(a_budget, sizeof a_budget, "%ld", sp->budget);
    fmt_num(a_tl, sizeof a_tl, sp->time_limit);
    char *argv[32];
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
    argv[k] = NULL;

    proc p;
    if (run_proc(argv, b->proc_timeout, &p) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        record_failure(b, r->err);
        return r;
    }
    r->wall_s = p.seconds;
    if (p.code != 0 || p.timed_out) {
        proc_failure(&p, what, b->proc_timeout, r->err, sizeof r->err);
        proc_free(&p);
        record_failure(b, r->err);
        return r;
    }
    proc_free(&p);
    if (parse_report(r->report, r) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: %s", what, so_error());
        record_failure(b, r->err);
        return r;
    }
    if (model_stats(r->out, &r->onnx_nodes, &r->gflop) != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s: the optimized model does not load: %s", what, so_error());
        record_failure(b, r->err);
        return r;
    }
    if (r->nodes < 0) r->nodes = r->onnx_nodes;
    r->ok = 1;
    note(b, "%s: %s%s%s: cost %.4g -> %.4g, %d nodes, search %.2f s (%lld graphs%s%s), %d rewrites, wall %.1f s", m->name,
         strat_name[sp->search], sp->tag[0] && strcmp(sp->tag, strat_name[sp->search]) ? " " : "",
         sp->tag[0] && strcmp(sp->tag, strat_name[sp->search]) ? sp->tag : "", r->cost_before, r->cost_after, r->nodes,
         r->search_s, r->explored, r->stopped_by[0] ? ", stopped by " : "", r->stopped_by, r->rules_total, r->wall_s);
    return r;
}

/* ======================================================================================
   latency measurements, interleaved in rounds
   ====================================================================================== */

static void meas_init(meas *x, int ort, const char *model, int threads, const char *label)
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
static so_status measure_once(bench *b, const meas *x, int iters, int warmup, double *ms)
{
    char a_it[16], a_wu[16], a_th[16];
    snprintf(a_it, sizeof a_it, "%d", iters);
    snprintf(a_wu, sizeof a_wu, "%d", warmup);
    snprintf(a_th, sizeof a_th, "%d", x->threads);
    char *argv[20];
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
    argv[k] = NULL;
    b->n_meas_runs++;
    proc p;
    if (run_proc(argv, b->proc_timeout, &p) != SO_OK) return SO_ERR;
    char line[1024];
    so_status st = SO_ERR;
    if (p.code != 0 || p.timed_out) {
        char msg[512];
        proc_failure(&p, x->ort ? "ONNX Runtime" : "superopt run", b->proc_timeout, msg, sizeof msg);
        so_errorf("%s", msg);
        goto done;
    }
    last_line(p.out, line, sizeof line);
    jv v;
    if (jparse(line, x->ort ? "ort_run.js --json output" : "superopt run --json output", &v) != SO_OK) goto done;
    st = jnum(&v, "median_ms", x->ort ? "ort_run.js --json output" : "superopt run --json output", 0, ms);
    jv_free(&v);
done:
    proc_free(&p);
    return st;
}

/* Iterations so that one measurement takes about target_s of timed work. */
static void pick_iters(const bench *b, double est_ms, int *iters, int *warmup)
{
    double it = est_ms > 0 ? b->target_s * 1000.0 / est_ms : 10;
    *iters = it < 1 ? 1 : it > 1000 ? 1000 : (int)it;
    *warmup = *iters / 10 < 1 ? 1 : *iters / 10 > 20 ? 20 : *iters / 10;
    if (est_ms > 2000) *warmup = 0; /* multi-second models: the untimed first run would double the cost */
}

/* Runs every series in xs once per round, in the same order each round (A B C A B C ...),
   and keeps the median of the per-round medians. */
static void measure_rounds(bench *b, model_res *m, meas **xs, int n)
{
    for (int r = 0; r < m->rounds; r++) {
        for (int j = 0; j < n; j++) {
            meas *x = xs[r % 2 ? n - 1 - j : j]; /* A B C, C B A, ...: cancels a linear drift */
            if (x->err[0] || interrupted) continue;
            double ms;
            if (measure_once(b, x, x->iters, x->warmup, &ms) != SO_OK) {
                snprintf(x->err, sizeof x->err, "%s: %s: %s", m->name, x->label, so_error());
                record_failure(b, x->err);
                continue;
            }
            x->round_ms[x->n++] = ms;
        }
        note(b, "%s: measured round %d/%d", m->name, r + 1, m->rounds);
    }
    for (int i = 0; i < n; i++) {
        meas *x = xs[i];
        if (x->err[0] || !x->n) continue;
        x->ms = median_of(x->round_ms, x->n);
        x->lo = x->hi = x->round_ms[0];
        for (int k = 1; k < x->n; k++) {
            if (x->round_ms[k] < x->lo) x->lo = x->round_ms[k];
            if (x->round_ms[k] > x->hi) x->hi = x->round_ms[k];
        }
    }
}

/* ======================================================================================
   ablations
   ====================================================================================== */

static int rule_size(const so_rule *r)
{
    return r->src.n_nodes > r->dst.n_nodes ? r->src.n_nodes : r->dst.n_nodes;
}

/* Writes the rule subsets "at most k operators per pattern" once per bench; *n_rules gets
   each subset's size. Returns SO_ERR with a message if the rule set cannot be read. */
static so_status write_rule_subsets(bench *b, char paths[][PATH_MAX], int *n_rules, int *max_size)
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
        (void)sfmt(sub.header, sizeof sub.header, "bench subset of %s: rules with at most %d operators per pattern",
                   b->rules_file, b->sizes[s]); /* may truncate: a comment only */
        for (int32_t i = 0; i < rs.n_rules; i++)
            if (rule_size(&rs.rules[i]) <= b->sizes[s]) so_ruleset_push(&sub, &rs.rules[i]);
        n_rules[s] = sub.n_rules;
        if (sfmt(paths[s], PATH_MAX, "%s/rules.max%d.rules", b->work, b->sizes[s]) != SO_OK) goto done;
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
        a->r = optimize(b, m, &sp);
    }
    /* alpha */
    for (int i = 0; i < b->n_alphas; i++) {
        abl *a = &m->alpha[m->n_alpha++];
        snprintf(a->label, sizeof a->label, "alpha %g", b->alphas[i]);
        a->x = b->alphas[i];
        spec sp = base;
        sp.alpha = b->alphas[i];
        snprintf(sp.tag, sizeof sp.tag, "alpha%g", b->alphas[i]);
        a->r = optimize(b, m, &sp);
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
        a->r = optimize(b, m, &sp);
    }
}

/* ======================================================================================
   one model
   ====================================================================================== */

static void bench_model(bench *b, model_res *m, char subset_paths[][PATH_MAX], const int *subset_n, int total_rules)
{
    double t0 = so_now();
    note(b, "%s: %s", m->name, m->path);
    for (int s = 0; s < N_STRAT; s++) {
        spec sp = {.search = s, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
        snprintf(sp.rules_id, sizeof sp.rules_id, "all");
        snprintf(sp.tag, sizeof sp.tag, "%s", strat_name[s]);
        m->strat[s] = optimize(b, m, &sp);
    }
    if (b->flops_check)
        for (int s = S_GREEDY; s < N_STRAT; s++) {
            spec sp = {.search = s, .flops = 1, .alpha = b->alpha, .budget = b->budget, .time_limit = b->time_limit};
            snprintf(sp.rules_id, sizeof sp.rules_id, "all");
            snprintf(sp.tag, sizeof sp.tag, "flops-%s", strat_name[s]);
            m->fstrat[s] = optimize(b, m, &sp);
        }
    if (m->ablate) run_ablations(b, m, subset_paths, subset_n, total_rules);

    /* iterations per measurement from the optimizer's own latency of the original */
    m->est_ms = NAN;
    for (int s = 0; s < N_STRAT && !isfinite(m->est_ms); s++)
        if (m->strat[s]->ok && isfinite(m->strat[s]->lat_before) && m->strat[s]->lat_before > 0) m->est_ms = m->strat[s]->lat_before;
    if (!isfinite(m->est_ms)) {
        meas cal;
        meas_init(&cal, 0, m->path, 1, "calibration");
        double ms;
        if (measure_once(b, &cal, 1, 1, &ms) == SO_OK) m->est_ms = ms;
    }
    int iters, warmup;
    pick_iters(b, isfinite(m->est_ms) ? m->est_ms : 0, &iters, &warmup);
    /* rounds: as given, else 5 for models under 1 s per inference and 3 above */
    m->rounds = b->rounds > 0 ? b->rounds : isfinite(m->est_ms) && m->est_ms > 1000 ? 3 : 5;

    /* byte-identical results are measured once (identical graphs, identical figures) */
    for (int s = 0; s < N_STRAT; s++) {
        m->same_as[s] = s;
        for (int t = 0; t < s && m->same_as[s] == s; t++)
            if (m->strat[s]->ok && m->strat[t]->ok && m->same_as[t] == t && files_equal(m->strat[s]->out, m->strat[t]->out))
                m->same_as[s] = t;
        m->ort_as[s] = s;
        for (int t = S_GREEDY; t < s && m->ort_as[s] == s; t++)
            if (m->same_as[t] == m->same_as[s]) m->ort_as[s] = t;
    }

    meas *xs[N_STRAT * MAX_THREADS + N_STRAT + 1];
    int n = 0;
    for (int t = 0; t < b->n_threads; t++)
        for (int s = 0; s < N_STRAT; s++) {
            if (!m->strat[s]->ok || m->same_as[s] != s) continue;
            char label[64];
            snprintf(label, sizeof label, "ours %s %dT", strat_name[s], b->threads[t]);
            meas_init(&m->ours[s][t], 0, m->strat[s]->out, b->threads[t], label);
            m->ours[s][t].iters = iters;
            m->ours[s][t].warmup = warmup;
            xs[n++] = &m->ours[s][t];
        }
    if (!b->no_ort) {
        meas_init(&m->ort_orig, 1, m->path, b->ort_threads, "ORT original");
        m->ort_orig.iters = iters;
        m->ort_orig.warmup = warmup;
        xs[n++] = &m->ort_orig;
        for (int s = S_GREEDY; s < N_STRAT; s++) {
            if (!m->strat[s]->ok || m->ort_as[s] != s) continue;
            char label[64];
            snprintf(label, sizeof label, "ORT ours %s", strat_name[s]);
            meas_init(&m->ort[s], 1, m->strat[s]->out, b->ort_threads, label);
            m->ort[s].iters = iters;
            m->ort[s].warmup = warmup;
            xs[n++] = &m->ort[s];
        }
    }
    for (int s = 1; s < N_STRAT; s++)
        if (m->same_as[s] != s) note(b, "%s: %s gives the same model as %s: measured once", m->name, strat_name[s], strat_name[m->same_as[s]]);
    note(b, "%s: measuring %d variants x %d rounds, %d iterations + %d warm-up each (estimate %.3g ms per run)", m->name, n,
         m->rounds, iters, warmup, m->est_ms);
    measure_rounds(b, m, xs, n);
    for (int s = 0; s < N_STRAT; s++) {
        int t = m->same_as[s];
        if (t != s)
            for (int k = 0; k < b->n_threads; k++) m->ours[s][k] = m->ours[t][k];
        if (s >= S_GREEDY && m->ort_as[s] != s) m->ort[s] = m->ort[m->ort_as[s]];
    }

    if (!b->keep) /* the optimized models are not needed any more (bert_taso's are 400 MB each) */
        for (int i = 0; i < m->n_memo; i++) unlink(m->memo[i]->out);
    m->seconds = so_now() - t0;
    note(b, "%s: done in %.0f s", m->name, m->seconds);
}

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
    return median_of(q, a->n);
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

static int is_ablation_done(const bench *b)
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

static void md_report(const bench *b, so_sbuf *o)
{
    char x1[32], x2[32], x3[32], x4[32], x6[32];
    so_sbuf_printf(o, "# superopt bench\n\n");
    so_sbuf_printf(o, "- Machine: %s, %d logical CPUs, %.1f GB RAM, %s; load average (1/5/15 min) %s at the start, %s at the end\n",
              b->cpu, b->ncpu, b->mem_gb, b->os, b->load_start, b->load_end);
    so_sbuf_printf(o, "- superopt commit %s; ONNX Runtime %s (onnxruntime-node, Node.js %s)\n", b->git,
              b->no_ort ? "not run" : b->ort_version, b->no_ort ? "-" : b->node_version);
    so_sbuf_printf(o, "- Date: %s; total bench time %.1f min (%d optimize runs, %d timed runs)\n", b->date, b->t_total / 60,
              b->n_opt_runs, b->n_meas_runs);
    so_sbuf_printf(o, "- Command: `%s`\n", b->cmdline);
    so_sbuf_printf(o, "- Search settings: cost model `%s` (one cost cache shared by every run of this bench, so equal operator "
                 "configurations cost the same in every strategy), alpha %g, budget %ld, time limit %g s per search, "
                 "rules %s\n",
              b->cost, b->alpha, b->budget, b->time_limit, b->rules_file);
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
    md_cols(&h, "model|search|>nodes|>cost (%s)|>GFLOP|>search (s)|>graphs|>rewrites|rules applied (id×count)",
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
            so_sbuf_printf(o, " %d | %s | %s | %.2f | %lld | %d | %s |", r->nodes, fms(x1, sizeof x1, r->cost_after),
                      fms(x2, sizeof x2, r->gflop), r->search_s, r->explored, r->rules_total, r->rules_top[0] ? r->rules_top : "–");
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

    if (is_ablation_done(b)) {
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

    /* acceptance summary */
    so_sbuf_printf(o, "## Acceptance checks\n\n");
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
        sb_json_kstr(o, ", ", "error", r->err);
        so_sbuf_printf(o, "}");
        return;
    }
    so_sbuf_printf(o, ", \"nodes\": %d, \"nodes_before\": %d, \"onnx_nodes\": %d", r->nodes, r->nodes_before, r->onnx_nodes);
    sb_json_knum(o, ", ", "gflop", r->gflop);
    sb_json_knum(o, ", ", "cost_before", r->cost_before);
    sb_json_knum(o, ", ", "cost_after", r->cost_after);
    sb_json_knum(o, ", ", "latency_before_ms", r->lat_before);
    sb_json_knum(o, ", ", "latency_after_ms", r->lat_after);
    sb_json_knum(o, ", ", "search_seconds", r->search_s);
    sb_json_knum(o, ", ", "wall_seconds", r->wall_s);
    so_sbuf_printf(o, ", \"graphs_explored\": %lld", r->explored);
    sb_json_kstr(o, ", ", "stopped_by", r->stopped_by);
    sb_json_knum(o, ", ", "alpha", r->alpha);
    so_sbuf_printf(o, ", \"budget\": %lld", r->budget);
    sb_json_knum(o, ", ", "time_limit", r->time_limit);
    so_sbuf_printf(o, ", \"rewrites\": %d, \"rules_applied\": %s}", r->rules_total, r->rules_json ? r->rules_json : "{}");
}

static void json_meas(so_sbuf *o, const meas *x)
{
    if (!x->used) {
        so_sbuf_printf(o, "null");
        return;
    }
    sb_json_knum(o, "{", "median_ms", x->ms);
    sb_json_knum(o, ", ", "min_round_ms", x->lo);
    sb_json_knum(o, ", ", "max_round_ms", x->hi);
    so_sbuf_printf(o, ", \"iters\": %d, \"warmup\": %d, \"threads\": %d, \"rounds_ms\": [", x->iters, x->warmup, x->threads);
    for (int k = 0; k < x->n; k++) {
        so_sbuf_printf(o, "%s", k ? ", " : "");
        sb_json_num(o, x->round_ms[k]);
    }
    so_sbuf_printf(o, "]");
    if (x->err[0]) sb_json_kstr(o, ", ", "error", x->err);
    so_sbuf_printf(o, "}");
}

static void json_abl(so_sbuf *o, const char *key, const abl *as, int n, int with_rules, int first)
{
    so_sbuf_printf(o, "%s\n        \"%s\": [", first ? "" : ",", key);
    for (int k = 0; k < n; k++) {
        sb_json_knum(o, k ? ",\n        {" : "\n        {", "setting", as[k].x);
        if (with_rules) so_sbuf_printf(o, ", \"rules\": %d", as[k].n_rules);
        so_sbuf_printf(o, ", \"result\": ");
        json_opt(o, as[k].r);
        so_sbuf_printf(o, "}");
    }
    so_sbuf_printf(o, "]");
}

static void json_report(const bench *b, so_sbuf *o)
{
    sb_json_kstr(o, "{\n  \"machine\": {", "cpu", b->cpu);
    so_sbuf_printf(o, ", \"logical_cpus\": %d, \"memory_gb\": %.1f", b->ncpu, b->mem_gb);
    sb_json_kstr(o, ", ", "os", b->os);
    sb_json_kstr(o, ", ", "load_average_start", b->load_start);
    sb_json_kstr(o, ", ", "load_average_end", b->load_end);
    sb_json_kstr(o, "},\n  ", "date", b->date);
    sb_json_kstr(o, ",\n  ", "commit", b->git);
    sb_json_kstr(o, ",\n  ", "command", b->cmdline);
    if (b->no_ort) so_sbuf_printf(o, ",\n  \"onnxruntime\": null");
    else {
        sb_json_kstr(o, ",\n  ", "onnxruntime", b->ort_version);
        sb_json_kstr(o, ",\n  ", "node", b->node_version);
    }
    sb_json_kstr(o, ",\n  \"settings\": {", "cost", b->cost);
    so_sbuf_printf(o, ", \"alpha\": %g, \"budget\": %ld, \"time_limit\": %g, \"rounds\": %d, \"target_seconds\": %g, "
                 "\"ort_threads\": %d, \"ort_opt\": \"all\", \"flops_check\": %s, \"small_set\": %s",
              b->alpha, b->budget, b->time_limit, b->rounds, b->target_s, b->ort_threads, b->flops_check ? "true" : "false",
              b->small_set ? "true" : "false");
    sb_json_kstr(o, ", ", "rules", b->rules_file);
    so_sbuf_printf(o, ", \"threads\": [");
    for (int t = 0; t < b->n_threads; t++) so_sbuf_printf(o, "%s%d", t ? ", " : "", b->threads[t]);
    so_sbuf_printf(o, "]},\n  \"total_seconds\": %.1f,\n  \"failures\": %d,\n  \"models\": [", b->t_total, b->failures);
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        sb_json_kstr(o, i ? ",\n    {" : "\n    {", "name", m->name);
        sb_json_kstr(o, ", ", "path", m->path);
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
                sb_json_num(o, speedup(m, s, t));
            }
            so_sbuf_printf(o, "}, \"ort_all\": ");
            json_meas(o, s == S_NONE ? &(meas){0} : &m->ort[s]);
            so_sbuf_printf(o, "}");
        }
        so_sbuf_printf(o, "},\n      \"ort_original_all\": ");
        json_meas(o, &m->ort_orig);
        sb_json_knum(o, ",\n      ", "ort_backtrack_over_original", ort_ratio(m, S_BACKTRACK));
        {
            double lo, hi;
            paired_range(&m->ort[S_BACKTRACK], &m->ort_orig, &lo, &hi);
            so_sbuf_printf(o, ", \"ort_backtrack_over_original_rounds\": [");
            sb_json_num(o, lo);
            so_sbuf_printf(o, ", ");
            sb_json_num(o, hi);
            so_sbuf_printf(o, "], \"ort_verdict\": \"%s\"", verdict_name[ort_verdict(m, S_BACKTRACK)]);
        }
        if (m->fstrat[S_GREEDY]) {
            so_sbuf_printf(o, ",\n      \"flops_check\": {\"greedy\": ");
            json_opt(o, m->fstrat[S_GREEDY]);
            so_sbuf_printf(o, ",\n        \"backtrack\": ");
            json_opt(o, m->fstrat[S_BACKTRACK]);
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
    sb_xml_str(o, text);
    so_sbuf_printf(o, "</text>\n");
}

static void svg_report(const bench *b, so_sbuf *o)
{
    const double W = 960, H1 = 400, H2 = 380;
    double H = H1 + H2 + 40;
    so_sbuf_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    so_sbuf_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                 "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
              W, H, W, H);
    so_sbuf_printf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");

    /* ---- panel 1: speedup per model and strategy ---- */
    const int nser = b->no_ort ? 2 : 3;
    const char *ser_name[3] = {"greedy (our backend)", "backtrack (our backend)",
                               "backtrack on ONNX Runtime 'all' (vs original at 'all')"};
    char title[200];
    snprintf(title, sizeof title, "Speedup over no search, %d thread%s (median of per-round ratios)", b->threads[0],
             b->threads[0] == 1 ? "" : "s");
    svg_text(o, W / 2, 26, "middle", 16, "font-weight=\"bold\"", title);
    double px0 = 70, px1 = W - 20, py0 = 50, py1 = H1 - 70;
    double vmax = 1.2;
    for (int i = 0; i < b->n_models; i++) {
        const model_res *m = &b->models[i];
        double v[3] = {speedup(m, S_GREEDY, 0), speedup(m, S_BACKTRACK, 0), 1.0 / ort_ratio(m, S_BACKTRACK)};
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
        double v[3] = {speedup(m, S_GREEDY, 0), speedup(m, S_BACKTRACK, 0), 1.0 / ort_ratio(m, S_BACKTRACK)};
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
        double lx = px0 + 10 + k * 220, ly = H1 - 28;
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

/* ======================================================================================
   command line
   ====================================================================================== */

static const char bench_usage[] =
    "usage: superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE] [-q]\n"
    "         [--rounds N] [--target-seconds S] [--threads LIST] [--ort-threads N] [--no-ort]\n"
    "         [--cost measured|flops] [--no-flops-check] [--rules FILE] [--allow-unverified]\n"
    "         [--alpha A] [--budget N] [--time-limit S]\n"
    "         [--ablation-models NAME,... | --no-ablations] [--sizes LIST] [--alphas LIST]\n"
    "         [--sweep LIST] [--sweep-time-limit S] [--work-dir DIR] [--timeout S]\n"
    "Without models: the benchmark suite in data/full/ (make models), else the small models in data/.\n"
    "See docs/BENCHMARKS.md.\n";

static int busage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt bench: %s\n", msg);
    fputs(bench_usage, stderr);
    return 2;
}

static int parse_dlist(const char *s, double *out, int max, double lo, double hi)
{
    int n = 0;
    while (*s) {
        char *e;
        errno = 0;
        double v = strtod(s, &e);
        if (errno || e == s || !(v >= lo && v <= hi) || n == max) return -1;
        out[n++] = v;
        if (*e == ',') e++;
        else if (*e) return -1;
        s = e;
    }
    return n;
}

static int parse_d(const char *s, double lo, double hi, double *out)
{
    double v[1];
    if (parse_dlist(s, v, 1, lo, hi) != 1) return 1;
    *out = v[0];
    return 0;
}

static void model_name(const char *path, char *out, size_t n)
{
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    size_t len = strlen(s);
    if (len > 5 && !strcmp(s + len - 5, ".onnx")) len -= 5;
    snprintf(out, n, "%.*s", (int)len, s);
}

int so_bench_main(int argc, char **argv)
{
    bench B;
    memset(&B, 0, sizeof B);
    bench *b = &B;
    b->t_start = so_now();
    b->rounds = 0; /* auto */
    b->target_s = 1.0;
    b->threads[0] = 1;
    b->threads[1] = 2;
    b->n_threads = 2;
    b->ort_threads = 1;
    b->cost = "measured";
    b->alpha = 1.05;
    b->budget = 1000;
    b->time_limit = 30;
    b->sweep_time_limit = 30;
    b->ablations = 1;
    b->flops_check = 1;
    b->proc_timeout = 1800;
    long def_sweep[] = {10, 30, 100, 300, 1000};
    b->n_sweep = (int)SO_ARRAY_LEN(def_sweep);
    memcpy(b->sweep, def_sweep, sizeof def_sweep);
    double def_alpha[] = {1.0, 1.02, 1.05, 1.1};
    b->n_alphas = (int)SO_ARRAY_LEN(def_alpha);
    memcpy(b->alphas, def_alpha, sizeof def_alpha);
    int def_sizes[] = {2, 3, 4};
    b->n_sizes = 3;
    memcpy(b->sizes, def_sizes, sizeof def_sizes);
    const char *work_dir = NULL;
    const char *given[MAX_MODELS];
    int n_given = 0;

    /* command line (as typed, for the report) */
    size_t cl = 0;
    cl += (size_t)snprintf(b->cmdline, sizeof b->cmdline, "superopt");
    for (int i = 0; i < argc && cl < sizeof b->cmdline; i++)
        cl += (size_t)snprintf(b->cmdline + cl, sizeof b->cmdline - cl, " %s", argv[i]);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(bench_usage, stdout);
            return 0;
        } else if (!strcmp(a, "-q")) b->quiet = 1;
        else if (!strcmp(a, "--no-ort")) b->no_ort = 1;
        else if (!strcmp(a, "--no-ablations")) b->ablations = 0;
        else if (!strcmp(a, "--no-flops-check")) b->flops_check = 0;
        else if (!strcmp(a, "--allow-unverified")) b->allow_unverified = 1;
        else if (!strcmp(a, "--json") && v) { b->json_path = v; i++; }
        else if (!strcmp(a, "--svg") && v) { b->svg_path = v; i++; }
        else if (!strcmp(a, "--rules") && v) { b->rules = v; i++; }
        else if (!strcmp(a, "--work-dir") && v) { work_dir = v; i++; }
        else if (!strcmp(a, "--ablation-models") && v) { b->abl_names = v; i++; }
        else if (!strcmp(a, "--cost") && v) {
            if (strcmp(v, "measured") && strcmp(v, "flops")) return busage("--cost takes measured or flops");
            b->cost = v;
            i++;
        } else if (!strcmp(a, "--rounds") && v) {
            if (parse_d(v, 1, MAX_ROUNDS, &d) || d != floor(d)) return busage("--rounds needs an integer in 1..15");
            b->rounds = (int)d;
            i++;
        } else if (!strcmp(a, "--target-seconds") && v) {
            if (parse_d(v, 0.001, 60, &b->target_s)) return busage("--target-seconds needs a number in (0, 60]");
            i++;
        } else if (!strcmp(a, "--timeout") && v) {
            if (parse_d(v, 1, 1e6, &b->proc_timeout)) return busage("--timeout needs seconds >= 1");
            i++;
        } else if (!strcmp(a, "--threads") && v) {
            double t[MAX_THREADS];
            int n = parse_dlist(v, t, MAX_THREADS, 1, 256);
            if (n < 1) return busage("--threads needs a list of 1 to 4 thread counts, e.g. 1,2");
            b->n_threads = n;
            for (int k = 0; k < n; k++) {
                if (t[k] != floor(t[k])) return busage("--threads needs integers");
                b->threads[k] = (int)t[k];
            }
            i++;
        } else if (!strcmp(a, "--ort-threads") && v) {
            if (parse_d(v, 1, 256, &d) || d != floor(d)) return busage("--ort-threads needs an integer in 1..256");
            b->ort_threads = (int)d;
            i++;
        } else if (!strcmp(a, "--alpha") && v) {
            if (parse_d(v, 1, 100, &b->alpha)) return busage("--alpha needs a number in [1, 100]");
            i++;
        } else if (!strcmp(a, "--budget") && v) {
            if (parse_d(v, 0, 1e12, &d) || d != floor(d)) return busage("--budget needs an integer >= 0");
            b->budget = (long)d;
            i++;
        } else if (!strcmp(a, "--time-limit") && v) {
            if (parse_d(v, 0, 1e6, &b->time_limit)) return busage("--time-limit needs seconds >= 0");
            i++;
        } else if (!strcmp(a, "--sweep-time-limit") && v) {
            if (parse_d(v, 0, 1e6, &b->sweep_time_limit)) return busage("--sweep-time-limit needs seconds >= 0");
            i++;
        } else if (!strcmp(a, "--alphas") && v) {
            if ((b->n_alphas = parse_dlist(v, b->alphas, MAX_ALPHA, 1, 100)) < 1) return busage("--alphas needs a list of numbers >= 1");
            i++;
        } else if (!strcmp(a, "--sizes") && v) {
            double t[MAX_SIZES];
            int n = parse_dlist(v, t, MAX_SIZES, 1, SO_RULE_MAX_NODES);
            if (n < 1) return busage("--sizes needs a list of operator counts, e.g. 2,3,4");
            b->n_sizes = n;
            for (int k = 0; k < n; k++) b->sizes[k] = (int)t[k];
            i++;
        } else if (!strcmp(a, "--sweep") && v) {
            double t[MAX_SWEEP];
            int n = parse_dlist(v, t, MAX_SWEEP, 1, 1e12);
            if (n < 1) return busage("--sweep needs a list of budgets, e.g. 10,100,1000");
            b->n_sweep = n;
            for (int k = 0; k < n; k++) b->sweep[k] = (long)t[k];
            i++;
        } else if (a[0] == '-') return busage("unknown option or missing value");
        else if (n_given == MAX_MODELS) return busage("too many models");
        else given[n_given++] = a;
    }

    int rc = 1;
    char subset_paths[MAX_SIZES][PATH_MAX];
    int subset_n[MAX_SIZES] = {0}, total_rules = 0, max_size = 0, have_subsets = 0;
    so_sbuf md = {0}, js = {0}, sv = {0};
    int made_work = 0;

    ssize_t k = readlink("/proc/self/exe", b->self, sizeof b->self - 1);
    if (k <= 0) {
        fprintf(stderr, "superopt bench: cannot locate the running executable (/proc/self/exe)\n");
        return 1;
    }
    b->self[k] = 0;

    /* models */
    b->models = so_xcalloc(MAX_MODELS, sizeof *b->models);
    if (n_given) {
        for (int i = 0; i < n_given; i++) {
            if (!is_file(given[i])) {
                fprintf(stderr, "superopt bench: %s: no such model file\n", given[i]);
                goto done;
            }
            model_res *m = &b->models[b->n_models++];
            snprintf(m->path, sizeof m->path, "%s", given[i]);
            model_name(given[i], m->name, sizeof m->name);
        }
    } else {
        char dir[PATH_MAX];
        if (find_repo_file(b, "data/full/bert_taso.onnx", dir, sizeof dir)) {
            *strrchr(dir, '/') = 0;
            for (size_t i = 0; i < SO_ARRAY_LEN(full_models); i++) {
                model_res *m = &b->models[b->n_models++];
                if (sfmt(m->path, sizeof m->path, "%s/%s.onnx", dir, full_models[i]) != SO_OK) goto fail;
                if (!is_file(m->path)) {
                    fprintf(stderr, "superopt bench: %s: missing from the benchmark suite (run 'make models')\n", m->path);
                    goto done;
                }
                snprintf(m->name, sizeof m->name, "%s", full_models[i]);
            }
        } else if (find_repo_file(b, "data/deepandwide.onnx", dir, sizeof dir)) {
            *strrchr(dir, '/') = 0;
            b->small_set = 1;
            fprintf(stderr, "superopt bench: note: data/full/ not found (run 'make models'); benchmarking the small models in %s\n", dir);
            for (size_t i = 0; i < SO_ARRAY_LEN(small_models); i++) {
                model_res *m = &b->models[b->n_models++];
                if (sfmt(m->path, sizeof m->path, "%s/%s.onnx", dir, small_models[i]) != SO_OK) goto fail;
                if (!is_file(m->path)) {
                    fprintf(stderr, "superopt bench: %s: no such model file\n", m->path);
                    goto done;
                }
                snprintf(m->name, sizeof m->name, "%s", small_models[i]);
            }
        } else {
            fprintf(stderr, "superopt bench: no models given and neither data/full/ nor data/ found (run from the repository root)\n");
            goto done;
        }
    }
    for (int i = 0; i < b->n_models; i++) {
        model_res *m = &b->models[i];
        m->literature = in_list(m->name, literature_models, SO_ARRAY_LEN(literature_models)) ||
                        in_list(m->name, small_literature, SO_ARRAY_LEN(small_literature));
    }
    /* which models get the ablations */
    if (b->ablations) {
        const char *names = b->abl_names ? b->abl_names : b->small_set ? "nasrnn,squeezenet" : "nasrnn_512,squeezenet1_1";
        int found = 0;
        for (int i = 0; i < b->n_models; i++) {
            const char *s = names;
            size_t len = strlen(b->models[i].name);
            while ((s = strstr(s, b->models[i].name))) {
                if ((s == names || s[-1] == ',') && (s[len] == 0 || s[len] == ',')) {
                    b->models[i].ablate = 1;
                    found++;
                    break;
                }
                s += len;
            }
        }
        if (!found && b->abl_names) {
            fprintf(stderr, "superopt bench: --ablation-models: none of '%s' is among the benchmarked models\n", b->abl_names);
            goto done;
        }
    }

    if (!strcmp(b->cost, "flops")) b->flops_check = 0; /* the main runs are the flops runs */
    /* tools */
    if (!b->no_ort && find_ort(b) != SO_OK) goto fail;
    if (b->rules) snprintf(b->rules_file, sizeof b->rules_file, "%s", b->rules);
    else if (getenv("SUPEROPT_RULES") && getenv("SUPEROPT_RULES")[0]) snprintf(b->rules_file, sizeof b->rules_file, "%s", getenv("SUPEROPT_RULES"));
    else if (!find_repo_file(b, "rules/default.rules", b->rules_file, sizeof b->rules_file)) b->rules_file[0] = 0;
    if (b->rules && !is_file(b->rules)) {
        fprintf(stderr, "superopt bench: %s: no such rule file\n", b->rules);
        goto done;
    }
    if (!b->rules_file[0]) {
        fprintf(stderr, "superopt bench: no rule set found (rules/default.rules): run 'make rules' or pass --rules FILE\n");
        goto done;
    }

    /* work directory: optimized models, reports, rule subsets, the cost cache */
    if (work_dir) {
        if (mkdir(work_dir, 0755) != 0 && errno != EEXIST) {
            so_errorf("%s: cannot create directory: %s", work_dir, strerror(errno));
            goto fail;
        }
        snprintf(b->work, sizeof b->work, "%s", work_dir);
        b->keep = 1;
    } else {
        const char *tmp = getenv("TMPDIR");
        if (sfmt(b->work, sizeof b->work, "%s/superopt-bench-XXXXXX", tmp && tmp[0] ? tmp : "/tmp") != SO_OK) goto fail;
        if (!mkdtemp(b->work)) {
            so_errorf("%s: cannot create a temporary directory: %s", b->work, strerror(errno));
            goto fail;
        }
        made_work = 1;
    }
    if (sfmt(b->cache, sizeof b->cache, "%s/cost-cache", b->work) != SO_OK) goto fail;
    machine_info(b);

    if (b->ablations && is_ablation_done(b) && b->n_sizes) {
        if (write_rule_subsets(b, subset_paths, subset_n, &max_size) != SO_OK) {
            record_failure(b, so_error());
        } else {
            so_ruleset rs = {0};
            if (so_rules_load(b->rules_file, &rs) == SO_OK) total_rules = rs.n_rules;
            so_ruleset_free(&rs);
            have_subsets = 1;
            note(b, "rule-size ablation: %s has %d rules, largest pattern %d operators", b->rules_file, total_rules, max_size);
        }
    }

    note(b, "%d models, work directory %s", b->n_models, b->work);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (int i = 0; i < b->n_models && !interrupted; i++) {
        note(b, "[%d/%d]", i + 1, b->n_models);
        bench_model(b, &b->models[i], have_subsets ? subset_paths : NULL, subset_n, total_rules);
    }
    if (interrupted) {
        fprintf(stderr, "superopt bench: interrupted; nothing written\n");
        goto done;
    }
    b->t_total = so_now() - b->t_start;
    load_avg(b->load_end, sizeof b->load_end);

    md_report(b, &md);
    fwrite(md.s, 1, md.n, stdout);
    fflush(stdout);
    if (b->json_path) {
        json_report(b, &js);
        if (so_write_file_atomic(b->json_path, js.s, js.n) != SO_OK) goto fail;
    }
    if (b->svg_path) {
        svg_report(b, &sv);
        if (so_write_file_atomic(b->svg_path, sv.s, sv.n) != SO_OK) goto fail;
    }
    if (b->failures) {
        fprintf(stderr, "superopt bench: %d run%s failed (first: %s)\n", b->failures, b->failures == 1 ? "" : "s", b->first_failure);
        goto done;
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "superopt bench: %s\n", so_error());
done:
    if (made_work && !b->keep) rm_tree(b->work);
    for (int i = 0; b->models && i < b->n_models; i++)
        for (int j = 0; j < b->models[i].n_memo; j++) opt_free(b->models[i].memo[j]);
    free(b->models);
    free(md.s);
    free(js.s);
    free(sv.s);
    return rc;
}
