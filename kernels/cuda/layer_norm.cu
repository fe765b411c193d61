// layer_norm on CUDA (semantics in kernels/ops/layer_norm.h): f32 NCHW, and
// f16/bf16 NHWC8 (computed in float, rounded once on store; the padding
// channels of the output written as zeros, those of the input never read).
//
// Floor: memory-bound. Per element, read it once and write it once (8 bytes
// in f32, 4 in half) for ~8 FLOPs: a 12 MP image of 32 channels in f16 is
// 0.77 GB each way, ~0.32 ms at 4.8 TB/s (H200). The statistics are two
// passes over a pixel's channels (the mean, then the squared deviations from
// it: no cancellation when |mean| >> the deviations, which a one-pass sum of
// squares would suffer; the error bound tests/test_ops.cpp derives is this
// algorithm's).
//
// NHWC8: a pixel's channels are contiguous, so a group of L lanes (L a power
// of two, the smallest >= the pixel's 8-channel vectors, at most 32) takes one
// pixel: each lane loads 16-byte vectors (coalesced: the groups of a warp
// cover consecutive pixels), keeps up to V of them in registers for the
// second pass and the output (V = 1 for C <= 256; V = 4 above, i.e. 1024
// channels cached; a pixel wider than that re-reads the rest from L1/L2),
// and the group reduces its sums with xor shuffles. So DRAM sees each element
// once each way for C <= 1024.
// NCHW: a pixel's channels are H*W apart; one thread per pixel, consecutive
// threads on consecutive pixels (every channel's load is coalesced), three
// passes over the channels: the 2nd and 3rd re-read what the 1st brought in,
// from L1/L2 (a 256-thread block's pixels x C floats: 32 KB at C = 32), so
// DRAM traffic stays near the floor while the working set fits the L2.
// 256 threads per block: a multiple of 32 that keeps 8 blocks per SM
// resident (the kernels use few registers and no shared memory).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <sstream>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"
#include "vector8.cuh"

namespace imr::cuda {
namespace {

constexpr int LN_THREADS = 256;

struct LayerNormParams {
    const void* in;
    void* out;
    const float* weight;
    const float* bias;
    int c;             // channels
    int vectors;       // NHWC8: 8-channel vectors per pixel (stored channels / 8)
    int plane;         // NCHW: H * W
    long long pixels;  // N * H * W
    float eps;
};

// One thread per pixel of an NCHW tensor.
template <class T>
__global__ void __launch_bounds__(LN_THREADS) layer_norm_nchw_kernel(const LayerNormParams p) {
    const long long i = (long long)blockIdx.x * LN_THREADS + threadIdx.x;
    if (i >= p.pixels) return;
    const long long n = i / p.plane, hw = i - n * p.plane;
    const T* in = static_cast<const T*>(p.in) + n * p.c * (long long)p.plane + hw;
    T* out = static_cast<T*>(p.out) + n * p.c * (long long)p.plane + hw;
    const float channels = float(p.c);
    float sum = 0.f;
    for (int c = 0; c < p.c; ++c) sum += widen(__ldg(in + (long long)c * p.plane));
    const float mean = sum / channels;
    float squares = 0.f;
    for (int c = 0; c < p.c; ++c) {
        const float d = widen(__ldg(in + (long long)c * p.plane)) - mean;
        squares += d * d;
    }
    const float scale = 1.0f / sqrtf(squares / channels + p.eps);
    for (int c = 0; c < p.c; ++c) {
        const float x = widen(__ldg(in + (long long)c * p.plane));
        out[(long long)c * p.plane] = narrow<T>((x - mean) * scale * __ldg(p.weight + c) + __ldg(p.bias + c));
    }
}

// Sum over the L lanes of a group (L a power of two dividing 32; every lane
// of the warp calls it).
template <int L>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = L / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset, L);
    return v;
}

// Sum of the real channels (c0 + k < C) of a vector, and of their squared
// deviations from `mean`.
template <class T>
__device__ __forceinline__ float vector_sum(const uint4& v, int c0, int channels) {
    float f[8];
    unpack8<T>(v, f);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (c0 + k < channels) s += f[k];
    return s;
}
template <class T>
__device__ __forceinline__ float vector_squares(const uint4& v, int c0, int channels, float mean) {
    float f[8];
    unpack8<T>(v, f);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (c0 + k < channels) {
            const float d = f[k] - mean;
            s += d * d;
        }
    return s;
}
// The normalized vector (padding channels 0).
template <class T>
__device__ __forceinline__ uint4 vector_normalize(const uint4& v, int c0, const LayerNormParams& p, float mean,
                                                  float scale) {
    float f[8];
    unpack8<T>(v, f);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        const int c = c0 + k;
        f[k] = c < p.c ? (f[k] - mean) * scale * __ldg(p.weight + c) + __ldg(p.bias + c) : 0.f;
    }
    return pack8<T>(f);
}

// L lanes per pixel of an NHWC8 tensor, V vectors per lane kept in registers.
template <class T, int L, int V>
__global__ void __launch_bounds__(LN_THREADS) layer_norm_nhwc8_kernel(const LayerNormParams p) {
    static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0 && LN_THREADS % 32 == 0, "groups must tile a warp");
    const int lane = int(threadIdx.x) % L;
    const long long pixel = ((long long)blockIdx.x * LN_THREADS + threadIdx.x) / L;
    // No early return: every lane of the warp takes part in the shuffles.
    const bool active = pixel < p.pixels;
    const uint4* in = static_cast<const uint4*>(p.in) + (active ? pixel : 0) * p.vectors;
    uint4* out = static_cast<uint4*>(p.out) + (active ? pixel : 0) * p.vectors;
    const float channels = float(p.c);

    uint4 cache[V];
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int v = lane + j * L;
        cache[j] = make_uint4(0u, 0u, 0u, 0u);
        if (active && v < p.vectors) {
            cache[j] = __ldg(in + v);
            sum += vector_sum<T>(cache[j], v * 8, p.c);
        }
    }
    for (int v = lane + V * L; active && v < p.vectors; v += L) sum += vector_sum<T>(__ldg(in + v), v * 8, p.c);
    const float mean = group_sum<L>(sum) / channels;

    float squares = 0.f;
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int v = lane + j * L;
        if (active && v < p.vectors) squares += vector_squares<T>(cache[j], v * 8, p.c, mean);
    }
    for (int v = lane + V * L; active && v < p.vectors; v += L)
        squares += vector_squares<T>(__ldg(in + v), v * 8, p.c, mean);
    const float scale = 1.0f / sqrtf(group_sum<L>(squares) / channels + p.eps);

    if (!active) return;
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int v = lane + j * L;
        if (v < p.vectors) out[v] = vector_normalize<T>(cache[j], v * 8, p, mean, scale);
    }
    for (int v = lane + V * L; v < p.vectors; v += L)
        out[v] = vector_normalize<T>(__ldg(in + v), v * 8, p, mean, scale);
}

template <class T, int L, int V>
void launch_nhwc8(const LayerNormParams& p, cudaStream_t stream) {
    const long long threads = p.pixels * L;
    const unsigned blocks = unsigned((threads + LN_THREADS - 1) / LN_THREADS);
    layer_norm_nhwc8_kernel<T, L, V><<<blocks, LN_THREADS, 0, stream>>>(p);
}

// Lanes per pixel: the smallest power of two >= the vectors (<= 32), so a
// group's lanes each hold one vector; wider pixels take a warp and 4 vectors
// per lane in registers.
template <class T>
void launch_nhwc8(const LayerNormParams& p, cudaStream_t stream) {
    const int v = p.vectors;
    if (v <= 1) return launch_nhwc8<T, 1, 1>(p, stream);
    if (v <= 2) return launch_nhwc8<T, 2, 1>(p, stream);
    if (v <= 4) return launch_nhwc8<T, 4, 1>(p, stream);
    if (v <= 8) return launch_nhwc8<T, 8, 1>(p, stream);
    if (v <= 16) return launch_nhwc8<T, 16, 1>(p, stream);
    if (v <= 32) return launch_nhwc8<T, 32, 1>(p, stream);
    return launch_nhwc8<T, 32, 4>(p, stream);
}

}  // namespace

void CudaBackend::layer_norm(const LayerNormArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::LayerNorm, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    std::ostringstream eps;
    eps << a.eps;
    const std::string context = "layer_norm " + a.input.str() + ", eps " + eps.str();
    if (a.input.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    LayerNormParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.weight = a.weight.as<const float>(), p.bias = a.bias.as<const float>();
    p.c = s.c, p.vectors = stored_channels(Layout::NHWC8, s.c) / 8, p.plane = s.h * s.w;
    p.pixels = (long long)s.n * s.h * s.w;
    p.eps = a.eps;
    if (a.input.layout == Layout::NCHW) {
        const unsigned blocks = unsigned((p.pixels + LN_THREADS - 1) / LN_THREADS);
        switch (a.input.dtype) {
            case DType::F32:
                layer_norm_nchw_kernel<float><<<blocks, LN_THREADS, 0, stream_>>>(p);
                break;
            case DType::F16:
                layer_norm_nchw_kernel<__half><<<blocks, LN_THREADS, 0, stream_>>>(p);
                break;
            case DType::BF16:
                layer_norm_nchw_kernel<__nv_bfloat16><<<blocks, LN_THREADS, 0, stream_>>>(p);
                break;
        }
        check_launch(context, "layer_norm_nchw_kernel launch");
        return;
    }
    if (a.input.layout != Layout::NHWC8 || a.input.dtype == DType::F32)
        throw Error(context + ": no CUDA kernel takes " + a.input.str());  // supports() refuses these first
    check_aligned16(a.input.data, context, "input");
    check_aligned16(a.output.data, context, "output");
    if (a.input.dtype == DType::F16)
        launch_nhwc8<__half>(p, stream_);
    else
        launch_nhwc8<__nv_bfloat16>(p, stream_);
    check_launch(context, "layer_norm_nhwc8_kernel launch");
}

}  // namespace imr::cuda
