// The convert op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/convert.cpp,
// kernels/cuda/convert.cu. No model file names it: the runner places it
// where a stage needs its activations in another type than the stage before
// produced (ncnn's cast between layers of different storage), e.g. the f32
// NCHW batch into f16 NHWC8 for tensor-core layers and back.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// convert: output[n][c][y][x] = round(input[n][c][y][x]) for every element,
// from the input's dtype and layout to the output's (same shape): to nearest
// even where the output type is narrower (beyond its range: infinity), exact
// where it is as wide or wider. An NHWC8 output's padding channels are
// written as zeros; an NHWC8 input's are not read.
struct ConvertArgs {
    Tensor input;
    Tensor output;  // input's shape, any dtype and layout; must not overlap input

    Shape out_shape() const { return input.shape; }
};

// Throws imr::Error naming the op and its tensors if the arguments cannot run
// (non-positive sizes, null tensors, another shape, overlap). Every backend
// calls it first.
void check_args(const ConvertArgs& a);

// Output of convert in float64, NCHW order: each input value rounded to the
// output's dtype (computed here by scaling to the type's quantum, apart from
// the backends' bit manipulation).
std::vector<double> reference_convert(const ConvertArgs& a);

// v rounded to nearest even in `t` (infinity beyond its largest finite value).
double reference_round(double v, DType t);

}  // namespace imr
