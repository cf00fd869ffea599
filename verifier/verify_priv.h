/* verify_priv.h - private to the verifier (the verifier folder): operator signatures in Z3, the verifier state, helpers shared by encoding and proving. */
#ifndef SO_VERIFY_PRIV_H
#define SO_VERIFY_PRIV_H

#include "verify.h"
#include "axioms.h"
#include <z3.h>

/* ------------------------------------------------------------------ signature */

typedef struct fsig {
    const char *name;
    int n_int, n_t;
    int int_result; /* 0: Tensor, 1: Int */
} fsig;

/* Tensor operators (integer attributes first), then permutation helpers. */
static const fsig sigs[] = {
    {"add", 0, 2, 0},     {"mul", 0, 2, 0},     {"relu", 0, 1, 0},   {"sigmoid", 0, 1, 0}, {"tanh", 0, 1, 0},
    {"matmul", 0, 2, 0},  {"conv", 5, 2, 0},    {"tr", 1, 1, 0},     {"concat", 1, 2, 0},  {"spl", 3, 1, 0},
    {"enlarge", 2, 1, 0}, {"avgpool", 6, 1, 0}, {"maxpool", 6, 1, 0}, {"cpool", 3, 0, 0}, {"cidconv", 3, 0, 0},
    {"cidmat", 1, 0, 0},  {"pcomp", 2, 0, 1},   {"pidx", 2, 0, 1},   {"pinv", 2, 0, 1},    {"pswap", 1, 0, 1},
    {"pid", 1, 0, 1},     {"bias", 0, 2, 0},    {"bn", 1, 5, 0},     {"bnfw", 1, 3, 0},   {"bnfb", 1, 4, 0},
    {"bnfbc", 1, 5, 0},   {"blk", 1, 1, 0},     {"unblk", 2, 1, 0},  {"convb", 5, 2, 0},
};
#define N_SIGS ((int)SO_ARRAY_LEN(sigs))

struct so_verifier {
    Z3_context ctx;
    Z3_solver s;
    Z3_sort T, S, I, B;
    Z3_func_decl shp, srk, sdim, okf;
    Z3_func_decl fn[N_SIGS];
    int skip_axiom; /* -1, or an axiom left out (redundancy check) */
};

typedef struct zenv {
    Z3_ast var[AX_MAX_VARS], param[AX_MAX_VARS];
} zenv;

typedef struct gterm {
    Z3_ast t, ok;          /* tensor term; Bool: it is well-typed */
    int rank;
    Z3_ast dim[SO_MAX_RANK];
} gterm;

typedef struct renc {
    so_verifier *v;
    const so_rule *r;
    Z3_ast sym[SO_RULE_MAX_SYMS];
    gterm in[SO_RULE_MAX_INPUTS];
    gterm node[2][SO_RULE_MAX_NODES][SO_RULE_MAX_OUTPUTS];
    gterm all[SO_RULE_MAX_INPUTS + 2 * SO_RULE_MAX_NODES * SO_RULE_MAX_OUTPUTS];
    int n_all;
    char unsupported[96];
} renc;

/* z3env.c */
Z3_ast vp_mk_int(so_verifier *v, int64_t x);
Z3_ast vp_mk_and2(so_verifier *v, Z3_ast a, Z3_ast b);
Z3_ast vp_mk_eq(so_verifier *v, Z3_ast a, Z3_ast b);
Z3_ast vp_mk_add(so_verifier *v, Z3_ast a, Z3_ast b);
Z3_ast vp_mk_sub(so_verifier *v, Z3_ast a, Z3_ast b);
Z3_ast vp_mk_shp(so_verifier *v, Z3_ast t);
Z3_ast vp_mk_rank(so_verifier *v, Z3_ast t);
Z3_ast vp_mk_dim(so_verifier *v, Z3_ast t, Z3_ast i);
Z3_ast vp_mk_ok(so_verifier *v, Z3_ast t);
Z3_ast vp_mk_fn(so_verifier *v, const char *name, const Z3_ast *ints, const Z3_ast *ts);
Z3_ast vp_zterm(so_verifier *v, const zenv *e, const ax_term *t);
so_status vp_verifier_init(so_verifier *v, int skip_axiom);

/* encode.c */
int vp_encode_rule(renc *e);

/* verify.c */
void vp_set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Z3_lbool vp_check_with_watchdog(Z3_context c, Z3_solver s, unsigned ms);


#endif
