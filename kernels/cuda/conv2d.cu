// conv2d on CUDA: four kernels, each run in the configurations of one
// variant table (kConv2dVariants below); plan_conv2d picks a variant per shape,
// the op tests run every case on every variant and bench_gpu times them all.
//
// igemm (implicit GEMM in fp32 FFMA, SGEMM style), two of the kernels:
//   GEMM view: M = Cout, N = batch*Ho*Wo (output pixels), K = Cin*K*K (in the
//   weight's own order ci, ky, kx, so a weight row is contiguous).
//   A[m][r] = weight[m][r]; B[r][p] = padded input at (img(p), ci, oy+ky, ox+kx),
//   gathered while the tile is loaded: the pad mode is an index mapping
//   (zero: bounds check; reflect: mirror; replicate: clamp), never a padded copy.
//   - multistage (conv2d_igemm_multistage_kernel): CUTLASS-style conflict-free
//     fragments, cp.async pipeline of STAGES tiles of BK rows. H200: GPU MODE's
//     ranked shape 40.6 ms = 62% of fp32 peak.
//   - double buffer (conv2d_igemm_double_buffer_kernel): register-staged, two
//     shared-memory buffers, a 32 x 64 tile for the shapes too small or too
//     narrow for the multistage tiles (it ran every shape until ed1dc63).
// direct (conv2d_direct_small_cout_kernel): few output channels (a network's
//   last layer, 48 -> 3 or 64 -> 12). An implicit GEMM wastes most of its
//   M tile there (3 of 32 rows: 1.9% of peak on the H200); the direct kernel
//   stages an input tile with its halo in shared memory once per channel and
//   computes all output channels of 4 pixels per thread from it.
// Winograd (conv2d_winograd_2x2_3x3_kernel): 3x3 layers of 17..48 output
//   channels, with 16 multiplies per 2x2 outputs where the others need 36.
//
// Floors: 2*M*N*K FLOP; bytes = input + weight + output (+ residual), each
// once. Every GPU MODE conv2d_v2 shape is compute-bound by a wide margin (the
// ranked B=1, C=128, S=256, K=32 shape: 1.70 TFLOP = ~28 ms at 60 TFLOP/s
// against ~130 MB = 0.03 ms of traffic); so is every layer of the bundled
// models (48 -> 48, 3x3: 864 FLOP per 392 bytes per pixel).
//
// A reduction too long for a grid of only ~1.5 waves may be split over two
// igemm blocks (atomic add of exactly two partial sums onto zero: the result
// does not depend on their order, so it stays deterministic).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common.cuh"
#include "conv2d.cuh"
#include "cuda_backend.cuh"

namespace imr::cuda {
namespace {

// ---- double-buffer kernel configuration (chosen for H200 / sm_90)
constexpr int CV_THREADS = 256;       // 16 x 16 thread grid; 8 warps
constexpr int CV_BK = 8;              // reduction step: 8 rows of A and B per barrier (32 threads per B row)
constexpr int CV_PAD = 4;             // smem row padding (floats): conflict-free transposed A stores, 16-byte rows
constexpr int CV_MIN_BLOCKS = 2;      // blocks per SM the launch bounds ask for (<= 128 registers per thread)
constexpr int CV_SPLIT_MIN_K = 1024;  // split the reduction only when each half still has >= 64 steps

struct ConvParams {
    const float* in;
    const float* weight;
    const float* bias;
    const float* residual;  // optional, output-shaped: added after the activation
    float* out;
    int relu;  // 1: max(0, .) after the bias
    int cin, h, w, cout, k, pad_before;
    int ho, wo, howo, npix;  // output plane and N of the GEMM
    int kdim, kk, hw, cin_hw, cout_howo;
    int k_chunk;  // reduction length per block (a multiple of CV_BK)
    int atomic;   // split reduction: atomicAdd into a zeroed output
    FastDiv div_kk, div_k;
    const float* wino_u;  // Winograd: the transformed weights (winograd_weight_transform_kernel)
};

// Output pixel pidx (flattened over batch and rows) -> (offset of its image
// in the input, top input row, left input column), both before padding is
// mapped; x = -1 marks a pixel past the end (a tile's tail).
__device__ __forceinline__ int4 pixel_column(const ConvParams& p, int pidx) {
    if (pidx >= p.npix) return make_int4(-1, 0, 0, 0);
    const int img = pidx / p.howo, pix = pidx - img * p.howo, oy = pix / p.wo;
    return make_int4(img * p.cin_hw, oy - p.pad_before, pix - oy * p.wo - p.pad_before, 0);
}

// The fused epilogue after the bias: activation, then the residual (never with
// the split reduction, whose partial sums are added by atomics; the planner
// does not split then). One read of the residual, no extra pass over memory.
__device__ __forceinline__ float epilogue(const ConvParams& p, float v, int offset) {
    if (p.relu) v = fmaxf(v, 0.f);
    if (p.residual) v += __ldg(p.residual + offset);
    return v;
}

// Maps a padded-image coordinate into the image; false: the zero border.
// i must lie in the padded image (-pad_before <= i < n + pad_after).
template <PadMode PAD>
__device__ __forceinline__ bool map_coord(int& i, int n) {
    if constexpr (PAD == PadMode::Zero) {
        return unsigned(i) < unsigned(n);
    } else if constexpr (PAD == PadMode::Replicate) {
        i = min(max(i, 0), n - 1);
        return true;
    } else {  // Reflect, the edge not repeated; check_args keeps the padding < n
        i = i < 0 ? -i : i;
        i = i >= n ? 2 * n - 2 - i : i;
        return true;
    }
}

template <int N>
__device__ __forceinline__ void load_frag(float (&v)[N], const float* p) {
    if constexpr (N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            const float4 t = *reinterpret_cast<const float4*>(p + i);
            v[i] = t.x, v[i + 1] = t.y, v[i + 2] = t.z, v[i + 3] = t.w;
        }
    } else if constexpr (N % 2 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            const float2 t = *reinterpret_cast<const float2*>(p + i);
            v[i] = t.x, v[i + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = p[i];
    }
}

template <int BM, int BN, int TM, int TN, PadMode PAD>
__global__ void __launch_bounds__(CV_THREADS, CV_MIN_BLOCKS) conv2d_igemm_double_buffer_kernel(const ConvParams p) {
    static_assert(BM / TM == 16 && BN / TN == 16, "16 x 16 threads");
    constexpr int A_PER = BM * CV_BK / CV_THREADS;  // A elements each thread loads per step
    constexpr int B_TPR = CV_THREADS / CV_BK;       // threads per B row (32: one warp, coalesced pixels)
    constexpr int B_PER = BN / B_TPR;               // B elements each thread loads per step
    static_assert(A_PER >= 1 && B_PER >= 1, "tile too small for 256 threads");

    __shared__ __align__(16) float As[2][CV_BK][BM + CV_PAD];  // (BK, BM, PIPE) transposed weight tile
    __shared__ __align__(16) float Bs[2][CV_BK][BN + CV_PAD];  // (BK, BN, PIPE) gathered input tile

    const int tid = threadIdx.x;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int kb = blockIdx.z * p.k_chunk;
    const int ke = min(kb + p.k_chunk, p.kdim);

    // A loader: column a_r of the step, rows a_m + e*(THREADS/BK).
    const int a_r = tid % CV_BK, a_m = tid / CV_BK;
    const int a_off = (m0 + a_m) * p.kdim + a_r;  // row e adds e*(THREADS/BK)*kdim
    // B loader: row b_row of the step, pixels b_col + j*B_TPR (fixed for the
    // whole reduction). Their (image offset, top row, left column) live in
    // shared memory, not registers: the 128 x 128 tile needs every register
    // for its accumulators (one LDS.128 per pixel per step is cheap).
    __shared__ int4 s_col[BN];
    const int b_row = tid / B_TPR, b_col = tid % B_TPR;
    for (int c = tid; c < BN; c += CV_THREADS) s_col[c] = pixel_column(p, n0 + c);
    __syncthreads();

    float a_reg[A_PER], b_reg[B_PER];
    auto load_tile = [&](int k) {
#pragma unroll
        for (int e = 0; e < A_PER; ++e)
            a_reg[e] = (m0 + a_m + e * (CV_THREADS / CV_BK) < p.cout && k + a_r < ke)
                           ? __ldg(p.weight + a_off + e * (CV_THREADS / CV_BK) * p.kdim + k)
                           : 0.f;
        const int r = k + b_row;
        if (r < ke) {
            const int ci = p.div_kk.div(r), q = r - ci * p.kk;
            const int ky = p.div_k.div(q), kx = q - ky * p.k;
            const float* plane = p.in + ci * p.hw;
#pragma unroll
            for (int j = 0; j < B_PER; ++j) {
                const int4 col = s_col[b_col + j * B_TPR];
                int iy = col.y + ky, ix = col.z + kx;
                const bool ok = col.x >= 0 && map_coord<PAD>(iy, p.h) && map_coord<PAD>(ix, p.w);
                b_reg[j] = ok ? __ldg(plane + col.x + iy * p.w + ix) : 0.f;
            }
        } else {
#pragma unroll
            for (int j = 0; j < B_PER; ++j) b_reg[j] = 0.f;
        }
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int e = 0; e < A_PER; ++e) As[buf][a_r][a_m + e * (CV_THREADS / CV_BK)] = a_reg[e];
#pragma unroll
        for (int j = 0; j < B_PER; ++j) Bs[buf][b_row][b_col + j * B_TPR] = b_reg[j];
    };

    // Compute layout: a warp is 4 (m) x 8 (n) threads, so its A fragment reads
    // are 4-way broadcasts and its B reads cover 8 consecutive thread columns.
    const int warp = tid / 32, lane = tid % 32;
    const int tm = (warp / 2) * 4 + lane / 8;
    const int tn = (warp % 2) * 8 + lane % 8;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    load_tile(kb);
    store_tile(0);
    __syncthreads();
    int buf = 0;
    for (int k = kb; k < ke; k += CV_BK) {
        const bool has_next = k + CV_BK < ke;
        if (has_next) load_tile(k + CV_BK);  // global loads in flight during the FFMAs below
#pragma unroll
        for (int kk = 0; kk < CV_BK; ++kk) {
            float a[TM], b[TN];
            load_frag(a, &As[buf][kk][tm * TM]);
            load_frag(b, &Bs[buf][kk][tn * TN]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (has_next) store_tile(buf ^ 1);  // the other buffer was last read before the previous barrier
        __syncthreads();
        buf ^= 1;
    }

    // Epilogue: output[img][m][pix] = epilogue(acc + bias) (bias added by the first split only).
    int out_off[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int pidx = n0 + tn * TN + j;
        if (pidx < p.npix) {
            const int img = pidx / p.howo;
            out_off[j] = img * p.cout_howo + (pidx - img * p.howo);
        } else {
            out_off[j] = -1;
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + tm * TM + i;
        if (m >= p.cout) continue;
        const float bv = (p.bias && blockIdx.z == 0) ? __ldg(p.bias + m) : 0.f;
        float* out_m = p.out + m * p.howo;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            if (out_off[j] < 0) continue;
            const float v = epilogue(p, acc[i][j] + bv, m * p.howo + out_off[j]);
            if (p.atomic)
                atomicAdd(out_m + out_off[j], v);
            else
                out_m[out_off[j]] = v;
        }
    }
}

// ---- multistage kernel: cp.async pipeline, conflict-free fragments
//
// Thread (tm, tn) of a TGM x TGN grid (256 threads) owns FG x FR output rows,
// {g * BM/FG + tm*FR + i : g < FG, i < FR}, and 8 columns, {tn*4 + j, BN/2 +
// tn*4 + j : j < 4} (CUTLASS SGEMM style). A warp is 4 (m) x 8 (n) threads,
// so each fragment load is one shared-memory wavefront per warp (4 distinct
// FR-float vectors of A, 8 distinct float4 of B, broadcast to the rest):
// with FG = 2, FR = 4, 4 LDS.128 feed 64 FFMA; with FG = 3, FR = 2 (a 48-row
// tile), 3 LDS.64 + 2 LDS.128 feed 48.
// Tiles travel global -> shared with 4-byte cp.async (zero fill for the
// padding and the tails: no staging registers, no STS), STAGES deep, so one
// barrier per BK-row step and up to STAGES-1 tiles of loads in flight.
// VALID (no padding at all, GPU MODE's conv2d_v2): every tap of an in-range
// pixel is inside the image, so the gather is base(pixel) + offset(r) with
// the per-pixel bases in registers; no bounds checks.
constexpr int MS_THREADS = 256;   // 8 warps
constexpr int MS_MIN_BLOCKS = 2;  // 2 blocks/SM: <= 128 registers, <= ~113 KB shared memory each
constexpr int MS_PAD = 4;         // smem row padding (floats): conflict-free transposed A writes, 16-byte rows

__device__ __forceinline__ void cp_async4(unsigned dst, const float* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__host__ __device__ constexpr size_t multistage_smem_bytes(int bm, int bn, int bk, int stages) {
    return sizeof(float) * size_t(stages) * bk * ((bm + MS_PAD) + (bn + MS_PAD));
}

template <int BM, int BN, int BK, int STAGES, int FG, int FR, PadMode PAD, bool VALID>
__global__ void __launch_bounds__(MS_THREADS, MS_MIN_BLOCKS) conv2d_igemm_multistage_kernel(const ConvParams p) {
    constexpr int TM = FG * FR;                 // output rows per thread
    constexpr int TGM = BM / TM, TGN = BN / 8;  // thread grid
    static_assert(TGM * TM == BM && TGM * TGN == MS_THREADS, "BM/TM x BN/8 threads");
    static_assert(TGM % 4 == 0 && TGN % 8 == 0, "warps of 4 x 8 threads");
    static_assert(FR == 1 || FR == 2 || FR == 4, "A fragments are one LDS of 1, 2 or 4 floats");
    static_assert(BK % 8 == 0 && BM % 16 == 0 && BN % 32 == 0, "loader shapes");
    static_assert(!VALID || PAD == PadMode::Zero, "VALID means no padding");
    static_assert(multistage_smem_bytes(BM, BN, BK, STAGES) + sizeof(int4) * BN <= 113 * 1024,
                  "two blocks per SM must fit in shared memory");
    constexpr int AS = BM + MS_PAD, BS = BN + MS_PAD;    // smem row strides (floats)
    constexpr int A_STAGE = BK * AS, B_STAGE = BK * BS;  // floats per stage
    constexpr int A_ROWS = (BM + 31) / 32, KF = BK / 8;  // A loader: rows a_m + 32e (< BM), columns a_r + 8f
    constexpr int B_COLS = BN / 32;                      // B loader: rows b_row + 8f, pixels lane + 32j

    extern __shared__ __align__(16) float ms_smem[];
    float* As = ms_smem;                     // [STAGES][BK][AS]: transposed weight tile
    float* Bs = ms_smem + STAGES * A_STAGE;  // [STAGES][BK][BS]: gathered input tile
    __shared__ int4 s_col[VALID ? 1 : BN];   // per pixel (image offset, top row, left column); -1: past the end

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int kb = blockIdx.z * p.k_chunk;
    const int ke = min(kb + p.k_chunk, p.kdim);
    const int k_tiles = (ke - kb + BK - 1) / BK;

    // A loader.
    const int a_r = tid % 8, a_m = tid / 8;
    unsigned a_ok = 0;  // bit e: row m0 + a_m + 32e exists
#pragma unroll
    for (int e = 0; e < A_ROWS; ++e) a_ok |= (m0 + a_m + 32 * e < p.cout) ? 1u << e : 0u;
    const float* a_src = p.weight + size_t(min(m0 + a_m, p.cout - 1)) * p.kdim + a_r;
    const size_t a_row_stride = size_t(32) * p.kdim;
    const unsigned as_base = unsigned(__cvta_generic_to_shared(As)) + 4u * unsigned(a_r * AS + a_m);

    // B loader.
    const int b_row = tid / 32;
    const unsigned bs_base = unsigned(__cvta_generic_to_shared(Bs)) + 4u * unsigned(b_row * BS + lane);
    // VALID: per-pixel base offsets, in registers while there are few (<= 4
    // per thread), else in shared memory (8 more registers would spill; one
    // LDS per element instead).
    constexpr bool BASE_REGS = B_COLS <= 4;
    int b_base[VALID && BASE_REGS ? B_COLS : 1];
    __shared__ int s_base[VALID && !BASE_REGS ? BN : 1];
    if constexpr (VALID) {
        auto base_of = [&](int pidx) {
            if (pidx >= p.npix) return 0;  // past the end: any in-range address, the epilogue drops the column
            const int img = pidx / p.howo, pix = pidx - img * p.howo, oy = pix / p.wo;
            return img * p.cin_hw + oy * p.w + (pix - oy * p.wo);
        };
        if constexpr (BASE_REGS) {
#pragma unroll
            for (int j = 0; j < B_COLS; ++j) b_base[j] = base_of(n0 + lane + 32 * j);
        } else {
            for (int c = tid; c < BN; c += MS_THREADS) s_base[c] = base_of(n0 + c);
            __syncthreads();
        }
    } else {
        for (int c = tid; c < BN; c += MS_THREADS) s_col[c] = pixel_column(p, n0 + c);
        __syncthreads();
    }

    auto load_stage = [&](int stage, int k) {
    // A: weight[m][k + a_r + 8f] -> As[stage][a_r + 8f][a_m + 32e]
#pragma unroll
        for (int f = 0; f < KF; ++f) {
            const bool r_ok = k + a_r + 8 * f < ke;
#pragma unroll
            for (int e = 0; e < A_ROWS; ++e) {
                if (BM % 32 != 0 && a_m + 32 * e >= BM) continue;  // a 48-row tile: rows 48..63 do not exist
                const bool ok = r_ok && (a_ok >> e & 1u);
                const float* src = ok ? a_src + e * a_row_stride + k + 8 * f : p.weight;
                cp_async4(as_base + 4u * unsigned(stage * A_STAGE + 8 * f * AS + 32 * e), src, ok ? 4 : 0);
            }
        }
        // B: padded input at (pixel, r) -> Bs[stage][b_row + 8f][lane + 32j]
#pragma unroll
        for (int f = 0; f < KF; ++f) {
            const int r = k + b_row + 8 * f;
            const bool r_ok = r < ke;
            const int rr = r_ok ? r : kb;  // an in-range row for the (unread) address of the zero fill
            const int ci = p.div_kk.div(rr), q = rr - ci * p.kk;
            const int ky = p.div_k.div(q), kx = q - ky * p.k;
            const unsigned dst = bs_base + 4u * unsigned(stage * B_STAGE + 8 * f * BS);
            if constexpr (VALID) {
                const float* src = p.in + (ci * p.hw + ky * p.w + kx);
#pragma unroll
                for (int j = 0; j < B_COLS; ++j) {
                    const int base = BASE_REGS ? b_base[BASE_REGS ? j : 0] : s_base[lane + 32 * j];
                    cp_async4(dst + 4u * unsigned(32 * j), src + base, r_ok ? 4 : 0);
                }
            } else {
                const float* plane = p.in + ci * p.hw;
#pragma unroll
                for (int j = 0; j < B_COLS; ++j) {
                    const int4 col = s_col[lane + 32 * j];
                    int iy = col.y + ky, ix = col.z + kx;
                    const bool ok = r_ok && col.x >= 0 && map_coord<PAD>(iy, p.h) && map_coord<PAD>(ix, p.w);
                    const float* src = ok ? plane + col.x + iy * p.w + ix : p.in;
                    cp_async4(dst + 4u * unsigned(32 * j), src, ok ? 4 : 0);
                }
            }
        }
    };

    const int tm = (warp / (TGN / 8)) * 4 + lane / 8;
    const int tn = (warp % (TGN / 8)) * 8 + lane % 8;
    float acc[TM][8];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_stage(s, kb + s * BK);
        cp_async_commit();
    }
    int read_stage = 0, write_stage = STAGES - 1;
    for (int t = 0; t < k_tiles; ++t) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
        __syncthreads();              // everyone's have; and everyone is done reading tile t-1's stage
        if (t + STAGES - 1 < k_tiles) load_stage(write_stage, kb + (t + STAGES - 1) * BK);
        cp_async_commit();  // (an empty group keeps the wait count uniform)
        const float* a_s = As + read_stage * A_STAGE + tm * FR;
        const float* b_s = Bs + read_stage * B_STAGE + tn * 4;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM];
#pragma unroll
            for (int g = 0; g < FG; ++g) {
                float v[FR];
                load_frag(v, a_s + kk * AS + g * (BM / FG));
#pragma unroll
                for (int i = 0; i < FR; ++i) a[g * FR + i] = v[i];
            }
            const float4 b0 = *reinterpret_cast<const float4*>(b_s + kk * BS);
            const float4 b1 = *reinterpret_cast<const float4*>(b_s + kk * BS + BN / 2);
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
        write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
    }
    cp_async_wait<0>();

    // Epilogue: output[img][m][pix] = epilogue(acc + bias) (bias added by the first split only).
    int out_off[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int pidx = n0 + (j < 4 ? tn * 4 + j : BN / 2 + tn * 4 + j - 4);
        if (pidx < p.npix) {
            const int img = pidx / p.howo;
            out_off[j] = img * p.cout_howo + (pidx - img * p.howo);
        } else {
            out_off[j] = -1;
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + (i / FR) * (BM / FG) + tm * FR + i % FR;
        if (m >= p.cout) continue;
        const float bv = (p.bias && blockIdx.z == 0) ? __ldg(p.bias + m) : 0.f;
        float* out_m = p.out + m * p.howo;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (out_off[j] < 0) continue;
            const float v = epilogue(p, acc[i][j] + bv, m * p.howo + out_off[j]);
            if (p.atomic)
                atomicAdd(out_m + out_off[j], v);
            else
                out_m[out_off[j]] = v;
        }
    }
}

// ---- direct kernel for few output channels
//
// A block computes a DT_TY x DT_TX tile of output pixels of one image, all
// output channels (CP >= Cout, a multiple of 4; the missing ones have zero
// weights and are not stored). Thread (tx, ty) of 32 x 8 owns column tx and
// the DT_ROWS rows ty*DT_ROWS + i. The input channels go through in chunks
// of DT_CC: the chunk's input tile with its K-1 halo, gathered once with the
// pad mode, and its weights as [ci][ky][kx][CP] (float4 broadcasts) sit in
// shared memory. Per (ci, kx) a thread loads the DT_ROWS + K - 1 input values
// of its column once and reuses them for every ky: for K = 3, CP = 4, 6 LDS +
// 3 LDS.128 feed 48 FFMA. The reads of a warp are 32 consecutive floats of
// one row (conflict-free); the writes of the epilogue are coalesced rows.
// KS: the kernel size when known at compile time (3), 0 for any K <= DT_MAX_K.
constexpr int DT_THREADS = 256;  // 32 x 8
constexpr int DT_TX = 32;        // output columns per block: one warp-wide row
constexpr int DT_ROWS = 4;       // output rows per thread
constexpr int DT_TY = 8 * DT_ROWS;
constexpr int DT_CC = 8;     // input channels per chunk: 8 x 34 x 34 floats = 37 KB for K = 3
constexpr int DT_MAX_K = 7;  // the largest kernel the direct variants take (K = 7: 8 x 38 x 38 floats = 46 KB)

constexpr size_t direct_smem_bytes(int k, int cp) {
    return sizeof(float) * size_t(DT_CC) * ((DT_TY + k - 1) * (DT_TX + k - 1) + k * k * cp);
}

template <int CP, int KS, PadMode PAD>
__global__ void __launch_bounds__(DT_THREADS) conv2d_direct_small_cout_kernel(const ConvParams p) {
    static_assert(CP % 4 == 0 && CP <= 16, "output channels in float4 groups, at most 16 accumulators per row");
    const int k = KS > 0 ? KS : p.k;
    const int hw_t = DT_TY + k - 1, ww_t = DT_TX + k - 1;  // input tile (rows, columns)
    extern __shared__ __align__(16) float dt_smem[];
    float* s_w = dt_smem;                        // [DT_CC][k*k][CP]
    float* s_in = dt_smem + DT_CC * k * k * CP;  // [DT_CC][hw_t][ww_t]

    const int tx = threadIdx.x % DT_TX, ty = threadIdx.x / DT_TX;
    const int ox0 = blockIdx.x * DT_TX, oy0 = blockIdx.y * DT_TY;
    const int kk = k * k;

    for (int img = blockIdx.z; img < p.npix / p.howo; img += gridDim.z) {
        const float* in_img = p.in + size_t(img) * p.cin_hw;
        float acc[DT_ROWS][CP];
#pragma unroll
        for (int i = 0; i < DT_ROWS; ++i)
#pragma unroll
            for (int c = 0; c < CP; ++c) acc[i][c] = 0.f;

        for (int c0 = 0; c0 < p.cin; c0 += DT_CC) {
            const int cc = min(DT_CC, p.cin - c0);
            __syncthreads();  // the previous chunk (or image) is no longer read
            // Weights of the chunk: s_w[ci][tap][co] = weight[co][c0 + ci][tap], zero past Cout.
            for (int e = threadIdx.x; e < cc * kk * CP; e += DT_THREADS) {
                const int co = e % CP, t = e / CP, ci = t / kk, tap = t - ci * kk;
                s_w[e] = co < p.cout ? __ldg(p.weight + (size_t(co) * p.cin + c0 + ci) * kk + tap) : 0.f;
            }
            // Input tile of the chunk with its halo; positions outside the
            // padded image (past a partial tile's end) are never used: zero.
            const int tile = hw_t * ww_t;
            for (int e = threadIdx.x; e < cc * tile; e += DT_THREADS) {
                const int ci = e / tile, q = e - ci * tile, r = q / ww_t, c = q - r * ww_t;
                int iy = oy0 + r - p.pad_before, ix = ox0 + c - p.pad_before;
                const bool inside = oy0 + r < p.ho + k - 1 && ox0 + c < p.wo + k - 1;
                const bool ok = inside && map_coord<PAD>(iy, p.h) && map_coord<PAD>(ix, p.w);
                s_in[e] = ok ? __ldg(in_img + (size_t(c0 + ci) * p.h + iy) * p.w + ix) : 0.f;
            }
            __syncthreads();
            for (int ci = 0; ci < cc; ++ci) {
                const float* in_c = s_in + ci * tile + (ty * DT_ROWS) * ww_t + tx;
                const float* w_c = s_w + ci * kk * CP;
                if constexpr (KS > 0) {
#pragma unroll
                    for (int kx = 0; kx < KS; ++kx) {
                        float v[DT_ROWS + KS - 1];
#pragma unroll
                        for (int r = 0; r < DT_ROWS + KS - 1; ++r) v[r] = in_c[r * ww_t + kx];
#pragma unroll
                        for (int ky = 0; ky < KS; ++ky) {
                            float w[CP];
                            load_frag(w, w_c + (ky * KS + kx) * CP);
#pragma unroll
                            for (int i = 0; i < DT_ROWS; ++i)
#pragma unroll
                                for (int c = 0; c < CP; ++c) acc[i][c] = fmaf(w[c], v[i + ky], acc[i][c]);
                        }
                    }
                } else {
                    for (int ky = 0; ky < k; ++ky)
                        for (int kx = 0; kx < k; ++kx) {
                            float w[CP];
                            load_frag(w, w_c + (ky * k + kx) * CP);
#pragma unroll
                            for (int i = 0; i < DT_ROWS; ++i) {
                                const float v = in_c[(i + ky) * ww_t + kx];
#pragma unroll
                                for (int c = 0; c < CP; ++c) acc[i][c] = fmaf(w[c], v, acc[i][c]);
                            }
                        }
                }
            }
        }

        const int ox = ox0 + tx;
        if (ox < p.wo) {
#pragma unroll
            for (int i = 0; i < DT_ROWS; ++i) {
                const int oy = oy0 + ty * DT_ROWS + i;
                if (oy >= p.ho) continue;
                const int pix = oy * p.wo + ox;
#pragma unroll
                for (int c = 0; c < CP; ++c) {
                    if (c >= p.cout) continue;
                    const int off = img * p.cout_howo + c * p.howo + pix;
                    p.out[off] = epilogue(p, acc[i][c] + (p.bias ? __ldg(p.bias + c) : 0.f), off);
                }
            }
        }
    }
}

// ---- Winograd kernel: F(2x2, 3x3)
//
// For 3x3 layers with many channels (the default denoise's 48 -> 48): each
// 2x2 block of outputs is computed from a 4x4 input patch with 16
// multiplies per (input, output) channel pair instead of 36 (Lavin & Gray,
// 2016): Y = A^T [sum over ci of U[ci] * V[ci]] A with U = G g G^T (the
// weights, transformed once per model by prepare_conv2d, else per call) and
// V = B^T d B (the input patch, transformed in shared memory). The 16
// element-wise products summed over ci are 16 small GEMMs [Cout x Cin] x
// [Cin x patches]; they are where the FFMAs go (2.25x fewer than the direct
// convolution), in fp32 throughout. The transforms use only additions and
// halvings, so the result stays within the fp32 bound of the op tests (a few
// times the direct convolution's rounding error, not TF32's).
//
// A block computes a WG_TH x WG_TW output tile (WG_P = 32 patches of 2x2) for
// WG_CO = 48 output channels of one image. Input channels go through in
// chunks of WG_CC: the chunk's input tile with its 1-pixel halo and its U
// arrive by cp.async (double-buffered: the next chunk loads during this
// one's FFMAs), 256 threads transform the 8 x 32 (channel, patch) pairs
// into V, then thread (xi, cg, pg) accumulates the 12 output channels cg*12..
// and 8 patches pg*8.. of Winograd component xi (16 components x 4 x 4
// threads): per input channel 3 + 2 LDS.128 feed 96 FFMA. At the end the
// accumulators go through shared memory so each thread can gather the 16
// components of its (channel, patch) pairs for the output transform and
// the fused epilogue.
// Floor: 2 * 16/36 of the direct convolution's FLOPs (498 -> 221 GFLOP for a
// 48 -> 48 layer on 12 MP); bytes as the direct convolution.
constexpr int WG_THREADS = 256;
constexpr int WG_TH = 8, WG_TW = 16;                 // output tile (pixels)
constexpr int WG_PR = WG_TH / 2, WG_PC = WG_TW / 2;  // 4 x 8 patches
constexpr int WG_P = WG_PR * WG_PC;                  // 32 patches
constexpr int WG_CO = 48;                            // output channels per block
constexpr int WG_CG = WG_CO / 4;                     // 12 output channels per thread
constexpr int WG_CC = 8;                             // input channels per chunk
constexpr int WG_HH = WG_TH + 2, WG_HW = WG_TW + 2;  // input tile with halo: 10 x 18
constexpr int WG_HALO = WG_CC * WG_HH * WG_HW;       // 1440 floats per stage
constexpr int WG_US = WG_CC * WG_CO + 16;            // U stride per component (+16: conflict-free, see below)
constexpr int WG_VS = WG_CC * WG_P + 4;              // V stride per component (+4: conflict-free)
constexpr int WG_U = 16 * WG_US;                     // floats per U stage
constexpr int WG_V = 16 * WG_VS;
constexpr int WG_M = 16 * WG_CO * WG_P;  // the accumulators, for the output transform
static_assert(WG_CC * WG_P == WG_THREADS, "one (channel, patch) input transform per thread");
static_assert(16 * 4 * 4 == WG_THREADS, "16 components x 4 channel groups x 4 patch groups");
static_assert(WG_CG % 4 == 0 && WG_P == 4 * 8, "float4 fragments: 12 channels, 8 patches");
// A warp holds 2 components x 4 channel groups x 4 patch groups: with U's
// component stride = 16 (mod 32) banks, the 8 distinct float4 of a U load
// (channel groups at 0, 12, 24, 36 floats) fall on disjoint banks, and with
// V's = 4 (mod 32) so do those of a V load.
static_assert(WG_US % 32 == 16 && WG_VS % 32 == 4, "bank offsets of the component strides");
constexpr size_t kWinogradSmemFloats = std::max<size_t>(size_t(2) * WG_HALO + size_t(2) * WG_U + WG_V, size_t(WG_M));
static_assert(kWinogradSmemFloats * sizeof(float) <= 100 * 1024, "fits beside the L1 share (one block per SM)");

__device__ __forceinline__ void cp_async16(unsigned dst, const float* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

// U = G g G^T of every (co, ci) pair, as [co tile][16][cin rounded up to
// WG_CC][WG_CO] (zero for missing channels), in double and rounded once.
__global__ void winograd_weight_transform_kernel(const float* __restrict__ w, float* __restrict__ u, int cout, int cin,
                                                 int cin_pad, int tiles) {
    const int total = tiles * WG_CO * cin_pad;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const int co_t = i % WG_CO, ci = i / WG_CO % cin_pad, tile = i / (WG_CO * cin_pad);
        const int co = tile * WG_CO + co_t;
        double g[3][3] = {};
        if (co < cout && ci < cin)
            for (int k = 0; k < 9; ++k) g[k / 3][k % 3] = w[(size_t(co) * cin + ci) * 9 + k];
        double t[4][3];  // G g
        for (int c = 0; c < 3; ++c) {
            t[0][c] = g[0][c];
            t[1][c] = 0.5 * (g[0][c] + g[1][c] + g[2][c]);
            t[2][c] = 0.5 * (g[0][c] - g[1][c] + g[2][c]);
            t[3][c] = g[2][c];
        }
        for (int r = 0; r < 4; ++r) {  // (G g) G^T
            const double v[4] = {t[r][0], 0.5 * (t[r][0] + t[r][1] + t[r][2]), 0.5 * (t[r][0] - t[r][1] + t[r][2]),
                                 t[r][2]};
            for (int c = 0; c < 4; ++c)
                u[((size_t(tile) * 16 + r * 4 + c) * cin_pad + ci) * WG_CO + co_t] = float(v[c]);
        }
    }
}

template <PadMode PAD>
__global__ void __launch_bounds__(WG_THREADS, 1) conv2d_winograd_2x2_3x3_kernel(const ConvParams p) {
    extern __shared__ __align__(16) float wg_smem[];
    float* s_halo = wg_smem;             // [2][WG_CC][WG_HH][WG_HW]
    float* s_u = wg_smem + 2 * WG_HALO;  // [2][16][WG_US]
    float* s_v = s_u + 2 * WG_U;         // [16][WG_VS]
    float* s_m = wg_smem;                // [16][WG_CO][WG_P], after the last chunk

    const int tid = threadIdx.x;
    const int co_tiles = (p.cout + WG_CO - 1) / WG_CO;
    const int ox0 = blockIdx.x * WG_TW, oy0 = blockIdx.y * WG_TH;
    const int cin_pad = (p.cin + WG_CC - 1) / WG_CC * WG_CC, chunks = cin_pad / WG_CC;
    const int images = p.npix / p.howo;

    for (int z = blockIdx.z; z < images * co_tiles; z += gridDim.z) {
        const int img = z / co_tiles, tile = z % co_tiles;
        const float* in_img = p.in + size_t(img) * p.cin_hw;
        const float* u_tile = p.wino_u + size_t(tile) * 16 * cin_pad * WG_CO;

        auto load_chunk = [&](int chunk, int buf) {
            const int c0 = chunk * WG_CC;
            const unsigned halo = unsigned(__cvta_generic_to_shared(s_halo + buf * WG_HALO));
            for (int e = tid; e < WG_HALO; e += WG_THREADS) {
                const int ci = e / (WG_HH * WG_HW), q = e - ci * (WG_HH * WG_HW), r = q / WG_HW, c = q - r * WG_HW;
                int iy = oy0 + r - p.pad_before, ix = ox0 + c - p.pad_before;
                const bool ok = c0 + ci < p.cin && oy0 + r < p.ho + 2 && ox0 + c < p.wo + 2 &&
                                map_coord<PAD>(iy, p.h) && map_coord<PAD>(ix, p.w);
                const float* src = ok ? in_img + (size_t(c0 + ci) * p.h + iy) * p.w + ix : p.in;
                cp_async4(halo + 4u * unsigned(e), src, ok ? 4 : 0);
            }
            // U of the chunk: 16 runs of WG_CC * WG_CO contiguous floats.
            const unsigned us = unsigned(__cvta_generic_to_shared(s_u + buf * WG_U));
            for (int e = tid; e < 16 * WG_CC * WG_CO / 4; e += WG_THREADS) {
                const int xi = e / (WG_CC * WG_CO / 4), q = e - xi * (WG_CC * WG_CO / 4);
                cp_async16(us + 4u * unsigned(xi * WG_US + 4 * q),
                           u_tile + (size_t(xi) * cin_pad + c0) * WG_CO + 4 * q);
            }
        };

        const int xi = tid / 16, cg = tid / 4 % 4, pg = tid % 4;
        float acc[WG_CG][8];
#pragma unroll
        for (int i = 0; i < WG_CG; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

        __syncthreads();  // the previous image's output transform is done with s_m
        load_chunk(0, 0);
        cp_async_commit();
        for (int chunk = 0; chunk < chunks; ++chunk) {
            const int buf = chunk & 1;
            if (chunk + 1 < chunks) load_chunk(chunk + 1, buf ^ 1);
            cp_async_commit();
            cp_async_wait<1>();  // this chunk's copies (not the next one's) have landed
            __syncthreads();
            {  // V = B^T d B of (channel tid / 32, patch tid % 32)
                const int ci = tid / WG_P, pt = tid % WG_P, pr = pt / WG_PC, pc = pt % WG_PC;
                const float* h = s_halo + buf * WG_HALO + (ci * WG_HH + 2 * pr) * WG_HW + 2 * pc;
                float d[4][4];
#pragma unroll
                for (int r = 0; r < 4; ++r)
#pragma unroll
                    for (int c = 0; c < 4; ++c) d[r][c] = h[r * WG_HW + c];
                float t[4][4];
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    t[0][c] = d[0][c] - d[2][c];
                    t[1][c] = d[1][c] + d[2][c];
                    t[2][c] = d[2][c] - d[1][c];
                    t[3][c] = d[1][c] - d[3][c];
                }
                float* v = s_v + ci * WG_P + pt;
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    v[(r * 4 + 0) * WG_VS] = t[r][0] - t[r][2];
                    v[(r * 4 + 1) * WG_VS] = t[r][1] + t[r][2];
                    v[(r * 4 + 2) * WG_VS] = t[r][2] - t[r][1];
                    v[(r * 4 + 3) * WG_VS] = t[r][1] - t[r][3];
                }
            }
            __syncthreads();
            const float* u = s_u + buf * WG_U + xi * WG_US + cg * WG_CG;
            const float* v = s_v + xi * WG_VS + pg * 8;
#pragma unroll
            for (int ci = 0; ci < WG_CC; ++ci) {
                float a[WG_CG], b[8];
                load_frag(a, u + ci * WG_CO);
                load_frag(b, v + ci * WG_P);
#pragma unroll
                for (int i = 0; i < WG_CG; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            __syncthreads();  // s_v and this chunk's buffers are free again
        }
        cp_async_wait<0>();

        // The accumulators to shared memory: s_m[xi][co][patch].
#pragma unroll
        for (int i = 0; i < WG_CG; ++i) {
            float* m = s_m + (xi * WG_CO + cg * WG_CG + i) * WG_P + pg * 8;
            *reinterpret_cast<float4*>(m) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            *reinterpret_cast<float4*>(m + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
        }
        __syncthreads();
        // Output transform Y = A^T M A, bias, activation, residual, store.
        for (int e = tid; e < WG_CO * WG_P; e += WG_THREADS) {
            const int co_t = e / WG_P, pt = e % WG_P, co = tile * WG_CO + co_t;
            if (co >= p.cout) continue;
            float m[4][4];
#pragma unroll
            for (int k = 0; k < 16; ++k) m[k / 4][k % 4] = s_m[(k * WG_CO + co_t) * WG_P + pt];
            float t[2][4];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                t[0][c] = m[0][c] + m[1][c] + m[2][c];
                t[1][c] = m[1][c] - m[2][c] - m[3][c];
            }
            const float bias = p.bias ? __ldg(p.bias + co) : 0.f;
            const int oy = oy0 + 2 * (pt / WG_PC), ox = ox0 + 2 * (pt % WG_PC);
            if (ox >= p.wo) continue;  // a partial tile's right edge
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                if (oy + i >= p.ho) continue;
                const float y0 = t[i][0] + t[i][1] + t[i][2] + bias, y1 = t[i][1] - t[i][2] - t[i][3] + bias;
                const int off = img * p.cout_howo + co * p.howo + (oy + i) * p.wo + ox;
                // Both pixels of the row as one float2 where both addresses are
                // 8-byte aligned: a warp's stores then fill whole 32-byte
                // sectors (lanes are 2 pixels apart).
                if (ox + 1 < p.wo && ((reinterpret_cast<uintptr_t>(p.out + off) |
                                       reinterpret_cast<uintptr_t>(p.residual ? p.residual + off : p.out + off)) &
                                      7) == 0) {
                    float2 v = make_float2(y0, y1);
                    if (p.relu) v.x = fmaxf(v.x, 0.f), v.y = fmaxf(v.y, 0.f);
                    if (p.residual) {
                        const float2 r = __ldg(reinterpret_cast<const float2*>(p.residual + off));
                        v.x += r.x, v.y += r.y;
                    }
                    *reinterpret_cast<float2*>(p.out + off) = v;
                } else {
                    p.out[off] = epilogue(p, y0, off);
                    if (ox + 1 < p.wo) p.out[off + 1] = epilogue(p, y1, off + 1);
                }
            }
        }
    }
}

// ---- launchers

std::string context(const Conv2dArgs& a) {
    return "conv2d " + a.input.shape.str() + " -> " + a.out_shape().str() + ", kernel " + std::to_string(a.kernel) +
           ", padding " + std::to_string(a.pad_before) + "/" + std::to_string(a.pad_after) + " " +
           pad_mode_name(a.pad_mode) + (a.bias ? ", bias" : "") +
           (a.activation != Activation::None ? std::string(", ") + activation_name(a.activation) : "") +
           (a.residual ? ", + residual" : "");
}

// A kernel's dynamic shared memory limit raised to `bytes` (common.cuh), on
// every launch: the limit is per device, and a process may run several
// backends.
void allow_smem(void (*kernel)(ConvParams), size_t bytes, const Conv2dArgs& a) {
    const cudaError_t err = raise_smem_limit(reinterpret_cast<const void*>(kernel), bytes);
    if (err != cudaSuccess) throw_cuda(context(a), "cudaFuncSetAttribute(max dynamic shared memory)", err);
}

// check_launch with the op's context built only on failure: context() formats
// the shapes, which every layer of every tile would otherwise pay for.
void check_launched(const Conv2dArgs& a, const char* kernel) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) throw_cuda(context(a), kernel, err);
}

[[noreturn]] void unknown_pad_mode(const Conv2dArgs& a) {
    throw Error(context(a) + ": unknown pad mode");
}

template <int BM, int BN>
void launch_double_buffer(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream) {
    constexpr int TM = BM / 16, TN = BN / 16;
    const dim3 grid(unsigned((p.npix + BN - 1) / BN), unsigned((p.cout + BM - 1) / BM), unsigned(split));
    switch (a.pad_mode) {
        case PadMode::Zero:
            conv2d_igemm_double_buffer_kernel<BM, BN, TM, TN, PadMode::Zero><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        case PadMode::Reflect:
            conv2d_igemm_double_buffer_kernel<BM, BN, TM, TN, PadMode::Reflect><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        case PadMode::Replicate:
            conv2d_igemm_double_buffer_kernel<BM, BN, TM, TN, PadMode::Replicate><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        default:
            unknown_pad_mode(a);
    }
    check_launched(a, "conv2d_igemm_double_buffer_kernel launch");
}

template <int BM, int BN, int BK, int STAGES, int FG, int FR, PadMode PAD, bool VALID>
void launch_multistage_kernel(const ConvParams& p, const Conv2dArgs& a, dim3 grid, cudaStream_t stream) {
    auto kernel = conv2d_igemm_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PAD, VALID>;
    constexpr size_t smem = multistage_smem_bytes(BM, BN, BK, STAGES);
    allow_smem(kernel, smem, a);
    kernel<<<grid, MS_THREADS, smem, stream>>>(p);
    check_launched(a, "conv2d_igemm_multistage_kernel launch");
}

template <int BM, int BN, int BK, int STAGES, int FG, int FR>
void launch_multistage(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream) {
    const dim3 grid(unsigned((p.npix + BN - 1) / BN), unsigned((p.cout + BM - 1) / BM), unsigned(split));
    const bool valid = a.pad_before == 0 && a.pad_after == 0;
    switch (a.pad_mode) {
        case PadMode::Zero:
            if (valid)
                launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Zero, true>(p, a, grid, stream);
            else
                launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Zero, false>(p, a, grid, stream);
            break;
        case PadMode::Reflect:
            launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Reflect, false>(p, a, grid, stream);
            break;
        case PadMode::Replicate:
            launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Replicate, false>(p, a, grid, stream);
            break;
        default:
            unknown_pad_mode(a);
    }
}

template <int CP, int KS, PadMode PAD>
void launch_direct_kernel(const ConvParams& p, const Conv2dArgs& a, cudaStream_t stream) {
    auto kernel = conv2d_direct_small_cout_kernel<CP, KS, PAD>;
    const size_t smem = direct_smem_bytes(p.k, CP);
    allow_smem(kernel, smem, a);
    const dim3 grid(unsigned((p.wo + DT_TX - 1) / DT_TX), unsigned((p.ho + DT_TY - 1) / DT_TY),
                    unsigned(std::min(a.input.shape.n, 65535)));
    kernel<<<grid, DT_THREADS, smem, stream>>>(p);
    check_launched(a, "conv2d_direct_small_cout_kernel launch");
}

template <int CP, PadMode PAD>
void launch_direct_pad(const ConvParams& p, const Conv2dArgs& a, cudaStream_t stream) {
    if (p.k == 3)
        launch_direct_kernel<CP, 3, PAD>(p, a, stream);
    else
        launch_direct_kernel<CP, 0, PAD>(p, a, stream);
}

template <int CP>
void launch_direct(const ConvParams& p, const Conv2dArgs& a, int, cudaStream_t stream) {
    switch (a.pad_mode) {
        case PadMode::Zero:
            launch_direct_pad<CP, PadMode::Zero>(p, a, stream);
            break;
        case PadMode::Reflect:
            launch_direct_pad<CP, PadMode::Reflect>(p, a, stream);
            break;
        case PadMode::Replicate:
            launch_direct_pad<CP, PadMode::Replicate>(p, a, stream);
            break;
        default:
            unknown_pad_mode(a);
    }
}

int winograd_cin_pad(int cin) {
    return (cin + WG_CC - 1) / WG_CC * WG_CC;
}
int winograd_tiles(int cout) {
    return (cout + WG_CO - 1) / WG_CO;
}
size_t winograd_u_floats(int cout, int cin) {
    return size_t(winograd_tiles(cout)) * 16 * winograd_cin_pad(cin) * WG_CO;
}
void transform_winograd_weights(const float* w, float* u, int cout, int cin, cudaStream_t stream,
                                const std::string& ctx) {
    const int total = winograd_tiles(cout) * WG_CO * winograd_cin_pad(cin);
    winograd_weight_transform_kernel<<<(total + 255) / 256, 256, 0, stream>>>(w, u, cout, cin, winograd_cin_pad(cin),
                                                                              winograd_tiles(cout));
    check_launch(ctx, "winograd_weight_transform_kernel launch");
}

template <PadMode PAD>
void launch_winograd_kernel(const ConvParams& p, const Conv2dArgs& a, cudaStream_t stream) {
    auto kernel = conv2d_winograd_2x2_3x3_kernel<PAD>;
    constexpr size_t smem = kWinogradSmemFloats * sizeof(float);
    allow_smem(kernel, smem, a);
    const long long z = (long long)a.input.shape.n * winograd_tiles(a.out_channels);
    const dim3 grid(unsigned((p.wo + WG_TW - 1) / WG_TW), unsigned((p.ho + WG_TH - 1) / WG_TH),
                    unsigned(std::min<long long>(z, 65535)));
    kernel<<<grid, WG_THREADS, smem, stream>>>(p);
    check_launched(a, "conv2d_winograd_2x2_3x3_kernel launch");
}

// Uses the weights prepare_conv2d transformed, else transforms them into a
// stream-ordered temporary for this call.
void launch_winograd(const ConvParams& p0, const Conv2dArgs& a, int, cudaStream_t stream) {
    ConvParams p = p0;
    // The per-call transformed weights, freed (stream-ordered) however this
    // function leaves.
    struct Temp {
        float* ptr = nullptr;
        cudaStream_t stream;
        ~Temp() {
            if (ptr) cudaFreeAsync(ptr, stream);
        }
    } temp{nullptr, stream};
    if (const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared); prep && prep->winograd_u) {
        p.wino_u = prep->winograd_u;
    } else {
        const size_t bytes = winograd_u_floats(a.out_channels, a.input.shape.c) * sizeof(float);
        const cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&temp.ptr), bytes, stream);
        if (err != cudaSuccess) {
            cudaGetLastError();
            temp.ptr = nullptr;
            if (err == cudaErrorMemoryAllocation)
                throw OutOfMemory(context(a) + ": " + std::to_string(bytes) + " bytes for the Winograd weights");
            throw_cuda(context(a), "cudaMallocAsync(Winograd weights)", err);
        }
        transform_winograd_weights(a.weight.as<const float>(), temp.ptr, a.out_channels, a.input.shape.c, stream,
                                   context(a));
        p.wino_u = temp.ptr;
    }
    switch (a.pad_mode) {
        case PadMode::Zero:
            launch_winograd_kernel<PadMode::Zero>(p, a, stream);
            break;
        case PadMode::Reflect:
            launch_winograd_kernel<PadMode::Reflect>(p, a, stream);
            break;
        case PadMode::Replicate:
            launch_winograd_kernel<PadMode::Replicate>(p, a, stream);
            break;
        default:
            unknown_pad_mode(a);
    }
}

// ---- the variant table
//
// Every configuration conv2d can run, by name. plan_conv2d picks one per
// shape; IMRESTORE tests and benchmarks force each in turn
// (Backend::force_variant). A variant runs a shape when Cout <= max_cout and
// K <= max_kernel (0: any).
struct Conv2dVariant {
    const char* name;
    int bm, bn;      // igemm: the block tile (M x N); direct: 0, 0
    int step;        // reduction rows per pipeline step (a split's chunk is a multiple); direct: 0
    int max_cout;    // 0: any
    int max_kernel;  // 0: any; negative: exactly -max_kernel
    int min_blocks;  // blocks per SM the launch bounds ask for (wave accounting of the split)
    void (*launch)(const ConvParams&, const Conv2dArgs&, int split, cudaStream_t);
};

constexpr int MS_BK = 16, MS_STAGES = 3;  // one barrier per 16 rows; two tiles of copies in flight
static_assert(multistage_smem_bytes(128, 128, MS_BK, MS_STAGES) <= 52 * 1024, "3 x 16 x 264 floats = 51 KB");
static_assert(multistage_smem_bytes(64, 256, MS_BK, MS_STAGES) <= 64 * 1024, "3 x 16 x 328 floats = 63 KB");
static_assert(multistage_smem_bytes(48, 256, MS_BK, MS_STAGES) <= 60 * 1024, "3 x 16 x 312 floats = 59 KB");
static_assert(direct_smem_bytes(DT_MAX_K, 16) <= 72 * 1024, "K = 7, 16 channels: 46 + 25 KB");

constexpr Conv2dVariant kConv2dVariants[] = {
    // Cout > 64: 8 x 8 outputs per thread (FG 2 x FR 4 rows), 4 LDS.128 per 64 FFMA.
    {"igemm_multistage_128x128", 128, 128, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<128, 128, MS_BK, MS_STAGES, 2, 4>},
    // 48 < Cout <= 64: 8 x 8 per thread as well, no half-empty M.
    {"igemm_multistage_64x256", 64, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<64, 256, MS_BK, MS_STAGES, 2, 4>},
    // 32 < Cout <= 48 (the default denoise's width): a 64-row tile would
    // spend 25% of its FFMAs on missing channels; 6 x 8 per thread (3 x 2 rows).
    {"igemm_multistage_48x256", 48, 256, MS_BK, 0, 0, MS_MIN_BLOCKS,
     launch_multistage<48, 256, MS_BK, MS_STAGES, 3, 2>},
    // Cout <= 32, or too few big tiles to fill the GPU: 2 x 4 per thread.
    {"igemm_double_buffer_32x64", 32, 64, CV_BK, 0, 0, CV_MIN_BLOCKS, launch_double_buffer<32, 64>},
    // Cout <= 4 (RGB out) and <= 16: the direct kernel with 4 or 16 accumulators per pixel.
    {"direct_small_cout_4", 0, 0, 0, 4, DT_MAX_K, 1, launch_direct<4>},
    {"direct_small_cout_16", 0, 0, 0, 16, DT_MAX_K, 1, launch_direct<16>},
    // 3x3 with 16 < Cout <= 48 and Cin >= 8 (the default denoise's 48 -> 48):
    // Winograd F(2x2, 3x3), 16/36 of the multiplies, 48 output channels per block.
    {"winograd_2x2_3x3_48", 0, 0, 0, 0, -3, 1, launch_winograd},
};
constexpr int kVariantCount = int(sizeof(kConv2dVariants) / sizeof(kConv2dVariants[0]));
constexpr int V_128x128 = 0, V_64x256 = 1, V_48x256 = 2, V_32x64 = 3, V_DIRECT4 = 4, V_DIRECT16 = 5, V_WINOGRAD = 6;

// Rows of output tiles a direct or Winograd launch puts in grid.y (at most
// 65535); 0 for the igemm kernels, which tile pixels along grid.x.
int grid_rows(const Conv2dVariant& v, const Conv2dArgs& a);

bool applies(const Conv2dVariant& v, const Conv2dArgs& a) {
    if (grid_rows(v, a) > 65535) return false;
    const bool kernel_ok =
        v.max_kernel >= 0 ? (v.max_kernel == 0 || a.kernel <= v.max_kernel) : a.kernel == -v.max_kernel;
    return (v.max_cout == 0 || a.out_channels <= v.max_cout) && kernel_ok;
}

int grid_rows(const Conv2dVariant& v, const Conv2dArgs& a) {
    const long long ho = a.out_shape().h;
    if (v.launch == launch_winograd) return int(std::min<long long>((ho + WG_TH - 1) / WG_TH, INT_MAX));
    if (v.bm == 0) return int(std::min<long long>((ho + DT_TY - 1) / DT_TY, INT_MAX));
    return 0;
}

long long tile_count(const Conv2dVariant& v, long long m, long long n) {
    return ((n + v.bn - 1) / v.bn) * ((m + v.bm - 1) / v.bm);
}

}  // namespace

std::vector<std::string> conv2d_variants() {
    std::vector<std::string> names;
    for (const Conv2dVariant& v : kConv2dVariants) names.push_back(v.name);
    return names;
}

Conv2dPlan plan_conv2d(const Conv2dArgs& a, int sm_count, int forced) {
    const Shape o = a.out_shape();
    const long long m = a.out_channels, n = (long long)o.n * o.h * o.w;
    const long long kdim = (long long)a.input.shape.c * a.kernel * a.kernel;
    int v;
    if (forced >= 0) {
        if (forced >= kVariantCount) throw Error(context(a) + ": no conv2d variant " + std::to_string(forced));
        if (!applies(kConv2dVariants[forced], a))
            throw NotApplicable(context(a) + ": variant " + kConv2dVariants[forced].name + " cannot run this shape");
        v = forced;
    } else if (applies(kConv2dVariants[V_DIRECT4], a)) {
        v = V_DIRECT4;
    } else if (applies(kConv2dVariants[V_DIRECT16], a)) {
        v = V_DIRECT16;
    } else if (a.kernel == 3 && m <= WG_CO && a.input.shape.c >= WG_CC && applies(kConv2dVariants[V_WINOGRAD], a)) {
        v = V_WINOGRAD;
    } else {
        v = m > 64 ? V_128x128 : m > 48 ? V_64x256 : m > 32 ? V_48x256 : V_32x64;
        // Fill the GPU before using big tiles: 128x128 -> 64x256 -> 32x64, 48x256 -> 32x64.
        while (v != V_32x64 && tile_count(kConv2dVariants[v], m, n) < sm_count) v = v == V_128x128 ? V_64x256 : V_32x64;
    }
    const Conv2dVariant& var = kConv2dVariants[v];
    Conv2dPlan plan{v, var.name, 1};
    if (var.bm == 0) return plan;  // direct: no split
    // Wave quantization: with 1.5 waves the last one runs half empty; two
    // half-length blocks per tile can fill it.
    const long long blocks = tile_count(var, m, n), slots = (long long)sm_count * var.min_blocks;
    auto efficiency = [&](long long b) { return double(b) / double((b + slots - 1) / slots * slots); };
    // A fused activation or residual needs the whole sum in one block.
    const bool plain_epilogue = a.activation == Activation::None && !a.residual;
    if (plain_epilogue && kdim >= CV_SPLIT_MIN_K && efficiency(2 * blocks) > 1.05 * efficiency(blocks))
        plan.split_k = 2;
    return plan;
}

Conv2dPrepared::~Conv2dPrepared() {
    if (winograd_u) cudaFree(winograd_u);
}

std::unique_ptr<PreparedWeights> prepare_conv2d(const Conv2dArgs& a, cudaStream_t stream) {
    // Only layers the planner sends to Winograd (any image size: the shape's
    // channels decide) get transformed weights; a forced variant transforms per call.
    if (a.kernel != 3 || !a.weight || a.out_channels <= 16 || a.out_channels > WG_CO || a.input.shape.c < WG_CC)
        return nullptr;
    auto prep = std::make_unique<Conv2dPrepared>();
    prep->cout = a.out_channels, prep->cin = a.input.shape.c;
    const std::string ctx =
        "conv2d weights [" + std::to_string(a.out_channels) + "," + std::to_string(a.input.shape.c) + ",3,3]";
    const size_t bytes = winograd_u_floats(a.out_channels, a.input.shape.c) * sizeof(float);
    cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&prep->winograd_u), bytes);
    if (err != cudaSuccess) {
        cudaGetLastError();
        prep->winograd_u = nullptr;
        if (err == cudaErrorMemoryAllocation)
            throw OutOfMemory(ctx + ": cudaMalloc of " + std::to_string(bytes) +
                              " bytes for the Winograd weights failed");
        throw_cuda(ctx, "cudaMalloc(Winograd weights)", err);
    }
    transform_winograd_weights(a.weight.as<const float>(), prep->winograd_u, a.out_channels, a.input.shape.c, stream,
                               ctx);
    return prep;
}

void conv2d(const Conv2dArgs& a, cudaStream_t stream, int sm_count, int forced) {
    check_args(a);
    if (a.prepared) {
        const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared);
        if (!prep || prep->cout != a.out_channels || prep->cin != a.input.shape.c || a.kernel != 3)
            throw Error(context(a) + ": its prepared weights were made for another shape or backend");
    }
    const Shape o = a.out_shape();
    const long long kdim = (long long)a.input.shape.c * a.kernel * a.kernel;
    if (a.input.shape.count() >= size_t(INT_MAX) || o.count() >= size_t(INT_MAX) || kdim * a.out_channels >= INT_MAX)
        throw Error(context(a) + ": tensors of 2^31 or more elements are not supported on CUDA");
    const Conv2dPlan plan = plan_conv2d(a, sm_count, forced);
    const Conv2dVariant& var = kConv2dVariants[plan.variant];

    ConvParams p{};
    p.in = a.input.as<const float>(), p.weight = a.weight.as<const float>(), p.bias = a.bias.as<const float>();
    p.out = a.output.as<float>();
    p.residual = a.residual.as<const float>(), p.relu = a.activation == Activation::ReLU;
    p.cin = a.input.shape.c, p.h = a.input.shape.h, p.w = a.input.shape.w, p.cout = a.out_channels, p.k = a.kernel,
    p.pad_before = a.pad_before;
    p.ho = o.h, p.wo = o.w, p.howo = o.h * o.w, p.npix = o.n * o.h * o.w;
    p.kdim = int(kdim), p.kk = a.kernel * a.kernel, p.hw = a.input.shape.h * a.input.shape.w,
    p.cin_hw = a.input.shape.c * a.input.shape.h * a.input.shape.w;
    p.cout_howo = a.out_channels * o.h * o.w;
    p.div_kk = FastDiv(p.kk), p.div_k = FastDiv(p.k);
    p.atomic = plan.split_k > 1;
    if (var.step > 0) {  // split chunks are whole reduction steps of the kernel that runs
        const int steps = (p.kdim + var.step - 1) / var.step;
        p.k_chunk = (steps + plan.split_k - 1) / plan.split_k * var.step;
    }
    if (plan.split_k > 1)
        if (const cudaError_t err = cudaMemsetAsync(a.output.data, 0, a.output.bytes(), stream); err != cudaSuccess)
            throw_cuda(context(a), "cudaMemsetAsync(output) for the split reduction", err);
    var.launch(p, a, plan.split_k, stream);
}

std::unique_ptr<PreparedWeights> CudaBackend::prepare(const Conv2dArgs& a) {
    use_device();
    return prepare_conv2d(a, stream_);
}

void CudaBackend::conv2d(const Conv2dArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::Conv2d, {&a.input, &a.output, &a.residual});
    cuda::conv2d(a, stream_, sm_count_, forced_variant(Op::Conv2d));
}

}  // namespace imr::cuda
