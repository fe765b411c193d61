// window_mean on CUDA (semantics in kernels/ops/window_mean.h): f32 NCHW, and
// f16/bf16 NHWC8 (the output's padding channels written as zeros; the
// input's are summed into the scratch's padding lanes, which never reach a
// real output channel).
//
// Floor: memory-bound, one read and one write per element (8 bytes in f32,
// 4 in half) and a few FLOPs whatever the window: a 12 MP image of 32
// channels in f16 is ~0.36 ms at 4.23 TB/s (H200).
//
// Two passes through a float scratch tensor of the input's stored shape (the
// backend's grow-only scratch(), 4 bytes per element), each O(1) per element
// in the window (box sums are separable, and so is the clipping: the box's
// pixel count is its clipped height times its clipped width):
//   1. columns: v(y, x) = sum of in(y0..y1, x) for every pixel, into the
//      scratch;
//   2. rows: out(y, x) = sum of v(y, x0..x1) / ((y1-y0+1) * (x1-x0+1)).
// Each thread walks R consecutive outputs along its pass's axis (a chunk): it
// sums the first output's box directly, then slides (add the element
// entering, subtract the one leaving). The element leaving is the one that
// entered `window` steps before, and the thread keeps the last `window`
// elements it loaded in its own ring in shared memory (one word a step: a
// float, two halves, or in pass 2 two floats), so every element of the input and of the
// scratch is read from memory once, plus each chunk's direct start (`window`
// loads; chunks are at least 2 windows long where the axis allows, but for
// the last, remainder chunk: see chunking below).
// No thread reads another's ring, so the passes need no barrier.
//
// Bytes, half precision: 2 (in) + 4 (scratch) + 4 (scratch) + 2 (out) = 12
// an element against the floor's 4, so at most 1/3 of the floor. (The
// previous version read the leaving element from memory again, `window`
// steps after its first load, which no cache held: 18 bytes, 14-17% of the
// floor measured.) One pass would need, for a window of 192 at 12 MP, a
// window of rows x the image's width (~50 MB at 32 channels) on chip; it is
// not done.
//
// Measured (H200, f16, nafnet-large's shapes at 12 MP, 2026-12-03): window
// 12-96 at 19-22% of the floor (0.114-0.931 ms; the previous version
// 15-17%); window 192 at 13.9%, unchanged (2.607 ms: ncu, pass 1 0.91 ms at
// 2.6 TB/s, pass 2 1.69 ms at 1.4 TB/s with 8 warps an SM and the issue
// slots 43% busy: latency-bound, its rings allowing no more warps).
//
// Error: the running sums are in double, restarted at every chunk, so their
// drift is at most 2R slides of 2^-53 each of the magnitudes summed (R, the
// chunk, grows with the image: a few thousand steps at 12 MP, ~2^-41); the
// scratch rounds each column sum to float once (2^-24 of |v|), the mean is
// rounded once to float (2^-24 of |mean|) and then to the output type. In
// all: |out - mean| <= 2^-24 * ((sum of |in| over the box) / count +
// |mean|) + the output's rounding, whatever the window.
//
// Thread layout (element (l, y, q) of a tensor is at (l * H + y) * Q + q:
// NCHW: l = n * C + c, q = x, Q = W; NHWC8: l = n, q = x * C8 + c,
// Q = W * C8). Pass 1: consecutive threads on consecutive words of a row
// (one float in f32, a channel pair in half), so a warp loads and stores 128
// bytes at a time. Pass 2: NHWC8: consecutive threads on consecutive
// channels of a pixel (128 bytes a warp at 32 channels); NCHW: consecutive
// threads on consecutive rows, each thread's 32-byte sectors reused over 8
// steps from L1. A thread loads kBatch steps' entering words before adding
// any, and the next batch's before it adds this one's (a load's latency per
// kBatch steps, two batches in flight).
//
// Block size: kMaxThreads, fewer where the rings (window words a thread)
// would not fit the block's shared memory (window 192: 768 bytes a
// thread, 256 threads, one block per SM on an H200; window 1024: 32
// threads). Chunking: enough chunks along the axis that the pass has about
// two waves of resident threads, but no chunk shorter than 2 windows (the
// last, remainder chunk aside; an axis shorter than 2 windows is one chunk).
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

constexpr int kMaxThreads = 256;
// Steps whose loads a thread issues at once (two batches in flight).
constexpr int kBatch = 16;
// The largest window whose NHWC8 rows pass takes channel pairs (launch()).
constexpr int kPairsMaxWindow = 64;

// A walk: a thread's chunk of outputs along one axis.
struct WalkParams {
    const void* in;      // pass 1: the input; pass 2: the scratch
    void* out;           // pass 1: the scratch; pass 2: the output
    int lanes;           // L
    int c, c8, h, w, q;  // channels, stored channels (NHWC8), H, W, Q
    int before, after;   // the box: y - before .. y + after (and x likewise)
    int window;          // before + after + 1: the ring's words
    int chunk;           // R: outputs a thread walks
    int chunks;          // chunks along the axis
    long long count;     // threads of the pass
};

// The words a thread loads a step (W: uint32_t or uint2) and the values of
// T in them: a float, two halves, or two floats.
template <class T, class W>
struct Word {
    static constexpr int values = sizeof(W) / sizeof(T);
    __device__ static void widen_into(const W& w, double (&d)[values]) {
        const T* e = reinterpret_cast<const T*>(&w);
#pragma unroll
        for (int k = 0; k < values; ++k) d[k] = double(widen(e[k]));
    }
};

// One thread's walk: outputs begin..end-1 of an axis of `len` elements
// `step` words apart from `src`; emit(i, sums) for each output i. The ring
// holds the `window` words loaded last, the thread's words `stride` apart.
template <class T, class W, class Emit>
__device__ __forceinline__ void walk(const W* __restrict__ src, long long step, int len, int begin, int end, int before,
                                     int after, int window, W* ring, int stride, Emit emit) {
    constexpr int V = Word<T, W>::values;
    auto load = [&](int i) { return i >= 0 && i < len ? __ldg(src + i * step) : W{}; };  // +0 outside
    double sum[V] = {}, d[V];
    // The first output's box: elements begin - before .. begin + after, in
    // ring slots 0 .. window - 1.
    for (int i = 0; i < window; i += kBatch) {
        W v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = i + u < window ? load(begin - before + i + u) : W{};
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            if (i + u >= window) break;
            ring[(i + u) * stride] = v[u];
            Word<T, W>::widen_into(v[u], d);
#pragma unroll
            for (int k = 0; k < V; ++k) sum[k] += d[k];
        }
    }
    emit(begin, sum);
    // Output i takes element i + after and drops i - before - 1, which
    // entered the ring `window` steps before, in the slot it now takes.
    int slot = 0;
    W cur[kBatch], next[kBatch] = {};
    auto load_batch = [&](int i, W(&v)[kBatch]) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = i + u < end ? load(i + u + after) : W{};
    };
    load_batch(begin + 1, cur);
    for (int i = begin + 1; i < end; i += kBatch) {
        if (i + kBatch < end) load_batch(i + kBatch, next);
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            if (i + u >= end) break;
            const W leaving = ring[slot * stride];
            ring[slot * stride] = cur[u];
            if (++slot == window) slot = 0;
            double e[V], l[V];
            Word<T, W>::widen_into(cur[u], e);
            Word<T, W>::widen_into(leaving, l);
#pragma unroll
            for (int k = 0; k < V; ++k) sum[k] += e[k] - l[k];
            emit(i + u, sum);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) cur[u] = next[u];
    }
}

// Pass 1: column sums of the input into the scratch, a 4-byte word of T a
// thread (one f32, or a channel pair of NHWC8 halves).
template <class T>
__global__ void __launch_bounds__(kMaxThreads) window_mean_columns_kernel(const WalkParams p) {
    extern __shared__ uint32_t rings[];
    constexpr int V = Word<T, uint32_t>::values;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.count) return;
    const int words = p.q / V;
    const long long r = t / words;
    const int q = int(t - r * words) * V;
    const int chunk = int(r % p.chunks), l = int(r / p.chunks);
    const long long base = (long long)l * p.h * p.q + q;
    const auto* src = reinterpret_cast<const uint32_t*>(static_cast<const T*>(p.in) + base);
    float* dst = static_cast<float*>(p.out) + base;
    const int begin = chunk * p.chunk, end = min(p.h, begin + p.chunk);
    walk<T>(src, p.q / V, p.h, begin, end, p.before, p.after, p.window, rings + threadIdx.x, blockDim.x,
            [&](int y, const double(&sum)[V]) {
                if constexpr (V == 1)
                    dst[(long long)y * p.q] = float(sum[0]);
                else
                    *reinterpret_cast<float2*>(dst + (long long)y * p.q) = make_float2(float(sum[0]), float(sum[1]));
            });
}

// Pass 2: row sums of the column sums, divided by the clipped box's pixels,
// into the output: one channel (W uint32_t) or a channel pair (W uint2: a
// float2 of the scratch a step) of NHWC8 a thread, or one row of NCHW.
template <class T, bool NHWC8, class W>
__global__ void __launch_bounds__(kMaxThreads) window_mean_rows_kernel(const WalkParams p) {
    constexpr int V = Word<float, W>::values;
    static_assert(NHWC8 || V == 1, "NCHW rows take one float a step");
    extern __shared__ uint32_t ring_words[];
    W* rings = reinterpret_cast<W*>(ring_words);
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.count) return;
    int c = 0, y, chunk, l;
    long long r = t;
    if constexpr (NHWC8) {
        c = int(r % (p.c8 / V)) * V, r /= p.c8 / V;
        chunk = int(r % p.chunks), r /= p.chunks;
        y = int(r % p.h), l = int(r / p.h);
    } else {
        y = int(r % p.h), r /= p.h;
        chunk = int(r % p.chunks), l = int(r / p.chunks);
    }
    const long long step = NHWC8 ? p.c8 : 1;
    const long long base = ((long long)l * p.h + y) * p.q + c;
    T* out = static_cast<T*>(p.out) + base;
    const int begin = chunk * p.chunk, end = min(p.w, begin + p.chunk);
    auto store = [&](int x, const float(&v)[V]) {
        if constexpr (V == 2) {  // the output's padding channels as zeros
            __align__(4) T pair[2] = {narrow<T>(c < p.c ? v[0] : 0.f), narrow<T>(c + 1 < p.c ? v[1] : 0.f)};
            *reinterpret_cast<uint32_t*>(out + x * step) = *reinterpret_cast<const uint32_t*>(pair);
        } else {
            out[x * step] = narrow<T>(c < p.c ? v[0] : 0.f);
        }
    };
    if (NHWC8 && c >= p.c) {  // only padding channels
        const float zeros[V] = {};
        for (int x = begin; x < end; ++x) store(x, zeros);
        return;
    }
    const auto* src = reinterpret_cast<const W*>(static_cast<const float*>(p.in) + base);
    // sum / count without a double division per element (~10x the cost of
    // a multiply on the FP64 pipe): the quotient from the count's
    // reciprocal, then one residual correction (r = sum - q count exactly by
    // FMA, q += r / count), which leaves q within an ulp of double. The
    // reciprocal changes only where the box is clipped at the left or right.
    const double height = double(min(p.h - 1, y + p.after) - max(0, y - p.before) + 1);
    int width = -1;
    double count = 0, inv = 0;
    walk<float>(src, step / V, p.w, begin, end, p.before, p.after, p.window, rings + threadIdx.x, blockDim.x,
                [&](int x, const double(&sum)[V]) {
                    const int wx = min(p.w - 1, x + p.after) - max(0, x - p.before) + 1;
                    if (wx != width) width = wx, count = height * double(wx), inv = 1.0 / count;
                    float v[V];
#pragma unroll
                    for (int k = 0; k < V; ++k) {
                        const double mean = sum[k] * inv;
                        v[k] = float(fma(fma(-mean, count, sum[k]), inv, mean));
                    }
                    store(x, v);
                });
}

// Threads a block (rings that fit `smem` bytes, whole warps where there are
// at least 32) and chunks along an axis of `len` for `columns` walks.
struct WalkPlan {
    int threads, chunks, chunk;
    size_t smem;  // the block's rings
};

template <class Kernel>
WalkPlan plan_walks(Kernel kernel, size_t word_bytes, long long columns, int len, int window, int smem_optin,
                    int sm_count, const std::string& context) {
    const size_t ring_bytes = size_t(window) * word_bytes;
    int threads = int(std::min<size_t>(kMaxThreads, size_t(smem_optin) / ring_bytes));
    if (threads >= 32) threads -= threads % 32;
    if (threads < 1)
        throw Error(context + ": its window's ring (" + std::to_string(ring_bytes) +
                    " bytes a thread) needs more shared memory than a block has");
    const size_t smem = size_t(threads) * ring_bytes;
    check_cuda(raise_smem_limit(reinterpret_cast<const void*>(kernel), smem), context, "cudaFuncSetAttribute");
    int blocks_per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, threads, smem), context,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const long long resident = (long long)std::max(1, blocks_per_sm) * threads * sm_count;
    const long long wanted = (2 * resident + columns - 1) / columns;
    const int longest = std::max(1, len / (2 * window));  // no chunk shorter than 2 windows
    const int chunks = int(std::max<long long>(1, std::min<long long>(wanted, longest)));
    const int chunk = (len + chunks - 1) / chunks;
    return {threads, (len + chunk - 1) / chunk, chunk, smem};
}

// Pass 2 with W-sized words: rows of the scratch into the output.
template <class T, bool NHWC8, class W>
void launch_rows(const WalkParams& p, void* scratch, void* out, int sm_count, int smem_optin, cudaStream_t stream,
                 const std::string& context) {
    auto* rows = window_mean_rows_kernel<T, NHWC8, W>;
    const long long row_walks = (long long)p.lanes * p.h * (NHWC8 ? p.c8 / Word<float, W>::values : 1);
    const WalkPlan s = plan_walks(rows, sizeof(W), row_walks, p.w, p.window, smem_optin, sm_count, context);
    WalkParams p2 = p;
    p2.in = scratch, p2.out = out, p2.chunk = s.chunk, p2.chunks = s.chunks, p2.count = row_walks * s.chunks;
    rows<<<unsigned((p2.count + s.threads - 1) / s.threads), s.threads, s.smem, stream>>>(p2);
    check_launch(context, "window_mean_rows_kernel launch");
}

template <class T, bool NHWC8>
void launch(WalkParams p, void* scratch, void* out, int sm_count, int smem_optin, cudaStream_t stream,
            const std::string& context) {
    // Pass 1: columns of the input into the scratch, a 4-byte word a walk.
    auto* columns = window_mean_columns_kernel<T>;
    const long long column_walks = (long long)p.lanes * (p.q / Word<T, uint32_t>::values);
    const WalkPlan s =
        plan_walks(columns, sizeof(uint32_t), column_walks, p.h, p.window, smem_optin, sm_count, context);
    WalkParams p1 = p;
    p1.out = scratch, p1.chunk = s.chunk, p1.chunks = s.chunks, p1.count = column_walks * s.chunks;
    columns<<<unsigned((p1.count + s.threads - 1) / s.threads), s.threads, s.smem, stream>>>(p1);
    check_launch(context, "window_mean_columns_kernel launch");
    // Pass 2. NHWC8 in channel pairs where the window is at most
    // kPairsMaxWindow: twice the ring a thread, half the threads (H200, 12
    // MP, f16: window 48 0.440 -> 0.423 ms, 24 0.225 -> 0.217, 12 0.117 ->
    // 0.114; at 192 the rings already limit an SM to 8 warps, and pairs took
    // 2.607 -> 3.020 ms).
    if constexpr (NHWC8)
        if (p.window <= kPairsMaxWindow)
            return launch_rows<T, NHWC8, uint2>(p, scratch, out, sm_count, smem_optin, stream, context);
    launch_rows<T, NHWC8, uint32_t>(p, scratch, out, sm_count, smem_optin, stream, context);
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
    // Pass 1 loads 4-byte words: a float, or an NHWC8 channel pair (its
    // stored channels a multiple of 8, its pixels 16-byte multiples).
    if (nhwc8) {
        check_aligned16(a.input.data, context, "input");
        check_aligned16(a.output.data, context, "output");
    }
    WalkParams p{};
    p.in = a.input.data;
    p.c = s.c, p.c8 = stored_channels(Layout::NHWC8, s.c), p.h = s.h, p.w = s.w;
    p.lanes = nhwc8 ? s.n : s.n * s.c;
    p.q = nhwc8 ? s.w * p.c8 : s.w;
    p.before = a.before(), p.after = a.after(), p.window = a.window;
    void* scratch_sums = scratch(a.input.stored_count() * sizeof(float));
    switch (a.input.dtype) {
        case DType::F32:
            return launch<float, false>(p, scratch_sums, a.output.data, sm_count_, smem_optin_, stream_, context);
        case DType::F16:
            return launch<__half, true>(p, scratch_sums, a.output.data, sm_count_, smem_optin_, stream_, context);
        case DType::BF16:
            return launch<__nv_bfloat16, true>(p, scratch_sums, a.output.data, sm_count_, smem_optin_, stream_,
                                               context);
    }
}

}  // namespace imr::cuda
