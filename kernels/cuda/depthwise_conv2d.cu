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
// A thread computes a run of R outputs (DwTile below), so each input it
// loads serves up to min(K, R) of them, and issues all of a run's loads
// before its first multiply where they fit in registers, so enough bytes
// are in flight to cover the latency. Every address is 32-bit (the op
// refuses tensors of 2^31 or more elements on CUDA).
//   NCHW: R = 4 consecutive output rows at one column; consecutive threads
//     on consecutive columns, so each load of a warp is 32 consecutive
//     values (one or two 128-byte lines). Its K * K weights are in
//     registers (the same for the whole warp).
//   NHWC8: R = 2 consecutive pixels of a row (4 for K = 1), one 8-channel
//     vector; a block's 256 threads are VB vectors (the pixel's, up to 8;
//     blockIdx.y picks which 8 for wider pixels) x 256 / VB runs, vectors
//     fastest, so each load of a warp is whole 16-byte vectors of
//     neighbouring pixels. The block's weights (VB * 8 channels x K * K
//     taps, <= 12.5 KB) are copied to shared memory transposed to [tap]
//     [channel] first, so a tap's 8 weights are two 16-byte shared loads.
// Measured on the H200 (docs/performance.md): the first version (a thread
// per output, weights from global memory, 64-bit index math) ran at 8-19%
// of the floor; runs of 4 along rows with the rows loaded one at a time, at
// 43-50% (NCHW: each warp load spread over 512 bytes, four L1 wavefronts
// for one of data; NHWC8: ~115 registers, 16 warps an SM, one row's loads
// in flight at a time).
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

// Outputs per thread. NCHW: 4 rows for K <= 3 (6 x 3 input values in
// registers), 1 for K = 5, 7 (their K x K; with 2, K = 7 spilled). NHWC8: 2 pixels for K >= 3 (K rows of
// K + 1 input vectors loaded at once for K = 3: 48 registers), 4 for K = 1;
// ptxas stays under the 128 registers that two 256-thread blocks per SM
// allow.
template <int K>
constexpr int DwRowsNchw = K <= 3 ? 4 : 1;
template <int K>
constexpr int DwPixelsNhwc8 = K == 1 ? 4 : 2;
// NHWC8: a run's K rows loaded before any multiply where they fit (K <= 3);
// K = 5, 7 load row by row.
template <int K>
constexpr bool DwLoadAllRows = K <= 3;

struct DepthwiseParams {
    const void* in;
    void* out;
    const float* weight;  // [C, K, K]
    const float* bias;    // [C] or null
    int c, h, w;          // input
    int oh, ow;           // output
    int vectors;          // NHWC8: 8-channel vectors per pixel
    int pad;              // pad_before
    int pad_after;
    int mode;             // PadMode as int
    int runs_per_row;     // NHWC8: ceil(OW / R); NCHW: OW
    int row_groups;       // NCHW: ceil(OH / R)
    int runs;             // NHWC8: N * OH * runs_per_row; NCHW: N * C * row_groups * OW
    int block_vectors;    // NHWC8: VB
    int runs_per_block;   // NHWC8: 256 / VB
};

// Padded coordinate p -> source index in [0, size), or -1 for a zero. A p
// past the padded extent (p >= size + pad_after: only the last run of a
// row or column reaches it, for outputs it does not store) is -1 too, where
// reflect would index outside the image.
__device__ __forceinline__ int source_index(int p, int size, int pad_after, int mode) {
    if (p >= 0 && p < size) return p;
    if (mode == int(PadMode::Zero) || p >= size + pad_after) return -1;
    if (mode == int(PadMode::Reflect)) return p < 0 ? -p : 2 * (size - 1) - p;
    return p < 0 ? 0 : size - 1;  // Replicate
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS, 2) depthwise_nchw_kernel(const DepthwiseParams p) {
    constexpr int R = DwRowsNchw<K>, S = K + R - 1;  // S: input rows a run reads
    const int run = blockIdx.x * DW_THREADS + threadIdx.x;
    if (run >= p.runs) return;
    const int x = run % p.ow, t = run / p.ow;
    const int plane = t / p.row_groups;  // n * C + c
    const int y0 = (t - plane * p.row_groups) * R, c = plane % p.c;
    const T* in = static_cast<const T*>(p.in) + plane * p.h * p.w;
    T* out = static_cast<T*>(p.out) + (plane * p.oh + y0) * p.ow + x;
    int sx[K];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) sx[kx] = source_index(x + kx - p.pad, p.w, p.pad_after, p.mode);
    float f[S][K];
#pragma unroll
    for (int j = 0; j < S; ++j) {
        const int sy = source_index(y0 + j - p.pad, p.h, p.pad_after, p.mode);
        const T* line = in + sy * p.w;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) f[j][kx] = sy >= 0 && sx[kx] >= 0 ? widen(__ldg(line + sx[kx])) : 0.f;
    }
    const float b = p.bias ? __ldg(p.bias + c) : 0.f;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = b;
#pragma unroll
    for (int ky = 0; ky < K; ++ky)
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
            const float wt = __ldg(p.weight + c * K * K + ky * K + kx);
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += wt * f[r + ky][kx];
        }
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (y0 + r < p.oh) out[r * p.ow] = narrow<T>(acc[r]);
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS, 2) depthwise_nhwc8_kernel(const DepthwiseParams p) {
    constexpr int R = DwPixelsNhwc8<K>, S = K + R - 1;  // S: input vectors a run reads per row
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
    for (int j = 0; j < S; ++j) sx[j] = source_index(x0 + j - p.pad, p.w, p.pad_after, p.mode);
    auto load_row = [&](int ky, uint4 (&raw)[S]) {
        const int sy = source_index(y + ky - p.pad, p.h, p.pad_after, p.mode);
#pragma unroll
        for (int j = 0; j < S; ++j)
            raw[j] = sy >= 0 && sx[j] >= 0 ? __ldg(in + (sy * p.w + sx[j]) * p.vectors) : make_uint4(0u, 0u, 0u, 0u);
    };
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
    // Row ky's taps applied to its S vectors (a zero vector stands for a
    // padded zero or an unused column), each unpacked once.
    auto accumulate = [&](int ky, const uint4 (&raw)[S]) {
#pragma unroll
        for (int j = 0; j < S; ++j) {
            float f[8];
            unpack8<T>(raw[j], f);
#pragma unroll
            for (int kx = 0; kx < K; ++kx) {
                const int r = j - kx;
                if (r < 0 || r >= R) continue;
                const float4 w0 = *reinterpret_cast<const float4*>(&w_s[ky * K + kx][vl * 8]);
                const float4 w1 = *reinterpret_cast<const float4*>(&w_s[ky * K + kx][vl * 8 + 4]);
                const float wt[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[r][k] += wt[k] * f[k];
            }
        }
    };
    if constexpr (DwLoadAllRows<K>) {
        uint4 raw[K][S];
#pragma unroll
        for (int ky = 0; ky < K; ++ky) load_row(ky, raw[ky]);
#pragma unroll
        for (int ky = 0; ky < K; ++ky) accumulate(ky, raw[ky]);
    } else {
#pragma unroll
        for (int ky = 0; ky < K; ++ky) {
            uint4 raw[S];
            load_row(ky, raw);
            accumulate(ky, raw);
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
    if (nhwc8) {
        if constexpr (sizeof(T) == 2) {
            constexpr int R = DwPixelsNhwc8<K>;
            p.runs_per_row = (p.ow + R - 1) / R;
            p.block_vectors = p.vectors < DW_BLOCK_VECTORS ? p.vectors : DW_BLOCK_VECTORS;
            p.runs_per_block = DW_THREADS / p.block_vectors;
            p.runs = n * p.oh * p.runs_per_row;
            const dim3 grid(unsigned((p.runs + p.runs_per_block - 1) / p.runs_per_block),
                            unsigned((p.vectors + DW_BLOCK_VECTORS - 1) / DW_BLOCK_VECTORS));
            depthwise_nhwc8_kernel<T, K><<<grid, DW_THREADS, 0, stream>>>(p);
        }
    } else {
        constexpr int R = DwRowsNchw<K>;
        p.runs_per_row = p.ow;
        p.row_groups = (p.oh + R - 1) / R;
        p.runs = n * p.c * p.row_groups * p.ow;
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
    p.pad = a.pad_before, p.pad_after = a.pad_after, p.mode = int(a.pad_mode);
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
