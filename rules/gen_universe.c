/* gen_universe.c - generator universe: operator instances, variables and their seeded inputs, typing of an instance on argument types. */
#include "enum_priv.h"

#include "../src/shape.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- universe ---------------- */

/* The generator decision of every operator (ops.def), the one list of what the generator enumerates:
   GEN_DEFAULT (the default universe instantiates it, gen_universe_add_insts, in ops.def order),
   GEN_LAYOUT (only the layout universes do), GEN_OUTSIDE_DEFAULT (gen_universe_add_insts can
   instantiate it, but no universe does: no Z3 semantics yet) or GEN_NOT_IN_RULES (never enumerated:
   no rule mentions it). The generator's stages (typing gen_typecheck, residue semantics gen_eval.c,
   symbolic shapes gen_unify.c) handle the instances by their ops.def operator. An operator without
   a decision here is an undeclared identifier: the build fails. */
#define GEN_NOT_IN_RULES 0
#define GEN_DEFAULT 1
#define GEN_OUTSIDE_DEFAULT 2
#define GEN_LAYOUT 3
#define gen_input GEN_NOT_IN_RULES
#define gen_weight GEN_NOT_IN_RULES
#define gen_opaque GEN_NOT_IN_RULES
#define gen_conv GEN_DEFAULT
#define gen_matmul GEN_DEFAULT
#define gen_gemm GEN_NOT_IN_RULES
#define gen_add GEN_DEFAULT
#define gen_sub GEN_NOT_IN_RULES
#define gen_mul GEN_DEFAULT
#define gen_div GEN_NOT_IN_RULES
#define gen_pow GEN_NOT_IN_RULES
#define gen_relu GEN_DEFAULT
#define gen_sigmoid GEN_DEFAULT
#define gen_tanh GEN_DEFAULT
#define gen_erf GEN_NOT_IN_RULES
#define gen_sqrt GEN_NOT_IN_RULES
#define gen_exp GEN_NOT_IN_RULES
#define gen_log GEN_NOT_IN_RULES
#define gen_neg GEN_NOT_IN_RULES
#define gen_reciprocal GEN_NOT_IN_RULES
#define gen_clip GEN_NOT_IN_RULES
#define gen_batchnorm GEN_DEFAULT
#define gen_maxpool GEN_DEFAULT
#define gen_avgpool GEN_DEFAULT
#define gen_lppool GEN_NOT_IN_RULES
#define gen_globallppool GEN_NOT_IN_RULES
#define gen_globalavgpool GEN_LAYOUT /* by the extended layout universes */
#define gen_softmax GEN_NOT_IN_RULES
#define gen_reducemean GEN_NOT_IN_RULES
#define gen_layernorm GEN_NOT_IN_RULES
#define gen_rmsnorm GEN_NOT_IN_RULES
#define gen_pad GEN_NOT_IN_RULES
#define gen_concat GEN_DEFAULT
#define gen_split GEN_DEFAULT
#define gen_flatten GEN_NOT_IN_RULES
#define gen_reshape GEN_NOT_IN_RULES
#define gen_transpose GEN_DEFAULT
#define gen_squeeze GEN_NOT_IN_RULES
#define gen_unsqueeze GEN_NOT_IN_RULES
#define gen_identity GEN_NOT_IN_RULES
#define gen_expand GEN_NOT_IN_RULES
#define gen_gather GEN_NOT_IN_RULES
#define gen_slice GEN_NOT_IN_RULES
#define gen_lstm GEN_NOT_IN_RULES
#define gen_enlarge GEN_DEFAULT
#define gen_const_pool GEN_DEFAULT
#define gen_const_idconv GEN_DEFAULT
#define gen_const_idmat GEN_DEFAULT
#define gen_const_ones GEN_OUTSIDE_DEFAULT
#define gen_bnfold_w GEN_DEFAULT
#define gen_bnfold_b GEN_DEFAULT
#define gen_hardsigmoid GEN_NOT_IN_RULES
#define gen_hardswish GEN_NOT_IN_RULES
#define gen_leakyrelu GEN_NOT_IN_RULES
#define gen_elu GEN_NOT_IN_RULES
#define gen_nchwc_in GEN_LAYOUT      /* by the layout universes (b = 8, 16) */
#define gen_nchwc_out GEN_LAYOUT
#define gen_conv_nchwc GEN_LAYOUT
#define gen_maxpool_nchwc GEN_LAYOUT
#define gen_avgpool_nchwc GEN_LAYOUT
#define gen_globalavgpool_nchwc GEN_LAYOUT
#define gen_concat_nchwc GEN_NOT_IN_RULES
#define gen_resize GEN_NOT_IN_RULES
#define gen_reducesum GEN_NOT_IN_RULES

/* operators of other exporters and of the conformance suite: not in the rule language */
#define gen_abs GEN_NOT_IN_RULES
#define gen_floor GEN_NOT_IN_RULES
#define gen_ceil GEN_NOT_IN_RULES
#define gen_round GEN_NOT_IN_RULES
#define gen_sign GEN_NOT_IN_RULES
#define gen_softplus GEN_NOT_IN_RULES
#define gen_softsign GEN_NOT_IN_RULES
#define gen_sin GEN_NOT_IN_RULES
#define gen_cos GEN_NOT_IN_RULES
#define gen_tan GEN_NOT_IN_RULES
#define gen_asin GEN_NOT_IN_RULES
#define gen_acos GEN_NOT_IN_RULES
#define gen_atan GEN_NOT_IN_RULES
#define gen_sinh GEN_NOT_IN_RULES
#define gen_cosh GEN_NOT_IN_RULES
#define gen_asinh GEN_NOT_IN_RULES
#define gen_acosh GEN_NOT_IN_RULES
#define gen_atanh GEN_NOT_IN_RULES
#define gen_mish GEN_NOT_IN_RULES
#define gen_selu GEN_NOT_IN_RULES
#define gen_celu GEN_NOT_IN_RULES
#define gen_thresholdedrelu GEN_NOT_IN_RULES
#define gen_shrink GEN_NOT_IN_RULES
#define gen_gelu GEN_NOT_IN_RULES
#define gen_max GEN_NOT_IN_RULES
#define gen_min GEN_NOT_IN_RULES
#define gen_prelu GEN_NOT_IN_RULES
#define gen_reducemax GEN_NOT_IN_RULES
#define gen_reducemin GEN_NOT_IN_RULES
#define gen_reduceprod GEN_NOT_IN_RULES
#define gen_reducel1 GEN_NOT_IN_RULES
#define gen_reducel2 GEN_NOT_IN_RULES
#define gen_reducesumsquare GEN_NOT_IN_RULES
#define gen_reducelogsum GEN_NOT_IN_RULES
#define gen_reducelogsumexp GEN_NOT_IN_RULES
#define gen_logsoftmax GEN_NOT_IN_RULES
#define gen_hardmax GEN_NOT_IN_RULES
#define gen_argmax GEN_NOT_IN_RULES
#define gen_argmin GEN_NOT_IN_RULES
#define gen_trilu GEN_NOT_IN_RULES
#define gen_gatherelements GEN_NOT_IN_RULES
#define gen_depthtospace GEN_NOT_IN_RULES
#define gen_spacetodepth GEN_NOT_IN_RULES

#define gen_nllloss GEN_NOT_IN_RULES
#define gen_where GEN_NOT_IN_RULES

#define gen_equal GEN_NOT_IN_RULES
#define gen_less GEN_NOT_IN_RULES
#define gen_greater GEN_NOT_IN_RULES
#define gen_lessorequal GEN_NOT_IN_RULES
#define gen_greaterorequal GEN_NOT_IN_RULES
#define gen_isinf GEN_NOT_IN_RULES
#define gen_isnan GEN_NOT_IN_RULES

#define gen_convtranspose GEN_NOT_IN_RULES

#define gen_lrn GEN_NOT_IN_RULES
#define gen_scatterelements GEN_NOT_IN_RULES
#define gen_gathernd GEN_NOT_IN_RULES
#define gen_topk GEN_NOT_IN_RULES
#define gen_det GEN_NOT_IN_RULES
#define gen_not GEN_NOT_IN_RULES
#define gen_and GEN_NOT_IN_RULES
#define gen_or GEN_NOT_IN_RULES
#define gen_xor GEN_NOT_IN_RULES
#define gen_mod GEN_NOT_IN_RULES
#define gen_cast GEN_NOT_IN_RULES
#define gen_gru GEN_NOT_IN_RULES
#define gen_rnn GEN_NOT_IN_RULES
#define gen_conv3d GEN_NOT_IN_RULES
#define gen_convtranspose3d GEN_NOT_IN_RULES
#define gen_maxpool3d GEN_NOT_IN_RULES
#define gen_avgpool3d GEN_NOT_IN_RULES
#define gen_reversesequence GEN_NOT_IN_RULES
#define gen_tfidfvectorizer GEN_NOT_IN_RULES
#define gen_maxpoolidx GEN_NOT_IN_RULES
#define gen_maxunpool GEN_NOT_IN_RULES
#define gen_roialign GEN_NOT_IN_RULES
#define gen_dft GEN_NOT_IN_RULES
#define gen_stft GEN_NOT_IN_RULES
#define gen_gridsample GEN_NOT_IN_RULES
#define gen_scatternd GEN_NOT_IN_RULES

static const unsigned char gen_decision[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = gen_##l,
#include "../src/ops.def"
#undef X
};

int gen_enumerates(so_op op) { return gen_decision[op] == GEN_LAYOUT ? 1 : gen_decision[op]; }
int gen_in_default(so_op op) { return gen_decision[op] == GEN_DEFAULT; }

static gen_type T(int rank, int a, int b, int c, int d)
{
    gen_type t;
    memset(&t, 0, sizeof t);
    t.rank = (int8_t)rank;
    t.dim[0] = (int16_t)a;
    t.dim[1] = (int16_t)b;
    t.dim[2] = (int16_t)c;
    t.dim[3] = (int16_t)d;
    return t;
}

static gen_type T5(int a, int b, int c, int d, int e)
{
    gen_type t = T(5, a, b, c, d);
    t.dim[4] = (int16_t)e;
    return t;
}

static void add_var(gen_universe *u, const char *name, gen_type t, int role, int kernel)
{
    gen_var *v = &u->vars[u->n_vars++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    /* field by field: a struct copy need not carry the padding byte, and the variables are hashed as
       bytes (gen_prune.c var_groups) */
    v->t.rank = t.rank;
    for (int i = 0; i < 5; i++) v->t.dim[i] = t.dim[i];
    v->role = (int8_t)role;
    v->kernel = (int8_t)kernel;
    v->base = -1;
    int64_t n = gen_numel(&t);
    if (n > u->elems_max) u->elems_max = (int)n;
}

static void add_inst(gen_universe *u, so_op op, int act, int axis, int n_in, int n_out, gen_type ct)
{
    gen_inst *g = &u->insts[u->n_insts++];
    memset(g, 0, sizeof *g);
    g->op = (int16_t)op;
    g->act = (int8_t)act;
    g->axis = (int8_t)axis;
    g->n_in = (int8_t)n_in;
    g->n_out = (int8_t)n_out;
    g->ct.rank = ct.rank;
    for (int i = 0; i < 5; i++) g->ct.dim[i] = ct.dim[i];
    int64_t n = gen_numel(&ct);
    if (n > u->elems_max) u->elems_max = (int)n;
}

/* An instance with a window: stride (1 or 2), valid (no padding) and ceil_mode (pools, no padding). */
static void add_inst_win(gen_universe *u, so_op op, int n_in, int stride, int valid, int ceil)
{
    add_inst(u, op, SO_ACT_NONE, 0, n_in, 1, T(0, 0, 0, 0, 0));
    gen_inst *g = &u->insts[u->n_insts - 1];
    g->stride = (int8_t)stride;
    g->valid = (int8_t)valid;
    g->ceil = (int8_t)ceil;
}

void gen_universe_add_insts(gen_universe *u, const so_op *ops, int n_ops)
{
    gen_type none = T(0, 0, 0, 0, 0);
    for (int i = 0; i < n_ops; i++) {
        const so_op k = ops[i];
        switch (k) {
        case SO_OP_ADD: case SO_OP_MUL: add_inst(u, k, 0, 0, 2, 1, none); break;
        case SO_OP_TRANSPOSE: case SO_OP_ENLARGE: case SO_OP_RELU: case SO_OP_SIGMOID: case SO_OP_TANH:
        case SO_OP_AVGPOOL: case SO_OP_MAXPOOL: add_inst(u, k, 0, 0, 1, 1, none); break;
        case SO_OP_MATMUL:
            add_inst(u, k, SO_ACT_NONE, 0, 2, 1, none);
            add_inst(u, k, SO_ACT_RELU, 0, 2, 1, none);
            break;
        case SO_OP_CONV: /* without, then with a bias */
        case SO_OP_CONV_NCHWC:
            for (int n_in = 2; n_in <= 3; n_in++) {
                add_inst(u, k, SO_ACT_NONE, 0, n_in, 1, none);
                add_inst(u, k, SO_ACT_RELU, 0, n_in, 1, none);
            }
            break;
        case SO_OP_BATCHNORM: add_inst(u, k, 0, 0, 5, 1, none); break;
        case SO_OP_NCHWC_IN: case SO_OP_NCHWC_OUT: add_inst(u, k, 0, 0, 1, 1, none); break;
        case SO_OP_MAXPOOL_NCHWC: case SO_OP_AVGPOOL_NCHWC: case SO_OP_GLOBALAVGPOOL: case SO_OP_GLOBALAVGPOOL_NCHWC:
            add_inst(u, k, 0, 0, 1, 1, none);
            break;
        case SO_OP_BNFOLD_W: add_inst(u, k, 0, 0, 3, 1, none); break;
        case SO_OP_BNFOLD_B: /* bnfold_b(scale, bias, mean, var), then with the conv's bias variable */
            add_inst(u, k, 0, 0, 4, 1, none);
            add_inst(u, k, 0, 0, 5, 1, none);
            break;
        case SO_OP_CONCAT:
            for (int a = 0; a < 4; a++) add_inst(u, k, 0, a, 2, 1, none);
            break;
        case SO_OP_SPLIT:
            for (int a = 0; a < 4; a++) add_inst(u, k, 0, a, 1, 2, none);
            break;
        case SO_OP_CONST_POOL: add_inst(u, k, 0, 0, 0, 1, T(4, 2, 1, 3, 3)); break;
        case SO_OP_CONST_IDCONV: add_inst(u, k, 0, 0, 0, 1, T(4, 2, 2, 3, 3)); break;
        case SO_OP_CONST_IDMAT: add_inst(u, k, 0, 0, 0, 1, T(2, 4, 4, 0, 0)); break;
        case SO_OP_CONST_ONES: add_inst(u, k, 0, 0, 0, 1, T(2, 4, 4, 0, 0)); break;
        default: break; /* not in rules (gen_enumerates 0): no instance */
        }
    }
}

/* The default universe's operators in their enumeration order (the order numbers the rules of
   rules/default.rules, so it stays as it was): exactly the GEN_DEFAULT ones (tests/test_ops.c). */
static const so_op default_ops[] = {
    SO_OP_ADD, SO_OP_MUL, SO_OP_TRANSPOSE, SO_OP_MATMUL, SO_OP_CONV, SO_OP_ENLARGE, SO_OP_RELU, SO_OP_SIGMOID, SO_OP_TANH,
    SO_OP_AVGPOOL, SO_OP_MAXPOOL, SO_OP_CONCAT, SO_OP_SPLIT, SO_OP_BATCHNORM, SO_OP_CONST_POOL, SO_OP_CONST_IDCONV,
    SO_OP_CONST_IDMAT, SO_OP_BNFOLD_W, SO_OP_BNFOLD_B,
};

void gen_universe_default(gen_universe *u)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
    /* matrices */
    add_var(u, "A", T(2, 2, 4, 0, 0), GR_ANY, 0);
    add_var(u, "B", T(2, 4, 4, 0, 0), GR_ANY, 0);
    add_var(u, "C", T(2, 4, 4, 0, 0), GR_ANY, 0);
    add_var(u, "s", T(0, 0, 0, 0, 0), GR_ANY, 0);
    /* activations and kernels (channels 2: cheap fingerprints; symbols generalise them) */
    add_var(u, "X", T(4, 2, 2, 4, 5), GR_ANY, 0);
    add_var(u, "Y", T(4, 2, 2, 4, 5), GR_ANY, 0);
    add_var(u, "W", T(4, 2, 2, 3, 3), GR_ANY, 1);
    add_var(u, "V", T(4, 2, 2, 3, 3), GR_ANY, 1);
    add_var(u, "K", T(4, 2, 2, 1, 1), GR_ANY, 1);
    add_var(u, "H", T(4, 2, 2, 1, 3), GR_ANY, 1);
    add_var(u, "U", T(4, 2, 2, 3, 1), GR_ANY, 1);
    add_var(u, "G", T(4, 2, 1, 3, 3), GR_ANY, 1);
    /* per-channel parameters */
    add_var(u, "b", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    add_var(u, "bs", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    add_var(u, "bb", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    add_var(u, "bm", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    add_var(u, "bv", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    for (int i = 0; i < 4; i++) u->bn_param[i] = (int8_t)(u->n_vars - 4 + i);
    /* rank-3 activation (PyTorch Linear on [s0,s1,h]: matmul by a 2-D weight) */
    add_var(u, "Z", T(3, 2, 3, 4, 0), GR_ANY, 0);
    gen_universe_add_enlarged(u);
    /* sibling 1x1 conv with a bias (after the enlarged pseudo-variables: L has none), for the
       merge of sibling convs with biases: split(conv(X, concat(K, L), concat(b, c))) */
    add_var(u, "L", T(4, 2, 2, 1, 1), GR_ANY, 1);
    u->sib[0] = (int8_t)u->n_vars;
    add_var(u, "c", T(1, 2, 0, 0, 0), GR_PARAM, 0);
    u->sib[1] = (int8_t)u->n_vars;
    gen_universe_add_insts(u, default_ops, (int)SO_ARRAY_LEN(default_ops));
}

void gen_universe_layout(gen_universe *u, int block)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
    u->block = block;
    /* one block of channels (k = 1) keeps fingerprints cheap; the channel dims generalise to b*k */
    add_var(u, "X", T(4, 2, block, 4, 5), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_var(u, "Y", T(4, 2, block, 4, 5), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_var(u, "P", T5(2, 1, 4, 5, block), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_var(u, "Q", T5(2, 1, 4, 5, block), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_var(u, "K", T(4, block, block, 1, 1), GR_ANY, 1);
    u->vars[u->n_vars - 1].chan = 3;
    add_var(u, "W", T(4, block, block, 3, 3), GR_ANY, 1);
    u->vars[u->n_vars - 1].chan = 3;
    add_var(u, "b", T(1, block, 0, 0, 0), GR_PARAM, 0);
    u->vars[u->n_vars - 1].chan = 1;
    /* no fused activations (the executor fuses a following relu into either conv, so those rules
       are cost-neutral) and no tanh (it commutes with the reorders exactly as sigmoid does):
       every instance doubles the enumeration */
    gen_type none = T(0, 0, 0, 0, 0);
    add_inst(u, SO_OP_ADD, 0, 0, 2, 1, none);
    add_inst(u, SO_OP_RELU, 0, 0, 1, 1, none);
    add_inst(u, SO_OP_SIGMOID, 0, 0, 1, 1, none);
    add_inst(u, SO_OP_CONV, SO_ACT_NONE, 0, 2, 1, none);
    add_inst(u, SO_OP_CONV, SO_ACT_NONE, 0, 3, 1, none);
    add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, none);
    add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, none);
    add_inst(u, SO_OP_CONV_NCHWC, SO_ACT_NONE, 0, 2, 1, none);
    add_inst(u, SO_OP_CONV_NCHWC, SO_ACT_NONE, 0, 3, 1, none);
    add_inst(u, SO_OP_CONCAT, 0, 1, 2, 1, none); /* channel concat only */
}

/* A conv bias b and the batchnorm parameters bs bb bm bv of an extended layout universe ([block], channels). */
static void add_bias_bn(gen_universe *u, int block)
{
    add_var(u, "b", T(1, block, 0, 0, 0), GR_PARAM, 0);
    u->vars[u->n_vars - 1].chan = 1;
    static const char *bn[4] = {"bs", "bb", "bm", "bv"};
    for (int i = 0; i < 4; i++) {
        add_var(u, bn[i], T(1, block, 0, 0, 0), GR_PARAM, 0);
        u->vars[u->n_vars - 1].chan = 1;
        u->bn_param[i] = (int8_t)(u->n_vars - 1);
    }
}

/* The convs of a layout universe with one window (stride, unpadded): plain then blocked, each without then with a
   bias (a stride-1 same-padded window is a plain instance). */
static void add_conv_insts(gen_universe *u, int stride, int valid)
{
    for (int blocked = 0; blocked < 2; blocked++)
        for (int n_in = 2; n_in <= 3; n_in++) {
            const so_op op = blocked ? SO_OP_CONV_NCHWC : SO_OP_CONV;
            if (stride > 1 || valid) add_inst_win(u, op, n_in, stride, valid, 0);
            else add_inst(u, op, SO_ACT_NONE, 0, n_in, 1, T(0, 0, 0, 0, 0));
        }
}

/* batchnorm and the fold instances (bnfold_w; bnfold_b without, then with the conv's bias). */
static void add_fold_insts(gen_universe *u)
{
    gen_type none = T(0, 0, 0, 0, 0);
    add_inst(u, SO_OP_BATCHNORM, 0, 0, 5, 1, none);
    add_inst(u, SO_OP_BNFOLD_W, 0, 0, 3, 1, none);
    add_inst(u, SO_OP_BNFOLD_B, 0, 0, 4, 1, none);
    add_inst(u, SO_OP_BNFOLD_B, 0, 0, 5, 1, none);
}

void gen_universe_layout_ext(gen_universe *u, int block, int part)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
    u->block = block;
    /* 6x9 planes: a stride-2 window or a ceil_mode pool gives another plane size than the
       floor/same one, and no activation is mistaken for a (<= 3x3) kernel */
    add_var(u, "X", T(4, 2, block, 6, 9), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_var(u, "P", T5(2, 1, 6, 9, block), GR_ANY, 0);
    u->vars[u->n_vars - 1].chan = 1 << 1;
    add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
    add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
    if (part == 13) { /* grouped 3x3 convs of the concrete group 32 (ResNeXt-50 32x4d; O = C = 32*q channels, q per group,
                          symbolic): kernel G[64,2,3,3] on the 64 channels of X (q = 2: a dim of 1 would stay concrete),
                          stride 1 and 2 same-padded, plain and blocked, with and without bias, and the folds */
        memset(u, 0, sizeof *u);
        for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
        u->block = block;
        u->group = 32;
        add_var(u, "X", T(4, 2, 64, 6, 9), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "P", T5(2, 64 / block, 6, 9, block), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "G", T(4, 64, 2, 3, 3), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 1;
        add_var(u, "b", T(1, 64, 0, 0, 0), GR_PARAM, 0);
        u->vars[u->n_vars - 1].chan = 1;
        static const char *bn[4] = {"bs", "bb", "bm", "bv"};
        for (int i = 0; i < 4; i++) {
            add_var(u, bn[i], T(1, 64, 0, 0, 0), GR_PARAM, 0);
            u->vars[u->n_vars - 1].chan = 1;
            u->bn_param[i] = (int8_t)(u->n_vars - 1);
        }
        add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_conv_insts(u, 1, 0);
        add_conv_insts(u, 2, 0);
        add_fold_insts(u);
    } else if (part >= 11) { /* depthwise convs (MobileNet-v2/v3, EfficientNet, MNASNet, RegNet, ShuffleNet, ConvNeXt's 7x7 is not
                          here): kernel D[b*k,1,k,k] on the b*k channels of X, group=dw in rules; 3x3 (part 11) or 5x5
                          (part 12), stride 1 and 2 same-padded, plain and blocked, with and without bias, and the folds */
        const int k = part == 12 ? 5 : 3;
        memset(u, 0, sizeof *u);
        for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
        u->block = block;
        u->dw = 1;
        u->kmax = k;
        add_var(u, "X", T(4, 2, block, k == 5 ? 9 : 6, k == 5 ? 11 : 9), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "P", T5(2, 1, k == 5 ? 9 : 6, k == 5 ? 11 : 9, block), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "D", T(4, block, 1, k, k), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 1;
        add_bias_bn(u, block);
        add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_conv_insts(u, 1, 0);
        add_conv_insts(u, 2, 0);
        add_fold_insts(u);
    } else if (part == 0) { /* strided convs (ResNet's 3x3/2 pad 1 and 1x1/2 downsample), their batchnorm folds */
        add_var(u, "K", T(4, block, block, 1, 1), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 3;
        add_var(u, "W", T(4, block, block, 3, 3), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 3;
        add_bias_bn(u, block);
        /* windows (stride, unpadded): 2 same-padded; unpadded 3x3 at stride 2 and 1 (Inception-v3; on K the
           unpadded instance is the same-padded one); each plain and blocked, with and without bias */
        static const int win[3][2] = {{2, 0}, {2, 1}, {1, 1}};
        for (int k = 0; k < 3; k++) add_conv_insts(u, win[k][0], win[k][1]);
        add_fold_insts(u);
    } else if (part == 10) { /* classifier (padded output channels): a 1x1 conv of b*k channels to 1000 (concrete: the
                                ImageNet classes, 62.5 blocks of 16, padded to 63), plain and blocked, with its relu and
                                global average pool (SqueezeNet's head); nchwc_out of a padded value names its 1000
                                channels (the instance's ct) */
        memset(u, 0, sizeof *u);
        for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
        u->block = block;
        u->padded = 1;
        add_var(u, "X", T(4, 2, block, 6, 9), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "P", T5(2, 1, 6, 9, block), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "K", T(4, 1000, block, 1, 1), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        u->vars[u->n_vars - 1].fixed = 1 << 0;
        add_var(u, "b", T(1, 1000, 0, 0, 0), GR_PARAM, 0);
        u->vars[u->n_vars - 1].fixed = 1 << 0;
        gen_type none = T(0, 0, 0, 0, 0);
        add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, T(1, 1000, 0, 0, 0)); /* the padded one */
        add_conv_insts(u, 1, 0);
        add_inst(u, SO_OP_RELU, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_GLOBALAVGPOOL, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_GLOBALAVGPOOL_NCHWC, 0, 0, 1, 1, none);
    } else if (part >= 7) { /* stems (padded input channels): a conv of the 3 image channels (concrete, padded to one
                                block) to b*k channels, plain and blocked, with and without bias, and its folds; one
                                window per universe: 7x7/2 pad 3 (ResNet, DenseNet, GoogLeNet), 3x3/2 pad 1 (MobileNet,
                                EfficientNet, MNASNet, RegNet, ShuffleNet), 3x3/2 unpadded (SqueezeNet, Inception-v3) */
        memset(u, 0, sizeof *u);
        for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
        u->block = block;
        u->padded = 1;
        u->kmax = 7;
        add_var(u, "X", T(4, 2, 3, 17, 19), GR_ANY, 0); /* the stride-2 outputs (>= 8x9) larger than any kernel */
        u->vars[u->n_vars - 1].fixed = 1 << 1;
        static const int sk[3] = {7, 3, 3}, svalid[3] = {0, 0, 1};
        int si = (part - 7) % 3;
        add_var(u, "W", T(4, block, 3, sk[si], sk[si]), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 1;
        u->vars[u->n_vars - 1].fixed = 1 << 1;
        add_bias_bn(u, block);
        gen_type none = T(0, 0, 0, 0, 0);
        add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, none);
        add_conv_insts(u, 2, svalid[si]);
        add_fold_insts(u);
    } else if (part >= 2) { /* stride-1 same-padded convs with one kernel of 1x3, 3x1, 5x5, 1x7, 7x1 (part 2..6,
                                Inception) and their folds: one kernel per universe (no graph mixes two) */
        memset(u, 0, sizeof *u);
        for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
        u->block = block;
        u->kmax = 7;
        add_var(u, "X", T(4, 2, block, 9, 11), GR_ANY, 0); /* planes larger than the 7x7 kernels */
        u->vars[u->n_vars - 1].chan = 1 << 1;
        add_var(u, "P", T5(2, 1, 9, 11, block), GR_ANY, 0);
        u->vars[u->n_vars - 1].chan = 1 << 1;
        static const char *kn[5] = {"H", "U", "F", "S", "T"};
        static const int kh[5] = {1, 3, 5, 1, 7}, kw[5] = {3, 1, 5, 7, 1};
        int ki = (part - 2) % 5;
        add_var(u, kn[ki], T(4, block, block, kh[ki], kw[ki]), GR_ANY, 1);
        u->vars[u->n_vars - 1].chan = 3;
        add_bias_bn(u, block);
        gen_type none = T(0, 0, 0, 0, 0);
        add_inst(u, SO_OP_NCHWC_IN, 0, 0, 1, 1, none);
        add_inst(u, SO_OP_NCHWC_OUT, 0, 0, 1, 1, none);
        add_conv_insts(u, 1, 0);
        add_fold_insts(u);
    } else { /* pools: 3x3/2 pad 1 (ResNet), 3x3/2 ceil_mode (SqueezeNet, GoogLeNet), global average */
        add_inst_win(u, SO_OP_MAXPOOL, 1, 2, 0, 0);
        add_inst_win(u, SO_OP_MAXPOOL_NCHWC, 1, 2, 0, 0);
        add_inst_win(u, SO_OP_MAXPOOL, 1, 2, 1, 1);
        add_inst_win(u, SO_OP_MAXPOOL_NCHWC, 1, 2, 1, 1);
        add_inst_win(u, SO_OP_MAXPOOL, 1, 2, 1, 0); /* 3x3/2 unpadded, floor (Inception-v3) */
        add_inst_win(u, SO_OP_MAXPOOL_NCHWC, 1, 2, 1, 0);
        add_inst_win(u, SO_OP_AVGPOOL, 1, 1, 1, 0); /* 3x3/1 unpadded average (Inception-v3 after its explicit Pad) */
        add_inst_win(u, SO_OP_AVGPOOL_NCHWC, 1, 1, 1, 0);
        add_inst(u, SO_OP_GLOBALAVGPOOL, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_inst(u, SO_OP_GLOBALAVGPOOL_NCHWC, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
        add_inst(u, SO_OP_RELU, 0, 0, 1, 1, T(0, 0, 0, 0, 0));
    }
}

static void enlarge_vals(const gen_type *t, const uint32_t *x, uint32_t *y);

void gen_inputs_make(const gen_universe *u, uint64_t seed, gen_inputs *in)
{
    memset(in, 0, sizeof *in);
    for (int v = 0; v < u->n_vars; v++) {
        int64_t n = gen_numel(&u->vars[v].t);
        in->val[v] = so_xmalloc((size_t)(n ? n : 1) * sizeof(uint32_t));
        uint64_t s = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)v * 0x632be59bd9b4e019ULL + 1;
        for (int64_t i = 0; i < n; i++) in->val[v][i] = (uint32_t)(so_mix64(s + (uint64_t)i * 0x9e3779b97f4a7c15ULL) % GEN_P);
    }
    for (int v = 0; v < u->n_vars; v++)
        if (u->vars[v].role == GR_ENLARGED) enlarge_vals(&u->vars[u->vars[v].base].t, in->val[u->vars[v].base], in->val[v]);
}

static void enlarge_vals(const gen_type *t, const uint32_t *x, uint32_t *y)
{
    int O = t->dim[0], I = t->dim[1], kh = t->dim[2], kw = t->dim[3];
    int oh = (3 - kh) / 2, ow = (3 - kw) / 2;
    memset(y, 0, (size_t)O * I * 9 * sizeof *y);
    for (int o = 0; o < O * I; o++)
        for (int r = 0; r < kh; r++)
            for (int c = 0; c < kw; c++) y[o * 9 + (r + oh) * 3 + c + ow] = x[(o * kh + r) * kw + c];
}

void gen_universe_add_enlarged(gen_universe *u)
{
    int n = u->n_vars;
    for (int v = 0; v < n; v++) {
        const gen_var *b = &u->vars[v];
        if (!b->kernel || b->role != GR_ANY || (b->t.dim[2] == 3 && b->t.dim[3] == 3)) continue;
        if (u->n_vars >= GEN_MAX_VARS) return;
        char name[8];
        snprintf(name, sizeof name, "%s3", b->name);
        add_var(u, name, T(4, b->t.dim[0], b->t.dim[1], 3, 3), GR_ENLARGED, 1);
        u->vars[u->n_vars - 1].base = (int8_t)v;
    }
}

void gen_inputs_free(gen_inputs *in)
{
    for (int v = 0; v < GEN_MAX_VARS; v++) free(in->val[v]);
    memset(in, 0, sizeof *in);
}

/* ---------------- typing ---------------- */

/* Largest conv-kernel plane dim of the universe being enumerated (gen_universe.kmax, set by gen_run_universe:
   universes run one after the other; the enumeration threads only read it): a rank-4 tensor whose plane fits is
   a kernel, a larger one an activation. */
static int kernel_max = 3;
void gen_universe_activate(const gen_universe *u) { kernel_max = u->kmax > 0 ? u->kmax : 3; }
int enp_is_kernel_type(const gen_type *t) { return t->rank == 4 && t->dim[2] <= kernel_max && t->dim[3] <= kernel_max; }

int gen_win_out(const gen_inst *g, int in, int k)
{
    const int s = g->stride > 1 ? g->stride : 1, pad = g->valid ? 0 : k / 2;
    const int64_t o = so_window_out(in, k, s, pad, pad, 1, g->ceil);
    return o < 0 ? 0 : (int)o;
}

/* ---- the dim algebra over the generator's dims (int16_t, gen_type.dim): src/shape.h so_dim_alg ----
   Quiet: a candidate that misfits is the common case of enumeration, so a failing shape rule only returns
   SO_ERR (no message is formatted). Results outside int16_t are no dims of this instance. */
static const int16_t one_i16 = 1;
static int i16_fits(int64_t v, void *out)
{
    if (v < INT16_MIN || v > INT16_MAX) return 0;
    *(int16_t *)out = (int16_t)v;
    return 1;
}
static int i16_is_one(const void *cx, const void *d)
{
    (void)cx;
    return *(const int16_t *)d == 1;
}
static int i16_eq(const void *cx, const void *a, const void *b)
{
    (void)cx;
    return *(const int16_t *)a == *(const int16_t *)b;
}
static int i16_at_least(const void *cx, const void *d, int64_t k)
{
    (void)cx;
    return *(const int16_t *)d >= k;
}
static int i16_add(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    return i16_fits((int64_t)*(const int16_t *)a + *(const int16_t *)b, out);
}
static int i16_mul(const void *cx, const void *a, int64_t k, void *out)
{
    (void)cx;
    return k <= INT16_MAX && i16_fits(*(const int16_t *)a * k, out);
}
static int i16_muld(const void *cx, const void *a, const void *b, void *out)
{
    (void)cx;
    return i16_fits((int64_t)*(const int16_t *)a * *(const int16_t *)b, out);
}
static int i16_div(const void *cx, const void *a, int64_t k, int round_up, void *out)
{
    (void)cx;
    const int64_t v = *(const int16_t *)a;
    return k >= 1 && v >= 0 && i16_fits(v / k + (round_up && v % k), out);
}
static int i16_as_const(const void *cx, const void *d, int64_t *v)
{
    (void)cx;
    *v = *(const int16_t *)d;
    return 1;
}
static int i16_of_const(const void *cx, int64_t v, void *out)
{
    (void)cx;
    return i16_fits(v, out);
}
static int i16_window(const void *cx, const void *h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int ceil_mode, void *out)
{
    (void)cx;
    const int64_t o = so_window_out(*(const int16_t *)h, k, s, pb, pe, d, ceil_mode);
    return o >= 1 && i16_fits(o, out);
}
static void i16_print(const void *cx, const void *d, char *buf, size_t n)
{
    (void)cx;
    snprintf(buf, n, "%d", (int)*(const int16_t *)d);
}
static const so_dim_alg dim_gen = {sizeof(int16_t), &one_i16, NULL, i16_is_one, i16_eq, i16_at_least, i16_add, i16_mul, i16_muld,
                                   i16_div, i16_as_const, i16_of_const, i16_window, NULL, i16_print, 1};

/* so_dims views of generator types: an input, and an output (zeroed: dims past the rank stay 0) */
#define GD(t) (&(so_dims){(t)->rank, (void *)(t)->dim})
static so_dims gd_out(gen_type *t)
{
    memset(t, 0, sizeof *t);
    return (so_dims){0, t->dim};
}

/* out[0..n) from a shape rule's result: 1 if it held */
static int gen_store(so_status st, const so_dims *od, gen_type *out, int n)
{
    for (int k = 0; k < n; k++) out[k].rank = (int8_t)od[k].rank;
    return st == SO_OK;
}

/* the window attributes of instance g over a kh x kw kernel: stride g->stride, same padding (k/2) unless valid */
static so_attr win_attr(const gen_inst *g, int kh, int kw)
{
    const int s = g->stride > 1 ? g->stride : 1;
    so_attr a = {.kernel = {kh, kw}, .stride = {s, s}, .ceil_mode = g->ceil, .group = 1};
    if (!g->valid) a.pad[0] = a.pad[2] = kh / 2, a.pad[1] = a.pad[3] = kw / 2;
    return a;
}

/* Typing: the universe's restrictions on what an instance may take (kernel vs activation, the layout universe's
   block, the bias-add forms, ...) and then the operator's shape rule (src/shape.c so_dims_*, the one statement
   the importer and the rule checker use) over the generator's dims. */
int gen_typecheck(const gen_universe *u, int inst, const gen_type *in, int n_in, int split_cut, gen_type *out)
{
    const gen_inst *g = &u->insts[inst];
    const so_dim_alg *A = &dim_gen;
    so_dims od = gd_out(&out[0]);
    (void)n_in;
#define GEN_RULE(CALL) return gen_store((CALL), &od, out, 1)
    switch (g->op) {
    case SO_OP_ADD:
        /* bias add: a vector [k] + a rank-3 activation [s0,s1,k] (numpy broadcasting on the last
           axis, the bias-first form PyTorch exports for Linear on 3-D input); else two equal types */
        if (!(in[0].rank == 1 && in[1].rank == 3 && in[0].dim[0] == in[1].dim[2]) && (!enp_type_eq(&in[0], &in[1]) || in[0].rank == 0))
            return 0;
        GEN_RULE(so_dims_bcast(A, GD(&in[0]), GD(&in[1]), &od));
    case SO_OP_MUL: /* by an equal type or a scalar */
        if (in[0].rank == 0 || (!enp_type_eq(&in[0], &in[1]) && in[1].rank != 0)) return 0;
        GEN_RULE(so_dims_bcast(A, GD(&in[0]), GD(&in[1]), &od));
    case SO_OP_TRANSPOSE:
        if (in[0].rank != 2) return 0;
        GEN_RULE(so_dims_transpose(A, NULL, 0, GD(&in[0]), &od));
    case SO_OP_MATMUL: /* [m,k] @ [k,n], or a rank-3 activation [s0,s1,k] @ [k,n] */
        if (in[0].rank < 2 || in[0].rank > 3 || in[1].rank != 2) return 0;
        GEN_RULE(so_dims_matmul(A, GD(&in[0]), GD(&in[1]), &od));
    case SO_OP_CONV: { /* an activation by a kernel of odd plane dims; the group is what the channels give */
        const gen_type *x = &in[0], *w = &in[1];
        if (x->rank != 4 || enp_is_kernel_type(x) || !enp_is_kernel_type(w) || w->dim[2] % 2 == 0 || w->dim[3] % 2 == 0 ||
            x->dim[1] % w->dim[1])
            return 0;
        so_attr a = win_attr(g, w->dim[2], w->dim[3]);
        a.group = x->dim[1] / w->dim[1];
        GEN_RULE(so_dims_conv(A, &a, GD(x), GD(w), gen_biased(g) ? GD(&in[2]) : NULL, &od));
    }
    case SO_OP_NCHWC_IN: { /* an activation whose channels fill whole blocks (or any count, padded universes) */
        if (in[0].rank != 4 || enp_is_kernel_type(&in[0]) || u->block < 1 || (in[0].dim[1] % u->block && !u->padded)) return 0;
        so_attr a = {.n_ints = 1, .ints = {u->block}};
        GEN_RULE(so_dims_nchwc_in(A, &a, GD(&in[0]), &od));
    }
    case SO_OP_NCHWC_OUT: {
        if (in[0].rank != 5 || in[0].dim[4] != u->block) return 0;
        int16_t bc[2] = {(int16_t)u->block, 0};
        if (g->ct.rank == 1) { /* a padded channel count (the classifier universe) */
            bc[1] = g->ct.dim[0];
        } else {
            for (int i = 0; u->padded && i < u->n_insts; i++) /* that many blocks hold the padded count: its instance's */
                if (u->insts[i].op == SO_OP_NCHWC_OUT && u->insts[i].ct.rank == 1 &&
                    (u->insts[i].ct.dim[0] + u->block - 1) / u->block == in[0].dim[1])
                    return 0;
            if (!i16_mul(NULL, &in[0].dim[1], u->block, &bc[1])) return 0;
        }
        GEN_RULE(so_dims_nchwc_out(A, &(so_dims){2, bc}, GD(&in[0]), &od));
    }
    case SO_OP_CONV_NCHWC: { /* blocked activation by a kernel of whole blocks of output channels (unless padded) */
        const gen_type *x = &in[0], *w = &in[1];
        if (x->rank != 5 || x->dim[4] != u->block || !enp_is_kernel_type(w)) return 0;
        if (w->dim[2] % 2 == 0 || w->dim[3] % 2 == 0 || (w->dim[0] % u->block && !u->padded)) return 0;
        /* depthwise (dw universes: group = the channels) and grouped (group universes: u->group) blocked kernels */
        const int dw = u->dw && w->dim[1] == 1 && w->dim[0] == x->dim[1] * u->block;
        const int grouped = u->group > 1 && w->dim[1] * u->group == x->dim[1] * u->block && w->dim[0] == x->dim[1] * u->block;
        if (!dw && !grouped && !u->padded && w->dim[1] != x->dim[1] * u->block) return 0;
        so_attr a = win_attr(g, w->dim[2], w->dim[3]);
        a.group = dw ? x->dim[1] * u->block : grouped ? u->group : 1;
        GEN_RULE(so_dims_conv_nchwc(A, &a, GD(x), GD(w), gen_biased(g) ? GD(&in[2]) : NULL, &od));
    }
    case SO_OP_ENLARGE: /* a kernel of odd plane dims other than 3x3 centred in 3x3 */
        if (!enp_is_kernel_type(&in[0]) || (in[0].dim[2] == 3 && in[0].dim[3] == 3) || in[0].dim[2] % 2 == 0 || in[0].dim[3] % 2 == 0)
            return 0;
        GEN_RULE(so_dims_enlarge(A, &(so_attr){.kernel = {3, 3}}, GD(&in[0]), &od));
    case SO_OP_RELU:
    case SO_OP_SIGMOID:
    case SO_OP_TANH:
        if (in[0].rank == 0) return 0;
        GEN_RULE(so_dims_same(A, GD(&in[0]), &od));
    case SO_OP_AVGPOOL:
    case SO_OP_MAXPOOL: { /* 3x3 windows over an activation */
        if (in[0].rank != 4 || enp_is_kernel_type(&in[0])) return 0;
        const so_attr a = win_attr(g, 3, 3);
        GEN_RULE(so_dims_pool(A, &a, 0, GD(&in[0]), &od));
    }
    case SO_OP_AVGPOOL_NCHWC:
    case SO_OP_MAXPOOL_NCHWC: {
        if (in[0].rank != 5 || in[0].dim[4] != u->block) return 0;
        const so_attr a = win_attr(g, 3, 3);
        GEN_RULE(so_dims_pool_nchwc(A, &a, 0, GD(&in[0]), &od));
    }
    case SO_OP_GLOBALAVGPOOL:
        if (in[0].rank != 4 || enp_is_kernel_type(&in[0])) return 0;
        GEN_RULE(so_dims_globalpool(A, GD(&in[0]), &od));
    case SO_OP_GLOBALAVGPOOL_NCHWC:
        if (in[0].rank != 5 || in[0].dim[4] != u->block) return 0;
        GEN_RULE(so_dims_globalpool_nchwc(A, GD(&in[0]), &od));
    case SO_OP_CONCAT: {
        const so_dims x[2] = {*GD(&in[0]), *GD(&in[1])};
        GEN_RULE(so_dims_concat(A, g->axis, x, 2, &od));
    }
    case SO_OP_SPLIT: { /* in two at split_cut */
        if (g->axis >= in[0].rank || split_cut <= 0 || split_cut >= in[0].dim[g->axis]) return 0;
        int16_t cut[2] = {(int16_t)split_cut, (int16_t)(in[0].dim[g->axis] - split_cut)};
        so_dims o2[2] = {od, gd_out(&out[1])};
        return gen_store(so_dims_split(A, g->axis, GD(&in[0]), &(so_dims){2, cut}, 2, o2), o2, out, 2);
    }
    case SO_OP_BATCHNORM: {
        if (in[0].rank != 4 || enp_is_kernel_type(&in[0])) return 0;
        const so_dims p[4] = {*GD(&in[1]), *GD(&in[2]), *GD(&in[3]), *GD(&in[4])};
        GEN_RULE(so_dims_batchnorm(A, GD(&in[0]), p, &od));
    }
    case SO_OP_CONST_POOL:
    case SO_OP_CONST_IDCONV:
    case SO_OP_CONST_IDMAT:
    case SO_OP_CONST_ONES:
        GEN_RULE(so_dims_const(A, (so_op)g->op, GD(&g->ct), &od));
    case SO_OP_BNFOLD_W: {
        if (!enp_is_kernel_type(&in[0])) return 0;
        const so_dims p[2] = {*GD(&in[1]), *GD(&in[2])};
        GEN_RULE(so_dims_bnfold_w(A, GD(&in[0]), p, &od));
    }
    case SO_OP_BNFOLD_B: {
        so_dims v[5];
        const so_dims *pv[5];
        for (int k = 0; k < g->n_in && k < 5; k++) v[k] = *GD(&in[k]), pv[k] = &v[k];
        GEN_RULE(so_dims_bnfold_b(A, pv, g->n_in < 5 ? g->n_in : 5, &od));
    }
    default:
        return 0;
    }
#undef GEN_RULE
}

/* Quick filter: may a tensor of type t / role feed argument pos of an instance of operator kind (so_op)? */
int enp_arg_ok(int kind, int axis, int pos, const gen_type *t, int role)
{
    if (t->rank == 5) /* blocked values: reorders, blocked convs and pools, element-wise ops, channel concat */
        return (kind == SO_OP_NCHWC_OUT) || (kind == SO_OP_CONV_NCHWC && pos == 0) ||
               kind == SO_OP_MAXPOOL_NCHWC || kind == SO_OP_AVGPOOL_NCHWC || kind == SO_OP_GLOBALAVGPOOL_NCHWC ||
               kind == SO_OP_RELU || kind == SO_OP_SIGMOID || kind == SO_OP_TANH || kind == SO_OP_ADD || (kind == SO_OP_CONCAT && axis == 1);
    if (kind == SO_OP_NCHWC_OUT || kind == SO_OP_MAXPOOL_NCHWC || kind == SO_OP_AVGPOOL_NCHWC || kind == SO_OP_GLOBALAVGPOOL_NCHWC) return 0;
    if (kind == SO_OP_CONV_NCHWC)
        return pos == 1 ? enp_is_kernel_type(t) && role != GR_PARAM : pos == 2 && role == GR_PARAM;
    if (kind == SO_OP_NCHWC_IN) return t->rank == 4 && !enp_is_kernel_type(t) && role == GR_ANY;
    if (role == GR_PARAM)
        return (kind == SO_OP_CONV && pos == 2) /* pos 2: the bias */ || (kind == SO_OP_BATCHNORM && pos >= 1) || (kind == SO_OP_BNFOLD_W && pos >= 1) ||
               kind == SO_OP_BNFOLD_B ||
               (kind == SO_OP_ADD && pos == 0) || (kind == SO_OP_CONCAT && axis == 0); /* bias add, merged biases */
    if (role == GR_ENLARGED) return (kind == SO_OP_CONCAT && axis == 0) || kind == SO_OP_ADD;
    if (enp_is_kernel_type(t)) {
        /* conv kernels: only the weight arithmetic convs need (linearity, merging, enlarging) */
        switch (kind) {
        case SO_OP_CONV: return pos == 1;
        case SO_OP_ADD: case SO_OP_ENLARGE: return 1;
        case SO_OP_BNFOLD_W: return pos == 0;
        case SO_OP_MUL: return pos == 0;
        case SO_OP_CONCAT: case SO_OP_SPLIT: return axis <= 1;
        default: return 0;
        }
    }
    if (t->rank == 3) /* rank-3 activations: matmul left operand, add, concat/split only (noise control) */
        return (kind == SO_OP_MATMUL && pos == 0) || kind == SO_OP_ADD || kind == SO_OP_CONCAT || kind == SO_OP_SPLIT;
    switch (kind) {
    case SO_OP_CONV:
        if (pos == 0) return t->rank == 4 && !enp_is_kernel_type(t);
        if (pos == 1) return enp_is_kernel_type(t);
        return t->rank == 1;
    case SO_OP_MATMUL: return t->rank == 2 || (pos == 0 && t->rank == 3);
    case SO_OP_TRANSPOSE: return t->rank == 2;
    case SO_OP_ENLARGE: return enp_is_kernel_type(t);
    case SO_OP_AVGPOOL: case SO_OP_MAXPOOL: case SO_OP_GLOBALAVGPOOL: return t->rank == 4 && !enp_is_kernel_type(t);
    case SO_OP_BATCHNORM: return pos == 0 ? t->rank == 4 && !enp_is_kernel_type(t) : 0;
    case SO_OP_ADD: return t->rank > 0;
    case SO_OP_MUL: return pos == 0 ? t->rank > 0 : 1;
    case SO_OP_CONCAT: case SO_OP_SPLIT: return t->rank > 0;
    case SO_OP_RELU: case SO_OP_SIGMOID: case SO_OP_TANH: return t->rank > 0;
    default: return 1;
    }
}

void gen_universe_init(gen_universe *u)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < 4; i++) u->bn_param[i] = -1;
}

void gen_universe_add_var(gen_universe *u, const char *name, int rank, const int *dims, int role, int kernel)
{
    gen_type t = T(rank, rank > 0 ? dims[0] : 0, rank > 1 ? dims[1] : 0, rank > 2 ? dims[2] : 0, rank > 3 ? dims[3] : 0);
    add_var(u, name, t, role, kernel);
}
