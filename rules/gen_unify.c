/* gen_unify.c - generator shape generalisation: symbolic dimensions unified over a candidate pair, the rule built from it (so_gen_make_rule). */
#include "gen_priv.h"
#include "rule_shape.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- shape generalisation ---------------- */

#define LX_MAX 40 /* b*k + b*l with b = 16 (layout universe) */
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
    int block;      /* layout universe's block (0: none): only then is m*s = e solved for s */
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

/* e * m (each symbol repeated m times). */
static lx lx_mul(unif *U, lx e, int m)
{
    lx r = lx_c((int64_t)e.c * m);
    for (int i = 0; i < e.n; i++)
        for (int k = 0; k < m; k++) {
            if (r.n >= LX_MAX) {
                U->fail = 1;
                return e;
            }
            r.s[r.n++] = e.s[i];
        }
    return r;
}

/* e / m when the constant and every symbol's multiplicity are multiples of m (e sorted); fails
   otherwise. */
static lx lx_divm(unif *U, lx e, int m)
{
    lx_sort(&e);
    lx r = lx_c(e.c / m);
    if (e.c % m) U->fail = 1;
    for (int i = 0; i < e.n && !U->fail;) {
        int j = i;
        while (j < e.n && e.s[j] == e.s[i]) j++;
        if ((j - i) % m) U->fail = 1;
        for (int k = 0; k < (j - i) / m; k++) r.s[r.n++] = e.s[i];
        i = j;
    }
    return r;
}

/* A padded channel count's blocks: ceil(c / m) when e is the constant c (a fixed, padded channel
   count), else e / m as lx_divm. */
static lx lx_ceildiv(unif *U, lx e, int m)
{
    if (e.n == 0 && e.c > 0) return lx_c((e.c + m - 1) / m);
    return lx_divm(U, e, m);
}

static int64_t lx_val(const unif *U, const lx *e)
{
    int64_t v = e->c;
    for (int i = 0; i < e->n; i++) v += U->val[e->s[i]];
    return v;
}

/* one = s + c1 with a single symbol s, other = e + c2: binds s to e + c2 - c1 (a dimension, so a
   constant result must be >= 1; otherwise the unification fails). */
static void bind_one(unif *U, const lx *one, const lx *other)
{
    lx r = *other;
    r.c = other->c - one->c;
    if (r.n == 0 && r.c < 1) {
        U->fail = 1;
        return;
    }
    U->sub[one->s[0]] = r;
    U->has_sub[one->s[0]] = 1;
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
    if (da.n == 1) bind_one(U, &da, &db);
    else if (db.n == 1) bind_one(U, &db, &da);
    else if (U->block > 0 && da.n > 1 && da.s[0] == da.s[da.n - 1] && da.c == 0) { /* m*s = e: s = e/m (block multiples) */
        lx q = lx_divm(U, db, da.n);
        lx one = lx_sym(da.s[0]);
        if (!U->fail) bind_one(U, &one, &q);
    } else if (U->block > 0 && db.n > 1 && db.s[0] == db.s[db.n - 1] && db.c == 0) {
        lx q = lx_divm(U, da, db.n);
        lx one = lx_sym(db.s[0]);
        if (!U->fail) bind_one(U, &one, &q);
    } else U->fail = 1;
}

typedef struct sshp {
    int rank;
    lx d[5];
} sshp;

/* Plane dims of a strided or unpadded window's output: a fresh symbol each (its value the concrete
   size), since a sum of symbols cannot state floor((h + 2p - k) / s) + 1; rules print only their
   inputs' shapes, and rule_shape.c derives these dims again from the attributes. */
static void win_dims(unif *U, const gen_inst *gi, const gen_type *ot, sshp *o)
{
    if (gi->stride <= 1 && !gi->valid) return;
    for (int k = 2; k < 4; k++) o->d[k] = lx_sym(new_sym(U, ot->dim[k]));
}

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
        switch (gi->op) {
        case SO_OP_ADD:
            if (in[0].rank == 1 && in[1].rank == 3) { /* bias add on the last axis (enum.c) */
                unify(U, in[0].d[0], in[1].d[2]);
                *o = in[1];
                break;
            }
            for (int k = 0; k < in[0].rank; k++) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            break;
        case SO_OP_MUL:
            if (in[1].rank) for (int k = 0; k < in[0].rank; k++) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            break;
        case SO_OP_TRANSPOSE:
            o->rank = 2;
            o->d[0] = in[0].d[1];
            o->d[1] = in[0].d[0];
            break;
        case SO_OP_MATMUL: {
            int r = in[0].rank; /* 2, or 3: rank-3 activation @ matrix */
            unify(U, in[0].d[r - 1], in[1].d[0]);
            *o = in[0];
            o->d[r - 1] = in[1].d[1];
            break;
        }
        case SO_OP_CONV: {
            int grp = it[0]->dim[1] / it[1]->dim[1];
            if (grp == 1) {
                unify(U, in[0].d[1], in[1].d[1]);
            } else if (u->group > 1 && grp == u->group) { /* the grouped universe: C = O = group * q, q symbolic */
                unify(U, in[0].d[1], lx_mul(U, resolve(U, in[1].d[1]), u->group));
                unify(U, in[1].d[0], in[0].d[1]);
            } else if (u->dw && it[1]->dim[1] == 1 && grp == it[1]->dim[0]) { /* depthwise: group=dw, channels symbolic */
                unify(U, in[0].d[1], in[1].d[0]);
                unify(U, in[1].d[1], lx_c(1));
            } else {
                unify(U, in[0].d[1], lx_c(it[0]->dim[1]));
                unify(U, in[1].d[1], lx_c(it[1]->dim[1]));
                unify(U, in[1].d[0], lx_c(it[1]->dim[0]));
            }
            unify(U, in[1].d[2], lx_c(it[1]->dim[2]));
            unify(U, in[1].d[3], lx_c(it[1]->dim[3]));
            if (gen_biased(gi)) unify(U, in[2].d[0], in[1].d[0]);
            o->rank = 4;
            o->d[0] = in[0].d[0];
            o->d[1] = in[1].d[0];
            o->d[2] = in[0].d[2];
            o->d[3] = in[0].d[3];
            win_dims(U, gi, &ev->type[base], o);
            break;
        }
        case SO_OP_NCHWC_IN:
            *o = in[0];
            o->rank = 5;
            o->d[1] = lx_ceildiv(U, resolve(U, in[0].d[1]), u->block);
            o->d[4] = lx_c(u->block);
            break;
        case SO_OP_NCHWC_OUT:
            unify(U, in[0].d[4], lx_c(u->block));
            *o = in[0];
            o->rank = 4;
            if (gi->ct.rank == 1) { /* a padded channel count: concrete */
                unify(U, in[0].d[1], lx_c((gi->ct.dim[0] + u->block - 1) / u->block));
                o->d[1] = lx_c(gi->ct.dim[0]);
            } else
                o->d[1] = lx_mul(U, resolve(U, in[0].d[1]), u->block);
            memset(&o->d[4], 0, sizeof o->d[4]);
            break;
        case SO_OP_CONV_NCHWC: {
            lx wc = resolve(U, in[1].d[1]);
            if (u->group > 1) { /* grouped: b * blocks = group * q = O */
                unify(U, lx_mul(U, resolve(U, in[0].d[1]), u->block), lx_mul(U, resolve(U, in[1].d[1]), u->group));
                unify(U, in[1].d[0], lx_mul(U, resolve(U, in[0].d[1]), u->block));
            } else if (u->dw && it[1]->dim[1] == 1) { /* depthwise (group=dw): the kernel's C = b * blocks */
                unify(U, lx_mul(U, resolve(U, in[0].d[1]), u->block), in[1].d[0]);
                unify(U, in[1].d[1], lx_c(1));
            } else if (wc.n == 0 && wc.c % u->block) unify(U, in[0].d[1], lx_c((wc.c + u->block - 1) / u->block)); /* padded (a stem) */
            else unify(U, lx_mul(U, resolve(U, in[0].d[1]), u->block), in[1].d[1]);
            unify(U, in[1].d[2], lx_c(it[1]->dim[2]));
            unify(U, in[1].d[3], lx_c(it[1]->dim[3]));
            unify(U, in[0].d[4], lx_c(u->block));
            if (gen_biased(gi)) unify(U, in[2].d[0], in[1].d[0]);
            *o = in[0];
            o->d[1] = lx_ceildiv(U, resolve(U, in[1].d[0]), u->block);
            win_dims(U, gi, &ev->type[base], o);
            break;
        }
        case SO_OP_ENLARGE:
            unify(U, in[0].d[2], lx_c(it[0]->dim[2]));
            unify(U, in[0].d[3], lx_c(it[0]->dim[3]));
            *o = in[0];
            o->d[2] = lx_c(3);
            o->d[3] = lx_c(3);
            break;
        case SO_OP_RELU: case SO_OP_SIGMOID: case SO_OP_TANH: case SO_OP_AVGPOOL: case SO_OP_MAXPOOL:
        case SO_OP_AVGPOOL_NCHWC: case SO_OP_MAXPOOL_NCHWC:
            *o = in[0];
            win_dims(U, gi, &ev->type[base], o);
            break;
        case SO_OP_GLOBALAVGPOOL: case SO_OP_GLOBALAVGPOOL_NCHWC:
            *o = in[0];
            o->d[2] = o->d[3] = lx_c(1);
            break;
        case SO_OP_CONCAT:
            for (int k = 0; k < in[0].rank; k++)
                if (k != gi->axis) unify(U, in[0].d[k], in[1].d[k]);
            *o = in[0];
            o->d[gi->axis] = lx_add(U, in[0].d[gi->axis], in[1].d[gi->axis]);
            break;
        case SO_OP_SPLIT: {
            int ax = gi->axis, t = nd->in[0];
            int pn = tid_node(u, t);
            lx s0, s1;
            const gen_type *ot0 = &ev->type[base];
            if (pn >= 0 && u->insts[g->nodes[pn].inst].op == SO_OP_CONCAT && u->insts[g->nodes[pn].inst].axis == ax) {
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
        case SO_OP_BATCHNORM:
            for (int k = 1; k < 5; k++) unify(U, in[k].d[0], in[0].d[1]);
            *o = in[0];
            break;
        case SO_OP_BNFOLD_W:
            for (int k = 1; k < 3; k++) unify(U, in[k].d[0], in[0].d[0]);
            *o = in[0];
            break;
        case SO_OP_BNFOLD_B:
            for (int k = 1; k < gi->n_in; k++) unify(U, in[k].d[0], in[0].d[0]);
            *o = in[0];
            break;
        case SO_OP_CONST_POOL:
            o->rank = 4;
            for (int k = 0; k < 4; k++) o->d[k] = lx_c(gi->ct.dim[k]);
            break;
        case SO_OP_CONST_IDCONV: {
            int s = new_sym(U, gi->ct.dim[0]);
            o->rank = 4;
            o->d[0] = o->d[1] = lx_sym(s);
            o->d[2] = lx_c(gi->ct.dim[2]);
            o->d[3] = lx_c(gi->ct.dim[3]);
            break;
        }
        case SO_OP_CONST_IDMAT: {
            int s = new_sym(U, gi->ct.dim[0]);
            o->rank = 2;
            o->d[0] = o->d[1] = lx_sym(s);
            break;
        }
        case SO_OP_CONST_ONES:
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
    if (U->fail || e.n > SO_DIMX_MAX_SYM) return 0;
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
        rn->op = (so_op)gi->op; /* the instance's ops.def operator */
        switch (gi->op) {
        case SO_OP_ADD: case SO_OP_MUL: case SO_OP_RELU: case SO_OP_SIGMOID: case SO_OP_TANH: break; /* no attributes */
        case SO_OP_TRANSPOSE:
            at->n_ints = 2;
            at->ints[0] = 1;
            at->ints[1] = 0;
            break;
        case SO_OP_MATMUL: at->act = gi->act; break;
        case SO_OP_CONV:
        case SO_OP_CONV_NCHWC: { /* the instance's stride, same padding unless valid; a blocked conv is ungrouped */
            const gen_type *w = &ev->type[nd->in[1]];
            at->stride[0] = at->stride[1] = gi->stride > 1 ? gi->stride : 1;
            at->dilation[0] = at->dilation[1] = 1;
            at->pad[0] = at->pad[2] = gi->valid ? 0 : w->dim[2] / 2;
            at->pad[1] = at->pad[3] = gi->valid ? 0 : w->dim[3] / 2;
            at->group = it0->rank == 5 ? 1 : it0->dim[1] / w->dim[1];
            if (u->dw && w->dim[1] == 1 && w->dim[0] > 1 && w->dim[0] == (it0->rank == 5 ? it0->dim[1] * u->block : it0->dim[1]))
                at->group = SO_RULE_GROUP_DW; /* depthwise: the group is the (symbolic) channel count */
            if (u->group > 1 && it0->rank == 5) at->group = u->group; /* a blocked grouped conv */
            at->act = gi->act;
            break;
        }
        case SO_OP_ENLARGE: at->kernel[0] = at->kernel[1] = 3; break;
        case SO_OP_NCHWC_IN:
            at->n_ints = 1;
            at->ints[0] = u->block;
            break;
        case SO_OP_NCHWC_OUT: {
            int base = u->n_vars + GEN_MAX_OUT * i;
            rn->n_dx = 2;
            rn->dx[0].c = u->block;
            if (!to_dimx(U, M, ts[base].d[1], &rn->dx[1])) *ok = 0;
            break;
        }

        case SO_OP_AVGPOOL:
        case SO_OP_AVGPOOL_NCHWC:
            at->kernel[0] = at->kernel[1] = 3;
            at->stride[0] = at->stride[1] = gi->stride > 1 ? gi->stride : 1;
            at->pad[0] = at->pad[1] = at->pad[2] = at->pad[3] = gi->valid ? 0 : 1;
            at->count_include_pad = !gi->valid; /* without pads it changes nothing: 0, as PyTorch exports it */
            at->ceil_mode = gi->ceil;
            break;
        case SO_OP_MAXPOOL:
        case SO_OP_MAXPOOL_NCHWC:
            at->kernel[0] = at->kernel[1] = 3;
            at->stride[0] = at->stride[1] = gi->stride > 1 ? gi->stride : 1;
            at->pad[0] = at->pad[1] = at->pad[2] = at->pad[3] = gi->valid ? 0 : 1;
            at->dilation[0] = at->dilation[1] = 1;
            at->ceil_mode = gi->ceil;
            break;
        case SO_OP_GLOBALAVGPOOL: case SO_OP_GLOBALAVGPOOL_NCHWC: break; /* no attributes */
        case SO_OP_CONCAT: at->axis = gi->axis; break;
        case SO_OP_SPLIT: {
            at->axis = gi->axis;
            int base = u->n_vars + GEN_MAX_OUT * i;
            rn->n_dx = 2;
            if (!to_dimx(U, M, ts[base].d[gi->axis], &rn->dx[0]) || !to_dimx(U, M, ts[base + 1].d[gi->axis], &rn->dx[1]))
                *ok = 0;
            break;
        }
        case SO_OP_BATCHNORM: at->epsilon = 1e-5f; break;
        case SO_OP_BNFOLD_W: at->epsilon = 1e-5f; break;
        case SO_OP_BNFOLD_B: at->epsilon = 1e-5f; break;
        case SO_OP_CONST_POOL: case SO_OP_CONST_IDCONV: case SO_OP_CONST_IDMAT: case SO_OP_CONST_ONES: {
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
int genp_expand_pseudo(const gen_universe *u, const gen_graph *g, gen_graph *o)
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
        if (u->insts[i].op == SO_OP_ENLARGE) enl = i;
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

/* A stem universe's rule with an unpadded window: its activation's plane dims (one symbol each) are
   at least the window's 3 taps (a precondition; the numeric re-test and the matcher then instantiate
   only shapes the window fits). */
static void stem_preconds(const gen_universe *u, so_rule *r)
{
    int valid = 0;
    for (int i = 0; i < u->n_insts; i++) valid |= u->insts[i].valid;
    if (!valid) return;
    for (int i = 0; i < r->n_inputs; i++) {
        const so_rinput *in = &r->inputs[i];
        if (in->rank != 4 || in->dim[2].n_sym != 1 || in->dim[2].c || in->dim[3].n_sym != 1 || in->dim[3].c) continue;
        for (int k = 2; k < 4 && r->n_pre < SO_RULE_MAX_PRE; k++) {
            int dup = 0;
            for (int q = 0; q < r->n_pre; q++) dup |= r->pre[q].sym == in->dim[k].sym[0];
            if (dup) continue;
            r->pre[r->n_pre].kind = SO_PRE_GE;
            r->pre[r->n_pre].sym = in->dim[k].sym[0];
            r->pre[r->n_pre].value = 3;
            r->n_pre++;
        }
    }
}

so_status so_gen_make_rule(const gen_universe *u, const gen_graph *src0, const gen_graph *dst0, so_rule *r)
{
    memset(r, 0, sizeof *r);
    gen_graph src_x, dst_x;
    if (!genp_expand_pseudo(u, src0, &src_x) || !genp_expand_pseudo(u, dst0, &dst_x)) return so_errorf("too many nodes");
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
    U->block = u->block;
    sshp *ts = so_xcalloc(GEN_MAX_T, sizeof *ts), *td = so_xcalloc(GEN_MAX_T, sizeof *td);
    /* variable dims: fresh symbols, except dims of 1 and conv-kernel spatial dims. Unification is
       greedy (a sum equated with a sum of two other symbols fails), so if source-then-target fails,
       target-then-source is tried (e.g. conv(X, concat(K, L), concat(b, c)): the source's convs
       bind b to K's and c to L's output channels first) */
    uint32_t mask = src->mask | dst->mask;
    for (int order = 0; order < 2; order++) {
    if (order) {
        memset(U, 0, sizeof *U);
        U->block = u->block;
        memset(ts, 0, GEN_MAX_T * sizeof *ts);
        memset(td, 0, GEN_MAX_T * sizeof *td);
    }
    for (int v = 0; v < u->n_vars; v++) {
        const gen_var *gv = &u->vars[v];
        ts[v].rank = gv->t.rank;
        for (int k = 0; k < gv->t.rank; k++) {
            int64_t d = gv->t.dim[k];
            if ((gv->chan & (1 << k)) && (mask & (1u << v)) && u->block > 0) {
                /* layout universe: channels b*k (rank 1..4), the block count k (rank 5) */
                if (gv->t.rank == 5) ts[v].d[k] = lx_sym(new_sym(U, d));
                else ts[v].d[k] = lx_mul(U, lx_sym(new_sym(U, d / u->block)), u->block);
            } else if (d == 1 || (gv->kernel && k >= 2) || (gv->fixed & (1 << k)) || !(mask & (1u << v))) ts[v].d[k] = lx_c(d);
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
    if (u->padded) stem_preconds(u, r);
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
