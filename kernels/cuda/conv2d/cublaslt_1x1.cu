// A 1x1 convolution in half precision as one cuBLASLt GEMM: the deep layers
// of the U-Nets (128-1024 channels at 0.05-3 MP), where the convolution is a
// plain compute-bound GEMM and the tensor-core kernels of
// conv2d_tensor_core.cu, built around 3x3 halos and mma.sync tiles of 128 x
// 128, reach 16-23% of the H200's 790 TFLOP/s (bench_tc, eleventh session).
// cuBLASLt's Hopper kernels (warpgroup MMA fed by TMA, larger tiles, deeper
// pipelines) are what writing our own would have to match; llama.cpp makes
// the same split (cuBLAS for large matrix products, its own kernels for the
// rest). The planner (conv2d_variants.cu) takes these rows only for the
// shapes where they measured faster; the op tests run them like every row.
//
// GEMM view, column-major as cuBLAS sees the NHWC tensors:
//   D [Cout x P] = op(A) [Cout x Cin] * B [Cin x P] (+ C) with
//   A = the packed weights (tc_conv_prepare_weights, no gate): row o of the
//       weights is Cin16 contiguous values, i.e. column-major Cin16 x Cout,
//       ld Cin16, transposed by the op; only its first Cin rows are read;
//   B = the input, NHWC: column p holds pixel p's Cin channels, ld Cin;
//   C = the residual (beta 1) or none (beta 0), D = the output, ld Cout;
//   P = N * H * W pixels. The epilogue adds the bias, then ReLU. cuBLASLt
//   takes no f32 bias with a half output, so the bias is rounded to the
//   half type, as the weights are (Conv2dArgs: prepare packs weight and
//   bias into the kernels' type; the op tests draw both as values of it).
// What it takes: half in and out in NHWC8 with Cin and Cout multiples of 8
// (so no padding channels: stored channels = channels), stride 1, no
// padding, no gate, and a residual only added (cuBLASLt's epilogue applies
// the activation after C, the op before it: so a residual only without
// ReLU).
//
// Floor: 2 P Cout Cin FLOP at 790 TFLOP/s, or the tensors' bytes at 4.23
// TB/s, whichever is larger (bench_tc's %floor).
//
// Numerics: fp32 accumulation (CUBLAS_COMPUTE_32F, never the fast 16-bit
// modes), one rounding to the output type: the accumulation bound the
// tensor-core rows meet (the op tests hold both to it, with weights and bias
// drawn as values of the half type). The bias is rounded to the half type
// first (cublasLt.h: a half D takes only a bias of D's type), an error of up
// to u |bias| that the tensor-core rows, which add the f32 bias, do not
// have; the bundled U-Nets' layers that run here have no bias.
//
// Where cuBLASLt has no algorithm for a shape (the heuristic finds none),
// cublaslt_1x1 throws NotApplicable and conv2d runs the tensor-core row.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "conv2d_kernels.cuh"
#include "cuda/cuda_backend.cuh"

namespace imr::cuda::conv2d_detail {
namespace {

void check(cublasStatus_t status, const Conv2dArgs& a, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw Error(context(a) + ": cuBLASLt " + what + ": " + cublasLtGetStatusString(status));
}

// One handle per device, made on first use and kept for the process (a
// handle is safe to share between threads; each call brings its stream).
cublasLtHandle_t handle_for_device(int device, const Conv2dArgs& a) {
    static std::mutex mutex;
    static std::map<int, cublasLtHandle_t> handles;
    std::lock_guard<std::mutex> lock(mutex);
    cublasLtHandle_t& h = handles[device];
    if (!h) check(cublasLtCreate(&h), a, "handle creation");
    return h;
}

// The descriptors of one call, destroyed with it.
struct Descriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~Descriptors() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

}  // namespace

bool cublaslt_1x1_applies(const Conv2dArgs& a) {
    const DType d = a.input.dtype;
    const bool half =
        (d == DType::F16 || d == DType::BF16) && a.input.layout == Layout::NHWC8 && a.output.type() == a.input.type();
    const int cin = a.input.shape.c, cout = a.out_channels;
    const bool residual_ok = !a.residual || (a.residual_op == ResidualOp::Add && a.activation == Activation::None);
    return half && a.kernel == 1 && a.pad_before == 0 && a.pad_after == 0 && !a.gate && cin % 8 == 0 && cout % 8 == 0 &&
           residual_ok && (a.activation == Activation::None || a.activation == Activation::ReLU);
}

__global__ void round_bias_kernel(const float* in, void* out, int n, bool bf16) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (bf16)
        static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(in[i]);
    else
        static_cast<__half*>(out)[i] = __float2half_rn(in[i]);
}

void round_bias(const Conv2dArgs& a, DType dtype, void* out, cudaStream_t stream) {
    const int n = a.out_channels;
    round_bias_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a.bias.as<const float>(), out, n, dtype == DType::BF16);
    check_launched(a, "round_bias_kernel");
}

void cublaslt_1x1(const Conv2dArgs& a, const void* packed_weights, const void* half_bias, cudaStream_t stream) {
    if (!cublaslt_1x1_applies(a)) throw NotApplicable(context(a) + ": not a shape the cuBLASLt 1x1 row takes");
    const cudaDataType_t type = a.input.dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const int cin = a.input.shape.c, cout = a.out_channels, cin16 = (cin + 15) / 16 * 16;
    const Shape o = a.out_shape();
    const uint64_t pixels = uint64_t(o.n) * o.h * o.w;
    Descriptors d;
    check(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), a, "matmul descriptor");
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)), a,
          "TRANSA");
    check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)), a, "TRANSB");
    const bool relu = a.activation == Activation::ReLU;
    const void* bias = a.bias ? half_bias : nullptr;
    if (a.bias && !half_bias) throw Error(context(a) + ": the cuBLASLt 1x1 row needs its bias in the half type");
    const cublasLtEpilogue_t epilogue = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                             : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), a,
          "EPILOGUE");
    if (bias) {
        check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), a,
              "BIAS_POINTER");
    }
    check(cublasLtMatrixLayoutCreate(&d.a, type, uint64_t(cin), uint64_t(cout), int64_t(cin16)), a, "A layout");
    check(cublasLtMatrixLayoutCreate(&d.b, type, uint64_t(cin), pixels, int64_t(cin)), a, "B layout");
    check(cublasLtMatrixLayoutCreate(&d.c, type, uint64_t(cout), pixels, int64_t(cout)), a, "C/D layout");
    int device = 0;
    check_cuda(cudaGetDevice(&device), context(a), "cudaGetDevice");
    const cublasLtHandle_t handle = handle_for_device(device, a);

    // The algorithm: the heuristic's pick for the planned pixels
    // (Conv2dArgs::plan_pixels: a whole image's, where this call is a tile
    // of it or an image of a batch), so that every tile sums as the image
    // would: one algorithm, each output a single K chain (no split-K: the
    // reduction scheme NONE). Asked once per shape and epilogue on a device
    // (the question costs tens of microseconds; a model asks it for each of
    // its layer shapes on its first image). No workspace: cuBLASLt then
    // needs no memory outside the runner's plan.
    const uint64_t planned = a.plan_pixels > 0 ? uint64_t(a.plan_pixels) : pixels;
    // The pointers' alignment (up to 256 bytes, the heuristic's default
    // assumption): a view that starts at a 16-byte multiple only must not
    // get an algorithm that needs more.
    const void* c_ptr = a.residual ? a.residual.data : a.output.data;
    uint32_t least_aligned = 256;
    for (const void* p :
         {packed_weights, static_cast<const void*>(a.input.data), c_ptr, static_cast<const void*>(a.output.data)})
        while (least_aligned > 1 && reinterpret_cast<uintptr_t>(p) % least_aligned != 0) least_aligned /= 2;
    // device, type, Cin, Cout, planned pixels, epilogue, residual, least alignment
    using AlgoKey = std::tuple<int, int, int, int, uint64_t, int, bool, uint32_t>;
    static std::mutex mutex;
    static std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
    // Tile sizes whose check of the image's algorithm passed (a tiled image
    // has a few sizes; each is checked once, not on every call).
    static std::set<std::pair<AlgoKey, uint64_t>> checked;
    const AlgoKey key(device, int(type), cin, cout, planned, int(epilogue), bool(a.residual), least_aligned);
    cublasLtMatmulAlgo_t algo;
    bool tile_checked = true;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = algos.find(key);
        if (it == algos.end()) {
            Descriptors q;  // the planned shape's layouts
            check(cublasLtMatrixLayoutCreate(&q.b, type, uint64_t(cin), planned, int64_t(cin)), a, "B layout");
            check(cublasLtMatrixLayoutCreate(&q.c, type, uint64_t(cout), planned, int64_t(cout)), a, "C/D layout");
            check(cublasLtMatmulPreferenceCreate(&q.pref), a, "preference");
            const size_t workspace = 0;
            const uint32_t no_split = CUBLASLT_REDUCTION_SCHEME_NONE;
            check(cublasLtMatmulPreferenceSetAttribute(q.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)),
                  a, "MAX_WORKSPACE_BYTES");
            check(cublasLtMatmulPreferenceSetAttribute(q.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &no_split,
                                                       sizeof(no_split)),
                  a, "REDUCTION_SCHEME_MASK");
            const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
            for (int i = 0; i < 4; ++i)  // the key's least alignment for all four: one cached pick serves any
                check(
                    cublasLtMatmulPreferenceSetAttribute(q.pref, align_attr[i], &least_aligned, sizeof(least_aligned)),
                    a, "MIN_ALIGNMENT");
            cublasLtMatmulHeuristicResult_t result{};
            int found = 0;
            const cublasStatus_t status =
                cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, q.b, q.c, q.c, q.pref, 1, &result, &found);
            if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found < 1))
                throw NotApplicable(context(a) + ": cuBLASLt has no algorithm for this GEMM");
            check(status, a, "heuristic");
            if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize != 0)
                throw NotApplicable(context(a) + ": cuBLASLt's algorithm for this GEMM needs a workspace");
            it = algos.emplace(key, result.algo).first;
        }
        algo = it->second;
        tile_checked = planned == pixels || checked.count({key, pixels}) > 0;
    }
    if (!tile_checked) {  // the image's algorithm must also take this tile's size, with no workspace
        cublasLtMatmulHeuristicResult_t result{};
        check(cublasLtMatmulAlgoCheck(handle, d.op, d.a, d.b, d.c, d.c, &algo, &result), a,
              "check of the planned algorithm on this tile's size");
        if (result.workspaceSize != 0)
            throw Error(context(a) + ": cuBLASLt's algorithm for the whole image needs a workspace on this tile");
        std::lock_guard<std::mutex> lock(mutex);
        checked.insert({key, pixels});
    }
    const float alpha = 1.0f, beta = a.residual ? 1.0f : 0.0f;
    check(cublasLtMatmul(handle, d.op, &alpha, packed_weights, d.a, a.input.data, d.b, &beta, c_ptr, d.c, a.output.data,
                         d.c, &algo, nullptr, 0, stream),
          a, "matmul");
}

}  // namespace imr::cuda::conv2d_detail
