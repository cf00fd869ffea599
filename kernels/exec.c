/* exec.c - the executor: liveness memory plan, kernel selection at load, flat run loop, profiler, FLOP counter. */
#include "exec.h"

#include <cpuid.h>
#include <math.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

#include <cblas.h>
#include <immintrin.h>
#include <omp.h>

#include "blas.h"
#include "fast.h"
#include "fuse.h"
#include "isa.h"
#include "ref.h"
#include "wait.h"

#define ALIGN 64
#define MAX_SAMPLES 512

/* Where a value (node output) lives. */
enum { LOC_NONE = 0, LOC_ARENA, LOC_WEIGHT, LOC_INPUT, LOC_SUB };

typedef struct value {
    int kind;
    size_t offset;       /* LOC_ARENA: byte offset in the arena */
    size_t bytes;
    void *ptr;           /* LOC_WEIGHT: weight data */
    int32_t input;       /* LOC_INPUT: model input index */
    int32_t first, last; /* LOC_ARENA: lifetime in node indices, inclusive */
    int32_t parent;      /* LOC_SUB: the concat output / split input this value is a slice of */
    size_t sub_off;      /* LOC_SUB: byte offset inside the parent */
    int is_parent;       /* a zero-copy concat output */
} value;

/* A pointer inside a step's tensors that must be set to model input `input` per run. */
typedef struct patch {
    void **slot;
    int32_t input;
} patch;

typedef struct step {
    int32_t node;          /* head node (kernel selected for it) */
    int32_t pos;           /* node index whose outputs the step produces (last fused node) */
    int32_t *in_vid;       /* root value of each input, -1 if absent */
    int n_in, n_out;
    so_tensor *in, *out;   /* malloc'd; data pointers resolved at plan time */
    so_fast_kernel k;      /* k.run == NULL: reference kernel */
    double *samples;       /* profile: ms per run, circular */
    int32_t n_samples;
} step;

struct so_exec {
    const so_graph *g;
    so_exec_opts opts;
    so_isa isa;            /* level the fast kernels were selected at */
    char blas[160];        /* so_blas_describe at that level */
    int32_t n_values;      /* total node outputs */
    int32_t *value_base;   /* [n_nodes]: index of slot 0 in values */
    value *values;
    step *steps;
    int32_t n_steps;
    double *run_samples;   /* profile: per run, [2 * MAX_SAMPLES] circular: the run's wall ms, the sum of its steps' ms */
    uint32_t *facts;       /* [n_values] the run's absmax fact per value (so_fast_kernel.facts), reset every run; NULL: no
                              step binds facts */
    patch *patches;
    int32_t n_patches;
    unsigned char *arena;
    size_t arena_bytes;
    float *scratch;
    size_t scratch_bytes;
    size_t packed_bytes, weight_bytes;
    size_t charged;         /* so_mem_charge'd for arena, scratch and packed weights; released by so_exec_free */
    size_t released_bytes;  /* model weights freed at load (opts.consume_weights) */
    int32_t n_released;
    int32_t n_runs;
    /* outputs: source location per model output */
    so_tensor *out_src;    /* data resolved (input outputs patched per run) */
    int32_t *out_input;    /* model input index if the output is an input, else -1 */
};

static int32_t vid(const so_exec *e, so_edge ed) { return e->value_base[ed.node] + ed.slot; }

static size_t shape_bytes(const so_shape *s)
{
    int64_t n = so_shape_numel(s);
    size_t el = s->dtype == SO_I64 ? 8 : 4;
    return (size_t)n * el;
}

static _Thread_local int cur_threads = -1;

static void set_threads(int threads)
{
    if (threads <= 0) threads = 1;
    if (threads == cur_threads) return;
    /* One thread pool: OpenMP teams of exactly `threads` run our loops, and sgemm runs
       single-threaded inside them (so_sgemm splits a product over the team; Winograd's 36
       products are shared out). Measured at --threads 2 on a quiet machine: OpenBLAS's own
       threads next to OpenMP's made the two spinning pools fight (ResNet-50 204 ms), and
       dynamic teams, which libgomp shrinks by the load average (this process included), ran
       our loops on one thread (111 ms); one pool: 76 ms. Results depend on the thread count
       only through the fixed split of each loop and product. */
    openblas_set_num_threads(1);
    omp_set_num_threads(threads);
    omp_set_dynamic(0);
    cur_threads = threads;
}

/* ---- memory planning: greedy by size over lifetimes (inclusive intervals) ----
   Values are placed largest first, each at the lowest offset free of every placed value whose
   lifetime overlaps its own. Those values are found with a max-tree over the arena values sorted
   by first use (leaf: last use once placed, else empty), so a plan costs
   O(sum over values of (overlapping placed values + 1) * log n) rather than a scan of every
   placed value per value; the offsets are the same as the scan's. */
typedef struct placed {
    size_t off, end;
} placed;

static int cmp_size_desc(const void *a, const void *b, void *ctx)
{
    const value *v = ctx;
    const value *x = &v[*(const int32_t *)a], *y = &v[*(const int32_t *)b];
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return *(const int32_t *)a - *(const int32_t *)b;
}

static int cmp_first(const void *a, const void *b, void *ctx)
{
    const value *v = ctx;
    const value *x = &v[*(const int32_t *)a], *y = &v[*(const int32_t *)b];
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return *(const int32_t *)a - *(const int32_t *)b;
}

static int cmp_off(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

static size_t arena_need(size_t bytes)
{
    size_t need = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return need ? need : ALIGN;
}

/* Max-tree over values sorted by first use: tree node t covers sorted positions [lo, hi). */
typedef struct plan_tree {
    const value *v;
    const int32_t *byfirst; /* value indices sorted by (first, index) */
    int32_t *mx;            /* [2 * leaves]: max last use of the placed values below, INT32_MIN: none */
    int32_t leaves;
} plan_tree;

/* Appends to live the placed values at sorted positions < lim (first use <= the query's last)
   whose last use is >= first. */
static void plan_collect(const plan_tree *t, int32_t node, int32_t lo, int32_t hi, int32_t lim, int32_t first,
                         placed *live, int32_t *n_live)
{
    if (lo >= lim || t->mx[node] < first) return;
    if (hi - lo == 1) {
        const value *y = &t->v[t->byfirst[lo]];
        live[(*n_live)++] = (placed){y->offset, y->offset + arena_need(y->bytes)};
        return;
    }
    int32_t mid = lo + (hi - lo) / 2;
    plan_collect(t, 2 * node, lo, mid, lim, first, live, n_live);
    plan_collect(t, 2 * node + 1, mid, hi, lim, first, live, n_live);
}

static size_t plan_arena(value *v, int32_t n)
{
    int32_t *order = so_xmalloc(sizeof *order * (size_t)(n + 1));
    int32_t *byfirst = so_xmalloc(sizeof *byfirst * (size_t)(n + 1));
    int32_t *pos = so_xmalloc(sizeof *pos * (size_t)(n + 1));
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (v[i].kind == LOC_ARENA) order[m++] = i;
    memcpy(byfirst, order, sizeof *order * (size_t)m);
    qsort_r(order, (size_t)m, sizeof *order, cmp_size_desc, v);
    qsort_r(byfirst, (size_t)m, sizeof *byfirst, cmp_first, v);
    for (int32_t k = 0; k < m; k++) pos[byfirst[k]] = k;
    plan_tree t = {v, byfirst, NULL, 1};
    while (t.leaves < m) t.leaves *= 2;
    t.mx = so_xmalloc(sizeof *t.mx * 2 * (size_t)t.leaves);
    for (int32_t k = 0; k < 2 * t.leaves; k++) t.mx[k] = INT32_MIN;
    placed *live = so_xmalloc(sizeof *live * (size_t)(m + 1));
    size_t total = 0;
    for (int32_t k = 0; k < m; k++) {
        value *x = &v[order[k]];
        size_t need = arena_need(x->bytes);
        int32_t lo = 0, hi = m; /* lim: sorted positions whose first use is <= x->last */
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (v[byfirst[mid]].first <= x->last) lo = mid + 1;
            else hi = mid;
        }
        int32_t n_live = 0;
        plan_collect(&t, 1, 0, t.leaves, lo, x->first, live, &n_live);
        qsort(live, (size_t)n_live, sizeof *live, cmp_off);
        size_t off = 0;
        for (int32_t j = 0; j < n_live; j++) {
            if (live[j].off >= off + need) break;
            if (live[j].end > off) off = live[j].end;
        }
        x->offset = off;
        for (int32_t u = t.leaves + pos[order[k]]; u >= 1; u /= 2)
            if (t.mx[u] < x->last) t.mx[u] = x->last;
        if (off + need > total) total = off + need;
    }
    free(order);
    free(byfirst);
    free(pos);
    free(t.mx);
    free(live);
    return total;
}

/* ---- kernels ---- */
static so_status run_ref(const so_exec *e, const step *s)
{
    const so_node *n = &e->g->nodes[s->node];
    return so_ref_kernels[n->op](e->g, n, s->in, s->out);
}

static so_status unsupported(const so_graph *g, int32_t i)
{
    const so_node *n = &g->nodes[i];
    const char *type = so_ops[n->op].name;
    if (n->op == SO_OP_OPAQUE && n->ref >= 0 && n->ref < g->model->n_opaque) type = g->model->opaque[n->ref].op_type;
    /* an If kept opaque (src/onnx_build.c opaque_if): its condition depends on input values */
    const char *why = !strcmp(type, "If") ? " (its condition is not known at import: run --inputs DIR binds the inputs it depends on and "
                                            "runs the taken branch)"
                                          : "";
    if (n->name && n->name[0]) return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node '%s'%s", type, n->name, why);
    return so_errorc(SO_ERR_UNSUPPORTED, "unsupported operator '%s' at node #%d%s", type, (int)i, why);
}

static int cmp_step_pos(const void *a, const void *b)
{
    const step *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->node - y->node;
}

static void add_patch(so_exec *e, int32_t *cap, void **slot, int32_t input)
{
    if (e->n_patches == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        e->patches = so_xrealloc(e->patches, sizeof *e->patches * (size_t)*cap);
    }
    e->patches[e->n_patches++] = (patch){slot, input};
}

/* Zero-copy Concat: when the concatenated slices are contiguous (all dims before the axis
   are 1) and every input is a single-output step's value used by no other zero-copy concat,
   the producers write straight into their slice of the output and the Concat step is
   dropped. The output's lifetime grows to cover its inputs'. A blocked CONCAT_NCHWC
   (ints = b, C0, C1, ...) is contiguous for one image when every input but the last has whole
   blocks (Cq a multiple of b): its slices are then [Cq/b][H][W][b], back to back. */
static int concat_contiguous(const so_node *n)
{
    if (n->op == SO_OP_CONCAT) {
        for (int d = 0; d < n->attr->axis; d++)
            if (n->out[0].dim[d] != 1) return 0;
        return 1;
    }
    if (n->op != SO_OP_CONCAT_NCHWC || n->out[0].rank != 5 || n->out[0].dim[0] != 1 || n->attr->n_ints != n->n_in + 1) return 0;
    const int64_t b = n->attr->ints[0];
    for (int q = 0; q + 1 < n->n_in; q++)
        if (b <= 0 || n->attr->ints[q + 1] % b) return 0;
    return 1;
}

static void concat_in_place(so_exec *e)
{
    const so_graph *g = e->g;
    int32_t kept = 0;
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        const so_node *n = &g->nodes[s->node];
        int ok = (n->op == SO_OP_CONCAT || n->op == SO_OP_CONCAT_NCHWC) && s->k.n_fused == 0 && s->n_in == n->n_in;
        value *V = ok ? &e->values[e->value_base[s->node]] : NULL;
        if (ok) ok = V->kind == LOC_ARENA && !V->is_parent && concat_contiguous(n);
        for (int32_t q = 0; ok && q < s->n_in; q++) {
            int32_t id = s->in_vid[q];
            if (id < 0 || e->values[id].kind != LOC_ARENA || e->values[id].is_parent) ok = 0;
            else if (g->nodes[n->in[q].node].n_out != 1 || id != e->value_base[n->in[q].node]) ok = 0; /* not a view */
            for (int32_t r = 0; ok && r < q; r++)
                if (s->in_vid[r] == id) ok = 0;
        }
        if (!ok) {
            e->steps[kept++] = *s;
            continue;
        }
        size_t off = 0;
        for (int32_t q = 0; q < s->n_in; q++) {
            value *v = &e->values[s->in_vid[q]];
            v->kind = LOC_SUB;
            v->parent = e->value_base[s->node];
            v->sub_off = off;
            off += v->bytes;
            if (v->first < V->first) V->first = v->first;
            if (v->last > V->last) V->last = v->last;
        }
        V->is_parent = 1;
        free(s->in);
        free(s->in_vid);
        free(s->out);
        free(s->samples);
        if (s->k.free_priv) s->k.free_priv(s->k.priv);
    }
    e->n_steps = kept;
}

/* Zero-copy Split and Slice: when the slices are contiguous (Split: all dims before the axis
   are 1; Slice: so_fuse_slice_run) and the input is an arena value of its own (not itself a
   slice), the outputs are views of their slice of the input and the step is dropped. The
   input's lifetime grows to cover its outputs'. Runs after concat_in_place: a Slice output that
   concat_in_place made a slice of a concat is LOC_SUB already, and its Slice step stays. */
static void split_in_place(so_exec *e)
{
    const so_graph *g = e->g;
    int32_t kept = 0;
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        const so_node *n = &g->nodes[s->node];
        int ok = (n->op == SO_OP_SPLIT || n->op == SO_OP_SLICE) && s->k.n_fused == 0 && s->n_in == 1 && s->in_vid[0] >= 0;
        value *V = ok ? &e->values[s->in_vid[0]] : NULL;
        int64_t off0 = 0;
        if (ok) ok = V->kind == LOC_ARENA;
        if (ok) {
            const so_shape *is = &g->nodes[n->in[0].node].out[n->in[0].slot];
            if (n->op == SO_OP_SLICE) ok = (off0 = so_fuse_slice_run(n, is)) >= 0;
            else
                for (int d = 0; d < n->attr->axis && d < is->rank; d++)
                    if (is->dim[d] != 1) ok = 0;
        }
        for (int32_t q = 0; ok && q < n->n_out; q++)
            if (e->values[e->value_base[s->node] + q].kind != LOC_ARENA) ok = 0;
        if (!ok) {
            e->steps[kept++] = *s;
            continue;
        }
        size_t off = (size_t)off0;
        for (int32_t q = 0; q < n->n_out; q++) {
            value *v = &e->values[e->value_base[s->node] + q];
            v->kind = LOC_SUB;
            v->parent = s->in_vid[0];
            v->sub_off = off;
            off += v->bytes;
            if (v->first < V->first) V->first = v->first;
            if (v->last > V->last) V->last = v->last;
        }
        free(s->in);
        free(s->in_vid);
        free(s->out);
        free(s->samples);
        if (s->k.free_priv) s->k.free_priv(s->k.priv);
    }
    e->n_steps = kept;
}

/* Whether step s's kernel never reads input q: only input 1, a WEIGHT its selector packed or
   transformed into priv (so_fast_kernel.in1_copied: fast.c mm_use_gemm, conv.c CONV_WINO /
   CONV_STEM / so_gemm 1x1). */
static int uses_packed_copy(const step *s, int32_t q) { return s->k.run && s->k.in1_copied && q == 1; }

/* opts.consume_weights: readers[w] = uses of weight id w by any graph node input (duplicate
   WEIGHT nodes of one id all count), + 2 when a graph output is one of its WEIGHT nodes. */
static int32_t *count_weight_readers(const so_graph *g)
{
    const so_model *m = g->model;
    int32_t *readers = so_xcalloc((size_t)m->n_weights + 1, sizeof *readers);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_in; k++)
            if (n->in[k].node >= 0 && g->nodes[n->in[k].node].op == SO_OP_WEIGHT) readers[g->nodes[n->in[k].node].ref]++;
    }
    for (int32_t o = 0; o < m->n_outputs; o++)
        if (g->outputs[o].node >= 0 && g->nodes[g->outputs[o].node].op == SO_OP_WEIGHT) readers[g->nodes[g->outputs[o].node].ref] += 2;
    return readers;
}

/* Right after step s's kernel is selected (so the peak holds one weight twice at most, not all):
   when s uses the packed copy of its input-1 weight w and that was w's last reader, frees w's
   data, sets it NULL in the model and in w's WEIGHT values (step tensors are wired from those
   later, so they get NULL too). Returns 1 when it released a weight. */
static int release_if_packed(so_exec *e, const step *s, const int32_t *readers, int32_t *packed)
{
    const so_graph *g = e->g;
    const so_node *n = &g->nodes[s->node];
    if (n->n_in < 2 || n->in[1].node < 0 || g->nodes[n->in[1].node].op != SO_OP_WEIGHT || !uses_packed_copy(s, 1)) return 0;
    int32_t w = g->nodes[n->in[1].node].ref;
    so_weight *wt = &g->model->weights[w];
    if (++packed[w] != readers[w] || wt->shape.dtype != SO_F32 || !wt->data) return 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == SO_OP_WEIGHT && g->nodes[i].ref == w) e->values[e->value_base[i]].ptr = NULL;
    free(wt->data);
    wt->data = NULL;
    e->released_bytes += shape_bytes(&wt->shape);
    e->n_released++;
    return 1;
}

so_status so_exec_new(const so_graph *g, const so_exec_opts *opts, so_exec **out)
{
    so_status st = SO_ERR;
    so_exec *e = so_xcalloc(1, sizeof *e);
    int32_t *root = NULL, *user = NULL;
    char *absorbed = NULL;
    int32_t *readers = NULL, *packed = NULL; /* opts.consume_weights */
    int released = 0;
    e->g = g;
    if (opts) e->opts = *opts;
    if (so_isa_current(&e->isa) != SO_OK) goto done; /* SUPEROPT_ISA names a level this CPU lacks */
    so_blas_describe(e->isa, e->blas, sizeof e->blas);
    if (e->opts.threads <= 0) e->opts.threads = 1;
    set_threads(e->opts.threads);
    char desc[256];
    const so_model *m = g->model;

    /* values */
    e->value_base = so_xmalloc(sizeof *e->value_base * (size_t)(g->n_nodes + 1));
    int32_t nv = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        e->value_base[i] = nv;
        nv += g->nodes[i].n_out;
    }
    e->n_values = nv;
    e->values = so_xcalloc((size_t)nv + 1, sizeof *e->values);
    root = so_xmalloc(sizeof *root * (size_t)(nv + 1));
    absorbed = so_xcalloc((size_t)g->n_nodes + 1, 1);

    /* root of each value: views alias their input */
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        for (int32_t k = 0; k < n->n_in; k++) {
            if (n->in[k].node < 0) {
                if (so_ops[n->op].flags & SO_F_VIEW) {
                    so_errorf("%s: missing input", so_node_desc(g, i, desc, sizeof desc));
                    goto done;
                }
                continue; /* absent optional input */
            }
            if (n->in[k].node >= i || n->in[k].slot < 0 || n->in[k].slot >= g->nodes[n->in[k].node].n_out) {
                so_errorf("%s: input %d is not an earlier node (graph not topologically sorted?)",
                          so_node_desc(g, i, desc, sizeof desc), k);
                goto done;
            }
        }
        if (n->op == SO_OP_OPAQUE) {
            st = unsupported(g, i);
            goto done;
        }
        for (int32_t s = 0; s < n->n_out; s++) {
            int32_t id = e->value_base[i] + s;
            value *v = &e->values[id];
            root[id] = id;
            if (n->out[s].rank < 0) {
                so_errorf("%s: output %d has unknown shape", so_node_desc(g, i, desc, sizeof desc), s);
                goto done;
            }
            v->bytes = shape_bytes(&n->out[s]);
            if (n->op == SO_OP_INPUT) {
                v->kind = LOC_INPUT;
                v->input = n->ref;
            } else if (n->op == SO_OP_WEIGHT) {
                v->kind = LOC_WEIGHT;
                v->ptr = m->weights[n->ref].data;
            } else if (so_ops[n->op].flags & SO_F_VIEW) {
                root[id] = root[vid(e, n->in[0])];
                v->kind = LOC_NONE;
            } else {
                v->kind = LOC_ARENA;
                v->first = v->last = i;
            }
        }
    }
    user = so_fuse_users(g, NULL); /* who may be absorbed: kernels/fuse.c, as the cost model sees it */

    /* steps: select kernels (fusion absorbs successors), then order by position */
    e->steps = so_xcalloc((size_t)g->n_nodes + 1, sizeof *e->steps);
    so_fast_ctx fctx = {g, user, absorbed};
    if (e->opts.consume_weights && !e->opts.reference) {
        readers = count_weight_readers(g);
        packed = so_xcalloc((size_t)m->n_weights + 1, sizeof *packed);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *n = &g->nodes[i];
        unsigned fl = so_ops[n->op].flags;
        if ((fl & (SO_F_SOURCE | SO_F_VIEW)) || absorbed[i]) continue;
        step *s = &e->steps[e->n_steps++];
        s->node = i;
        s->pos = i;
        if (!e->opts.reference) {
            if (so_fast_select(&fctx, i, &s->k) != SO_OK) goto done;
            e->packed_bytes += s->k.packed_bytes;
            if (s->k.scratch_bytes > e->scratch_bytes) e->scratch_bytes = s->k.scratch_bytes;
            for (int32_t f = 0; f < s->k.n_fused; f++) absorbed[s->k.fused[f]] = 1;
            if (s->k.n_fused) s->pos = s->k.fused[s->k.n_fused - 1];
            if (readers) released += release_if_packed(e, s, readers, packed);
        }
    }
#ifdef __GLIBC__
    if (released) (void)malloc_trim(0); /* freed blocks inside the heap go back to the OS too */
#endif
    qsort(e->steps, (size_t)e->n_steps, sizeof *e->steps, cmp_step_pos);
    /* step inputs and outputs as values; dead intermediates of fused chains get no memory */
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        const so_node *n = &g->nodes[s->node];
        int32_t last = s->pos;
        if (s->k.n_fused) {
            e->values[e->value_base[s->node]].kind = LOC_NONE;
            for (int32_t f = 0; f + 1 < s->k.n_fused; f++) e->values[e->value_base[s->k.fused[f]]].kind = LOC_NONE;
        }
        s->n_in = n->n_in + (s->k.has_extra ? 1 : 0);
        s->n_out = g->nodes[last].n_out;
        s->in = so_xcalloc((size_t)s->n_in + 1, sizeof *s->in);
        s->in_vid = so_xmalloc(sizeof *s->in_vid * (size_t)(s->n_in + 1));
        s->out = so_xcalloc((size_t)s->n_out + 1, sizeof *s->out);
        for (int32_t q = 0; q < s->n_in; q++) {
            so_edge ed = q < n->n_in ? n->in[q] : s->k.extra_in;
            s->in_vid[q] = ed.node >= 0 ? root[vid(e, ed)] : -1;
            if (ed.node >= 0) s->in[q].shape = g->nodes[ed.node].out[ed.slot];
        }
        for (int32_t q = 0; q < s->n_out; q++) s->out[q].shape = g->nodes[last].out[q];
    }
    /* lifetimes over step positions: uses extend the root's lifetime; outputs live to the end */
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        for (int32_t q = 0; q < s->n_in; q++) {
            if (s->in_vid[q] < 0) continue;
            value *r = &e->values[s->in_vid[q]];
            if (r->kind == LOC_ARENA && r->last < s->pos) r->last = s->pos;
        }
    }
    for (int32_t o = 0; o < m->n_outputs; o++) {
        value *r = &e->values[root[vid(e, g->outputs[o])]];
        if (r->kind == LOC_ARENA) r->last = g->n_nodes;
    }
    concat_in_place(e);
    split_in_place(e);
    e->arena_bytes = plan_arena(e->values, nv);
    for (int32_t id = 0; id < nv; id++) /* zero-copy concat inputs and split outputs: slices of their parent */
        if (e->values[id].kind == LOC_SUB) {
            e->values[id].kind = LOC_ARENA;
            e->values[id].offset = e->values[e->values[id].parent].offset + e->values[id].sub_off;
        }
    if (e->arena_bytes > so_max_alloc_bytes) {
        so_errorf("activation arena of %zu bytes exceeds the limit", e->arena_bytes);
        goto done;
    }
    {
        size_t total = e->arena_bytes + e->scratch_bytes + e->packed_bytes; /* each <= the limit: no overflow */
        if (so_mem_charge(total, "activations, scratch and packed weights") != SO_OK) goto done;
        e->charged = total;
    }
    e->arena = so_big_alloc(e->arena_bytes);
    if (!e->arena) {
        so_errorf("cannot allocate %zu bytes of activations", e->arena_bytes);
        goto done;
    }
    /* views take their root's location */
    for (int32_t id = 0; id < nv; id++)
        if (root[id] != id) {
            const value *r = &e->values[root[id]];
            value *v = &e->values[id];
            size_t bytes = v->bytes;
            *v = *r;
            v->bytes = bytes;
        }
    for (int32_t i = 0; i < m->n_weights; i++) e->weight_bytes += shape_bytes(&m->weights[i].shape);

    /* wire step tensors */
    int32_t cap_patches = 0;
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        for (int32_t q = 0; q < s->n_in; q++) {
            if (s->in_vid[q] < 0) continue;
            const value *v = &e->values[s->in_vid[q]];
            if (v->kind == LOC_ARENA) s->in[q].data = e->arena + v->offset;
            else if (v->kind == LOC_WEIGHT) s->in[q].data = v->ptr;
            else if (v->kind == LOC_INPUT) add_patch(e, &cap_patches, &s->in[q].data, v->input);
        }
        for (int32_t q = 0; q < s->n_out; q++) {
            const value *v = &e->values[e->value_base[s->pos] + q];
            s->out[q].data = e->arena + v->offset;
        }
        if (e->opts.profile) s->samples = so_xcalloc(MAX_SAMPLES, sizeof *s->samples);
    }
    /* absmax facts: one per value, for the steps whose kernels use them (inputs by their root value, which views
       share; outputs by their own value: a zero-copy concat's part never stands for the whole) */
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        if (!s->k.run || !s->k.facts) continue;
        if (!e->facts) {
            e->facts = so_xmalloc(sizeof *e->facts * (size_t)(nv + 1));
            memset(e->facts, 0xff, sizeof *e->facts * (size_t)(nv + 1));
        }
        uint32_t *fi[SO_MAX_IN + 2] = {0}, *fo[9] = {0}; /* (inputs: the node's and an absorbed one's extra input) */
        for (int32_t q = 0; q < s->n_in && q < SO_MAX_IN + 1; q++) fi[q] = s->in_vid[q] >= 0 ? &e->facts[s->in_vid[q]] : NULL;
        for (int32_t q = 0; q < s->n_out && q < 8; q++) fo[q] = &e->facts[e->value_base[s->pos] + q];
        s->k.facts(s->k.priv, fi, fo);
    }
    if (e->opts.profile) e->run_samples = so_xcalloc(2 * MAX_SAMPLES, sizeof *e->run_samples);
    if (e->scratch_bytes) {
        e->scratch = so_big_alloc(e->scratch_bytes);
        if (!e->scratch) {
            so_errorf("cannot allocate %zu bytes of kernel scratch", e->scratch_bytes);
            goto done;
        }
    }
    /* outputs */
    e->out_src = so_xcalloc((size_t)m->n_outputs + 1, sizeof *e->out_src);
    e->out_input = so_xcalloc((size_t)m->n_outputs + 1, sizeof *e->out_input);
    for (int32_t o = 0; o < m->n_outputs; o++) {
        so_edge ed = g->outputs[o];
        const value *v = &e->values[vid(e, ed)];
        e->out_src[o].shape = g->nodes[ed.node].out[ed.slot];
        e->out_input[o] = -1;
        if (v->kind == LOC_ARENA) e->out_src[o].data = e->arena + v->offset;
        else if (v->kind == LOC_WEIGHT) e->out_src[o].data = v->ptr;
        else e->out_input[o] = v->input;
    }
    if (e->opts.hugepages) so_heap_hugepages();
    st = SO_OK;
done:
    free(root);
    free(user);
    free(absorbed);
    free(readers);
    free(packed);
    if (st != SO_OK) {
        so_exec_free(e);
        e = NULL;
    }
    *out = e;
    return st;
}

so_status so_exec_run(so_exec *e, const float *const *inputs, float *const *outputs)
{
    const so_graph *g = e->g;
    set_threads(e->opts.threads);
    for (int32_t p = 0; p < e->n_patches; p++) *e->patches[p].slot = (void *)inputs[e->patches[p].input];
    int prof = e->opts.profile;
    const double run0 = prof ? so_now() : 0;
    if (e->facts) memset(e->facts, 0xff, sizeof *e->facts * (size_t)e->n_values); /* every fact SO_ABSMAX_UNKNOWN */
    double steps_ms = 0;
    for (int32_t k = 0; k < e->n_steps; k++) {
        step *s = &e->steps[k];
        double t0 = prof ? so_now() : 0;
        if (s->k.run) {
            s->k.run(s->k.priv, s->in, s->out, e->scratch);
        } else if (run_ref(e, s) != SO_OK) {
            char desc[256];
            return so_errorf("%s: %s", so_node_desc(g, s->node, desc, sizeof desc), so_error());
        }
        if (prof) {
            const double ms = (so_now() - t0) * 1e3;
            s->samples[e->n_runs % MAX_SAMPLES] = ms, steps_ms += ms;
            if (s->n_samples < MAX_SAMPLES) s->n_samples++;
        }
    }
    if (prof) {
        e->run_samples[2 * (e->n_runs % MAX_SAMPLES)] = (so_now() - run0) * 1e3;
        e->run_samples[2 * (e->n_runs % MAX_SAMPLES) + 1] = steps_ms;
        e->n_runs++;
    }
    /* the wait policy for the next run (kernels/wait.h): libgomp's short spin while this thread waited for a CPU */
    if (e->opts.threads > 1) so_wait_tick();
    for (int32_t o = 0; o < g->model->n_outputs; o++) {
        const void *src = e->out_input[o] >= 0 ? (const void *)inputs[e->out_input[o]] : e->out_src[o].data;
        memcpy(outputs[o], src, shape_bytes(&e->out_src[o].shape));
    }
    return SO_OK;
}

size_t so_exec_peak_activation_bytes(const so_exec *e) { return e->arena_bytes + e->scratch_bytes; }

const char *so_exec_isa_name(const so_exec *e) { return e->opts.reference ? "reference" : so_isa_name(e->isa); }

const char *so_exec_blas_name(const so_exec *e) { return e->opts.reference ? "reference" : e->blas; }
size_t so_exec_weight_bytes(const so_exec *e) { return e->weight_bytes - e->released_bytes + e->packed_bytes; }
size_t so_exec_released_weight_bytes(const so_exec *e) { return e->released_bytes; }
int32_t so_exec_n_released_weights(const so_exec *e) { return e->n_released; }
int32_t so_exec_n_steps(const so_exec *e) { return e->n_steps; }
int32_t so_exec_n_profiled_runs(const so_exec *e) { return e->n_runs; }

void so_exec_step(const so_exec *e, int32_t i, so_exec_step_info *info)
{
    const step *s = &e->steps[i];
    info->node = s->node;
    info->op = e->g->nodes[s->node].op;
    info->kernel = s->k.run ? s->k.name : "ref";
    info->flops = so_node_flops(e->g, s->node);
    for (int32_t f = 0; f < s->k.n_fused; f++) info->flops += so_node_flops(e->g, s->k.fused[f]);
    info->n_fused = s->k.n_fused;
    for (int32_t f = 0; f < s->k.n_fused && f < 4; f++) info->fused[f] = s->k.fused[f];
    info->path[0] = 0;
    if (s->k.run && s->k.path && s->k.path(s->k.priv, info->path, sizeof info->path) <= 0) info->path[0] = 0;
    info->median_ms = s->n_samples > 0 ? so_median(s->samples, (size_t)s->n_samples) : 0;
    info->min_ms = 0;
    for (int32_t r = 0; r < s->n_samples; r++)
        if (r == 0 || s->samples[r] < info->min_ms) info->min_ms = s->samples[r];
}

void so_exec_profile_print(const so_exec *e, FILE *f)
{
    const so_graph *g = e->g;
    double total = 0;
    double op_ms[SO_OP_COUNT] = {0};
    int64_t op_flops[SO_OP_COUNT] = {0};
    int32_t op_n[SO_OP_COUNT] = {0};
    so_exec_step_info *inf = so_xcalloc((size_t)e->n_steps + 1, sizeof *inf);
    for (int32_t i = 0; i < e->n_steps; i++) {
        so_exec_step(e, i, &inf[i]);
        total += inf[i].median_ms;
        op_ms[inf[i].op] += inf[i].median_ms;
        op_flops[inf[i].op] += inf[i].flops;
        op_n[inf[i].op]++;
    }
    int64_t all_flops = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) all_flops += so_node_flops(g, i);
    fprintf(f, "profile: %d runs, %d steps, sum of per-node medians %.3f ms, %.4f GFLOP per run\n", e->n_runs, e->n_steps,
            total, (double)all_flops / 1e9);
    /* per run: its wall time, and the part outside the steps (wall - the sum of its steps: the run loop, the timer) */
    const int32_t nr = e->n_runs < MAX_SAMPLES ? e->n_runs : MAX_SAMPLES;
    if (nr > 0) {
        double *wall = so_xcalloc((size_t)nr, sizeof *wall), *gap = so_xcalloc((size_t)nr, sizeof *gap), wmin = 0;
        for (int32_t r = 0; r < nr; r++) {
            wall[r] = e->run_samples[2 * r], gap[r] = e->run_samples[2 * r] - e->run_samples[2 * r + 1];
            if (r == 0 || wall[r] < wmin) wmin = wall[r];
        }
        fprintf(f, "runs: wall median %.3f ms, min %.3f ms; outside the steps median %.4f ms per run\n", so_median(wall, (size_t)nr), wmin,
                so_median(gap, (size_t)nr));
        free(wall), free(gap);
    }
    fprintf(f, "%-5s %-40s %-14s %-22s %10s %6s %9s %10s %9s\n", "step", "node", "op", "kernel", "ms", "%", "GFLOP/s", "min_ms", "min_GF/s");
    for (int32_t i = 0; i < e->n_steps; i++) {
        const so_node *n = &g->nodes[inf[i].node];
        char name[41];
        snprintf(name, sizeof name, "%s", n->name ? n->name : "?");
        double gf = inf[i].median_ms > 0 ? inf[i].flops / (inf[i].median_ms * 1e6) : 0;
        /* kernel[@path][+fused]: the path note (which code path the runs took, e.g. a oneDNN conv's fast primitive
           or exact pass) joined without spaces, so every row keeps its 9 fields (bench/isa_levels.sh,
           bench/steps_threads.sh) */
        char kname[96];
        snprintf(kname, sizeof kname, "%s%s%s", inf[i].kernel, inf[i].path[0] ? "@" : "", inf[i].path);
        if (e->steps[i].k.n_fused) snprintf(kname + strlen(kname), sizeof kname - strlen(kname), "+%d", (int)e->steps[i].k.n_fused);
        fprintf(f, "%-5d %-40s %-14s %-22s %10.4f %6.2f", i, name, so_ops[inf[i].op].name, kname,
                inf[i].median_ms, total > 0 ? 100 * inf[i].median_ms / total : 0);
        const int gfk = n->op == SO_OP_CONV || n->op == SO_OP_CONV_NCHWC || n->op == SO_OP_MATMUL || n->op == SO_OP_GEMM || n->op == SO_OP_LSTM;
        /* GFLOP/s columns: "-" where the op has none, so every row has the same 9 fields (bench/isa_levels.sh) */
        if (gfk) fprintf(f, " %9.2f %10.4f %9.2f\n", gf, inf[i].min_ms, inf[i].min_ms > 0 ? inf[i].flops / (inf[i].min_ms * 1e6) : 0);
        else fprintf(f, " %9s %10.4f %9s\n", "-", inf[i].min_ms, "-");
    }
    fprintf(f, "per op kind:\n%-14s %6s %10s %6s %9s\n", "op", "count", "ms", "%", "GFLOP/s");
    for (int op = 0; op < SO_OP_COUNT; op++) {
        if (!op_n[op]) continue;
        fprintf(f, "%-14s %6d %10.4f %6.2f", so_ops[op].name, op_n[op], op_ms[op], total > 0 ? 100 * op_ms[op] / total : 0);
        if (op == SO_OP_CONV || op == SO_OP_CONV_NCHWC || op == SO_OP_MATMUL || op == SO_OP_GEMM || op == SO_OP_LSTM)
            fprintf(f, " %9.2f", op_ms[op] > 0 ? op_flops[op] / (op_ms[op] * 1e6) : 0);
        fputc('\n', f);
    }
    free(inf);
}

void so_exec_free(so_exec *e)
{
    if (!e) return;
    for (int32_t i = 0; i < e->n_steps; i++) {
        step *s = &e->steps[i];
        free(s->in);
        free(s->in_vid);
        free(s->out);
        free(s->samples);
        if (s->k.free_priv) s->k.free_priv(s->k.priv);
    }
    free(e->steps);
    free(e->run_samples);
    free(e->patches);
    free(e->values);
    free(e->value_base);
    free(e->arena);
    free(e->scratch);
    free(e->facts);
    free(e->out_src);
    free(e->out_input);
    so_mem_release(e->charged);
    free(e);
}

/* ---- single-node timing for the cost model (search/cost.c) ---- */

#define EVICT_BYTES ((size_t)EVICT_KB << 10)

/* per configuration: at least MIN_RUNS timed runs, and more (up to the cap) until TARGET_MS of
   kernel time has been timed */
#define MIN_RUNS 2
#define TARGET_MS 4.0

#ifndef EVICT_KB
#define EVICT_KB 1024 /* twice the per-core L2 */
#endif

/* Times node i of g alone with the kernel the executor would select (no fusion), as it runs
   inside a model: before each timed run the caches are overwritten (weights and packed weights
   come from memory, as they do when a model's weights exceed the caches) and the activation
   inputs are read back (they were just produced by the previous step). After one warm-up,
   at least MIN_RUNS runs and more until TARGET_MS of kernel time (at most iters; 3 for kernels
   over 5 ms, 2 over 20 ms; lean and cold: see so_exec_time_lean); the result is the lower quartile
   of the runs. Threads as the
   executor sets them (OpenBLAS single-threaded, OpenMP team). */
/* Lean timing (default 1; 0: as before session 16, for A/B runs and tests). Flushing a model's weights
   (cold) with clflush dominated the cost model's time: clflush is ordered against every other clflush,
   about 4-6 ms per MB on the Intel Xeon model 207 (session 16), against 0.1-0.25 ms per MB for a
   cache-resident read of the same bytes, so a 1 MB GEMV weight (0.03 ms kernel) timed over 130 runs
   spent ~0.6 s flushing. Lean: (1) no flush before the warm-up run, whose time is not a sample
   (only the cap below reads it); (2) a cold configuration whose flushes cost more than its kernel
   stops after COLD_RUNS runs once the runs and their flushes together reach TARGET_MS: its lower
   quartile is then the second fastest of 8 instead of the 33rd of ~130. (clflushopt, ~30x faster,
   was tried in session 16 and not kept then: the GEMV kernels read weights packed at selection, which no
   flush of the model's weights reached: [1,512]x[512,512] 0.034-0.047 ms after clflush, 0.022-0.028 after
   clflushopt, ~0.05-0.08 in the model. The packed copy is flushed since; clflushopt is the default from
   session 20: so_exec_time_flushopt below.) */
int so_exec_time_lean = 1;
#define COLD_RUNS 8

int so_exec_time_enough(int done, double fastest_ms, double least_flush_ms, int cold)
{
    /* enough: at least MIN_RUNS runs and TARGET_MS of work, counted at the fastest run's
       time (a run preempted for a time slice must not end the series) */
    if (done >= MIN_RUNS && fastest_ms * done >= TARGET_MS) return 1;
    /* lean, cold: flushing costs more than the kernel; COLD_RUNS runs, with their flushes, are enough */
    return so_exec_time_lean && cold && done >= COLD_RUNS && least_flush_ms > fastest_ms && (fastest_ms + least_flush_ms) * done >= TARGET_MS;
}

/* How the cold timing flushes (session 20): with clflushopt (where the CPU has it, cpuid leaf 7 EBX
   bit 23) the same lines leave every cache level as with clflush, but the flushes are not ordered
   against each other, so they overlap: 0.1-0.4 ms per MB against clflush's 4-10 ms per MB on the
   Intel Xeon model 207 (a 28 MB enlarged conv's weights: 3-6 ms against 140-180 ms per timed run),
   and a stream read of the flushed bytes afterwards takes the same time after either (both from
   memory). Session 16 rejected clflushopt because nasrnn_512's GEMVs then timed 0.57x: they read
   the weights packed at selection, which neither flush reached, and clflush's slowness was what
   slowed them; the packed copy is flushed since (k.packed below), so the kernel's own bytes are
   what leaves the caches either way. The mfence after the flushes orders them before the run.
   0: clflush as before (A/B runs; valgrind's CPU has no clflushopt and gets clflush anyway). */
int so_exec_time_flushopt = 1;

static int have_clflushopt(void)
{
    static int known = -1;
    if (known < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        known = __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 23) & 1u);
    }
    return known;
}

__attribute__((target("clflushopt"))) static void flush_bytes_opt(const char *p, size_t nb)
{
    for (size_t j = 0; j < nb; j += 64) _mm_clflushopt((void *)(p + j));
    if (nb) _mm_clflushopt((void *)(p + nb - 1));
}

/* Flushes p[0..nb) from every cache level; returns the instruction's name (so_exec_timed.flush). */
static const char *flush_bytes(const char *p, size_t nb)
{
    if (so_exec_time_flushopt && have_clflushopt()) {
        flush_bytes_opt(p, nb);
        return "clflushopt";
    }
    for (size_t j = 0; j < nb; j += 64) _mm_clflush(p + j);
    if (nb) _mm_clflush(p + nb - 1);
    return "clflush";
}

so_status so_exec_time_node(const so_graph *g, int32_t i, int threads, int cold, int iters, double *min_ms)
{
    return so_exec_time_step(g, i, NULL, threads, cold, iters, min_ms, NULL);
}

so_status so_exec_time_step(const so_graph *g, int32_t i, const int32_t *user, int threads, int cold, int iters, double *min_ms,
                            so_exec_timed *what)
{
    so_status st = SO_ERR;
    const so_node *n = &g->nodes[i];
    so_tensor in[SO_MAX_IN + 1], out[SO_MAX_IN];
    so_edge ein[SO_MAX_IN + 1];
    void *owned[2 * SO_MAX_IN + 1];
    int n_owned = 0;
    size_t charged = 0; /* so_mem_charge'd for the buffers below */
    double *samples = NULL;
    so_fast_kernel k;
    memset(&k, 0, sizeof k);
    float *scratch = NULL;
    unsigned char *evict = NULL;
    char desc[256];
    *min_ms = 0;
    if (what) memset(what, 0, sizeof *what);
    if (so_ops[n->op].flags & (SO_F_SOURCE | SO_F_VIEW | SO_F_OPAQUE)) return SO_OK;
    if (n->n_in > SO_MAX_IN || n->n_out > SO_MAX_IN) return so_errorf("%s: too many edges", so_node_desc(g, i, desc, sizeof desc));
    if (iters < 1) iters = 1;
    double tph = so_now(); /* phase clock for *what */
    /* as the executor sets them: OpenBLAS's own threads too (left at its default, 2 here, a
       gemv was split over both cores and timed twice as slow whenever the other core was busy,
       while the model runs it on one thread) */
    set_threads(threads > 0 ? threads : 1);
    /* the kernel first: with user[], it may absorb successors (then its inputs are the head's plus
       the extra one, its outputs the last absorbed node's) */
    so_fast_ctx fctx = {g, user, NULL};
    if (so_fast_select(&fctx, i, &k) != SO_OK) goto done;
    if (what) what->select_seconds = so_now() - tph, tph = so_now();
    const int32_t n_in = n->n_in + (k.has_extra ? 1 : 0);
    const so_node *last = k.n_fused ? &g->nodes[k.fused[k.n_fused - 1]] : n;
    if (what) {
        what->kernel = k.run ? k.name : "ref";
        what->n_fused = k.n_fused;
        memcpy(what->fused, k.fused, sizeof(int32_t) * (size_t)k.n_fused);
    }
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)i;
    for (int32_t q = 0; q < n_in; q++) {
        memset(&in[q], 0, sizeof in[q]);
        ein[q] = q < n->n_in ? n->in[q] : k.extra_in;
        if (ein[q].node < 0) continue;
        const so_node *src = &g->nodes[ein[q].node];
        in[q].shape = src->out[ein[q].slot];
        if (src->op == SO_OP_WEIGHT) {
            in[q].data = g->model->weights[src->ref].data;
            continue;
        }
        int64_t cnt = so_shape_numel(&in[q].shape);
        if (cnt < 0) {
            so_errorf("%s: input %d has unknown shape", so_node_desc(g, i, desc, sizeof desc), q);
            goto done;
        }
        size_t bytes = (size_t)cnt * (in[q].shape.dtype == SO_I64 ? 8 : 4);
        if (so_mem_charge(bytes, "timing buffers") != SO_OK) goto done;
        charged += bytes;
        void *p = malloc(bytes ? bytes : 8);
        if (!p) goto oom;
        owned[n_owned++] = p;
        in[q].data = p;
        if (in[q].shape.dtype == SO_I64) memset(p, 0, bytes);
        else so_rng_fill(&seed, p, (size_t)cnt);
    }
    for (int32_t q = 0; q < last->n_out; q++) {
        out[q].shape = last->out[q];
        int64_t cnt = so_shape_numel(&last->out[q]);
        size_t bytes = (size_t)(cnt > 0 ? cnt : 1) * (last->out[q].dtype == SO_I64 ? 8 : 4);
        if (so_mem_charge(bytes, "timing buffers") != SO_OK) goto done;
        charged += bytes;
        void *p = malloc(bytes);
        if (!p) goto oom;
        owned[n_owned++] = p;
        out[q].data = p;
    }
    if (k.scratch_bytes) {
        if (so_mem_charge(k.scratch_bytes, "timing scratch") != SO_OK) goto done;
        charged += k.scratch_bytes;
        scratch = aligned_alloc(64, (k.scratch_bytes + 63) / 64 * 64);
        if (!scratch) goto oom;
    }
    evict = malloc(EVICT_BYTES);
    if (!evict) goto oom;
    memset(evict, 1, EVICT_BYTES);
    int cap = iters;
    samples = so_xmalloc(sizeof *samples * (size_t)cap);
    if (what) what->setup_seconds = so_now() - tph;
    volatile float sink = 0;
    double fastest = 0, least_flush = 0;
    int done_iters = 0;
    for (int it = -1; it < cap; it++) {
        const double tf = so_now();
        {
            /* read, not write: no dirty lines left to write back during the timed run */
            const uint64_t *ev = (const uint64_t *)evict;
            uint64_t acc = 0;
            for (size_t j = 0; j < EVICT_BYTES / 8; j += 8) acc += ev[j];
            sink += (float)(acc & 1);
        }
        if (cold && (it >= 0 || !so_exec_time_lean)) { /* weights from memory, as in a model whose weights do not stay in the caches */
            size_t flushed = 0;
            for (int32_t q = 0; q < n_in; q++) {
                if (!in[q].data || g->nodes[ein[q].node].op != SO_OP_WEIGHT) continue;
                const size_t nb = (size_t)so_shape_numel(&in[q].shape) * (in[q].shape.dtype == SO_I64 ? 8 : 4);
                const char *how = flush_bytes(in[q].data, nb);
                if (what) what->flush = how;
                flushed += nb;
            }
            /* and the copy the kernel reads instead (matmul's packed B, kernels/fast.h `packed`): left warm, an
               M = 1 GEMV of nasrnn_512 timed 0.025 ms against 0.040-0.063 in the model, and its merged products
               (on oneDNN, reading the flushed weight) looked dearer than they run (docs/BENCHMARKS.md, session 16) */
            if (k.run && k.packed && k.packed_bytes) {
                const char *how = flush_bytes(k.packed, k.packed_bytes);
                if (what) what->flush = how;
                flushed += k.packed_bytes;
            }
            if (what) what->flushed_bytes = flushed;
        }
        _mm_mfence();
        for (int32_t q = 0; q < n_in; q++) {
            if (!in[q].data || g->nodes[ein[q].node].op == SO_OP_WEIGHT || in[q].shape.dtype != SO_F32) continue;
            const float *p = in[q].data;
            int64_t cnt = so_shape_numel(&in[q].shape);
            float acc = 0;
            for (int64_t j = 0; j < cnt; j += 16) acc += p[j];
            sink += acc;
        }
        double t0 = so_now();
        if (k.run) k.run(k.priv, in, out, scratch);
        else if (so_ref_kernels[n->op](g, n, in, out) != SO_OK) goto done;
        double ms = (so_now() - t0) * 1e3;
        if (threads > 1) so_wait_tick(); /* as after a run (kernels/wait.h) */
        if (what) what->flush_seconds += t0 - tf, what->kernel_seconds += ms * 1e-3, what->runs++;
        const double flush_ms = (t0 - tf) * 1e3;
        if (it < 0) {
            if (ms > 20 && cap > 2) cap = 2; /* long kernels: timer and load noise are small */
            else if (ms > 5 && cap > 3) cap = 3;
            continue;
        }
        samples[done_iters++] = ms;
        if (done_iters == 1 || ms < fastest) fastest = ms;
        if (done_iters == 1 || flush_ms < least_flush) least_flush = flush_ms;
        if (what) what->fastest_ms = fastest, what->least_flush_ms = least_flush;
        if (so_exec_time_enough(done_iters, fastest, least_flush, cold)) break;
    }
    (void)sink;
    /* a low quantile of the runs: other processes only ever add time (the median would follow
       the load of the moment), while the very fastest run is an outlier of its own (a run
       that happened to find the weights still cached); a configuration is timed once for the
       whole search, so its figure must not hang on one run */
    so_sort_doubles(samples, (size_t)done_iters);
    *min_ms = samples[(done_iters - 1) / 4];
    st = SO_OK;
    goto done;
oom:
    st = so_errorf("out of memory timing %s", so_node_desc(g, i, desc, sizeof desc));
done:
    for (int q = 0; q < n_owned; q++) free(owned[q]);
    so_mem_release(charged);
    free(samples);
    free(scratch);
    free(evict);
    if (k.free_priv) k.free_priv(k.priv);
    return st;
}

/* ---- FLOP counter: one decision per operator (ops.def), flops_<op> ---- */
typedef int64_t (*flops_fn)(const so_graph *g, const so_node *n, int64_t out);

static const so_shape *in_shape(const so_graph *g, const so_node *n, int k) { return &g->nodes[n->in[k].node].out[n->in[k].slot]; }

static int64_t flops_none(const so_graph *g, const so_node *n, int64_t out) { (void)g, (void)n, (void)out; return 0; }
/* element-wise: one operation per output element */
static int64_t flops_per_output(const so_graph *g, const so_node *n, int64_t out) { (void)g, (void)n; return out; }

static int64_t flops_conv(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *w = in_shape(g, n, 1);
    if (w->rank != 4) return 2 * out;
    return 2 * out * w->dim[1] * w->dim[2] * w->dim[3];
}

static int64_t flops_matmul(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *x = in_shape(g, n, 0);
    int64_t k = x->rank >= 1 ? x->dim[x->rank - 1] : 1;
    if (x->rank == 1) k = x->dim[0];
    return 2 * out * k;
}

static int64_t flops_gemm(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *x = in_shape(g, n, 0);
    if (x->rank != 2) return 2 * out;
    return 2 * out * (n->attr->trans_a ? x->dim[0] : x->dim[1]);
}

/* LSTM (4 gates), GRU (3) and RNN (1): per step and direction, the gate products and about 10 flops per state */
static int64_t flops_recurrent(const so_graph *g, const so_node *n, int64_t out, int64_t gates)
{
    const so_shape *x = in_shape(g, n, 0);
    if (x->rank != 3) return out;
    int64_t seq = x->dim[0], batch = x->dim[1], in_sz = x->dim[2], h = n->attr->hidden;
    int64_t dirs = n->attr->direction == 2 ? 2 : 1;
    return dirs * seq * batch * (2 * gates * h * (in_sz + h) + 10 * h);
}

static int64_t flops_lstm(const so_graph *g, const so_node *n, int64_t out) { return flops_recurrent(g, n, out, 4); }
static int64_t flops_gru(const so_graph *g, const so_node *n, int64_t out) { return flops_recurrent(g, n, out, 3); }
static int64_t flops_rnn(const so_graph *g, const so_node *n, int64_t out) { return flops_recurrent(g, n, out, 1); }

/* the real channels, not the padding lanes of the blocked output */
static int64_t flops_conv_nchwc(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *w = in_shape(g, n, 1), *o = &n->out[0];
    if (w->rank != 4 || o->rank != 5) return 2 * out;
    return 2 * o->dim[0] * w->dim[0] * o->dim[2] * o->dim[3] * w->dim[1] * w->dim[2] * w->dim[3];
}

/* pooling: per window element */
static int64_t flops_pool(const so_graph *g, const so_node *n, int64_t out)
{
    (void)g;
    return out * (int64_t)n->attr->kernel[0] * n->attr->kernel[1];
}

/* reductions: one per input element; softmax three (max, exp, divide), layernorm five */
static int64_t flops_per_input(const so_graph *g, const so_node *n, int64_t out) { (void)out; return so_shape_numel(in_shape(g, n, 0)); }
static int64_t flops_softmax(const so_graph *g, const so_node *n, int64_t out) { return 3 * flops_per_input(g, n, out); }
static int64_t flops_layernorm(const so_graph *g, const so_node *n, int64_t out) { return 5 * flops_per_input(g, n, out); }
static int64_t flops_rmsnorm(const so_graph *g, const so_node *n, int64_t out) { return 4 * flops_per_input(g, n, out); }

/* the decisions (a missing one is an undeclared identifier: the build fails) */
#define flops_input flops_none           /* sources and views move nothing */
#define flops_weight flops_none
#define flops_opaque flops_per_output /* never runs; counted as element-wise, as before */
#define flops_flatten flops_none
#define flops_reshape flops_none
#define flops_squeeze flops_none
#define flops_unsqueeze flops_none
#define flops_identity flops_none
#define flops_add flops_per_output
#define flops_sub flops_per_output
#define flops_mul flops_per_output
#define flops_div flops_per_output
#define flops_pow flops_per_output
#define flops_relu flops_per_output
#define flops_sigmoid flops_per_output
#define flops_tanh flops_per_output
#define flops_erf flops_per_output
#define flops_sqrt flops_per_output
#define flops_exp flops_per_output
#define flops_log flops_per_output
#define flops_neg flops_per_output
#define flops_reciprocal flops_per_output
#define flops_clip flops_per_output
#define flops_hardsigmoid flops_per_output
#define flops_hardswish flops_per_output
#define flops_leakyrelu flops_per_output
#define flops_elu flops_per_output
#define flops_nchwc_in flops_per_output      /* reorders: one per element written */
#define flops_nchwc_out flops_per_output
#define flops_concat_nchwc flops_per_output
#define flops_maxpool_nchwc flops_pool
#define flops_avgpool_nchwc flops_pool
#define flops_globalavgpool_nchwc flops_per_input
#define flops_batchnorm flops_per_output
#define flops_maxpool flops_pool
#define flops_avgpool flops_pool
#define flops_lppool flops_pool
#define flops_globallppool flops_per_input
#define flops_globalavgpool flops_per_input
#define flops_reducemean flops_per_input
#define flops_reducesum flops_per_input
#define flops_pad flops_per_output       /* data movement: one per element written */
#define flops_concat flops_per_output
#define flops_split flops_per_output
#define flops_transpose flops_per_output
#define flops_expand flops_per_output
#define flops_gather flops_per_output
#define flops_slice flops_per_output
#define flops_resize flops_per_output
#define flops_enlarge flops_per_output   /* internal operators: folded on weights */
#define flops_const_pool flops_per_output
#define flops_const_idconv flops_per_output
#define flops_const_idmat flops_per_output
#define flops_const_ones flops_per_output
#define flops_bnfold_w flops_per_output
#define flops_bnfold_b flops_per_output

#define flops_abs flops_per_output
#define flops_floor flops_per_output
#define flops_ceil flops_per_output
#define flops_round flops_per_output
#define flops_sign flops_per_output
#define flops_softplus flops_per_output
#define flops_softsign flops_per_output
#define flops_sin flops_per_output
#define flops_cos flops_per_output
#define flops_tan flops_per_output
#define flops_asin flops_per_output
#define flops_acos flops_per_output
#define flops_atan flops_per_output
#define flops_sinh flops_per_output
#define flops_cosh flops_per_output
#define flops_asinh flops_per_output
#define flops_acosh flops_per_output
#define flops_atanh flops_per_output
#define flops_mish flops_per_output
#define flops_selu flops_per_output
#define flops_celu flops_per_output
#define flops_thresholdedrelu flops_per_output
#define flops_shrink flops_per_output
#define flops_gelu flops_per_output
#define flops_max flops_per_output
#define flops_min flops_per_output
#define flops_prelu flops_per_output
#define flops_reducemax flops_per_input
#define flops_reducemin flops_per_input
#define flops_reduceprod flops_per_input
#define flops_reducel1 flops_per_input
#define flops_reducel2 flops_per_input
#define flops_reducesumsquare flops_per_input
#define flops_reducelogsum flops_per_input
#define flops_reducelogsumexp flops_per_input
#define flops_logsoftmax flops_softmax
#define flops_hardmax flops_softmax
#define flops_argmax flops_per_input
#define flops_argmin flops_per_input
#define flops_trilu flops_per_output
#define flops_gatherelements flops_per_output
#define flops_depthtospace flops_per_output
#define flops_spacetodepth flops_per_output

#define flops_nllloss flops_per_input
#define flops_where flops_per_output

#define flops_equal flops_per_output
#define flops_less flops_per_output
#define flops_greater flops_per_output
#define flops_lessorequal flops_per_output
#define flops_greaterorequal flops_per_output
#define flops_isinf flops_per_output
#define flops_isnan flops_per_output

/* each input element meets Co/g * kh * kw weights */
static int64_t flops_convtranspose(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *w = in_shape(g, n, 1);
    if (w->rank != 4) return 2 * out;
    return 2 * so_shape_numel(in_shape(g, n, 0)) * w->dim[1] * w->dim[2] * w->dim[3];
}

/* 3-D: the weight's product per output (Conv) or per input (ConvTranspose) element; pools: the kernel volume */
static int64_t flops_conv3d(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *w = in_shape(g, n, 1);
    return w->rank == 5 ? 2 * out * w->dim[1] * w->dim[2] * w->dim[3] * w->dim[4] : 2 * out;
}

static int64_t flops_convtranspose3d(const so_graph *g, const so_node *n, int64_t out)
{
    const so_shape *w = in_shape(g, n, 1);
    return w->rank == 5 ? 2 * so_shape_numel(in_shape(g, n, 0)) * w->dim[1] * w->dim[2] * w->dim[3] * w->dim[4] : 2 * out;
}

static int64_t flops_pool3d(const so_graph *g, const so_node *n, int64_t out)
{
    (void)g;
    return out * n->attr->ints[0] * n->attr->ints[1] * n->attr->ints[2];
}

#define flops_maxpool3d flops_pool3d
#define flops_avgpool3d flops_pool3d
#define flops_reversesequence flops_per_output
#define flops_tfidfvectorizer flops_per_output
#define flops_maxpoolidx flops_pool
#define flops_maxunpool flops_per_output
#define flops_roialign flops_per_output
/* direct sums: 8 flops per output element per input sample on the transformed axis */
static int64_t flops_dft(const so_graph *g, const so_node *n, int64_t out) { (void)g; return 8 * out * n->attr->ints[0]; }
static int64_t flops_stft(const so_graph *g, const so_node *n, int64_t out) { (void)g; return 8 * out * n->attr->ints[1]; }

#define flops_lrn flops_per_output
#define flops_scatterelements flops_per_output
#define flops_gathernd flops_per_output
#define flops_topk flops_per_input
#define flops_det flops_per_input
#define flops_not flops_per_output
#define flops_and flops_per_output
#define flops_or flops_per_output
#define flops_xor flops_per_output
#define flops_mod flops_per_output
#define flops_cast flops_per_output
#define flops_scatternd flops_per_input
#define flops_gridsample flops_per_output

static const flops_fn flops_table[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = flops_##l,
#include "../src/ops.def"
#undef X
};

const char *so_flops_rule(so_op op)
{
    flops_fn f = flops_table[op];
    return f == flops_none ? "none" : f == flops_per_output ? "per output element" : f == flops_per_input ? "per input element" : "counted";
}

int64_t so_node_flops(const so_graph *g, int32_t i)
{
    const so_node *n = &g->nodes[i];
    unsigned fl = so_ops[n->op].flags;
    if (fl & (SO_F_SOURCE | SO_F_VIEW)) return 0;
    if (n->n_out < 1 || n->out[0].rank < 0) return 0;
    return flops_table[n->op](g, n, so_shape_numel(&n->out[0]));
}
