/* gen_prune.c - generator pruning: fingerprint classes, trivial / common-subgraph / value-redundant candidates, renaming-canonical (orbit) hashes. */
#include "gen_priv.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>


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
int genp_split_bucket_ev(const gen_universe *u, const gen_inputs *in, const gen_graph *g, int n, int *cls, gen_eval *ev)
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
    int nc = genp_split_bucket_ev(u, in, g, n, cls, ev);
    for (int i = 0; i < n; i++) gen_eval_free(&ev[i]);
    free(ev);
    return nc;
}

/* ---------------- pruning predicates ---------------- */

/* Node hashes of g as its rule prints it: enlarged-kernel pseudo-variables become explicit
   enlarge nodes first, so that a pseudo-variable on one side and an enumerated enlarge of the same
   kernel on the other are one node (before this, 28 shipped rules such as enlarge(H) + V ->
   enlarge(H) + V had the same two sides: the unexpanded graphs differed only in that spelling).
   Returns the node count (h[0..n)), or -1 if the expansion does not fit. */
static int printed_hashes(const gen_universe *u, const gen_graph *g, uint64_t *h, gen_graph *x)
{
    if (!genp_expand_pseudo(u, g, x)) return -1;
    gen_node_hashes(u, x, h);
    return x->n_nodes;
}

static void sort_hashes(uint64_t *h, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && h[j - 1] > h[j]; j--) {
            uint64_t t = h[j];
            h[j] = h[j - 1];
            h[j - 1] = t;
        }
}

int so_gen_trivial(const gen_universe *u, const gen_graph *a, const gen_graph *b)
{
    if (a->n_nodes == 0 && b->n_nodes == 0) return a->out[0] == b->out[0];
    uint64_t ha[GEN_MAX_NODES], hb[GEN_MAX_NODES];
    gen_graph xa, xb;
    int na = printed_hashes(u, a, ha, &xa), nb = printed_hashes(u, b, hb, &xb);
    if (na < 0 || nb < 0) return a->n_nodes == b->n_nodes && a->canon == b->canon;
    if (na != nb || xa.n_out != xb.n_out) return 0;
    /* the same multiset of nodes and the same tensors as outputs, in order */
    for (int k = 0; k < xa.n_out; k++) {
        int ta = xa.out[k], tb = xb.out[k], da = tid_node(u, ta), db = tid_node(u, tb);
        if ((da < 0) != (db < 0)) return 0;
        if (da < 0 ? ta != tb : ha[da] != hb[db] || tid_slot(u, ta) != tid_slot(u, tb)) return 0;
    }
    sort_hashes(ha, na);
    sort_hashes(hb, nb);
    return memcmp(ha, hb, sizeof(uint64_t) * (size_t)na) == 0;
}

int so_gen_common_subgraph(const gen_universe *u, const gen_graph *a, const gen_graph *b)
{
    /* on the printed graphs: a pseudo-variable used on both sides, or on one side with an
       enumerated enlarge of its kernel on the other, is a common enlarge node */
    uint64_t ha[GEN_MAX_NODES], hb[GEN_MAX_NODES];
    gen_graph xa, xb;
    int na = printed_hashes(u, a, ha, &xa), nb = printed_hashes(u, b, hb, &xb);
    if (na < 0 || nb < 0) return 1; /* no rule can be printed for it (so_gen_make_rule fails too) */
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
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
    if (res && u->insts[na->inst].op == SO_OP_SPLIT) {
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
int genp_value_redundant_ev(const gen_universe *u, const gen_graph *a, const gen_eval *pa, const gen_graph *b,
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
        red = genp_value_redundant_ev(u, a, &ea, b, &eb);
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
uint64_t genp_graph_orbit_hash(const gen_universe *u, const gen_graph *g)
{
    return so_gen_orbit_hash(u, g, g, NULL);
}
