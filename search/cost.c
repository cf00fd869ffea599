/* cost.c - measured and flops cost models with an on-disk cache keyed by configuration (XXH3). */
#include "cost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../kernels/exec.h"

static int costs_nothing(const so_graph *g, int32_t i)
{
    unsigned fl = so_ops[g->nodes[i].op].flags;
    return (fl & (SO_F_SOURCE | SO_F_VIEW | SO_F_OPAQUE)) != 0;
}

double so_cost_flops_node(const so_graph *g, int32_t i)
{
    if (costs_nothing(g, i)) return 0;
    const so_node *n = &g->nodes[i];
    double flops = (double)so_node_flops(g, i);
    double bytes = 0;
    int internal_on_activation = 0;
    for (int k = 0; k < n->n_in; k++) {
        const so_node *p = &g->nodes[n->in[k].node];
        int64_t e = so_shape_numel(&p->out[n->in[k].slot]);
        if (e > 0) bytes += 4.0 * (double)e;
        if (p->op != SO_OP_WEIGHT) internal_on_activation = 1;
    }
    for (int s = 0; s < n->n_out; s++) {
        int64_t e = so_shape_numel(&n->out[s]);
        if (e > 0) bytes += 4.0 * (double)e;
    }
    double ms = flops / 1e7 + bytes / 5e6 + 1e-4; /* + a fixed per-op launch cost */
    /* internal operators only make sense on weights (they are folded); elsewhere they would run
       on the slow reference path */
    if ((so_ops[n->op].flags & SO_F_INTERNAL) && internal_on_activation) ms *= 100;
    return ms;
}

uint64_t so_cost_node_key(const so_graph *g, int32_t i, int threads)
{
    const so_node *n = &g->nodes[i];
    /* op, arity, threads, attributes, then (is-weight, shape) per input and shape per output */
    enum { MAXE = 16 };
    unsigned char buf[16 + sizeof(so_attr) + MAXE * (4 + sizeof(so_shape)) + MAXE * sizeof(so_shape)];
    size_t c = 0;
    int32_t head[4] = {n->op, n->n_in, n->n_out, threads};
    memcpy(buf + c, head, sizeof head);
    c += sizeof head;
    memcpy(buf + c, n->attr, sizeof *n->attr);
    c += sizeof *n->attr;
    for (int k = 0; k < n->n_in && k < MAXE; k++) {
        const so_node *p = &g->nodes[n->in[k].node];
        int32_t w = p->op == SO_OP_WEIGHT;
        memcpy(buf + c, &w, sizeof w);
        c += sizeof w;
        memcpy(buf + c, &p->out[n->in[k].slot], sizeof(so_shape));
        c += sizeof(so_shape);
    }
    for (int s = 0; s < n->n_out && s < MAXE; s++) {
        memcpy(buf + c, &n->out[s], sizeof(so_shape));
        c += sizeof(so_shape);
    }
    return XXH3_64bits(buf, c);
}

static double u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Identity of this machine and build: CPU model, online cores, the executable's bytes. */
static uint64_t machine_build_key(char *desc, size_t n)
{
    char cpu[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ') c++;
                    snprintf(cpu, sizeof cpu, "%s", c);
                    cpu[strcspn(cpu, "\n")] = 0;
                }
                break;
            }
        fclose(f);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t exe = 0;
    f = fopen("/proc/self/exe", "rb");
    if (f) {
        XXH3_state_t *st = XXH3_createState();
        XXH3_64bits_reset(st);
        char buf[65536];
        size_t r;
        while ((r = fread(buf, 1, sizeof buf, f)) > 0) XXH3_64bits_update(st, buf, r);
        exe = XXH3_64bits_digest(st);
        XXH3_freeState(st);
        fclose(f);
    }
    snprintf(desc, n, "cpu=%s cores=%ld exe=%016llx", cpu, cores, (unsigned long long)exe);
    return XXH3_64bits(desc, strlen(desc));
}

static char *cache_path(const char *cache_dir, uint64_t key)
{
    char dir[4096];
    if (cache_dir) {
        snprintf(dir, sizeof dir, "%s", cache_dir);
    } else {
        const char *x = getenv("XDG_CACHE_HOME");
        const char *h = getenv("HOME");
        if (x && x[0]) snprintf(dir, sizeof dir, "%s/superopt", x);
        else if (h && h[0]) snprintf(dir, sizeof dir, "%s/.cache/superopt", h);
        else return NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/cost-%016llx.tsv", dir, (unsigned long long)key);
    return so_xstrdup(path);
}

so_status so_cost_init(so_cost_model *cm, so_cost_kind kind, int threads, const char *cache_dir)
{
    memset(cm, 0, sizeof *cm);
    cm->kind = kind;
    cm->threads = threads > 0 ? threads : 1;
    if (kind != SO_COST_MEASURED || (cache_dir && !cache_dir[0])) return SO_OK;
    char desc[512];
    uint64_t key = machine_build_key(desc, sizeof desc);
    cm->path = cache_path(cache_dir, key);
    if (!cm->path) return SO_OK;
    FILE *f = fopen(cm->path, "r");
    if (!f) return SO_OK;
    char line[1024], want[600];
    snprintf(want, sizeof want, "# superopt cost cache %s\n", desc);
    if (!fgets(line, sizeof line, f) || strcmp(line, want) != 0) {
        fclose(f); /* not ours (another machine or build): ignore it, it will be overwritten */
        return SO_OK;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long long k;
        double ms;
        if (sscanf(line, "%llx\t%lf", &k, &ms) == 2 && ms >= 0) {
            so_hmap_put(&cm->cache, (uint64_t)k, d2u(ms));
            cm->loaded++;
        }
    }
    fclose(f);
    return SO_OK;
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

so_status so_cost_save(so_cost_model *cm)
{
    if (!cm->path || !cm->dirty) return SO_OK;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", cm->path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (mkdir_p(dir) != 0) return so_errorf("%s: cannot create cache directory: %s", dir, strerror(errno));
    char tmp[4200], desc[512];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", cm->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return so_errorf("%s: cannot write: %s", tmp, strerror(errno));
    machine_build_key(desc, sizeof desc);
    fprintf(f, "# superopt cost cache %s\n", desc);
    for (uint64_t i = 0; i < cm->cache.cap; i++)
        if (cm->cache.keys[i])
            fprintf(f, "%016llx\t%.9g\n", (unsigned long long)cm->cache.keys[i], u2d(cm->cache.vals[i]));
    if (fclose(f) != 0 || rename(tmp, cm->path) != 0) {
        unlink(tmp);
        return so_errorf("%s: cannot write: %s", cm->path, strerror(errno));
    }
    cm->dirty = 0;
    return SO_OK;
}

void so_cost_free(so_cost_model *cm)
{
    so_hmap_free(&cm->cache);
    free(cm->path);
    memset(cm, 0, sizeof *cm);
}

/* An internal operator left unfolded (on an activation) cannot run on the fast path nor be
   exported: such a graph must never be chosen. */
#define UNRUNNABLE_COST 1e9

double so_cost_node(so_cost_model *cm, const so_graph *g, int32_t i)
{
    if (costs_nothing(g, i)) return 0;
    if (so_ops[g->nodes[i].op].flags & SO_F_INTERNAL) return UNRUNNABLE_COST;
    if (cm->kind == SO_COST_FLOPS) return so_cost_flops_node(g, i);
    uint64_t key = so_cost_node_key(g, i, cm->threads), v;
    if (so_hmap_get(&cm->cache, key, &v)) return u2d(v);
    double t0 = so_now(), ms = 0;
    if (so_exec_time_node(g, i, cm->threads, 5, &ms) != SO_OK) {
        ms = so_cost_flops_node(g, i) * 100; /* cannot run on the fast path: discourage */
        cm->failed++;
    } else if (ms < 0.05) {
        /* short kernels: more repetitions for a stable median */
        double ms2;
        if (so_exec_time_node(g, i, cm->threads, 31, &ms2) == SO_OK) ms = ms2;
    }
    cm->measure_seconds += so_now() - t0;
    cm->measured++;
    so_hmap_put(&cm->cache, key, d2u(ms));
    cm->dirty = 1;
    return ms;
}

double so_cost_graph(so_cost_model *cm, const so_graph *g)
{
    double c = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) c += so_cost_node(cm, g, i);
    return c;
}
