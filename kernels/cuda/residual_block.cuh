// CUDA residual_block: output = input + conv_out(conv_in(input)) in one
// kernel (see kernels/ops/residual_block.h for the exact semantics).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "backend.h"

namespace imr::cuda {

// The kernel variants, in table order: "fused_c3_tile_28x64" (C == 3, hidden
// <= 128: the tiled kernel), "generic_per_output" (any shape: a plain, slow,
// fused kernel).
std::vector<std::string> residual_block_variants();

// Checks the arguments (imr::Error naming the shapes) and queues the op on
// `stream`, on the tiled kernel where it applies, else the generic one;
// forced >= 0 takes that variant (imr::NotApplicable where it cannot run).
// sm_count: the device's multiprocessors (small grids split their work).
void residual_block(const ResidualBlockArgs& a, cudaStream_t stream, int sm_count, int forced = -1);

}  // namespace imr::cuda
