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

/* The uninterpreted functions of the encoding. */
typedef enum zfn {
    ZF_ADD, ZF_MUL, ZF_RELU, ZF_SIGMOID, ZF_TANH, ZF_MATMUL, ZF_CONV, ZF_TR, ZF_CONCAT, ZF_SPL,
    ZF_ENLARGE, ZF_AVGPOOL, ZF_MAXPOOL, ZF_CPOOL, ZF_CIDCONV, ZF_CIDMAT, ZF_PCOMP, ZF_PIDX, ZF_PINV,
    ZF_PSWAP, ZF_PID, ZF_BIAS, ZF_BN, ZF_BNFW, ZF_BNFB, ZF_BNFBC, ZF_BLK, ZF_UNBLK, ZF_CONVB,
    ZF_MAXPOOLC, ZF_GAP, ZF_POOLB, ZF_GAPB,
    ZF_COUNT
} zfn;

/* Tensor operators (integer attributes first), then permutation helpers; indexed by zfn, so a
   function is named by its enum and a renamed or missing one fails to compile. */
static const fsig sigs[ZF_COUNT] = {
    [ZF_ADD] = {"add", 0, 2, 0},
    [ZF_MUL] = {"mul", 0, 2, 0},
    [ZF_RELU] = {"relu", 0, 1, 0},
    [ZF_SIGMOID] = {"sigmoid", 0, 1, 0},
    [ZF_TANH] = {"tanh", 0, 1, 0},
    [ZF_MATMUL] = {"matmul", 0, 2, 0},
    [ZF_CONV] = {"conv", 5, 2, 0},
    [ZF_TR] = {"tr", 1, 1, 0},
    [ZF_CONCAT] = {"concat", 1, 2, 0},
    [ZF_SPL] = {"spl", 3, 1, 0},
    [ZF_ENLARGE] = {"enlarge", 2, 1, 0},
    [ZF_AVGPOOL] = {"avgpool", 6, 1, 0},
    [ZF_MAXPOOL] = {"maxpool", 6, 1, 0},
    [ZF_CPOOL] = {"cpool", 3, 0, 0},
    [ZF_CIDCONV] = {"cidconv", 3, 0, 0},
    [ZF_CIDMAT] = {"cidmat", 1, 0, 0},
    [ZF_PCOMP] = {"pcomp", 2, 0, 1},
    [ZF_PIDX] = {"pidx", 2, 0, 1},
    [ZF_PINV] = {"pinv", 2, 0, 1},
    [ZF_PSWAP] = {"pswap", 1, 0, 1},
    [ZF_PID] = {"pid", 1, 0, 1},
    [ZF_BIAS] = {"bias", 0, 2, 0},
    [ZF_BN] = {"bn", 1, 5, 0},
    [ZF_BNFW] = {"bnfw", 1, 3, 0},
    [ZF_BNFB] = {"bnfb", 1, 4, 0},
    [ZF_BNFBC] = {"bnfbc", 1, 5, 0},
    [ZF_BLK] = {"blk", 1, 1, 0},     /* nchwc_in: block b */
    [ZF_UNBLK] = {"unblk", 2, 1, 0}, /* nchwc_out: block b, channels c */
    [ZF_CONVB] = {"convb", 5, 2, 0}, /* conv_nchwc: as conv */
    [ZF_MAXPOOLC] = {"maxpoolc", 6, 1, 0}, /* max pooling with ceil_mode (no padding) */
    [ZF_GAP] = {"gap", 0, 1, 0},           /* global average pooling */
    [ZF_POOLB] = {"maxpoolb", 7, 1, 0},    /* maxpool_nchwc: kh kw sh sw ph pw ceil_mode (its definition's self-check) */
    [ZF_GAPB] = {"gapb", 0, 1, 0},         /* globalavgpool_nchwc (its definition's self-check) */
};
#define N_SIGS ZF_COUNT

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
Z3_ast vp_mk_fn(so_verifier *v, zfn k, const Z3_ast *ints, const Z3_ast *ts);
Z3_ast vp_zterm(so_verifier *v, const zenv *e, const ax_term *t);
so_status vp_verifier_init(so_verifier *v, int skip_axiom);

/* encode.c */
int vp_encode_rule(renc *e);

/* verify.c */
void vp_set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Z3_lbool vp_check_with_watchdog(Z3_context c, Z3_solver s, unsigned ms);


#endif
