/* gen.c - the rule generator pipeline: classes, candidates, pruning, generalisation, float re-test, verification, deterministic output; merge of shards. */
#include "gen_priv.h"
#include "gen_mpi.h"
#include "rule_shape.h"
#include "../verifier/verify.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

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

int so_rule_has_layout(const so_rule *r)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int q = 0; q < p->n_nodes; q++)
            if (so_ops[p->nodes[q].op].flags & SO_F_LAYOUT) return 1;
    }
    return 0;
}

/* Does a rule hold an operator instance only the extended layout universes enumerate: a strided
   (blocked) conv or pool, an unpadded or ceil_mode pool, a (blocked) global average pool, a
   blocked pool? Only those rules are kept from them (the reorder round trips and the relu moves
   they find again are the layout universe's). */
static int rule_has_window(const so_rule *r)
{
    for (int i = 0; i < r->n_inputs; i++) { /* a conv kernel of 5 or 7 taps (the extended kernel universe) */
        const so_rinput *in = &r->inputs[i];
        if (in->rank == 4 && !in->dim[2].n_sym && !in->dim[3].n_sym && (in->dim[2].c >= 5 || in->dim[3].c >= 5)) return 1;
    }
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++) {
            const so_rnode *n = &p->nodes[i];
            const so_attr *a = &n->attr;
            so_op op = n->op;
            if (op == SO_OP_CONV_NCHWC && a->pad[0] != a->pad[1]) return 1; /* a blocked 1x3 / 3x1 conv */
            if (op == SO_OP_CONV && (a->pad[0] != a->pad[1] || a->pad[0] != a->pad[2]) && so_rule_has_layout(r)) return 1;
            if (op == SO_OP_GLOBALAVGPOOL || op == SO_OP_GLOBALAVGPOOL_NCHWC || op == SO_OP_MAXPOOL_NCHWC || op == SO_OP_AVGPOOL_NCHWC)
                return 1;
            if ((op == SO_OP_CONV || op == SO_OP_CONV_NCHWC || op == SO_OP_MAXPOOL || op == SO_OP_AVGPOOL) &&
                (a->stride[0] > 1 || a->stride[1] > 1))
                return 1;
            if ((op == SO_OP_MAXPOOL || op == SO_OP_AVGPOOL || op == SO_OP_MAXPOOL_NCHWC || op == SO_OP_AVGPOOL_NCHWC) &&
                (a->ceil_mode || a->pad[0] == 0))
                return 1;
            if ((op == SO_OP_CONV || op == SO_OP_CONV_NCHWC) && a->pad[0] == 0 && a->pad[1] == 0) { /* unpadded 3x3 */
                const so_rref wr = n->in[1];
                if (wr.node < 0 && r->inputs[-(wr.node + 1)].rank == 4 && r->inputs[-(wr.node + 1)].dim[2].c == 3) return 1;
            }
        }
    }
    return 0;
}

/* Does a rule state a padded channel count: a rule input of rank 4 whose channel dim (1) is a
   concrete count other than 1 (a stem's 3 image channels: the stem universes keep it concrete), in
   a rule with a layout operator or a window? Such rules are the stem universes' (sort class 3). */
static int rule_has_padded(const so_rule *r)
{
    if (!so_rule_has_layout(r) && !rule_has_window(r)) return 0;
    int b = 16; /* the rule's block (a window rule without layout operator: a stem fold, 3 channels) */
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int q = 0; q < p->n_nodes; q++)
            if (p->nodes[q].op == SO_OP_NCHWC_IN && p->nodes[q].attr.n_ints == 1) b = (int)p->nodes[q].attr.ints[0];
    }
    for (int i = 0; i < r->n_inputs; i++) { /* a concrete channel or block count no multiple of the block */
        const so_rinput *in = &r->inputs[i];
        const int dims = in->rank == 4 ? 2 : in->rank == 1 ? 1 : 0; /* channels: dims 0, 1 of a kernel or activation */
        for (int k = 0; k < dims; k++)
            if (in->dim[k].n_sym == 0 && in->dim[k].c > 1 && in->dim[k].c % b) return 1;
        if (in->rank == 5 && in->dim[1].n_sym == 0 && in->dim[1].c > 1) return 1;
    }
    return 0;
}

/* Does a rule hold a depthwise conv (group=dw: the depthwise universes, sort class 4)? */
static int rule_has_dw(const so_rule *r)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int q = 0; q < p->n_nodes; q++)
            if ((p->nodes[q].op == SO_OP_CONV || p->nodes[q].op == SO_OP_CONV_NCHWC) && p->nodes[q].attr.group == SO_RULE_GROUP_DW) return 1;
    }
    return 0;
}

/* Does a rule hold a grouped conv of a concrete group > 1 over a symbolic channel count (the grouped universe, sort
   class 5; the default universe's grouped convs have concrete channels)? */
static int rule_has_grouped(const so_rule *r)
{
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int q = 0; q < p->n_nodes; q++) {
            const so_rnode *n = &p->nodes[q];
            if ((n->op != SO_OP_CONV && n->op != SO_OP_CONV_NCHWC) || n->attr.group <= 1) continue;
            so_sshape x;
            if (so_rule_shape(r, w, n->in[0], &x) == SO_OK && x.rank >= 2 && x.dim[1].n_sym > 0) return 1;
        }
    }
    return 0;
}

/* Rule sort key: layout class (none, layout, extended-layout window, padded stem, depthwise, grouped: each class after the previous,
   so that adding rules of a later class renumbers none of an earlier one), total nodes, source nodes, outputs, then the printed text without the id
   line and proof time. */
typedef struct rkey {
    int lay, na, ns, no;
    char *text;
    so_rule *r;
} rkey;

static int cmp_rkey(const void *x, const void *y)
{
    const rkey *a = x, *b = y;
    if (a->lay != b->lay) return a->lay < b->lay ? -1 : 1;
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
        k[i].lay = rule_has_grouped(&c) ? 5 : rule_has_dw(&c) ? 4 : rule_has_padded(&c) ? 3 : rule_has_window(&c) ? 2 : so_rule_has_layout(&c);
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
    int ncl = genp_split_bucket_ev(u, J->in, g, n, cls, ev);
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
            inv[a] = genp_graph_orbit_hash(u, &g[a]);
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
                if (so_gen_common_subgraph(u, ga, gb) || genp_value_redundant_ev(u, ga, &ev[b], gb, &ev[a])) {
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

static so_status gen_run_universe(const so_gen_options *o, const gen_universe *u, const char *tag, so_ruleset *out,
                                  so_gen_stats *st)
{
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    double t0 = so_now();
    gen_universe_activate(u);
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
    snprintf(prov, sizeof prov, "generate %smax-ops=%d seed=%llu", tag, o->max_ops, (unsigned long long)o->seed);
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
    genp_add_eps_instances(&rs);
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
        so_status vrc = o->ckpt_path ? genp_verify_ckpt(o, &rs, o->threads > 2 ? 2 : o->threads, o->failed_path ? &why : NULL)
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

so_status so_gen_run(const so_gen_options *o, so_ruleset *out, so_gen_stats *st)
{
    if (o->universe) return gen_run_universe(o, o->universe, "", out, st);
    double t0 = so_now();
    gen_universe u;
    gen_universe_default(&u);
    so_status rc = gen_run_universe(o, &u, "", out, st);
    if (rc != SO_OK || o->no_layout) return rc;
    /* the layout universes (exact blocking, blocks 8 and 16): small, so neither checkpointed nor
       written to the failed-candidates file; counts are added to the default universe's */
    /* per block: the layout universe, then the extended ones (strided convs + folds, pools) */
    /* (then the stem universes, parts 7..9: padded input channels; the classifier, part 10: padded output
       channels, b = 16 only: 1000 is 125 blocks of 8) */
    /* (then the depthwise universes, parts 11 and 12: group=dw, 3x3 and 5x5 kernels, blocks 8 and 16; the grouped one,
       part 13: group 32) */
    static const int blocks[29] = {8, 16, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 8, 8, 8, 16, 16, 16, 16, 8, 8, 16, 16, 8, 16};
    static const int parts[29] = {-1, -1, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 7, 8, 9, 10, 11, 12, 11, 12, 13, 13};
    for (int k = 0; k < 29; k++) {
        so_gen_options lo = *o;
        lo.ckpt_path = NULL;
        lo.failed_path = NULL;
        if (parts[k] < 0) gen_universe_layout(&u, blocks[k]);
        else gen_universe_layout_ext(&u, blocks[k], parts[k]);
        char tag[48];
        if (parts[k] < 0) snprintf(tag, sizeof tag, "layout b=%d ", blocks[k]);
        else snprintf(tag, sizeof tag, "layout-%s b=%d ", parts[k] == 13 ? "grouped" : parts[k] >= 11 ? "depthwise" : parts[k] == 10 ? "classifier" : parts[k] >= 7 ? "stem" : parts[k] >= 2 ? "kernel" : parts[k] ? "pool" : "stride", blocks[k]);
        so_ruleset rs;
        so_gen_stats ls;
        rc = gen_run_universe(&lo, &u, tag, &rs, &ls);
        if (rc != SO_OK) {
            so_ruleset_free(out);
            return rc;
        }
        /* only rules that mention a layout operator: the others (add commuting on rank-5 values)
           say nothing new */
        for (int32_t q = 0; q < rs.n_rules; q++)
            /* (same sides: an unpadded instance on a 1x1 kernel is the same-padded one, both print alike) */
            if (parts[k] < 0 ? so_rule_has_layout(&rs.rules[q])
                             : (parts[k] == 13 ? rule_has_grouped(&rs.rules[q]) : parts[k] >= 11 ? rule_has_dw(&rs.rules[q]) : parts[k] >= 7 ? rule_has_padded(&rs.rules[q]) : rule_has_window(&rs.rules[q])) &&
                                   !so_rule_same_sides(&rs.rules[q]))
                so_ruleset_push(out, &rs.rules[q]);
        so_ruleset_free(&rs);
        st->graphs += ls.graphs, st->kept += ls.kept, st->bucketed += ls.bucketed, st->classes += ls.classes;
        st->collisions += ls.collisions, st->candidates += ls.candidates, st->after_trivial += ls.after_trivial;
        st->after_renaming += ls.after_renaming, st->after_common_subgraph += ls.after_common_subgraph;
        st->in_shard += ls.in_shard, st->after_generalise += ls.after_generalise, st->after_float += ls.after_float;
        st->proved += ls.proved;
        st->enum_seconds += ls.enum_seconds;
        st->bucket_seconds += ls.bucket_seconds;
        st->float_seconds += ls.float_seconds;
        st->verify_seconds += ls.verify_seconds;
    }
    so_gen_merge(out);
    st->after_subsumed = st->rules = out->n_rules;
    st->seconds = so_now() - t0;
    return SO_OK;
}

void so_gen_merge(so_ruleset *all)
{
    so_gen_sort(all);
    so_gen_drop_subsumed(all);
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
