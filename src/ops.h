/* ops.h - the operator enum and static facts per operator, expanded from ops.def. */
#ifndef SO_OPS_H
#define SO_OPS_H

#include <stdint.h>

#define SO_MAX_IN 64 /* most inputs a node may have (Concat) */

enum {
    SO_F_SOURCE   = 1 << 0, /* no inputs: graph input or weight */
    SO_F_OPAQUE   = 1 << 1, /* unknown to the optimizer: kept verbatim */
    SO_F_UNARY    = 1 << 2, /* element-wise, one input, same shape out */
    SO_F_BINARY   = 1 << 3, /* element-wise, two inputs, numpy broadcasting */
    SO_F_VIEW     = 1 << 4, /* only changes the shape, data bytes unchanged */
    SO_F_ACT      = 1 << 5, /* has a fused activation epilogue (attr.act) */
    SO_F_INTERNAL = 1 << 6, /* not an ONNX op */
    SO_F_CONST    = 1 << 7, /* produces a constant from attributes alone */
    SO_F_LAYOUT   = 1 << 8, /* internal op that runs on activations (blocked layouts): costed and exported (custom domain), not only folded */
};

/* The attribute fields (of so_attr, graph.h) an operator uses: ops.def's attrs column. */
enum {
    SO_A_KERNEL = 1 << 0, SO_A_STRIDE = 1 << 1, SO_A_PAD = 1 << 2, SO_A_DIL = 1 << 3, SO_A_GROUP = 1 << 4,
    SO_A_AXIS = 1 << 5, SO_A_ACT = 1 << 6, SO_A_TRANS = 1 << 7, SO_A_KEEPDIMS = 1 << 8, SO_A_CIP = 1 << 9,
    SO_A_CEIL = 1 << 10, SO_A_HIDDEN = 1 << 11, SO_A_DIR = 1 << 12, SO_A_MODE = 1 << 13,
    SO_A_INTS = 1 << 14,  /* the int list (perm, axes, pads, slice quads) */
    SO_A_DIMS = 1 << 15,  /* the int list holds shape dims (target shape, split sizes): symbolic in rule files */
    SO_A_ALPHA = 1 << 16, /* alpha and beta */
    SO_A_CLIP = 1 << 17, SO_A_EPS = 1 << 18, SO_A_VALUE = 1 << 19,
};

/* Fused activation epilogues (attr.act). */
typedef enum so_act { SO_ACT_NONE = 0, SO_ACT_RELU, SO_ACT_SIGMOID, SO_ACT_TANH, SO_ACT_CLIP, SO_ACT_COUNT } so_act;
extern const char *const so_act_names[SO_ACT_COUNT];

typedef enum so_op {
#define X(e, l, ...) SO_OP_##e,
#include "ops.def"
#undef X
    SO_OP_COUNT
} so_op;

typedef struct so_op_info {
    const char *name; /* lower-case name, used in rule files and reports */
    const char *onnx; /* ONNX op_type or NULL */
    int min_in, max_in, n_out;
    unsigned flags;
    unsigned attrs; /* SO_A_* */
    int act;        /* activation role: the so_act an epilogue applies for it, SO_ACT_NONE if none */
} so_op_info;

extern const so_op_info so_ops[SO_OP_COUNT];

/* Op for an ONNX op_type in the default domain; SO_OP_OPAQUE if unknown. */
so_op so_op_from_onnx(const char *op_type);
/* Op for a lower-case name (rule files); returns -1 if unknown. */
int so_op_from_name(const char *name);

/* Resize's coordinate transformation modes (attr.ints[0] of SO_OP_RESIZE), ONNX names in order. */
enum { SO_RESIZE_HALF_PIXEL, SO_RESIZE_PYTORCH_HALF_PIXEL, SO_RESIZE_ALIGN_CORNERS, SO_RESIZE_ASYMMETRIC, SO_RESIZE_TF_HALF_PIXEL_FOR_NN,
       SO_RESIZE_TF_CROP_AND_RESIZE, SO_RESIZE_HALF_PIXEL_SYMMETRIC /* opset 19 */, SO_RESIZE_COORD_COUNT };
/* tf_crop_and_resize keeps its region and extrapolation value in Resize's ints[7..11] as float bits:
   start H, start W, end H, end W (fractions of the input extent), extrapolation value. */
static inline int64_t so_f32_to_bits(float f) { union { float f; int32_t i; } u = {f}; return u.i; }
static inline float so_bits_to_f32(int64_t b) { union { int32_t i; float f; } u = {(int32_t)b}; return u.f; }
extern const char *const so_resize_coord_names[SO_RESIZE_COORD_COUNT];
extern const char *const so_resize_nearest_names[4];

/* The activation functions of LSTM / GRU / RNN (ONNX's activations attribute), ONNX names in order. A recurrent
   node with non-default functions keeps them in attr.ints, three per function (kind, alpha bits, beta bits),
   direction-major then in ONNX's order (LSTM f g h, GRU f g, RNN f); n_ints 0: the defaults (RNN: mode). */
enum { SO_RACT_TANH, SO_RACT_RELU, SO_RACT_SIGMOID, SO_RACT_AFFINE, SO_RACT_LEAKYRELU, SO_RACT_THRESHOLDEDRELU,
       SO_RACT_SCALEDTANH, SO_RACT_HARDSIGMOID, SO_RACT_ELU, SO_RACT_SOFTSIGN, SO_RACT_SOFTPLUS, SO_RACT_COUNT };
extern const char *const so_ract_names[SO_RACT_COUNT];
/* Which of activation_alpha (bit 0) and activation_beta (bit 1) each function consumes, and the values it takes
   when the lists run out (ONNX Runtime's: LeakyRelu 0.01, HardSigmoid 0.2 / 0.5, Elu 1, otherwise 0). */
extern const unsigned char so_ract_params[SO_RACT_COUNT];
extern const float so_ract_default[SO_RACT_COUNT][2];


#endif
