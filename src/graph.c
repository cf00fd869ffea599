/* graph.c - model bookkeeping and the graph IR: build, clone, toposort, DCE, canonical hash. */
#include "graph.h"
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---------------- model ---------------- */

so_model *so_model_new(const char *path)
{
    so_model *m = so_xcalloc(1, sizeof *m);
    m->path = so_arena_strdup(&m->arena, path ? path : "<memory>");
    m->ir_version = 8;
    m->opset = 17;
    return m;
}

void so_model_free(so_model *m)
{
    if (!m) return;
    so_graph_free(m->graph);
    for (int32_t i = 0; i < m->n_weights; i++) free(m->weights[i].data);
    free(m->weights);
    free(m->attrs);
    so_hmap_free(&m->attr_index);
    so_arena_free(&m->arena);
    so_mem_release(m->mem_charged);
    free(m);
}

static uint64_t attr_hash(const so_attr *a) { return XXH3_64bits(a, sizeof *a); }

const so_attr *so_model_attr(so_model *m, const so_attr *a)
{
    uint64_t h = attr_hash(a), it = 0, v;
    while (so_hmap_next(&m->attr_index, h, &it, &v))
        if (memcmp(m->attrs[v], a, sizeof *a) == 0) return m->attrs[v];
    if (m->n_attrs == m->cap_attrs) {
        m->cap_attrs = m->cap_attrs ? m->cap_attrs * 2 : 256;
        m->attrs = so_xrealloc(m->attrs, (size_t)m->cap_attrs * sizeof *m->attrs);
    }
    so_attr *x = so_arena_dup(&m->arena, a, sizeof *a);
    so_hmap_add_multi(&m->attr_index, h, (uint64_t)m->n_attrs);
    m->attrs[m->n_attrs++] = x;
    return x;
}

const so_attr *so_model_attr_default(so_model *m)
{
    so_attr a;
    memset(&a, 0, sizeof a);
    return so_model_attr(m, &a);
}

int32_t so_model_add_weight(so_model *m, const char *name, so_shape shape, void *data)
{
    if (m->n_weights == m->cap_weights) {
        m->cap_weights = m->cap_weights ? m->cap_weights * 2 : 64;
        m->weights = so_xrealloc(m->weights, (size_t)m->cap_weights * sizeof *m->weights);
    }
    so_weight *w = &m->weights[m->n_weights];
    memset(w, 0, sizeof *w);
    w->name = so_arena_strdup(&m->arena, name);
    w->shape = shape;
    w->data = data;
    int64_t n = so_shape_numel(&shape);
    size_t elem = shape.dtype == SO_I64 ? 8 : 4;
    w->hash = data && n > 0 ? XXH3_64bits(data, (size_t)n * elem) : 0;
    return m->n_weights++;
}

/* ---------------- shapes ---------------- */

int64_t so_shape_numel(const so_shape *s)
{
    if (s->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dim[i];
    return n;
}

int so_shape_eq(const so_shape *a, const so_shape *b)
{
    if (a->rank != b->rank || a->dtype != b->dtype) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return 0;
    return 1;
}

so_shape so_shape_make(int rank, const int64_t *dims)
{
    so_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    s.dtype = SO_F32;
    for (int i = 0; i < rank && i < SO_MAX_RANK; i++) s.dim[i] = dims[i];
    return s;
}

/* ---------------- element types at the boundary ---------------- */

size_t so_dtype_size(int32_t t)
{
    switch (t) {
    case SO_F32: case SO_I32: return 4;
    case SO_I64: return 8;
    case SO_BOOL: return 1;
    default: return 0;
    }
}

int32_t so_dtype_storage(int32_t t)
{
    return t == SO_F32 ? SO_F32 : t == SO_I64 || t == SO_I32 || t == SO_BOOL ? SO_I64 : 0;
}

const char *so_dtype_name(int32_t t)
{
    switch (t) {
    case SO_F32: return "float32";
    case SO_I32: return "int32";
    case SO_I64: return "int64";
    case SO_BOOL: return "bool";
    default: return "of another element type";
    }
}

void so_to_storage(int32_t t, const void *src, int64_t n, void *dst)
{
    int64_t *d = dst;
    if (t == SO_I32)
        for (int64_t i = 0; i < n; i++) d[i] = ((const int32_t *)src)[i];
    else if (t == SO_BOOL)
        for (int64_t i = 0; i < n; i++) d[i] = ((const unsigned char *)src)[i] != 0;
    else if (n > 0)
        memcpy(dst, src, (size_t)n * so_dtype_size(t));
}

void so_from_storage(int32_t t, const void *src, int64_t n, void *dst)
{
    const int64_t *s = src;
    if (t == SO_I32)
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)(uint32_t)(uint64_t)s[i];
    else if (t == SO_BOOL)
        for (int64_t i = 0; i < n; i++) ((unsigned char *)dst)[i] = s[i] != 0;
    else if (n > 0)
        memcpy(dst, src, (size_t)n * so_dtype_size(t));
}

int32_t so_graph_output_type(const so_graph *g, int32_t k)
{
    const so_node *nd = &g->nodes[g->outputs[k].node];
    int32_t storage = nd->out[g->outputs[k].slot].dtype, decl = g->model->outputs[k].declared_type;
    if (storage == SO_I64 && (decl == SO_I32 || decl == SO_I64 || decl == SO_BOOL)) return decl;
    int32_t wt = nd->op == SO_OP_WEIGHT ? g->model->weights[nd->ref].onnx_type : 0;
    if (wt && so_dtype_storage(wt) == storage) return wt; /* not float16 & co: those are returned as float32 */
    return storage;
}

char *so_shape_str(const so_shape *s, char *buf, size_t n)
{
    if (n == 0) return buf;
    if (s->rank < 0) {
        snprintf(buf, n, "[?]");
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < s->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)s->dim[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

/* ---------------- graph ---------------- */

so_graph *so_graph_new(so_model *m)
{
    so_graph *g = so_xcalloc(1, sizeof *g);
    g->model = m;
    g->outputs = so_xcalloc((size_t)(m->n_outputs > 0 ? m->n_outputs : 1), sizeof *g->outputs);
    return g;
}

void so_graph_free(so_graph *g)
{
    if (!g) return;
    free(g->nodes);
    free(g->outputs);
    so_arena_free(&g->arena);
    free(g);
}

so_graph *so_graph_clone(const so_graph *g)
{
    so_graph *c = so_xcalloc(1, sizeof *c);
    c->model = g->model;
    c->cap_nodes = g->n_nodes + 16; /* room for a rewrite's nodes without a reallocation */
    c->n_nodes = g->n_nodes;
    c->nodes = so_xmalloc((size_t)c->cap_nodes * sizeof *c->nodes);
    memcpy(c->nodes, g->nodes, (size_t)g->n_nodes * sizeof *g->nodes);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        so_node *n = &c->nodes[i];
        n->in = so_arena_dup(&c->arena, n->in, (size_t)n->n_in * sizeof *n->in);
        n->out = so_arena_dup(&c->arena, n->out, (size_t)n->n_out * sizeof *n->out);
    }
    size_t no = (size_t)(g->model->n_outputs > 0 ? g->model->n_outputs : 1);
    c->outputs = so_xmalloc(no * sizeof *c->outputs);
    memcpy(c->outputs, g->outputs, no * sizeof *c->outputs);
    return c;
}

int32_t so_graph_add(so_graph *g, so_op op, const so_edge *in, int n_in, int n_out,
                     const so_attr *attr, int32_t ref, const char *name)
{
    if (g->n_nodes == g->cap_nodes) {
        g->cap_nodes = g->cap_nodes ? g->cap_nodes * 2 : 64;
        g->nodes = so_xrealloc(g->nodes, (size_t)g->cap_nodes * sizeof *g->nodes);
    }
    so_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->n_in = n_in;
    n->n_out = n_out;
    n->in = n_in ? so_arena_dup(&g->arena, in, (size_t)n_in * sizeof *in) : NULL;
    n->out = so_arena_alloc(&g->arena, (size_t)(n_out > 0 ? n_out : 1) * sizeof *n->out);
    n->attr = attr ? attr : so_model_attr_default(g->model);
    n->ref = ref;
    n->name = name;
    return g->n_nodes++;
}

const char *so_node_desc(const so_graph *g, int32_t i, char *buf, size_t n)
{
    const so_node *nd = &g->nodes[i];
    const char *type = so_ops[nd->op].onnx ? so_ops[nd->op].onnx : so_ops[nd->op].name;
    if (nd->op == SO_OP_OPAQUE && nd->ref >= 0 && nd->ref < g->model->n_opaque)
        type = g->model->opaque[nd->ref].op_type;
    if (nd->name && nd->name[0])
        snprintf(buf, n, "node '%s' (%s)", nd->name, type);
    else
        snprintf(buf, n, "node #%d (%s)", (int)i, type);
    return buf;
}

so_status so_graph_unknown_shape_error(const so_graph *g, so_edge e, const char *name)
{
    int32_t slot = e.slot;
    for (int32_t i = e.node, steps = 0; i >= 0 && i < g->n_nodes && steps <= g->n_nodes; steps++) {
        const so_node *nd = &g->nodes[i];
        int32_t next = -1;
        for (int k = 0; k < nd->n_in && next < 0; k++)
            if (nd->in[k].node >= 0 && g->nodes[nd->in[k].node].out[nd->in[k].slot].rank < 0) {
                next = nd->in[k].node;
                slot = nd->in[k].slot;
            }
        if (next < 0) {
            char desc[300];
            so_node_desc(g, i, desc, sizeof desc);
            if (nd->op == SO_OP_OPAQUE)
                return so_errorf("output '%s' has an unknown shape: %s is not supported and the file declares no shape for its output %d (value_info)",
                                 name, desc, (int)slot);
            return so_errorf("output '%s' has an unknown shape (from %s)", name, desc);
        }
        i = next;
    }
    return so_errorf("output '%s' has an unknown shape", name);
}

so_status so_graph_infer(so_graph *g, int32_t i)
{
    return so_shape_infer(g, i);
}

so_status so_graph_infer_all(so_graph *g)
{
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (so_graph_infer(g, i) != SO_OK) return SO_ERR;
    return SO_OK;
}

/* Ready-node heap ordered by (key, index). */
static int heap_less(const int32_t *key, int32_t a, int32_t b) { return key[a] < key[b] || (key[a] == key[b] && a < b); }

static void heap_up(int32_t *h, int32_t n, const int32_t *key)
{
    int32_t i = n - 1, v = h[i];
    while (i > 0 && heap_less(key, v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int32_t heap_take(int32_t *h, int32_t n, const int32_t *key)
{
    int32_t top = h[0], v = h[n - 1], i = 0;
    n--;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        int32_t best = v;
        if (l < n && heap_less(key, h[l], best)) { m = l; best = h[l]; }
        if (r < n && heap_less(key, h[r], best)) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (n > 0) h[i] = v;
    return top;
}

/* Kahn's algorithm over the users lists (CSR: users[start[v] .. start[v+1]) of node v).
   Breadth-first: ready nodes leave in the order they became ready (a FIFO over a scan in
   index order). keep_order: each node's key is the smallest index among itself and its
   transitive users, and the ready node with the smallest (key, index) goes next. Returns the
   number of nodes placed in order (< n: a cycle; indeg then is > 0 on it). */
static int32_t kahn(int32_t n, int32_t *indeg, const int32_t *start, const int32_t *users, int keep_order, int32_t *order)
{
    int32_t tail = 0;
    if (!keep_order) {
        int32_t head = 0;
        for (int32_t i = 0; i < n; i++)
            if (indeg[i] == 0) order[tail++] = i;
        while (head < tail) {
            int32_t v = order[head++];
            for (int32_t u = start[v]; u < start[v + 1]; u++)
                if (--indeg[users[u]] == 0) order[tail++] = users[u];
        }
        return tail;
    }
    /* keys: min over self and users, relaxed to a fixpoint (a few sweeps; bounded for a cycle) */
    int32_t *key = so_xmalloc(((size_t)n + 1) * sizeof *key);
    for (int32_t i = 0; i < n; i++) key[i] = i;
    for (int32_t sweep = 0, changed = 1; changed && sweep <= n; sweep++) {
        changed = 0;
        for (int32_t i = n - 1; i >= 0; i--)
            for (int32_t u = start[i]; u < start[i + 1]; u++)
                if (key[users[u]] < key[i]) {
                    key[i] = key[users[u]];
                    changed = 1;
                }
    }
    /* The ready node of smallest (key, index) goes next. A node's key is at most its users' keys,
       so a node made ready never has a smaller key than the node just placed: the keys placed never
       decrease. Ready nodes of a later key wait in that key's list (head[k], linked through next[]);
       only those of the current key are ordered, in a heap as small as one key's group (a node and
       the inputs only it leads to). The same order as one heap over every ready node, in linear
       time but for that small heap (the search sorts every graph it builds this way). */
    int32_t *heap = so_xmalloc(((size_t)n + 1) * sizeof *heap);
    int32_t *head = so_xmalloc(((size_t)n + 1) * sizeof *head);
    int32_t *next = so_xmalloc(((size_t)n + 1) * sizeof *next);
    for (int32_t k = 0; k < n; k++) head[k] = -1;
    int32_t n_heap = 0, cur = -1;
    for (int32_t i = 0; i < n; i++)
        if (indeg[i] == 0) {
            next[i] = head[key[i]];
            head[key[i]] = i;
        }
    for (;;) {
        if (n_heap == 0) {
            while (++cur < n && head[cur] < 0) {}
            if (cur >= n) break;
            for (int32_t v = head[cur]; v >= 0; v = next[v]) {
                heap[n_heap++] = v;
                heap_up(heap, n_heap, key);
            }
            head[cur] = -1;
        }
        int32_t v = heap_take(heap, n_heap--, key);
        order[tail++] = v;
        for (int32_t u = start[v]; u < start[v + 1]; u++) {
            int32_t w = users[u];
            if (--indeg[w] != 0) continue;
            if (key[w] <= cur) { /* the current key (lower only if the keys did not settle: a cycle) */
                heap[n_heap++] = w;
                heap_up(heap, n_heap, key);
            } else {
                next[w] = head[key[w]];
                head[key[w]] = w;
            }
        }
    }
    free(head);
    free(next);
    free(key);
    free(heap);
    return tail;
}

so_status so_graph_toposort(so_graph *g) { return so_graph_toposort_track(g, 0, NULL); }

so_status so_graph_toposort_track(so_graph *g, int keep_order, int32_t *origin)
{
    int32_t n = g->n_nodes;
    char desc[256];
    for (int32_t i = 0; i < n; i++) {
        const so_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in; k++) {
            so_edge e = nd->in[k];
            if (e.node < 0 || e.node >= n || e.slot < 0 || e.slot >= g->nodes[e.node].n_out)
                return so_errorf("%s: input %d refers to a missing tensor", so_node_desc(g, i, desc, sizeof desc), k);
        }
    }
    /* users adjacency (CSR) */
    int32_t *indeg = so_xcalloc((size_t)n + 1, sizeof *indeg);
    int32_t *start = so_xcalloc((size_t)n + 2, sizeof *start);
    int32_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        indeg[i] = g->nodes[i].n_in;
        for (int k = 0; k < g->nodes[i].n_in; k++) start[g->nodes[i].in[k].node + 1]++;
        total += g->nodes[i].n_in;
    }
    for (int32_t i = 0; i < n; i++) start[i + 1] += start[i];
    int32_t *users = so_xmalloc(((size_t)total + 1) * sizeof *users);
    int32_t *fill = so_xcalloc((size_t)n + 1, sizeof *fill);
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int32_t p = g->nodes[i].in[k].node;
            users[start[p] + fill[p]++] = i;
        }
    int32_t *order = so_xmalloc(((size_t)n + 1) * sizeof *order);
    so_status st = SO_OK;
    if (kahn(n, indeg, start, users, keep_order, order) != n) {
        int32_t bad = 0;
        for (int32_t i = 0; i < n; i++)
            if (indeg[i] > 0) { bad = i; break; }
        st = so_errorf("graph has a cycle through %s", so_node_desc(g, bad, desc, sizeof desc));
        goto done;
    }
    int identity = 1;
    for (int32_t i = 0; i < n && identity; i++)
        if (order[i] != i) identity = 0;
    if (!identity) { /* apply the permutation: newidx[old] */
        int32_t *newidx = fill; /* reuse */
        for (int32_t i = 0; i < n; i++) newidx[order[i]] = i;
        so_node *nodes = so_xmalloc(((size_t)n + 1) * sizeof *nodes);
        int32_t *org = origin ? so_xmalloc(((size_t)n + 1) * sizeof *org) : NULL;
        for (int32_t i = 0; i < n; i++) {
            nodes[i] = g->nodes[order[i]];
            if (org) org[i] = origin[order[i]];
            for (int k = 0; k < nodes[i].n_in; k++) nodes[i].in[k].node = newidx[nodes[i].in[k].node];
        }
        memcpy(g->nodes, nodes, (size_t)n * sizeof *nodes);
        if (org) memcpy(origin, org, (size_t)n * sizeof *org);
        free(nodes);
        free(org);
        for (int32_t o = 0; o < g->model->n_outputs; o++) g->outputs[o].node = newidx[g->outputs[o].node];
    }
done:
    free(indeg);
    free(start);
    free(users);
    free(fill);
    free(order);
    return st;
}

int so_graph_dce(so_graph *g) { return so_graph_dce_track(g, NULL); }

int so_graph_dce_track(so_graph *g, int32_t *origin)
{
    int32_t n = g->n_nodes;
    char *live = so_xcalloc((size_t)n + 1, 1);
    for (int32_t o = 0; o < g->model->n_outputs; o++) live[g->outputs[o].node] = 1;
    for (int32_t i = 0; i < n; i++)
        if (g->nodes[i].op == SO_OP_INPUT) live[i] = 1;
    /* nodes are in topological order: sweep backwards */
    for (int32_t i = n - 1; i >= 0; i--)
        if (live[i])
            for (int k = 0; k < g->nodes[i].n_in; k++) live[g->nodes[i].in[k].node] = 1;
    int32_t *newidx = so_xmalloc(((size_t)n + 1) * sizeof *newidx);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!live[i]) { newidx[i] = -1; continue; }
        newidx[i] = m;
        if (origin) origin[m] = origin[i];
        g->nodes[m++] = g->nodes[i];
    }
    if (m < n) {
        for (int32_t i = 0; i < m; i++)
            for (int k = 0; k < g->nodes[i].n_in; k++) g->nodes[i].in[k].node = newidx[g->nodes[i].in[k].node];
        for (int32_t o = 0; o < g->model->n_outputs; o++) g->outputs[o].node = newidx[g->outputs[o].node];
    }
    g->n_nodes = m;
    free(live);
    free(newidx);
    return (int)(n - m);
}

uint64_t *so_graph_node_hashes(const so_graph *g)
{
    uint64_t *h = so_xmalloc(((size_t)g->n_nodes + 1) * sizeof *h);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const so_node *nd = &g->nodes[i];
        XXH3_state_t *st = XXH3_createState();
        XXH3_64bits_reset(st);
        int32_t op = nd->op;
        XXH3_64bits_update(st, &op, sizeof op);
        XXH3_64bits_update(st, nd->attr, sizeof *nd->attr);
        if (nd->op == SO_OP_WEIGHT) {
            /* weights compare by content so that equal folded constants hash equal */
            const so_weight *w = &g->model->weights[nd->ref];
            XXH3_64bits_update(st, &w->hash, sizeof w->hash);
            XXH3_64bits_update(st, &w->shape, sizeof w->shape);
        } else if (nd->op == SO_OP_INPUT || nd->op == SO_OP_OPAQUE) {
            XXH3_64bits_update(st, &nd->ref, sizeof nd->ref);
        }
        int32_t no = nd->n_out;
        XXH3_64bits_update(st, &no, sizeof no);
        for (int k = 0; k < nd->n_in; k++) {
            uint64_t in[2] = {h[nd->in[k].node], (uint64_t)nd->in[k].slot};
            XXH3_64bits_update(st, in, sizeof in);
        }
        h[i] = XXH3_64bits_digest(st);
        XXH3_freeState(st);
    }
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t so_graph_hash(const so_graph *g)
{
    uint64_t *h = so_graph_node_hashes(g);
    size_t no = (size_t)g->model->n_outputs;
    uint64_t *buf = so_xmalloc(((size_t)g->n_nodes + 2 * no + 1) * sizeof *buf);
    for (size_t o = 0; o < no; o++) {
        buf[2 * o] = h[g->outputs[o].node];
        buf[2 * o + 1] = (uint64_t)g->outputs[o].slot;
    }
    memcpy(buf + 2 * no, h, (size_t)g->n_nodes * sizeof *h);
    qsort(buf + 2 * no, (size_t)g->n_nodes, sizeof *buf, cmp_u64);
    uint64_t r = XXH3_64bits(buf, (2 * no + (size_t)g->n_nodes) * sizeof *buf);
    free(buf);
    free(h);
    return r;
}

int32_t *so_graph_use_counts(const so_graph *g)
{
    int32_t *u = so_xcalloc((size_t)g->n_nodes + 1, sizeof *u);
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) u[g->nodes[i].in[k].node]++;
    for (int32_t o = 0; o < g->model->n_outputs; o++) u[g->outputs[o].node]++;
    return u;
}
