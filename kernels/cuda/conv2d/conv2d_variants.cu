// conv2d on CUDA: four kernel families, one file each in this folder
// (igemm_multistage.cu, igemm_double_buffer.cu, direct.cu, winograd.cu; what
// they share: conv2d_kernels.cuh), each run in the configurations of one
// variant table (kConv2dVariants, here); plan_conv2d picks a variant per
// shape, the op tests run every case on every variant and bench_gpu times
// them all.
//
// igemm (implicit GEMM in fp32 FFMA, SGEMM style), two of the kernels (the
// multistage one also on TF32 tensor cores: the igemm_tf32_* rows, which the
// planner takes only for a call that allows TF32, Conv2dArgs::tf32):
//   GEMM view: M = Cout, N = batch*Ho*Wo (output pixels), K = Cin*K*K (in the
//   weight's own order ci, ky, kx, so a weight row is contiguous).
//   A[m][r] = weight[m][r]; B[r][p] = padded input at (img(p), ci, oy+ky, ox+kx),
//   gathered while the tile is loaded: the pad mode is an index mapping
//   (zero: bounds check; reflect: mirror; replicate: clamp), never a padded copy.
//   - multistage (conv2d_igemm_multistage_kernel): CUTLASS-style conflict-free
//     fragments, cp.async pipeline of STAGES tiles of BK rows. H200: GPU MODE's
//     ranked shape 40.6 ms = 62% of fp32 peak.
//   - double buffer (conv2d_igemm_double_buffer_kernel): register-staged, two
//     shared-memory buffers, a 32 x 64 tile for the shapes too small or too
//     narrow for the multistage tiles (it ran every shape until ed1dc63).
// direct (conv2d_direct_small_cout_kernel): few output channels (a network's
//   last layer, 48 -> 3 or 64 -> 12). An implicit GEMM wastes most of its
//   M tile there (3 of 32 rows: 1.9% of peak on the H200); the direct kernel
//   stages an input tile with its halo in shared memory once per channel and
//   computes all output channels of 4 pixels per thread from it.
// Winograd (conv2d_winograd_2x2_3x3_kernel): 3x3 layers of 17..48 output
//   channels, with 16 multiplies per 2x2 outputs where the others need 36.
//
// Floors: 2*M*N*K FLOP; bytes = input + weight + output (+ residual), each
// once. Every GPU MODE conv2d_v2 shape is compute-bound by a wide margin (the
// ranked B=1, C=128, S=256, K=32 shape: 1.70 TFLOP = ~28 ms at 60 TFLOP/s
// against ~130 MB = 0.03 ms of traffic); so is every layer of the bundled
// models (48 -> 48, 3x3: 864 FLOP per 392 bytes per pixel).
//
// A reduction too long for a grid of only ~1.5 waves may be split over two
// igemm blocks (atomic add of exactly two partial sums onto zero: the result
// does not depend on their order, so it stays deterministic).
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv2d_kernels.cuh"
#include "cuda/conv2d_tensor_core.cuh"
#include "cuda/cuda_backend.cuh"

namespace imr::cuda {
namespace conv2d_detail {

// The host-side helpers every family's launchers use (conv2d_kernels.cuh).
std::string context(const Conv2dArgs& a) {
    return "conv2d " + a.input.shape.str() + " -> " + a.out_shape().str() + ", kernel " + std::to_string(a.kernel) +
           ", padding " + std::to_string(a.pad_before) + "/" + std::to_string(a.pad_after) + " " +
           pad_mode_name(a.pad_mode) + (a.bias ? ", bias" : "") +
           (a.activation != Activation::None ? std::string(", ") + activation_name(a.activation) : "") +
           (a.residual ? ", + residual" : "");
}

void allow_smem(void (*kernel)(ConvParams), size_t bytes, const Conv2dArgs& a) {
    const cudaError_t err = raise_smem_limit(reinterpret_cast<const void*>(kernel), bytes);
    if (err != cudaSuccess) throw_cuda(context(a), "cudaFuncSetAttribute(max dynamic shared memory)", err);
}

void check_launched(const Conv2dArgs& a, const char* kernel) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) throw_cuda(context(a), kernel, err);
}

[[noreturn]] void unknown_pad_mode(const Conv2dArgs& a) {
    throw Error(context(a) + ": unknown pad mode");
}

void* CallTemp::allocate(size_t bytes, const Conv2dArgs& a, const char* what) {
    if (const cudaError_t err = cudaMallocAsync(&ptr, bytes, stream); err != cudaSuccess) {
        cudaGetLastError();
        ptr = nullptr;
        if (err == cudaErrorMemoryAllocation)
            throw OutOfMemory(context(a) + ": " + std::to_string(bytes) + " bytes for " + what);
        throw_cuda(context(a), "cudaMallocAsync", err);
    }
    return ptr;
}

void* prepared_alloc(size_t bytes, const Conv2dArgs& a, const char* what) {
    void* p = nullptr;
    if (const cudaError_t err = cudaMalloc(&p, bytes); err != cudaSuccess) {
        cudaGetLastError();
        if (err == cudaErrorMemoryAllocation)
            throw OutOfMemory(context(a) + ": cudaMalloc of " + std::to_string(bytes) + " bytes for " + what);
        throw_cuda(context(a), "cudaMalloc", err);
    }
    return p;
}

}  // namespace conv2d_detail

namespace {

using namespace conv2d_detail;

// ---- the variant table
//
// Every configuration conv2d can run, by name. plan_conv2d picks one per
// shape; the tests and benchmarks force each in turn (Backend::force_variant,
// by name). A variant runs a shape when its tensors are of the row's dtype,
// the GPU has at least the row's architecture, Cout <= max_cout and
// K <= max_kernel (0: any). Rows name each other (`smaller`), never by
// position: the table can grow (a tensor-core row is a row with its dtype and
// architecture) without renumbering anything.
struct Conv2dVariant {
    const char* name;
    DType dtype;     // of the input, output and residual (the weights are f32 and packed by prepare)
    int min_arch;    // compute capability it needs (80: sm_80 and later; the build's floor, cp.async)
    int bm, bn;      // igemm: the block tile (M x N); direct: 0, 0
    int step;        // reduction rows per pipeline step (a split's chunk is a multiple); direct: 0
    int max_cout;    // 0: any
    int max_kernel;  // 0: any; negative: exactly -max_kernel
    int min_blocks;  // blocks per SM the launch bounds ask for (wave accounting of the split)
    Launch launch;
    // The row the planner takes instead when this one's tiles cannot fill the
    // GPU (fewer tiles than SMs); null: none smaller.
    const char* smaller;
    // Tensor-core rows (dtype F16 or BF16, launch null): the configuration of
    // kernels/cuda/conv2d_tensor_core.cu they run (its name there), which
    // tc_conv2d is made to take (force_config), so each row runs exactly its
    // configuration. Null for the fp32 rows.
    const char* tc_config = nullptr;
    // The multistage kernel on TF32 tensor cores (f32 tensors, products of
    // TF32-rounded operands): the planner's pick only where Conv2dArgs::tf32
    // allows it; forced by name, it runs any f32 call of its shapes.
    bool tf32 = false;
    // A tensor-core row on warpgroup MMA: runs where tc::tc_wgmma_runs (an
    // sm_90 GPU, sm_90a code), which min_arch alone cannot say (sm_100 has
    // no wgmma).
    bool wgmma = false;
    // A half-precision 1x1 row run as one cuBLASLt GEMM (cublaslt_1x1.cu),
    // on the tensor-core rows' packed weights; launch null.
    bool cublas = false;
};

static_assert(multistage_smem_bytes(128, 128, MS_BK, MS_STAGES) <= 52 * 1024, "3 x 16 x 264 floats = 51 KB");
static_assert(multistage_smem_bytes(64, 256, MS_BK, MS_STAGES) <= 64 * 1024, "3 x 16 x 328 floats = 63 KB");
static_assert(multistage_smem_bytes(48, 256, MS_BK, MS_STAGES) <= 60 * 1024, "3 x 16 x 312 floats = 59 KB");
static_assert(direct_smem_bytes(DT_MAX_K, 16) <= 72 * 1024, "K = 7, 16 channels: 46 + 25 KB");

constexpr DType F32 = DType::F32;
constexpr int SM80 = 80;
// A tensor-core configuration in f16 and in bf16: two rows, named after it
// and their dtype. They take any Cout (more channel tiles beyond the
// configuration's width) of their kernel size K (max_kernel -K).
#define IMR_TENSOR_CORE_ROWS(CONFIG, K)                                                                 \
    {"tensor_core_" CONFIG "_f16", DType::F16, SM80, 0, 0, 0, 0, -(K), 1, nullptr, nullptr, CONFIG}, {  \
        "tensor_core_" CONFIG "_bf16", DType::BF16, SM80, 0, 0, 0, 0, -(K), 1, nullptr, nullptr, CONFIG \
    }
// The same for a warpgroup-MMA configuration (sm_90a).
#define IMR_TENSOR_CORE_WGMMA_ROWS(CONFIG, K)                                                                        \
    {"tensor_core_" CONFIG "_f16", DType::F16, SM90, 0, 0, 0, 0, -(K), 1, nullptr, nullptr, CONFIG, false, true}, {  \
        "tensor_core_" CONFIG "_bf16", DType::BF16, SM90, 0, 0, 0, 0, -(K), 1, nullptr, nullptr, CONFIG, false, true \
    }
constexpr int SM90 = 90;
constexpr Conv2dVariant kConv2dVariants[] = {
    // Cout > 64: 8 x 8 outputs per thread (FG 2 x FR 4 rows), 4 LDS.128 per 64 FFMA.
    {"igemm_multistage_128x128", F32, SM80, 128, 128, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<128, 128, MS_BK, MS_STAGES, 2, 4, false>, "igemm_multistage_64x256"},
    // 48 < Cout <= 64: 8 x 8 per thread as well, no half-empty M.
    {"igemm_multistage_64x256", F32, SM80, 64, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<64, 256, MS_BK, MS_STAGES, 2, 4, false>, "igemm_double_buffer_32x64"},
    // 32 < Cout <= 48 (the default denoise's width): a 64-row tile would
    // spend 25% of its FFMAs on missing channels; 6 x 8 per thread (3 x 2 rows).
    {"igemm_multistage_48x256", F32, SM80, 48, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<48, 256, MS_BK, MS_STAGES, 3, 2, false>, "igemm_double_buffer_32x64"},
    // The same three tiles on TF32 tensor cores (--precision tf32), taken by
    // Cout as the FFMA ones (Cout <= 32 stays on the exact 32x64 kernel).
    // Their `smaller` chain never leaves TF32: whether a layer rounds its
    // operands must depend on its shape alone, not on how many pixels a
    // call has, or a tile or a batch image would not sum as the whole image
    // (Conv2dArgs::plan_pixels keeps only the split's order). Every TF32
    // tile shape sums an element in the same order.
    {"igemm_tf32_128x128", F32, SM80, 128, 128, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<128, 128, MS_BK, MS_STAGES, 2, 4, true>, "igemm_tf32_64x256", nullptr, true},
    {"igemm_tf32_64x256", F32, SM80, 64, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<64, 256, MS_BK, MS_STAGES, 2, 4, true>, nullptr, nullptr, true},
    {"igemm_tf32_48x256", F32, SM80, 48, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<48, 256, MS_BK, MS_STAGES, 3, 2, true>, nullptr, nullptr, true},
    // Cout <= 32, or too few big tiles to fill the GPU: 2 x 4 per thread.
    {"igemm_double_buffer_32x64", F32, SM80, 32, 64, CV_BK, 0, 0, CV_MIN_BLOCKS, launch_double_buffer<32, 64>, nullptr},
    // Cout <= 4 (RGB out) and <= 16: the direct kernel with 4 or 16 accumulators per pixel.
    {"direct_small_cout_4", F32, SM80, 0, 0, 0, 4, DT_MAX_K, 1, launch_direct<4>, nullptr},
    {"direct_small_cout_16", F32, SM80, 0, 0, 0, 16, DT_MAX_K, 1, launch_direct<16>, nullptr},
    // 3x3 with 16 < Cout <= 48 and Cin >= 8 (the default denoise's 48 -> 48):
    // Winograd F(2x2, 3x3), 16/36 of the multiplies, 48 output channels per block.
    {"winograd_2x2_3x3_48", F32, SM80, 0, 0, 0, 0, -3, 1, launch_winograd, nullptr},
    // Tensor cores (mma.sync, fp32 accumulation; conv2d_tensor_core.cu's
    // table, which says what each configuration is for; tc_conv2d picks one
    // by kernel size and Cout). The first eight 3x3 rows and the first four
    // 1x1 rows are what it picks (or, on sm_90, the wgmma twins below), the
    // others are alternatives for tests and benchmarks.
    IMR_TENSOR_CORE_ROWS("k3_14x14_taps_n3", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n8", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n16", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n32", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n48", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n64", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n96", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n128", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x32_n48_wide_warps", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n8_w4", 3),
    IMR_TENSOR_CORE_ROWS("k3_16x16_n96_w16", 3),
    IMR_TENSOR_CORE_ROWS("k1_16x16_n32_2blk", 1),
    IMR_TENSOR_CORE_ROWS("k1_8x16_n64_4blk", 1),
    IMR_TENSOR_CORE_ROWS("k1_16x16_n96", 1),
    IMR_TENSOR_CORE_ROWS("k1_8x16_n128_2blk", 1),
    IMR_TENSOR_CORE_ROWS("k1_16x32_n64", 1),
    IMR_TENSOR_CORE_ROWS("k1_16x16_n128", 1),
    IMR_TENSOR_CORE_ROWS("k1_16x16_n64_2blk", 1),
    // Warpgroup MMA (sm_90a; conv2d_tensor_core.cu says which tc_conv2d
    // picks over their mma.sync twins above: the four 3x3 rows of Cout > 32,
    // on an sm_90 GPU; the others are for tests and benchmarks).
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n48_wgmma", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n64_wgmma", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n96_wgmma", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n128_wgmma", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n96_wgmma_wide", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n128_wgmma_wide", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n96_wgmma_slices", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k3_16x16_n128_wgmma_slices", 3),
    IMR_TENSOR_CORE_WGMMA_ROWS("k1_16x16_n64_wgmma", 1),
    IMR_TENSOR_CORE_WGMMA_ROWS("k1_16x16_n96_wgmma", 1),
    IMR_TENSOR_CORE_WGMMA_ROWS("k1_16x16_n128_wgmma", 1),
    // 1x1 as a cuBLASLt GEMM (cublaslt_1x1.cu): the planner's pick for the
    // deep layers (kCublasMinChannels).
    {"cublaslt_1x1_f16", DType::F16, SM80, 0, 0, 0, 0, -1, 1, nullptr, nullptr, nullptr, false, false, true},
    {"cublaslt_1x1_bf16", DType::BF16, SM80, 0, 0, 0, 0, -1, 1, nullptr, nullptr, nullptr, false, false, true},
};
#undef IMR_TENSOR_CORE_ROWS
#undef IMR_TENSOR_CORE_WGMMA_ROWS
constexpr int kVariantCount = int(sizeof(kConv2dVariants) / sizeof(kConv2dVariants[0]));

constexpr bool same_name(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}
// The table position of the row called `name`, -1 if none is.
constexpr int row(const char* name) {
    for (int i = 0; i < kVariantCount; ++i)
        if (same_name(kConv2dVariants[i].name, name)) return i;
    return -1;
}
// Every `smaller` names a row, and no name is taken twice.
constexpr bool table_is_consistent() {
    for (int i = 0; i < kVariantCount; ++i) {
        if (kConv2dVariants[i].smaller && row(kConv2dVariants[i].smaller) < 0) return false;
        if (kConv2dVariants[i].smaller &&
            kConv2dVariants[row(kConv2dVariants[i].smaller)].tf32 != kConv2dVariants[i].tf32)
            return false;
        if (row(kConv2dVariants[i].name) != i) return false;
    }
    return true;
}
static_assert(table_is_consistent(), "a `smaller` that names no row or another math, or a name used twice");

// The rows the planner names (checked to exist at compile time).
constexpr int C_F16 = row("cublaslt_1x1_f16"), C_BF16 = row("cublaslt_1x1_bf16");
static_assert(C_F16 >= 0 && C_BF16 >= 0, "the planner names a row the table does not have");
constexpr int V_DIRECT4 = row("direct_small_cout_4"), V_DIRECT16 = row("direct_small_cout_16"),
              V_WINOGRAD = row("winograd_2x2_3x3_48"), V_128x128 = row("igemm_multistage_128x128"),
              V_64x256 = row("igemm_multistage_64x256"), V_48x256 = row("igemm_multistage_48x256"),
              V_32x64 = row("igemm_double_buffer_32x64"), T_128x128 = row("igemm_tf32_128x128"),
              T_64x256 = row("igemm_tf32_64x256"), T_48x256 = row("igemm_tf32_48x256");
static_assert(V_DIRECT4 >= 0 && V_DIRECT16 >= 0 && V_WINOGRAD >= 0 && V_128x128 >= 0 && V_64x256 >= 0 &&
                  V_48x256 >= 0 && V_32x64 >= 0 && T_128x128 >= 0 && T_64x256 >= 0 && T_48x256 >= 0,
              "the planner names a row the table does not have");

// Rows of output tiles a direct or Winograd launch puts in grid.y (at most
// 65535); 0 for the igemm kernels, which tile pixels along grid.x.
int grid_rows(const Conv2dVariant& v, const Conv2dArgs& a);

// The most channels an f32 NCHW input of a tensor-core row may have: one
// chunk of every configuration holds 16 (conv2d_tensor_core.cuh), which is
// what a first layer reading the RGB(A) batch needs.
constexpr int kTcMaxF32InputChannels = 16;
constexpr int kTcMaxChannels = 1024;  // tc_conv2d's limit on Cin and Cout
// The planner runs a half-precision 1x1 convolution on cuBLASLt (where
// cublaslt_1x1_applies) when both its channel counts are at least this: the
// U-Nets' deep layers, compute-bound GEMMs where the tensor-core rows reach
// 16-23% of 790 TFLOP/s (bench_tc, 2026-12-03). The shallow ones (32-64
// channels at full resolution) are memory-bound, and the k1 rows' fused
// gate and multiplying residual are there at 50-75% of their byte floor.
constexpr int kCublasMinChannels = 128;
// Whether the planner takes the cuBLASLt rows at all: the environment
// variable IMRESTORE_CUBLASLT (0: never; an A/B switch for benchmarks),
// else on.
bool cublaslt_wanted() {
    static const bool on = [] {
        const char* v = std::getenv("IMRESTORE_CUBLASLT");
        return !(v && std::string(v) == "0");
    }();
    return on;
}

// A tensor-core row runs its dtype: half NHWC8 in and out, or the f32 NCHW
// batch in (few channels) and/or f32 NCHW out, with its kernel size.
bool tensor_core_applies(const Conv2dVariant& v, const Conv2dArgs& a) {
    const DType d = conv2d_compute_dtype(a);
    if (d != v.dtype || a.kernel != -v.max_kernel) return false;
    const TensorType half{d, Layout::NHWC8}, f32{};
    const bool input_ok =
        a.input.type() == half || (a.input.type() == f32 && a.input.shape.c <= kTcMaxF32InputChannels);
    const bool output_ok = a.output.type() == half || a.output.type() == f32;
    return input_ok && output_ok && a.input.shape.c <= kTcMaxChannels && a.out_channels <= kTcMaxChannels;
}

bool applies(const Conv2dVariant& v, const Conv2dArgs& a, const GpuInfo& gpu) {
    if (gpu.arch < v.min_arch) return false;
    if (v.wgmma && !tc::tc_wgmma_runs(gpu.arch)) return false;
    if (v.tc_config) return tensor_core_applies(v, a);
    if (v.cublas) return conv2d_compute_dtype(a) == v.dtype && cublaslt_1x1_applies(a);
    const TensorType f32{};
    if (a.input.type() != f32 || a.output.type() != f32) return false;
    if (grid_rows(v, a) > 65535) return false;
    const bool kernel_ok =
        v.max_kernel >= 0 ? (v.max_kernel == 0 || a.kernel <= v.max_kernel) : a.kernel == -v.max_kernel;
    return (v.max_cout == 0 || a.out_channels <= v.max_cout) && kernel_ok;
}

int grid_rows(const Conv2dVariant& v, const Conv2dArgs& a) {
    if (v.tc_config || v.cublas) return 0;  // persistent blocks; cuBLASLt's own
    const long long ho = a.out_shape().h;
    if (v.launch == launch_winograd) return int(std::min<long long>((ho + WG_TH - 1) / WG_TH, INT_MAX));
    if (v.bm == 0) return int(std::min<long long>((ho + DT_TY - 1) / DT_TY, INT_MAX));
    return 0;
}

long long tile_count(const Conv2dVariant& v, long long m, long long n) {
    return ((n + v.bn - 1) / v.bn) * ((m + v.bm - 1) / v.bm);
}

tc::TcPad tc_pad(const Conv2dArgs& a) {
    switch (a.pad_mode) {
        case PadMode::Zero:
            return tc::TcPad::Zero;
        case PadMode::Reflect:
            return tc::TcPad::Reflect;
        case PadMode::Replicate:
            return tc::TcPad::Replicate;
    }
    unknown_pad_mode(a);
}

// The tensor-core parameters of `a` (tensors, shape, epilogue) on `gpu`;
// weights and configuration are the caller's.
tc::TcConvParams tc_params(const Conv2dArgs& a, const GpuInfo& gpu) {
    tc::TcConvParams p;
    p.n = a.input.shape.n, p.h = a.input.shape.h, p.w = a.input.shape.w;
    p.in_channels = a.input.shape.c, p.out_channels = a.out_channels, p.kernel = a.kernel;
    p.pad_before = a.pad_before, p.pad_after = a.pad_after, p.pad = tc_pad(a);
    p.dtype = conv2d_compute_dtype(a) == DType::BF16 ? tc::TcDType::BF16 : tc::TcDType::F16;
    p.input_layout = a.input.dtype == DType::F32 ? tc::TcLayout::NchwF32 : tc::TcLayout::NhwcHalf;
    p.output_layout = a.output.dtype == DType::F32 ? tc::TcLayout::NchwF32 : tc::TcLayout::NhwcHalf;
    p.input = a.input.data, p.output = a.output.data, p.residual = a.residual.data;
    p.residual_multiplies = a.residual && a.residual_op == ResidualOp::Multiply;
    p.gate = a.gate;
    p.bias = a.bias.as<const float>(), p.relu = a.activation == Activation::ReLU;
    p.sm_count = gpu.sm_count, p.smem_optin = gpu.smem_optin, p.arch = gpu.arch;
    return p;
}

// The tensor-core row for tc_conv2d's own pick of configuration.
int tensor_core_row(const Conv2dArgs& a, const GpuInfo& gpu) {
    const DType d = conv2d_compute_dtype(a);
    const char* config = nullptr;
    try {
        config = tc::tc_conv2d_config_name(tc_params(a, gpu));
    } catch (const std::exception& e) {
        throw NotApplicable(context(a) + ": " + e.what());
    }
    for (int i = 0; i < kVariantCount; ++i)
        if (kConv2dVariants[i].tc_config && kConv2dVariants[i].dtype == d &&
            same_name(kConv2dVariants[i].tc_config, config))
            return i;
    throw Error(context(a) + ": the tensor-core configuration " + config + " has no row in the variant table");
}

// The call's weights packed for the tensor-core kernels (and cuBLASLt's
// 1x1): its prepared ones where they are of this dtype and gate packing,
// else packed now into `temp`.
const void* packed_weights(const Conv2dArgs& a, DType dtype, CallTemp& temp) {
    const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared);
    if (prep && prep->tc_weights && prep->tc_dtype == dtype && prep->tc_gate == a.gate) return prep->tc_weights;
    temp.allocate(tc::tc_conv_weights_bytes(a.out_channels, a.input.shape.c, a.kernel), a, "the packed weights");
    try {
        tc::tc_conv_prepare_weights(a.weight.as<const float>(), a.out_channels, a.input.shape.c, a.kernel,
                                    dtype == DType::BF16 ? tc::TcDType::BF16 : tc::TcDType::F16, temp.ptr, temp.stream,
                                    a.gate);
    } catch (const std::exception& e) {
        throw Error(context(a) + ": " + e.what());
    }
    return temp.ptr;
}

void run_tensor_core(const Conv2dArgs& a, const Conv2dVariant& var, const GpuInfo& gpu, cudaStream_t stream) {
    tc::TcConvParams p = tc_params(a, gpu);
    p.force_config = var.tc_config;  // the row's configuration, not tc's pick
    CallTemp temp{nullptr, stream};
    p.weights = packed_weights(a, var.dtype, temp);
    try {
        tc::tc_conv2d(p, stream);
    } catch (const std::exception& e) {
        throw Error(context(a) + " on " + var.name + ": " + e.what());
    }
}

// The call's bias in `dtype` for the cuBLASLt rows: its prepared copy, else
// rounded now into `temp`; null without a bias.
const void* half_bias(const Conv2dArgs& a, DType dtype, CallTemp& temp) {
    if (!a.bias) return nullptr;
    const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared);
    if (prep && prep->tc_bias && prep->tc_dtype == dtype) return prep->tc_bias;
    round_bias(a, dtype, temp.allocate(size_t(a.out_channels) * sizeof(__half), a, "the half bias"), temp.stream);
    return temp.ptr;
}

void run_cublaslt(const Conv2dArgs& a, const Conv2dVariant& var, cudaStream_t stream) {
    CallTemp weights{nullptr, stream}, bias{nullptr, stream};
    cublaslt_1x1(a, packed_weights(a, var.dtype, weights), half_bias(a, var.dtype, bias), stream);
}

// Whether the planner runs `a` (ungated) on cuBLASLt: half precision, a 1x1
// cuBLASLt takes, both channel counts at least kCublasMinChannels.
bool runs_on_cublaslt(const Conv2dArgs& a) {
    Conv2dArgs plain = a;
    plain.gate = false;
    return cublaslt_wanted() && std::min(a.input.shape.c, a.out_channels) >= kCublasMinChannels &&
           cublaslt_1x1_applies(plain);
}

}  // namespace

bool gates_natively(const Conv2dArgs& a) {
    // A deep gated 1x1 runs faster as cuBLASLt's GEMM then simple_gate (at
    // nafnet-large's 512 -> 1024 at 0.05 MP, ~0.05 ms for the gate's bytes)
    // than in the tensor-core rows' epilogue at 16-23% of their FLOP floor.
    return a.gate && conv2d_compute_dtype(a) != DType::F32 && a.output.dtype != DType::F32 && a.kernel == 1 &&
           a.out_channels % 16 == 0 && !runs_on_cublaslt(a);
}

DType conv2d_compute_dtype(const Conv2dArgs& a) {
    return a.input.dtype != DType::F32 ? a.input.dtype : a.output.dtype;
}

std::vector<std::string> conv2d_variants(int arch) {
    std::vector<std::string> names;
    for (const Conv2dVariant& v : kConv2dVariants)
        if (arch >= v.min_arch && (!v.wgmma || tc::tc_wgmma_runs(arch))) names.push_back(v.name);
    return names;
}

namespace {

// plan_conv2d for `n` output pixels.
Conv2dPlan plan_for_pixels(const Conv2dArgs& a, const GpuInfo& gpu, const std::string& forced, long long n) {
    const long long m = a.out_channels;
    const long long kdim = (long long)a.input.shape.c * a.kernel * a.kernel;
    int v;
    if (!forced.empty()) {
        v = row(forced.c_str());
        if (v < 0) throw Error(context(a) + ": no conv2d variant '" + forced + "'");
        if (!applies(kConv2dVariants[v], a, gpu))
            throw NotApplicable(context(a) + ": variant " + forced + " cannot run this shape, type or GPU");
    } else if (conv2d_compute_dtype(a) != DType::F32) {
        const int cublas = conv2d_compute_dtype(a) == DType::BF16 ? C_BF16 : C_F16;
        v = runs_on_cublaslt(a) && applies(kConv2dVariants[cublas], a, gpu) ? cublas : tensor_core_row(a, gpu);
        if (!applies(kConv2dVariants[v], a, gpu))
            throw NotApplicable(context(a) + ": no tensor-core kernel takes " + a.input.type().str() + " -> " +
                                a.output.type().str() + " with this shape on sm_" + std::to_string(gpu.arch));
    } else if (applies(kConv2dVariants[V_DIRECT4], a, gpu)) {
        v = V_DIRECT4;
    } else if (applies(kConv2dVariants[V_DIRECT16], a, gpu)) {
        v = V_DIRECT16;
    } else if (!a.tf32 && a.kernel == 3 && m <= WG_CO && a.input.shape.c >= WG_CC &&
               applies(kConv2dVariants[V_WINOGRAD], a, gpu)) {
        v = V_WINOGRAD;
    } else {
        if (a.tf32)
            v = m > 64 ? T_128x128 : m > 48 ? T_64x256 : m > 32 ? T_48x256 : V_32x64;
        else
            v = m > 64 ? V_128x128 : m > 48 ? V_64x256 : m > 32 ? V_48x256 : V_32x64;
        // Fill the GPU before using big tiles: each row names the smaller one
        // to take instead (128x128 -> 64x256 -> 32x64, 48x256 -> 32x64).
        while (kConv2dVariants[v].smaller && tile_count(kConv2dVariants[v], m, n) < gpu.sm_count)
            v = row(kConv2dVariants[v].smaller);
        if (!applies(kConv2dVariants[v], a, gpu))
            throw Error(context(a) + ": no conv2d variant runs " + dtype_name(a.input.dtype) + " on sm_" +
                        std::to_string(gpu.arch));
    }
    const Conv2dVariant& var = kConv2dVariants[v];
    Conv2dPlan plan{v, var.name, 1};
    if (var.bm == 0) return plan;  // direct, Winograd, tensor cores: no split
    // Wave quantization: with 1.5 waves the last one runs half empty; two
    // half-length blocks per tile can fill it.
    const long long blocks = tile_count(var, m, n), slots = (long long)gpu.sm_count * var.min_blocks;
    auto efficiency = [&](long long b) { return double(b) / double((b + slots - 1) / slots * slots); };
    // A fused activation or residual needs the whole sum in one block.
    const bool plain_epilogue = a.activation == Activation::None && !a.residual;
    if (plain_epilogue && kdim >= CV_SPLIT_MIN_K && efficiency(2 * blocks) > 1.05 * efficiency(blocks))
        plan.split_k = 2;
    return plan;
}

}  // namespace

Conv2dPlan plan_conv2d(const Conv2dArgs& a, const GpuInfo& gpu, const std::string& forced) {
    const Shape o = a.out_shape();
    const long long own = (long long)o.n * o.h * o.w;
    Conv2dPlan plan = plan_for_pixels(a, gpu, forced, own);
    if (a.plan_pixels <= 0 || a.plan_pixels == own) return plan;
    // Planned for another size (a tile or a batch image: Conv2dArgs::plan_pixels).
    // Only a split reduction sums in another order (every kernel here sums a
    // block's K in one chain, whatever its tile shape; Winograd, picked by
    // channels alone, counts its 2x2 patches from the call's first pixel,
    // which the runner keeps even: ModelRunner::run_tiled): the split and,
    // where there is one, the kernel it splits (its K chunks) are the
    // planned size's; without one the tile shape stays this call's own.
    const Conv2dPlan planned = plan_for_pixels(a, gpu, forced, a.plan_pixels);
    if (planned.split_k > 1) return planned;
    plan.split_k = 1;
    return plan;
}

// out[i] *= r[i]: a multiplying residual after an fp32 kernel (grid-stride).
__global__ void multiply_in_place_kernel(float* out, const float* r, size_t count) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
        out[i] *= __ldg(r + i);
}

void conv2d(const Conv2dArgs& a, cudaStream_t stream, const GpuInfo& gpu, const std::string& forced) {
    check_args(a);
    if (a.prepared) {
        const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared);
        if (!prep || prep->cout != a.out_channels || prep->cin != a.input.shape.c || prep->kernel != a.kernel)
            throw Error(context(a) + ": its prepared weights were made for another shape or backend");
    }
    const Shape o = a.out_shape();
    const long long kdim = (long long)a.input.shape.c * a.kernel * a.kernel;
    if (a.input.shape.count() >= size_t(INT_MAX) || o.count() >= size_t(INT_MAX) || kdim * a.out_channels >= INT_MAX)
        throw Error(context(a) + ": tensors of 2^31 or more elements are not supported on CUDA");
    const Conv2dPlan plan = plan_conv2d(a, gpu, forced);
    const Conv2dVariant& var = kConv2dVariants[plan.variant];
    if (var.tc_config) return run_tensor_core(a, var, gpu, stream);
    if (var.cublas) {
        try {
            return run_cublaslt(a, var, stream);
        } catch (const NotApplicable&) {  // no cuBLASLt algorithm: the tensor-core row, unless one was forced
            if (!forced.empty()) throw;
            return run_tensor_core(a, kConv2dVariants[tensor_core_row(a, gpu)], gpu, stream);
        }
    }

    // The fp32 kernels' epilogues add the residual; a multiplying one is
    // applied by a pass after them (the tensor-core kernels fuse it).
    const bool multiply_after = a.residual && a.residual_op == ResidualOp::Multiply;
    ConvParams p{};
    p.in = a.input.as<const float>(), p.weight = a.weight.as<const float>(), p.bias = a.bias.as<const float>();
    p.out = a.output.as<float>();
    p.residual = multiply_after ? nullptr : a.residual.as<const float>(), p.relu = a.activation == Activation::ReLU;
    p.cin = a.input.shape.c, p.h = a.input.shape.h, p.w = a.input.shape.w, p.cout = a.out_channels, p.k = a.kernel,
    p.pad_before = a.pad_before;
    p.ho = o.h, p.wo = o.w, p.howo = o.h * o.w, p.npix = o.n * o.h * o.w;
    p.kdim = int(kdim), p.kk = a.kernel * a.kernel, p.hw = a.input.shape.h * a.input.shape.w,
    p.cin_hw = a.input.shape.c * a.input.shape.h * a.input.shape.w;
    p.cout_howo = a.out_channels * o.h * o.w;
    p.div_kk = FastDiv(p.kk), p.div_k = FastDiv(p.k);
    p.atomic = plan.split_k > 1;
    if (var.step > 0) {  // split chunks are whole reduction steps of the kernel that runs
        const int steps = (p.kdim + var.step - 1) / var.step;
        p.k_chunk = (steps + plan.split_k - 1) / plan.split_k * var.step;
    }
    if (plan.split_k > 1)
        if (const cudaError_t err = cudaMemsetAsync(a.output.data, 0, a.output.bytes(), stream); err != cudaSuccess)
            throw_cuda(context(a), "cudaMemsetAsync(output) for the split reduction", err);
    var.launch(p, a, plan.split_k, stream);
    if (multiply_after) {
        const size_t count = o.count();
        const unsigned blocks = unsigned(std::min<size_t>((count + 255) / 256, 65535));
        multiply_in_place_kernel<<<blocks, 256, 0, stream>>>(a.output.as<float>(), a.residual.as<const float>(), count);
        if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess)
            throw_cuda(context(a), "the residual's multiply launch", err);
    }
}

std::unique_ptr<PreparedWeights> CudaBackend::prepare(const Conv2dArgs& a) {
    use_device();
    const GpuInfo gpu{sm_count_, arch_, smem_optin_};
    if (conv2d_compute_dtype(a) == DType::F32) return prepare_conv2d(a, stream_);
    // A half-precision layer: only where a tensor-core row takes its types
    // and kernel size (else NotApplicable: its layer computes in f32).
    // (The cuBLASLt rows count where the planner takes them: deep layers.)
    const bool cublas = runs_on_cublaslt(a);
    bool runs = false;
    for (const Conv2dVariant& v : kConv2dVariants)
        runs = runs || ((v.tc_config || (v.cublas && cublas)) && applies(v, a, gpu));
    if (!runs)
        throw NotApplicable(context(a) + ": no tensor-core kernel takes " + a.input.type().str() + " -> " +
                            a.output.type().str() + " with this kernel size and these channels on sm_" +
                            std::to_string(arch_));
    auto prep = std::make_unique<Conv2dPrepared>();
    prep->cout = a.out_channels, prep->cin = a.input.shape.c, prep->kernel = a.kernel;
    prep->tc_dtype = conv2d_compute_dtype(a);
    prep->tc_weights =
        prepared_alloc(tc::tc_conv_weights_bytes(a.out_channels, a.input.shape.c, a.kernel), a, "packed weights");
    prep->tc_gate = gates_natively(a);
    try {
        tc::tc_conv_prepare_weights(a.weight.as<const float>(), a.out_channels, a.input.shape.c, a.kernel,
                                    prep->tc_dtype == DType::BF16 ? tc::TcDType::BF16 : tc::TcDType::F16,
                                    prep->tc_weights, stream_, prep->tc_gate);
    } catch (const std::exception& e) {
        throw Error(context(a) + ": " + e.what());
    }
    if (cublas && a.bias) {  // the bias in the half type too, for the cuBLASLt rows
        prep->tc_bias = prepared_alloc(size_t(a.out_channels) * sizeof(__half), a, "the half bias");  // bf16: 2 too
        round_bias(a, prep->tc_dtype, prep->tc_bias, stream_);
    }
    return prep;
}

bool CudaBackend::conv2d_gates_in_epilogue(const Conv2dArgs& a) const {
    return gates_natively(a);
}

void CudaBackend::conv2d(const Conv2dArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::Conv2d, {&a.input, &a.output, &a.residual});
    const GpuInfo gpu{sm_count_, arch_, smem_optin_};
    if (!a.gate || gates_natively(a)) return cuda::conv2d(a, stream_, gpu, forced_variant_name(Op::Conv2d));
    // A gate no tensor-core epilogue takes (f32, or channels the pairing
    // cannot split): the Cout sums into the scratch, then simple_gate.
    Conv2dArgs sums = a;
    sums.gate = false;
    sums.output = Tensor{nullptr, sums.out_shape(), a.output.dtype, a.output.layout};
    sums.output.data = scratch(sums.output.bytes());
    cuda::conv2d(sums, stream_, gpu, forced_variant_name(Op::Conv2d));
    SimpleGateArgs g;
    g.input = sums.output, g.output = a.output;
    simple_gate(g);
}

}  // namespace imr::cuda
