// depthwise_conv2d on CUDA (semantics in kernels/ops/depthwise_conv2d.h):
// f32 NCHW, and f16/bf16 NHWC8 (computed in float, rounded once on store;
// the output's padding channels written as zeros, the input's never used).
//
// Floor: 2 * K * K FLOPs per output element and one read and one write of
// it (the K * K re-reads of each input element hit L1: neighbouring threads
// share them). H200: f32 K = 3 is memory-bound (18 FLOPs per 8 bytes, the
// machine balance is ~14 FLOP/byte), K = 7 (98 per 8) is FMA-bound at ~67
// TFLOP/s; in half (4 bytes per element) K >= 5 is FMA-bound. A 12 MP image
// of 64 channels, K = 3: 3 GB in f32, ~0.7 ms at 4.27 TB/s.
//
// A thread computes a run of R consecutive output pixels of one row (R = 4
// for K <= 3, 2 for K = 5, 7: DwTile below), so each input row it touches
// is loaded once for R outputs (K + R - 1 loads instead of K R) and the
// index math and weights are paid once per run. Every address is 32-bit
// (the op refuses tensors of 2^31 or more elements on CUDA).
//   NHWC8: a thread takes one 8-channel vector; a block's 256 threads are
//     VB vectors (the pixel's, up to 8; blockIdx.y picks which 8 for wider
//     pixels) x 256 / VB runs, vectors fastest, so each load of a warp is
//     whole 16-byte vectors of neighbouring runs' pixels. The block's
//     weights (VB * 8 channels x K * K taps, <= 12.5 KB) are copied to
//     shared memory transposed to [tap][channel] first, so a tap's 8
//     weights are two 16-byte shared loads instead of 8 scattered global
//     ones (the first version read them from global memory and ran at 8-19%
//     of the floor).
//   NCHW: a thread takes one run of one channel's row, runs fastest along
//     the row, so a warp's loads of one column cover 4 R consecutive values;
//     its K * K weights are in registers (the same for the whole warp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"
#include "vector8.cuh"

namespace imr::cuda {
namespace {

constexpr int DW_THREADS = 256;
// NHWC8: vectors of a pixel a block takes at most (64 channels).
constexpr int DW_BLOCK_VECTORS = 8;

// Output pixels per thread for kernel size K: 4 where K + R - 1 input
// vectors of a row fit beside the 4 x 8 accumulators (K <= 3: 6 x 8
// floats), 2 for K = 5, 7 (8 x 8), keeping ptxas under the 128 registers
// that two 256-thread blocks per SM allow.
template <int K>
constexpr int DwTile = K <= 3 ? 4 : 2;

struct DepthwiseParams {
    const void* in;
    void* out;
    const float* weight;  // [C, K, K]
    const float* bias;    // [C] or null
    int c, h, w;          // input
    int oh, ow;           // output
    int vectors;          // NHWC8: 8-channel vectors per pixel
    int pad;              // pad_before
    int mode;             // PadMode as int
    int runs_per_row;     // ceil(OW / R)
    int runs;             // N * OH * runs_per_row (NCHW: times C)
    int block_vectors;    // NHWC8: VB
    int runs_per_block;   // NHWC8: 256 / VB
};

// Padded coordinate p -> source index in [0, size), or -1 for a zero.
__device__ __forceinline__ int source_index(int p, int size, int mode) {
    if (p >= 0 && p < size) return p;
    if (mode == int(PadMode::Zero)) return -1;
    if (mode == int(PadMode::Reflect)) return p < 0 ? -p : 2 * (size - 1) - p;
    return p < 0 ? 0 : size - 1;  // Replicate
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS, 2) depthwise_nchw_kernel(const DepthwiseParams p) {
    constexpr int R = DwTile<K>, S = K + R - 1;  // S: input columns a run reads per row
    const int run = blockIdx.x * DW_THREADS + threadIdx.x;
    if (run >= p.runs) return;
    const int row = run / p.runs_per_row;  // (n * C + c) * OH + y
    const int x0 = (run - row * p.runs_per_row) * R;
    const int plane = row / p.oh;  // n * C + c
    const int y = row - plane * p.oh, c = plane % p.c;
    const T* in = static_cast<const T*>(p.in) + plane * p.h * p.w;
    T* out = static_cast<T*>(p.out) + row * p.ow + x0;
    float wk[K * K];
#pragma unroll
    for (int t = 0; t < K * K; ++t) wk[t] = __ldg(p.weight + c * K * K + t);
    int sx[S];
#pragma unroll
    for (int j = 0; j < S; ++j) sx[j] = source_index(x0 + j - p.pad, p.w, p.mode);
    const float b = p.bias ? __ldg(p.bias + c) : 0.f;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = b;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
        const int sy = source_index(y + ky - p.pad, p.h, p.mode);
        if (sy < 0) continue;
        const T* line = in + sy * p.w;
        float f[S];
#pragma unroll
        for (int j = 0; j < S; ++j) f[j] = sx[j] >= 0 ? widen(__ldg(line + sx[j])) : 0.f;
#pragma unroll
        for (int kx = 0; kx < K; ++kx)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += wk[ky * K + kx] * f[r + kx];
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (x0 + r < p.ow) out[r] = narrow<T>(acc[r]);
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS, 2) depthwise_nhwc8_kernel(const DepthwiseParams p) {
    constexpr int R = DwTile<K>, S = K + R - 1;
    __shared__ __align__(16) float w_s[K * K][DW_BLOCK_VECTORS * 8];  // [tap][channel of the block]
    __shared__ __align__(16) float b_s[DW_BLOCK_VECTORS * 8];
    const int vb = p.block_vectors, c_first = blockIdx.y * DW_BLOCK_VECTORS * 8;
    for (int i = threadIdx.x; i < K * K * vb * 8; i += DW_THREADS) {
        const int cl = i % (vb * 8), tap = i / (vb * 8), c = c_first + cl;
        w_s[tap][cl] = c < p.c ? __ldg(p.weight + c * K * K + tap) : 0.f;
    }
    for (int cl = threadIdx.x; cl < vb * 8; cl += DW_THREADS)
        b_s[cl] = p.bias && c_first + cl < p.c ? __ldg(p.bias + c_first + cl) : 0.f;
    __syncthreads();
    const int vl = int(threadIdx.x) % vb, run_in_block = int(threadIdx.x) / vb;
    const int v = blockIdx.y * DW_BLOCK_VECTORS + vl;
    const int run = blockIdx.x * p.runs_per_block + run_in_block;
    if (run_in_block >= p.runs_per_block || v >= p.vectors || run >= p.runs) return;
    const int row = run / p.runs_per_row;  // n * OH + y
    const int x0 = (run - row * p.runs_per_row) * R;
    const int n = row / p.oh, y = row - n * p.oh;
    const uint4* in = static_cast<const uint4*>(p.in) + n * p.h * p.w * p.vectors + v;
    uint4* out = static_cast<uint4*>(p.out) + (row * p.ow + x0) * p.vectors + v;
    int sx[S];
#pragma unroll
    for (int j = 0; j < S; ++j) sx[j] = source_index(x0 + j - p.pad, p.w, p.mode);
    float acc[R][8];
    {
        const float4 b0 = *reinterpret_cast<const float4*>(&b_s[vl * 8]);
        const float4 b1 = *reinterpret_cast<const float4*>(&b_s[vl * 8 + 4]);
        const float bias[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int k = 0; k < 8; ++k) acc[r][k] = bias[k];
    }
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
        const int sy = source_index(y + ky - p.pad, p.h, p.mode);
        if (sy < 0) continue;
        uint4 raw[S];
#pragma unroll
        for (int j = 0; j < S; ++j)
            raw[j] = sx[j] >= 0 ? __ldg(in + (sy * p.w + sx[j]) * p.vectors) : make_uint4(0u, 0u, 0u, 0u);
        float f[S][8];
#pragma unroll
        for (int j = 0; j < S; ++j) unpack8<T>(raw[j], f[j]);
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
            const float4 w0 = *reinterpret_cast<const float4*>(&w_s[ky * K + kx][vl * 8]);
            const float4 w1 = *reinterpret_cast<const float4*>(&w_s[ky * K + kx][vl * 8 + 4]);
            const float wt[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[r][k] += wt[k] * f[r + kx][k];
        }
    }
    const int c0 = v * 8;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (x0 + r >= p.ow) break;
#pragma unroll
        for (int k = 0; k < 8; ++k)
            if (c0 + k >= p.c) acc[r][k] = 0.f;  // the output's padding channels
        out[r * p.vectors] = pack8<T>(acc[r]);
    }
}

template <class T, int K>
void launch(DepthwiseParams p, bool nhwc8, int n, cudaStream_t stream) {
    constexpr int R = DwTile<K>;
    p.runs_per_row = (p.ow + R - 1) / R;
    if (nhwc8) {
        if constexpr (sizeof(T) == 2) {
            p.block_vectors = p.vectors < DW_BLOCK_VECTORS ? p.vectors : DW_BLOCK_VECTORS;
            p.runs_per_block = DW_THREADS / p.block_vectors;
            p.runs = n * p.oh * p.runs_per_row;
            const dim3 grid(unsigned((p.runs + p.runs_per_block - 1) / p.runs_per_block),
                            unsigned((p.vectors + DW_BLOCK_VECTORS - 1) / DW_BLOCK_VECTORS));
            depthwise_nhwc8_kernel<T, K><<<grid, DW_THREADS, 0, stream>>>(p);
        }
    } else {
        p.runs = n * p.c * p.oh * p.runs_per_row;
        depthwise_nchw_kernel<T, K><<<unsigned((p.runs + DW_THREADS - 1) / DW_THREADS), DW_THREADS, 0, stream>>>(p);
    }
}

template <class T>
void launch(const DepthwiseParams& p, int k, bool nhwc8, int n, cudaStream_t stream) {
    switch (k) {
        case 1:
            return launch<T, 1>(p, nhwc8, n, stream);
        case 3:
            return launch<T, 3>(p, nhwc8, n, stream);
        case 5:
            return launch<T, 5>(p, nhwc8, n, stream);
        default:
            return launch<T, 7>(p, nhwc8, n, stream);  // check_args: K odd, <= 7
    }
}

}  // namespace

void CudaBackend::depthwise_conv2d(const DepthwiseConv2dArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::DepthwiseConv2d, {&a.input, &a.output});
    static_assert(kDepthwiseMaxKernel == 7, "a kernel size without its instantiation");
    const Shape& s = a.input.shape;
    const Shape o = a.out_shape();
    const std::string context = "depthwise_conv2d " + a.input.str() + ", kernel " + std::to_string(a.kernel);
    if (a.input.stored_count() >= size_t(INT_MAX) || a.output.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    const bool nhwc8 = a.input.layout == Layout::NHWC8;
    if ((a.input.layout != Layout::NCHW && !nhwc8) || (nhwc8 && a.input.dtype == DType::F32))
        throw Error(context + ": no CUDA kernel takes " + a.input.str());  // supports() refuses these first
    DepthwiseParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.weight = a.weight.as<const float>(), p.bias = a.bias.as<const float>();
    p.c = s.c, p.h = s.h, p.w = s.w, p.oh = o.h, p.ow = o.w;
    p.vectors = stored_channels(Layout::NHWC8, s.c) / 8;
    p.pad = a.pad_before, p.mode = int(a.pad_mode);
    if (nhwc8) {
        check_aligned16(a.input.data, context, "input");
        check_aligned16(a.output.data, context, "output");
    }
    switch (a.input.dtype) {
        case DType::F32:
            launch<float>(p, a.kernel, nhwc8, o.n, stream_);
            break;
        case DType::F16:
            launch<__half>(p, a.kernel, nhwc8, o.n, stream_);
            break;
        case DType::BF16:
            launch<__nv_bfloat16>(p, a.kernel, nhwc8, o.n, stream_);
            break;
    }
    check_launch(context, "depthwise_conv2d kernel launch");
}

}  // namespace imr::cuda
