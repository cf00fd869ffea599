/* match.c - pattern matching of rule source patterns in a graph, and rewriting a match into a new graph. */
#include "match.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../src/shape.h"

/* ---------------- index ---------------- */

void so_match_index_init(so_match_index *ix, const so_graph *g)
{
    memset(ix, 0, sizeof *ix);
    ix->g = g;
    int32_t n = g->n_nodes;
    ix->op_start = so_xcalloc(SO_OP_COUNT + 1, sizeof *ix->op_start);
    ix->op_nodes = so_xmalloc(((size_t)n + 1) * sizeof *ix->op_nodes);
    for (int32_t i = 0; i < n; i++) ix->op_start[g->nodes[i].op + 1]++;
    for (int o = 0; o < SO_OP_COUNT; o++) ix->op_start[o + 1] += ix->op_start[o];
    int32_t *fill = so_xcalloc(SO_OP_COUNT + 1, sizeof *fill);
    for (int32_t i = 0; i < n; i++) {
        int o = g->nodes[i].op;
        ix->op_nodes[ix->op_start[o] + fill[o]++] = i;
    }
    free(fill);
    ix->use_start = so_xcalloc((size_t)n + 2, sizeof *ix->use_start);
    ix->n_uses = so_xcalloc((size_t)n + 1, sizeof *ix->n_uses);
    ix->is_output = so_xcalloc((size_t)n + 1, 1);
    int32_t tot = 0;
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            ix->use_start[g->nodes[i].in[k].node + 1]++;
            tot++;
        }
    for (int32_t i = 0; i < n; i++) ix->use_start[i + 1] += ix->use_start[i];
    ix->use_node = so_xmalloc(((size_t)tot + 1) * sizeof *ix->use_node);
    ix->use_k = so_xmalloc(((size_t)tot + 1) * sizeof *ix->use_k);
    int32_t *uf = so_xcalloc((size_t)n + 1, sizeof *uf);
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int32_t p = g->nodes[i].in[k].node;
            int32_t at = ix->use_start[p] + uf[p]++;
            ix->use_node[at] = i;
            ix->use_k[at] = k;
            ix->n_uses[p]++;
        }
    free(uf);
    for (int32_t o = 0; o < g->model->n_outputs; o++) {
        ix->is_output[g->outputs[o].node] = 1;
        ix->n_uses[g->outputs[o].node]++;
    }
}

void so_match_index_free(so_match_index *ix)
{
    free(ix->op_start);
    free(ix->op_nodes);
    free(ix->use_start);
    free(ix->use_node);
    free(ix->use_k);
    free(ix->n_uses);
    free(ix->is_output);
    memset(ix, 0, sizeof *ix);
}

/* ---------------- matching ---------------- */

#define MAX_PENDING 32

typedef struct pending {
    so_dimx d;
    int64_t val;
} pending;

typedef struct mstate {
    const so_match_index *ix;
    const so_graph *g;
    const so_rule *r;
    so_match m;
    int32_t mapped[SO_RULE_MAX_NODES]; /* 1 if m.node[p] is set */
    uint8_t var_bound[SO_RULE_MAX_INPUTS];
    uint8_t sym_bound[SO_RULE_MAX_SYMS];
    pending pend[MAX_PENDING];
    int n_pend;
    int order[SO_RULE_MAX_NODES], n_order;
    so_match_fn fn;
    void *ud;
    int count, stop;
    uint32_t tries;                    /* candidate nodes tried (deadline checks) */
} mstate;

/* Counts a candidate node in *ix->work and stops at ix->work_limit (deterministic); checks
   ix->deadline every DEADLINE_EVERY candidate nodes: the enumeration of a rule whose pattern has
   unconnected parts (two nodes sharing only a weight) is quadratic in the graph. */
#define DEADLINE_EVERY 4096u

static int past_deadline(mstate *s)
{
    const so_match_index *ix = s->ix;
    if (ix->work && ++*ix->work >= ix->work_limit && ix->work_limit > 0) {
        s->stop = 1;
        if (ix->expired) *ix->expired = 1;
        return 1;
    }
    if (ix->deadline <= 0 || (++s->tries % DEADLINE_EVERY) != 0) return 0;
    if (so_cpu_now() < ix->deadline) return 0;
    s->stop = 1;
    if (ix->expired) *ix->expired = 1;
    return 1;
}

/* 1 if an earlier enumeration was cut short by the deadline or the work limit */
static int cut_short(const so_match_index *ix)
{
    if (!ix->expired || !*ix->expired) return 0;
    return ix->deadline > 0 || ix->work_limit > 0;
}

/* Binds the symbols of d so that d == val, or defers when several symbols are unbound.
   Returns 1 if consistent so far. */
static int bind_dim(mstate *s, const so_dimx *d, int64_t val)
{
    int64_t rest = val - d->c;
    int unb = -1, coef = 0;
    for (int j = 0; j < d->n_sym; j++) {
        int y = d->sym[j];
        if (s->sym_bound[y]) {
            rest -= s->m.sym[y];
        } else if (unb < 0 || unb == y) {
            unb = y;
            coef++;
        } else {
            if (s->n_pend >= MAX_PENDING) return 0;
            s->pend[s->n_pend].d = *d;
            s->pend[s->n_pend].val = val;
            s->n_pend++;
            return 1;
        }
    }
    if (unb < 0) return rest == 0;
    if (rest < coef || rest % coef) return 0; /* every symbol is >= 1 */
    s->m.sym[unb] = rest / coef;
    s->sym_bound[unb] = 1;
    return 1;
}

/* Resolves deferred multi-symbol dims; 1 if all consistent and every symbol bound. */
static int resolve_pending(mstate *s)
{
    while (s->n_pend > 0) {
        pending list[MAX_PENDING];
        int n = s->n_pend;
        memcpy(list, s->pend, (size_t)n * sizeof *list);
        s->n_pend = 0;
        for (int i = 0; i < n; i++)
            if (!bind_dim(s, &list[i].d, list[i].val)) return 0;
        if (s->n_pend == n) return 0; /* no progress: ambiguous */
    }
    for (int y = 0; y < s->r->n_syms; y++)
        if (!s->sym_bound[y]) return 0;
    return 1;
}

static int bind_var(mstate *s, int v, so_edge e)
{
    if (s->var_bound[v]) return s->m.var[v].node == e.node && s->m.var[v].slot == e.slot;
    const so_rinput *ri = &s->r->inputs[v];
    const so_shape *sh = &s->g->nodes[e.node].out[e.slot];
    if (sh->rank != ri->rank || sh->dtype != SO_F32) return 0;
    for (int d = 0; d < ri->rank; d++)
        if (!bind_dim(s, &ri->dim[d], sh->dim[d])) return 0;
    s->m.var[v] = e;
    s->var_bound[v] = 1;
    return 1;
}

static int is_mapped_node(const mstate *s, int32_t gnode)
{
    for (int p = 0; p < s->r->src.n_nodes; p++)
        if (s->mapped[p] && s->m.node[p] == gnode) return 1;
    return 0;
}

/* Is (p, slot) a mapped output of the rule's source pattern? */
static int is_src_output(const so_rule *r, int p, int slot)
{
    for (int k = 0; k < r->n_outputs; k++)
        if (r->src_out[k].node == p && r->src_out[k].slot == slot) return 1;
    return 0;
}

static int attr_match(mstate *s, const so_rnode *pn, const so_node *gn)
{
    if (pn->n_dx == 0 && memcmp(&pn->attr, gn->attr, sizeof pn->attr) == 0) return 1;
    so_attr have = so_attr_used(pn->op, gn->attr);
    so_attr want = so_attr_used(pn->op, &pn->attr);
    if (want.group == SO_RULE_GROUP_DW) { /* depthwise: group == the kernel's W.dim0, W.dim1 == 1 */
        if (gn->n_in < 2) return 0;
        const so_shape *w = &s->g->nodes[gn->in[1].node].out[gn->in[1].slot];
        if (w->rank != 4 || w->dim[1] != 1 || have.group != so_rule_group_of(&want, w)) return 0;
        want.group = have.group;
    }
    if (pn->n_dx > 0) {
        if (gn->attr->n_ints != pn->n_dx) return 0;
        want.n_ints = pn->n_dx;
        for (int j = 0; j < pn->n_dx; j++) {
            if (!bind_dim(s, &pn->dx[j], gn->attr->ints[j])) return 0;
            want.ints[j] = gn->attr->ints[j];
        }
    }
    return memcmp(&want, &have, sizeof want) == 0;
}

/* Final checks once every pattern node is mapped. */
static int final_check(mstate *s)
{
    const so_rule *r = s->r;
    const so_match_index *ix = s->ix;
    if (!resolve_pending(s)) return 0;
    for (int i = 0; i < r->n_pre; i++) {
        int64_t v = s->m.sym[r->pre[i].sym];
        if (r->pre[i].kind == SO_PRE_GE && v < r->pre[i].value) return 0;
        if (r->pre[i].kind == SO_PRE_DIV && (r->pre[i].value <= 0 || v % r->pre[i].value)) return 0;
    }
    for (int v = 0; v < r->n_inputs; v++) {
        if (!s->var_bound[v]) return 0;
        if (is_mapped_node(s, s->m.var[v].node)) return 0;
    }
    /* intermediate outputs must not escape the match */
    for (int p = 0; p < r->src.n_nodes; p++) {
        int32_t gi = s->m.node[p];
        if (ix->share_reorders && (r->src.nodes[p].op == SO_OP_NCHWC_IN || r->src.nodes[p].op == SO_OP_NCHWC_OUT)) continue;
        for (int slot = 0; slot < r->src.nodes[p].n_out; slot++) {
            if (is_src_output(r, p, slot)) continue;
            for (int32_t u = ix->use_start[gi]; u < ix->use_start[gi + 1]; u++) {
                int32_t un = ix->use_node[u];
                if (s->g->nodes[un].in[ix->use_k[u]].slot != slot) continue;
                if (!is_mapped_node(s, un)) return 0;
            }
            if (ix->is_output[gi])
                for (int32_t o = 0; o < s->g->model->n_outputs; o++)
                    if (s->g->outputs[o].node == gi && s->g->outputs[o].slot == slot) return 0;
        }
    }
    return 1;
}

static void step(mstate *s, int oi);

/* Tries graph node c for pattern node p; recurses on success. */
static void try_node(mstate *s, int oi, int p, int32_t c)
{
    const so_rnode *pn = &s->r->src.nodes[p];
    const so_node *gn = &s->g->nodes[c];
    if (s->stop || past_deadline(s)) return;
    if (gn->op != pn->op || gn->n_in != pn->n_in || gn->n_out != pn->n_out) return;
    if (is_mapped_node(s, c)) return;
    /* save binding state */
    so_match saved_m = s->m;
    uint8_t vb[SO_RULE_MAX_INPUTS], sb[SO_RULE_MAX_SYMS];
    memcpy(vb, s->var_bound, sizeof vb);
    memcpy(sb, s->sym_bound, sizeof sb);
    int np = s->n_pend;
    int ok = attr_match(s, pn, gn);
    /* consumers already mapped must read this node at the right slot */
    for (int q = 0; ok && q < s->r->src.n_nodes; q++) {
        if (!s->mapped[q]) continue;
        const so_rnode *qn = &s->r->src.nodes[q];
        for (int k = 0; k < qn->n_in; k++)
            if (qn->in[k].node == p) {
                so_edge e = s->g->nodes[s->m.node[q]].in[k];
                if (e.node != c || e.slot != qn->in[k].slot) ok = 0;
            }
    }
    for (int k = 0; ok && k < pn->n_in; k++) {
        so_rref ref = pn->in[k];
        so_edge e = gn->in[k];
        if (ref.node < 0) {
            ok = bind_var(s, -(ref.node + 1), e);
        } else if (s->mapped[ref.node]) {
            ok = e.node == s->m.node[ref.node] && e.slot == ref.slot;
        } else {
            ok = e.slot == ref.slot;
        }
    }
    if (ok) {
        s->m.node[p] = c;
        s->mapped[p] = 1;
        step(s, oi + 1);
        s->mapped[p] = 0;
    }
    s->m = saved_m;
    memcpy(s->var_bound, vb, sizeof vb);
    memcpy(s->sym_bound, sb, sizeof sb);
    s->n_pend = np;
}

static void step(mstate *s, int oi)
{
    if (s->stop) return;
    if (oi == s->n_order) {
        /* final_check may bind pending symbols: keep a copy */
        so_match saved_m = s->m;
        uint8_t sb[SO_RULE_MAX_SYMS];
        memcpy(sb, s->sym_bound, sizeof sb);
        int np = s->n_pend;
        if (final_check(s)) {
            s->count++;
            if (s->fn && s->fn(&s->m, s->ud)) s->stop = 1;
        }
        s->m = saved_m;
        memcpy(s->sym_bound, sb, sizeof sb);
        s->n_pend = np;
        return;
    }
    int p = s->order[oi];
    const so_rnode *pn = &s->r->src.nodes[p];
    const so_graph *g = s->g;
    const so_match_index *ix = s->ix;
    /* 1. a mapped consumer determines the node */
    for (int q = 0; q < s->r->src.n_nodes; q++) {
        if (!s->mapped[q]) continue;
        const so_rnode *qn = &s->r->src.nodes[q];
        for (int k = 0; k < qn->n_in; k++)
            if (qn->in[k].node == p) {
                so_edge e = g->nodes[s->m.node[q]].in[k];
                if (e.slot == qn->in[k].slot) try_node(s, oi, p, e.node);
                return;
            }
    }
    /* 2. an input already bound: candidates are its users at that position */
    for (int k = 0; k < pn->n_in; k++) {
        so_rref ref = pn->in[k];
        so_edge e;
        if (ref.node < 0 && s->var_bound[-(ref.node + 1)]) e = s->m.var[-(ref.node + 1)];
        else if (ref.node >= 0 && s->mapped[ref.node]) e = (so_edge){s->m.node[ref.node], ref.slot};
        else continue;
        for (int32_t u = ix->use_start[e.node]; u < ix->use_start[e.node + 1] && !s->stop; u++) {
            if (ix->use_k[u] != k) continue;
            int32_t un = ix->use_node[u];
            if (g->nodes[un].in[k].slot != e.slot) continue;
            try_node(s, oi, p, un);
        }
        return;
    }
    /* 3. every node of the op */
    for (int32_t j = ix->op_start[pn->op]; j < ix->op_start[pn->op + 1] && !s->stop; j++)
        try_node(s, oi, p, ix->op_nodes[j]);
}

static void init_state(mstate *s, const so_match_index *ix, const so_rule *r, int32_t rule_index, so_match_fn fn, void *ud)
{
    memset(s, 0, sizeof *s);
    s->ix = ix;
    s->g = ix->g;
    s->r = r;
    s->m.rule = r;
    s->m.rule_index = rule_index;
    s->fn = fn;
    s->ud = ud;
    for (int p = 0; p < SO_RULE_MAX_NODES; p++) s->m.node[p] = -1;
}

int so_match_rule(const so_match_index *ix, const so_rule *r, int32_t rule_index, so_match_fn fn, void *ud)
{
    if (r->src.n_nodes <= 0) return 0;
    if (cut_short(ix) || (ix->deadline > 0 && so_cpu_now() >= ix->deadline)) {
        if (ix->expired) *ix->expired = 1;
        return 0;
    }
    mstate *s = so_xmalloc(sizeof *s);
    init_state(s, ix, r, rule_index, fn, ud);
    for (int p = r->src.n_nodes - 1; p >= 0; p--) s->order[s->n_order++] = p;
    step(s, 0);
    int c = s->count;
    free(s);
    return c;
}

/* Matches with pattern node a on graph node anchor; sets *stop when fn asked to stop. */
static int match_at(mstate *s, const so_match_index *ix, const so_rule *r, int32_t rule_index, int a, int32_t anchor,
                    so_match_fn fn, void *ud, int *stop)
{
    const so_rnode *pn = &r->src.nodes[a];
    const so_graph *g = ix->g;
    const so_node *gn = &g->nodes[anchor];
    if (pn->op != gn->op || pn->n_in != gn->n_in || pn->n_out != gn->n_out) return 0;
    for (int q = 0; q < gn->n_out; q++) /* the rules are about float32 values (their variables are float32 too: bind_var) */
        if (gn->out[q].dtype != SO_F32) return 0;
    if (cut_short(ix)) {
        *stop = 1;
        return 0;
    }
    /* cheap necessary conditions on the neighbours before the search proper: inputs that are
       pattern nodes have their operator and slot, consumers in the pattern exist among the
       anchor's users */
    for (int k = 0; k < pn->n_in; k++) {
        so_rref ref = pn->in[k];
        if (ref.node < 0) continue;
        so_edge e = gn->in[k];
        if (e.node < 0 || e.slot != ref.slot || g->nodes[e.node].op != r->src.nodes[ref.node].op) return 0;
    }
    for (int q = 0; q < r->src.n_nodes; q++) {
        const so_rnode *qn = &r->src.nodes[q];
        for (int k = 0; k < qn->n_in; k++) {
            if (qn->in[k].node != a) continue;
            int found = 0;
            for (int32_t u = ix->use_start[anchor]; u < ix->use_start[anchor + 1] && !found; u++)
                if (ix->use_k[u] == k && g->nodes[ix->use_node[u]].op == qn->op &&
                    g->nodes[ix->use_node[u]].in[k].slot == qn->in[k].slot)
                    found = 1;
            if (!found) return 0;
        }
    }
    init_state(s, ix, r, rule_index, fn, ud);
    s->order[s->n_order++] = a;
    for (int p = r->src.n_nodes - 1; p >= 0; p--)
        if (p != a) s->order[s->n_order++] = p;
    /* step() would pick candidates for order[0] by op; restrict to the anchor */
    try_node(s, 0, a, anchor);
    if (s->stop) *stop = 1;
    return s->count;
}

int so_match_rule_at(const so_match_index *ix, const so_rule *r, int32_t rule_index, int32_t anchor,
                     so_match_fn fn, void *ud)
{
    if (r->src.n_nodes <= 0 || anchor < 0 || anchor >= ix->g->n_nodes) return 0;
    mstate s;
    int total = 0, stop = 0;
    for (int a = r->src.n_nodes - 1; a >= 0 && !stop; a--) total += match_at(&s, ix, r, rule_index, a, anchor, fn, ud, &stop);
    return total;
}

int so_match_rule_at_node(const so_match_index *ix, const so_rule *r, int32_t rule_index, int a, int32_t anchor,
                          so_match_fn fn, void *ud)
{
    if (a < 0 || a >= r->src.n_nodes || anchor < 0 || anchor >= ix->g->n_nodes) return 0;
    mstate s;
    int stop = 0;
    return match_at(&s, ix, r, rule_index, a, anchor, fn, ud, &stop);
}

uint64_t so_match_node_key(so_op op, int n_in, int n_out, const so_attr *a, int ignore_ints)
{
    struct {
        int32_t op, n_in, n_out, pad;
        so_attr at;
    } k;
    memset(&k, 0, sizeof k);
    k.op = op;
    k.n_in = n_in;
    k.n_out = n_out;
    k.at = so_attr_used(op, a);
    k.at.group = 0; /* a rule's group=dw (SO_RULE_GROUP_DW) matches a concrete group: attr_match decides */
    if (ignore_ints) {
        k.at.n_ints = 0;
        memset(k.at.ints, 0, sizeof k.at.ints);
    }
    return XXH3_64bits(&k, sizeof k);
}

/* ---------------- rewriting ---------------- */

static so_edge dst_edge(const so_match *m, const int32_t *dst_node, so_rref ref)
{
    if (ref.node < 0) return m->var[-(ref.node + 1)];
    return (so_edge){dst_node[ref.node], ref.slot};
}

int so_rewrite_node_delta(const so_graph *g, const so_match *m)
{
    (void)g;
    const so_rule *r = m->rule;
    int add = 0;
    for (int d = 0; d < r->dst.n_nodes; d++)
        if (!(so_ops[r->dst.nodes[d].op].flags & SO_F_CONST)) add++;
    return add - r->src.n_nodes;
}

so_status so_rewrite_preview(const so_graph *g, const so_match *m, so_fold_ctx *fc, int64_t fold_limit,
                             so_graph *scratch, int32_t *first, so_edge *outs)
{
    const so_rule *r = m->rule;
    so_arena_free(&scratch->arena);
    scratch->n_nodes = 0;
    so_edge var[SO_RULE_MAX_INPUTS];
    char desc[160];
    for (int v = 0; v < r->n_inputs; v++) {
        so_edge e = m->var[v];
        const so_node *src = &g->nodes[e.node];
        int32_t n;
        if (src->op == SO_OP_WEIGHT) {
            n = so_graph_add(scratch, SO_OP_WEIGHT, NULL, 0, 1, NULL, src->ref, NULL);
        } else {
            n = so_graph_add(scratch, SO_OP_INPUT, NULL, 0, 1, NULL, -1, NULL);
        }
        scratch->nodes[n].out[0] = src->out[e.slot];
        var[v] = (so_edge){n, 0};
    }
    *first = scratch->n_nodes;
    so_edge dmap[SO_RULE_MAX_NODES][SO_MAX_RANK + 1];
    for (int d = 0; d < r->dst.n_nodes; d++) {
        const so_rnode *dn = &r->dst.nodes[d];
        so_edge in[SO_RULE_MAX_IN];
        for (int k = 0; k < dn->n_in; k++) {
            so_rref ref = dn->in[k];
            in[k] = ref.node < 0 ? var[-(ref.node + 1)] : dmap[ref.node][ref.slot];
        }
        so_attr a = dn->attr;
        if (dn->n_dx > 0) {
            a.n_ints = dn->n_dx;
            for (int j = 0; j < dn->n_dx; j++) a.ints[j] = so_dimx_eval(&dn->dx[j], m->sym);
        }
        if (dn->n_in > 1) a.group = so_rule_group_of(&a, &scratch->nodes[in[1].node].out[in[1].slot]);
        int32_t n = so_graph_add(scratch, dn->op, in, dn->n_in, dn->n_out, so_model_attr(g->model, &a), -1, NULL);
        if (so_graph_infer(scratch, n) != SO_OK)
            return so_errorf("rule %d: target node %d does not type-check: %s", (int)r->id, d, so_error());
        for (int s = 0; s < dn->n_out && s <= SO_MAX_RANK; s++) dmap[d][s] = (so_edge){n, s};
        int64_t tot = 0;
        for (int s = 0; s < dn->n_out; s++) tot += so_shape_numel(&scratch->nodes[n].out[s]);
        const so_node *sn = &scratch->nodes[n];
        int weight_only = !(so_ops[sn->op].flags & (SO_F_SOURCE | SO_F_OPAQUE)) && (sn->n_in > 0 || (so_ops[sn->op].flags & SO_F_CONST));
        for (int k = 0; k < sn->n_in && weight_only; k++)
            if (scratch->nodes[sn->in[k].node].op != SO_OP_WEIGHT) weight_only = 0;
        if (weight_only) {
            /* the rewrite folds it; too big to fold for every preview: a stand-in weight of the
               same shape (zeros) so that its consumers are costed with the kernel they will get */
            int32_t wids[SO_MAX_IN];
            if (tot <= fold_limit && so_fold_can(fc, scratch, n)) {
                if (so_fold_node(fc, scratch, n, wids) != SO_OK) return SO_ERR;
            } else {
                for (int s = 0; s < dn->n_out && s < SO_MAX_IN; s++) wids[s] = so_fold_standin(fc, &scratch->nodes[n].out[s]);
            }
            int n_out = dn->n_out;
            scratch->n_nodes--; /* drop the folded node, add its weights */
            for (int s = 0; s < n_out && s <= SO_MAX_RANK; s++) {
                int32_t w = so_graph_add(scratch, SO_OP_WEIGHT, NULL, 0, 1, NULL, wids[s], NULL);
                scratch->nodes[w].out[0] = g->model->weights[wids[s]].shape;
                dmap[d][s] = (so_edge){w, 0};
            }
        }
    }
    for (int k = 0; k < r->n_outputs; k++) {
        so_edge from = {m->node[r->src_out[k].node], r->src_out[k].slot};
        so_rref ref = r->dst_out[k];
        so_edge to = ref.node < 0 ? var[-(ref.node + 1)] : dmap[ref.node][ref.slot];
        if (!so_shape_eq(&g->nodes[from.node].out[from.slot], &scratch->nodes[to.node].out[to.slot]))
            return so_errorf("rule %d: output %d changes shape at %s", (int)r->id, k, so_node_desc(g, from.node, desc, sizeof desc));
        if (outs) outs[k] = to;
    }
    return SO_OK;
}

so_status so_rewrite(const so_graph *g, const so_match *m, so_fold_ctx *fc, so_graph **out)
{
    return so_rewrite_track(g, m, fc, out, NULL);
}

so_status so_rewrite_track(const so_graph *g, const so_match *m, so_fold_ctx *fc, so_graph **out, int32_t **origin)
{
    const so_rule *r = m->rule;
    so_graph *ng = so_graph_clone(g);
    int32_t *org = NULL;
    if (origin) *origin = NULL;
    int32_t dst_node[SO_RULE_MAX_NODES];
    so_status st = SO_OK;
    char desc[160];
    int32_t base = ng->n_nodes;
    for (int d = 0; d < r->dst.n_nodes; d++) {
        const so_rnode *dn = &r->dst.nodes[d];
        so_edge in[SO_RULE_MAX_IN];
        for (int k = 0; k < dn->n_in; k++) in[k] = dst_edge(m, dst_node, dn->in[k]);
        so_attr a = dn->attr;
        if (dn->n_dx > 0) {
            a.n_ints = dn->n_dx;
            for (int j = 0; j < dn->n_dx; j++) a.ints[j] = so_dimx_eval(&dn->dx[j], m->sym);
        }
        if (dn->n_in > 1) a.group = so_rule_group_of(&a, &ng->nodes[in[1].node].out[in[1].slot]);
        dst_node[d] = so_graph_add(ng, dn->op, in, dn->n_in, dn->n_out, so_model_attr(ng->model, &a), -1, NULL);
        if (so_graph_infer(ng, dst_node[d]) != SO_OK) {
            st = so_errorf("rule %d: target node %d does not type-check: %s", (int)r->id, d, so_error());
            goto fail;
        }
    }
    /* mapped outputs keep their shapes; then redirect their uses */
    for (int k = 0; k < r->n_outputs; k++) {
        so_edge from = {m->node[r->src_out[k].node], r->src_out[k].slot};
        so_edge to = dst_edge(m, dst_node, r->dst_out[k]);
        if (!so_shape_eq(&ng->nodes[from.node].out[from.slot], &ng->nodes[to.node].out[to.slot])) {
            st = so_errorf("rule %d: output %d changes shape at %s", (int)r->id, k, so_node_desc(g, from.node, desc, sizeof desc));
            goto fail;
        }
        for (int32_t i = 0; i < base; i++) {
            so_node *nd = &ng->nodes[i];
            for (int j = 0; j < nd->n_in; j++)
                if (nd->in[j].node == from.node && nd->in[j].slot == from.slot) nd->in[j] = to;
        }
        for (int32_t o = 0; o < ng->model->n_outputs; o++)
            if (ng->outputs[o].node == from.node && ng->outputs[o].slot == from.slot) ng->outputs[o] = to;
    }
    if (origin) {
        org = so_xmalloc(((size_t)ng->n_nodes + 1) * sizeof *org);
        for (int32_t i = 0; i < ng->n_nodes; i++) org[i] = i < base ? i : -1;
    }
    if (so_canonicalize_track(fc, ng, NULL, origin ? &org : NULL) != SO_OK) {
        st = so_errorf("rule %d: %s", (int)r->id, so_error());
        goto fail;
    }
    *out = ng;
    if (origin) *origin = org;
    return SO_OK;
fail:
    free(org);
    so_graph_free(ng);
    return st;
}
