// Fused residual block: out = x + conv_out(conv_in(x)), both 3x3, zero pad 1.
//
// Floors (per output pixel, C = 3, hidden = 32): 2*(9*C*H + 9*H*C) = 3456 FLOP
// and 24 bytes (read x, write out; weights are 7 KB). On an H200 the fp32
// FFMA pipe (~60-67 TFLOP/s) makes this compute-bound: 8x512x512 needs
// ~7.2 GFLOP = ~110-120 us against ~12 us of memory traffic.
//
// Tiling of the fused kernel (one block = one 28 x 64 output tile of one
// image, 256 threads):
//   1. the input tile with its 2-pixel halo (3 x 32 x 70 floats) is read from
//      global memory once into shared memory, zero outside the image;
//   2. the hidden activation of the tile plus a 1-pixel halo (30 x 66, computed
//      as 30 x 68 so that every thread owns a 4-pixel strip) is produced
//      RB_HC channels at a time into shared memory (zero outside the image:
//      conv_out pads the hidden tensor with zeros, not with its bias);
//   3. each thread accumulates a 4 x 4 pixel x 3 channel block of the output
//      over half of the chunk's hidden channels in registers; after the last
//      chunk the two halves are summed, bias and x added and the result
//      written. The hidden tensor never touches global memory.
// The recomputed hidden halo costs (30*68)/(28*64) - 1 = 14% of conv_in.
// Both phases read shared memory as float4 and the weights as float4
// broadcasts, so each loaded float feeds >= 8 FFMAs (shared memory delivers
// 32 floats per clock per SM against 128 FFMA lanes).
// Small grids (tiles <= SMs / 2, e.g. 1x64x64: 3 tiles) split each tile's
// hidden channels over two blocks, see launch_fused.
// This is the third version of the kernel (v3; v1/v2, with a 2 x 4 pixel
// conv_out block, are in git history up to commit ed1dc63). H200,
// 8x512x512: v2 262 us, v3 227 us (docs/performance.md, "v3 notes").
#include <algorithm>
#include <cstdlib>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "residual_block.cuh"

namespace imr::cuda {
namespace {

// ---- fused kernel configuration (chosen for H200 / sm_90, C = 3, hidden = 32)
constexpr int RB_C = 3;                               // input/output channels of the fused kernel
constexpr int RB_THREADS = 256;                       // 8 warps; 2 blocks/SM fit (<= 128 regs, ~100 KB smem each)
constexpr int RB_TILE_W = 64;                         // output tile width: 512/256/128/64 split without remainder
constexpr int RB_TILE_H = 28;                         // (28+2) rows x 17 strips = 510 conv_in units ~ 2 rounds of 256
constexpr int RB_STRIP = 4;                           // pixels per thread along x: one float4 of shared memory
constexpr int RB_HID_W = 68;                          // hidden columns computed: TILE_W + 2 rounded up to a strip
constexpr int RB_HID_H = RB_TILE_H + 2;               // hidden rows: tile + 1-pixel halo each side
constexpr int RB_IN_W = 72;                           // input row stride: HID_W + 2 = 70 used, padded to 16 bytes
constexpr int RB_IN_H = RB_TILE_H + 4;                // input rows: tile + 2-pixel halo each side
constexpr int RB_HC = 8;                              // hidden channels per chunk: 8 x 30 x 68 floats = 65 KB
constexpr int RB_MAX_HIDDEN = 128;                    // all weights stay in shared memory (<= 28 KB)
constexpr int RB_WOUT_STRIDE = 28;                    // 27 conv_out weights of one hidden channel + 1 pad (float4s)
constexpr int RB_IN_STRIPS = RB_HID_W / RB_STRIP;     // 17 conv_in strips per hidden row
constexpr int RB_IN_UNITS = RB_HID_H * RB_IN_STRIPS;  // 510 conv_in work units (1 x 4 pixels x RB_HC channels)
constexpr int RB_OUT_STRIPS = RB_TILE_W / RB_STRIP;   // 16
static_assert(RB_HID_W >= RB_TILE_W + 2 && RB_HID_W % RB_STRIP == 0, "hidden tile covers the halo in strips");
static_assert(RB_IN_W >= RB_HID_W + 4 && RB_IN_W % 4 == 0, "conv_in reads two float4 per row");

constexpr int RB_S_IN = RB_C * RB_IN_H * RB_IN_W;      // floats
constexpr int RB_S_HID = RB_HC * RB_HID_H * RB_HID_W;  // floats

size_t fused_smem_bytes(int hidden_pad) {
    return sizeof(float) * (RB_S_IN + RB_S_HID + hidden_pad * RB_C * 9 + hidden_pad + hidden_pad * RB_WOUT_STRIDE + 4);
}

__device__ __forceinline__ void unpack8(float (&v)[8], const float* p) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    const float4 b = *reinterpret_cast<const float4*>(p + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// conv_in of one chunk: hidden channels [chunk*RB_HC, +RB_HC) on the whole
// RB_HID_H x RB_HID_W hidden tile (the output tile plus its 1-pixel halo), from
// the input tile in s_in, into s_hid; zero where the hidden pixel lies outside
// the image (conv_out's zero padding). Work unit: 1 x 4 pixels x RB_HC
// channels, RB_IN_UNITS of them over the block's threads.
__device__ __forceinline__ void conv_in_chunk(const float* s_in, const float* s_win, const float* s_bin, float* s_hid,
                                              int chunk, int tid, int ty0, int tx0, int H, int W) {
    for (int u = tid; u < RB_IN_UNITS; u += RB_THREADS) {
        const int hy = u / RB_IN_STRIPS, hx = (u % RB_IN_STRIPS) * RB_STRIP;
        float a[RB_HC][RB_STRIP];
#pragma unroll
        for (int h = 0; h < RB_HC; ++h)
#pragma unroll
            for (int i = 0; i < RB_STRIP; ++i) a[h][i] = s_bin[chunk * RB_HC + h];
#pragma unroll
        for (int c = 0; c < RB_C; ++c)
#pragma unroll
            for (int ky = 0; ky < 3; ++ky) {
                float v[8];
                unpack8(v, s_in + (c * RB_IN_H + hy + ky) * RB_IN_W + hx);
#pragma unroll
                for (int kx = 0; kx < 3; ++kx) {
                    float w[RB_HC];
                    unpack8(w, s_win + ((chunk * RB_C + c) * 9 + ky * 3 + kx) * RB_HC);
#pragma unroll
                    for (int h = 0; h < RB_HC; ++h)
#pragma unroll
                        for (int i = 0; i < RB_STRIP; ++i) a[h][i] = fmaf(w[h], v[i + kx], a[h][i]);
                }
            }
        const int gy = ty0 - 1 + hy;
        bool in[RB_STRIP];
#pragma unroll
        for (int i = 0; i < RB_STRIP; ++i) {
            const int gx = tx0 - 1 + hx + i;
            in[i] = gy >= 0 && gy < H && gx >= 0 && gx < W;
        }
#pragma unroll
        for (int h = 0; h < RB_HC; ++h)
            *reinterpret_cast<float4*>(s_hid + (h * RB_HID_H + hy) * RB_HID_W + hx) =
                make_float4(in[0] ? a[h][0] : 0.f, in[1] ? a[h][1] : 0.f, in[2] ? a[h][2] : 0.f, in[3] ? a[h][3] : 0.f);
    }
}

// ---- the conv_out register block: 4 x 4 pixels, each hidden chunk split over two threads.
// v2's conv_out unit (2 x 4 pixels x 3 channels) loads 4 hidden rows (8 LDS.128,
// 32 wavefronts) + 7 weight float4s for 216 FFMA: 0.18 shared wavefronts per
// FFMA, about as much as conv_in (ncu v1: the kernel stalls on the shared
// pipe and barriers, not on the FFMA pipe). v3's unit is 4 x 4 pixels x 3
// channels (48 accumulators): 6 hidden rows (12 LDS.128) + 7 weight float4s
// for 432 FFMA = 0.127 wavefronts per FFMA and 37% fewer shared loads. The
// 28 rows give only 7 such row groups x 16 strips = 112 units, so each unit is
// taken by two threads, one per half of the chunk's hidden channels (224
// threads busy, as in v2); the halves are summed once through shared memory
// after the last chunk, in a fixed order (deterministic). The input tile is
// loaded with all 27 global loads per thread in flight before the first
// shared store (v2 loaded one or a few at a time).
constexpr int RB3_OUT_ROWS = 4;                                        // conv_out rows per thread (48 accumulators)
constexpr int RB3_OUT_GROUPS = RB_TILE_H / RB3_OUT_ROWS;               // 7 row groups per tile
constexpr int RB3_OUT_UNITS = RB3_OUT_GROUPS * RB_OUT_STRIPS;          // 112 (4 x 4 pixel) units
constexpr int RB3_HALVES = 2;                                          // hidden-channel halves per unit
constexpr int RB3_HALF_HC = RB_HC / RB3_HALVES;                        // 4 hidden channels per half and chunk
constexpr int RB3_OUT_THREADS = RB3_OUT_UNITS * RB3_HALVES;            // 224 threads with conv_out work
constexpr int RB3_ACC = RB3_OUT_ROWS * RB_STRIP * RB_C;                // 48 accumulators per thread
constexpr int RB3_IN_LOADS = (RB_S_IN + RB_THREADS - 1) / RB_THREADS;  // 27 input floats per thread
static_assert(RB_TILE_H % RB3_OUT_ROWS == 0, "conv_out units tile the rows");
static_assert(RB3_OUT_THREADS <= RB_THREADS, "one conv_out (unit, half) per thread");
static_assert(RB_HC % RB3_HALVES == 0, "halves split a chunk evenly");
static_assert(RB3_OUT_UNITS * RB3_ACC <= RB_S_HID, "the halves' reduction fits in the hidden buffer");

__global__ void __launch_bounds__(RB_THREADS, 2)
    residual_block_c3_v3_kernel(const float* __restrict__ x, float* __restrict__ out, const float* __restrict__ w_in,
                                const float* __restrict__ b_in, const float* __restrict__ w_out,
                                const float* __restrict__ b_out, int H, int W, int hidden, int hidden_pad, int splits) {
    extern __shared__ __align__(16) float smem[];
    float* s_in = smem;                                    // [C][IN_H][IN_W]
    float* s_hid = s_in + RB_S_IN;                         // [HC][HID_H][HID_W]
    float* s_win = s_hid + RB_S_HID;                       // [hidden_pad/HC][C][9 taps][HC]
    float* s_bin = s_win + hidden_pad * RB_C * 9;          // [hidden_pad]
    float* s_wout = s_bin + hidden_pad;                    // [hidden_pad][9 taps x C + 1]
    float* s_bout = s_wout + hidden_pad * RB_WOUT_STRIDE;  // [4]

    const int tid = threadIdx.x;
    const int n = blockIdx.z / splits, part = blockIdx.z - n * splits;
    const int n_chunks = hidden_pad / RB_HC, per_part = (n_chunks + splits - 1) / splits;
    const int chunk_begin = part * per_part, chunk_end = min(n_chunks, chunk_begin + per_part);
    const int tx0 = blockIdx.x * RB_TILE_W, ty0 = blockIdx.y * RB_TILE_H;
    const size_t plane = size_t(H) * W;
    const float* xn = x + size_t(n) * RB_C * plane;

    // The input tile with a 2-pixel halo, zero outside the image: all loads first, then the stores.
    {
        float t[RB3_IN_LOADS];
#pragma unroll
        for (int k = 0; k < RB3_IN_LOADS; ++k) {
            const int i = tid + k * RB_THREADS;
            const int col = i % RB_IN_W, row = (i / RB_IN_W) % RB_IN_H, c = i / (RB_IN_W * RB_IN_H);
            const int gy = ty0 - 2 + row, gx = tx0 - 2 + col;
            t[k] = (i < RB_S_IN && gy >= 0 && gy < H && gx >= 0 && gx < W) ? __ldg(xn + c * plane + size_t(gy) * W + gx)
                                                                           : 0.f;
        }
#pragma unroll
        for (int k = 0; k < RB3_IN_LOADS; ++k)
            if (tid + k * RB_THREADS < RB_S_IN) s_in[tid + k * RB_THREADS] = t[k];
    }
    // Weights, rearranged so that the inner loops read float4 broadcasts; zero past `hidden`.
#pragma unroll 4
    for (int i = tid; i < hidden_pad * RB_C * 9; i += RB_THREADS) {
        const int h8 = i % RB_HC, t = i / RB_HC, tap = t % 9, c = (t / 9) % RB_C, chunk = t / (9 * RB_C);
        const int h = chunk * RB_HC + h8;
        s_win[i] = h < hidden ? __ldg(w_in + (h * RB_C + c) * 9 + tap) : 0.f;
    }
    for (int i = tid; i < hidden_pad; i += RB_THREADS) s_bin[i] = i < hidden ? b_in[i] : 0.f;
#pragma unroll 4
    for (int i = tid; i < hidden_pad * RB_WOUT_STRIDE; i += RB_THREADS) {
        const int h = i / RB_WOUT_STRIDE, j = i % RB_WOUT_STRIDE, tap = j / RB_C, c = j % RB_C;
        s_wout[i] = (h < hidden && j < 9 * RB_C) ? __ldg(w_out + (c * hidden + h) * 9 + tap) : 0.f;
    }
    if (tid < 4) s_bout[tid] = tid < RB_C ? b_out[tid] : 0.f;
    __syncthreads();

    // conv_out unit of this thread: rows oy..oy+3, columns ox..ox+3 (tile-local), hidden
    // channels [half * HALF_HC, +HALF_HC) of every chunk. Threads 0..111 take half 0, so that
    // a quarter warp reads 8 consecutive float4s of one hidden row (no bank conflicts).
    const bool has_out = tid < RB3_OUT_THREADS;
    const int half = tid / RB3_OUT_UNITS, ou = tid - half * RB3_OUT_UNITS;
    const int oy = (ou / RB_OUT_STRIPS) * RB3_OUT_ROWS, ox = (ou % RB_OUT_STRIPS) * RB_STRIP;
    float acc[RB3_OUT_ROWS][RB_STRIP][RB_C] = {};

    for (int chunk = chunk_begin; chunk < chunk_end; ++chunk) {
        // ---- conv_in: 1 x 4 pixels x 8 hidden channels per unit, 2 units per thread.
        conv_in_chunk(s_in, s_win, s_bin, s_hid, chunk, tid, ty0, tx0, H, W);
        __syncthreads();

        // ---- conv_out: this half's hidden channels into the 4 x 4 x 3 block. Hidden row r feeds
        // output rows r - ky; each row is loaded once (6 rows for 4 output rows).
        if (has_out) {
#pragma unroll 1
            for (int hh = 0; hh < RB3_HALF_HC; ++hh) {
                const int h = half * RB3_HALF_HC + hh;
                float w[RB_WOUT_STRIDE];
#pragma unroll
                for (int q = 0; q < RB_WOUT_STRIDE / 4; ++q) {
                    const float4 t =
                        *reinterpret_cast<const float4*>(s_wout + (chunk * RB_HC + h) * RB_WOUT_STRIDE + 4 * q);
                    w[4 * q] = t.x, w[4 * q + 1] = t.y, w[4 * q + 2] = t.z, w[4 * q + 3] = t.w;
                }
                const float* hrow = s_hid + (h * RB_HID_H + oy) * RB_HID_W + ox;
#pragma unroll
                for (int r = 0; r < RB3_OUT_ROWS + 2; ++r) {
                    float v[8];
                    unpack8(v, hrow + r * RB_HID_W);
#pragma unroll
                    for (int ky = 0; ky < 3; ++ky) {
                        const int orow = r - ky;
                        if (orow < 0 || orow >= RB3_OUT_ROWS) continue;
#pragma unroll
                        for (int kx = 0; kx < 3; ++kx)
#pragma unroll
                            for (int c = 0; c < RB_C; ++c)
#pragma unroll
                                for (int i = 0; i < RB_STRIP; ++i)
                                    acc[orow][i][c] = fmaf(w[(ky * 3 + kx) * RB_C + c], v[i + kx], acc[orow][i][c]);
                    }
                }
            }
        }
        __syncthreads();  // the next chunk (or the reduction below) overwrites s_hid
    }

    // Sum the two halves: half 1 parks its block in s_hid, half 0 adds it (fixed order).
    float* s_red = s_hid;  // [ACC][OUT_UNITS]: consecutive threads, consecutive words
    if (has_out && half == 1) {
#pragma unroll
        for (int r = 0; r < RB3_OUT_ROWS; ++r)
#pragma unroll
            for (int i = 0; i < RB_STRIP; ++i)
#pragma unroll
                for (int c = 0; c < RB_C; ++c)
                    s_red[((r * RB_STRIP + i) * RB_C + c) * RB3_OUT_UNITS + ou] = acc[r][i][c];
    }
    __syncthreads();
    if (!has_out || half != 0) return;
#pragma unroll
    for (int r = 0; r < RB3_OUT_ROWS; ++r) {
        const int gy = ty0 + oy + r;
#pragma unroll
        for (int i = 0; i < RB_STRIP; ++i) {
            const int gx = tx0 + ox + i;
#pragma unroll
            for (int c = 0; c < RB_C; ++c) {
                const float sum = acc[r][i][c] + s_red[((r * RB_STRIP + i) * RB_C + c) * RB3_OUT_UNITS + ou];
                if (gy >= H || gx >= W) continue;
                const float xv = s_in[(c * RB_IN_H + oy + r + 2) * RB_IN_W + ox + i + 2];
                float* o = out + (size_t(n) * RB_C + c) * plane + size_t(gy) * W + gx;
                if (splits == 1)
                    *o = xv + (sum + s_bout[c]);
                else  // exactly two addends onto zero: the sum does not depend on their order
                    atomicAdd(o, part == 0 ? xv + (sum + s_bout[c]) : sum);
            }
        }
    }
}

// Any C and hidden: one thread per output element, the hidden values it needs
// recomputed on the fly (still nothing in global memory). Slow (9x the conv_in
// work per output channel) but simple; only for shapes the tiled kernel
// does not take. Floor as above; it runs far from it.
constexpr int RB_GENERIC_THREADS = 128;

__global__ void __launch_bounds__(RB_GENERIC_THREADS)
    residual_block_generic_kernel(const float* __restrict__ x, float* __restrict__ out, const float* __restrict__ w_in,
                                  const float* __restrict__ b_in, const float* __restrict__ w_out,
                                  const float* __restrict__ b_out, int N, int C, int H, int W, int hidden) {
    const size_t total = size_t(N) * C * H * W;
    for (size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
         idx += size_t(gridDim.x) * blockDim.x) {
        const int px = int(idx % W), py = int((idx / W) % H), co = int((idx / (size_t(W) * H)) % C);
        const size_t n = idx / (size_t(W) * H * C);
        const float* xn = x + n * C * size_t(H) * W;
        float acc = b_out[co];
        for (int h = 0; h < hidden; ++h)
            for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx) {
                    const int hy = py + ky - 1, hx = px + kx - 1;
                    if (hy < 0 || hy >= H || hx < 0 || hx >= W) continue;  // hidden is zero-padded
                    float hv = b_in[h];
                    for (int ci = 0; ci < C; ++ci)
                        for (int ky2 = 0; ky2 < 3; ++ky2)
                            for (int kx2 = 0; kx2 < 3; ++kx2) {
                                const int iy = hy + ky2 - 1, ix = hx + kx2 - 1;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                hv = fmaf(w_in[((h * C + ci) * 3 + ky2) * 3 + kx2], xn[(size_t(ci) * H + iy) * W + ix],
                                          hv);
                            }
                    acc = fmaf(w_out[((co * hidden + h) * 3 + ky) * 3 + kx], hv, acc);
                }
        out[idx] = xn[(size_t(co) * H + py) * W + px] + acc;
    }
}

std::string context(const ResidualBlockArgs& a) {
    return "residual_block " + a.input.shape.str() + " hidden " + std::to_string(a.hidden);
}

// Small grids: when the tiles would fill at most half of the SMs (blocks <=
// SMs / 2), each tile's hidden channels are split over two blocks (atomic add
// of exactly two partial sums onto a zeroed output, so the result stays
// deterministic). Measured on the H200 (v2 notes in docs/performance.md):
// 3..48 blocks: ~38 -> ~31 us; 80 blocks (2x256x256): 38.7 -> 40.9 us, a loss,
// hence the half. IMRESTORE_RB_SPLIT=0 turns it off (for measurements).
constexpr int RB_SPLIT = 2;
bool split_enabled() {
    static const bool on = [] {
        const char* e = std::getenv("IMRESTORE_RB_SPLIT");
        return !(e && e[0] == '0');
    }();
    return on;
}

void launch_fused(const ResidualBlockArgs& a, cudaStream_t stream, int sm_count) {
    const int hidden_pad = (a.hidden + RB_HC - 1) / RB_HC * RB_HC;
    const size_t smem = fused_smem_bytes(hidden_pad);
    const auto kernel = residual_block_c3_v3_kernel;
    check_cuda(raise_smem_limit(reinterpret_cast<const void*>(kernel), smem), context(a),
               "cudaFuncSetAttribute(max dynamic shared memory)");
    const auto tiles = [](int h, int w) {  // the blocks of one image of h x w
        return dim3(unsigned((w + RB_TILE_W - 1) / RB_TILE_W), unsigned((h + RB_TILE_H - 1) / RB_TILE_H));
    };
    const dim3 own = tiles(a.input.shape.h, a.input.shape.w);
    const unsigned gx = own.x, gy = own.y;
    // The split is decided for the size planned for (ResidualBlockArgs::plan_h):
    // an image's tiles and a batch's images split as the image alone would.
    const dim3 planned = a.plan_h > 0 ? tiles(a.plan_h, a.plan_w) : own;
    const long long blocks = (long long)planned.x * planned.y * (a.plan_h > 0 ? 1 : a.input.shape.n);
    const int splits = (split_enabled() && 2 * blocks <= sm_count && hidden_pad / RB_HC >= RB_SPLIT &&
                        (long long)a.input.shape.n * RB_SPLIT <= 65535)
                           ? RB_SPLIT
                           : 1;
    if (splits > 1)
        check_cuda(cudaMemsetAsync(a.output.data, 0, a.output.bytes(), stream), context(a),
                   "cudaMemsetAsync(output) for the split hidden channels");
    const dim3 grid(gx, gy, unsigned(a.input.shape.n * splits));
    kernel<<<grid, RB_THREADS, smem, stream>>>(a.input.as<const float>(), a.output.as<float>(),
                                               a.conv_in_weight.as<const float>(), a.conv_in_bias.as<const float>(),
                                               a.conv_out_weight.as<const float>(), a.conv_out_bias.as<const float>(),
                                               a.input.shape.h, a.input.shape.w, a.hidden, hidden_pad, splits);
    check_launch(context(a), "residual_block_c3_v3_kernel launch");
}

void launch_generic(const ResidualBlockArgs& a, cudaStream_t stream) {
    const size_t total = a.input.shape.count();
    const unsigned blocks = unsigned(std::min<size_t>((total + RB_GENERIC_THREADS - 1) / RB_GENERIC_THREADS, 1u << 20));
    residual_block_generic_kernel<<<blocks, RB_GENERIC_THREADS, 0, stream>>>(
        a.input.as<const float>(), a.output.as<float>(), a.conv_in_weight.as<const float>(),
        a.conv_in_bias.as<const float>(), a.conv_out_weight.as<const float>(), a.conv_out_bias.as<const float>(),
        a.input.shape.n, a.input.shape.c, a.input.shape.h, a.input.shape.w, a.hidden);
    check_launch(context(a), "residual_block_generic_kernel launch");
}

}  // namespace

std::vector<std::string> residual_block_variants() {
    return {"fused_c3_tile_28x64", "generic_per_output"};
}

void residual_block(const ResidualBlockArgs& a, cudaStream_t stream, int sm_count, int forced) {
    check_args(a);
    if (a.input.shape.n > 65535) throw Error(context(a) + ": batch larger than 65535 is not supported on CUDA");
    const bool fused_fits = a.input.shape.c == RB_C && a.hidden <= RB_MAX_HIDDEN;
    if (forced == 0 && !fused_fits)
        throw NotApplicable(context(a) + ": variant fused_c3_tile_28x64 takes C = 3 and hidden <= 128 only");
    if (forced < 0 ? fused_fits : forced == 0)
        launch_fused(a, stream, sm_count);
    else
        launch_generic(a, stream);
}

void CudaBackend::residual_block(const ResidualBlockArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::ResidualBlock, {&a.input, &a.output});
    cuda::residual_block(a, stream_, sm_count_, forced_variant(Op::ResidualBlock));
}

}  // namespace imr::cuda
