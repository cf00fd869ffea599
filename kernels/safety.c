/* safety.c - the numeric safety net: both graphs on several input sets, compared element by element with a tolerance that holds for small and large values, Inf and NaN as such. */
#include "safety.h"

#include "exec.h"
#include "isa.h"

#include "../src/feed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffers of one graph: inputs in their storage type (float32, or int64 for int64 / int32 / bool
   inputs: in_int) and outputs (int64 outputs take two words each). */
typedef struct io {
    int32_t n_in, n_out;
    float **in, **out;
    size_t *in_n, *out_n;
    unsigned char *in_int;
    size_t charged;           /* so_mem_charge'd; released by io_free */
    unsigned char *out_exact; /* per output: int64 values, compared bit for bit */
} io;

static void io_free(io *x)
{
    for (int32_t k = 0; k < x->n_in; k++) free(x->in[k]);
    for (int32_t k = 0; k < x->n_out; k++) free(x->out[k]);
    free(x->in);
    free(x->out);
    free(x->in_n);
    free(x->in_int);
    free(x->out_n);
    so_mem_release(x->charged);
    free(x->out_exact);
    memset(x, 0, sizeof *x);
}

static so_status io_alloc(const so_graph *g, io *x)
{
    const so_model *m = g->model;
    memset(x, 0, sizeof *x);
    x->n_in = m->n_inputs;
    x->n_out = m->n_outputs;
    x->in = so_xcalloc((size_t)x->n_in + 1, sizeof *x->in);
    x->in_n = so_xcalloc((size_t)x->n_in + 1, sizeof *x->in_n);
    x->in_int = so_xcalloc((size_t)x->n_in + 1, 1);
    x->out = so_xcalloc((size_t)x->n_out + 1, sizeof *x->out);
    x->out_n = so_xcalloc((size_t)x->n_out + 1, sizeof *x->out_n);
    x->out_exact = so_xcalloc((size_t)x->n_out + 1, 1);
    for (int32_t k = 0; k < x->n_in; k++) {
        int64_t n = so_shape_numel(&m->inputs[k].shape);
        if (n < 0) return so_errorf("input '%s' is not a tensor of known shape", m->inputs[k].name);
        size_t es = m->inputs[k].shape.dtype == SO_I64 ? 8 : sizeof(float);
        if (so_mem_charge((size_t)n * es, "numeric-check inputs") != SO_OK) return SO_ERR;
        x->charged += (size_t)n * es;
        x->in[k] = so_xcalloc((size_t)(n > 0 ? n : 1), es);
        x->in_n[k] = (size_t)n;
        x->in_int[k] = es == 8;
    }
    for (int32_t k = 0; k < x->n_out; k++) {
        int64_t n = so_shape_numel(&g->nodes[g->outputs[k].node].out[g->outputs[k].slot]);
        if (n < 0) return so_graph_unknown_shape_error(g, g->outputs[k], m->outputs[k].name);
        int wide = g->nodes[g->outputs[k].node].out[g->outputs[k].slot].dtype == SO_I64;
        size_t bytes = (size_t)n * (wide ? 8 : sizeof(float));
        if (so_mem_charge(bytes, "numeric-check outputs") != SO_OK) return SO_ERR;
        x->charged += bytes;
        x->out[k] = so_xcalloc((size_t)(n > 0 ? n : 1), wide ? 8 : sizeof(float));
        x->out_n[k] = (size_t)n * (wide ? 2 : 1);
        x->out_exact[k] = wide;
    }
    return SO_OK;
}

/* Runs the planned executor e once on x, then, if lat_ms != NULL, times it: median over at least 5
   runs and ~0.3 s. One executor per graph serves every input set (planning, i.e. packing weights and
   choosing kernels, is done once per graph, not once per set: bert_taso's 400 MB of weights were packed
   8 times). */
static so_status run_graph(so_exec *e, io *x, double *lat_ms)
{
    so_status st = so_exec_run(e, (const float *const *)x->in, x->out);
    if (st == SO_OK && lat_ms) {
        double t[200];
        int n = 0;
        double start = so_now();
        while (n < 200 && (n < 5 || so_now() - start < 0.3)) {
            double t0 = so_now();
            if ((st = so_exec_run(e, (const float *const *)x->in, x->out)) != SO_OK) break;
            t[n++] = (so_now() - t0) * 1e3;
        }
        *lat_ms = n ? so_median(t, (size_t)n) : 0;
    }
    return st;
}

/* 1 when a and b are the same program: the same model (weights, attributes, opaque nodes shared), the
   same nodes in the same order with the same operator, inputs, attributes (interned: equal pointers, or
   equal bytes), reference (input / weight / opaque id) and output shapes, and the same outputs. Strict
   and conservative: any difference, even one that computes the same values (another node order), is
   "not identical" and gets the full comparison. */
static int graphs_identical(const so_graph *a, const so_graph *b)
{
    if (a == b) return 1;
    if (a->model != b->model || a->n_nodes != b->n_nodes) return 0;
    for (int32_t k = 0; k < a->model->n_outputs; k++)
        if (a->outputs[k].node != b->outputs[k].node || a->outputs[k].slot != b->outputs[k].slot) return 0;
    for (int32_t i = 0; i < a->n_nodes; i++) {
        const so_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->op != y->op || x->n_in != y->n_in || x->n_out != y->n_out || x->ref != y->ref) return 0;
        if (x->attr != y->attr && memcmp(x->attr, y->attr, sizeof *x->attr) != 0) return 0;
        for (int32_t j = 0; j < x->n_in; j++)
            if (x->in[j].node != y->in[j].node || x->in[j].slot != y->in[j].slot) return 0;
        for (int32_t j = 0; j < x->n_out; j++)
            if (!so_shape_eq(&x->out[j], &y->out[j])) return 0;
    }
    return 1;
}

int so_safety_close(float a, float b, double scale)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs((double)a - (double)b) <= SO_SAFETY_ATOL * scale + SO_SAFETY_RTOL * fabs((double)a); /* noise 0 */
}

/* The per-element tolerance: atol*scale + rtol*|a| + SO_SAFETY_NOISE_K * noise, where noise is the
   largest difference, over the same output, between the original graph run by its own kernels and the
   original run by another kernel path (so_safety_check): the rounding any valid reassociation shows on
   this output. An exact rewrite of an exact computation gets no slack from it. */
static double tol(float a, double scale, double noise)
{
    return SO_SAFETY_ATOL * scale + SO_SAFETY_RTOL * fabs((double)a) + SO_SAFETY_NOISE_K * noise;
}

/* Compares the outputs of a (original) and b on set `set` with the per-output noise floor; updates
   r; 0 on the first mismatch. */
static int compare(const io *a, const io *b, const so_graph *g, const char *set, double scale, const double *noise,
                   so_safety_result *r)
{
    for (int32_t k = 0; k < a->n_out; k++) {
        const char *name = g->model->outputs[k].name;
        if (a->out_exact[k]) {
            if (memcmp(a->out[k], b->out[k], a->out_n[k] * sizeof(float))) {
                r->worst = INFINITY;
                snprintf(r->why, sizeof r->why, "%s inputs: int64 output '%s' differs", set, name);
                return 0;
            }
            continue;
        }
        for (size_t j = 0; j < a->out_n[k]; j++) {
            float x = a->out[k][j], y = b->out[k][j];
            int same = isnan(x) || isnan(y) ? isnan(x) && isnan(y)
                       : isinf(x) || isinf(y) ? x == y
                                              : fabs((double)x - (double)y) <= tol(x, scale, noise[k]);
            if (!same) {
                r->worst = INFINITY;
                if (isfinite(x) && isfinite(y)) r->worst = fabs((double)x - (double)y) / tol(x, scale, noise[k]);
                snprintf(r->why, sizeof r->why,
                         "%s inputs: output '%s' element %zu is %.9g in the original and %.9g in the optimized graph "
                         "(tolerance %.3g + %.3g*|original| + %g*%.3g (noise floor) per element)",
                         set, name, j, (double)x, (double)y, SO_SAFETY_ATOL * scale, SO_SAFETY_RTOL, SO_SAFETY_NOISE_K, noise[k]);
                return 0;
            }
            if (isfinite(x)) {
                double q = fabs((double)x - (double)y) / tol(x, scale, noise[k]);
                if (q > r->worst) r->worst = q;
            }
        }
    }
    return 1;
}

/* The noise floor per output: runs `orig` once more on a's inputs at another kernel level (the next
   lower ISA level, or the reference kernels at the scalar level) and records, per output, the largest
   finite difference to a's outputs. Levels are process-wide (so_isa_set): the caller holds the API lock. */
static so_status noise_floor(const so_graph *orig, int threads, so_exec **ep, const io *a, io *c, double *noise)
{
    for (int32_t k = 0; k < a->n_in; k++) memcpy(c->in[k], a->in[k], a->in_n[k] * (a->in_int[k] ? 8 : sizeof(float)));
    if (!*ep) { /* planned once, on the first set that needs a floor, and kept for the others */
        so_isa cur = SO_ISA_SCALAR;
        if (so_isa_current(&cur) != SO_OK) return SO_ERR;
        so_exec_opts eo = {.threads = threads, .reference = cur == SO_ISA_SCALAR, .profile = 0};
        if (cur > SO_ISA_SCALAR && so_isa_set((so_isa)(cur - 1)) != SO_OK) return SO_ERR;
        so_status st = so_exec_new(orig, &eo, ep);
        if (cur > SO_ISA_SCALAR) so_isa_set(cur);
        if (st != SO_OK) return SO_ERR;
    }
    if (so_exec_run(*ep, (const float *const *)c->in, c->out) != SO_OK) return SO_ERR;
    for (int32_t k = 0; k < a->n_out; k++) {
        noise[k] = 0;
        if (a->out_exact[k]) continue;
        for (size_t j = 0; j < a->out_n[k]; j++) {
            double d = fabs((double)a->out[k][j] - (double)c->out[k][j]);
            if (isfinite(d) && d > noise[k]) noise[k] = d;
        }
    }
    return SO_OK;
}

so_status so_safety_check(const so_graph *orig, const so_graph *opt, const so_safety_opts *o, so_safety_result *r)
{
    memset(r, 0, sizeof *r);
    r->lat_before_ms = r->lat_after_ms = -1;
    io xa, xb, xc;
    so_exec *ea = NULL, *eb = NULL, *ec = NULL; /* original, optimized, original at another level (noise floor) */
    so_status rc = SO_ERR;
    unsigned char *file = NULL;
    double *noise = NULL;
    if (io_alloc(orig, &xa) != SO_OK) {
        io_free(&xa);
        return SO_ERR;
    }
    if (io_alloc(opt, &xb) != SO_OK) {
        io_free(&xa);
        io_free(&xb);
        return SO_ERR;
    }
    if (io_alloc(orig, &xc) != SO_OK) {
        io_free(&xa);
        io_free(&xb);
        io_free(&xc);
        return SO_ERR;
    }
    noise = so_xcalloc((size_t)xa.n_out + 1, sizeof *noise);
    size_t total = 0; /* bytes of the inputs file: each input in its own element type (as run --inputs FILE) */
    for (int32_t k = 0; k < xa.n_in; k++) total += xa.in_n[k] * so_dtype_size(so_input_elem_type(orig->model, k));
    if (o->inputs_path) {
        file = so_xmalloc(total ? total : 1);
        if (so_read_file_exact(o->inputs_path, file, total) != SO_OK) goto done;
    }
    static const char *const names[] = {"uniform [-1,1)", "large (x1000)", "all-negative", "all-zero", "--inputs"};
    /* the same program on both sides (the search and the layout step kept nothing): the original runs on
       the first set (it must run here, and its latency is both latencies); comparing it with itself would
       only compare the kernels with themselves. o->noise_always compares every set as usual. */
    const int identical = !o->noise_always && graphs_identical(orig, opt);
    const int n_sets = identical ? 1 : o->inputs_path ? 5 : 4;
    so_exec_opts eo = {.threads = o->threads, .reference = 0, .profile = 0};
    if (so_exec_new(orig, &eo, &ea) != SO_OK) { /* the original cannot be executed: nothing can be compared */
        snprintf(r->why, sizeof r->why, "%s", so_error());
        rc = SO_OK;
        goto done;
    }
    for (int set = 0; set < n_sets; set++) {
        double scale = set == 1 ? 1000.0 : 1.0;
        uint64_t st = o->seed, ist = o->seed ^ 0x5eedf00dULL; /* integer inputs: their own stream */
        size_t off = 0;
        for (int32_t k = 0; k < xa.n_in; k++) {
            float *v = xa.in[k];
            size_t n = xa.in_n[k];
            int32_t et = so_input_elem_type(orig->model, k);
            if (set == 4) so_to_storage(et, file + off, (int64_t)n, v);
            else if (xa.in_int[k]) so_feed_fill(orig, k, &ist, v);
            else if (set == 3) memset(v, 0, n * sizeof(float));
            else {
                so_rng_fill(&st, v, n);
                for (size_t j = 0; j < n; j++) v[j] = set == 2 ? -fabsf(v[j]) : (float)(v[j] * scale);
            }
            off += n * so_dtype_size(et);
            memcpy(xb.in[k], v, n * (xa.in_int[k] ? 8 : sizeof(float)));
        }
        int timed = o->time_it && set == 0;
        if (run_graph(ea, &xa, timed ? &r->lat_before_ms : NULL) != SO_OK) {
            if (set == 0) { /* the original cannot be executed: nothing can be compared */
                snprintf(r->why, sizeof r->why, "%s", so_error());
                rc = SO_OK;
                goto done;
            }
            snprintf(r->why, sizeof r->why, "%s inputs: the original graph fails: %s", names[set], so_error());
            r->ran = 1;
            rc = SO_OK;
            goto done;
        }
        r->ran = 1;
        if (identical) {
            r->identical = 1;
            r->lat_after_ms = r->lat_before_ms;
            break;
        }
        if ((!eb && so_exec_new(opt, &eo, &eb) != SO_OK) || run_graph(eb, &xb, timed ? &r->lat_after_ms : NULL) != SO_OK) {
            snprintf(r->why, sizeof r->why, "%s inputs: the optimized graph does not run: %s", names[set], so_error());
            r->worst = INFINITY;
            rc = SO_OK;
            goto done;
        }
        r->sets++;
        /* Lazy noise floor: the set is compared at the strict tolerance (floor 0) first. The tolerance
           only grows with the floor, so a set that passes strictly passes with any floor: the verdict is
           the one an always-computed floor gives. Only when some element fails is the original run by
           another kernel path (where that path cannot run it, no slack: floor 0) and the set compared
           again with the floors. o->noise_always computes the floor on every set (the report then has
           it for every check). */
        memset(noise, 0, ((size_t)xa.n_out + 1) * sizeof *noise);
        so_safety_result strict = *r;
        const int need = o->noise_always || !compare(&xa, &xb, orig, names[set], scale, noise, &strict);
        if (!need) {
            r->worst = strict.worst;
            continue;
        }
        if (noise_floor(orig, o->threads, &ec, &xa, &xc, noise) != SO_OK) memset(noise, 0, ((size_t)xa.n_out + 1) * sizeof *noise);
        r->noise_sets++;
        for (int32_t k = 0; k < xa.n_out; k++)
            if (noise[k] > r->noise) r->noise = noise[k];
        if (!compare(&xa, &xb, orig, names[set], scale, noise, r)) {
            rc = SO_OK;
            goto done;
        }
    }
    r->agree = 1;
    rc = SO_OK;
done:
    so_exec_free(ea);
    so_exec_free(eb);
    so_exec_free(ec);
    free(file);
    free(noise);
    io_free(&xa);
    io_free(&xb);
    io_free(&xc);
    return rc;
}
