// layer_norm on CUDA (semantics in kernels/ops/layer_norm.h): f32 NCHW, and
// f16/bf16 NHWC8 (computed in float, rounded once on store; the padding
// channels of the output written as zeros, those of the input loaded with
// their vector but never used).
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
// of two, the smallest >= the pixel's 8-channel vectors, at most 32) takes
// pixels: each lane loads 16-byte vectors (coalesced: the groups of a warp
// cover consecutive pixels) and keeps V of them in registers for the second
// pass and the output (V: the pixel's vectors over 32, up to 4, i.e. 1024
// channels cached; a pixel wider than that re-reads the rest from L1/L2),
// and the group reduces its sums with xor shuffles. A group takes P pixels
// at once (2 where a lane holds one vector, else 1), so their loads are in
// flight together and their shuffle chains overlap; its lanes' weights and
// biases sit in registers, and one wave of blocks loops over the pixels.
// Measured on the H200 (tenth session): one pixel a group, weights loaded
// per element, ran the 256- and 512-channel rows at 37-39% of the floor;
// this version at 60-74%. DRAM sees each element once each way for C <= 1024.
// NCHW: a pixel's channels are H*W apart. A block is 32 consecutive pixels
// x G channel groups (a warp per group: every load is 32 consecutive
// values of one channel), each thread holding its ceil(C / G) channels of
// its pixel in registers (up to 32: C <= 512), the groups' partial sums
// added in shared memory. So DRAM sees each element once each way; the
// first version (a thread per pixel, three passes over its channels through
// L1/L2) ran at 25-49% of the floor from 64 channels up, where a block's
// pixels' channels no longer fit L1. Wider tensors (C > 512) take that
// version still.
// 256 threads per block (NCHW above 256 channels: 512, its 16 groups), a
// multiple of 32 that keeps several blocks per SM resident.
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

// One thread per pixel of an NCHW tensor (C > 512: three passes over its
// channels, the second and third through L1/L2).
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

// NCHW, C <= G CPT: 32 pixels x G channel groups a block (a warp per
// group), thread (pixel, g) holding channels g, g + G, ... in registers.
// G = 8 up to 256 channels, 16 up to 512 (CPT <= 32: ~100 registers; with
// 64 a thread the 512-channel row ran at 45%, one 8-warp block per SM).
template <class T, int G, int CPT>
__global__ void __launch_bounds__(32 * G) layer_norm_nchw_cached_kernel(const LayerNormParams p) {
    __shared__ float part[G][32];
    __shared__ float stat[32];
    const int px = int(threadIdx.x) % 32, g = int(threadIdx.x) / 32;
    const long long i = (long long)blockIdx.x * 32 + px;
    const bool active = i < p.pixels;
    const long long n = active ? i / p.plane : 0, hw = active ? i - n * p.plane : 0;
    const T* in = static_cast<const T*>(p.in) + n * p.c * (long long)p.plane + hw;
    T* out = static_cast<T*>(p.out) + n * p.c * (long long)p.plane + hw;
    float x[CPT];
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < CPT; ++j) {
        const int c = g + j * G;
        x[j] = active && c < p.c ? widen(__ldg(in + (long long)c * p.plane)) : 0.f;
        sum += x[j];
    }
    // The pixel's total of `value` over its G groups, finish(total) for all
    // of them. Each thread reads stat[] before it can reach the next call's
    // first barrier, after which alone part[] and stat[] are written again.
    auto block_total = [&](float value, auto finish) {
        part[g][px] = value;
        __syncthreads();
        if (g == 0) {
            float s = 0.f;
#pragma unroll
            for (int k = 0; k < G; ++k) s += part[k][px];
            stat[px] = finish(s);
        }
        __syncthreads();
        return stat[px];
    };
    const float mean = block_total(sum, [&](float s) { return s / float(p.c); });
    float squares = 0.f;
#pragma unroll
    for (int j = 0; j < CPT; ++j) {
        const int c = g + j * G;
        const float d = x[j] - mean;
        if (c < p.c) squares += d * d;
    }
    const float scale = block_total(squares, [&](float s) { return 1.0f / sqrtf(s / float(p.c) + p.eps); });
    if (!active) return;
#pragma unroll
    for (int j = 0; j < CPT; ++j) {
        const int c = g + j * G;
        if (c < p.c)
            out[(long long)c * p.plane] = narrow<T>((x[j] - mean) * scale * __ldg(p.weight + c) + __ldg(p.bias + c));
    }
}

template <class T>
void launch_nchw(const LayerNormParams& p, cudaStream_t stream) {
    const unsigned blocks = unsigned((p.pixels + 31) / 32);
    const int c = p.c;
    if (c <= 16) return layer_norm_nchw_cached_kernel<T, 8, 2><<<blocks, 256, 0, stream>>>(p);
    if (c <= 32) return layer_norm_nchw_cached_kernel<T, 8, 4><<<blocks, 256, 0, stream>>>(p);
    if (c <= 64) return layer_norm_nchw_cached_kernel<T, 8, 8><<<blocks, 256, 0, stream>>>(p);
    if (c <= 128) return layer_norm_nchw_cached_kernel<T, 8, 16><<<blocks, 256, 0, stream>>>(p);
    if (c <= 256) return layer_norm_nchw_cached_kernel<T, 8, 32><<<blocks, 256, 0, stream>>>(p);
    if (c <= 512) return layer_norm_nchw_cached_kernel<T, 16, 32><<<blocks, 512, 0, stream>>>(p);
    layer_norm_nchw_kernel<T><<<unsigned((p.pixels + LN_THREADS - 1) / LN_THREADS), LN_THREADS, 0, stream>>>(p);
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

// L lanes per pixel of an NHWC8 tensor, V vectors per lane kept in
// registers, P pixels per group at once: a block's G = 256 / L groups take
// pixels first + j G + g (j < P), so for each j a warp's groups read
// consecutive pixels; then the next P G pixels a grid further (a lane's
// channels stay the same, so its weights and biases are loaded once, into
// registers: the first version loaded both per channel and pixel).
template <class T, int L, int V, int P>
__global__ void __launch_bounds__(LN_THREADS) layer_norm_nhwc8_kernel(const LayerNormParams p) {
    static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0 && LN_THREADS % 32 == 0, "groups must tile a warp");
    constexpr int G = LN_THREADS / L;
    const int lane = int(threadIdx.x) % L, g = int(threadIdx.x) / L;
    const float channels = float(p.c);
    float wt[V][8], bs[V][8];
#pragma unroll
    for (int k = 0; k < V; ++k)
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const int c = (lane + k * L) * 8 + e;
            wt[k][e] = c < p.c ? __ldg(p.weight + c) : 0.f;
            bs[k][e] = c < p.c ? __ldg(p.bias + c) : 0.f;
        }
    // The cached vectors normalized with the lane's weights; padding
    // channels written as 0 by selection, not by their zero weight (a NaN in
    // the input's padding, or an infinite (x - mean) * scale, times 0 is NaN).
    auto normalize = [&](const uint4& v, int k, float mean, float scale) {
        float f[8];
        unpack8<T>(v, f);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            f[e] = (lane + k * L) * 8 + e < p.c ? (f[e] - mean) * scale * wt[k][e] + bs[k][e] : 0.f;
        return pack8<T>(f);
    };
    // No early return: every lane of the warp takes part in the shuffles,
    // and every group of a block runs the same number of iterations.
    for (long long first = (long long)blockIdx.x * G * P + g; first - g < p.pixels;
         first += (long long)gridDim.x * G * P) {
        bool active[P];
        const uint4* in[P];
        uint4 cache[P][V];
        float sum[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
            const long long pixel = first + j * G;
            active[j] = pixel < p.pixels;
            in[j] = static_cast<const uint4*>(p.in) + (active[j] ? pixel : 0) * p.vectors;
#pragma unroll
            for (int k = 0; k < V; ++k) {
                const int v = lane + k * L;
                cache[j][k] = active[j] && v < p.vectors ? __ldg(in[j] + v) : make_uint4(0u, 0u, 0u, 0u);
            }
        }
#pragma unroll
        for (int j = 0; j < P; ++j) {
            sum[j] = 0.f;
#pragma unroll
            for (int k = 0; k < V; ++k) sum[j] += vector_sum<T>(cache[j][k], (lane + k * L) * 8, p.c);
            for (int v = lane + V * L; active[j] && v < p.vectors; v += L)
                sum[j] += vector_sum<T>(__ldg(in[j] + v), v * 8, p.c);
        }
        float mean[P], squares[P], scale[P];
#pragma unroll
        for (int j = 0; j < P; ++j) mean[j] = group_sum<L>(sum[j]) / channels;
#pragma unroll
        for (int j = 0; j < P; ++j) {
            squares[j] = 0.f;
#pragma unroll
            for (int k = 0; k < V; ++k) {
                const int v = lane + k * L;
                if (v < p.vectors) squares[j] += vector_squares<T>(cache[j][k], v * 8, p.c, mean[j]);
            }
            for (int v = lane + V * L; active[j] && v < p.vectors; v += L)
                squares[j] += vector_squares<T>(__ldg(in[j] + v), v * 8, p.c, mean[j]);
        }
#pragma unroll
        for (int j = 0; j < P; ++j) scale[j] = 1.0f / sqrtf(group_sum<L>(squares[j]) / channels + p.eps);
#pragma unroll
        for (int j = 0; j < P; ++j) {
            if (!active[j]) continue;
            uint4* out = static_cast<uint4*>(p.out) + (first + j * G) * p.vectors;
#pragma unroll
            for (int k = 0; k < V; ++k) {
                const int v = lane + k * L;
                if (v < p.vectors) out[v] = normalize(cache[j][k], k, mean[j], scale[j]);
            }
            for (int v = lane + V * L; v < p.vectors; v += L)
                out[v] = vector_normalize<T>(__ldg(in[j] + v), v * 8, p, mean[j], scale[j]);
        }
    }
}

// The grid-stride NHWC8 kernel runs as one wave: as many blocks as the
// SMs hold at once (an occupancy query), each looping over batches of
// pixels; with a fixed grid of 1024 blocks, 2.6 waves of 3 blocks an SM left
// a tail (the 256-channel row at 56% of the floor).
template <class T, int L, int V, int P>
void launch_nhwc8(const LayerNormParams& p, cudaStream_t stream, int sm_count) {
    const long long pixels_per_block = (long long)(LN_THREADS / L) * P;
    const long long needed = (p.pixels + pixels_per_block - 1) / pixels_per_block;
    // Asked once per instantiation, not per call (NAFNet runs 72 layer norms
    // an image); on a second GPU of another kind it only sizes the grid.
    static const int per_sm = [] {
        int n = 0;
        const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, layer_norm_nhwc8_kernel<T, L, V, P>, LN_THREADS, 0);
        return e == cudaSuccess && n > 0 ? n : 1;
    }();
    const long long wave = (long long)per_sm * (sm_count > 0 ? sm_count : 1);
    layer_norm_nhwc8_kernel<T, L, V, P><<<unsigned(needed < wave ? needed : wave), LN_THREADS, 0, stream>>>(p);
}

// Lanes per pixel: the smallest power of two >= the vectors (<= 32), so a
// group's lanes each hold one vector, two pixels at once; wider pixels take
// a warp and 2 or 4 vectors per lane in registers, one pixel at once (more
// re-read from L1/L2).
template <class T>
void launch_nhwc8(const LayerNormParams& p, cudaStream_t stream, int sm_count) {
    const int v = p.vectors;
    if (v <= 1) return launch_nhwc8<T, 1, 1, 2>(p, stream, sm_count);
    if (v <= 2) return launch_nhwc8<T, 2, 1, 2>(p, stream, sm_count);
    if (v <= 4) return launch_nhwc8<T, 4, 1, 2>(p, stream, sm_count);
    if (v <= 8) return launch_nhwc8<T, 8, 1, 2>(p, stream, sm_count);
    if (v <= 16) return launch_nhwc8<T, 16, 1, 2>(p, stream, sm_count);
    if (v <= 32) return launch_nhwc8<T, 32, 1, 2>(p, stream, sm_count);
    if (v <= 64) return launch_nhwc8<T, 32, 2, 1>(p, stream, sm_count);
    return launch_nhwc8<T, 32, 4, 1>(p, stream, sm_count);
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
        switch (a.input.dtype) {
            case DType::F32:
                launch_nchw<float>(p, stream_);
                break;
            case DType::F16:
                launch_nchw<__half>(p, stream_);
                break;
            case DType::BF16:
                launch_nchw<__nv_bfloat16>(p, stream_);
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
        launch_nhwc8<__half>(p, stream_, sm_count_);
    else
        launch_nhwc8<__nv_bfloat16>(p, stream_, sm_count_);
    check_launch(context, "layer_norm_nhwc8_kernel launch");
}

}  // namespace imr::cuda
