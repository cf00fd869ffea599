/* safety.c - the numeric safety net: both graphs on several input sets, compared element by element with a tolerance that holds for small and large values, Inf and NaN as such. */
#include "safety.h"

#include "exec.h"
#include "../src/feed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffers of one graph: inputs (float32, or int64 storage for int64 / int32 / bool inputs: in_wide) and
   outputs (int64 outputs take two words each). */
typedef struct io {
    int32_t n_in, n_out;
    unsigned char *in_wide;
    float **in, **out;
    size_t *in_n, *out_n;
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
    free(x->in_wide);
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
    x->in_wide = so_xcalloc((size_t)x->n_in + 1, 1);
    x->out = so_xcalloc((size_t)x->n_out + 1, sizeof *x->out);
    x->out_n = so_xcalloc((size_t)x->n_out + 1, sizeof *x->out_n);
    x->out_exact = so_xcalloc((size_t)x->n_out + 1, 1);
    for (int32_t k = 0; k < x->n_in; k++) {
        int64_t n = so_shape_numel(&m->inputs[k].shape);
        if (n < 0) return so_errorf("input '%s' is not a tensor of known shape", m->inputs[k].name);
        const int wide = m->inputs[k].shape.dtype == SO_I64;
        if (so_mem_charge((size_t)n * (wide ? 8 : 4), "numeric-check inputs") != SO_OK) return SO_ERR;
        x->charged += (size_t)n * (wide ? 8 : 4);
        x->in[k] = so_xcalloc((size_t)(n > 0 ? n : 1), wide ? 8 : 4);
        x->in_n[k] = (size_t)n;
        x->in_wide[k] = (unsigned char)wide;
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

/* Runs g once on x, then, if lat_ms != NULL, times it: median over at least 5 runs and ~0.3 s. */
static so_status run_graph(const so_graph *g, int threads, io *x, double *lat_ms)
{
    so_exec *e = NULL;
    so_exec_opts eo = {.threads = threads, .reference = 0, .profile = 0};
    if (so_exec_new(g, &eo, &e) != SO_OK) return SO_ERR;
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
    so_exec_free(e);
    return st;
}

int so_safety_close(float a, float b, double scale)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs((double)a - (double)b) <= SO_SAFETY_ATOL * scale + SO_SAFETY_RTOL * fabs((double)a);
}

/* Compares the outputs of a (original) and b on set `set`; updates r; 0 on the first mismatch. */
static int compare(const io *a, const io *b, const so_graph *g, const char *set, double scale, so_safety_result *r)
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
            if (!so_safety_close(x, y, scale)) {
                r->worst = INFINITY;
                if (isfinite(x) && isfinite(y))
                    r->worst = fabs((double)x - (double)y) / (SO_SAFETY_ATOL * scale + SO_SAFETY_RTOL * fabs((double)x));
                snprintf(r->why, sizeof r->why,
                         "%s inputs: output '%s' element %zu is %.9g in the original and %.9g in the optimized graph "
                         "(tolerance %.3g + %.3g*|original| per element)",
                         set, name, j, (double)x, (double)y, SO_SAFETY_ATOL * scale, SO_SAFETY_RTOL);
                return 0;
            }
            if (isfinite(x)) {
                double q = fabs((double)x - (double)y) / (SO_SAFETY_ATOL * scale + SO_SAFETY_RTOL * fabs((double)x));
                if (q > r->worst) r->worst = q;
            }
        }
    }
    return 1;
}

so_status so_safety_check(const so_graph *orig, const so_graph *opt, const so_safety_opts *o, so_safety_result *r)
{
    memset(r, 0, sizeof *r);
    r->lat_before_ms = r->lat_after_ms = -1;
    io xa, xb;
    so_status rc = SO_ERR;
    float *file = NULL;
    if (io_alloc(orig, &xa) != SO_OK) {
        io_free(&xa);
        return SO_ERR;
    }
    if (io_alloc(opt, &xb) != SO_OK) {
        io_free(&xa);
        io_free(&xb);
        return SO_ERR;
    }
    size_t total = 0; /* bytes of the raw --inputs file: each input in its own element type */
    for (int32_t k = 0; k < xa.n_in; k++) total += xa.in_n[k] * so_dtype_size(so_input_elem_type(orig->model, k));
    if (o->inputs_path) {
        file = so_xmalloc(total ? total : 1);
        if (so_read_file_exact(o->inputs_path, file, total) != SO_OK) goto done;
    }
    static const char *const names[] = {"uniform [-1,1)", "large (x1000)", "all-negative", "all-zero", "--inputs"};
    const int n_sets = o->inputs_path ? 5 : 4;
    for (int set = 0; set < n_sets; set++) {
        double scale = set == 1 ? 1000.0 : 1.0;
        uint64_t st = o->seed, ist = o->seed ^ 0x5eedf00dULL; /* integer inputs: their own stream */
        size_t off = 0;
        for (int32_t k = 0; k < xa.n_in; k++) {
            float *v = xa.in[k];
            size_t n = xa.in_n[k];
            const int32_t et = so_input_elem_type(orig->model, k);
            if (set == 4) so_to_storage(et, (const unsigned char *)file + off, (int64_t)n, v);
            else if (set == 3) memset(v, 0, n * (xa.in_wide[k] ? 8 : 4));
            else if (xa.in_wide[k]) so_feed_fill(orig, k, &ist, v); /* indices in range, 0/1 masks: not scaled */
            else {
                so_rng_fill(&st, v, n);
                for (size_t j = 0; j < n; j++) v[j] = set == 2 ? -fabsf(v[j]) : (float)(v[j] * scale);
            }
            off += n * so_dtype_size(et);
            memcpy(xb.in[k], v, n * (xa.in_wide[k] ? 8 : 4));
        }
        int timed = o->time_it && set == 0;
        if (run_graph(orig, o->threads, &xa, timed ? &r->lat_before_ms : NULL) != SO_OK) {
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
        if (run_graph(opt, o->threads, &xb, timed ? &r->lat_after_ms : NULL) != SO_OK) {
            snprintf(r->why, sizeof r->why, "%s inputs: the optimized graph does not run: %s", names[set], so_error());
            r->worst = INFINITY;
            rc = SO_OK;
            goto done;
        }
        r->sets++;
        if (!compare(&xa, &xb, orig, names[set], scale, r)) {
            rc = SO_OK;
            goto done;
        }
    }
    r->agree = 1;
    rc = SO_OK;
done:
    free(file);
    io_free(&xa);
    io_free(&xb);
    return rc;
}
