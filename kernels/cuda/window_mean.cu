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
// Each pass gives a thread a chunk of R = max(kMinChunk, window) consecutive
// outputs along its axis: it sums the first output's box directly, then
// slides (add the element entering, subtract the one leaving: 2 loads per
// output, the leaving one an L1/L2 hit, read `window` steps before). The
// direct start costs <= window loads per chunk, <= 1 per output. So DRAM
// traffic is ~2 reads and 2 writes per element (the scratch's included),
// twice the floor: the price of O(1) in the window with no shared-memory
// halo (which a 1024-wide window would make larger than the tile).
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
// Thread layout: pass 2 puts consecutive threads on consecutive addresses of
// a row (NCHW: x; NHWC8: x * C8 + c), so its loads and stores are coalesced.
// Pass 1 walks along rows: in NHWC8 consecutive threads take consecutive
// channels of a pixel (coalesced, 8+ channels); in NCHW consecutive threads
// take consecutive rows, so a warp's loads are strided by W but each
// thread's 32-byte sectors are reused over 8 steps from L1. 256 threads per
// block, no shared memory: 8 blocks per SM resident.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"

namespace imr::cuda {
namespace {

constexpr int WM_THREADS = 256;
// Outputs per thread at least: enough that a chunk's direct start (its first
// box) is a small part of the work for small windows.
constexpr int kMinChunk = 32;

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

// Pass 1: row sums along x into the scratch.
template <class T, bool NHWC8>
__global__ void __launch_bounds__(WM_THREADS) window_rows_kernel(const WindowParams p) {
    const long long t = (long long)blockIdx.x * WM_THREADS + threadIdx.x;
    if (t >= p.count) return;
    int c = 0, y, chunk, l;
    long long r = t;
    if constexpr (NHWC8) {
        c = int(r % p.c8), r /= p.c8;
        if (c >= p.c) return;  // padding channels: pass 2 writes zeros without reading
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
    double sum = 0.0;
    for (int x = max(0, x_begin - p.before); x <= min(p.w - 1, x_begin + p.after); ++x)
        sum += double(widen(__ldg(in + x * step)));
    out[x_begin * step] = float(sum);
    for (int x = x_begin + 1; x < x_end; ++x) {
        if (x + p.after < p.w) sum += double(widen(__ldg(in + (x + p.after) * step)));
        if (x - p.before - 1 >= 0) sum -= double(widen(__ldg(in + (x - p.before - 1) * step)));
        out[x * step] = float(sum);
    }
}

// Pass 2: column sums of the row sums, divided by the clipped box's pixels.
template <class T, bool NHWC8>
__global__ void __launch_bounds__(WM_THREADS) window_columns_kernel(const WindowParams p) {
    const long long t = (long long)blockIdx.x * WM_THREADS + threadIdx.x;
    if (t >= p.count) return;
    const int q = int(t % p.q);
    const long long r = t / p.q;
    const int chunk = int(r % p.chunks_h), l = int(r / p.chunks_h);
    const int x = NHWC8 ? q / p.c8 : q, c = NHWC8 ? q - x * p.c8 : 0;
    const long long base = (long long)l * p.h * p.q + q;
    const float* in = p.scratch + base;
    T* out = static_cast<T*>(p.out) + base;
    const int y_begin = chunk * p.chunk, y_end = min(p.h, y_begin + p.chunk);
    if (NHWC8 && c >= p.c) {  // the output's padding channels
        for (int y = y_begin; y < y_end; ++y) out[(long long)y * p.q] = narrow<T>(0.f);
        return;
    }
    const double width = double(min(p.w - 1, x + p.after) - max(0, x - p.before) + 1);
    double sum = 0.0;
    for (int y = max(0, y_begin - p.before); y <= min(p.h - 1, y_begin + p.after); ++y)
        sum += double(in[(long long)y * p.q]);
    for (int y = y_begin; y < y_end; ++y) {
        if (y > y_begin) {
            if (y + p.after < p.h) sum += double(in[(long long)(y + p.after) * p.q]);
            if (y - p.before - 1 >= 0) sum -= double(in[(long long)(y - p.before - 1) * p.q]);
        }
        const double height = double(min(p.h - 1, y + p.after) - max(0, y - p.before) + 1);
        out[(long long)y * p.q] = narrow<T>(float(sum / (height * width)));
    }
}

template <class T, bool NHWC8>
void launch(WindowParams p, cudaStream_t stream, const std::string& context) {
    p.count = (long long)p.lanes * p.h * p.chunks_w * (NHWC8 ? p.c8 : 1);
    window_rows_kernel<T, NHWC8><<<unsigned((p.count + WM_THREADS - 1) / WM_THREADS), WM_THREADS, 0, stream>>>(p);
    check_launch(context, "window_rows_kernel launch");
    p.count = (long long)p.lanes * p.q * p.chunks_h;
    window_columns_kernel<T, NHWC8><<<unsigned((p.count + WM_THREADS - 1) / WM_THREADS), WM_THREADS, 0, stream>>>(p);
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
    WindowParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.scratch = static_cast<float*>(scratch(a.input.stored_count() * sizeof(float)));
    p.c = s.c, p.c8 = stored_channels(Layout::NHWC8, s.c), p.h = s.h, p.w = s.w;
    p.lanes = nhwc8 ? s.n : s.n * s.c;
    p.q = nhwc8 ? s.w * p.c8 : s.w;
    p.before = a.before(), p.after = a.after();
    p.chunk = std::max(kMinChunk, a.window);
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
