// CUDA pixel_shuffle (see kernels/ops/pixel_shuffle.h for the semantics).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "backend.h"

namespace imr::cuda {

// The kernel variants (Backend::variants): "per_element" (every case) and
// "nhwc8_vec16" (f16/bf16 NHWC8, factor 2-4, wide channels a multiple of 8).
std::vector<std::string> pixel_shuffle_variants();

// Checks the arguments (imr::Error naming the shapes) and queues the op on
// `stream`, on variant `forced` (an index into pixel_shuffle_variants(); -1:
// the planner's pick; NotApplicable where the forced one cannot run `a`).
void pixel_shuffle(const PixelShuffleArgs& a, cudaStream_t stream, int forced = -1);

}  // namespace imr::cuda
