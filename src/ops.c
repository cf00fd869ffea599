/* ops.c - the static operator table built from ops.def. */
#include "ops.h"

#include <string.h>

const so_op_info so_ops[SO_OP_COUNT] = {
#define X(e, l, onnx, mi, ma, no, fl, at, act) {#l, onnx, mi, ma, no, fl, at, SO_##act},
#include "ops.def"
#undef X
};

const char *const so_act_names[SO_ACT_COUNT] = {"none", "relu", "sigmoid", "tanh", "clip"};
const char *const so_resize_coord_names[SO_RESIZE_COORD_COUNT] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                                                    "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
const char *const so_resize_nearest_names[4] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
const char *const so_ract_names[SO_RACT_COUNT] = {"Tanh", "Relu", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                                  "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
const unsigned char so_ract_params[SO_RACT_COUNT] = {0, 0, 0, 3, 1, 1, 3, 3, 1, 0, 0};
const float so_ract_default[SO_RACT_COUNT][2] = {[SO_RACT_LEAKYRELU] = {0.01f, 0.0f}, [SO_RACT_HARDSIGMOID] = {0.2f, 0.5f},
                                                 [SO_RACT_ELU] = {1.0f, 0.0f}};

so_op so_op_from_onnx(const char *op_type)
{
    for (int i = 0; i < SO_OP_COUNT; i++)
        if (so_ops[i].onnx && strcmp(so_ops[i].onnx, op_type) == 0) return (so_op)i;
    return SO_OP_OPAQUE;
}

int so_op_from_name(const char *name)
{
    for (int i = 0; i < SO_OP_COUNT; i++)
        if (strcmp(so_ops[i].name, name) == 0) return i;
    return -1;
}
