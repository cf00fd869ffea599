/* fast.c - fast kernel selection: so_fast_select looks the node's operator up in a table expanded from ops.def (its kernel module's selection function, or "reference only"). */
#include "kset_names.h"

#include "fast.h"

#include <string.h>

#include "conv.h"
#include "deconv.h"
#include "elem.h"
#include "matmul.h"
#include "move.h"
#include "nchwc.h"
#include "norm.h"
#include "pool.h"

#ifdef SO_KSET_LEVEL
#define SO_NCHWC_LEVEL SO_KSET_LEVEL /* this kernel set's level picks the blocked kernels too */
#else
#define SO_NCHWC_LEVEL SO_ISA_SCALAR
#endif

/* the blocked-layout operators (kernels/nchwc.c, one set per level chosen by the level argument) */
static so_status nchwc_module(const so_fast_ctx *c, int32_t i, so_fast_kernel *k) { return so_nchwc_select(c, i, k, SO_NCHWC_LEVEL); }

/* The decision per operator (ops.def `lower` -> fast_<lower>): the selection function of the kernel
   module that binds its fast kernel (the module's switch has a case for it; a module asked about an
   operator it has no case for fails with a message), or FAST_REF_ONLY: the reference kernel always
   runs (sources, views and opaque nodes never run a kernel of their own). An operator added to ops.def
   without an entry here is an undeclared identifier below: the build fails. A selection function may
   still decline a node (k->run stays NULL: the reference kernel runs). */
#define FAST_REF_ONLY NULL
#define fast_input FAST_REF_ONLY
#define fast_weight FAST_REF_ONLY
#define fast_opaque FAST_REF_ONLY
#define fast_conv so_conv_select
#define fast_matmul so_matmul_select
#define fast_gemm so_matmul_select
#define fast_add so_elem_select
#define fast_sub so_elem_select
#define fast_mul so_elem_select
#define fast_div so_elem_select
#define fast_pow so_elem_select
#define fast_relu so_elem_select
#define fast_sigmoid so_elem_select
#define fast_tanh so_elem_select
#define fast_erf so_elem_select
#define fast_sqrt so_elem_select
#define fast_exp so_elem_select
#define fast_log so_elem_select
#define fast_neg so_elem_select
#define fast_reciprocal so_elem_select
#define fast_clip so_elem_select
#define fast_batchnorm so_norm_select
#define fast_maxpool so_pool_select
#define fast_avgpool so_pool_select
#define fast_lppool FAST_REF_ONLY
#define fast_globallppool FAST_REF_ONLY
#define fast_globalavgpool so_pool_select
#define fast_softmax so_norm_select
#define fast_reducemean so_norm_select
#define fast_layernorm so_norm_select
#define fast_rmsnorm FAST_REF_ONLY
#define fast_pad so_move_select
#define fast_concat so_move_select
#define fast_split so_move_select
#define fast_flatten FAST_REF_ONLY
#define fast_reshape FAST_REF_ONLY
#define fast_transpose so_move_select
#define fast_squeeze FAST_REF_ONLY
#define fast_unsqueeze FAST_REF_ONLY
#define fast_identity FAST_REF_ONLY
#define fast_expand FAST_REF_ONLY
#define fast_gather FAST_REF_ONLY
#define fast_slice so_move_select
#define fast_lstm so_matmul_select
#define fast_enlarge FAST_REF_ONLY
#define fast_const_pool FAST_REF_ONLY
#define fast_const_idconv FAST_REF_ONLY
#define fast_const_idmat FAST_REF_ONLY
#define fast_const_ones FAST_REF_ONLY
#define fast_bnfold_w FAST_REF_ONLY
#define fast_bnfold_b FAST_REF_ONLY
#define fast_hardsigmoid so_elem_select
#define fast_hardswish so_elem_select
#define fast_leakyrelu so_elem_select
#define fast_resize so_move_select
#define fast_reducesum so_norm_select
#define fast_nchwc_in nchwc_module
#define fast_nchwc_out nchwc_module
#define fast_conv_nchwc nchwc_module
#define fast_maxpool_nchwc nchwc_module
#define fast_avgpool_nchwc nchwc_module
#define fast_globalavgpool_nchwc nchwc_module
#define fast_concat_nchwc nchwc_module
#define fast_elu FAST_REF_ONLY
#define fast_abs FAST_REF_ONLY
#define fast_floor FAST_REF_ONLY
#define fast_ceil FAST_REF_ONLY
#define fast_round FAST_REF_ONLY
#define fast_sign FAST_REF_ONLY
#define fast_softplus FAST_REF_ONLY
#define fast_softsign FAST_REF_ONLY
#define fast_sin FAST_REF_ONLY
#define fast_cos FAST_REF_ONLY
#define fast_tan FAST_REF_ONLY
#define fast_asin FAST_REF_ONLY
#define fast_acos FAST_REF_ONLY
#define fast_atan FAST_REF_ONLY
#define fast_sinh FAST_REF_ONLY
#define fast_cosh FAST_REF_ONLY
#define fast_asinh FAST_REF_ONLY
#define fast_acosh FAST_REF_ONLY
#define fast_atanh FAST_REF_ONLY
#define fast_mish FAST_REF_ONLY
#define fast_selu FAST_REF_ONLY
#define fast_celu FAST_REF_ONLY
#define fast_thresholdedrelu FAST_REF_ONLY
#define fast_shrink FAST_REF_ONLY
#define fast_gelu FAST_REF_ONLY
#define fast_max FAST_REF_ONLY
#define fast_min FAST_REF_ONLY
#define fast_prelu FAST_REF_ONLY
#define fast_reducemax FAST_REF_ONLY
#define fast_reducemin FAST_REF_ONLY
#define fast_reduceprod FAST_REF_ONLY
#define fast_reducel1 FAST_REF_ONLY
#define fast_reducel2 FAST_REF_ONLY
#define fast_reducesumsquare FAST_REF_ONLY
#define fast_reducelogsum FAST_REF_ONLY
#define fast_reducelogsumexp FAST_REF_ONLY
#define fast_logsoftmax FAST_REF_ONLY
#define fast_hardmax FAST_REF_ONLY
#define fast_argmax FAST_REF_ONLY
#define fast_argmin FAST_REF_ONLY
#define fast_trilu FAST_REF_ONLY
#define fast_gatherelements FAST_REF_ONLY
#define fast_depthtospace FAST_REF_ONLY
#define fast_spacetodepth FAST_REF_ONLY
#define fast_nllloss FAST_REF_ONLY
#define fast_where FAST_REF_ONLY
#define fast_equal FAST_REF_ONLY
#define fast_less FAST_REF_ONLY
#define fast_greater FAST_REF_ONLY
#define fast_lessorequal FAST_REF_ONLY
#define fast_greaterorequal FAST_REF_ONLY
#define fast_isinf FAST_REF_ONLY
#define fast_isnan FAST_REF_ONLY
#define fast_convtranspose so_deconv_select
#define fast_lrn FAST_REF_ONLY
#define fast_scatterelements FAST_REF_ONLY
#define fast_gathernd FAST_REF_ONLY
#define fast_topk FAST_REF_ONLY
#define fast_det FAST_REF_ONLY
#define fast_not FAST_REF_ONLY
#define fast_and FAST_REF_ONLY
#define fast_or FAST_REF_ONLY
#define fast_xor FAST_REF_ONLY
#define fast_mod FAST_REF_ONLY
#define fast_scatternd FAST_REF_ONLY
#define fast_gridsample FAST_REF_ONLY
#define fast_cast FAST_REF_ONLY
#define fast_gru FAST_REF_ONLY
#define fast_rnn FAST_REF_ONLY
#define fast_conv3d FAST_REF_ONLY
#define fast_convtranspose3d FAST_REF_ONLY
#define fast_maxpool3d FAST_REF_ONLY
#define fast_avgpool3d FAST_REF_ONLY
#define fast_reversesequence FAST_REF_ONLY
#define fast_tfidfvectorizer FAST_REF_ONLY
#define fast_maxpoolidx FAST_REF_ONLY
#define fast_maxunpool FAST_REF_ONLY
#define fast_roialign FAST_REF_ONLY
#define fast_dft FAST_REF_ONLY
#define fast_stft FAST_REF_ONLY

typedef so_status (*select_fn)(const so_fast_ctx *, int32_t, so_fast_kernel *);
static const select_fn by_op[SO_OP_COUNT] = {
#define X(E, lower, onnx, mi, ma, no, fl, at, ac) [SO_OP_##E] = fast_##lower,
#include "../src/ops.def"
#undef X
};

/* the name the table gives each module, for so_fast_module (docs, coverage) */
static const char *module_name(select_fn f)
{
    return f == so_conv_select     ? "conv"
           : f == nchwc_module     ? "nchwc"
           : f == so_matmul_select ? "matmul"
           : f == so_elem_select   ? "elem"
           : f == so_norm_select   ? "norm"
           : f == so_pool_select   ? "pool"
           : f == so_move_select   ? "move"
           : f == so_deconv_select ? "deconv"
                                   : "?";
}

const char *so_fast_module(so_op op) { return op < 0 || op >= SO_OP_COUNT || !by_op[op] ? NULL : module_name(by_op[op]); }

so_status so_fast_select(const so_fast_ctx *c, int32_t i, so_fast_kernel *k)
{
    memset(k, 0, sizeof *k);
    const so_node *n = &c->g->nodes[i];
    for (int32_t q = 0; q < n->n_out; q++)
        if (n->out[q].rank < 0) return SO_OK;
    return by_op[n->op] ? by_op[n->op](c, i, k) : SO_OK;
}
