// CUDA conv2d: any batch, channels, kernel size, the three pad modes with
// pad_before/pad_after, optional bias (see backend.h for the semantics).
#pragma once

#include <cuda_runtime.h>

#include "backend.h"

namespace imr::cuda {

// Block tile of the implicit-GEMM kernel (M = output channels, N = output
// pixels, K = Cin*K*K) and the split of the reduction over 1 or 2 blocks.
struct Conv2dPlan {
    int bm = 0, bn = 0;  // block tile
    int split_k = 1;     // 2: two blocks share one output tile, adding with atomics into a zeroed output
};

// Picks the tile and split for a shape on a GPU with `sm_count` multiprocessors.
Conv2dPlan plan_conv2d(const Conv2dArgs& a, int sm_count);

// Checks the arguments (imr::Error naming the shapes) and queues the op on `stream`.
void conv2d(const Conv2dArgs& a, cudaStream_t stream, int sm_count);

}  // namespace imr::cuda
