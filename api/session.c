/* session.c - superopt_session: a model loaded and planned once, queried for its inputs and outputs, run on caller-owned buffers without allocating. */
#include "api_priv.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/exec.h"
#include "../kernels/wait.h"
#include "../search/cost.h"
#include "../src/graph.h"
#include "../src/json.h"
#include "../src/onnx_io.h"

struct superopt_session {
    so_model *m;
    so_exec *e;
    int32_t n_in, n_out;
    superopt_tensor_info *in_info, *out_info; /* names point into the model's arena */
    int64_t *dims;                            /* every info's dims, back to back */
    const float **in_ptrs;                    /* the run's argument arrays, refilled per run */
    float **out_ptrs;
    void **scratch;                           /* per output: where the executor writes an output that is
                                                 not requested, or that is converted (int64 storage of an
                                                 int32 / bool output) */
    size_t *scratch_bytes;
    unsigned char *seen;                      /* n_in + n_out marks of one run */
    unsigned char *out_conv;                  /* per output: 1 when stored int64 but typed int32 / bool */
    void **in_stage;                          /* per input typed int32 / bool: its int64 storage, converted
                                                 per run (so_to_storage); NULL for float32 / int64 inputs,
                                                 which the executor reads in place */
    size_t charged;                           /* so_mem_charge'd for scratch */
    int threads;
    atomic_int busy;
    char *stats;
    char err[1024];
};

static superopt_status fail(superopt_session *s, superopt_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static superopt_status fail(superopt_session *s, superopt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return code;
}


void superopt_session_close(superopt_session *s)
{
    if (!s) return;
    so_exec_free(s->e);
    for (int32_t k = 0; s->scratch && k < s->n_out; k++) free(s->scratch[k]);
    for (int32_t k = 0; s->in_stage && k < s->n_in; k++) free(s->in_stage[k]);
    free(s->in_stage);
    so_mem_release(s->charged);
    so_model_free(s->m);
    free(s->in_info);
    free(s->out_info);
    free(s->dims);
    free(s->in_ptrs);
    free(s->out_ptrs);
    free(s->scratch);
    free(s->scratch_bytes);
    free(s->seen);
    free(s->out_conv);
    free(s->stats);
    free(s);
}

/* Everything after the load: the tensor infos, the scratch outputs, the executor. The message of a
   failure is the thread's (so_error). */
static so_status build(superopt_session *s, const struct superopt_config *c)
{
    so_model *m = s->m;
    const so_graph *g = m->graph;
    s->n_in = m->n_inputs;
    s->n_out = m->n_outputs;
    size_t n = (size_t)(s->n_in + s->n_out) + 1;
    s->in_info = calloc(n, sizeof *s->in_info);
    s->out_info = calloc(n, sizeof *s->out_info);
    s->dims = calloc(n * SO_MAX_RANK, sizeof *s->dims);
    s->in_ptrs = calloc(n, sizeof *s->in_ptrs);
    s->out_ptrs = calloc(n, sizeof *s->out_ptrs);
    s->scratch = calloc(n, sizeof *s->scratch);
    s->scratch_bytes = calloc(n, sizeof *s->scratch_bytes);
    s->seen = calloc(n, 1);
    s->out_conv = calloc(n, 1);
    s->in_stage = calloc(n, sizeof *s->in_stage);
    if (!s->in_stage || !s->in_info || !s->out_info || !s->dims || !s->in_ptrs || !s->out_ptrs || !s->scratch || !s->scratch_bytes || !s->seen || !s->out_conv)
        return so_errorc(SO_ERR_LIMIT, "%s: out of memory", m->path);
    int64_t *d = s->dims;
    for (int32_t k = 0; k < s->n_in; k++) {
        const so_shape *sh = &m->inputs[k].shape;
        const int32_t et = so_input_elem_type(m, k); /* float32, int64, int32 or bool (the importer refuses others) */
        int64_t numel = so_shape_numel(sh);
        if (numel < 0) return so_errorf("%s: input '%s' has an unknown shape (fix it with input_shape or dim)", m->path, m->inputs[k].name);
        superopt_tensor_info *t = &s->in_info[k];
        t->name = m->inputs[k].name;
        t->dtype = (superopt_dtype)et;
        t->rank = sh->rank;
        memcpy(d, sh->dim, (size_t)sh->rank * sizeof *d);
        t->dims = d;
        d += SO_MAX_RANK;
        t->bytes = (size_t)numel * so_dtype_size(et);
        if (so_dtype_storage(et) == SO_I64 && et != SO_I64) { /* int32 / bool: staged as int64 */
            size_t sb = (size_t)numel * 8;
            if (so_mem_charge(sb, "session input staging") != SO_OK) return so_error_prefix(m->path);
            s->charged += sb;
            s->in_stage[k] = malloc(sb ? sb : 1);
            if (!s->in_stage[k]) return so_errorc(SO_ERR_LIMIT, "%s: out of memory for input '%s'", m->path, t->name);
        }
    }
    for (int32_t k = 0; k < s->n_out; k++) {
        const so_shape *sh = &g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
        int64_t numel = so_shape_numel(sh);
        if (numel < 0) {
            so_graph_unknown_shape_error(g, g->outputs[k], m->outputs[k].name);
            return so_error_prefix(m->path);
        }
        superopt_tensor_info *t = &s->out_info[k];
        t->name = m->outputs[k].name;
        t->dtype = (superopt_dtype)so_graph_output_type(g, k);
        t->rank = sh->rank;
        memcpy(d, sh->dim, (size_t)sh->rank * sizeof *d);
        t->dims = d;
        d += SO_MAX_RANK;
        t->bytes = (size_t)numel * superopt_dtype_size(t->dtype);
        s->out_conv[k] = sh->dtype == SO_I64 && t->dtype != SUPEROPT_INT64;
        size_t sb = (size_t)numel * (sh->dtype == SO_I64 ? 8 : 4);
        if (so_mem_charge(sb, "session output buffers") != SO_OK) return so_error_prefix(m->path);
        s->charged += sb;
        s->scratch_bytes[k] = sb;
        s->scratch[k] = malloc(sb ? sb : 1);
        if (!s->scratch[k]) return so_errorc(SO_ERR_LIMIT, "%s: out of memory for output '%s'", m->path, t->name);
    }
    /* the session only runs the model: weights the fast kernels packed need not stay resident */
    so_exec_opts eo = {.threads = c ? (int)c->threads : 1, .reference = c && c->reference, .profile = c && c->profile,
                       .consume_weights = !(c && c->reference), .hugepages = c && c->hugepages && !c->reference};
    s->threads = eo.threads;
    /* the executor's plan-time conv choices recorded in the cost cache (search/cost.h: "pick" entries) are taken,
       and the ones this plan makes are added to it: every process on one cache (superopt optimize's, then every
       run's) plans the same kernels, timed once (cache_dir: the default cache; "" none) */
    so_cost_model cm;
    const int cached = !eo.reference && so_cost_init(&cm, SO_COST_MEASURED, eo.threads, c ? c->cache_dir : NULL) == SO_OK;
    if (so_exec_new(g, &eo, &s->e) != SO_OK) {
        if (cached) so_cost_free(&cm);
        return so_error_prefix(m->path);
    }
    if (cached) {
        so_cost_save(&cm); /* a cache that cannot be written: the choices are made again next time */
        so_cost_free(&cm);
    }
    return SO_OK;
}

static superopt_status open_common(const char *path, const void *data, size_t len, const superopt_config *cfg, superopt_session **out)
{
    if (!out) {
        so_errorf("superopt_session_open: out is NULL");
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    *out = NULL;
    if (!path || (!data && len)) {
        so_errorf("superopt_session_open: %s is NULL", path ? "data" : data ? "name" : "path");
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    superopt_session *s = calloc(1, sizeof *s);
    if (!s) {
        so_errorf("%s: out of memory", path);
        return so_api_fail_thread(SUPEROPT_LIMIT);
    }
    so_api_lock();
    so_status st = so_api_pins_apply(cfg);
    if (st == SO_OK) st = data ? so_onnx_load_buffer(path, data, len, &s->m) : so_onnx_load(path, &s->m);
    so_onnx_pins_clear();
    so_api_unlock();
    if (st == SO_OK) st = build(s, cfg);
    if (st != SO_OK) {
        superopt_session_close(s);
        return so_api_fail_thread(so_api_status(so_error_code()));
    }
    *out = s;
    return SUPEROPT_OK;
}

superopt_status superopt_session_open(const char *path, const superopt_config *cfg, superopt_session **out)
{
    return open_common(path, NULL, 0, cfg, out);
}

superopt_status superopt_session_open_bytes(const void *data, size_t len, const char *name, const superopt_config *cfg,
                                            superopt_session **out)
{
    if (!data) {
        so_errorf("superopt_session_open_bytes: data is NULL");
        if (out) *out = NULL;
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    return open_common(name ? name : "<bytes>", data, len, cfg, out);
}

size_t superopt_session_input_count(const superopt_session *s) { return s ? (size_t)s->n_in : 0; }
size_t superopt_session_output_count(const superopt_session *s) { return s ? (size_t)s->n_out : 0; }

static superopt_status info(superopt_session *s, size_t i, superopt_tensor_info *out, int is_out)
{
    if (!s) {
        so_errorf("superopt_session_%s_info: session is NULL", is_out ? "output" : "input");
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    size_t n = (size_t)(is_out ? s->n_out : s->n_in);
    if (!out || i >= n)
        return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s %zu requested, the model has %zu", s->m->path, is_out ? "output" : "input", i, n);
    *out = is_out ? s->out_info[i] : s->in_info[i];
    return SUPEROPT_OK;
}

superopt_status superopt_session_input_info(superopt_session *s, size_t i, superopt_tensor_info *out) { return info(s, i, out, 0); }
superopt_status superopt_session_output_info(superopt_session *s, size_t i, superopt_tensor_info *out) { return info(s, i, out, 1); }

static char *dims_str(int32_t rank, const int64_t *dims, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int32_t i = 0; i < rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

/* Finds tensor t (given at position pos) among infos; checks it. Returns its index, or -1 with the
   session's message set. */
static int32_t match(superopt_session *s, const superopt_tensor *t, size_t pos, const superopt_tensor_info *infos, int32_t n,
                     unsigned char *seen, const char *what)
{
    int32_t k = -1;
    if (t->name) {
        for (int32_t i = 0; i < n; i++)
            if (!strcmp(infos[i].name, t->name)) {
                k = i;
                break;
            }
        if (k < 0) {
            fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: no %s named '%s' (%s", s->m->path, what, t->name, n ? "the model's: " : "the model has none)");
            for (int32_t i = 0; i < n && strlen(s->err) + 64 < sizeof s->err; i++)
                snprintf(s->err + strlen(s->err), sizeof s->err - strlen(s->err), "%s'%s'%s", i ? ", " : "", infos[i].name, i == n - 1 ? ")" : "");
            return -1;
        }
    } else if (pos < (size_t)n)
        k = (int32_t)pos;
    else
        return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s #%zu given without a name, the model has %d %ss", s->m->path, what, pos, (int)n, what), -1;
    const superopt_tensor_info *want = &infos[k];
    if (seen[k]) return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s '%s' given twice", s->m->path, what, want->name), -1;
    if (t->dtype != want->dtype) {
        const char *dn = superopt_dtype_name(t->dtype);
        return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s '%s' is %s, given %s%s", s->m->path, what, want->name, superopt_dtype_name(want->dtype),
                    dn ? dn : "an unknown element type code ", dn ? "" : "(not a superopt_dtype)"), -1;
    }
    if (t->dims || what[0] == 'i') {
        int same = t->rank == want->rank && (t->dims || t->rank == 0);
        for (int32_t d = 0; same && d < t->rank; d++) same = t->dims[d] == want->dims[d];
        if (!same) {
            char a[256], b[256];
            return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s '%s' has shape %s, given %s", s->m->path, what, want->name,
                        dims_str(want->rank, want->dims, a, sizeof a), t->dims ? dims_str(t->rank, t->dims, b, sizeof b) : "no dims"), -1;
        }
    }
    if (!t->data && want->bytes) return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s '%s': data is NULL", s->m->path, what, want->name), -1;
    if (t->bytes < want->bytes)
        return fail(s, SUPEROPT_INVALID_ARGUMENT, "%s: %s '%s' needs a buffer of %zu bytes, given %zu", s->m->path, what, want->name, want->bytes, t->bytes),
               -1;
    seen[k] = 1;
    return k;
}

superopt_status superopt_session_run(superopt_session *s, const superopt_tensor *inputs, size_t n_inputs, superopt_tensor *outputs,
                                     size_t n_outputs)
{
    if (!s) {
        so_errorf("superopt_session_run: session is NULL");
        return so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
    }
    if (atomic_exchange(&s->busy, 1)) {
        /* s->err belongs to the running thread: this caller gets the thread's message */
        so_errorf("%s: superopt_session_run: the session is running on another thread (one run at a time per session)", s->m->path);
        return so_api_fail_thread(SUPEROPT_BUSY);
    }
    superopt_status rc = SUPEROPT_INVALID_ARGUMENT;
    if ((n_inputs && !inputs) || (n_outputs && !outputs)) {
        fail(s, rc, "%s: superopt_session_run: %s is NULL with a count of %zu", s->m->path, !inputs && n_inputs ? "inputs" : "outputs",
             !inputs && n_inputs ? n_inputs : n_outputs);
        goto done;
    }
    memset(s->seen, 0, (size_t)(s->n_in + s->n_out));
    for (size_t i = 0; i < n_inputs; i++) {
        int32_t k = match(s, &inputs[i], i, s->in_info, s->n_in, s->seen, "input");
        if (k < 0) goto done;
        s->in_ptrs[k] = inputs[i].data;
        if (s->in_stage[k]) { /* int32 / bool values into the int64 the graph computes with */
            so_to_storage((int32_t)s->in_info[k].dtype, inputs[i].data, (int64_t)(s->in_info[k].bytes / superopt_dtype_size(s->in_info[k].dtype)),
                          s->in_stage[k]);
            s->in_ptrs[k] = s->in_stage[k];
        }
    }
    for (int32_t k = 0; k < s->n_in; k++)
        if (!s->seen[k]) {
            fail(s, rc, "%s: input '%s' is not given", s->m->path, s->in_info[k].name);
            goto done;
        }
    unsigned char *oseen = s->seen + s->n_in;
    for (int32_t k = 0; k < s->n_out; k++) s->out_ptrs[k] = s->scratch[k];
    for (size_t i = 0; i < n_outputs; i++) {
        int32_t k = match(s, &outputs[i], i, s->out_info, s->n_out, oseen, "output");
        if (k < 0) goto done;
        if (!s->out_conv[k]) s->out_ptrs[k] = outputs[i].data;
    }
    if (so_exec_run(s->e, s->in_ptrs, s->out_ptrs) != SO_OK) {
        so_error_prefix(s->m->path);
        rc = fail(s, so_api_status(so_error_code()), "%s", so_error());
        goto done;
    }
    /* int32 / bool outputs: converted from the executor's int64 values */
    for (size_t i = 0; i < n_outputs; i++) {
        int32_t k = -1;
        for (int32_t j = 0; j < s->n_out && k < 0; j++)
            if (outputs[i].name ? !strcmp(outputs[i].name, s->out_info[j].name) : (size_t)j == i) k = j;
        if (k < 0 || !s->out_conv[k]) continue;
        so_from_storage((int32_t)s->out_info[k].dtype, s->scratch[k], (int64_t)(s->scratch_bytes[k] / 8), outputs[i].data);
    }
    rc = SUPEROPT_OK;
done:
    atomic_store(&s->busy, 0);
    return rc;
}

const char *superopt_session_stats(superopt_session *s)
{
    if (!s) {
        so_errorf("superopt_session_stats: session is NULL");
        so_api_fail_thread(SUPEROPT_INVALID_ARGUMENT);
        return NULL;
    }
    if (atomic_exchange(&s->busy, 1)) {
        so_errorf("%s: superopt_session_stats: the session is running on another thread", s->m->path);
        so_api_fail_thread(SUPEROPT_BUSY);
        return NULL;
    }
    so_sbuf b = {0};
    int32_t nodes = 0;
    for (int32_t i = 0; i < s->m->graph->n_nodes; i++)
        if (!(so_ops[s->m->graph->nodes[i].op].flags & SO_F_SOURCE)) nodes++;
    so_sbuf_printf(&b, "{");
    so_json_kstr(&b, "", "model", s->m->path);
    so_sbuf_printf(&b, ", \"nodes\": %d", (int)nodes);
    so_json_kstr(&b, ", ", "isa", so_exec_isa_name(s->e));
    so_json_kstr(&b, ", ", "blas", so_exec_blas_name(s->e));
    so_sbuf_printf(&b, ", \"threads\": %d, \"peak_activation_bytes\": %zu, \"weight_bytes\": %zu", s->threads,
                   so_exec_peak_activation_bytes(s->e), so_exec_weight_bytes(s->e));
    long wait_runs = 0, short_runs = 0;
    so_wait_counts(&wait_runs, &short_runs);
    so_sbuf_printf(&b, ", \"wait_runs\": %ld, \"short_spin_runs\": %ld", wait_runs, short_runs);
    if (so_exec_n_profiled_runs(s->e) > 0) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            so_exec_profile_print(s->e, f);
            fclose(f);
            so_json_kstr(&b, ", ", "profile", text);
            free(text);
        }
    }
    so_sbuf_printf(&b, "}");
    free(s->stats);
    s->stats = b.s;
    atomic_store(&s->busy, 0);
    return s->stats;
}

const char *superopt_session_error(const superopt_session *s) { return s ? s->err : "session is NULL"; }
