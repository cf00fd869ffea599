/* gen.c - the rule generator pipeline (classes, candidates, pruning, shape generalisation,
   float re-test, verification, deterministic output) and the generate / rules merge CLI. */
#include "gen.h"
#include "gen_mpi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "../verifier/verify.h"

void so_gen_options_default(so_gen_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_ops = 3;
    o->threads = 1;
    o->shard_i = 0;
    o->shard_n = 1;
    o->seed = 1;
    o->verify = 1;
    o->float_test = 1;
    o->timeout_s = 10.0;
}

static inline int tid_node(const gen_universe *u, int t) { return t < u->n_vars ? -1 : (t - u->n_vars) / GEN_MAX_OUT; }
static inline int tid_slot(const gen_universe *u, int t) { return (t - u->n_vars) % GEN_MAX_OUT; }

/* ---------------- fingerprint classes ---------------- */

static int outputs_equal(const gen_universe *u, const gen_eval *ea, const gen_graph *a, const gen_eval *eb,
                         const gen_graph *b)
{
    (void)u;
    if (a->n_out != b->n_out || a->mask != b->mask) return 0;
    for (int o = 0; o < a->n_out; o++) {
        int ta = a->out[o], tb = b->out[o];
        const gen_type *x = &ea->type[ta], *y = &eb->type[tb];
        if (x->rank != y->rank) return 0;
        for (int i = 0; i < x->rank; i++)
            if (x->dim[i] != y->dim[i]) return 0;
        if (memcmp(ea->val[ta], eb->val[tb], (size_t)gen_numel(x) * sizeof(uint32_t)) != 0) return 0;
    }
    return 1;
}

/* Classes of a bucket (see so_gen_split_bucket); ev[n] receives every graph's evaluation
   (caller frees each with gen_eval_free). */
static int split_bucket_ev(const gen_universe *u, const gen_inputs *in, const gen_graph *g, int n, int *cls, gen_eval *ev)
{
    int *rep = so_xmalloc((size_t)n * sizeof *rep);
    int nc = 0;
    for (int i = 0; i < n; i++) {
        if (!gen_eval_graph(u, in, &g[i], &ev[i])) {
            cls[i] = -1;
            continue;
        }
        cls[i] = -1;
        for (int c = 0; c < nc; c++)
            if (outputs_equal(u, &ev[rep[c]], &g[rep[c]], &ev[i], &g[i])) {
                cls[i] = c;
                break;
            }
        if (cls[i] < 0) {
            rep[nc] = i;
            cls[i] = nc++;
        }
    }
    free(rep);
    return nc;
}

int so_gen_split_bucket(const gen_universe *u, const gen_inputs *in, const gen_graph *g, int n, int *cls)
{
    gen_eval *ev = so_xcalloc((size_t)n, sizeof *ev);
    int nc = split_bucket_ev(u, in, g, n, cls, ev);
    for (int i = 0; i < n; i++) gen_eval_free(&ev[i]);
    free(ev);
    return nc;
}

/* ---------------- pruning predicates ---------------- */

int so_gen_trivial(const gen_universe *u, const gen_graph *a, const gen_graph *b)
{
    (void)u;
    if (a->n_nodes != b->n_nodes) return 0;
    if (a->n_nodes == 0) return a->out[0] == b->out[0];
    return a->canon == b->canon;
}

/* Bit set of enlarged-kernel pseudo-variables used by g. */
static uint32_t pseudo_used(const gen_universe *u, const gen_graph *g)
{
    uint32_t m = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < u->insts[g->nodes[i].inst].n_in; a++) {
            int t = g->nodes[i].in[a];
            if (t < u->n_vars && u->vars[t].base >= 0) m |= 1u << t;
        }
    return m;
}

int so_gen_common_subgraph(const gen_universe *u, const gen_graph *a, const gen_graph *b)
{
    /* a pseudo-variable used on both sides is a common enlarge node once expanded */
    if (pseudo_used(u, a) & pseudo_used(u, b)) return 1;
    uint64_t ha[GEN_MAX_NODES], hb[GEN_MAX_NODES];
    gen_node_hashes(u, a, ha);
    gen_node_hashes(u, b, hb);
    for (int i = 0; i < a->n_nodes; i++)
        for (int j = 0; j < b->n_nodes; j++)
            if (ha[i] == hb[j]) return 1;
    return 0;
}

int so_gen_common_suffix(const gen_universe *u, const gen_inputs *in, const gen_graph *a, const gen_graph *b)
{
    if (a->n_out != 1 || b->n_out != 1 || a->n_nodes == 0 || b->n_nodes == 0) return 0;
    int ra = tid_node(u, a->out[0]), rb = tid_node(u, b->out[0]);
    const gen_node *na = &a->nodes[ra], *nb = &b->nodes[rb];
    if (na->inst != nb->inst || tid_slot(u, a->out[0]) != tid_slot(u, b->out[0])) return 0;
    gen_eval ea, eb;
    int res = 0;
    if (!gen_eval_graph(u, in, a, &ea)) return 0;
    if (!gen_eval_graph(u, in, b, &eb)) {
        gen_eval_free(&ea);
        return 0;
    }
    res = 1;
    int nin = u->insts[na->inst].n_in;
    for (int k = 0; k < nin && res; k++) {
        int ta = na->in[k], tb = nb->in[k];
        const gen_type *x = &ea.type[ta], *y = &eb.type[tb];
        if (x->rank != y->rank || memcmp(x->dim, y->dim, sizeof x->dim) != 0 ||
            memcmp(ea.val[ta], eb.val[tb], (size_t)gen_numel(x) * sizeof(uint32_t)) != 0)
            res = 0;
    }
    /* a split root also needs the same cut: equal output types */
    if (res && u->insts[na->inst].kind == GK_SPLIT) {
        const gen_type *x = &ea.type[a->out[0]], *y = &eb.type[b->out[0]];
        if (memcmp(x->dim, y->dim, sizeof x->dim) != 0) res = 0;
    }
    gen_eval_free(&ea);
    gen_eval_free(&eb);
    return res;
}

/* Node ancestors (bit set of nodes) of tensor t. */
static uint32_t ancestors(const gen_universe *u, const gen_graph *g, int t)
{
    int nd = tid_node(u, t);
    if (nd < 0) return 0;
    uint32_t m = 1u << nd;
    for (int a = 0; a < u->insts[g->nodes[nd].inst].n_in; a++) m |= ancestors(u, g, g->nodes[nd].in[a]);
    return m;
}

/* Private value hash (independent of the gen_value_hash hook, which tests may force to collide). */
static uint64_t vhash(const uint32_t *v, int64_t n, const gen_type *t)
{
    uint64_t seed = (uint64_t)t->rank;
    for (int i = 0; i < t->rank; i++) seed = seed * 1000003u + (uint64_t)t->dim[i];
    return XXH3_64bits_withSeed(v, (size_t)n * sizeof *v, seed);
}

/* so_gen_value_redundant on evaluated graphs. */
static int value_redundant_ev(const gen_universe *u, const gen_graph *a, const gen_eval *pa, const gen_graph *b,
                              const gen_eval *pb)
{
    /* product of independent rules: both graphs compute their two outputs from disjoint nodes */
    if (a->n_out == 2 && b->n_out == 2 && !(ancestors(u, a, a->out[0]) & ancestors(u, a, a->out[1])) &&
        !(ancestors(u, b, b->out[0]) & ancestors(u, b, b->out[1])))
        return 1;
    const gen_eval ea = *pa, eb = *pb;
    /* every tensor of both graphs (variables used, node outputs) with its value hash */
    typedef struct tv { uint64_t h; int side, t; const uint32_t *v; int64_t n; } tv;
    tv list[2 * (GEN_MAX_VARS + GEN_MAX_T)];
    int n = 0;
    for (int v = 0; v < u->n_vars; v++)
        if ((a->mask | b->mask) & (1u << v)) list[n++] = (tv){vhash(ea.val[v], gen_numel(&ea.type[v]), &ea.type[v]), 2, v, ea.val[v], gen_numel(&ea.type[v])};
    for (int side = 0; side < 2; side++) {
        const gen_graph *g = side ? b : a;
        const gen_eval *e = side ? &eb : &ea;
        for (int i = 0; i < g->n_nodes; i++)
            for (int s2 = 0; s2 < u->insts[g->nodes[i].inst].n_out; s2++) {
                int t = u->n_vars + GEN_MAX_OUT * i + s2;
                list[n++] = (tv){vhash(e->val[t], gen_numel(&e->type[t]), &e->type[t]), side, t, e->val[t], gen_numel(&e->type[t])};
            }
    }
    int red = 0;
    for (int i = 0; i < n && !red; i++)
        for (int j = i + 1; j < n && !red; j++) {
            if (list[i].h != list[j].h || list[i].n != list[j].n ||
                memcmp(list[i].v, list[j].v, (size_t)list[i].n * sizeof(uint32_t)) != 0)
                continue;
            if (list[i].side == 2 && list[j].side == 2) continue;
            /* allowed: a mapped output pair (src out k, dst out k); dst may output a variable */
            int ok = 0;
            for (int k = 0; k < a->n_out; k++) {
                int ta = a->out[k], tb = b->out[k];
                const tv *x = &list[i], *y = &list[j];
                if (x->side == 0 && x->t == ta && ((y->side == 1 && y->t == tb) || (y->side == 2 && y->t == tb))) ok = 1;
                if (y->side == 0 && y->t == ta && ((x->side == 1 && x->t == tb) || (x->side == 2 && x->t == tb))) ok = 1;
            }
            if (!ok) red = 1;
        }
    return red;
}

int so_gen_value_redundant(const gen_universe *u, const gen_inputs *in, const gen_graph *a, const gen_graph *b)
{
    gen_eval ea, eb;
    int red = 0;
    if (gen_eval_graph(u, in, a, &ea) && gen_eval_graph(u, in, b, &eb)) {
        red = value_redundant_ev(u, a, &ea, b, &eb);
        gen_eval_free(&eb);
    }
    gen_eval_free(&ea);
    return red;
}

/* Interchangeable variable groups: same type, role and kernel flag; BN parameters fixed. */
static int var_group(const gen_universe *u, int v)
{
    for (int k = 0; k < 4; k++)
        if (u->bn_param[k] == v) return -1;
    if (u->vars[v].role != GR_ANY) return -1;
    /* the sibling kernel L (gen_universe.sib) feeds fewer operators than K: not interchangeable */
    if (u->sib[0] && v == u->sib[0] - 1) return -1;
    for (int w = 0; w < v; w++) {
        int fixed = 0;
        if (u->sib[0] && w == u->sib[0] - 1) continue;
        for (int k = 0; k < 4; k++)
            if (u->bn_param[k] == w) fixed = 1;
        if (fixed || u->vars[w].role != GR_ANY) continue;
        const gen_var *x = &u->vars[v], *y = &u->vars[w];
        if (x->t.rank == y->t.rank && memcmp(x->t.dim, y->t.dim, sizeof x->t.dim) == 0 && x->kernel == y->kernel)
            return w;
    }
    return v;
}

static void rename_graph(const gen_universe *u, const gen_graph *g, const int *perm, gen_graph *o)
{
    *o = *g;
    for (int i = 0; i < g->n_nodes; i++) {
        int nin = u->insts[g->nodes[i].inst].n_in;
        for (int a = 0; a < nin; a++)
            if (g->nodes[i].in[a] < u->n_vars) o->nodes[i].in[a] = (uint8_t)perm[g->nodes[i].in[a]];
    }
    for (int k = 0; k < g->n_out; k++)
        if (g->out[k] < u->n_vars) o->out[k] = (uint8_t)perm[g->out[k]];
}

static uint64_t graph_struct_hash(const gen_universe *u, const gen_graph *g)
{
    uint64_t h[GEN_MAX_NODES + 2];
    int n = g->n_nodes;
    gen_node_hashes(u, g, h);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && h[j - 1] > h[j]; j--) {
            uint64_t t = h[j];
            h[j] = h[j - 1];
            h[j - 1] = t;
        }
    if (n == 0) {
        h[0] = 0xfeed0000ULL + g->out[0];
        h[1] = g->n_out > 1 ? 0xfeed0000ULL + g->out[1] : 0;
        n = 2;
    }
    return XXH3_64bits(h, sizeof(uint64_t) * (size_t)n);
}

static uint64_t pair_hash(uint64_t x, uint64_t y)
{
    uint64_t k[2] = {x < y ? x : y, x < y ? y : x};
    return XXH3_64bits(k, sizeof k);
}

/* Variable ids a graph mentions (node inputs and outputs), as a bit set. */
static uint32_t vars_used(const gen_universe *u, const gen_graph *g)
{
    uint32_t m = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < u->insts[g->nodes[i].inst].n_in; a++)
            if (g->nodes[i].in[a] < u->n_vars) m |= 1u << g->nodes[i].in[a];
    for (int k = 0; k < g->n_out; k++)
        if (g->out[k] < u->n_vars) m |= 1u << g->out[k];
    return m;
}

/* Variable groups of a universe (var_group), cached per thread by a hash of the variables. */
typedef struct grp_cache {
    uint64_t sig;
    int grp[GEN_MAX_VARS], members[GEN_MAX_VARS][GEN_MAX_VARS], nm[GEN_MAX_VARS];
} grp_cache;
static _Thread_local grp_cache gcache;

static const grp_cache *var_groups(const gen_universe *u)
{
    uint64_t sig = XXH3_64bits_withSeed(u->vars, sizeof(gen_var) * (size_t)u->n_vars,
                                        XXH3_64bits(u->bn_param, sizeof u->bn_param) + (uint64_t)u->n_vars);
    grp_cache *c = &gcache;
    if (c->sig == sig && sig != 0) return c;
    memset(c, 0, sizeof *c);
    for (int v = 0; v < u->n_vars; v++) {
        c->grp[v] = var_group(u, v);
        if (c->grp[v] >= 0) c->members[c->grp[v]][c->nm[c->grp[v]]++] = v;
    }
    c->sig = sig;
    return c;
}

uint64_t so_gen_orbit_hash(const gen_universe *u, const gen_graph *a, const gen_graph *b, uint64_t *self_hash)
{
    int nv = u->n_vars;
    uint32_t used = vars_used(u, a) | vars_used(u, b);
    const grp_cache *gc = var_groups(u);
    const int *grp = gc->grp, *nm = gc->nm;
    const int(*members)[GEN_MAX_VARS] = gc->members;
    /* enumerate the product of permutations of each group (groups of size <= 4) */
    int gids[GEN_MAX_VARS], ng = 0;
    for (int v = 0; v < nv; v++) {
        if (grp[v] != v || nm[v] < 2) continue;
        /* permuting variables neither graph mentions changes nothing: skip such groups */
        int any = 0;
        for (int i = 0; i < nm[v]; i++) any |= (used >> members[v][i]) & 1;
        if (any) gids[ng++] = v;
    }
    int perm[GEN_MAX_VARS];
    uint64_t best = UINT64_MAX, self = 0;
    /* mixed-radix counter over permutation indices */
    int idx[GEN_MAX_VARS] = {0}, fact[GEN_MAX_VARS];
    for (int q = 0; q < ng; q++) {
        int f = 1;
        for (int i = 2; i <= nm[gids[q]]; i++) f *= i;
        fact[q] = f;
    }
    for (;;) {
        for (int v = 0; v < nv; v++) perm[v] = v;
        for (int q = 0; q < ng; q++) {
            /* idx[q]-th permutation of members (Lehmer code) */
            int m = nm[gids[q]], pool[GEN_MAX_VARS], code = idx[q];
            for (int i = 0; i < m; i++) pool[i] = members[gids[q]][i];
            for (int i = 0; i < m; i++) {
                int f = 1;
                for (int j = 2; j <= m - 1 - i; j++) f *= j;
                int pick = code / f;
                code %= f;
                perm[members[gids[q]][i]] = pool[pick];
                for (int j = pick; j < m - 1 - i; j++) pool[j] = pool[j + 1];
            }
        }
        gen_graph ra, rb;
        rename_graph(u, a, perm, &ra);
        uint64_t ha = graph_struct_hash(u, &ra), hb = ha;
        if (b != a) {
            rename_graph(u, b, perm, &rb);
            hb = graph_struct_hash(u, &rb);
        }
        uint64_t h = pair_hash(ha, hb);
        int identity = 1;
        for (int v = 0; v < nv; v++)
            if (perm[v] != v) identity = 0;
        if (identity) self = h;
        if (h < best) best = h;
        int q = 0;
        while (q < ng && ++idx[q] == fact[q]) idx[q++] = 0;
        if (q == ng) break;
    }
    if (self_hash) *self_hash = self;
    return best;
}

/* Renaming-invariant structure hash of one graph. */
static uint64_t graph_orbit_hash(const gen_universe *u, const gen_graph *g)
{
    return so_gen_orbit_hash(u, g, g, NULL);
}

/* ---------------- shape generalisation ---------------- */

#define LX_MAX 8
typedef struct lx {
    int32_t c;
    int n;
    int s[LX_MAX];
} lx;

typedef struct unif {
    int n;
    int64_t val[64];
    int has_sub[64];
    lx sub[64];
    int fail;
} unif;

static lx lx_c(int64_t c)
{
    lx e;
    memset(&e, 0, sizeof e);
    e.c = (int32_t)c;
    return e;
}

static int new_sym(unif *U, int64_t v)
{
    if (U->n >= 64) {
        U->fail = 1;
        return 0;
    }
    U->val[U->n] = v;
    U->has_sub[U->n] = 0;
    return U->n++;
}

static lx lx_sym(int s)
{
    lx e = lx_c(0);
    e.n = 1;
    e.s[0] = s;
    return e;
}

static void lx_sort(lx *e)
{
    for (int i = 1; i < e->n; i++)
        for (int j = i; j > 0 && e->s[j - 1] > e->s[j]; j--) {
            int t = e->s[j];
            e->s[j] = e->s[j - 1];
            e->s[j - 1] = t;
        }
}

/* Terms keep their order (concat order), so that a later split can cut at a prefix. */
static lx lx_add(unif *U, lx a, lx b)
{
    if (a.n + b.n > LX_MAX) {
        U->fail = 1;
        return a;
    }
    for (int i = 0; i < b.n; i++) a.s[a.n++] = b.s[i];
    a.c += b.c;
    return a;
}

static lx resolve(unif *U, lx e)
{
    for (int guard = 0; guard < 64; guard++) {
        int changed = 0;
        lx r = lx_c(e.c);
        for (int i = 0; i < e.n; i++) {
            if (U->has_sub[e.s[i]]) {
                r = lx_add(U, r, U->sub[e.s[i]]);
                changed = 1;
            } else {
                lx one = lx_sym(e.s[i]);
                r = lx_add(U, r, one);
            }
            if (U->fail) return e;
        }
        e = r;
        if (!changed) break;
    }
    return e;
}

static int64_t lx_val(const unif *U, const lx *e)
{
    int64_t v = e->c;
    for (int i = 0; i < e->n; i++) v += U->val[e->s[i]];
    return v;
}

static void unify(unif *U, lx a, lx b)
{
    if (U->fail) return;
    a = resolve(U, a);
    b = resolve(U, b);
    lx_sort(&a);
    lx_sort(&b);
    if (lx_val(U, &a) != lx_val(U, &b)) {
        U->fail = 1;
        return;
    }
    /* cancel common symbols */
    lx da = lx_c(a.c), db = lx_c(b.c);
    int i = 0, j = 0;
    while (i < a.n || j < b.n) {
        if (j >= b.n || (i < a.n && a.s[i] < b.s[j])) da.s[da.n++] = a.s[i++];
        else if (i >= a.n || b.s[j] < a.s[i]) db.s[db.n++] = b.s[j++];
        else {
            i++;
            j++;
        }
    }
    if (da.n == 0 && db.n == 0) return; /* values equal -> constants equal */
    if (da.n == 1) {
        int s = da.s[0];
        lx r = db;
        r.c = db.c - da.c;
        if (r.n == 0 && r.c < 1) {
            U->fail = 1;
            return;
        }
        U->sub[s] = r;
        U->has_sub[s] = 1;
        return;
    }
    if (db.n == 1) {
        int s = db.s[0];
        lx r = da;
        r.c = da.c - db.c;
        if (r.n == 0 && r.c < 1) {
            U->fail = 1;
            return;
        }
        U->sub[s] = r;
        U->has_sub[s] = 1;
        return;
    }
    U->fail = 1;
}

typedef struct sshp {
    int rank;
    lx d[4];
} sshp;

/* Symbolic shapes of one graph's tensors (vars shared through vs). */
static void sym_graph(unif *U, const gen_universe *u, const gen_graph *g, const gen_eval *ev, sshp *ts)
{
    for (int i = 0; i < g->n_nodes && !U->fail; i++) {
        const gen_node *nd = &g->nodes[i];
        const gen_inst *gi = &u->insts[nd->inst];
        sshp in[GEN_MAX_NIN];
        const gen_type *it[GEN_MAX_NIN];
        for (int a = 0; a < gi->n_in; a++) {
            in[a] = ts[nd->in[a]];
            it[a] = &ev->type[nd->in[a]];
        }
        int base = u->n_vars + GEN_MAX_OUT * i;
        sshp *o = &ts[base];
        memset(o, 0, sizeof *o);
        switch (gi->kind) {
        case GK_ADD:
            if (in[0].rank == 1 && in[1].rank == 3) { /* bias add on the last axis (enum.c) */
                unify(U, in[0].d[0], in[1].d[2]);
                *o = in[1];
                break;
            }
            for (int k = 0; k < in[0].rank; k++) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            break;
        case GK_MUL:
            if (in[1].rank) for (int k = 0; k < in[0].rank; k++) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            break;
        case GK_TRANSPOSE:
            o->rank = 2;
            o->d[0] = in[0].d[1];
            o->d[1] = in[0].d[0];
            break;
        case GK_MATMUL: {
            int r = in[0].rank; /* 2, or 3: rank-3 activation @ matrix */
            unify(U, in[0].d[r - 1], in[1].d[0]);
            *o = in[0];
            o->d[r - 1] = in[1].d[1];
            break;
        }
        case GK_CONV:
        case GK_CONVB: {
            int grp = it[0]->dim[1] / it[1]->dim[1];
            if (grp == 1) {
                unify(U, in[0].d[1], in[1].d[1]);
            } else {
                unify(U, in[0].d[1], lx_c(it[0]->dim[1]));
                unify(U, in[1].d[1], lx_c(it[1]->dim[1]));
                unify(U, in[1].d[0], lx_c(it[1]->dim[0]));
            }
            unify(U, in[1].d[2], lx_c(it[1]->dim[2]));
            unify(U, in[1].d[3], lx_c(it[1]->dim[3]));
            if (gi->kind == GK_CONVB) unify(U, in[2].d[0], in[1].d[0]);
            o->rank = 4;
            o->d[0] = in[0].d[0];
            o->d[1] = in[1].d[0];
            o->d[2] = in[0].d[2];
            o->d[3] = in[0].d[3];
            break;
        }
        case GK_ENLARGE:
            unify(U, in[0].d[2], lx_c(it[0]->dim[2]));
            unify(U, in[0].d[3], lx_c(it[0]->dim[3]));
            *o = in[0];
            o->d[2] = lx_c(3);
            o->d[3] = lx_c(3);
            break;
        case GK_RELU: case GK_SIGMOID: case GK_TANH: case GK_AVGPOOL: case GK_MAXPOOL:
            *o = in[0];
            break;
        case GK_CONCAT:
            for (int k = 0; k < in[0].rank; k++)
                if (k != gi->axis) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            o->d[gi->axis] = lx_add(U, in[0].d[gi->axis], in[1].d[gi->axis]);
            break;
        case GK_SPLIT: {
            int ax = gi->axis, t = nd->in[0];
            int pn = tid_node(u, t);
            lx s0, s1;
            const gen_type *ot0 = &ev->type[base];
            if (pn >= 0 && u->insts[g->nodes[pn].inst].kind == GK_CONCAT && u->insts[g->nodes[pn].inst].axis == ax) {
                s0 = ts[g->nodes[pn].in[0]].d[ax];
                s1 = ts[g->nodes[pn].in[1]].d[ax];
            } else {
                lx D = resolve(U, in[0].d[ax]);
                int64_t cut = ot0->dim[ax];
                if (D.n == 0) {
                    s0 = lx_c(cut);
                    s1 = lx_c(D.c - cut);
                } else if (D.n == 1 && D.c == 0) {
                    int a = new_sym(U, cut), b = new_sym(U, U->val[D.s[0]] - cut);
                    lx e = lx_add(U, lx_sym(a), lx_sym(b));
                    U->sub[D.s[0]] = e;
                    U->has_sub[D.s[0]] = 1;
                    s0 = lx_sym(a);
                    s1 = lx_sym(b);
                } else {
                    /* a prefix of the terms (concat order) with value cut */
                    int found = 0;
                    int64_t v = 0;
                    for (int m = 1; m < D.n && !found; m++) {
                        v += U->val[D.s[m - 1]];
                        if (v != cut) continue;
                        s0 = lx_c(0);
                        s1 = lx_c(D.c);
                        for (int q = 0; q < D.n; q++) {
                            if (q < m) s0.s[s0.n++] = D.s[q];
                            else s1.s[s1.n++] = D.s[q];
                        }
                        found = 1;
                    }
                    if (!found) {
                        U->fail = 1;
                        return;
                    }
                }
            }
            o[0] = in[0];
            o[1] = in[0];
            o[0].d[ax] = s0;
            o[1].d[ax] = s1;
            break;
        }
        case GK_BN:
            for (int k = 1; k < 5; k++) unify(U, in[k].d[0], in[0].d[1]);
            *o = in[0];
            break;
        case GK_BNFOLD_W:
            for (int k = 1; k < 3; k++) unify(U, in[k].d[0], in[0].d[0]);
            *o = in[0];
            break;
        case GK_BNFOLD_B:
        case GK_BNFOLD_BC:
            for (int k = 1; k < gi->n_in; k++) unify(U, in[k].d[0], in[0].d[0]);
            *o = in[0];
            break;
        case GK_CONST_POOL:
            o->rank = 4;
            for (int k = 0; k < 4; k++) o->d[k] = lx_c(gi->ct.dim[k]);
            break;
        case GK_CONST_IDCONV: {
            int s = new_sym(U, gi->ct.dim[0]);
            o->rank = 4;
            o->d[0] = o->d[1] = lx_sym(s);
            o->d[2] = lx_c(gi->ct.dim[2]);
            o->d[3] = lx_c(gi->ct.dim[3]);
            break;
        }
        case GK_CONST_IDMAT: {
            int s = new_sym(U, gi->ct.dim[0]);
            o->rank = 2;
            o->d[0] = o->d[1] = lx_sym(s);
            break;
        }
        case GK_CONST_ONES:
            o->rank = gi->ct.rank;
            for (int k = 0; k < o->rank; k++) o->d[k] = gi->ct.dim[k] == 1 ? lx_c(1) : lx_sym(new_sym(U, gi->ct.dim[k]));
            break;
        default:
            U->fail = 1;
            return;
        }
    }
}

static const char *const SYM_NAMES[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "p", "q"};

typedef struct symmap {
    int map[64];
    int n;
} symmap;

static int to_dimx(unif *U, symmap *M, lx e, so_dimx *d)
{
    e = resolve(U, e);
    if (U->fail || e.n > 4) return 0;
    memset(d, 0, sizeof *d);
    d->c = e.c;
    for (int i = 0; i < e.n; i++) {
        int s = e.s[i];
        if (M->map[s] < 0) {
            if (M->n >= SO_RULE_MAX_SYMS) return 0;
            M->map[s] = M->n++;
        }
        d->sym[d->n_sym++] = (int8_t)M->map[s];
    }
    so_dimx_norm(d);
    return 1;
}

static void fill_pattern(const gen_universe *u, const gen_graph *g, const gen_eval *ev, unif *U, symmap *M,
                         const int *var_idx, so_pattern *p, const char *prefix, sshp *ts, int *ok)
{
    memset(p, 0, sizeof *p);
    p->n_nodes = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) {
        const gen_node *nd = &g->nodes[i];
        const gen_inst *gi = &u->insts[nd->inst];
        so_rnode *rn = &p->nodes[i];
        snprintf(rn->name, sizeof rn->name, "%s%d", prefix, i);
        rn->n_in = gi->n_in;
        rn->n_out = gi->n_out;
        for (int a = 0; a < gi->n_in; a++) {
            int t = nd->in[a];
            if (t < u->n_vars) {
                rn->in[a].node = (int16_t)(-(var_idx[t] + 1));
                rn->in[a].slot = 0;
            } else {
                rn->in[a].node = (int16_t)tid_node(u, t);
                rn->in[a].slot = (int16_t)tid_slot(u, t);
            }
        }
        so_attr *at = &rn->attr;
        const gen_type *it0 = &ev->type[nd->in[0]];
        switch (gi->kind) {
        case GK_ADD: rn->op = SO_OP_ADD; break;
        case GK_MUL: rn->op = SO_OP_MUL; break;
        case GK_TRANSPOSE:
            rn->op = SO_OP_TRANSPOSE;
            at->n_ints = 2;
            at->ints[0] = 1;
            at->ints[1] = 0;
            break;
        case GK_MATMUL: rn->op = SO_OP_MATMUL; at->act = gi->act; break;
        case GK_CONV:
        case GK_CONVB: {
            const gen_type *w = &ev->type[nd->in[1]];
            rn->op = SO_OP_CONV;
            at->stride[0] = at->stride[1] = 1;
            at->dilation[0] = at->dilation[1] = 1;
            at->pad[0] = at->pad[2] = w->dim[2] / 2;
            at->pad[1] = at->pad[3] = w->dim[3] / 2;
            at->group = it0->dim[1] / w->dim[1];
            at->act = gi->act;
            break;
        }
        case GK_ENLARGE: rn->op = SO_OP_ENLARGE; at->kernel[0] = at->kernel[1] = 3; break;
        case GK_RELU: rn->op = SO_OP_RELU; break;
        case GK_SIGMOID: rn->op = SO_OP_SIGMOID; break;
        case GK_TANH: rn->op = SO_OP_TANH; break;
        case GK_AVGPOOL:
            rn->op = SO_OP_AVGPOOL;
            at->kernel[0] = at->kernel[1] = 3;
            at->stride[0] = at->stride[1] = 1;
            at->pad[0] = at->pad[1] = at->pad[2] = at->pad[3] = 1;
            at->count_include_pad = 1;
            break;
        case GK_MAXPOOL:
            rn->op = SO_OP_MAXPOOL;
            at->kernel[0] = at->kernel[1] = 3;
            at->stride[0] = at->stride[1] = 1;
            at->pad[0] = at->pad[1] = at->pad[2] = at->pad[3] = 1;
            at->dilation[0] = at->dilation[1] = 1;
            break;
        case GK_CONCAT: rn->op = SO_OP_CONCAT; at->axis = gi->axis; break;
        case GK_SPLIT: {
            rn->op = SO_OP_SPLIT;
            at->axis = gi->axis;
            int base = u->n_vars + GEN_MAX_OUT * i;
            rn->n_dx = 2;
            if (!to_dimx(U, M, ts[base].d[gi->axis], &rn->dx[0]) || !to_dimx(U, M, ts[base + 1].d[gi->axis], &rn->dx[1]))
                *ok = 0;
            break;
        }
        case GK_BN: rn->op = SO_OP_BATCHNORM; at->epsilon = 1e-5f; break;
        case GK_BNFOLD_W: rn->op = SO_OP_BNFOLD_W; at->epsilon = 1e-5f; break;
        case GK_BNFOLD_B: case GK_BNFOLD_BC: rn->op = SO_OP_BNFOLD_B; at->epsilon = 1e-5f; break;
        case GK_CONST_POOL: case GK_CONST_IDCONV: case GK_CONST_IDMAT: case GK_CONST_ONES: {
            rn->op = gi->kind == GK_CONST_POOL ? SO_OP_CONST_POOL : gi->kind == GK_CONST_IDCONV ? SO_OP_CONST_IDCONV
                     : gi->kind == GK_CONST_IDMAT ? SO_OP_CONST_IDMAT : SO_OP_CONST_ONES;
            int base = u->n_vars + GEN_MAX_OUT * i;
            rn->n_dx = ts[base].rank;
            for (int k = 0; k < ts[base].rank; k++)
                if (!to_dimx(U, M, ts[base].d[k], &rn->dx[k])) *ok = 0;
            break;
        }
        default: *ok = 0; break;
        }
    }
}

static so_rref out_ref(const gen_universe *u, const gen_graph *g, int k, const int *var_idx)
{
    so_rref r;
    int t = g->out[k];
    if (t < u->n_vars) {
        r.node = (int16_t)(-(var_idx[t] + 1));
        r.slot = 0;
    } else {
        r.node = (int16_t)tid_node(u, t);
        r.slot = (int16_t)tid_slot(u, t);
    }
    return r;
}

/* Replaces enlarged-kernel pseudo-variables by explicit enlarge nodes on their base variables
   (prepended). Returns 0 if the graph would have too many nodes or there is no enlarge instance. */
static int expand_pseudo(const gen_universe *u, const gen_graph *g, gen_graph *o)
{
    *o = *g;
    int map[GEN_MAX_VARS], np = 0, pv[GEN_MAX_VARS];
    for (int v = 0; v < u->n_vars; v++) map[v] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < u->insts[g->nodes[i].inst].n_in; a++) {
            int t = g->nodes[i].in[a];
            if (t < u->n_vars && u->vars[t].base >= 0 && map[t] < 0) {
                map[t] = np;
                pv[np++] = t;
            }
        }
    if (np == 0) return 1;
    int enl = -1;
    for (int i = 0; i < u->n_insts; i++)
        if (u->insts[i].kind == GK_ENLARGE) enl = i;
    if (enl < 0 || g->n_nodes + np > GEN_MAX_NODES) return 0;
    o->n_nodes = (uint8_t)(g->n_nodes + np);
    for (int q = 0; q < np; q++) {
        memset(&o->nodes[q], 0, sizeof o->nodes[q]);
        o->nodes[q].inst = (uint8_t)enl;
        o->nodes[q].in[0] = (uint8_t)u->vars[pv[q]].base;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        gen_node nd = g->nodes[i];
        for (int a = 0; a < u->insts[nd.inst].n_in; a++) {
            int t = nd.in[a];
            if (t < u->n_vars) {
                if (map[t] >= 0) nd.in[a] = (uint8_t)(u->n_vars + GEN_MAX_OUT * map[t]);
            } else {
                nd.in[a] = (uint8_t)(t + GEN_MAX_OUT * np);
            }
        }
        o->nodes[i + np] = nd;
    }
    for (int k = 0; k < g->n_out; k++) {
        int t = g->out[k];
        if (t >= u->n_vars) o->out[k] = (uint8_t)(t + GEN_MAX_OUT * np);
        else if (map[t] >= 0) o->out[k] = (uint8_t)(u->n_vars + GEN_MAX_OUT * map[t]);
    }
    return 1;
}

so_status so_gen_make_rule(const gen_universe *u, const gen_graph *src0, const gen_graph *dst0, so_rule *r)
{
    memset(r, 0, sizeof *r);
    gen_graph src_x, dst_x;
    if (!expand_pseudo(u, src0, &src_x) || !expand_pseudo(u, dst0, &dst_x)) return so_errorf("too many nodes");
    const gen_graph *src = &src_x, *dst = &dst_x;
    gen_eval es, ed;
    gen_inputs inb, *in = &inb; /* values are not used, only the types */
    gen_inputs_make(u, 12345, &inb);
    int ok_s = gen_eval_graph(u, in, src, &es), ok_d = ok_s && gen_eval_graph(u, in, dst, &ed);
    gen_inputs_free(&inb);
    if (!ok_s) {
        gen_eval_free(&es);
        return so_errorf("source graph is ill-typed");
    }
    if (!ok_d) {
        gen_eval_free(&es);
        gen_eval_free(&ed);
        return so_errorf("target graph is ill-typed");
    }
    so_status st = SO_ERR;
    unif *U = so_xcalloc(1, sizeof *U);
    sshp *ts = so_xcalloc(GEN_MAX_T, sizeof *ts), *td = so_xcalloc(GEN_MAX_T, sizeof *td);
    /* variable dims: fresh symbols, except dims of 1 and conv-kernel spatial dims. Unification is
       greedy (a sum equated with a sum of two other symbols fails), so if source-then-target fails,
       target-then-source is tried (e.g. conv(X, concat(K, L), concat(b, c)): the source's convs
       bind b to K's and c to L's output channels first) */
    uint32_t mask = src->mask | dst->mask;
    for (int order = 0; order < 2; order++) {
    if (order) {
        memset(U, 0, sizeof *U);
        memset(ts, 0, GEN_MAX_T * sizeof *ts);
        memset(td, 0, GEN_MAX_T * sizeof *td);
    }
    for (int v = 0; v < u->n_vars; v++) {
        const gen_var *gv = &u->vars[v];
        ts[v].rank = gv->t.rank;
        for (int k = 0; k < gv->t.rank; k++) {
            int64_t d = gv->t.dim[k];
            if (d == 1 || (gv->kernel && k >= 2) || !(mask & (1u << v))) ts[v].d[k] = lx_c(d);
            else ts[v].d[k] = lx_sym(new_sym(U, d));
        }
        td[v] = ts[v];
    }
    if (order == 0) {
        sym_graph(U, u, src, &es, ts);
        sym_graph(U, u, dst, &ed, td);
    } else {
        sym_graph(U, u, dst, &ed, td);
        sym_graph(U, u, src, &es, ts);
    }
    if (!U->fail) break;
    }
    if (U->fail) {
        so_errorf("shapes do not generalise");
        goto done;
    }
    for (int k = 0; k < src->n_out; k++) {
        sshp *a = &ts[src->out[k]], *b = &td[dst->out[k]];
        if (a->rank != b->rank) {
            U->fail = 1;
            break;
        }
        for (int i = 0; i < a->rank; i++) unify(U, a->d[i], b->d[i]);
    }
    if (U->fail) {
        so_errorf("output shapes do not unify");
        goto done;
    }
    symmap M;
    for (int i = 0; i < 64; i++) M.map[i] = -1;
    M.n = 0;
    int var_idx[GEN_MAX_VARS];
    int ok = 1;
    /* inputs in order of first use (src nodes, dst nodes, dst outputs) */
    int order[GEN_MAX_VARS], n_order = 0;
    for (int v = 0; v < u->n_vars; v++) var_idx[v] = -1;
    for (int side = 0; side < 2; side++) {
        const gen_graph *gg = side ? dst : src;
        for (int i = 0; i < gg->n_nodes; i++)
            for (int a = 0; a < u->insts[gg->nodes[i].inst].n_in; a++) {
                int t = gg->nodes[i].in[a];
                if (t < u->n_vars && var_idx[t] < 0) {
                    var_idx[t] = n_order;
                    order[n_order++] = t;
                }
            }
    }
    for (int k = 0; k < dst->n_out; k++)
        if (dst->out[k] < u->n_vars && var_idx[dst->out[k]] < 0) {
            var_idx[dst->out[k]] = n_order;
            order[n_order++] = dst->out[k];
        }
    for (int q = 0; q < n_order; q++) {
        int v = order[q];
        if (r->n_inputs >= SO_RULE_MAX_INPUTS) {
            ok = 0;
            break;
        }
        so_rinput *ri = &r->inputs[r->n_inputs++];
        snprintf(ri->name, sizeof ri->name, "%s", u->vars[v].name);
        ri->rank = u->vars[v].t.rank;
        for (int k = 0; k < ri->rank; k++)
            if (!to_dimx(U, &M, ts[v].d[k], &ri->dim[k])) ok = 0;
    }
    if (ok) fill_pattern(u, src, &es, U, &M, var_idx, &r->src, "s", ts, &ok);
    if (ok) fill_pattern(u, dst, &ed, U, &M, var_idx, &r->dst, "d", td, &ok);
    if (!ok || U->fail) {
        so_errorf("too many symbols or inputs");
        goto done;
    }
    r->n_outputs = src->n_out;
    for (int k = 0; k < src->n_out; k++) {
        r->src_out[k] = out_ref(u, src, k, var_idx);
        r->dst_out[k] = out_ref(u, dst, k, var_idx);
    }
    r->n_syms = M.n;
    for (int s = 0; s < M.n; s++) snprintf(r->sym_names[s], sizeof r->sym_names[s], "%s", SYM_NAMES[s]);
    so_rule_canon_syms(r);
    for (int s = 0; s < M.n; s++) snprintf(r->sym_names[s], sizeof r->sym_names[s], "%s", SYM_NAMES[s]);
    r->status = SO_RULE_UNVERIFIED;
    r->proof_seconds = -1;
    r->id = 1;
    st = so_rule_check(r);
done:
    free(U);
    free(ts);
    free(td);
    gen_eval_free(&es);
    gen_eval_free(&ed);
    return st;
}

/* ---------------- subsumption (after generalisation) ---------------- */

static int32_t drop_subsumed(so_ruleset *rs);

/* Epsilon instances: the generator's batchnorm-family operators carry epsilon 1e-5 (PyTorch's
   default); a rule's attributes must match exactly, so models exported with another epsilon
   (Inception-v3 / TensorFlow-style 1e-3) would get no batchnorm rule. Every candidate that
   holds batchnorm / bnfold nodes is instantiated once more per extra epsilon below (all such
   nodes of the rule get the same value); the copies go through the float re-test and the Z3
   proof like any candidate. Appended in order after the originals, so output stays deterministic. */
static const float extra_eps[] = {1e-3f};

static void add_eps_instances(so_ruleset *rs)
{
    int32_t n0 = rs->n_rules;
    for (size_t e = 0; e < sizeof extra_eps / sizeof extra_eps[0]; e++)
        for (int32_t k = 0; k < n0; k++) {
            so_rule c = rs->rules[k];
            int hit = 0;
            for (int w = 0; w < 2; w++) {
                so_pattern *p = w ? &c.dst : &c.src;
                for (int i = 0; i < p->n_nodes; i++) {
                    so_op op = p->nodes[i].op;
                    if (op == SO_OP_BATCHNORM || op == SO_OP_BNFOLD_W || op == SO_OP_BNFOLD_B) {
                        p->nodes[i].attr.epsilon = extra_eps[e];
                        hit = 1;
                    }
                }
            }
            if (hit) so_ruleset_push(rs, &c);
        }
}


/* Structure key: the rule text with input shapes and names made positional. */
static char *structure_key(const so_rule *r)
{
    so_rule c = *r;
    c.id = 0;
    c.proof_seconds = -1;
    c.status = 0;
    for (int i = 0; i < c.n_inputs; i++) {
        snprintf(c.inputs[i].name, sizeof c.inputs[i].name, "I%d", i);
        c.inputs[i].rank = 0;
    }
    for (int w = 0; w < 2; w++) {
        so_pattern *p = w ? &c.dst : &c.src;
        for (int i = 0; i < p->n_nodes; i++) memset(p->nodes[i].dx, 0, sizeof p->nodes[i].dx);
    }
    return so_rule_format(&c);
}

typedef struct binding {
    int bound[SO_RULE_MAX_SYMS];
    so_dimx val[SO_RULE_MAX_SYMS];
} binding;

static int bind_dim(binding *B, const so_dimx *e1, const so_dimx *e2, int final)
{
    if (e1->n_sym == 1 && e1->c == 0 && !final) {
        int s = e1->sym[0];
        if (!B->bound[s]) {
            B->bound[s] = 1;
            B->val[s] = *e2;
            return 1;
        }
        return so_dimx_eq(&B->val[s], e2);
    }
    if (e1->n_sym == 0) return e2->n_sym == 0 && e2->c == e1->c;
    if (!final) return 1;
    /* substitute and compare */
    so_dimx r;
    memset(&r, 0, sizeof r);
    r.c = e1->c;
    for (int q = 0; q < e1->n_sym; q++) {
        if (!B->bound[e1->sym[q]]) return 0;
        const so_dimx *v = &B->val[e1->sym[q]];
        if (r.n_sym + v->n_sym > 4) return 0;
        r.c += v->c;
        for (int t = 0; t < v->n_sym; t++) r.sym[r.n_sym++] = v->sym[t];
    }
    return so_dimx_eq(&r, e2);
}

/* Does r1 (more general) have r2 as an instance? Same structure key assumed. */
static int subsumes(const so_rule *r1, const so_rule *r2)
{
    if (r1->n_inputs != r2->n_inputs) return 0;
    binding B;
    memset(&B, 0, sizeof B);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r1->n_inputs; i++) {
            if (r1->inputs[i].rank != r2->inputs[i].rank) return 0;
            for (int k = 0; k < r1->inputs[i].rank; k++)
                if (!bind_dim(&B, &r1->inputs[i].dim[k], &r2->inputs[i].dim[k], pass)) return 0;
        }
        for (int w = 0; w < 2; w++) {
            const so_pattern *p1 = w ? &r1->dst : &r1->src, *p2 = w ? &r2->dst : &r2->src;
            for (int i = 0; i < p1->n_nodes; i++)
                for (int k = 0; k < p1->nodes[i].n_dx; k++)
                    if (!bind_dim(&B, &p1->nodes[i].dx[k], &p2->nodes[i].dx[k], pass)) return 0;
        }
    }
    return r2->n_pre == 0 || r1->n_pre == 0 ? 1 : 0;
}

typedef struct skey {
    char *key;
    int idx;
} skey;

static int cmp_skey(const void *x, const void *y)
{
    const skey *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

/* Drops rules that are instances of another rule with the same structure (e.g. the same
   identity found on 4-d activations and on conv kernels). Deterministic. Returns the count. */
int32_t so_gen_drop_subsumed(so_ruleset *rs) { return drop_subsumed(rs); }

static int32_t drop_subsumed(so_ruleset *rs)
{
    int n = rs->n_rules;
    skey *k = so_xmalloc((size_t)(n ? n : 1) * sizeof *k);
    char *drop = so_xcalloc((size_t)(n ? n : 1), 1);
    for (int i = 0; i < n; i++) {
        k[i].key = structure_key(&rs->rules[i]);
        k[i].idx = i;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_skey);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(k[j].key, k[i].key) == 0) j++;
        for (int x = i; x < j; x++)
            for (int y = i; y < j; y++) {
                if (x == y || drop[k[y].idx] || drop[k[x].idx]) continue;
                const so_rule *a = &rs->rules[k[x].idx], *b = &rs->rules[k[y].idx];
                /* a subsumes b: drop b, unless they subsume each other and b comes first */
                if (subsumes(a, b) && !(subsumes(b, a) && k[y].idx < k[x].idx)) drop[k[y].idx] = 1;
            }
        i = j;
    }
    int32_t w = 0;
    for (int i = 0; i < n; i++)
        if (!drop[i]) rs->rules[w++] = rs->rules[i];
    for (int i = 0; i < n; i++) free(k[i].key);
    free(k);
    free(drop);
    int32_t dropped = rs->n_rules - w;
    rs->n_rules = w;
    return dropped;
}

/* ---------------- pipeline ---------------- */

typedef struct cand {
    int32_t a, b;        /* src, dst graph indices */
    uint64_t orbit;
} cand;

typedef struct progress {
    int on;
    double t0, last;
    const char *stage;
} progress;

static void prog_enum(void *ctx, int64_t graphs, int64_t done, int64_t total)
{
    progress *P = ctx;
    if (!P->on) return;
    double now = so_now();
    if (now - P->last < 1.0) return;
    P->last = now;
    double el = now - P->t0, rate = el > 0 ? (double)graphs / el : 0;
    double eta = done > 0 ? el * (double)(total - done) / (double)done : 0;
    fprintf(stderr, "\r\033[Kgenerate: %s %lld graphs (%.0f/s), %lld/%lld items, %.0fs elapsed, ETA %.0fs", P->stage,
            (long long)graphs, rate, (long long)done, (long long)total, el, eta);
}

static void prog_stage(progress *P, const char *fmt, long long a, long long b)
{
    if (!P->on) return;
    double now = so_now();
    if (now - P->last < 1.0) return;
    P->last = now;
    fprintf(stderr, "\r\033[Kgenerate: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, ", %.0fs elapsed", now - P->t0);
}

/* Rule sort key: total nodes, source nodes, outputs, then the printed text without the id
   line and proof time. */
typedef struct rkey {
    int na, ns, no;
    char *text;
    so_rule *r;
} rkey;

static int cmp_rkey(const void *x, const void *y)
{
    const rkey *a = x, *b = y;
    if (a->na != b->na) return a->na < b->na ? -1 : 1;
    if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
    if (a->no != b->no) return a->no < b->no ? -1 : 1;
    return strcmp(a->text, b->text);
}

void so_gen_sort(so_ruleset *rs)
{
    int n = rs->n_rules;
    rkey *k = so_xmalloc((size_t)(n ? n : 1) * sizeof *k);
    for (int i = 0; i < n; i++) {
        so_rule c = rs->rules[i];
        c.id = 0;
        c.proof_seconds = -1;
        k[i].na = c.src.n_nodes + c.dst.n_nodes;
        k[i].ns = c.src.n_nodes;
        k[i].no = c.n_outputs;
        k[i].text = so_rule_format(&c);
        k[i].r = &rs->rules[i];
    }
    qsort(k, (size_t)n, sizeof *k, cmp_rkey);
    so_rule *out = so_xmalloc((size_t)(n ? n : 1) * sizeof *out);
    for (int i = 0; i < n; i++) {
        out[i] = *k[i].r;
        out[i].id = i + 1;
        free(k[i].text);
    }
    free(k);
    free(rs->rules);
    rs->rules = out;
    rs->cap_rules = n ? n : 1;
}

/* ---------------- checkpoint of the verification stage ----------------
   Enumeration, bucketing, generalisation and the float re-test are deterministic and take a
   minority of the time; the proofs dominate. The checkpoint records, for the candidate list
   that reaches the prover (identified by an XXH3 of its printed rules), the proof status of
   every rule proved so far, plus the options and an XXH3 of the running binary. */

static uint64_t binary_hash(void)
{
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f) return 0;
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset(s);
    static char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) XXH3_64bits_update(s, buf, n);
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    fclose(f);
    return h;
}

typedef struct ckpt {
    const char *path;
    char opts[192];
    uint64_t bin, cand;
    int32_t n;
    char *st;           /* per rule: '.' pending, 'p' proved, 'f' failed */
    double last, interval;
    int writes, stop_after;
} ckpt;

static so_status ckpt_write(ckpt *c)
{
    so_atomic a;
    if (so_atomic_open(&a, c->path, "w") != SO_OK) return SO_ERR;
    fprintf(a.f, "superopt-generate-checkpoint 1\n%s\nbinary %016llx\ncandidates %ld %016llx\n", c->opts,
            (unsigned long long)c->bin, (long)c->n, (unsigned long long)c->cand);
    fwrite(c->st, 1, (size_t)c->n, a.f);
    fputc('\n', a.f);
    if (so_atomic_commit(&a, c->path, 1) != SO_OK) return SO_ERR;
    c->last = so_now();
    if (c->stop_after > 0 && ++c->writes >= c->stop_after) _exit(137); /* test hook: die mid-run */
    return SO_OK;
}

/* Loads c->path into c->st if it exists. Returns SO_ERR with a one-line message if it belongs
   to other options, another binary or another candidate list. */
static so_status ckpt_load(ckpt *c)
{
    FILE *f = fopen(c->path, "r");
    if (!f) return SO_OK; /* nothing to resume */
    so_status rc = SO_ERR;
    char l1[64], l2[256], l3[64], l4[96];
    char *buf = so_xmalloc((size_t)c->n + 2);
    char want3[64], want4[96];
    snprintf(want3, sizeof want3, "binary %016llx\n", (unsigned long long)c->bin);
    snprintf(want4, sizeof want4, "candidates %ld %016llx\n", (long)c->n, (unsigned long long)c->cand);
    if (!fgets(l1, sizeof l1, f) || strcmp(l1, "superopt-generate-checkpoint 1\n") || !fgets(l2, sizeof l2, f) ||
        !fgets(l3, sizeof l3, f) || !fgets(l4, sizeof l4, f)) {
        so_errorf("%s: not a generate checkpoint (delete it or run without --resume)", c->path);
        goto done;
    }
    l2[strcspn(l2, "\n")] = 0;
    if (strcmp(l2, c->opts)) {
        so_errorf("%s: checkpoint of other options (%s, now %s); delete it or run without --resume", c->path, l2,
                  c->opts);
        goto done;
    }
    if (strcmp(l3, want3)) {
        so_errorf("%s: checkpoint written by another superopt binary; delete it or run without --resume", c->path);
        goto done;
    }
    if (strcmp(l4, want4)) {
        so_errorf("%s: checkpoint of another candidate list; delete it or run without --resume", c->path);
        goto done;
    }
    if (fread(buf, 1, (size_t)c->n + 1, f) != (size_t)c->n + 1 || buf[c->n] != '\n') {
        so_errorf("%s: truncated checkpoint; delete it or run without --resume", c->path);
        goto done;
    }
    for (int32_t k = 0; k < c->n; k++)
        if (buf[k] != '.' && buf[k] != 'p' && buf[k] != 'f') {
            so_errorf("%s: corrupt checkpoint; delete it or run without --resume", c->path);
            goto done;
        }
    memcpy(c->st, buf, (size_t)c->n);
    rc = SO_OK;
done:
    free(buf);
    fclose(f);
    return rc;
}

/* Proves rs in chunks, checkpointing after a chunk when the interval has passed; rules
   already decided by a loaded checkpoint are not proved again. */
static so_status verify_ckpt(const so_gen_options *o, so_ruleset *rs, int threads, char ***why_out)
{
    ckpt c;
    memset(&c, 0, sizeof c);
    c.path = o->ckpt_path;
    c.n = rs->n_rules;
    snprintf(c.opts, sizeof c.opts, "options max-ops=%d seed=%llu shard=%d/%d float=%d timeout=%g", o->max_ops,
             (unsigned long long)o->seed, o->shard_i, o->shard_n, o->float_test, o->timeout_s);
    c.bin = binary_hash();
    XXH3_state_t *hs = XXH3_createState();
    XXH3_64bits_reset(hs);
    for (int32_t k = 0; k < rs->n_rules; k++) {
        char *t = so_rule_format(&rs->rules[k]);
        XXH3_64bits_update(hs, t, strlen(t) + 1);
        free(t);
    }
    c.cand = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    c.st = so_xmalloc((size_t)c.n + 1);
    memset(c.st, '.', (size_t)c.n);
    const char *e = getenv("SO_GEN_CKPT_INTERVAL");
    c.interval = e ? atof(e) : 2.0;
    e = getenv("SO_GEN_CKPT_STOP_AFTER");
    c.stop_after = e ? atoi(e) : 0;
    char **why = why_out ? calloc((size_t)(c.n ? c.n : 1), sizeof *why) : NULL;
    so_status rc = SO_ERR;
    if (o->resume && ckpt_load(&c) != SO_OK) goto done;
    c.last = so_now();
    /* each so_verify_ruleset call builds a fresh Z3 context per thread (all axioms asserted,
       ~30 ms): chunks of n/16 rules, 32..512, amortise that and still checkpoint often */
    const int32_t chunk = c.n / 16 < 32 ? 32 : c.n / 16 > 512 ? 512 : c.n / 16;
    for (int32_t k = 0; k < c.n;) {
        /* next run of pending rules, at most chunk long */
        while (k < c.n && c.st[k] != '.') {
            rs->rules[k].status = c.st[k] == 'p' ? SO_RULE_PROVED : SO_RULE_FAILED;
            rs->rules[k].proof_seconds = -1;
            if (why && !why[k]) why[k] = so_xstrdup(c.st[k] == 'p' ? "proved (checkpoint)" : "failed (checkpoint)");
            k++;
        }
        int32_t j = k;
        while (j < c.n && j - k < chunk && c.st[j] == '.') j++;
        if (j == k) break;
        so_ruleset view = *rs;
        view.rules = rs->rules + k;
        view.n_rules = j - k;
        view.cap_rules = j - k;
        so_verify_summary vs;
        char **w = NULL;
        if (so_verify_ruleset(&view, threads, o->timeout_s, &vs, why ? &w : NULL) != SO_OK) goto done;
        for (int32_t i = k; i < j; i++) {
            c.st[i] = rs->rules[i].status == SO_RULE_PROVED ? 'p' : 'f';
            if (why) why[i] = w[i - k];
        }
        free(w);
        k = j;
        if (c.path && so_now() - c.last >= c.interval && k < c.n && ckpt_write(&c) != SO_OK) goto done;
    }
    rc = SO_OK;
done:
    free(c.st);
    if (why_out && rc == SO_OK) *why_out = why;
    else if (why) {
        for (int32_t k = 0; k < c.n; k++) free(why[k]);
        free(why);
    }
    return rc;
}

/* Bucketing of one key partition: classes, candidates, pruning and generalisation. */
typedef struct part_res {
    so_ruleset rs;          /* generalised candidates of the partition, in bucket order */
    int64_t bucketed, classes, collisions, candidates, n_trivial, n_renamed, n_common;
    so_status rc;
    char err[256];
} part_res;

typedef struct bucket_job {
    const gen_universe *u;
    const gen_inputs *in;
    const gen_parts *parts;
    part_res *res;
    int n_parts;
    const char *prov;
    progress *P;
    atomic_int next, done;
    atomic_llong candidates;
    pthread_mutex_t mu;       /* progress line */
} bucket_job;

/* Candidates of one bucket g[0..n) (equal keys): classes on full fingerprints, representative
   pairing, pruning; survivors are generalised into r->rs. */
static void bucket_one(const bucket_job *J, const gen_graph *g, int n, int *cls, uint64_t *inv, gen_eval *ev,
                       part_res *r)
{
    const gen_universe *u = J->u;
    int ncl = split_bucket_ev(u, J->in, g, n, cls, ev);
    if (ncl > 1) r->collisions++;
    for (int c = 0; c < ncl; c++) {
        int members = 0;
        for (int a = 0; a < n; a++) members += cls[a] == c;
        if (members < 2) continue;
        r->classes++;
        /* representative pairing: R = members with the least (n_nodes, renaming-invariant
           structure hash); pairs inside R and every other member with every member of R.
           Members are sorted by (n_nodes, canon): src = the later one. */
        int best_n = 1 << 30;
        uint64_t best_h = UINT64_MAX;
        for (int a = 0; a < n; a++)
            if (cls[a] == c && g[a].n_nodes < best_n) best_n = g[a].n_nodes;
        for (int a = 0; a < n; a++) { /* only members with the fewest nodes can be in R */
            if (cls[a] != c || g[a].n_nodes != best_n) continue;
            inv[a] = graph_orbit_hash(u, &g[a]);
            if (inv[a] < best_h) best_h = inv[a];
        }
        for (int a = 0; a < n; a++) {
            if (cls[a] != c) continue;
            int a_rep = g[a].n_nodes == best_n && inv[a] == best_h;
            for (int b = a + 1; b < n; b++) {
                if (cls[b] != c) continue;
                int b_rep = g[b].n_nodes == best_n && inv[b] == best_h;
                if (!a_rep && !b_rep) continue;
                const gen_graph *ga = &g[b], *gb = &g[a]; /* src larger */
                if (ga->n_nodes == 0) continue;           /* two variables */
                r->candidates++;
                if (so_gen_trivial(u, ga, gb)) {
                    r->n_trivial++;
                    continue;
                }
                uint64_t self;
                uint64_t orb = so_gen_orbit_hash(u, ga, gb, &self);
                if (orb != self) {
                    r->n_renamed++;
                    continue;
                }
                if (so_gen_common_subgraph(u, ga, gb) || value_redundant_ev(u, ga, &ev[b], gb, &ev[a])) {
                    r->n_common++;
                    continue;
                }
                so_rule rule;
                if (so_gen_make_rule(u, ga, gb, &rule) != SO_OK) continue;
                snprintf(rule.provenance, sizeof rule.provenance, "%s", J->prov);
                so_ruleset_push(&r->rs, &rule);
            }
        }
    }
}

static void bucket_part(bucket_job *J, int k)
{
    part_res *r = &J->res[k];
    gen_graph *g = NULL;
    int64_t ng = 0;
    r->rc = gen_parts_load(J->parts, k, 1, &g, &ng);
    if (r->rc != SO_OK) {
        snprintf(r->err, sizeof r->err, "%s", so_error());
        return;
    }
    r->bucketed = ng;
    int cap = 0;
    int *cls = NULL;
    uint64_t *inv = NULL;
    gen_eval *ev = NULL;
    for (int64_t i = 0; i < ng;) {
        int64_t j = i;
        while (j < ng && g[j].key == g[i].key) j++;
        int n = (int)(j - i);
        if (n >= 2) {
            if (n > cap) {
                cap = n;
                cls = so_xrealloc(cls, (size_t)n * sizeof *cls);
                inv = so_xrealloc(inv, (size_t)n * sizeof *inv);
                ev = so_xrealloc(ev, (size_t)n * sizeof *ev);
            }
            int64_t before = r->candidates;
            bucket_one(J, g + i, n, cls, inv, ev, r);
            for (int a = 0; a < n; a++) gen_eval_free(&ev[a]);
            atomic_fetch_add(&J->candidates, r->candidates - before);
        }
        i = j;
    }
    free(cls);
    free(inv);
    free(ev);
    free(g);
}

static void *bucket_worker(void *arg)
{
    bucket_job *J = arg;
    for (;;) {
        int k = atomic_fetch_add(&J->next, 1);
        if (k >= J->n_parts) break;
        bucket_part(J, k);
        int d = atomic_fetch_add(&J->done, 1) + 1;
        progress *P = J->P;
        if (P->on) {
            pthread_mutex_lock(&J->mu);
            double now = so_now();
            if (now - P->last >= 1.0) {
                P->last = now;
                fprintf(stderr, "\r\033[Kgenerate: bucketing %d/%d partitions, %lld candidates, %.0fs elapsed", d, J->n_parts,
                        (long long)atomic_load(&J->candidates), now - P->t0);
            }
            pthread_mutex_unlock(&J->mu);
        }
    }
    gen_memo_release();
    return NULL;
}

so_status so_gen_run(const so_gen_options *o, so_ruleset *out, so_gen_stats *st)
{
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    double t0 = so_now();
    gen_universe du;
    const gen_universe *u = o->universe;
    if (!u) {
        gen_universe_default(&du);
        u = &du;
    }
    progress P = {!o->quiet && isatty(2), t0, 0, "enumerating"};
    gen_inputs in;
    gen_inputs_make(u, o->seed, &in);
    gen_parts *parts = NULL;
    gen_enum_stats es;
    so_status rc = gen_enumerate_parts(u, &in, o->max_ops, o->threads, o->shard_i, o->shard_n, &parts, &es, prog_enum, &P);
    if (rc != SO_OK) {
        gen_inputs_free(&in);
        return rc;
    }
    st->graphs = es.graphs;
    st->kept = es.kept;
    st->enum_seconds = so_now() - t0;
    /* classes, candidates, pruning, generalisation: key partitions in parallel; the results are
       concatenated in partition order, so they do not depend on the thread count */
    char prov[96];
    snprintf(prov, sizeof prov, "generate max-ops=%d seed=%llu", o->max_ops, (unsigned long long)o->seed);
    bucket_job J;
    memset(&J, 0, sizeof J);
    J.u = u;
    J.in = &in;
    J.parts = parts;
    J.n_parts = gen_parts_count(parts);
    J.res = so_xcalloc((size_t)J.n_parts, sizeof *J.res);
    J.prov = prov;
    J.P = &P;
    atomic_init(&J.next, 0);
    atomic_init(&J.done, 0);
    atomic_init(&J.candidates, 0);
    pthread_mutex_init(&J.mu, NULL);
    int nt = o->threads < 1 ? 1 : o->threads > J.n_parts ? J.n_parts : o->threads;
    pthread_t *th = so_xcalloc((size_t)nt, sizeof *th);
    for (int i = 1; i < nt; i++) pthread_create(&th[i], NULL, bucket_worker, &J);
    bucket_worker(&J);
    for (int i = 1; i < nt; i++) pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&J.mu);
    gen_parts_free(parts);
    so_ruleset rs;
    memset(&rs, 0, sizeof rs);
    int64_t n_trivial = 0, n_renamed = 0, n_common = 0;
    rc = SO_OK;
    for (int k = 0; k < J.n_parts; k++) {
        part_res *r = &J.res[k];
        if (r->rc != SO_OK && rc == SO_OK) {
            so_errorf("%s", r->err);
            rc = SO_ERR;
        }
        st->bucketed += r->bucketed;
        st->classes += r->classes;
        st->collisions += r->collisions;
        st->candidates += r->candidates;
        n_trivial += r->n_trivial;
        n_renamed += r->n_renamed;
        n_common += r->n_common;
        for (int32_t q = 0; q < r->rs.n_rules; q++) so_ruleset_push(&rs, &r->rs.rules[q]);
        so_ruleset_free(&r->rs);
    }
    free(J.res);
    if (rc != SO_OK) {
        so_ruleset_free(&rs);
        gen_inputs_free(&in);
        return rc;
    }
    st->bucket_seconds = so_now() - t0 - st->enum_seconds;
    st->after_trivial = st->candidates - n_trivial;
    st->after_renaming = st->after_trivial - n_renamed;
    st->after_common_subgraph = st->after_renaming - n_common;
    add_eps_instances(&rs);
    st->after_generalise = rs.n_rules;
    st->in_shard = rs.n_rules;
    gen_inputs_free(&in);
    /* float re-test */
    double tf = so_now();
    if (o->float_test) {
        int32_t w = 0;
        for (int32_t k = 0; k < rs.n_rules; k++) {
            int ok = 0;
            char why[256];
            if (so_verify_numeric(&rs.rules[k], 2, o->seed + 17, &ok, why, sizeof why) != SO_OK) ok = 0;
            if (ok) rs.rules[w++] = rs.rules[k];
            prog_stage(&P, "float re-test %lld/%lld", (long long)k, (long long)rs.n_rules);
        }
        rs.n_rules = w;
    }
    st->after_float = rs.n_rules;
    st->float_seconds = so_now() - tf;
    /* verification */
    if (o->verify && rs.n_rules > 0) {
        double tv = so_now();
        if (P.on) fprintf(stderr, "\r\033[Kgenerate: proving %d candidates...", (int)rs.n_rules);
        so_verify_summary vs;
        char **why = NULL;
        so_status vrc = o->ckpt_path ? verify_ckpt(o, &rs, o->threads > 2 ? 2 : o->threads, o->failed_path ? &why : NULL)
                                     : so_verify_ruleset(&rs, o->threads > 2 ? 2 : o->threads, o->timeout_s, &vs,
                                                         o->failed_path ? &why : NULL);
        if (vrc != SO_OK) {
            so_ruleset_free(&rs);
            return SO_ERR;
        }
        if (o->failed_path) {
            /* development aid: the candidates Z3 did not prove, with the reason */
            so_atomic fa;
            so_status fst = so_atomic_open(&fa, o->failed_path, "w");
            for (int32_t k = 0; fst == SO_OK && k < rs.n_rules; k++)
                if (rs.rules[k].status != SO_RULE_PROVED) {
                    char *t = so_rule_format(&rs.rules[k]);
                    fprintf(fa.f, "# %s\n%s\n", why[k] ? why[k] : "?", t);
                    free(t);
                }
            if (fst == SO_OK) fst = so_atomic_commit(&fa, o->failed_path, 1);
            for (int32_t k = 0; k < rs.n_rules; k++) free(why[k]);
            free(why);
            if (fst != SO_OK) {
                so_ruleset_free(&rs);
                return SO_ERR;
            }
        }
        int32_t w = 0;
        for (int32_t k = 0; k < rs.n_rules; k++)
            if (rs.rules[k].status == SO_RULE_PROVED) {
                if (!o->proof_times) rs.rules[k].proof_seconds = -1;
                rs.rules[w++] = rs.rules[k];
            }
        rs.n_rules = w;
        st->proved = w;
        st->verify_seconds = so_now() - tv;
    }
    if (P.on) fprintf(stderr, "\r\033[K");
    /* subsumption runs last (also in merge), so that shards + merge equal one run */
    so_gen_merge(&rs);
    st->after_subsumed = rs.n_rules;
    snprintf(rs.header, sizeof rs.header,
             "superopt generate --max-ops %d --seed %llu: %s rules (format: rules/RULES.md)", o->max_ops,
             (unsigned long long)o->seed, o->verify ? "proved" : "unverified");
    st->rules = rs.n_rules;
    st->seconds = so_now() - t0;
    gen_memo_release();
    *out = rs;
    return SO_OK;
}

/* ---------------- CLI ---------------- */

static int usage_gen(void)
{
    fprintf(stderr, "usage: superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N]\n"
                    "                         [--json FILE] [--no-verify] [--no-float] [--proof-times] [--timeout S] [-q] [--resume] [--mpi]\n");
    return 2;
}

static int parse_int(const char *s, long long lo, long long hi, long long *v)
{
    char *e;
    errno = 0;
    long long x = strtoll(s, &e, 10);
    if (errno || *e || e == s || x < lo || x > hi) return 0;
    *v = x;
    return 1;
}

int so_gen_main(int argc, char **argv)
{
    so_gen_options o;
    so_gen_options_default(&o);
    const char *outp = "rules/generated.rules", *json = NULL;
    int mpi = 0, mpi_rank = 0; /* --mpi: rules/gen_mpi.h (shard per rank, merged at rank 0, which writes) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        if (!strcmp(a, "--max-ops") && i + 1 < argc) {
            if (!parse_int(argv[++i], 1, GEN_MAX_OPS, &v)) return usage_gen();
            o.max_ops = (int)v;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            outp = argv[++i];
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            if (!parse_int(argv[++i], 1, 256, &v)) return usage_gen();
            o.threads = (int)v;
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            if (!parse_int(argv[++i], 0, INT64_MAX, &v)) return usage_gen();
            o.seed = (uint64_t)v;
        } else if (!strcmp(a, "--shard") && i + 1 < argc) {
            int si, sn;
            char c;
            if (sscanf(argv[++i], "%d/%d%c", &si, &sn, &c) != 2 || sn < 1 || si < 0 || si >= sn) return usage_gen();
            o.shard_i = si;
            o.shard_n = sn;
        } else if (!strcmp(a, "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (!strcmp(a, "--timeout") && i + 1 < argc) {
            o.timeout_s = atof(argv[++i]);
            if (o.timeout_s <= 0) return usage_gen();
        } else if (!strcmp(a, "--failed") && i + 1 < argc) {
            o.failed_path = argv[++i];
        } else if (!strcmp(a, "--no-verify")) {
            o.verify = 0;
        } else if (!strcmp(a, "--no-float")) {
            o.float_test = 0;
        } else if (!strcmp(a, "--proof-times")) {
            o.proof_times = 1;
        } else if (!strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--resume")) {
            o.resume = 1;
        } else if (!strcmp(a, "--mpi")) {
            mpi = 1;
        } else {
            return usage_gen();
        }
    }
    char ckpt_path[4096 + 8];
    snprintf(ckpt_path, sizeof ckpt_path, "%s.ckpt", outp);
    o.ckpt_path = ckpt_path;
    so_ruleset rs;
    so_gen_stats st;
    if ((mpi ? so_gen_mpi_run(&o, &rs, &st, &mpi_rank) : so_gen_run(&o, &rs, &st)) != SO_OK) {
        fprintf(stderr, "superopt generate: %s\n", so_error());
        return 1;
    }
    if (mpi_rank != 0) return so_gen_mpi_finish(0);
    int rc = 0;
    if (so_rules_save(&rs, outp) != SO_OK) {
        fprintf(stderr, "superopt generate: %s\n", so_error());
        rc = 1;
    } else {
        remove(ckpt_path); /* done: the checkpoint is no longer needed (absent if never written) */
    }
    if (mpi) rc = so_gen_mpi_finish(rc);
    fprintf(stderr,
            "generate: %lld graphs, %lld candidates, %lld after trivial, %lld after renaming, %lld after common subgraph"
            ", %lld generalised, %lld after float re-test, %lld proved, %lld after subsumption = %lld rules -> %s (%.1f s)\n",
            (long long)st.graphs, (long long)st.candidates, (long long)st.after_trivial, (long long)st.after_renaming,
            (long long)st.after_common_subgraph, (long long)st.after_generalise, (long long)st.after_float,
            (long long)st.proved, (long long)st.after_subsumed, (long long)st.rules, outp, st.seconds);
    if (json) {
        so_atomic ja;
        if (so_atomic_open(&ja, json, "w") != SO_OK) {
            fprintf(stderr, "superopt generate: %s\n", so_error());
            rc = 1;
        } else {
            FILE *f = ja.f;
            fprintf(f,
                    "{\"graphs\": %lld, \"kept\": %lld, \"bucketed\": %lld, \"classes\": %lld, \"collisions\": %lld, \"candidates\": %lld, "
                    "\"after_trivial\": %lld, \"after_renaming\": %lld, \"after_common_subgraph\": %lld, "
                    "\"in_shard\": %lld, \"after_generalise\": %lld, \"after_subsumed\": %lld, \"after_float\": %lld, \"proved\": %lld, "
                    "\"rules\": %lld, \"enum_seconds\": %.3f, \"bucket_seconds\": %.3f, \"float_seconds\": %.3f, "
                    "\"verify_seconds\": %.3f, \"seconds\": %.3f}\n",
                    (long long)st.graphs, (long long)st.kept, (long long)st.bucketed, (long long)st.classes, (long long)st.collisions,
                    (long long)st.candidates, (long long)st.after_trivial, (long long)st.after_renaming,
                    (long long)st.after_common_subgraph, (long long)st.in_shard, (long long)st.after_generalise, (long long)st.after_subsumed,
                    (long long)st.after_float, (long long)st.proved, (long long)st.rules, st.enum_seconds,
                    st.bucket_seconds, st.float_seconds, st.verify_seconds, st.seconds);
            if (so_atomic_commit(&ja, json, 1) != SO_OK) {
                fprintf(stderr, "superopt generate: %s\n", so_error());
                rc = 1;
            }
        }
    }
    so_ruleset_free(&rs);
    return rc;
}

void so_gen_merge(so_ruleset *all)
{
    so_gen_sort(all);
    drop_subsumed(all);
    /* drop exact duplicates (the same rule in two inputs) */
    int32_t w = 0;
    for (int32_t k = 0; k < all->n_rules; k++) {
        if (w > 0) {
            so_rule a = all->rules[w - 1], b = all->rules[k];
            a.id = b.id = 0;
            if (so_rule_eq(&a, &b)) continue;
        }
        all->rules[w++] = all->rules[k];
    }
    all->n_rules = w;
    for (int32_t k = 0; k < w; k++) all->rules[k].id = k + 1;
}

static int usage_rules(void)
{
    fprintf(stderr, "usage: superopt rules merge A.rules B.rules ... -o OUT.rules\n");
    return 2;
}

int so_rules_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "merge") != 0) return usage_rules();
    const char *outp = NULL;
    so_ruleset all;
    memset(&all, 0, sizeof all);
    int n_files = 0, rc = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return usage_rules();
            outp = argv[++i];
            continue;
        }
        so_ruleset rs;
        if (so_rules_load(argv[i], &rs) != SO_OK) {
            fprintf(stderr, "superopt rules merge: %s\n", so_error());
            so_ruleset_free(&all);
            return 1;
        }
        if (n_files++ == 0) memcpy(all.header, rs.header, sizeof all.header);
        for (int k = 0; k < rs.n_rules; k++) so_ruleset_push(&all, &rs.rules[k]);
        so_ruleset_free(&rs);
    }
    if (!outp || n_files == 0) {
        so_ruleset_free(&all);
        return usage_rules();
    }
    so_gen_merge(&all);
    int32_t w = all.n_rules;
    if (so_rules_save(&all, outp) != SO_OK) {
        fprintf(stderr, "superopt rules merge: %s\n", so_error());
        rc = 1;
    } else {
        fprintf(stderr, "rules merge: %d files, %d rules -> %s\n", n_files, (int)w, outp);
    }
    so_ruleset_free(&all);
    return rc;
}
