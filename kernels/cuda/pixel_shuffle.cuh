// CUDA pixel_shuffle (see kernels/ops/pixel_shuffle.h for the semantics).
#pragma once

#include <cuda_runtime.h>

#include "backend.h"

namespace imr::cuda {

// Checks the arguments (imr::Error naming the shapes) and queues the op on `stream`.
void pixel_shuffle(const PixelShuffleArgs& a, cudaStream_t stream);

}  // namespace imr::cuda
