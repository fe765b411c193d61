// The float64 oracle for every op: plain loops that are obviously correct,
// used by the tests (tests/test_ops.cpp) to judge every backend. Not fast, not
// for production. All pointers in the Args are HOST pointers here, whatever
// backend the data is later uploaded to.
//
// The whole-tensor functions are parallel over (batch, output channel) with
// OpenMP so the large GPU cases finish in seconds on a many-core host; the
// *_at functions compute one output element, for shapes too large to check
// in full (a few thousand randomly sampled elements instead).
#pragma once

#include <vector>

#include "backend.h"

namespace imr {

// Output [N, C, H, W] of residual_block, in float64 (the hidden activation is
// kept in float64 as well, never rounded to fp32). Calls check_args first.
std::vector<double> reference_residual_block(const ResidualBlockArgs& a);

// Output element (n, c, y, x) of residual_block.
double reference_residual_block_at(const ResidualBlockArgs& a, int n, int c, int y, int x);

// Output a.out_shape() of conv2d (bias, activation and residual included), in
// float64. Calls check_args first.
std::vector<double> reference_conv2d(const Conv2dArgs& a);

// Output element (n, co, y, x) of conv2d.
double reference_conv2d_at(const Conv2dArgs& a, int n, int co, int y, int x);

// Output a.out_shape() of pixel_shuffle, in float64 (plus the residual).
std::vector<double> reference_pixel_shuffle(const PixelShuffleArgs& a);

// Where padded coordinate p (in [-pad_before, size + pad_after)) reads from in
// an axis of `size` elements, or -1 for a zero. Zero: -1 outside [0, size);
// Reflect: mirror about the edge without repeating it (-1 -> 1); Replicate:
// clamp to the edge.
int reference_pad_index(int p, int size, PadMode mode);

}  // namespace imr
