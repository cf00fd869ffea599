/* extract.c - e-graph extraction: greedy bottom-up, and an ILP solved by GLPK warm-started from it. */
#include "extract.h"

#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cost of e-node e under choice: alt[e] when it is context-priced (alt[e] >= 0) and the chosen
   e-node of a checked child class (the first; every one for ctx[e] == 2) is a projection, split
   or concat (a fused epilogue after a merged-then-split producer runs as its own pass; a
   zero-copy concat of split outputs is a copy), else cost[e]. */
static double enode_cost(so_egraph *eg, const so_extract_costs *ec, const int32_t *choice, int32_t e)
{
    if (!ec->alt || ec->alt[e] < 0) return ec->cost[e];
    const int32_t *kid = so_eg_kids(eg, e);
    int32_t nk = ec->ctx[e] == 2 ? eg->nodes[e].n_in : eg->nodes[e].n_in > 0;
    for (int32_t k = 0; k < nk; k++) {
        int32_t ce = choice[so_eg_find(eg, kid[k])];
        if (ce < 0) continue;
        int op = eg->nodes[ce].op;
        if (op == SO_EG_PROJ || op == SO_OP_SPLIT || op == SO_OP_CONCAT) return ec->alt[e];
    }
    return ec->cost[e];
}

double so_extract_dag_cost(so_egraph *eg, const double *cost, const int32_t *choice, const int32_t *roots, int32_t n_roots)
{
    so_extract_costs ec = {cost, NULL, NULL};
    return so_extract_dag_cost_ctx(eg, &ec, choice, roots, n_roots);
}

double so_extract_dag_cost_ctx(so_egraph *eg, const so_extract_costs *ec, const int32_t *choice, const int32_t *roots, int32_t n_roots)
{
    char *seen = so_xcalloc((size_t)eg->n_cls + 1, 1);
    int32_t *stk = so_xmalloc(((size_t)eg->n_cls + (size_t)n_roots + 1) * sizeof *stk), n = 0;
    double c = 0;
    for (int32_t r = 0; r < n_roots; r++) stk[n++] = so_eg_find(eg, roots[r]);
    while (n > 0) {
        int32_t k = stk[--n];
        if (seen[k]) continue;
        seen[k] = 1;
        int32_t e = choice[k];
        if (e < 0) {
            c = INFINITY;
            continue;
        }
        c += enode_cost(eg, ec, choice, e);
        const int32_t *kid = so_eg_kids(eg, e);
        for (int32_t j = 0; j < eg->nodes[e].n_in; j++)
            if (!seen[so_eg_find(eg, kid[j])]) stk[n++] = so_eg_find(eg, kid[j]);
    }
    free(seen);
    free(stk);
    return c;
}

/* Greedy: in topological order, each class takes its e-node of least tree cost (own cost plus its
   distinct children's tree costs; ties: lower own cost, then lower id). */
static void greedy(so_egraph *eg, const so_extract_costs *ec, int32_t *choice)
{
    const double *cost = ec->cost;
    int32_t nt;
    int32_t *topo = so_eg_topo(eg, &nt);
    double *tc = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *tc);
    for (int32_t c = 0; c < eg->n_cls; c++) choice[c] = -1, tc[c] = INFINITY;
    for (int32_t i = 0; i < nt; i++) {
        int32_t c = topo[i];
        const so_eclass *cl = &eg->cls[c];
        for (int32_t j = 0; j < cl->n_nodes; j++) {
            int32_t e = cl->nodes[j];
            const int32_t *kid = so_eg_kids(eg, e);
            double t = enode_cost(eg, ec, choice, e); /* the children are chosen: topological order */
            for (int32_t k = 0; k < eg->nodes[e].n_in; k++) {
                int dup = 0;
                for (int32_t q = 0; q < k && !dup; q++) dup = kid[q] == kid[k];
                if (!dup) t += tc[so_eg_find(eg, kid[k])];
            }
            int32_t b = choice[c];
            if (b < 0 || t < tc[c] || (t == tc[c] && (cost[e] < cost[b] || (cost[e] == cost[b] && e < b)))) {
                choice[c] = e;
                tc[c] = t;
            }
        }
    }
    free(topo);
    free(tc);
}

typedef struct heur {
    const double *x;  /* 1-based column values of the incumbent */
    int given;
    int64_t bb_nodes, bb_iters; /* the limits */
    int stop;         /* so_ilp_stop when a work bound stopped it, else 0 */
    int32_t nodes;    /* subproblems created so far */
    int64_t iters;    /* simplex iterations so far */
} heur;

/* GLPK's callback: hands over the incumbent once, and stops branch and bound when it has created
   more than bb_nodes subproblems or run more than bb_iters simplex iterations. Both counts come from
   GLPK's own state (the tree's total, the problem's iteration count) at points GLPK reaches in the
   same order every run: the stop, and the incumbent it leaves, do not depend on time. */
static void ilp_callback(glp_tree *tree, void *info)
{
    heur *h = info;
    if (glp_ios_reason(tree) == GLP_IHEUR && !h->given) {
        h->given = 1;
        glp_ios_heur_sol(tree, h->x);
    }
    int total = 0;
    glp_ios_tree_size(tree, NULL, NULL, &total);
    h->nodes = total;
    h->iters = glp_get_it_cnt(glp_ios_get_prob(tree));
    if (h->stop) return;
    if (total > h->bb_nodes) h->stop = SO_ILP_BB_NODES;
    else if (h->iters > h->bb_iters) h->stop = SO_ILP_BB_ITERS;
    if (h->stop) glp_ios_terminate(tree);
}

const char *so_ilp_stop_name(int stop)
{
    static const char *const name[] = {"not-run", "finished", "lp-iterations", "bb-nodes", "bb-iterations", "wall-backstop"};
    return stop >= 0 && stop <= SO_ILP_WALL ? name[stop] : "?";
}

so_status so_extract(so_egraph *eg, const double *node_cost, const int32_t *roots, int32_t n_roots, int64_t ilp_node_limit,
                     const so_extract_limits *lim, so_extract_result *out)
{
    so_extract_costs ec = {node_cost, NULL, NULL};
    return so_extract_ctx(eg, &ec, roots, n_roots, ilp_node_limit, lim, out);
}

so_status so_extract_ctx(so_egraph *eg, const so_extract_costs *ec, const int32_t *roots, int32_t n_roots, int64_t ilp_node_limit,
                         const so_extract_limits *lim, so_extract_result *out)
{
    const double *node_cost = ec->cost;
    memset(out, 0, sizeof *out);
    so_extract_limits L = lim ? *lim : (so_extract_limits){0};
    if (L.lp_iters <= 0) L.lp_iters = 20000;
    if (L.bb_nodes <= 0) L.bb_nodes = 1000;
    if (L.bb_iters <= 0) L.bb_iters = 200000;
    if (L.wall_backstop <= 0) L.wall_backstop = 120;
    double t0 = so_now();
    out->choice = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *out->choice);
    greedy(eg, ec, out->choice);
    out->greedy_cost = out->cost = so_extract_dag_cost_ctx(eg, ec, out->choice, roots, n_roots);
    out->method = SO_EXTRACT_GREEDY;
    /* the start graph's own e-nodes (greedy's where a class has none): greedy's tree cost pays a
       shared operand once per reader, so its choice can be dearer than the graph it started from */
    {
        int32_t *st = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *st);
        memcpy(st, out->choice, (size_t)eg->n_cls * sizeof *st);
        for (int32_t c = 0; c < eg->n_cls; c++) {
            const so_eclass *cl = &eg->cls[c];
            int32_t best = -1;
            for (int32_t j = 0; j < cl->n_nodes; j++) {
                int32_t e = cl->nodes[j];
                if (eg->nodes[e].orig >= 0 && (best < 0 || eg->nodes[e].orig < eg->nodes[best].orig)) best = e;
            }
            if (best >= 0) st[c] = best;
        }
        double sc = so_extract_dag_cost_ctx(eg, ec, st, roots, n_roots);
        if (sc < out->cost) {
            free(out->choice);
            out->choice = st;
            out->cost = sc;
            out->method = SO_EXTRACT_START;
        } else
            free(st);
    }
    /* the classes reachable from the roots through any live e-node (rc[0..n_rc)), and their
       e-nodes: the columns */
    char *reach = so_xcalloc((size_t)eg->n_cls + 1, 1);
    int32_t *rcl = so_xmalloc(((size_t)eg->n_cls + (size_t)n_roots + 1) * sizeof *rcl), n_rc = 0, head = 0;
    int32_t *col = so_xcalloc((size_t)eg->n_nodes + 1, sizeof *col), n_col = 0; /* e-node -> column (1-based), 0 none */
    for (int32_t r = 0; r < n_roots; r++) {
        int32_t c = so_eg_find(eg, roots[r]);
        if (!reach[c]) reach[c] = 1, rcl[n_rc++] = c;
    }
    while (head < n_rc) {
        const so_eclass *cl = &eg->cls[rcl[head++]];
        for (int32_t j = 0; j < cl->n_nodes; j++) {
            int32_t e = cl->nodes[j];
            col[e] = ++n_col;
            const int32_t *kid = so_eg_kids(eg, e);
            for (int32_t k = 0; k < eg->nodes[e].n_in; k++) {
                int32_t d = so_eg_find(eg, kid[k]);
                if (!reach[d]) reach[d] = 1, rcl[n_rc++] = d;
            }
        }
    }
    if (ilp_node_limit <= 0 || n_col > ilp_node_limit) {
        snprintf(out->why_greedy, sizeof out->why_greedy, ilp_node_limit <= 0 ? "ILP off" : "e-graph over the ILP limit (%lld e-nodes)", (long long)n_col);
        free(reach);
        free(rcl);
        free(col);
        out->seconds = so_now() - t0;
        return SO_OK;
    }
    glp_term_out(GLP_OFF);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, n_col);
    int32_t *ecol = so_xmalloc(((size_t)n_col + 1) * sizeof *ecol); /* column -> e-node */
    for (int32_t e = 0; e < eg->n_nodes; e++)
        if (col[e]) {
            ecol[col[e]] = e;
            glp_set_col_kind(lp, col[e], GLP_BV);
            glp_set_obj_coef(lp, col[e], node_cost[e]);
        }
    /* rows, per reachable class c: at most one of its e-nodes (exactly one for a root); and for each
       child class a of its e-nodes, sum over a >= the sum over c's e-nodes that read a. The
       per-class sum (not one row per e-node) is what keeps the relaxation from paying half of a
       child under each of two commuted e-nodes (add(a,b), add(b,a)) */
    int64_t nz = 0, cap = 1024;
    int *ia = so_xmalloc((size_t)cap * sizeof *ia), *ja = so_xmalloc((size_t)cap * sizeof *ja);
    double *ar = so_xmalloc((size_t)cap * sizeof *ar);
    int32_t *mark = so_xcalloc((size_t)eg->n_cls + 1, sizeof *mark), *kids_of = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *kids_of);
    char *is_root = so_xcalloc((size_t)eg->n_cls + 1, 1);
    for (int32_t r = 0; r < n_roots; r++) is_root[so_eg_find(eg, roots[r])] = 1;
    int row = 0;
#define ENTRY(col_, val_)                                                           \
    do {                                                                            \
        if (nz + 2 > cap) {                                                         \
            cap *= 2;                                                               \
            ia = so_xrealloc(ia, (size_t)cap * sizeof *ia);                         \
            ja = so_xrealloc(ja, (size_t)cap * sizeof *ja);                         \
            ar = so_xrealloc(ar, (size_t)cap * sizeof *ar);                         \
        }                                                                           \
        ++nz, ia[nz] = row, ja[nz] = (col_), ar[nz] = (val_);                       \
    } while (0)
    for (int32_t i = 0; i < n_rc; i++) {
        int32_t c = rcl[i];
        const so_eclass *cl = &eg->cls[c];
        glp_add_rows(lp, 1);
        ++row;
        if (is_root[c]) glp_set_row_bnds(lp, row, GLP_FX, 1.0, 1.0);
        else glp_set_row_bnds(lp, row, GLP_UP, 0.0, 1.0);
        for (int32_t j = 0; j < cl->n_nodes; j++) ENTRY(col[cl->nodes[j]], 1.0);
        int32_t nk = 0;
        for (int32_t j = 0; j < cl->n_nodes; j++) {
            const int32_t *kid = so_eg_kids(eg, cl->nodes[j]);
            for (int32_t k = 0; k < eg->nodes[cl->nodes[j]].n_in; k++) {
                int32_t d = so_eg_find(eg, kid[k]);
                if (mark[d] != c + 1) mark[d] = c + 1, kids_of[nk++] = d;
            }
        }
        for (int32_t q = 0; q < nk; q++) {
            int32_t d = kids_of[q];
            const so_eclass *dl = &eg->cls[d];
            glp_add_rows(lp, 1);
            ++row;
            glp_set_row_bnds(lp, row, GLP_LO, 0.0, 0.0);
            for (int32_t j = 0; j < dl->n_nodes; j++) ENTRY(col[dl->nodes[j]], 1.0);
            for (int32_t j = 0; j < cl->n_nodes; j++) {
                const int32_t *kid = so_eg_kids(eg, cl->nodes[j]);
                int reads = 0;
                for (int32_t k = 0; k < eg->nodes[cl->nodes[j]].n_in && !reads; k++) reads = so_eg_find(eg, kid[k]) == d;
                if (reads) ENTRY(col[cl->nodes[j]], -1.0);
            }
        }
    }
#undef ENTRY
    free(mark);
    free(kids_of);
    free(is_root);
    free(rcl);
    glp_load_matrix(lp, (int)nz, ia, ja, ar);
    out->ilp_vars = n_col;
    out->ilp_rows = row;
    double *x = so_xcalloc((size_t)n_col + 1, sizeof *x);
    {
        /* the incumbent (greedy or the start graph) as a 0/1 vector over the columns */
        char *seen = so_xcalloc((size_t)eg->n_cls + 1, 1);
        int32_t *st2 = so_xmalloc(((size_t)eg->n_cls + (size_t)n_roots + 1) * sizeof *st2), n2 = 0;
        for (int32_t r = 0; r < n_roots; r++) st2[n2++] = so_eg_find(eg, roots[r]);
        while (n2 > 0) {
            int32_t c = st2[--n2];
            if (seen[c] || out->choice[c] < 0) continue;
            seen[c] = 1;
            int32_t e = out->choice[c];
            x[col[e]] = 1.0;
            const int32_t *kid = so_eg_kids(eg, e);
            for (int32_t k = 0; k < eg->nodes[e].n_in; k++) st2[n2++] = so_eg_find(eg, kid[k]);
        }
        free(seen);
        free(st2);
    }
    glp_smcp smp;
    glp_init_smcp(&smp);
    smp.msg_lev = GLP_MSG_OFF;
    const double t_ilp = so_now();
    smp.tm_lim = (int)fmin(L.wall_backstop * 1000, 1e9);
    smp.it_lim = L.lp_iters;
    heur h = {x, 0, L.bb_nodes, L.bb_iters, 0, 0, 0};
    int src = glp_simplex(lp, &smp), ok = src == 0 && glp_get_status(lp) == GLP_OPT;
    out->ilp_iters = glp_get_it_cnt(lp);
    out->ilp_stop = src == GLP_ETMLIM ? SO_ILP_WALL : src == GLP_EITLIM ? SO_ILP_LP_ITERS : SO_ILP_FINISHED;
    if (ok) {
        glp_iocp parm;
        glp_init_iocp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        parm.presolve = GLP_OFF; /* the warm start is given in the problem's own columns */
        parm.cb_func = ilp_callback;
        parm.cb_info = &h;
        if (getenv("SO_EQSAT_CUTS")) parm.gmi_cuts = parm.mir_cuts = parm.cov_cuts = parm.clq_cuts = GLP_ON;
        if (getenv("SO_EQSAT_PS")) parm.ps_heur = GLP_ON, parm.ps_tm_lim = 2000;
        if (getenv("SO_EQSAT_FP")) parm.fp_heur = GLP_ON;
        /* the backstop is one budget for the relaxation and the search together */
        parm.tm_lim = (int)fmax(1, fmin((L.wall_backstop - (so_now() - t_ilp)) * 1000, 1e9));
        if (getenv("SO_DEBUG_EQSAT")) {
            fprintf(stderr, "extract: LP relaxation %.9g, greedy %.9g\n", glp_get_obj_val(lp), out->greedy_cost);
            for (int r0 = 0; r0 < n_roots; r0++) {
                const so_eclass *cl = &eg->cls[so_eg_find(eg, roots[r0])];
                for (int32_t j = 0; j < cl->n_nodes; j++)
                    fprintf(stderr, "  root %d class %d node %d op %d x=%.3f cost %.6f\n", r0, so_eg_find(eg, roots[r0]), cl->nodes[j],
                            eg->nodes[cl->nodes[j]].op, glp_get_col_prim(lp, col[cl->nodes[j]]), node_cost[cl->nodes[j]]);
            }
        }
        int rc = glp_intopt(lp, &parm);
        int st = glp_mip_status(lp);
        out->ilp_bb_nodes = h.nodes;
        out->ilp_iters = glp_get_it_cnt(lp);
        out->ilp_stop = rc == GLP_ETMLIM ? SO_ILP_WALL : h.stop ? h.stop : SO_ILP_FINISHED;
        if (getenv("SO_DEBUG_EQSAT")) fprintf(stderr, "extract: ILP rc %d status %d obj %.9g\n", rc, st, glp_mip_obj_val(lp));
        if ((rc == 0 || rc == GLP_ETMLIM || rc == GLP_ESTOP) && (st == GLP_OPT || st == GLP_FEAS)) {
            int32_t *ch = so_xmalloc(((size_t)eg->n_cls + 1) * sizeof *ch);
            for (int32_t c = 0; c < eg->n_cls; c++) ch[c] = -1;
            for (int32_t q = 1; q <= n_col; q++) {
                if (glp_mip_col_val(lp, q) < 0.5) continue;
                int32_t e = ecol[q], c = so_eg_find(eg, eg->nodes[e].cls);
                if (ch[c] < 0 || node_cost[e] < node_cost[ch[c]] || (node_cost[e] == node_cost[ch[c]] && e < ch[c])) ch[c] = e;
            }
            /* classes the solution does not need keep the incumbent's choice: the moves and the
               whole-graph steps after extraction change choices of classes outside it, and a class
               left without a choice there would build a graph of garbage */
            for (int32_t c = 0; c < eg->n_cls; c++)
                if (ch[c] < 0) ch[c] = out->choice[c];
            double ic = so_extract_dag_cost_ctx(eg, ec, ch, roots, n_roots);
            if (ic < out->cost) {
                free(out->choice);
                out->choice = ch;
                out->cost = ic;
                out->method = st == GLP_OPT && rc == 0 && !h.stop ? SO_EXTRACT_ILP_OPTIMAL : SO_EXTRACT_ILP_FEASIBLE;
            } else {
                free(ch);
                snprintf(out->why_greedy, sizeof out->why_greedy, "the ILP's solution was not cheaper (ILP stop: %s)", so_ilp_stop_name(out->ilp_stop));
            }
        } else
            snprintf(out->why_greedy, sizeof out->why_greedy, "the ILP found no solution (glpk %d/%d, stop: %s)", rc, st, so_ilp_stop_name(out->ilp_stop));
    } else
        snprintf(out->why_greedy, sizeof out->why_greedy, "the LP relaxation did not solve (stop: %s, %lld simplex iterations)", so_ilp_stop_name(out->ilp_stop),
                 (long long)out->ilp_iters);
    glp_delete_prob(lp);
    free(x);
    free(ia);
    free(ja);
    free(ar);
    free(ecol);
    free(reach);
    free(col);
    out->seconds = so_now() - t0;
    return SO_OK;
}
