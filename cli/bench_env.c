/* bench_env.c - bench harness environment: the superopt executable, node, ONNX Runtime, machine description. */
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

#include "../kernels/blas.h"

/* ======================================================================================
   environment: executable, node, ONNX Runtime, machine
   ====================================================================================== */

/* First existing file among rel relative to the working directory, then the executable's
   directory and its parents (the repository when run as BUILD/superopt). */
int bn_find_repo_file(const bench *b, const char *rel, char *out, size_t n)
{
    if (bn_is_file(rel) || bn_is_dir(rel)) return bn_sfmt(out, n, "%s", rel) == SO_OK;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", b->self);
    for (int up = 0; up < 3; up++) {
        char *s = strrchr(dir, '/');
        if (!s) break;
        *s = 0;
        char p[PATH_MAX];
        if (bn_sfmt(p, sizeof p, "%s/%s", dir, rel) == SO_OK && (bn_is_file(p) || bn_is_dir(p))) return bn_sfmt(out, n, "%s", p) == SO_OK;
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
        if (len > 0 && bn_sfmt(p, sizeof p, "%.*s/%s", (int)len, path, name) == SO_OK && access(p, X_OK) == 0 && bn_is_file(p))
            return bn_sfmt(out, n, "%s", p) == SO_OK;
        path += len + (e ? 1 : 0);
    }
    return 0;
}

/* The 1/5/15-minute load averages, e.g. "0.52 0.61 0.70". */
void bn_load_avg(char *buf, size_t n)
{
    char *text = NULL;
    snprintf(buf, n, "?");
    if (so_read_file("/proc/loadavg", &text, NULL) != SO_OK) return;
    double a = 0, c = 0, d = 0;
    if (sscanf(text, "%lf %lf %lf", &a, &c, &d) == 3) snprintf(buf, n, "%.2f %.2f %.2f", a, c, d);
    free(text);
}

void bn_machine_info(bench *b)
{
    bn_load_avg(b->load_start, sizeof b->load_start);
    snprintf(b->cpu, sizeof b->cpu, "unknown CPU");
    so_isa isa = SO_ISA_SCALAR;
    (void)so_isa_current(&isa); /* checked at start (main.c) */
    so_blas_describe(isa, b->blas, sizeof b->blas);
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
    if (uname(&u) == 0) (void)bn_sfmt(b->os, sizeof b->os, "%s %s %s", u.sysname, u.release, u.machine);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(b->date, sizeof b->date, "%Y-%m-%d %H:%M UTC", &tmv);
    /* the commit measured, if this is a git checkout */
    char *gargv[] = {"git", "rev-parse", "--short", "HEAD", NULL};
    proc r;
    snprintf(b->git, sizeof b->git, "unknown");
    if (bn_run_proc(gargv, 10, &r) == SO_OK) {
        if (r.code == 0) {
            bn_last_line(r.out, b->git, sizeof b->git);
            char *dargv[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
            proc d;
            if (bn_run_proc(dargv, 10, &d) == SO_OK) {
                if (d.code == 0 && d.out[0] && strlen(b->git) + 7 < sizeof b->git) strcat(b->git, "+dirty");
                bn_proc_free(&d);
            }
        }
        bn_proc_free(&r);
    }
}

/* Locates node, the ORT harness and the installed onnxruntime-node. */
so_status bn_find_ort(bench *b)
{
    if (!find_in_path("node", b->node, sizeof b->node))
        return so_errorf("node not found in PATH: ONNX Runtime runs under Node.js (install nodejs, or pass --no-ort)");
    if (!bn_find_repo_file(b, "tools/ort/ort_run.js", b->ort_script, sizeof b->ort_script))
        return so_errorf("tools/ort/ort_run.js not found (run from the repository root, or pass --no-ort)");
    char dir[PATH_MAX], pkg[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", b->ort_script);
    char *s = strrchr(dir, '/');
    if (s) *s = 0;
    if (bn_sfmt(pkg, sizeof pkg, "%s/node_modules/onnxruntime-node/package.json", dir) != SO_OK) return SO_ERR;
    char *text = NULL;
    if (so_read_file(pkg, &text, NULL) != SO_OK)
        return so_errorf("%s: ONNX Runtime is not installed (run 'make %s' or 'cd %s && npm ci --ignore-scripts'; or pass --no-ort)",
                         pkg, "tools/ort/node_modules/onnxruntime-node/package.json", dir);
    so_json v;
    snprintf(b->ort_version, sizeof b->ort_version, "?");
    if (so_json_parse(text, pkg, &v) == SO_OK) {
        const so_json *ver = so_json_get(&v, "version");
        if (ver && ver->kind == SO_JSON_STR) snprintf(b->ort_version, sizeof b->ort_version, "%s", ver->str);
        so_json_free(&v);
    }
    free(text);
    char *argv[] = {b->node, "--version", NULL};
    proc r;
    if (bn_run_proc(argv, 30, &r) != SO_OK) return SO_ERR;
    int ok = r.code == 0;
    if (ok) bn_last_line(r.out, b->node_version, sizeof b->node_version);
    bn_proc_free(&r);
    if (!ok) return so_errorf("%s --version failed: Node.js does not run (pass --no-ort to skip ONNX Runtime)", b->node);
    return SO_OK;
}
