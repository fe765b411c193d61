// The window_mean op: what it computes, its arguments, their check and its
// float64 reference. Its kernels: kernels/cpu/window_mean.cpp,
// kernels/cuda/window_mean.cu.
#pragma once

#include <vector>

#include "op_args.h"

namespace imr {

// window_mean: every pixel replaced by the mean of its channel over the
// window x window box around it, clipped to the image (the local average
// pooling of NAFNet's channel attention at test time). With
// a = (window - 1) / 2 and b = window / 2 (integer division; a = b for an
// odd window, b = a + 1 for an even one):
//   rows  y0 = max(0, y - a) .. y1 = min(H - 1, y + b), columns likewise,
//   out[n][c][y][x] = sum of in[n][c][y0..y1][x0..x1] / ((y1-y0+1)(x1-x0+1))
// the mean of the pixels inside the image only. window 1..1024.
// Types: input and output share one dtype and layout (any the backend
// supports). The kernels are O(1) per output pixel whatever the window (box
// sums by running sums), accumulate in double and round once to the output
// type (each kernel's header says the error it allows on top of that).
struct WindowMeanArgs {
    Tensor input;  // [N, C, H, W]
    int window = 0;
    Tensor output;  // input's shape and type; must not overlap input

    Shape out_shape() const { return input.shape; }
    int before() const { return (window - 1) / 2; }  // a: rows/columns above/left of the pixel
    int after() const { return window / 2; }         // b: rows/columns below/right of it
};

// The largest window the op takes (what the model format allows).
constexpr int kWindowMeanMaxWindow = 1024;

// Throws imr::Error naming the op and its shapes if the arguments cannot run
// (non-positive sizes, a window outside 1..1024, null or misshapen tensors,
// mixed input/output types, overlapping input and output). Every backend
// calls it first.
void check_args(const WindowMeanArgs& a);

// Output a.out_shape() of window_mean in float64: direct sums (rows of each
// box summed first, then those row sums), no running sums, so the oracle
// shares nothing with the kernels; O(window) per pixel per axis.
std::vector<double> reference_window_mean(const WindowMeanArgs& a);

}  // namespace imr
