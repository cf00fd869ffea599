/* egraph.c - the e-graph of search/eqsat.c: union-find, hash-consing, cycle-free merges, congruence rebuild. */
#include "egraph.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void so_eg_init(so_egraph *eg, so_model *m)
{
    memset(eg, 0, sizeof *eg);
    eg->model = m;
}

void so_eg_free(so_egraph *eg)
{
    for (int32_t c = 0; c < eg->n_cls; c++) {
        free(eg->cls[c].out);
        free(eg->cls[c].nodes);
        free(eg->cls[c].parents);
    }
    free(eg->cls);
    free(eg->uf);
    free(eg->nodes);
    free(eg->kids);
    free(eg->stamp);
    so_hmap_free(&eg->memo);
    memset(eg, 0, sizeof *eg);
}

int32_t so_eg_find(so_egraph *eg, int32_t c)
{
    while (eg->uf[c] != c) {
        eg->uf[c] = eg->uf[eg->uf[c]]; /* path halving */
        c = eg->uf[c];
    }
    return c;
}

static void push(int32_t **v, int32_t *n, int32_t *cap, int32_t x)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        *v = so_xrealloc(*v, (size_t)*cap * sizeof **v);
    }
    (*v)[(*n)++] = x;
}

static uint64_t node_hash(so_egraph *eg, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in)
{
    int32_t buf[6 + SO_MAX_IN + 8];
    uintptr_t ap = (uintptr_t)attr;
    buf[0] = op, buf[1] = ref, buf[2] = n_in, buf[3] = (int32_t)(uint32_t)ap, buf[4] = (int32_t)(uint32_t)((uint64_t)ap >> 32);
    for (int32_t k = 0; k < n_in; k++) buf[5 + k] = so_eg_find(eg, kids[k]);
    return XXH3_64bits(buf, (size_t)(5 + n_in) * sizeof *buf);
}

static int node_equal(so_egraph *eg, int32_t n, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in)
{
    const so_enode *e = &eg->nodes[n];
    if (e->dead || e->op != op || e->attr != attr || e->ref != ref || e->n_in != n_in) return 0;
    for (int32_t k = 0; k < n_in; k++)
        if (so_eg_find(eg, eg->kids[e->in + k]) != so_eg_find(eg, kids[k])) return 0;
    return 1;
}

/* A live e-node equal to the given one, or -1. */
static int32_t lookup(so_egraph *eg, uint64_t h, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in,
                      int32_t except)
{
    uint64_t it = 0, v;
    while (so_hmap_next(&eg->memo, h, &it, &v))
        if ((int32_t)v != except && node_equal(eg, (int32_t)v, op, attr, ref, kids, n_in)) return (int32_t)v;
    return -1;
}

static int node_constant(const so_egraph *eg, int32_t op, const int32_t *kids, int32_t n_in)
{
    if (op == SO_EG_PROJ) return eg->cls[kids[0]].constant;
    unsigned fl = so_ops[op].flags;
    if (op == SO_OP_WEIGHT) return 1;
    if (fl & (SO_F_SOURCE | SO_F_OPAQUE)) return 0;
    if (n_in == 0) return (fl & SO_F_CONST) != 0;
    for (int32_t k = 0; k < n_in; k++)
        if (!eg->cls[kids[k]].constant) return 0;
    return 1;
}

int32_t so_eg_add(so_egraph *eg, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in,
                  const so_shape *out, int32_t n_out, int32_t orig, int32_t app, const char *name, int *added)
{
    if (added) *added = 0;
    int32_t ck[SO_MAX_IN + 8];
    for (int32_t k = 0; k < n_in; k++) ck[k] = so_eg_find(eg, kids[k]);
    uint64_t h = node_hash(eg, op, attr, ref, ck, n_in);
    int32_t m = lookup(eg, h, op, attr, ref, ck, n_in, -1);
    if (m >= 0) {
        eg->last_node = m;
        return so_eg_find(eg, eg->nodes[m].cls);
    }
    /* a new class */
    if (eg->n_cls == eg->cap_cls) {
        eg->cap_cls = eg->cap_cls ? 2 * eg->cap_cls : 256;
        eg->cls = so_xrealloc(eg->cls, (size_t)eg->cap_cls * sizeof *eg->cls);
        eg->uf = so_xrealloc(eg->uf, (size_t)eg->cap_cls * sizeof *eg->uf);
        eg->stamp = so_xrealloc(eg->stamp, (size_t)eg->cap_cls * sizeof *eg->stamp);
    }
    int32_t c = eg->n_cls++;
    eg->n_canon++;
    so_eclass *cl = &eg->cls[c];
    memset(cl, 0, sizeof *cl);
    cl->n_out = n_out;
    cl->out = so_xmalloc(((size_t)n_out + 1) * sizeof *cl->out);
    memcpy(cl->out, out, (size_t)n_out * sizeof *out);
    eg->uf[c] = c;
    eg->stamp[c] = 0;
    /* the e-node */
    if (eg->n_nodes == eg->cap_nodes) {
        eg->cap_nodes = eg->cap_nodes ? 2 * eg->cap_nodes : 512;
        eg->nodes = so_xrealloc(eg->nodes, (size_t)eg->cap_nodes * sizeof *eg->nodes);
    }
    while (eg->n_kids + n_in > eg->cap_kids) {
        eg->cap_kids = eg->cap_kids ? 2 * eg->cap_kids : 1024;
        eg->kids = so_xrealloc(eg->kids, (size_t)eg->cap_kids * sizeof *eg->kids);
    }
    int32_t n = eg->n_nodes++;
    eg->n_live++;
    eg->nodes[n] = (so_enode){op, n_in, ref, attr, (int32_t)eg->n_kids, c, orig, app, name, 0};
    if (n_in > 0) memcpy(eg->kids + eg->n_kids, ck, (size_t)n_in * sizeof *ck);
    eg->n_kids += n_in;
    push(&cl->nodes, &cl->n_nodes, &cl->cap_nodes, n);
    for (int32_t k = 0; k < n_in; k++) push(&eg->cls[ck[k]].parents, &eg->cls[ck[k]].n_parents, &eg->cls[ck[k]].cap_parents, n);
    eg->cls[c].constant = (uint8_t)node_constant(eg, op, ck, n_in);
    so_hmap_add_multi(&eg->memo, h, (uint64_t)n);
    eg->last_node = n;
    if (added) *added = 1;
    return c;
}

int32_t so_eg_proj(so_egraph *eg, int32_t tuple, int32_t slot, int32_t app)
{
    tuple = so_eg_find(eg, tuple);
    return so_eg_add(eg, SO_EG_PROJ, NULL, slot, &tuple, 1, &eg->cls[tuple].out[slot], 1, -1, app, NULL, NULL);
}

/* ---------------- reachability (iterative: graphs have 100,000-node chains) ---------------- */

/* stamp[c] = gen + state: gen+1 visiting, gen+2 done and does not reach the target, gen+3 reaches it */
static int reach(so_egraph *eg, int32_t start, int32_t target, int32_t gen)
{
    target = so_eg_find(eg, target);
    start = so_eg_find(eg, start);
    if (start == target) return 1;
    int32_t *stk = NULL, n = 0, cap = 0;
    push(&stk, &n, &cap, start);
    while (n > 0) {
        int32_t c = stk[n - 1];
        if (eg->stamp[c] >= gen + 2) {
            n--;
            continue;
        }
        if (eg->stamp[c] == gen + 1) { /* children done: decide */
            int yes = 0;
            const so_eclass *cl = &eg->cls[c];
            for (int32_t i = 0; i < cl->n_nodes && !yes; i++) {
                const so_enode *e = &eg->nodes[cl->nodes[i]];
                for (int32_t k = 0; k < e->n_in && !yes; k++) {
                    int32_t d = so_eg_find(eg, eg->kids[e->in + k]);
                    yes = d == target || eg->stamp[d] == gen + 3;
                }
            }
            eg->stamp[c] = gen + (yes ? 3 : 2);
            n--;
            continue;
        }
        eg->stamp[c] = gen + 1;
        const so_eclass *cl = &eg->cls[c];
        for (int32_t i = 0; i < cl->n_nodes; i++) {
            const so_enode *e = &eg->nodes[cl->nodes[i]];
            for (int32_t k = 0; k < e->n_in; k++) {
                int32_t d = so_eg_find(eg, eg->kids[e->in + k]);
                if (d != target && eg->stamp[d] < gen + 1) push(&stk, &n, &cap, d);
            }
        }
    }
    free(stk);
    return eg->stamp[start] == gen + 3;
}

static int32_t next_gen(so_egraph *eg)
{
    if (eg->stamp_gen > 0x7fffff00) { /* wrap: clear */
        memset(eg->stamp, 0, (size_t)eg->n_cls * sizeof *eg->stamp);
        eg->stamp_gen = 0;
    }
    eg->stamp_gen += 4;
    return eg->stamp_gen;
}

int so_eg_reaches(so_egraph *eg, int32_t from, int32_t to) { return reach(eg, from, to, next_gen(eg)); }

static void drop_node(so_egraph *eg, int32_t n)
{
    so_enode *e = &eg->nodes[n];
    if (e->dead) return;
    e->dead = 1;
    eg->n_live--;
    so_eclass *cl = &eg->cls[so_eg_find(eg, e->cls)];
    for (int32_t i = 0; i < cl->n_nodes; i++)
        if (cl->nodes[i] == n) {
            cl->nodes[i] = cl->nodes[--cl->n_nodes];
            break;
        }
}

int32_t so_eg_merge(so_egraph *eg, int32_t a, int32_t b)
{
    a = so_eg_find(eg, a);
    b = so_eg_find(eg, b);
    if (a == b) return a;
    so_eclass *ca = &eg->cls[a], *cb = &eg->cls[b];
    if (ca->n_out != cb->n_out) return -1;
    for (int32_t s = 0; s < ca->n_out; s++)
        if (!so_shape_eq(&ca->out[s], &cb->out[s])) return -1;
    if (b < a) { /* the older class is the root: deterministic */
        int32_t t = a;
        a = b;
        b = t;
        ca = &eg->cls[a];
        cb = &eg->cls[b];
    }
    eg->uf[b] = a;
    for (int32_t i = 0; i < cb->n_nodes; i++) push(&ca->nodes, &ca->n_nodes, &ca->cap_nodes, cb->nodes[i]);
    for (int32_t i = 0; i < cb->n_parents; i++) push(&ca->parents, &ca->n_parents, &ca->cap_parents, cb->parents[i]);
    ca->constant |= cb->constant;
    free(cb->nodes);
    free(cb->parents);
    cb->nodes = cb->parents = NULL;
    cb->n_nodes = cb->n_parents = cb->cap_nodes = cb->cap_parents = 0;
    eg->n_canon--;
    eg->merges++;
    return a;
}

static void relist(so_egraph *eg);
static void drop_cycles(so_egraph *eg);

int64_t so_eg_rebuild(so_egraph *eg)
{
    int64_t total = 0, changed;
    do {
        changed = 0;
        so_hmap_free(&eg->memo);
        for (int32_t n = 0; n < eg->n_nodes; n++) {
            so_enode *e = &eg->nodes[n];
            if (e->dead) continue;
            int32_t *k = eg->kids + e->in;
            for (int32_t j = 0; j < e->n_in; j++) k[j] = so_eg_find(eg, k[j]);
            e->cls = so_eg_find(eg, e->cls);
            uint64_t h = node_hash(eg, e->op, e->attr, e->ref, k, e->n_in);
            int32_t m = lookup(eg, h, e->op, e->attr, e->ref, k, e->n_in, n);
            if (m >= 0) {
                if (so_eg_find(eg, eg->nodes[m].cls) != e->cls) {
                    so_eg_merge(eg, eg->nodes[m].cls, e->cls);
                    changed++;
                }
                if (!eg->nodes[m].dead && !eg->nodes[n].dead) {
                    drop_node(eg, n); /* a duplicate of m */
                    continue;
                }
                if (eg->nodes[n].dead) continue;
            }
            so_hmap_add_multi(&eg->memo, h, (uint64_t)n);
        }
        total += changed;
    } while (changed);
    relist(eg);
    drop_cycles(eg);
    relist(eg);
    int32_t nt;
    int32_t *topo = so_eg_topo(eg, &nt);
    for (int32_t i = 0; i < nt; i++) {
        so_eclass *cl = &eg->cls[topo[i]];
        cl->constant = 0;
        for (int32_t j = 0; j < cl->n_nodes && !cl->constant; j++) {
            const so_enode *e = &eg->nodes[cl->nodes[j]];
            cl->constant = (uint8_t)node_constant(eg, e->op, eg->kids + e->in, e->n_in);
        }
    }
    free(topo);
    return total;
}

/* Class lists (nodes, parents) from scratch, children canonical. */
static void relist(so_egraph *eg)
{
    for (int32_t c = 0; c < eg->n_cls; c++) eg->cls[c].n_nodes = eg->cls[c].n_parents = 0;
    for (int32_t n = 0; n < eg->n_nodes; n++) {
        so_enode *e = &eg->nodes[n];
        if (e->dead) continue;
        e->cls = so_eg_find(eg, e->cls);
        so_eclass *cl = &eg->cls[e->cls];
        push(&cl->nodes, &cl->n_nodes, &cl->cap_nodes, n);
        for (int32_t j = 0; j < e->n_in; j++) {
            so_eclass *kc = &eg->cls[eg->kids[e->in + j]];
            push(&kc->parents, &kc->n_parents, &kc->cap_parents, n);
        }
    }
}

static void kill(so_egraph *eg, int32_t n)
{
    eg->nodes[n].dead = 1;
    eg->n_live--;
    eg->dropped_cyclic++;
}

/* Cycle filtering after merges (Tensat's, done once per rebuild): a depth-first walk over the
   classes; an e-node whose child class is on the walk's path closes a cycle. On that cycle, the
   newest e-node (highest id) the walk took in a class that has other e-nodes is dropped, so that
   every class keeps an e-node and the older derivations stay: a merge of x with t(t(x)) keeps x
   and drops t(t(x)); after merging x0.W and x1.W into split(concat(x0,x1).W), a later rule's
   concat(x0.W, x1.W) in the merged class is dropped, not the merge (which, dropped, the next
   iteration made again, and the cycle again). Deterministic: ids follow the order of additions. Only a cycle through classes of one e-node each
   (none arises from sound merges of an acyclic graph) loses the e-node that closed it; e-nodes
   left with an empty child class are then dropped too. */
static void drop_cycles(so_egraph *eg)
{
    typedef struct frame {
        int32_t c, i, k;
    } frame;
    uint8_t *color = so_xcalloc((size_t)eg->n_cls + 1, 1); /* 0 new, 1 on the path, 2 done */
    int32_t *at = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *at); /* frame of a class on the path */
    int32_t *live = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *live);
    for (int32_t c = 0; c < eg->n_cls; c++) live[c] = eg->cls[c].n_nodes;
    frame *stk = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *stk);
    for (int32_t c0 = 0; c0 < eg->n_cls; c0++) {
        if (eg->uf[c0] != c0 || color[c0]) continue;
        int32_t top = 0;
        stk[0] = (frame){c0, 0, 0};
        color[c0] = 1;
        at[c0] = 0;
        while (top >= 0) {
            frame *f = &stk[top];
            const so_eclass *cl = &eg->cls[f->c];
            if (f->i >= cl->n_nodes) { /* class done */
                color[f->c] = 2;
                top--;
                continue;
            }
            int32_t n = cl->nodes[f->i];
            const so_enode *e = &eg->nodes[n];
            if (e->dead || f->k >= e->n_in) {
                f->i++, f->k = 0;
                continue;
            }
            int32_t d = eg->kids[e->in + f->k++];
            if (color[d] == 2) continue;
            if (color[d] == 0) {
                color[d] = 1;
                at[d] = ++top;
                stk[top] = (frame){d, 0, 0};
                continue;
            }
            /* d is on the path: the path from d to here is a cycle. Drop the e-node the walk took in
               one of its classes that has others (a rule's e-node first, then an original one) */
            int32_t pick = -1;
            for (int32_t q = top; q >= at[d]; q--) {
                const frame *fq = &stk[q];
                if (live[fq->c] < 2) continue;
                if (pick < 0 || eg->cls[fq->c].nodes[fq->i] > eg->cls[stk[pick].c].nodes[stk[pick].i]) pick = q;
            }
            if (pick >= 0) {
                kill(eg, eg->cls[stk[pick].c].nodes[stk[pick].i]);
                live[stk[pick].c]--;
                for (int32_t q = pick + 1; q <= top; q++) color[stk[q].c] = 0; /* walked again later */
                top = pick;
                stk[top].i++, stk[top].k = 0;
            } else {
                kill(eg, n);
                live[f->c]--;
                f->i++, f->k = 0;
            }
        }
    }
    free(stk);
    free(at);
    free(color);
    /* e-nodes whose child class was emptied */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int32_t n = 0; n < eg->n_nodes; n++) {
            so_enode *e = &eg->nodes[n];
            if (e->dead) continue;
            for (int32_t k = 0; k < e->n_in; k++)
                if (live[eg->kids[e->in + k]] == 0) {
                    kill(eg, n);
                    live[e->cls]--;
                    changed = 1;
                    break;
                }
        }
    }
    free(live);
}

int32_t *so_eg_topo(so_egraph *eg, int32_t *n_out)
{
    int32_t *pend = so_xcalloc((size_t)eg->n_cls + 1, sizeof *pend);
    int32_t *out = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *out), n = 0, head = 0;
    for (int32_t c = 0; c < eg->n_cls; c++) {
        if (eg->uf[c] != c) continue;
        const so_eclass *cl = &eg->cls[c];
        for (int32_t i = 0; i < cl->n_nodes; i++) pend[c] += eg->nodes[cl->nodes[i]].n_in;
        if (!pend[c]) out[n++] = c;
    }
    while (head < n) {
        const so_eclass *cl = &eg->cls[out[head++]];
        for (int32_t i = 0; i < cl->n_parents; i++) {
            const so_enode *p = &eg->nodes[cl->parents[i]];
            if (p->dead) continue;
            int32_t pc = so_eg_find(eg, p->cls);
            if (--pend[pc] == 0) out[n++] = pc;
        }
    }
    free(pend);
    *n_out = n;
    return out;
}
