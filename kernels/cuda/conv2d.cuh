// CUDA conv2d: any batch, channels, kernel size, the three pad modes with
// pad_before/pad_after, optional bias, fused activation and residual (see
// kernels/ops/conv2d.h for the semantics), run by one of the named kernel
// variants of conv2d.cu's table.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "backend.h"

namespace imr::cuda {

// The variant a shape runs on and the split of the reduction over 1 or 2 blocks.
struct Conv2dPlan {
    int variant = 0;             // index into conv2d_variants()
    const char* name = nullptr;  // e.g. "igemm_multistage_64x256"
    int split_k = 1;             // 2: two blocks share one output tile, adding with atomics into a zeroed output
};

// A conv2d's weights prepared for the CUDA kernels: for 3x3 layers, their
// Winograd transform (device memory, owned). Other layers need nothing.
struct Conv2dPrepared : PreparedWeights {
    int cout = 0, cin = 0;
    float* winograd_u = nullptr;
    ~Conv2dPrepared() override;
};
// Null for layers with nothing to prepare; queues the transform on `stream`.
std::unique_ptr<PreparedWeights> prepare_conv2d(const Conv2dArgs& a, cudaStream_t stream);

// Every variant's name, in table order.
std::vector<std::string> conv2d_variants();

// Picks the variant and split for a shape on a GPU with `sm_count`
// multiprocessors; forced >= 0 takes that variant instead (throws
// imr::NotApplicable when it cannot run the shape).
Conv2dPlan plan_conv2d(const Conv2dArgs& a, int sm_count, int forced = -1);

// Checks the arguments (imr::Error naming the shapes) and queues the op on `stream`.
void conv2d(const Conv2dArgs& a, cudaStream_t stream, int sm_count, int forced = -1);

}  // namespace imr::cuda
