/* ops.h - the operator enum and static facts per operator, expanded from ops.def. */
#ifndef SO_OPS_H
#define SO_OPS_H

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
};

typedef enum so_op {
#define X(e, l, onnx, mi, ma, no, fl) SO_OP_##e,
#include "ops.def"
#undef X
    SO_OP_COUNT
} so_op;

typedef struct so_op_info {
    const char *name; /* lower-case name, used in rule files and reports */
    const char *onnx; /* ONNX op_type or NULL */
    int min_in, max_in, n_out;
    unsigned flags;
} so_op_info;

extern const so_op_info so_ops[SO_OP_COUNT];

/* Op for an ONNX op_type in the default domain; SO_OP_OPAQUE if unknown. */
so_op so_op_from_onnx(const char *op_type);
/* Op for a lower-case name (rule files); returns -1 if unknown. */
int so_op_from_name(const char *name);

/* Fused activation epilogues (attr.act). */
typedef enum so_act { SO_ACT_NONE = 0, SO_ACT_RELU, SO_ACT_SIGMOID, SO_ACT_TANH, SO_ACT_CLIP, SO_ACT_COUNT } so_act;
extern const char *const so_act_names[SO_ACT_COUNT];

#endif
