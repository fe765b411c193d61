// depthwise_conv2d on CUDA (semantics in kernels/ops/depthwise_conv2d.h):
// f32 NCHW, and f16/bf16 NHWC8 (computed in float, rounded once on store;
// the output's padding channels written as zeros, the input's never used).
//
// Floor: 2 * K * K FLOPs per output element and one read and one write of
// it (the K * K re-reads of each input element hit L1: neighbouring threads
// share them). H200: f32 K = 3 is memory-bound (18 FLOPs per 8 bytes, the
// machine balance is ~14 FLOP/byte), K = 7 (98 per 8) is FMA-bound at ~67
// TFLOP/s; in half (4 bytes per element) K >= 5 is FMA-bound. A 12 MP image
// of 64 channels, K = 3: 3 GB in f32, ~0.65 ms at 4.8 TB/s.
//
// One thread per output element (NCHW) or per 8-channel vector of an output
// pixel (NHWC8), consecutive threads on consecutive addresses of the output,
// so every tap's loads are coalesced (NCHW: a warp reads 32 consecutive
// floats of a row; NHWC8: the warp's 16-byte vectors are consecutive in
// memory) and the K * K taps of neighbouring threads overlap in L1. The
// kernel size is a template parameter (1, 3, 5, 7) so the taps unroll; the
// padding (zero/reflect/replicate) is an index map per row and column, taken
// once per tap row/column. Weights are read through the read-only cache:
// NCHW reads one channel's K * K floats, the same for the whole warp (a
// broadcast); NHWC8 reads 8 channels' per tap (strided by K * K floats,
// L1-resident: C * K * K * 4 bytes, <= 100 KB for C = 512, K = 7).
// 256 threads per block: a multiple of 32 with 8 blocks resident per SM; no
// shared memory, few registers (NHWC8: 8 accumulators).
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
    long long count;      // threads: output elements (NCHW) or output vectors (NHWC8)
};

// Padded coordinate p -> source index in [0, size), or -1 for a zero.
__device__ __forceinline__ int source_index(int p, int size, int mode) {
    if (p >= 0 && p < size) return p;
    if (mode == int(PadMode::Zero)) return -1;
    if (mode == int(PadMode::Reflect)) return p < 0 ? -p : 2 * (size - 1) - p;
    return p < 0 ? 0 : size - 1;  // Replicate
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS) depthwise_nchw_kernel(const DepthwiseParams p) {
    const long long i = (long long)blockIdx.x * DW_THREADS + threadIdx.x;
    if (i >= p.count) return;
    const long long row = i / p.ow;  // plane * OH + y
    const int x = int(i - row * p.ow);
    const long long plane = row / p.oh;  // n * C + c
    const int y = int(row - plane * p.oh);
    const int c = int(plane % p.c);
    const T* in = static_cast<const T*>(p.in) + plane * p.h * (long long)p.w;
    const float* w = p.weight + c * K * K;
    int sx[K];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) sx[kx] = source_index(x + kx - p.pad, p.w, p.mode);
    float acc = p.bias ? __ldg(p.bias + c) : 0.f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
        const int sy = source_index(y + ky - p.pad, p.h, p.mode);
        if (sy < 0) continue;
        const T* line = in + (long long)sy * p.w;
#pragma unroll
        for (int kx = 0; kx < K; ++kx)
            if (sx[kx] >= 0) acc += __ldg(w + ky * K + kx) * widen(__ldg(line + sx[kx]));
    }
    static_cast<T*>(p.out)[i] = narrow<T>(acc);
}

template <class T, int K>
__global__ void __launch_bounds__(DW_THREADS) depthwise_nhwc8_kernel(const DepthwiseParams p) {
    const long long i = (long long)blockIdx.x * DW_THREADS + threadIdx.x;
    if (i >= p.count) return;
    const long long pixel = i / p.vectors;  // (n * OH + y) * OW + x
    const int v = int(i - pixel * p.vectors), c0 = v * 8;
    const long long row = pixel / p.ow;
    const int x = int(pixel - row * p.ow);
    const int n = int(row / p.oh), y = int(row - (long long)n * p.oh);
    const uint4* in = static_cast<const uint4*>(p.in) + (long long)n * p.h * p.w * p.vectors + v;
    int sx[K];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) sx[kx] = source_index(x + kx - p.pad, p.w, p.mode);
    float acc[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = (p.bias && c0 + k < p.c) ? __ldg(p.bias + c0 + k) : 0.f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
        const int sy = source_index(y + ky - p.pad, p.h, p.mode);
        if (sy < 0) continue;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
            if (sx[kx] < 0) continue;
            float f[8];
            unpack8<T>(__ldg(in + ((long long)sy * p.w + sx[kx]) * p.vectors), f);
#pragma unroll
            for (int k = 0; k < 8; ++k)
                if (c0 + k < p.c) acc[k] += __ldg(p.weight + (c0 + k) * K * K + ky * K + kx) * f[k];
        }
    }
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (c0 + k >= p.c) acc[k] = 0.f;  // the output's padding channels
    static_cast<uint4*>(p.out)[i] = pack8<T>(acc);
}

template <class T, int K>
void launch(const DepthwiseParams& p, bool nhwc8, cudaStream_t stream) {
    const unsigned blocks = unsigned((p.count + DW_THREADS - 1) / DW_THREADS);
    if (nhwc8) {
        if constexpr (sizeof(T) == 2) depthwise_nhwc8_kernel<T, K><<<blocks, DW_THREADS, 0, stream>>>(p);
    } else {
        depthwise_nchw_kernel<T, K><<<blocks, DW_THREADS, 0, stream>>>(p);
    }
}

template <class T>
void launch(const DepthwiseParams& p, int k, bool nhwc8, cudaStream_t stream) {
    switch (k) {
        case 1:
            return launch<T, 1>(p, nhwc8, stream);
        case 3:
            return launch<T, 3>(p, nhwc8, stream);
        case 5:
            return launch<T, 5>(p, nhwc8, stream);
        default:
            return launch<T, 7>(p, nhwc8, stream);  // check_args: K odd, <= 7
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
    p.count = nhwc8 ? (long long)o.n * o.h * o.w * p.vectors : (long long)o.count();
    if (nhwc8) {
        check_aligned16(a.input.data, context, "input");
        check_aligned16(a.output.data, context, "output");
    }
    switch (a.input.dtype) {
        case DType::F32:
            launch<float>(p, a.kernel, nhwc8, stream_);
            break;
        case DType::F16:
            launch<__half>(p, a.kernel, nhwc8, stream_);
            break;
        case DType::BF16:
            launch<__nv_bfloat16>(p, a.kernel, nhwc8, stream_);
            break;
    }
    check_launch(context, "depthwise_conv2d kernel launch");
}

}  // namespace imr::cuda
