/* egraph.h - an e-graph of tensor operators (union-find over e-classes, hash-consing, congruence
   rebuild) that is acyclic after every rebuild (Tensat's cycle filtering). */
#ifndef SO_EGRAPH_H
#define SO_EGRAPH_H

#include "../src/graph.h"

/* The op of a projection e-node: value `ref` (the slot) of a multi-output e-class. A multi-output
   operator (split) is an e-node of a tuple class (n_out > 1); each of its values is a value class
   holding PROJ(slot, tuple) e-nodes, so that rules relate values, as Tensat does. */
#define SO_EG_PROJ (-1)

typedef struct so_enode {
    int32_t op;              /* so_op, or SO_EG_PROJ */
    int32_t n_in;
    int32_t ref;             /* INPUT / WEIGHT / OPAQUE: the node's ref; PROJ: the slot; else -1 */
    const so_attr *attr;     /* interned in the model (NULL for PROJ) */
    int32_t in;              /* first child in so_egraph.kids (n_in class ids, canonical after rebuild) */
    int32_t cls;             /* its class when added or last rebuilt (so_eg_find it) */
    int32_t orig;            /* node of the start graph it came from, or -1 */
    int32_t app;             /* rule application that added it (so_eg_add's caller's number), or -1 */
    const char *name;        /* ONNX node name (model arena) or NULL */
    uint8_t dead;            /* 1: dropped (duplicate after a merge, or would close a cycle) */
} so_enode;

typedef struct so_eclass {
    int32_t n_out;           /* 1: a value; > 1: a tuple (read through PROJ e-nodes) */
    so_shape *out;           /* n_out shapes (malloc'd) */
    int32_t *nodes, n_nodes, cap_nodes;       /* live e-nodes (canonical classes only) */
    int32_t *parents, n_parents, cap_parents; /* e-nodes with this class among their children */
    uint8_t constant;        /* computed from weights (and constants) only: folded when extracted */
} so_eclass;

/* An e-graph over one model (attributes interned there). Owns everything it holds; single-threaded. */
typedef struct so_egraph {
    so_model *model;
    so_enode *nodes;
    int32_t n_nodes, cap_nodes, n_live;
    int32_t *kids;
    int64_t n_kids, cap_kids;
    so_eclass *cls;
    int32_t *uf;             /* union-find parent per class id */
    int32_t n_cls, cap_cls, n_canon;
    so_hmap memo;            /* hash of (op, ref, attr, children) -> e-node ids (multi-valued) */
    int64_t merges, dropped_cyclic;
    int32_t last_node;       /* the e-node the last so_eg_add found or made */
    int32_t *stamp;          /* per class, scratch for searches */
    int32_t stamp_gen;
} so_egraph;

void so_eg_init(so_egraph *eg, so_model *m);
void so_eg_free(so_egraph *eg);
/* The canonical id of class c. */
int32_t so_eg_find(so_egraph *eg, int32_t c);
/* Adds the e-node (op, attr, ref, children kids[0..n_in)) whose class has n_out values of shapes
   out[0..n_out): returns the class of an equal live e-node if there is one (hash-consing), else a
   new class. *added (may be NULL) receives 1 when a new e-node was made; eg->last_node is that e-node
   (found or made). orig, app, name: see so_enode. */
int32_t so_eg_add(so_egraph *eg, int32_t op, const so_attr *attr, int32_t ref, const int32_t *kids, int32_t n_in,
                  const so_shape *out, int32_t n_out, int32_t orig, int32_t app, const char *name, int *added);
/* The class of PROJ(slot, tuple) (added when missing), a value of tuple class `tuple`. */
int32_t so_eg_proj(so_egraph *eg, int32_t tuple, int32_t slot, int32_t app);
/* 1 if class `from` reaches class `to` through children (from == to counts). */
int so_eg_reaches(so_egraph *eg, int32_t from, int32_t to);
/* Merges classes a and b (equal values: the caller guarantees it; same n_out and shapes, else
   returns -1 and merges nothing). Returns the merged class. A merge can close cycles (x merged
   with t(t(x))): so_eg_rebuild removes them; call it before matching or extracting. */
int32_t so_eg_merge(so_egraph *eg, int32_t a, int32_t b);
/* Restores the invariants after merges: children canonical, congruent e-nodes (equal op, attr,
   ref and canonical children) merged until none are left, duplicates dropped, cycles removed
   (Tensat's cycle filtering: per cycle the newest e-node taken in a class that keeps others is
   dropped; e-nodes left reading an emptied class dropped too), class lists (nodes,
   parents, constant) recomputed. Afterwards the e-graph is acyclic. Returns the number of
   congruence merges. */
int64_t so_eg_rebuild(so_egraph *eg);
/* Children of e-node n (n_in class ids). */
static inline const int32_t *so_eg_kids(const so_egraph *eg, int32_t n) { return eg->kids + eg->nodes[n].in; }
/* Classes in topological order (children first), canonical only: *n_out entries, malloc'd. */
int32_t *so_eg_topo(so_egraph *eg, int32_t *n_out);

#endif
