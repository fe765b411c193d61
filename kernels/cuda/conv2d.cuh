// CUDA conv2d: any batch, channels, kernel size, the three pad modes with
// pad_before/pad_after, optional bias, fused activation and residual (see
// kernels/ops/conv2d.h for the semantics), run by one of the named kernel
// variants of the table in conv2d/conv2d_variants.cu (one file per kernel
// family beside it).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "backend.h"

namespace imr::cuda {

// The GPU a plan is for: its multiprocessors and compute capability
// (major * 10 + minor: 90 for sm_90).
struct GpuInfo {
    int sm_count = 0;
    int arch = 0;
    int smem_optin = 0;  // shared memory a block may opt in to (bytes; the tensor-core kernels size chunks by it)
};

// The variant a shape runs on and the split of the reduction over 1 or 2 blocks.
struct Conv2dPlan {
    int variant = 0;             // the row in the table
    const char* name = nullptr;  // e.g. "igemm_multistage_64x256"
    int split_k = 1;             // 2: two blocks share one output tile, adding with atomics into a zeroed output
};

// A conv2d's weights prepared for the CUDA kernels (device memory, owned):
// for fp32 3x3 layers the planner sends to Winograd, their Winograd
// transform; for a layer with a half-precision input or output, the weights
// packed for the tensor-core kernels in that type (tc_conv_prepare_weights).
// Other layers need nothing.
struct Conv2dPrepared : PreparedWeights {
    int cout = 0, cin = 0, kernel = 0;
    float* winograd_u = nullptr;
    DType tc_dtype = DType::F32;  // F16 or BF16 when tc_weights is set
    void* tc_weights = nullptr;
    bool tc_gate = false;     // tc_weights packed for the gate (tc_conv_prepare_weights' gate)
    void* tc_bias = nullptr;  // the bias in tc_dtype, for the cuBLASLt 1x1 rows (null: no bias, or none of them runs)
    // The GPU the weights were packed on (current where it is made: prepare
    // selects the backend's), so the last owner frees them there, whatever
    // GPU its thread has current (a compute worker of another GPU).
    int device = [] {
        int d = 0;
        cudaGetDevice(&d);
        return d;
    }();
    ~Conv2dPrepared() override;
};
// The half type a conv2d computes in on tensor cores (its input's or its
// output's: a first layer reads f32 and writes half, a last one the reverse);
// F32 when both are f32 (the CUDA-core kernels).
DType conv2d_compute_dtype(const Conv2dArgs& a);
// Whether a gated conv2d (Conv2dArgs::gate) runs with the gate in the
// tensor-core epilogue: half in and out, 1x1, Cout a multiple of 16 (the
// pairing of tc_gate_channel), and not a deep layer the planner sends to
// cuBLASLt. Else CudaBackend::conv2d convolves into its scratch and runs
// simple_gate after (a model layer: into its own planned scratch).
bool gates_natively(const Conv2dArgs& a);
// Null for layers with nothing to prepare; queues the transform or packing on `stream`.
std::unique_ptr<PreparedWeights> prepare_conv2d(const Conv2dArgs& a, cudaStream_t stream);

// The names of the variants a GPU of compute capability `arch` can run, in
// table order (rows that need a later architecture are left out).
std::vector<std::string> conv2d_variants(int arch);

// Picks the variant and split for a shape on `gpu`; a non-empty `forced`
// takes the variant of that name instead (imr::Error for an unknown name,
// imr::NotApplicable when it cannot run the shape, its type or on this GPU).
Conv2dPlan plan_conv2d(const Conv2dArgs& a, const GpuInfo& gpu, const std::string& forced = "");

// Checks the arguments (imr::Error naming the shapes) and queues the op on `stream`.
void conv2d(const Conv2dArgs& a, cudaStream_t stream, const GpuInfo& gpu, const std::string& forced = "");

}  // namespace imr::cuda
