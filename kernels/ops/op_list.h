// The list of ops: IMR_FOR_EACH_OP(X) expands X(Enum, name, Args) once per
// op, in this order, inside namespace imr:
//   Enum  its value in imr::Op (Op::Conv2d)
//   name  its name: the Backend method, the word in messages ("conv2d") and
//         the stem of its files: kernels/ops/NAME.h/.cpp (what it computes,
//         Args, check_args, reference_NAME), kernels/cpu/NAME.cpp,
//         kernels/cuda/NAME.cu
//   Args  its argument struct (kernels/ops/NAME.h)
// What depends on the list is generated from it: the Op enum, op_name,
// Backend's op methods and prepare overloads (kernels/backend.h), each
// backend's declarations of its methods (IMR_BACKEND_OP_OVERRIDES) and a test
// per op (tests/test_ops.cpp). So a new op is a line here, its #include and
// its files: a backend that does not define its method does not link, and
// the op tests do not compile without its case table.
#pragma once

#include "activation.h"
#include "concat.h"
#include "conv2d.h"
#include "convert.h"
#include "depthwise_conv2d.h"
#include "elementwise.h"
#include "image_planes.h"
#include "layer_norm.h"
#include "pixel_shuffle.h"
#include "residual_block.h"
#include "simple_gate.h"
#include "window_mean.h"

#define IMR_FOR_EACH_OP(X)                                    \
    X(ResidualBlock, residual_block, ResidualBlockArgs)       \
    X(Conv2d, conv2d, Conv2dArgs)                             \
    X(PixelShuffle, pixel_shuffle, PixelShuffleArgs)          \
    X(Convert, convert, ConvertArgs)                          \
    X(Elementwise, elementwise, ElementwiseArgs)              \
    X(Activation, activation, ActivationArgs)                 \
    X(SimpleGate, simple_gate, SimpleGateArgs)                \
    X(Concat, concat, ConcatArgs)                             \
    X(LayerNorm, layer_norm, LayerNormArgs)                   \
    X(DepthwiseConv2d, depthwise_conv2d, DepthwiseConv2dArgs) \
    X(WindowMean, window_mean, WindowMeanArgs)                \
    X(ImagePlanes, image_planes, ImagePlanesArgs)
