// window_mean on CUDA (semantics in kernels/ops/window_mean.h): f32 NCHW, and
// f16/bf16 NHWC8 (the output's padding channels written as zeros, the
// input's never used).
//
// Floor: memory-bound, one read and one write per element (8 bytes in f32,
// 4 in half) and a few FLOPs whatever the window: a 12 MP image of 32
// channels in f16 is ~0.32 ms at 4.8 TB/s (H200).
//
// Two passes through a float scratch tensor of the input's stored shape (the
// backend's grow-only scratch(), 4 bytes per element), each O(1) per element
// in the window (box sums are separable, and so is the clipping: the box's
// pixel count is its clipped height times its clipped width):
//   1. rows: h(y, x) = sum of in(y, x0..x1) for every pixel, into the scratch;
//   2. columns: out(y, x) = sum of h(y0..y1, x) / ((y1-y0+1) * (x1-x0+1)).
// Each pass gives a thread a chunk of R = max(kMinChunk, 2 window)
// consecutive outputs along its axis: it sums the first output's box
// directly, then slides (add the element entering, subtract the one leaving:
// 2 loads per output, the leaving one read `window` steps before). The
// direct start costs <= window + 1 loads per chunk, <= ~1/2 per output: O(1)
// in the window with no shared-memory halo (which a 1024-wide window would
// make larger than the tile). What that costs in bytes: "What bounds it".
//
// Error: the running sums are in double, restarted at every chunk, so their
// drift (<= 2R slides of 2^-53 each) is ~2^-42 of the magnitudes summed for
// the largest window and does not grow with the image; the scratch rounds
// each row sum to float once (2^-24 of |h|), the mean is rounded once to
// float and then to the output type. In all: |out - mean| <= 2^-24 *
// (sum of |in| over the box) / count + the output's rounding, independent
// of the image size and the window (a float prefix sum over a row would err
// by ~W/window * 2^-24 of the box sum instead).
//
// Thread layout. Pass 1 walks along rows: in NHWC8 a thread takes one
// 8-channel vector (one 16-byte load per step, its 8 sums side by side; the
// first version took one channel, 2-byte loads, and ran at 12-14% of the
// floor), consecutive threads on a pixel's consecutive vectors; in NCHW
// consecutive threads take consecutive rows, so a warp's loads are strided
// by W but each thread's 32-byte sectors are reused over 8 steps from L1.
// Pass 2 puts consecutive threads on consecutive 4-element groups of a row
// (NCHW: x, where W is a multiple of 4 and the output 16-byte aligned, else
// one element; NHWC8: x * C8 + c), one 16-byte scratch load per step, so
// its loads and stores are coalesced. Both passes load kUnroll steps' entering and leaving elements
// before adding any (the first version loaded one step at a time, a load's
// latency per output). 256 threads per block, no shared memory.
//
// What bounds it: the scratch (4 bytes an element) is written and read
// once, and the leaving element of a window of 192 (NAFNet's at 12 MP) was
// loaded `window` steps before by a thread whose peers' windows together
// far exceed the L2, so it comes from DRAM again. In half precision that is
// 2 + 2 + 4 (pass 1) + 4 + 4 + 2 (pass 2) = 18 bytes an element against the
// floor's 4: at most ~22% of the floor; measured on the H200 (tenth
// session): 14-17% in half, 4-6% in f32 (NCHW pass 1 walks rows 32 apart a
// warp). Reaching 60% needs one pass with no scratch (each row's horizontal
// sums by a block scan in shared memory, only the vertical leaving element
// read again: 6 bytes an element), not done yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"
#include "vector8.cuh"

namespace imr::cuda {
namespace {

constexpr int WM_THREADS = 256;
// Outputs per thread at least: enough that a chunk's direct start (its first
// box) is a small part of the work for small windows.
constexpr int kMinChunk = 64;

// Element (l, y, q) of a tensor is at (l * H + y) * Q + q: NCHW: l = n * C + c,
// q = x, Q = W; NHWC8: l = n, q = x * C8 + c, Q = W * C8.
struct WindowParams {
    const void* in;
    float* scratch;
    void* out;
    int lanes;           // L
    int c, c8, h, w, q;  // channels, stored channels (NHWC8), H, W, Q
    int before, after;   // the box: rows/columns y - before .. y + after
    int chunk;           // R
    int chunks_w, chunks_h;
    long long count;  // threads of the pass
};

// Steps whose loads a thread issues before adding any (see the top).
constexpr int kUnroll = 4;

// Eight elements of T at p, widened; or zeros.
template <class T>
__device__ __forceinline__ void load_widened(const T* p, bool ok, double (&d)[8]) {
    float f[8];
    if (ok) {
        unpack8<T>(__ldg(reinterpret_cast<const uint4*>(p)), f);
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) f[k] = 0.f;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) d[k] = double(f[k]);
}
// One element of T at p, widened; or zero.
template <class T>
__device__ __forceinline__ void load_widened(const T* p, bool ok, double (&d)[1]) {
    d[0] = ok ? double(widen(__ldg(p))) : 0.0;
}

// Pass 1: row sums along x into the scratch. E elements a thread (NHWC8: a
// vector of 8 channels; NCHW: 1).
template <class T, bool NHWC8>
__global__ void __launch_bounds__(WM_THREADS) window_rows_kernel(const WindowParams p) {
    constexpr int E = NHWC8 ? 8 : 1;
    const long long t = (long long)blockIdx.x * WM_THREADS + threadIdx.x;
    if (t >= p.count) return;
    int c = 0, y, chunk, l;
    long long r = t;
    if constexpr (NHWC8) {
        const int vectors = p.c8 / 8;
        c = int(r % vectors) * 8, r /= vectors;
        chunk = int(r % p.chunks_w), r /= p.chunks_w;
        y = int(r % p.h), l = int(r / p.h);
    } else {
        y = int(r % p.h), r /= p.h;
        chunk = int(r % p.chunks_w), l = int(r / p.chunks_w);
    }
    const long long step = NHWC8 ? p.c8 : 1;
    const long long base = ((long long)l * p.h + y) * p.q + c;
    const T* in = static_cast<const T*>(p.in) + base;
    float* out = p.scratch + base;
    const int x_begin = chunk * p.chunk, x_end = min(p.w, x_begin + p.chunk);
    double sum[E] = {}, v[E];
    for (int x = max(0, x_begin - p.before); x <= min(p.w - 1, x_begin + p.after); ++x) {
        load_widened<T>(in + x * step, true, v);
#pragma unroll
        for (int k = 0; k < E; ++k) sum[k] += v[k];
    }
    auto store = [&](int x) {
        if constexpr (NHWC8) {
            float4* o = reinterpret_cast<float4*>(out + x * step);
            o[0] = make_float4(float(sum[0]), float(sum[1]), float(sum[2]), float(sum[3]));
            o[1] = make_float4(float(sum[4]), float(sum[5]), float(sum[6]), float(sum[7]));
        } else {
            out[x] = float(sum[0]);
        }
    };
    store(x_begin);
    for (int x = x_begin + 1; x < x_end; x += kUnroll) {
        double enter[kUnroll][E], leave[kUnroll][E];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int xx = x + u;
            load_widened<T>(in + (xx + p.after) * step, xx < x_end && xx + p.after < p.w, enter[u]);
            load_widened<T>(in + (xx - p.before - 1) * step, xx < x_end && xx - p.before - 1 >= 0, leave[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (x + u >= x_end) break;
#pragma unroll
            for (int k = 0; k < E; ++k) sum[k] += enter[u][k] - leave[u][k];
            store(x + u);
        }
    }
}

// Pass 2: column sums of the row sums, divided by the clipped box's pixels.
// QV consecutive elements of a row a thread (4: one 16-byte scratch load;
// NHWC8's q and Q are multiples of 8; NCHW takes 4 where W is a multiple
// of 4 and the output 16-byte aligned, else 1).
template <class T, bool NHWC8, int QV>
__global__ void __launch_bounds__(WM_THREADS) window_columns_kernel(const WindowParams p) {
    const long long t = (long long)blockIdx.x * WM_THREADS + threadIdx.x;
    if (t >= p.count) return;
    const int groups = p.q / QV;
    const int q = int(t % groups) * QV;
    const long long r = t / groups;
    const int chunk = int(r % p.chunks_h), l = int(r / p.chunks_h);
    const int x = NHWC8 ? q / p.c8 : q, c = NHWC8 ? q - x * p.c8 : 0;
    const long long base = (long long)l * p.h * p.q + q;
    const float* in = p.scratch + base;
    T* out = static_cast<T*>(p.out) + base;
    const int y_begin = chunk * p.chunk, y_end = min(p.h, y_begin + p.chunk);
    // The box's clipped width per lane (NCHW lanes are columns x + k).
    double width[QV];
#pragma unroll
    for (int k = 0; k < QV; ++k) {
        const int xk = NHWC8 ? x : x + k;
        width[k] = double(min(p.w - 1, xk + p.after) - max(0, xk - p.before) + 1);
    }
    auto load = [&](int y, bool ok, double(&d)[QV]) {
        if constexpr (QV == 4) {
            const float4 f = ok ? *reinterpret_cast<const float4*>(in + (long long)y * p.q) : make_float4(0, 0, 0, 0);
            d[0] = f.x, d[1] = f.y, d[2] = f.z, d[3] = f.w;
        } else {
            d[0] = ok ? double(in[(long long)y * p.q]) : 0.0;
        }
    };
    // sum / count without a double division per element (~10x the cost of
    // a multiply on the FP64 pipe): the quotient from the count's
    // reciprocal, then one residual correction (r = sum - q count exactly by
    // FMA, q += r / count), which leaves q within an ulp of double. The
    // reciprocals change only where the box is clipped at the top or bottom.
    double count[QV], inv[QV];
    int height = -1;
    auto store = [&](int y, const double(&sum)[QV]) {
        const int hy = min(p.h - 1, y + p.after) - max(0, y - p.before) + 1;
        if (hy != height) {
            height = hy;
#pragma unroll
            for (int k = 0; k < QV; ++k) count[k] = double(hy) * width[k], inv[k] = 1.0 / count[k];
        }
        T o[QV];
#pragma unroll
        for (int k = 0; k < QV; ++k) {
            double mean = sum[k] * inv[k];
            mean = fma(fma(-mean, count[k], sum[k]), inv[k], mean);
            o[k] = NHWC8 && c + k >= p.c ? narrow<T>(0.f)  // the output's padding channels
                                         : narrow<T>(float(mean));
        }
        T* dst = out + (long long)y * p.q;
        if constexpr (QV == 4 && sizeof(T) == 2) {
            uint2 packed;
            T* e = reinterpret_cast<T*>(&packed);
#pragma unroll
            for (int k = 0; k < 4; ++k) e[k] = o[k];
            *reinterpret_cast<uint2*>(dst) = packed;
        } else if constexpr (QV == 4) {
            *reinterpret_cast<float4*>(dst) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
            dst[0] = o[0];
        }
    };
    double sum[QV] = {}, v[QV];
    for (int y = max(0, y_begin - p.before); y <= min(p.h - 1, y_begin + p.after); ++y) {
        load(y, true, v);
#pragma unroll
        for (int k = 0; k < QV; ++k) sum[k] += v[k];
    }
    store(y_begin, sum);
    for (int y = y_begin + 1; y < y_end; y += kUnroll) {
        double enter[kUnroll][QV], leave[kUnroll][QV];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int yy = y + u;
            load(yy + p.after, yy < y_end && yy + p.after < p.h, enter[u]);
            load(yy - p.before - 1, yy < y_end && yy - p.before - 1 >= 0, leave[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (y + u >= y_end) break;
#pragma unroll
            for (int k = 0; k < QV; ++k) sum[k] += enter[u][k] - leave[u][k];
            store(y + u, sum);
        }
    }
}

template <class T, bool NHWC8>
void launch(WindowParams p, cudaStream_t stream, const std::string& context) {
    p.count = (long long)p.lanes * p.h * p.chunks_w * (NHWC8 ? p.c8 / 8 : 1);
    window_rows_kernel<T, NHWC8><<<unsigned((p.count + WM_THREADS - 1) / WM_THREADS), WM_THREADS, 0, stream>>>(p);
    check_launch(context, "window_rows_kernel launch");
    // NHWC8: always (Q a multiple of 8, the pointers checked); NCHW where
    // rows are whole 4-float groups and the output is 16-byte aligned.
    const bool vector = p.q % 4 == 0 && reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
    p.count = (long long)p.lanes * (p.q / (vector ? 4 : 1)) * p.chunks_h;
    const unsigned blocks = unsigned((p.count + WM_THREADS - 1) / WM_THREADS);
    if (vector)
        window_columns_kernel<T, NHWC8, 4><<<blocks, WM_THREADS, 0, stream>>>(p);
    else
        window_columns_kernel<T, NHWC8, 1><<<blocks, WM_THREADS, 0, stream>>>(p);
    check_launch(context, "window_columns_kernel launch");
}

}  // namespace

void CudaBackend::window_mean(const WindowMeanArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::WindowMean, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    const std::string context = "window_mean " + a.input.str() + ", window " + std::to_string(a.window);
    if (a.input.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    const bool nhwc8 = a.input.layout == Layout::NHWC8;
    if (nhwc8 == (a.input.dtype == DType::F32) || (!nhwc8 && a.input.layout != Layout::NCHW))
        throw Error(context + ": no CUDA kernel takes " + a.input.str());  // supports() refuses these first
    if (nhwc8) {
        check_aligned16(a.input.data, context, "input");
        check_aligned16(a.output.data, context, "output");
    }
    WindowParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.scratch = static_cast<float*>(scratch(a.input.stored_count() * sizeof(float)));
    p.c = s.c, p.c8 = stored_channels(Layout::NHWC8, s.c), p.h = s.h, p.w = s.w;
    p.lanes = nhwc8 ? s.n : s.n * s.c;
    p.q = nhwc8 ? s.w * p.c8 : s.w;
    p.before = a.before(), p.after = a.after();
    p.chunk = std::max(kMinChunk, 2 * a.window);
    p.chunks_w = (s.w + p.chunk - 1) / p.chunk, p.chunks_h = (s.h + p.chunk - 1) / p.chunk;
    switch (a.input.dtype) {
        case DType::F32:
            return launch<float, false>(p, stream_, context);
        case DType::F16:
            return launch<__half, true>(p, stream_, context);
        case DType::BF16:
            return launch<__nv_bfloat16, true>(p, stream_, context);
    }
}

}  // namespace imr::cuda
