/* cost.c - measured and flops cost models with an on-disk cache keyed by configuration (XXH3). */
#include "cost.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <immintrin.h>

#include <cblas.h>
#include <omp.h>

#include "../kernels/blas.h"
#include "../kernels/dnnl.h"
#include "../kernels/exec.h"
#include "../kernels/fast.h"
#include "../kernels/chain.h"
#include "../kernels/isa.h"
#include "../kernels/nchwc.h"
#include "../kernels/fuse.h"

static int costs_nothing(const so_graph *g, int32_t i)
{
    unsigned fl = so_ops[g->nodes[i].op].flags;
    return (fl & (SO_F_SOURCE | SO_F_VIEW | SO_F_OPAQUE)) != 0;
}

int so_cost_conv_bias_epilogue(const so_graph *g, int32_t i)
{
    const so_node *n = &g->nodes[i];
    if (n->op != SO_OP_CONV || n->n_in != 3 || n->in[2].node < 0 || n->n_out != 1) return 0;
    const so_node *b = &g->nodes[n->in[2].node];
    if (b->op != SO_OP_WEIGHT || g->model->weights[b->ref].shape.dtype != SO_F32) return 0;
    const so_shape *bs = &b->out[n->in[2].slot], *o = &n->out[0];
    return bs->rank == 1 && o->rank == 4 && bs->dim[0] == o->dim[1];
}

double so_cost_flops_node(const so_graph *g, int32_t i)
{
    if (costs_nothing(g, i)) return 0;
    const so_node *n = &g->nodes[i];
    double flops = (double)so_node_flops(g, i);
    double bytes = 0;
    int internal_on_activation = 0;
    /* a conv's bias is read in the epilogue pass, like the parameters of a fused batchnorm
       (which cost nothing): not counted, so that folding one into the conv is neutral here too */
    int n_in = so_cost_conv_bias_epilogue(g, i) ? 2 : n->n_in;
    for (int k = 0; k < n_in; k++) {
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
    if ((so_ops[n->op].flags & SO_F_INTERNAL) && !(so_ops[n->op].flags & SO_F_LAYOUT) && internal_on_activation) ms *= 100;
    return ms;
}

uint64_t so_cost_node_key(const so_graph *g, int32_t i, int threads)
{
    const so_node *n = &g->nodes[i];
    /* op, arity, threads, attributes, then (is-weight, shape) per input and shape per output */
    enum { MAXE = 16 };
    unsigned char buf[16 + sizeof(so_attr) + MAXE * (4 + sizeof(so_shape)) + MAXE * sizeof(so_shape)];
    size_t c = 0;
    /* a conv's bias is a per-channel shift in the same epilogue pass that a fused batchnorm's
       scale and shift take (kernels/fast.c so_fast_chain_build): conv+bias, conv+batchnorm and
       the bare conv are one configuration. Timed apart, folding a batchnorm into the conv came
       out randomly cheaper or dearer by timing noise alone (resnext50: -11 % over 33 folds that
       change no work), and such noise steers the search. */
    int32_t n_in = so_cost_conv_bias_epilogue(g, i) ? 2 : n->n_in;
    int32_t head[4] = {n->op, n_in, n->n_out, threads};
    memcpy(buf + c, head, sizeof head);
    c += sizeof head;
    /* a cheap epilogue activation (relu, clip) costs what the operator without it costs: one
       configuration, one measurement (two would differ by timing noise alone) */
    so_attr at = *n->attr;
    if ((so_ops[n->op].flags & SO_F_ACT) && (at.act == SO_ACT_RELU || at.act == SO_ACT_CLIP)) {
        at.act = SO_ACT_NONE;
        at.clip_min = at.clip_max = 0;
    }
    memcpy(buf + c, &at, sizeof at);
    c += sizeof at;
    for (int k = 0; k < n_in && k < MAXE; k++) {
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

/* Identity of this machine, build and kernel level: CPU model, online cores, the executable's bytes,
   the ISA level the kernels are selected at (a table measured at avx512 is not applied at avx2). */
static uint64_t machine_build_key(char *desc, size_t n, so_isa isa)
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
    uint64_t exe = so_exe_hash();
    /* oneDNN's kernels or not (SUPEROPT_ONEDNN=0, libdnnl absent): blocked convs at avx2 and avx512, sgemm / matmul at avx512 (kernels/dnnl.h) */
    const int onednn = isa >= SO_ISA_AVX2 && so_fast_use_onednn && so_dnnl_lib();
    /* OpenBLAS's core and whether so_sgemm goes around it (kernels/blas.h): OPENBLAS_CORETYPE changes the costs */
    snprintf(desc, n, "cpu=%s cores=%ld exe=%016llx isa=%s onednn=%d blas=%s/%d", cpu, cores, (unsigned long long)exe, so_isa_name(isa), onednn,
             so_blas_core(), so_blas_ours(isa));
    return XXH3_64bits(desc, strlen(desc));
}

/* v4 (session 24): entries marked "pick" are the executor's plan-time conv choices (kernels/nchwc.h
   so_nchwc_choice_*: the key theirs, the value the pick + 1). v3: a third column says how the entry was timed:
   quiet, loaded (under contention, not yet re-timed) or settled (contended when first timed and when re-timed once by
   a later run). v2 did not use loaded entries (each run timed them again); v1 had no third column. The key includes
   the executable, so a file of another format is never at this path unless damaged or copied: it is ignored
   (cm->foreign) and rewritten. */
#define CACHE_MAGIC "# superopt cost cache v4 "

/* Entry states (cm->quality; absent means quiet). Q_RETIME is in memory only: an entry read marked
   loaded that this run has not re-timed yet (saved as loaded). Q_PICK: a conv choice (never a price). */
enum { Q_QUIET = 0, Q_LOADED = 1, Q_SETTLED = 2, Q_RETIME = 3, Q_PICK = 4 };
static const char *const q_names[] = {"quiet", "loaded", "settled", "loaded", "pick"};

static char *cache_path(const char *cache_dir, uint64_t key)
{
    char dir[4096];
    if (!so_cache_dir(cache_dir, dir, sizeof dir)) return NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/cost-%016llx.tsv", dir, (unsigned long long)key);
    return so_xstrdup(path);
}

/* Reads the entries of the open cache file f whose header must be CACHE_MAGIC desc into cache (key ->
   ms bits) and quality (key -> Q_*, loaded entries as Q_RETIME). Returns 0 if the header is not that
   (nothing read), else 1; *bad counts the lines dropped: not '<16 hex digits>\t<ms>\t<state>', or a
   time that is not finite, positive and below an hour (inf, nan, 0, 1e300: a damaged, truncated or
   hand-edited cache; such a configuration is measured again); *n_loaded and *n_stale count the
   price entries kept and, of those, the ones marked loaded; *n_picks (may be NULL) the conv choices (a "pick" entry's
   value must be 1..SO_NCHWC_PICKS), which install hands to the kernels (so_nchwc_choice_put). */
static int read_cache(FILE *f, const char *desc, so_hmap *cache, so_hmap *quality, int64_t *bad, int64_t *n_loaded, int64_t *n_stale,
                      int64_t *n_picks, int install)
{
    char line[1024], want[600];
    snprintf(want, sizeof want, CACHE_MAGIC "%s\n", desc);
    if (!fgets(line, sizeof line, f) || strcmp(line, want) != 0) return 0;
    int whole = 1; /* the previous fgets ended its line (a longer line arrives in pieces: one bad line) */
    while (fgets(line, sizeof line, f)) {
        const int starts = whole;
        whole = strchr(line, '\n') != NULL;
        unsigned long long k = 0;
        double ms = 0;
        char q[16], extra;
        int kn = 0;
        int state = -1;
        if (starts && sscanf(line, "%16llx%n\t%lf\t%15s %c", &k, &kn, &ms, q, &extra) == 3 && kn == 16 && whole)
            for (int s = 0; s <= Q_PICK; s++)
                if (s != Q_RETIME && !strcmp(q, q_names[s])) state = s;
        if (state < 0 || !isfinite(ms) || !(ms > 0) || ms >= 3.6e6 || (state == Q_PICK && !(ms == floor(ms) && ms <= SO_NCHWC_PICKS))) {
            if (starts) ++*bad;
            continue;
        }
        so_hmap_put(cache, (uint64_t)k, d2u(ms));
        so_hmap_put(quality, (uint64_t)k, (uint64_t)(state == Q_LOADED ? Q_RETIME : state));
        if (state == Q_PICK) { /* the executor's choice: the kernels take it (the first one recorded for the key) */
            if (n_picks) ++*n_picks;
            if (install) so_nchwc_choice_put((uint64_t)k, (int)ms - 1);
            continue;
        }
        ++*n_loaded;
        if (state == Q_LOADED) ++*n_stale;
    }
    return 1;
}

so_status so_cost_init(so_cost_model *cm, so_cost_kind kind, int threads, const char *cache_dir)
{
    memset(cm, 0, sizeof *cm);
    cm->kind = kind;
    cm->threads = threads > 0 ? threads : 1;
    cm->cold_weights = -1;
    cm->paired_budget = SO_COST_PAIRED_BUDGET;
    if (kind != SO_COST_MEASURED || (cache_dir && !cache_dir[0])) return SO_OK;
    char desc[512];
    so_isa isa;
    if (so_isa_current(&isa) != SO_OK) return SO_ERR;
    cm->isa = (int)isa;
    uint64_t key = machine_build_key(desc, sizeof desc, isa);
    cm->path = cache_path(cache_dir, key);
    if (!cm->path) return SO_OK;
    struct stat sb;
    if (stat(cm->path, &sb) != 0) return SO_OK; /* no cache yet */
    FILE *f = so_open_regular(cm->path, NULL);  /* a FIFO or device: refused, never waited on */
    if (!f) {
        free(cm->path); /* the caller frees nothing after a failed init */
        cm->path = NULL;
        return so_error_prefix("cost cache");
    }
    /* a header that is not this build's (another format or a damaged file): ignored, overwritten */
    cm->foreign = !read_cache(f, desc, &cm->cache, &cm->quality, &cm->malformed, &cm->loaded, &cm->stale, &cm->picks_loaded, 1);
    fclose(f);
    /* in use: its modification time is what so_cost_prune ages (a build whose costs are all cached never
       saves); a day's resolution is enough, and a read-only cache is not an error */
    if (!cm->foreign && (double)time(NULL) - (double)sb.st_mtime > 86400.0) utimensat(AT_FDCWD, cm->path, NULL, 0);
    return SO_OK;
}

/* Which of two entries for one configuration the merged cache keeps (so_cost_save): a quiet timing
   over a settled one over a loaded one; of two quiet ones the first saved (disk's); of two others the
   lower (load only adds time); of two conv choices the first saved (disk's). Returns 1 to keep mine. */
static int keep_mine(double mine, uint64_t qm, double disk, uint64_t qd)
{
    static const int rank[] = {[Q_QUIET] = 2, [Q_LOADED] = 0, [Q_SETTLED] = 1, [Q_RETIME] = 0, [Q_PICK] = 3};
    if (rank[qm] != rank[qd]) return rank[qm] > rank[qd];
    return qm != Q_QUIET && qm != Q_PICK && mine < disk;
}

/* Takes the cache directory's lock (an exclusive flock on "<dir>/cost.lock", blocking; one lock file per
   directory, shared by every build's cache file there, so saves and the pruning below never leave a lock
   file per build behind): -1 when it cannot (the file is then written unlocked, atomically as before; a
   concurrent save may then drop the other's new entries, never corrupt the file). Before session 20 the
   lock was "<path>.lock", one per cache file (so_cost_prune removes those). */
static int lock_cache(const char *dir)
{
    char lp[4200];
    snprintf(lp, sizeof lp, "%s/cost.lock", dir);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int r;
    while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {}
    if (r != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void so_cost_take_picks(so_cost_model *cm)
{
    if (!cm->path || cm->table) return;
    const size_t n = so_nchwc_choice_list(NULL, NULL, 0);
    if (!n) return;
    uint64_t *keys = so_xmalloc(n * sizeof *keys);
    int *picks = so_xmalloc(n * sizeof *picks);
    const size_t m = so_nchwc_choice_list(keys, picks, n);
    for (size_t j = 0; j < m && j < n; j++) {
        if (so_hmap_get(&cm->cache, keys[j], NULL)) continue;
        so_hmap_put(&cm->cache, keys[j], d2u(picks[j] + 1.0));
        so_hmap_put(&cm->quality, keys[j], Q_PICK);
        cm->picks_new++;
        cm->dirty = 1;
    }
    free(keys);
    free(picks);
}

so_status so_cost_save(so_cost_model *cm)
{
    if (cm->table) return so_cost_table_save(cm);
    if (!cm->path) return SO_OK;
    so_cost_take_picks(cm);
    if (!cm->dirty) return SO_OK;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", cm->path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (so_mkdir_p(dir) != 0) return so_errorf("%s: cannot create cache directory: %s", dir, strerror(errno));
    char desc[512];
    machine_build_key(desc, sizeof desc, (so_isa)cm->isa);
    /* Concurrent runs on one cache: under the lock, what other runs saved since this one read the file
       is read again and merged entry by entry (keep_mine), so no run's measurements are lost; the write
       itself is atomic (temporary + rename), so a reader never sees a partial file. This run's own
       prices (cm->cache) are not changed. */
    const int lock = lock_cache(dir);
    so_hmap dc = {0}, dq = {0};
    int64_t bad = 0, nl = 0, ns = 0;
    FILE *in = so_open_regular(cm->path, NULL);
    if (in) {
        read_cache(in, desc, &dc, &dq, &bad, &nl, &ns, NULL, 0);
        fclose(in);
    }
    so_atomic out;
    so_status st = so_atomic_open(&out, cm->path, "w");
    if (st == SO_OK) {
        FILE *f = out.f;
        fprintf(f, CACHE_MAGIC "%s\n", desc);
        for (uint64_t i = 0; i < cm->cache.cap; i++) {
            const uint64_t k = cm->cache.keys[i];
            if (!k) continue;
            uint64_t v = cm->cache.vals[i], q = Q_QUIET, dv, dqv = Q_QUIET;
            so_hmap_get(&cm->quality, k, &q);
            if (so_hmap_get(&dc, k, &dv)) {
                so_hmap_get(&dq, k, &dqv);
                if (!keep_mine(u2d(v), q, u2d(dv), dqv)) v = dv, q = dqv;
            }
            /* 17 digits: the exact double back (with 9, a search re-run on the saved cache broke
               ties between near-equal graphs differently from the run that measured them) */
            fprintf(f, "%016llx\t%.17g\t%s\n", (unsigned long long)k, u2d(v), q_names[q]);
        }
        for (uint64_t i = 0; i < dc.cap; i++) { /* entries other runs saved that this one never had */
            const uint64_t k = dc.keys[i];
            uint64_t q = Q_QUIET;
            if (!k || so_hmap_get(&cm->cache, k, NULL)) continue;
            so_hmap_get(&dq, k, &q);
            fprintf(f, "%016llx\t%.17g\t%s\n", (unsigned long long)k, u2d(dc.vals[i]), q_names[q]);
        }
        st = so_atomic_commit(&out, cm->path, 1);
    }
    so_hmap_free(&dc);
    so_hmap_free(&dq);
    /* other builds' files nobody used for SO_COST_PRUNE_DAYS, under the same lock (a save of theirs cannot
       be between its read and its rename); only when a lock was taken */
    if (st == SO_OK && lock >= 0) so_cost_prune(dir, cm->path, SO_COST_PRUNE_DAYS * 86400.0);
    if (lock >= 0) close(lock); /* releases the flock */
    if (st != SO_OK) return SO_ERR;
    cm->dirty = 0;
    return SO_OK;
}

/* 1 if name is "cost-<16 hex digits>.tsv" followed by exactly tail ("" for a cache file, ".lock" for a lock
   file of sessions up to 19, ".tmp." plus digits for so_atomic's temporary of a killed run). */
static int cost_file_name(const char *name, const char *tail)
{
    if (strncmp(name, "cost-", 5) != 0) return 0;
    for (int k = 5; k < 21; k++)
        if (!((name[k] >= '0' && name[k] <= '9') || (name[k] >= 'a' && name[k] <= 'f'))) return 0;
    if (strncmp(name + 21, ".tsv", 4) != 0) return 0;
    const char *t = name + 25;
    if (strcmp(tail, ".tmp.") != 0) return strcmp(t, tail) == 0;
    if (strncmp(t, ".tmp.", 5) != 0 || !t[5]) return 0;
    for (t += 5; *t; t++)
        if (*t < '0' || *t > '9') return 0;
    return 1;
}

int so_cost_prune(const char *dir, const char *keep, double max_age)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    const char *kb = keep ? strrchr(keep, '/') : NULL;
    kb = kb ? kb + 1 : keep;
    const double now = (double)time(NULL);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (kb && !strcmp(nm, kb)) continue; /* this run's own file */
        if (!cost_file_name(nm, "") && !cost_file_name(nm, ".lock") && !cost_file_name(nm, ".tmp.")) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, nm);
        struct stat sb;
        if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue; /* links, FIFOs, directories: not ours to remove */
        if (now - (double)sb.st_mtime < max_age) continue;
        if (unlink(p) == 0) removed++;
    }
    closedir(d);
    return removed;
}

void so_cost_free(so_cost_model *cm)
{
    free(cm->table);
    so_hmap_free(&cm->cache);
    so_hmap_free(&cm->quality);
    free(cm->path);
    memset(cm, 0, sizeof *cm);
}


/* Weights of a model above this size are timed cold (flushed from the caches before each
   run): the caches hold a few MB of them at best (L2 512 KB per core, an L3 shared with the other
   core and other processes), and a weight read from memory costs more per byte in a short
   kernel than in a long one (the stream's start-up), which is what merging kernels saves. In
   nasrnn_512 (16 MB of weights) a [1,512]x[512,512] gemv takes 0.040-0.051 ms per call in the
   model (profile) against 0.023 ms timed warm in L3, the merged [1,512]x[512,4096] 0.20-0.22 ms
   against 0.17 ms: warm, merging eight looked 7 % cheaper; in the model it is 45 % cheaper. */
#define COLD_WEIGHT_BYTES ((int64_t)8 << 20)

static int64_t model_weight_bytes(const so_model *m)
{
    int64_t b = 0;
    for (int32_t w = 0; w < m->n_weights; w++) {
        int64_t e = so_shape_numel(&m->weights[w].shape);
        if (e > 0) b += e * (m->weights[w].shape.dtype == SO_I64 ? 8 : 4);
    }
    return b;
}

/* ---------------- fused kernels (SO_COST_HEAD) ----------------
   An attention, GELU or pad+pool kernel computes several nodes in one call: the measured model
   times that kernel (kernels/exec.c so_exec_time_step), as the executor runs it, under a key of
   all its nodes' configurations; the flops model prices its arithmetic, one launch and the bytes
   it reads and writes (never the intermediate values). The decision is the kernels'
   (kernels/fuse.h so_fuse_decide_at). */

/* The users array the kernel selection reads for the kernel node i heads (malloc'd; caller frees), *f its decision. */
static int32_t *head_users(const so_graph *g, int32_t i, so_fuse *f)
{
    int32_t *user = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *user);
    for (int32_t j = 0; j <= g->n_nodes; j++) user[j] = -1;
    so_fuse_decide_at(g, i, user, f);
    return user;
}

static double edge_bytes(const so_graph *g, so_edge e)
{
    int64_t n = e.node < 0 ? 0 : so_shape_numel(&g->nodes[e.node].out[e.slot]);
    return n > 0 ? 4.0 * (double)n : 0;
}

/* Flops-model cost of the head's own arithmetic plus the kernel's launch and memory traffic (its
   inputs: the head's and the extra one; its outputs: the last absorbed node's). The absorbed
   nodes add their arithmetic (SO_COST_INNER). */
static double flops_head(const so_graph *g, int32_t i)
{
    so_fuse f;
    free(head_users(g, i, &f));
    const so_node *n = &g->nodes[i], *last = f.n ? &g->nodes[f.node[f.n - 1]] : n;
    double bytes = 0;
    for (int k = 0; k < n->n_in; k++) bytes += edge_bytes(g, n->in[k]);
    if (f.has_extra) bytes += edge_bytes(g, f.extra);
    for (int s = 0; s < last->n_out; s++) bytes += edge_bytes(g, (so_edge){f.n ? f.node[f.n - 1] : i, s});
    return (double)so_node_flops(g, i) / 1e7 + bytes / 5e6 + 1e-4;
}

/* Times what role runs for node i (see cost_cfg). */
static so_status time_role(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms)
{
    so_exec_timed w;
    so_fuse f;
    int32_t *user = role == SO_COST_HEAD ? head_users(g, i, &f) : NULL;
    so_status st = so_exec_time_step(g, i, user, cm->threads, cm->cold_weights, 400, ms, &w);
    free(user);
    cm->timed_runs += w.runs;
    cm->select_seconds += w.select_seconds;
    cm->setup_seconds += w.setup_seconds;
    cm->flush_seconds += w.flush_seconds;
    cm->kernel_seconds += w.kernel_seconds;
    cm->last_kernel = w.kernel;
    return st;
}

/* An internal operator left unfolded (on an activation) cannot run on the fast path nor be
   exported: such a graph must never be chosen. */
#define UNRUNNABLE_COST 1e9

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Table mode: times the configurations keys[0..n) (node nodes[q] of g in role roles[q] each) in
   SO_COST_TABLE_ROUNDS rounds, interleaved (each round times every one once, the order rotated by
   one per round), and enters the median of its rounds' values for each. */
static so_status time_role(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms);

static void measure_rounds(so_cost_model *cm, const so_graph *g, const int32_t *nodes, const uint8_t *roles, const uint64_t *keys,
                           int32_t n)
{
    double *t = so_xmalloc(((size_t)n * SO_COST_TABLE_ROUNDS + 1) * sizeof *t);
    char *bad = so_xcalloc((size_t)n + 1, 1);
    double t0 = so_now(), c0 = so_cpu_now();
    for (int r = 0; r < SO_COST_TABLE_ROUNDS; r++)
        for (int32_t q = 0; q < n; q++) {
            int32_t p = (q + r) % n;
            double ms = 0;
            if (!bad[p] && time_role(cm, g, nodes[p], roles[p], &ms) != SO_OK) bad[p] = 1;
            t[(size_t)p * SO_COST_TABLE_ROUNDS + (size_t)r] = ms;
        }
    cm->measure_seconds += so_now() - t0;
    cm->measure_cpu_seconds += so_cpu_now() - c0;
    for (int32_t p = 0; p < n; p++) {
        double *v = t + (size_t)p * SO_COST_TABLE_ROUNDS, ms = 0;
        qsort(v, SO_COST_TABLE_ROUNDS, sizeof *v, cmp_double);
        ms = v[SO_COST_TABLE_ROUNDS / 2];
        if (bad[p] || !(ms > 0) || !isfinite(ms)) {
            ms = so_cost_flops_node(g, nodes[p]) * 100; /* cannot run on the fast path: discourage */
            cm->failed++;
        }
        so_hmap_put(&cm->cache, keys[p], d2u(ms));
        cm->measured++;
        cm->table_new++;
    }
    cm->dirty = 1;
    free(t);
    free(bad);
}

void so_cost_probe_now(so_cost_probe *p)
{
    struct rusage ru;
    p->nivcsw = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_nivcsw : 0;
    p->running = -1;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "procs_running %d", &p->running) == 1) break;
    fclose(f);
}

int so_cost_contended(const so_cost_probe *before, const so_cost_probe *after, long cpus)
{
    if (after->nivcsw > before->nivcsw) return 1;
    return before->running > cpus || after->running > cpus;
}

/* One timing of what role runs for node i and whether it was contended (or the test hook's). */
static so_status time_probed(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms, int *contended)
{
    if (cm->time_hook) return cm->time_hook(cm->hook_ctx, g, i, role, ms, contended);
    so_cost_probe a, b;
    so_cost_probe_now(&a);
    so_status st = time_role(cm, g, i, role, ms);
    so_cost_probe_now(&b);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *contended = so_cost_contended(&a, &b, cpus > 0 ? cpus : 1);
    return st;
}

/* Disk-cache mode: *ms for what role runs for node i, one timing when it was not contended, else
   the lowest of at most SO_COST_LOADED_ROUNDS rounds (see there) with *noisy set; *rounds counts
   the timings. Extra rounds are taken only while their CPU time so far (cm->retime_cpu_seconds)
   stays within the first rounds' (cm->first_cpu_seconds): measuring costs at most about twice
   what it costs on a quiet machine. */
static so_status measure_cfg(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms, int *rounds, int *noisy)
{
    int contended = 0;
    *rounds = 1;
    *noisy = 0;
    double c0 = so_cpu_now();
    so_status st = time_probed(cm, g, i, role, ms, &contended);
    cm->first_cpu_seconds += so_cpu_now() - c0;
    if (st != SO_OK || !contended) return st;
    *noisy = 1;
    double second = INFINITY; /* the second lowest round */
    while (*rounds < SO_COST_LOADED_ROUNDS && !(second <= *ms * (1 + SO_COST_LOADED_AGREE)) &&
           cm->retime_cpu_seconds <= cm->first_cpu_seconds) {
        double v = 0;
        c0 = so_cpu_now();
        st = time_probed(cm, g, i, role, &v, &contended);
        cm->retime_cpu_seconds += so_cpu_now() - c0;
        if (st != SO_OK) return st;
        ++*rounds;
        if (v < *ms) {
            second = *ms;
            *ms = v;
        } else if (v < second) second = v;
    }
    return SO_OK;
}

/* The measured or flops cost of what role runs for node i: the node alone (STEP, FUSED) or the
   fused kernel it heads (HEAD), cached under so_cost_config. */
static double cost_cfg(so_cost_model *cm, const so_graph *g, int32_t i, int role)
{
    if (costs_nothing(g, i)) return 0;
    if ((so_ops[g->nodes[i].op].flags & (SO_F_INTERNAL | SO_F_LAYOUT)) == SO_F_INTERNAL) return UNRUNNABLE_COST;
    if (cm->kind == SO_COST_FLOPS) return role == SO_COST_HEAD ? flops_head(g, i) : so_cost_flops_node(g, i);
    if (cm->cold_weights < 0) cm->cold_weights = model_weight_bytes(g->model) > COLD_WEIGHT_BYTES;
    uint64_t key = so_cost_config(cm, g, i, role), v, q = Q_QUIET;
    /* an entry read marked loaded is used, after being timed once more at its first use here (below) */
    const int retime = so_hmap_get(&cm->cache, key, &v) && !cm->table && so_hmap_get(&cm->quality, key, &q) && q == Q_RETIME;
    if (!retime && so_hmap_get(&cm->cache, key, &v)) return u2d(v);
    if (cm->table) {
        const uint8_t r8 = (uint8_t)role;
        measure_rounds(cm, g, &i, &r8, &key, 1);
        so_hmap_get(&cm->cache, key, &v);
        return u2d(v);
    }
    double t0 = so_now(), c0 = so_cpu_now(), ms = 0;
    const double sel0 = cm->select_seconds, set0 = cm->setup_seconds, fl0 = cm->flush_seconds, k0 = cm->kernel_seconds;
    const int64_t runs0 = cm->timed_runs;
    int rounds = 0, noisy = 0;
    const so_status st = measure_cfg(cm, g, i, role, &ms, &rounds, &noisy);
    if (st != SO_OK && !retime) {
        ms = so_cost_flops_node(g, i) * 100; /* cannot run on the fast path: discourage */
        cm->failed++;
    }
    cm->measure_seconds += so_now() - t0;
    cm->measure_cpu_seconds += so_cpu_now() - c0;
    cm->measured++;
    if (noisy) cm->noisy++;
    if (!retime) q = noisy ? Q_LOADED : Q_QUIET;
    else {
        /* the one re-timing of a loaded entry: a quiet timing replaces it; a contended one (or a failure)
           keeps the lower of the two, settled: no later run times it again, so from here on every run
           prices this configuration the same (SO_COST_LOADED_ROUNDS) */
        cm->retimed++;
        const double old = u2d(v);
        if (st == SO_OK && !noisy) q = Q_QUIET;
        else {
            q = Q_SETTLED;
            if (st != SO_OK || !(ms < old)) ms = old;
        }
    }
    so_hmap_put(&cm->quality, key, q);
    if (getenv("SO_DEBUG_COST")) {
        char d[200], sb[96], wk[SO_MAX_IN + 1];
        int nw = 0;
        for (int k = 0; k < g->nodes[i].n_in && k < SO_MAX_IN; k++)
            wk[nw++] = g->nodes[i].in[k].node < 0 ? '-' : g->nodes[g->nodes[i].in[k].node].op == SO_OP_WEIGHT ? 'w' : 'a';
        wk[nw] = 0;
        char ib[96];
        /* SO_DEBUG_COST: one line per configuration timed: the node, its output and first input, which
           inputs are weights (w) or activations (a), the kernel, the value, and where the time went */
        fprintf(stderr, "measured %s%s %s<-%s in=%s [%s]: %.6f ms (%.3f s, %d round%s%s; %lld runs, select %.3f setup %.3f flush %.3f kernel %.3f s)\n",
                role == SO_COST_HEAD ? "fused kernel of " : "", so_node_desc(g, i, d, sizeof d), so_shape_str(&g->nodes[i].out[0], sb, sizeof sb),
                g->nodes[i].n_in && g->nodes[i].in[0].node >= 0 ? so_shape_str(&g->nodes[g->nodes[i].in[0].node].out[g->nodes[i].in[0].slot], ib, sizeof ib) : "-", wk,
                cm->last_kernel ? cm->last_kernel : "?", ms, so_now() - t0, rounds, rounds == 1 ? "" : "s",
                noisy ? (retime ? ", contended, re-time of a loaded entry" : ", contended") : retime ? ", re-time of a loaded entry" : "",
                (long long)(cm->timed_runs - runs0), cm->select_seconds - sel0, cm->setup_seconds - set0, cm->flush_seconds - fl0, cm->kernel_seconds - k0);
    }
    so_hmap_put(&cm->cache, key, d2u(ms));
    cm->dirty = 1;
    return ms;
}

double so_cost_node(so_cost_model *cm, const so_graph *g, int32_t i) { return cost_cfg(cm, g, i, SO_COST_STEP); }

so_status so_cost_time_node(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms)
{
    *ms = 0;
    if (costs_nothing(g, i)) return SO_OK;
    if (cm->cold_weights < 0) cm->cold_weights = model_weight_bytes(g->model) > COLD_WEIGHT_BYTES;
    double t0 = so_now(), c0 = so_cpu_now();
    int contended;
    so_status st = cm->time_hook ? cm->time_hook(cm->hook_ctx, g, i, role, ms, &contended) : time_role(cm, g, i, role, ms);
    cm->measure_seconds += so_now() - t0;
    cm->measure_cpu_seconds += so_cpu_now() - c0;
    return st;
}

uint64_t so_cost_config(so_cost_model *cm, const so_graph *g, int32_t i, int role)
{
    uint64_t key = so_cost_node_key(g, i, cm->threads);
    if (role == SO_COST_HEAD) {
        /* the fused kernel's configuration: its kind and the configurations of the nodes it computes */
        so_fuse f;
        free(head_users(g, i, &f));
        uint64_t v[2 + SO_FUSE_MAX] = {key, (uint64_t)f.kind};
        for (int k = 0; k < f.n; k++) v[2 + k] = so_cost_node_key(g, f.node[k], cm->threads);
        key = XXH3_64bits(v, sizeof(uint64_t) * (size_t)(2 + f.n));
    }
    if (cm->cold_weights > 0) key = XXH3_64bits_withSeed(&key, sizeof key, 0xC01D);
    return key;
}

/* The key a confirmation timing of configuration key is kept under (a seed no price key uses). */
static uint64_t confirm_key(uint64_t key) { return XXH3_64bits_withSeed(&key, sizeof key, 0xC0F1); }

int so_cost_confirm_get(so_cost_model *cm, uint64_t key, double *ms)
{
    uint64_t v;
    if (!so_hmap_get(&cm->cache, confirm_key(key), &v)) return 0;
    *ms = u2d(v);
    return 1;
}

void so_cost_confirm_put(so_cost_model *cm, uint64_t key, double ms)
{
    if (!(ms > 0) || !isfinite(ms) || ms >= 3.6e6) return; /* what read_cache would drop */
    const uint64_t k = confirm_key(key);
    so_hmap_put(&cm->cache, k, d2u(ms));
    so_hmap_put(&cm->quality, k, Q_QUIET);
    cm->dirty = 1;
}

double so_cost_graph_unfused(so_cost_model *cm, const so_graph *g)
{
    double c = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) c += so_cost_node(cm, g, i);
    return c;
}

/* ---------------- executor fusion ----------------
   Which nodes a kernel absorbs is the executor's decision, asked of kernels/fuse.c (the same
   functions kernels/fast.c builds its kernels from): epilogue chains after conv/matmul/gemm,
   attention, GELU, pad+avgpool. The zero-copy concats and splits below follow kernels/exec.c
   concat_in_place and split_in_place. */

static const so_shape *eshape(const so_graph *g, so_edge e) { return &g->nodes[e.node].out[e.slot]; }

void so_cost_roles(const so_graph *g, uint8_t *role) { so_cost_roles_pinned(g, NULL, role); }

void so_cost_roles_pinned(const so_graph *g, const uint8_t *pinned, uint8_t *role)
{
    int32_t n = g->n_nodes;
    int32_t *user = so_fuse_users(g, pinned);
    char *claimed = so_xcalloc((size_t)n + 1, 1), *parent = so_xcalloc((size_t)n + 1, 1), *absorbed = so_xcalloc((size_t)n + 1, 1);
    for (int32_t i = 0; i < n; i++) role[i] = costs_nothing(g, i) ? SO_COST_FREE : SO_COST_STEP;
    /* the kernels' decisions, in node order as the executor makes them */
    for (int32_t i = 0; i < n; i++) {
        if (role[i] != SO_COST_STEP || absorbed[i]) continue;
        so_fuse f;
        so_fuse_decide(g, user, absorbed, i, &f);
        for (int k = 0; k < f.n; k++) {
            absorbed[f.node[k]] = 1;
            role[f.node[k]] = f.kind == SO_FUSE_CHAIN ? SO_COST_FUSED : SO_COST_INNER;
        }
        if (f.n && f.kind != SO_FUSE_CHAIN) role[i] = SO_COST_HEAD;
    }
    /* zero-copy concats, in node order (an input feeds at most one) */
    for (int32_t i = 0; i < n; i++) {
        const so_node *nd = &g->nodes[i];
        if (nd->op != SO_OP_CONCAT || role[i] != SO_COST_STEP || parent[i]) continue;
        int ok = 1;
        for (int d = 0; d < nd->attr->axis && ok; d++)
            if (nd->out[0].dim[d] != 1) ok = 0;
        for (int k = 0; k < nd->n_in && ok; k++) {
            int32_t p = nd->in[k].node;
            const so_node *pn = &g->nodes[p];
            if (p < 0 || (so_ops[pn->op].flags & (SO_F_SOURCE | SO_F_VIEW | SO_F_OPAQUE)) || pn->n_out != 1 || claimed[p] ||
                parent[p])
                ok = 0;
            for (int j = 0; j < k && ok; j++)
                if (nd->in[j].node == p) ok = 0;
        }
        if (!ok) continue;
        for (int k = 0; k < nd->n_in; k++) claimed[nd->in[k].node] = 1;
        parent[i] = 1;
        role[i] = SO_COST_FREE;
    }
    /* zero-copy splits (kernels/exec.c split_in_place): leading dims 1 and an input that is a
       step's own value (through views), not a slice of a zero-copy concat */
    for (int32_t i = 0; i < n; i++) {
        const so_node *nd = &g->nodes[i];
        if (nd->op != SO_OP_SPLIT || role[i] != SO_COST_STEP || nd->n_in != 1) continue;
        const so_shape *is = eshape(g, nd->in[0]);
        int ok = 1;
        for (int d = 0; d < nd->attr->axis && d < is->rank; d++)
            if (is->dim[d] != 1) ok = 0;
        int32_t r = nd->in[0].node;
        while (ok && (so_ops[g->nodes[r].op].flags & SO_F_VIEW) && g->nodes[r].n_in > 0) r = g->nodes[r].in[0].node;
        if (ok && ((so_ops[g->nodes[r].op].flags & (SO_F_SOURCE | SO_F_OPAQUE | SO_F_VIEW)) || claimed[r])) ok = 0;
        if (ok) role[i] = SO_COST_FREE;
    }
    free(user);
    free(claimed);
    free(parent);
    free(absorbed);
}

int so_cost_view_copy(const so_graph *g, int32_t i)
{
    so_op op = g->nodes[i].op;
    return (op == SO_OP_CONCAT || op == SO_OP_SPLIT) && !costs_nothing(g, i);
}

double so_cost_node_role(so_cost_model *cm, const so_graph *g, int32_t i, int role)
{
    /* standard-ONNX output: another runtime copies what our executor makes a view of */
    if (role == SO_COST_FREE && cm->copies && so_cost_view_copy(g, i)) return so_cost_node(cm, g, i);
    if (role == SO_COST_FREE) return 0;
    /* inside a fused kernel (attention, GELU, pad+pool): its arithmetic still runs, but not as a
       kernel call of its own: no launch, no round trip of its output through memory. Measured,
       the head's timing of the whole kernel includes it. */
    if (role == SO_COST_INNER) return cm->kind == SO_COST_FLOPS ? (double)so_node_flops(g, i) / 1e7 : 0;
    if (role == SO_COST_HEAD) return cost_cfg(cm, g, i, SO_COST_HEAD);
    if (role == SO_COST_FUSED) {
        so_op op = g->nodes[i].op;
        if (op != SO_OP_SIGMOID && op != SO_OP_TANH && !(op == SO_OP_ADD && (g->nodes[i].attr->act == SO_ACT_SIGMOID ||
                                                                              g->nodes[i].attr->act == SO_ACT_TANH)))
            return 0;
    }
    return so_cost_node(cm, g, i);
}

/* Whether so_cost_node_role(cm, .., role) asks so_cost_node for node i. */
static int role_measures(const so_cost_model *cm, const so_graph *g, int32_t i, int role)
{
    if (role == SO_COST_FREE && cm->copies && so_cost_view_copy(g, i)) return 1;
    if (role == SO_COST_FREE || role == SO_COST_INNER || costs_nothing(g, i)) return 0;
    if ((so_ops[g->nodes[i].op].flags & (SO_F_INTERNAL | SO_F_LAYOUT)) == SO_F_INTERNAL) return 0;
    if (role == SO_COST_FUSED) {
        so_op op = g->nodes[i].op;
        return op == SO_OP_SIGMOID || op == SO_OP_TANH ||
               (op == SO_OP_ADD && (g->nodes[i].attr->act == SO_ACT_SIGMOID || g->nodes[i].attr->act == SO_ACT_TANH));
    }
    return 1;
}

double so_cost_graph(so_cost_model *cm, const so_graph *g)
{
    uint8_t *role = so_xmalloc((size_t)g->n_nodes + 1);
    so_cost_roles(g, role);
    if (cm->table && cm->kind == SO_COST_MEASURED) {
        /* the whole graph's missing configurations at once, in interleaved rounds */
        if (cm->cold_weights < 0) cm->cold_weights = model_weight_bytes(g->model) > COLD_WEIGHT_BYTES;
        int32_t *nodes = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *nodes), n = 0;
        uint8_t *roles = so_xmalloc((size_t)g->n_nodes + 1);
        uint64_t *keys = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *keys);
        so_hmap seen = {0};
        for (int32_t i = 0; i < g->n_nodes; i++) {
            if (!role_measures(cm, g, i, role[i])) continue;
            uint64_t key = so_cost_config(cm, g, i, role[i]);
            if (so_hmap_get(&cm->cache, key, NULL) || !so_hmap_add(&seen, key, 1)) continue;
            roles[n] = role[i];
            nodes[n] = i;
            keys[n++] = key;
        }
        if (n > 0) measure_rounds(cm, g, nodes, roles, keys, n);
        so_hmap_free(&seen);
        free(nodes);
        free(roles);
        free(keys);
    }
    double c = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) c += so_cost_node_role(cm, g, i, role[i]);
    free(role);
    return c;
}

static int cmp_side(const void *x, const void *y)
{
    const so_cost_side *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->node - b->node;
}

/* g's configurations that cost something, sorted by key (*n of them, malloc'd). */
static so_cost_side *graph_sides(so_cost_model *cm, const so_graph *g, int32_t *n)
{
    so_cost_graph(cm, g); /* table mode: the missing configurations timed together */
    uint8_t *role = so_xmalloc((size_t)g->n_nodes + 1);
    so_cost_roles(g, role);
    so_cost_side *v = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *v);
    *n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const double ms = so_cost_node_role(cm, g, i, role[i]);
        if (ms == 0) continue;
        uint64_t k = so_cost_config(cm, g, i, role[i]);
        v[(*n)++] = (so_cost_side){XXH3_64bits_withSeed(&k, sizeof k, role[i]), i, 1, role[i], ms};
    }
    free(role);
    qsort(v, (size_t)*n, sizeof *v, cmp_side);
    return v;
}

void so_cost_side_diff(so_cost_model *cm, const so_graph *a, const so_graph *b, so_cost_side **oa, int32_t *ka, so_cost_side **ob,
                       int32_t *kb)
{
    int32_t na = 0, nb = 0, i = 0, j = 0;
    so_cost_side *va = graph_sides(cm, a, &na), *vb = graph_sides(cm, b, &nb);
    *oa = so_xmalloc(((size_t)na + 1) * sizeof **oa);
    *ob = so_xmalloc(((size_t)nb + 1) * sizeof **ob);
    *ka = *kb = 0;
    while (i < na || j < nb) {
        const uint64_t key = j >= nb || (i < na && va[i].key < vb[j].key) ? va[i].key : vb[j].key;
        int32_t ca = 0, cb = 0, first_a = i, first_b = j;
        for (; i < na && va[i].key == key; i++) ca++;
        for (; j < nb && vb[j].key == key; j++) cb++;
        if (ca > cb) (*oa)[(*ka)++] = (so_cost_side){key, va[first_a].node, ca - cb, va[first_a].role, va[first_a].ms};
        else if (cb > ca) (*ob)[(*kb)++] = (so_cost_side){key, vb[first_b].node, cb - ca, vb[first_b].role, vb[first_b].ms};
    }
    free(va);
    free(vb);
}

void so_cost_graph_diff(so_cost_model *cm, const so_graph *a, const so_graph *b, double *da, double *db)
{
    so_cost_side *oa, *ob;
    int32_t ka, kb;
    so_cost_side_diff(cm, a, b, &oa, &ka, &ob, &kb);
    *da = *db = 0;
    for (int32_t q = 0; q < ka; q++) *da += oa[q].count * oa[q].ms;
    for (int32_t q = 0; q < kb; q++) *db += ob[q].count * ob[q].ms;
    free(oa);
    free(ob);
}

int so_cost_clearly_lower(double d_new, double d_old) { return d_new < d_old * (1 - SO_COST_NOISE); }

/* ---------------- paired re-timing (layout decisions, session 23) ---------------- */

/* The key a paired decision between the two differences is recorded under (so_cost_confirm_put): their keys and
   counts, a's side first. */
static uint64_t paired_key(const so_cost_side *oa, int32_t ka, const so_cost_side *ob, int32_t kb)
{
    const size_t n = 2 * ((size_t)ka + (size_t)kb) + 1;
    uint64_t *v = so_xmalloc(n * sizeof *v);
    size_t m = 0;
    for (int32_t q = 0; q < ka; q++) v[m++] = oa[q].key, v[m++] = (uint64_t)oa[q].count;
    v[m++] = 0x5EB5EB5EB5EB5EB5ull; /* between the sides */
    for (int32_t q = 0; q < kb; q++) v[m++] = ob[q].key, v[m++] = (uint64_t)ob[q].count;
    const uint64_t k = XXH3_64bits_withSeed(v, m * sizeof *v, 0x9A1D);
    free(v);
    return k;
}

/* One side's time now: its configurations timed once each, weighted by their counts; best[q] keeps each one's
   fastest timing so far. */
static so_status time_side(so_cost_model *cm, const so_graph *g, const so_cost_side *o, int32_t k, double *best, double *ms)
{
    *ms = 0;
    for (int32_t q = 0; q < k; q++) {
        double t = 0;
        if (so_cost_time_node(cm, g, o[q].node, o[q].role, &t) != SO_OK) return SO_ERR;
        *ms += o[q].count * t;
        if (t < best[q]) best[q] = t;
        cm->paired_timed++;
    }
    return SO_OK;
}

so_status so_cost_paired_ratio(so_cost_model *cm, const so_graph *a, const so_graph *b, double threshold, double *ratio, int *how)
{
    so_cost_side *oa = NULL, *ob = NULL;
    int32_t ka = 0, kb = 0;
    *ratio = 1;
    *how = SO_PAIRED_SAME;
    so_cost_side_diff(cm, a, b, &oa, &ka, &ob, &kb);
    so_status st = SO_OK;
    if (ka == 0 || kb == 0) { /* one side's configurations are a part of the other's: no timing decides that */
        *ratio = ka == 0 && kb == 0 ? 1 : ka == 0 ? 0 : INFINITY;
        goto out;
    }
    if (getenv("SO_DEBUG_LAYOUT")) { /* what differs: each side's configurations (one node each, how many more times) */
        char d[200];
        for (int side = 0; side < 2; side++) {
            fprintf(stderr, "  paired side %c:", side ? 'b' : 'a');
            for (int32_t q = 0; q < (side ? kb : ka); q++) {
                const so_cost_side *c = side ? &ob[q] : &oa[q];
                fprintf(stderr, " %s%s x%d", so_node_desc(side ? b : a, c->node, d, sizeof d), c->role == SO_COST_HEAD ? "+fused" : "", (int)c->count);
            }
            fprintf(stderr, "\n");
        }
    }
    const uint64_t key = paired_key(oa, ka, ob, kb);
    if (so_cost_confirm_get(cm, key, ratio)) {
        *how = SO_PAIRED_RECORDED;
        goto out;
    }
    if (!(cm->paired_seconds < cm->paired_budget)) { /* the budget is spent: the caller's cached prices decide */
        *ratio = NAN;
        *how = SO_PAIRED_CUT;
        cm->paired_cut++;
        goto out;
    }
    double r_ms[SO_COST_PAIRED_ROUNDS], t0 = so_now();
    double *ba = so_xmalloc(((size_t)ka + (size_t)kb) * sizeof *ba), *bb = ba + ka;
    for (int32_t q = 0; q < ka + kb; q++) ba[q] = INFINITY;
    int rounds = 0, below = 0;
    for (int r = 0; r < SO_COST_PAIRED_ROUNDS && st == SO_OK; r++) {
        /* every round so far on one side of the threshold after SO_COST_PAIRED_MIN_ROUNDS: settled */
        if (r >= SO_COST_PAIRED_MIN_ROUNDS && (below == 0 || below == r)) break;
        /* no extra rounds once the budget is spent (the minimum ones still run: a decision begun is finished) */
        if (r >= SO_COST_PAIRED_MIN_ROUNDS && !(cm->paired_seconds + (so_now() - t0) < cm->paired_budget)) break;
        double ta = 0, tb = 0;
        /* a b, b a, a b, ...: a trend in the machine's speed weighs on both sides alike */
        if (r % 2 == 0) st = time_side(cm, a, oa, ka, ba, &ta) != SO_OK || time_side(cm, b, ob, kb, bb, &tb) != SO_OK ? SO_ERR : SO_OK;
        else st = time_side(cm, b, ob, kb, bb, &tb) != SO_OK || time_side(cm, a, oa, ka, ba, &ta) != SO_OK ? SO_ERR : SO_OK;
        r_ms[r] = tb > 0 ? ta / tb : INFINITY;
        below += r_ms[r] < threshold;
        rounds = r + 1;
        if (getenv("SO_DEBUG_LAYOUT") && st == SO_OK)
            fprintf(stderr, "  paired round %d: %.6f / %.6f ms = %.4f\n", r, ta, tb, r_ms[r]);
    }
    cm->paired_seconds += so_now() - t0;
    cm->paired++;
    if (st != SO_OK) { /* cannot time a side: the caller keeps its priced decision */
        free(ba);
        goto out;
    }
    /* each configuration at its fastest over the rounds (other processes only ever add time, and a timing whose
       kernel selection was misled by the load is slower: ResNet-50's layer4 conv2 timed plain 3.7 or 8.7 ms,
       Inception-v3's 7x1 conv blocked 1.5 or 6.5 ms, round by round, at load 7-9); the two sides' sums of those */
    double sa = 0, sb = 0;
    for (int32_t q = 0; q < ka; q++) sa += oa[q].count * ba[q];
    for (int32_t q = 0; q < kb; q++) sb += ob[q].count * bb[q];
    free(ba);
    *ratio = sb > 0 ? sa / sb : INFINITY;
    if (getenv("SO_DEBUG_LAYOUT")) {
        qsort(r_ms, (size_t)rounds, sizeof *r_ms, cmp_double);
        fprintf(stderr, "  paired: fastest %.6f / %.6f ms = %.4f (median of rounds %.4f)\n", sa, sb, *ratio, r_ms[rounds / 2]);
    }
    *how = SO_PAIRED_TIMED;
    so_cost_confirm_put(cm, key, *ratio); /* recorded: a later run on this cache decides the same way */
out:
    free(oa);
    free(ob);
    return st;
}

/* ---------------- cost table (--cost-table) ---------------- */

/* What a table is valid for: "isa=... cpu=... onednn=... blas=CORE/ROUTED" of this run (no executable hash: a
   table outlives rebuilds). */
static void table_scope(char *desc, size_t n, so_isa isa)
{
    const int onednn = isa >= SO_ISA_AVX2 && so_fast_use_onednn && so_dnnl_lib();
    snprintf(desc, n, "isa=%s cpu=%s onednn=%d blas=%s/%d", so_isa_name(isa), so_isa_cpu_model(), onednn, so_blas_core(), so_blas_ours(isa));
}

#define TABLE_MAGIC "# superopt cost table v1\n"
#define TABLE_STAT "statistic=median-of-round-lower-quartiles"

so_status so_cost_table_load(so_cost_model *cm, const char *path)
{
    so_isa isa;
    if (so_isa_current(&isa) != SO_OK) return SO_ERR;
    cm->isa = (int)isa;
    free(cm->table);
    cm->table = so_xstrdup(path);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return SO_OK; /* measured by this run, written by so_cost_table_save */
        return so_errorf("%s: cannot read cost table: %s", path, strerror(errno));
    }
    FILE *f = so_open_regular(path, NULL);
    if (!f) return so_error_prefix("cost table");
    char line[1024], scope[600], want[700];
    table_scope(scope, sizeof scope, isa);
    snprintf(want, sizeof want, "# %s rounds=%d %s\n", scope, SO_COST_TABLE_ROUNDS, TABLE_STAT);
    want[strcspn(want, "\n")] = 0; /* compared without the newline; "this run is" quotes it */
    so_status st = SO_OK;
    if (!fgets(line, sizeof line, f) || strcmp(line, TABLE_MAGIC) != 0) {
        st = so_errorf("%s: not a superopt cost table (first line must be '%.*s')", path, (int)strlen(TABLE_MAGIC) - 1, TABLE_MAGIC);
        goto done;
    }
    if (!fgets(line, sizeof line, f) || (line[strcspn(line, "\n")] = 0, strcmp(line, want) != 0)) {
        st = so_errorf("%s: cost table is for '%s', this run is '%s'; measure a new table (another file name)", path,
                       line[0] == '#' ? line + 2 : line, want + 2);
        goto done;
    }
    for (int ln = 3; fgets(line, sizeof line, f); ln++) {
        unsigned long long k;
        double ms;
        char extra;
        if (sscanf(line, "%16llx\t%lf %c", &k, &ms, &extra) != 2 || !k || !isfinite(ms) || ms <= 0 || ms >= 3.6e6) {
            st = so_errorf("%s:%d: bad cost table entry (want '<16 hex digits>\\t<ms>', 0 < ms < 3.6e6)", path, ln);
            goto done;
        }
        so_hmap_put(&cm->cache, (uint64_t)k, d2u(ms));
        cm->table_loaded++;
    }
    cm->loaded = cm->table_loaded;
done:
    fclose(f);
    return st;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

so_status so_cost_table_save(so_cost_model *cm)
{
    if (!cm->table || !cm->dirty) return SO_OK;
    uint64_t *keys = so_xmalloc((cm->cache.cap + 1) * sizeof *keys);
    size_t nk = 0;
    for (uint64_t i = 0; i < cm->cache.cap; i++)
        if (cm->cache.keys[i]) keys[nk++] = cm->cache.keys[i];
    qsort(keys, nk, sizeof *keys, cmp_u64);
    so_atomic out;
    if (so_atomic_open(&out, cm->table, "w") != SO_OK) {
        free(keys);
        return SO_ERR;
    }
    char scope[600];
    table_scope(scope, sizeof scope, (so_isa)cm->isa);
    fprintf(out.f, TABLE_MAGIC "# %s rounds=%d %s\n", scope, SO_COST_TABLE_ROUNDS, TABLE_STAT);
    for (size_t i = 0; i < nk; i++) {
        uint64_t v = 0;
        so_hmap_get(&cm->cache, keys[i], &v);
        fprintf(out.f, "%016llx\t%.17g\n", (unsigned long long)keys[i], u2d(v));
    }
    free(keys);
    if (so_atomic_commit(&out, cm->table, 1) != SO_OK) return SO_ERR;
    cm->dirty = 0;
    return SO_OK;
}
