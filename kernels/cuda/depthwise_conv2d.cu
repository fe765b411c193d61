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
// A thread computes a run of R outputs (below), so each input it loads
// serves up to min(K, R) of them and the index math is paid once a run; for
// K <= 3 it issues all of a run's loads before its first multiply, so
// enough bytes are in flight to cover the latency. Every address is 32-bit
// (the op refuses tensors of 2^31 or more elements on CUDA); divisions by
// sizes use FastDiv.
//   NCHW: R = 8 consecutive output rows at one column (K <= 3; 1 for K =
//     5, 7); consecutive threads on consecutive columns, so each load of a
//     warp is 32 consecutive values (one or two 128-byte lines). Its K * K
//     weights are in registers (the same for the whole warp).
//   NHWC8: R = 4 consecutive pixels of a row, 4 channels (8 bytes: half a
//     vector, so a run's K rows of K + 3 inputs fit 36 registers); a
//     block's 256 threads are QB quads (the pixel's, up to 16; blockIdx.y
//     picks which 16 for wider pixels) x 256 / QB runs, quads fastest, so
//     each load of a warp covers neighbouring pixels' channels whole. The
//     block's weights (64 channels x K * K taps, <= 12.5 KB; twice that for the
//     gate's two halves) are copied to
//     shared memory transposed to [tap][channel] first: a tap's 4 weights
//     are one 16-byte shared load, applied to all R outputs.
// Measured on the H200 (docs/performance.md, tenth session; ncu): the
// first version (a thread per output, weights from global memory, 64-bit
// index math) ran at 8-19% of the floor; runs of 4 along rows, rows loaded
// one at a time, at 43-50% (NHWC8 latency-bound: 16 warps an SM with one
// row's loads in flight); runs of 2 with all rows loaded at once, at 31%
// (spills, twice the index math per output); NCHW runs of 4 rows at 46%,
// issue-bound at 108 instructions per output (integer divisions, padding
// checks). This version: NCHW 60-64%; NHWC8 41-46%, not yet understood
// (its counters are the next measurement).
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
// NHWC8: 4-channel quads of a pixel a block takes at most (64 channels).
constexpr int DW_BLOCK_QUADS = 16;

// Outputs per thread: NCHW rows (K <= 3: K + 7 input rows of K values, 30
// registers; K = 5, 7: their K x K alone), NHWC8 pixels (K rows of K + 3
// quads; K = 5, 7 load row by row).
template <int K>
constexpr int DwRowsNchw = K <= 3 ? 8 : 1;
template <int K>
constexpr int DwPixelsNhwc8 = 4;
template <int K>
constexpr bool DwLoadAllRows = K <= 3;

struct DepthwiseParams {
    const void* in;
    void* out;
    const float* weight;  // [C, K, K]
    const float* bias;    // [C] or null
    int c, h, w;          // input
    int c_out;            // output channels: C, or C/2 with the gate
    int oh, ow;           // output
    int in_stride;        // NHWC8: stored channels of an input pixel
    int out_quads;        // NHWC8: 4-channel quads of an output pixel (its stored channels / 4)
    bool second_aligned;  // NHWC8 gate: C/2 % 4 == 0, so the second half's quads are 8-byte loads too
    int pad;              // pad_before
    int pad_after;
    int mode;                     // PadMode as int
    int runs;                     // NHWC8: N * OH * ceil(OW / R); NCHW: N * C_out * ceil(OH / R) * OW
    int runs_per_block;           // NHWC8: 256 / QB
    FastDiv div_a, div_b, div_c;  // NCHW: OW, ceil(OH / R), C_out; NHWC8: runs per row, OH, QB (their .d)
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

// GATE: each output channel c is the product of input channels c and c +
// C/2, each convolved in turn (the second reusing the first's registers).
template <class T, int K, bool GATE>
__global__ void __launch_bounds__(DW_THREADS) depthwise_nchw_kernel(const __grid_constant__ DepthwiseParams p) {
    constexpr int R = DwRowsNchw<K>, S = K + R - 1;  // S: input rows a run reads
    const int run = blockIdx.x * DW_THREADS + threadIdx.x;
    if (run >= p.runs) return;
    const int t = p.div_a.div(run), x = run - t * p.ow;
    const int plane = p.div_b.div(t);  // output plane n * C_out + c
    const int y0 = (t - plane * p.div_b.d) * R;
    const int n = p.div_c.div(plane), c = plane - n * p.c_out;
    T* out = static_cast<T*>(p.out) + (plane * p.oh + y0) * p.ow + x;
    int sx[K];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) sx[kx] = source_index(x + kx - p.pad, p.w, p.pad_after, p.mode);
    // Input channel ci's R outputs of this run.
    auto convolve = [&](int ci, float(&acc)[R]) {
        const T* in = static_cast<const T*>(p.in) + (n * p.c + ci) * p.h * p.w;
        float f[S][K];
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const int sy = source_index(y0 + j - p.pad, p.h, p.pad_after, p.mode);
            const T* line = in + sy * p.w;
#pragma unroll
            for (int kx = 0; kx < K; ++kx) f[j][kx] = sy >= 0 && sx[kx] >= 0 ? widen(__ldg(line + sx[kx])) : 0.f;
        }
        const float b = p.bias ? __ldg(p.bias + ci) : 0.f;
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = b;
#pragma unroll
        for (int ky = 0; ky < K; ++ky)
#pragma unroll
            for (int kx = 0; kx < K; ++kx) {
                const float wt = __ldg(p.weight + ci * K * K + ky * K + kx);
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r] += wt * f[r + ky][kx];
            }
    };
    float acc[R];
    convolve(c, acc);
    if constexpr (GATE) {
        float second[R];
        convolve(c + p.c_out, second);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] *= second[r];
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (y0 + r < p.oh) out[r * p.ow] = narrow<T>(acc[r]);
}

// Four elements of T (8 bytes) as floats.
template <class T>
__device__ __forceinline__ void unpack4(const uint2& v, float (&f)[4]) {
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int k = 0; k < 4; ++k) f[k] = widen(e[k]);
}
template <class T>
__device__ __forceinline__ uint2 pack4(const float (&f)[4]) {
    uint2 v;
    T* e = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < 4; ++k) e[k] = narrow<T>(f[k]);
    return v;
}
// The 4 elements at e (8-byte aligned when `aligned`; else element by
// element, those at or past `valid` as zeros) as one 8-byte value.
template <class T>
__device__ __forceinline__ uint2 load_quad(const T* e, bool aligned, int valid) {
    if (aligned) return __ldg(reinterpret_cast<const uint2*>(e));
    uint2 v;
    T* d = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < 4; ++k) d[k] = k < valid ? e[k] : narrow<T>(0.f);
    return v;
}

// GATE: output quad q is the product of input channels 4q.. and C/2 + 4q..,
// each half's run convolved in turn with its own weights (both halves' in
// shared memory); a padding quad of the output (4q >= C/2) is only zeros.
template <class T, int K, bool GATE>
__global__ void __launch_bounds__(DW_THREADS) depthwise_nhwc8_kernel(const __grid_constant__ DepthwiseParams p) {
    constexpr int R = DwPixelsNhwc8<K>, S = K + R - 1;  // S: input quads a run reads per row
    constexpr int HALVES = GATE ? 2 : 1;
    __shared__ __align__(16) float w_s[HALVES][K * K][DW_BLOCK_QUADS * 4];  // [half][tap][channel of the block]
    __shared__ __align__(16) float b_s[HALVES][DW_BLOCK_QUADS * 4];
    const int qb = p.div_c.d, c_first = blockIdx.y * DW_BLOCK_QUADS * 4;
    for (int i = threadIdx.x; i < HALVES * K * K * qb * 4; i += DW_THREADS) {
        const int cl = i % (qb * 4), tap = i / (qb * 4) % (K * K), h = i / (qb * 4 * K * K), c = c_first + cl;
        w_s[h][tap][cl] = c < p.c_out ? __ldg(p.weight + (h * p.c_out + c) * K * K + tap) : 0.f;
    }
    for (int i = threadIdx.x; i < HALVES * qb * 4; i += DW_THREADS) {
        const int cl = i % (qb * 4), h = i / (qb * 4), c = c_first + cl;
        b_s[h][cl] = p.bias && c < p.c_out ? __ldg(p.bias + h * p.c_out + c) : 0.f;
    }
    __syncthreads();
    const int run_in_block = p.div_c.div(int(threadIdx.x)), ql = int(threadIdx.x) - run_in_block * qb;
    const int q = blockIdx.y * DW_BLOCK_QUADS + ql;
    const int run = blockIdx.x * p.runs_per_block + run_in_block;
    if (run_in_block >= p.runs_per_block || q >= p.out_quads || run >= p.runs) return;
    const int row = p.div_a.div(run);  // n * OH + y
    const int x0 = (run - row * p.div_a.d) * R;
    const int n = p.div_b.div(row), y = row - n * p.oh;
    const T* in = static_cast<const T*>(p.in) + n * p.h * p.w * p.in_stride;
    uint2* out = static_cast<uint2*>(p.out) + (row * p.ow + x0) * p.out_quads + q;
    int sx[S];
#pragma unroll
    for (int j = 0; j < S; ++j) sx[j] = source_index(x0 + j - p.pad, p.w, p.pad_after, p.mode);
    float acc[HALVES][R][4];
    const bool live = !GATE || q * 4 < p.c_out;  // with the gate a padding quad reads nothing
#pragma unroll
    for (int h = 0; h < HALVES; ++h) {
        const int ch0 = h * p.c_out + q * 4;  // the half's first channel of this quad
        const bool aligned = h == 0 || p.second_aligned;
        const int valid = p.c_out - q * 4;  // channels of the quad that exist (the unaligned loads' guard)
        auto load_row = [&](int ky, uint2(&raw)[S]) {
            const int sy = source_index(y + ky - p.pad, p.h, p.pad_after, p.mode);
#pragma unroll
            for (int j = 0; j < S; ++j)
                raw[j] = live && sy >= 0 && sx[j] >= 0
                             ? load_quad<T>(in + (sy * p.w + sx[j]) * p.in_stride + ch0, aligned, valid)
                             : make_uint2(0u, 0u);
        };
        {
            const float4 b = *reinterpret_cast<const float4*>(&b_s[h][ql * 4]);
#pragma unroll
            for (int r = 0; r < R; ++r) acc[h][r][0] = b.x, acc[h][r][1] = b.y, acc[h][r][2] = b.z, acc[h][r][3] = b.w;
        }
        // Row ky's taps applied to its S quads (zeros stand for padded zeros
        // and unused columns); a tap's weights loaded once for the R outputs.
        auto accumulate = [&](int ky, const uint2(&raw)[S]) {
            float f[S][4];
#pragma unroll
            for (int j = 0; j < S; ++j) unpack4<T>(raw[j], f[j]);
#pragma unroll
            for (int kx = 0; kx < K; ++kx) {
                const float4 w = *reinterpret_cast<const float4*>(&w_s[h][ky * K + kx][ql * 4]);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    acc[h][r][0] += w.x * f[r + kx][0];
                    acc[h][r][1] += w.y * f[r + kx][1];
                    acc[h][r][2] += w.z * f[r + kx][2];
                    acc[h][r][3] += w.w * f[r + kx][3];
                }
            }
        };
        if constexpr (DwLoadAllRows<K>) {
            uint2 raw[K][S];
#pragma unroll
            for (int ky = 0; ky < K; ++ky) load_row(ky, raw[ky]);
#pragma unroll
            for (int ky = 0; ky < K; ++ky) accumulate(ky, raw[ky]);
        } else {
#pragma unroll
            for (int ky = 0; ky < K; ++ky) {
                uint2 raw[S];
                load_row(ky, raw);
                accumulate(ky, raw);
            }
        }
    }
    const int c0 = q * 4;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (x0 + r >= p.ow) break;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if constexpr (GATE) acc[0][r][k] *= acc[1][r][k];
            if (c0 + k >= p.c_out) acc[0][r][k] = 0.f;  // the output's padding channels
        }
        out[r * p.out_quads] = pack4<T>(acc[0][r]);
    }
}

template <class T, int K, bool GATE>
void launch(DepthwiseParams p, bool nhwc8, int n, cudaStream_t stream) {
    if (nhwc8) {
        if constexpr (sizeof(T) == 2) {
            constexpr int R = DwPixelsNhwc8<K>;
            const int runs_per_row = (p.ow + R - 1) / R;
            const int block_quads = p.out_quads < DW_BLOCK_QUADS ? p.out_quads : DW_BLOCK_QUADS;
            p.runs_per_block = DW_THREADS / block_quads;
            p.runs = n * p.oh * runs_per_row;
            p.div_a = FastDiv(runs_per_row), p.div_b = FastDiv(p.oh), p.div_c = FastDiv(block_quads);
            const dim3 grid(unsigned((p.runs + p.runs_per_block - 1) / p.runs_per_block),
                            unsigned((p.out_quads + DW_BLOCK_QUADS - 1) / DW_BLOCK_QUADS));
            depthwise_nhwc8_kernel<T, K, GATE><<<grid, DW_THREADS, 0, stream>>>(p);
        }
    } else {
        constexpr int R = DwRowsNchw<K>;
        const int row_groups = (p.oh + R - 1) / R;
        p.runs = n * p.c_out * row_groups * p.ow;
        p.div_a = FastDiv(p.ow), p.div_b = FastDiv(row_groups), p.div_c = FastDiv(p.c_out);
        depthwise_nchw_kernel<T, K, GATE>
            <<<unsigned((p.runs + DW_THREADS - 1) / DW_THREADS), DW_THREADS, 0, stream>>>(p);
    }
}

template <class T, bool GATE>
void launch(const DepthwiseParams& p, int k, bool nhwc8, int n, cudaStream_t stream) {
    switch (k) {
        case 1:
            return launch<T, 1, GATE>(p, nhwc8, n, stream);
        case 3:
            return launch<T, 3, GATE>(p, nhwc8, n, stream);
        case 5:
            return launch<T, 5, GATE>(p, nhwc8, n, stream);
        default:
            return launch<T, 7, GATE>(p, nhwc8, n, stream);  // check_args: K odd, <= 7
    }
}

template <class T>
void launch(const DepthwiseParams& p, int k, bool gate, bool nhwc8, int n, cudaStream_t stream) {
    if (gate)
        launch<T, true>(p, k, nhwc8, n, stream);
    else
        launch<T, false>(p, k, nhwc8, n, stream);
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
    p.c = s.c, p.h = s.h, p.w = s.w, p.c_out = o.c, p.oh = o.h, p.ow = o.w;
    p.in_stride = stored_channels(Layout::NHWC8, s.c);
    p.out_quads = stored_channels(Layout::NHWC8, o.c) / 4;
    p.second_aligned = o.c % 4 == 0;
    p.pad = a.pad_before, p.pad_after = a.pad_after, p.mode = int(a.pad_mode);
    if (nhwc8) {
        check_aligned16(a.input.data, context, "input");
        check_aligned16(a.output.data, context, "output");
    }
    switch (a.input.dtype) {
        case DType::F32:
            launch<float>(p, a.kernel, a.gate, nhwc8, o.n, stream_);
            break;
        case DType::F16:
            launch<__half>(p, a.kernel, a.gate, nhwc8, o.n, stream_);
            break;
        case DType::BF16:
            launch<__nv_bfloat16>(p, a.kernel, a.gate, nhwc8, o.n, stream_);
            break;
    }
    check_launch(context, "depthwise_conv2d kernel launch");
}

}  // namespace imr::cuda
