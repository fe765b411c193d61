// The CPU ops behind make_cpu_backend (private to kernels/cpu/). Each calls
// check_args first and run on `threads` OpenMP threads.
#pragma once

#include "backend.h"

namespace imr::cpu {

void residual_block(const ResidualBlockArgs& a, int threads);
void conv2d(const Conv2dArgs& a, int threads);
void pixel_shuffle(const PixelShuffleArgs& a, int threads);

}  // namespace imr::cpu
