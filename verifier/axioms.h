/* axioms.h - the operator axioms as data (one table drives both the Z3 encoding and the numeric self-check). */
#ifndef SO_AXIOMS_H
#define SO_AXIOMS_H

#include <stddef.h>
#include <stdint.h>

#include "../src/common.h"

/* A term of the axiom language (s-expressions), e.g. "(matmul a (add b c))".
   Leaves are tensor variables (declared in so_axiom.vars), integer parameters (declared in
   so_axiom.params) or integer literals; applications name a function of the verifier's
   signature (see AXIOMS.md): tensor operators (add mul relu sigmoid tanh matmul conv tr
   concat spl enlarge avgpool maxpool cpool cidconv cidmat bias bn), shape functions (dim rank),
   permutation helpers (pcomp pidx pswap pid), integer arithmetic (+ - * div mod) and
   guard connectives (and not = >= <= > < ok same). */
typedef enum ax_kind { AX_TVAR, AX_IVAR, AX_INT, AX_APP } ax_kind;

typedef struct ax_term {
    ax_kind kind;
    int32_t var;              /* AX_TVAR / AX_IVAR: index into the axiom's vars / params */
    int64_t val;              /* AX_INT */
    char fn[12];              /* AX_APP: function name */
    int32_t n;                /* AX_APP: argument count */
    struct ax_term *arg[8];
} ax_term;

#define AX_MAX_VARS 12

/* One axiom: for all tensor variables and integer parameters, guard => lhs = rhs.
   Self-check template: each tensor variable gets a shape from `vars` ("a:n,c b:c,m":
   letters are size symbols drawn at random in [1,4], digits are literal dims) and each
   parameter a value from `params` ("ax:0..1 p:perm3": a range, or a permutation code of
   rank 3). */
typedef struct so_axiom {
    const char *name;
    const char *meaning;      /* one line, for AXIOMS.md and reports */
    const char *vars;         /* tensor variables with template shapes */
    const char *params;       /* integer parameters with sampling domains; "" if none */
    const char *guard;        /* s-expression (Bool) or "" for true */
    const char *lhs, *rhs;    /* s-expressions, both Tensor or both Int */
    int flags;                /* AXF_* */
} so_axiom;

enum {
    AXF_BIDIR = 1,            /* also trigger on the right-hand side (when it binds every variable) */
    AXF_SHAPE = 2,            /* an Int equation about shapes (checked on inferred shapes, not values) */
};

/* The parsed form of an axiom. */
typedef struct ax_parsed {
    const so_axiom *ax;
    int32_t n_vars, n_params;
    char var_names[AX_MAX_VARS][8];
    char var_shape[AX_MAX_VARS][32];   /* template dims, comma separated */
    char param_names[AX_MAX_VARS][8];
    char param_dom[AX_MAX_VARS][32];
    ax_term *guard, *lhs, *rhs;        /* guard NULL = true */
} ax_parsed;

/* All axioms, parsed once (thread-safe lazy init). Returns the count; *out points at a
   static array. Aborts with a message if the built-in table does not parse (a bug). */
int so_axioms_get(const ax_parsed **out);

/* Permutation codes used by the tr operator: code = rank*4096 + sum perm[i]*8^i. */
int64_t so_perm_code(int rank, const int64_t *perm);
/* Decodes; returns rank or -1 if the code is not a permutation. */
int so_perm_decode(int64_t code, int64_t *perm);

/* Numeric self-check of axiom k: `trials` random instances from its template (with some
   shapes perturbed to test that both sides are ill-typed together), evaluated with the
   reference kernels. *ok = 1 if every instance agrees (values within 1e-4 relative, or both
   sides ill-typed) and at least 3 instances were well-typed; else 0 and why explains. */
so_status so_axiom_selfcheck(int k, int trials, uint64_t seed, int *ok, int *n_evaluated,
                             char *why, size_t why_len);

#endif
