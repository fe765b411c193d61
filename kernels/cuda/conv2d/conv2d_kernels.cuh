// What conv2d's kernel families (one .cu each in this folder) share: the
// launch parameters (ConvParams), the device helpers every kernel uses (the
// pixel mapping, the fused epilogue, the pad-mode index mapping, fragment
// loads, cp.async), each family's tile configuration (its constants, which
// the planner in conv2d_variants.cu also reads), and the launchers the
// variant table's rows point at, each defined (and explicitly instantiated
// for the table's configurations) in its family's file.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "cuda/common.cuh"
#include "cuda/conv2d.cuh"

namespace imr::cuda::conv2d_detail {

// ---- double-buffer kernel configuration (chosen for H200 / sm_90)
constexpr int CV_THREADS = 256;       // 16 x 16 thread grid; 8 warps
constexpr int CV_BK = 8;              // reduction step: 8 rows of A and B per barrier (32 threads per B row)
constexpr int CV_PAD = 4;             // smem row padding (floats): conflict-free transposed A stores, 16-byte rows
constexpr int CV_MIN_BLOCKS = 2;      // blocks per SM the launch bounds ask for (<= 128 registers per thread)
constexpr int CV_SPLIT_MIN_K = 1024;  // split the reduction only when each half still has >= 64 steps

struct ConvParams {
    const float* in;
    const float* weight;
    const float* bias;
    const float* residual;  // optional, output-shaped: added after the activation
    float* out;
    int relu;  // 1: max(0, .) after the bias
    int cin, h, w, cout, k, pad_before;
    int ho, wo, howo, npix;  // output plane and N of the GEMM
    int kdim, kk, hw, cin_hw, cout_howo;
    int k_chunk;  // reduction length per block (a multiple of CV_BK)
    int atomic;   // split reduction: atomicAdd into a zeroed output
    FastDiv div_kk, div_k;
    const float* wino_u;  // Winograd: the transformed weights (winograd_weight_transform_kernel)
};

// The device helpers and tile constants have internal linkage, as when the
// families were one file: each family's file compiles its own copy.
namespace {

// Output pixel pidx (flattened over batch and rows) -> (offset of its image
// in the input, top input row, left input column), both before padding is
// mapped; x = -1 marks a pixel past the end (a tile's tail).
__device__ __forceinline__ int4 pixel_column(const ConvParams& p, int pidx) {
    if (pidx >= p.npix) return make_int4(-1, 0, 0, 0);
    const int img = pidx / p.howo, pix = pidx - img * p.howo, oy = pix / p.wo;
    return make_int4(img * p.cin_hw, oy - p.pad_before, pix - oy * p.wo - p.pad_before, 0);
}

// Where output pixel pidx's channel 0 is in the NCHW output (its image's
// Cout planes, then its place in the plane); -1 past the end (a tile's tail).
__device__ __forceinline__ int output_offset(const ConvParams& p, int pidx) {
    if (pidx >= p.npix) return -1;
    const int img = pidx / p.howo;
    return img * p.cout_howo + (pidx - img * p.howo);
}

// The fused epilogue after the bias: activation, then the residual (never with
// the split reduction, whose partial sums are added by atomics; the planner
// does not split then). One read of the residual, no extra pass over memory.
__device__ __forceinline__ float epilogue(const ConvParams& p, float v, int offset) {
    if (p.relu) v = fmaxf(v, 0.f);
    if (p.residual) v += __ldg(p.residual + offset);
    return v;
}

// Output element (m, the pixel at `off`, output_offset's) of an igemm block:
// `v` (its sum, plus the bias in the first split) through the epilogue, then
// stored, or added atomically under the split reduction.
__device__ __forceinline__ void store_output(const ConvParams& p, int m, int off, float v) {
    v = epilogue(p, v, m * p.howo + off);
    if (p.atomic)
        atomicAdd(p.out + m * p.howo + off, v);
    else
        p.out[m * p.howo + off] = v;
}

// Maps a padded-image coordinate into the image; false: the zero border.
// i must lie in the padded image (-pad_before <= i < n + pad_after).
template <PadMode PAD>
__device__ __forceinline__ bool map_coord(int& i, int n) {
    if constexpr (PAD == PadMode::Zero) {
        return unsigned(i) < unsigned(n);
    } else if constexpr (PAD == PadMode::Replicate) {
        i = min(max(i, 0), n - 1);
        return true;
    } else {  // Reflect, the edge not repeated; check_args keeps the padding < n
        i = i < 0 ? -i : i;
        i = i >= n ? 2 * n - 2 - i : i;
        return true;
    }
}

template <int N>
__device__ __forceinline__ void load_frag(float (&v)[N], const float* p) {
    if constexpr (N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            const float4 t = *reinterpret_cast<const float4*>(p + i);
            v[i] = t.x, v[i + 1] = t.y, v[i + 2] = t.z, v[i + 3] = t.w;
        }
    } else if constexpr (N % 2 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            const float2 t = *reinterpret_cast<const float2*>(p + i);
            v[i] = t.x, v[i + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = p[i];
    }
}

// ---- multistage configuration (igemm_multistage.cu)
constexpr int MS_THREADS = 256;           // 8 warps
constexpr int MS_MIN_BLOCKS = 2;          // 2 blocks/SM: <= 128 registers, <= ~113 KB shared memory each
constexpr int MS_PAD = 4;                 // smem row padding (floats): conflict-free transposed A writes, 16-byte rows
constexpr int MS_BK = 16, MS_STAGES = 3;  // one barrier per 16 rows; two tiles of copies in flight

__device__ __forceinline__ void cp_async4(unsigned dst, const float* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__host__ __device__ constexpr size_t multistage_smem_bytes(int bm, int bn, int bk, int stages) {
    return sizeof(float) * size_t(stages) * bk * ((bm + MS_PAD) + (bn + MS_PAD));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const float* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

// ---- direct configuration (direct.cu)
constexpr int DT_THREADS = 256;  // 32 x 8
constexpr int DT_TX = 32;        // output columns per block: one warp-wide row
constexpr int DT_ROWS = 4;       // output rows per thread
constexpr int DT_TY = 8 * DT_ROWS;
constexpr int DT_CC = 8;     // input channels per chunk: 8 x 34 x 34 floats = 37 KB for K = 3
constexpr int DT_MAX_K = 7;  // the largest kernel the direct variants take (K = 7: 8 x 38 x 38 floats = 46 KB)

constexpr size_t direct_smem_bytes(int k, int cp) {
    return sizeof(float) * size_t(DT_CC) * ((DT_TY + k - 1) * (DT_TX + k - 1) + k * k * cp);
}

// ---- Winograd configuration (winograd.cu)
constexpr int WG_THREADS = 256;
constexpr int WG_TH = 8, WG_TW = 16;                 // output tile (pixels)
constexpr int WG_PR = WG_TH / 2, WG_PC = WG_TW / 2;  // 4 x 8 patches
constexpr int WG_P = WG_PR * WG_PC;                  // 32 patches
constexpr int WG_CO = 48;                            // output channels per block
constexpr int WG_CG = WG_CO / 4;                     // 12 output channels per thread
constexpr int WG_CC = 8;                             // input channels per chunk
constexpr int WG_HH = WG_TH + 2, WG_HW = WG_TW + 2;  // input tile with halo: 10 x 18
constexpr int WG_HALO = WG_CC * WG_HH * WG_HW;       // 1440 floats per stage
constexpr int WG_US = WG_CC * WG_CO + 16;            // U stride per component (+16: conflict-free, see below)
constexpr int WG_VS = WG_CC * WG_P + 4;              // V stride per component (+4: conflict-free)
constexpr int WG_U = 16 * WG_US;                     // floats per U stage
constexpr int WG_V = 16 * WG_VS;
constexpr int WG_M = 16 * WG_CO * WG_P;  // the accumulators, for the output transform
static_assert(WG_CC * WG_P == WG_THREADS, "one (channel, patch) input transform per thread");
static_assert(16 * 4 * 4 == WG_THREADS, "16 components x 4 channel groups x 4 patch groups");
static_assert(WG_CG % 4 == 0 && WG_P == 4 * 8, "float4 fragments: 12 channels, 8 patches");
// A warp holds 2 components x 4 channel groups x 4 patch groups: with U's
// component stride = 16 (mod 32) banks, the 8 distinct float4 of a U load
// (channel groups at 0, 12, 24, 36 floats) fall on disjoint banks, and with
// V's = 4 (mod 32) so do those of a V load.
static_assert(WG_US % 32 == 16 && WG_VS % 32 == 4, "bank offsets of the component strides");

}  // namespace

// ---- host side (conv2d_variants.cu): messages and launch checks
// "conv2d [1,48,64,64] -> [1,48,64,64], kernel 3, padding 1/1 zero, bias, relu".
std::string context(const Conv2dArgs& a);
// A kernel's dynamic shared memory limit raised to `bytes` (common.cuh), on
// every launch: the limit is per device, and a process may run several
// backends.
void allow_smem(void (*kernel)(ConvParams), size_t bytes, const Conv2dArgs& a);
// check_launch with the op's context built only on failure: context() formats
// the shapes, which every layer of every tile would otherwise pay for.
void check_launched(const Conv2dArgs& a, const char* kernel);
[[noreturn]] void unknown_pad_mode(const Conv2dArgs& a);
// Device memory a call makes for itself (weights packed or transformed, a
// bias rounded for it), freed (stream-ordered) however the call leaves.
struct CallTemp {
    void* ptr = nullptr;
    cudaStream_t stream;
    ~CallTemp() {
        if (ptr) cudaFreeAsync(ptr, stream);
    }
    // `bytes` of it on the stream; OutOfMemory naming `what` where none is left.
    void* allocate(size_t bytes, const Conv2dArgs& a, const char* what);
};
// `bytes` of device memory that prepared weights own (freed by
// ~Conv2dPrepared); OutOfMemory naming `what` where none is left.
void* prepared_alloc(size_t bytes, const Conv2dArgs& a, const char* what);

// ---- each family's launchers, in its file; the variant table points at them
using Launch = void (*)(const ConvParams&, const Conv2dArgs&, int split, cudaStream_t);
template <int BM, int BN>
void launch_double_buffer(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream);
// TF32: the block tile on tensor cores with TF32 operands (igemm_multistage.cu).
template <int BM, int BN, int BK, int STAGES, int FG, int FR, bool TF32>
void launch_multistage(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream);
template <int CP>
void launch_direct(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream);
void launch_winograd(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream);

// ---- a 1x1 convolution as one cuBLASLt GEMM (cublaslt_1x1.cu: what it takes and why)
bool cublaslt_1x1_applies(const Conv2dArgs& a);
// Queues it on `stream`; packed_weights: tc_conv_prepare_weights' (no gate)
// in the input's half type, half_bias: the bias in that type (round_bias;
// null without a bias). NotApplicable where cuBLASLt finds no algorithm.
void cublaslt_1x1(const Conv2dArgs& a, const void* packed_weights, const void* half_bias, cudaStream_t stream);
// Queues the rounding of a.bias (f32, Cout) into `out`, Cout values of `dtype` (F16 or BF16).
void round_bias(const Conv2dArgs& a, DType dtype, void* out, cudaStream_t stream);

}  // namespace imr::cuda::conv2d_detail
