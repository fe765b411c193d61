// CUDA residual_block: output = input + conv_out(conv_in(input)) in one
// kernel (see backend.h for the exact semantics).
#pragma once

#include <cuda_runtime.h>

#include "backend.h"

namespace imr::cuda {

// Checks the arguments (imr::Error naming the shapes) and queues the op on
// `stream`. C == 3 with hidden <= 128 takes the fused tiled kernel; any other
// shape takes a plain (slow, simple) fused kernel.
void residual_block(const ResidualBlockArgs& a, cudaStream_t stream);

}  // namespace imr::cuda
