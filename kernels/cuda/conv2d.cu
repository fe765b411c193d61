// conv2d as an implicit GEMM in fp32 FFMA, SGEMM style.
//
//   GEMM view: M = Cout, N = batch*Ho*Wo (output pixels), K = Cin*K*K (in the
//   weight's own order ci, ky, kx, so a weight row is contiguous).
//   A[m][r] = weight[m][r]; B[r][p] = padded input at (img(p), ci, oy+ky, ox+kx),
//   gathered while the tile is loaded: the pad mode is an index mapping
//   (zero: bounds check; reflect: mirror; replicate: clamp), never a padded copy.
//
// Floors: 2*M*N*K FLOP; bytes = input + weight + output, each once. Every
// GPU MODE conv2d_v2 shape is compute-bound by a wide margin (the ranked
// B=1, C=128, S=256, K=32 shape: 1.70 TFLOP = ~28 ms at 60 TFLOP/s against
// ~130 MB = 0.03 ms of traffic).
//
// v2 (the 128 x 128 and 64 x 256 tiles; see conv2d_v2_kernel below):
// conflict-free CUTLASS-style fragments, cp.async 3-stage pipeline, BK = 16.
// H200: ranked shape 40.6 ms = 62% of fp32 peak (v1: 50.8 ms).
//
// v1 (the 32 x 64 tile; v1 also ran the big tiles until commit ed1dc63, see
// docs/performance.md): each block computes a BM x BN output tile with 256
// threads in a 16 x 16 grid, each thread a TM x TN register block (2 x 4 for
// the 32 x 64 tile; the big tiles used 8 x 8). The
// reduction runs in steps of BK = 8 through two shared-memory buffers: while
// the FFMAs consume one buffer, the next tile is fetched into registers and
// stored into the other, one barrier per step. Tiles too large for the
// problem waste the machine, so smaller shapes get smaller tiles, and a
// reduction too long for a grid of only ~1.5 waves is split over two blocks
// (atomic add of exactly two partial sums onto zero: the result does not
// depend on their order, so it stays deterministic).
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "common.cuh"
#include "conv2d.cuh"

namespace imr::cuda {
namespace {

// ---- kernel configuration (chosen for H200 / sm_90)
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
__global__ void __launch_bounds__(CV_THREADS, CV_MIN_BLOCKS) conv2d_igemm_kernel(const ConvParams p) {
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

// ---- v2: multistage cp.async kernel with a conflict-free fragment layout
//
// Thread (tm, tn) of a TGM x TGN grid (TGM = BM/8, TGN = BN/8, 256 threads)
// owns output rows {tm*4 + i, BM/2 + tm*4 + i} and columns {tn*4 + j,
// BN/2 + tn*4 + j}, i, j < 4 (CUTLASS SGEMM style). A warp is 4 (m) x 8 (n)
// threads, so each of the 4 fragment loads per reduction row is one float4
// per thread and one shared-memory wavefront per warp (4 distinct float4 of
// A, 8 distinct float4 of B, broadcast to the rest): 4 LDS.128 feed 64 FFMA.
// Tiles travel global -> shared with 4-byte cp.async (zero fill for the
// padding and the tails: no staging registers, no STS), V2_STAGES deep, so
// one barrier per BK-row step and up to STAGES-1 tiles of loads in flight.
// VALID (no padding at all, GPU MODE's conv2d_v2): every tap of an in-range
// pixel is inside the image, so the gather is base(pixel) + offset(r) with
// the per-pixel bases in registers; no bounds checks.
constexpr int V2_THREADS = 256;   // 8 warps, 16 x 16 (or 8 x 32) threads of 8 x 8 outputs each
constexpr int V2_MIN_BLOCKS = 2;  // 2 blocks/SM: <= 128 registers, <= ~113 KB shared memory each
constexpr int V2_PAD = 4;         // smem row padding (floats): conflict-free transposed A writes, 16-byte rows

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

template <int BM, int BN, int BK>
constexpr size_t v2_smem_bytes(int stages) {
    return sizeof(float) * size_t(stages) * BK * ((BM + V2_PAD) + (BN + V2_PAD));
}

template <int BM, int BN, int BK, int STAGES, PadMode PAD, bool VALID>
__global__ void __launch_bounds__(V2_THREADS, V2_MIN_BLOCKS) conv2d_v2_kernel(const ConvParams p) {
    constexpr int TGM = BM / 8, TGN = BN / 8;
    static_assert(TGM * TGN == V2_THREADS, "8 x 8 outputs per thread");
    static_assert(TGM % 4 == 0 && TGN % 8 == 0, "warps of 4 x 8 threads");
    static_assert(BK % 8 == 0 && BM % 32 == 0 && BN % 32 == 0, "loader shapes");
    static_assert(!VALID || PAD == PadMode::Zero, "VALID means no padding");
    constexpr int AS = BM + V2_PAD, BS = BN + V2_PAD;    // smem row strides (floats)
    constexpr int A_STAGE = BK * AS, B_STAGE = BK * BS;  // floats per stage
    constexpr int A_ROWS = BM / 32, KF = BK / 8;         // A loader: rows a_m + 32e, columns a_r + 8f
    constexpr int B_COLS = BN / 32;                      // B loader: rows b_row + 8f, pixels lane + 32j

    extern __shared__ __align__(16) float v2_smem[];
    float* As = v2_smem;                     // [STAGES][BK][AS]: transposed weight tile
    float* Bs = v2_smem + STAGES * A_STAGE;  // [STAGES][BK][BS]: gathered input tile
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
    // VALID: per-pixel base offsets, in registers while there are few (128 x 128: 4), else in
    // shared memory (64 x 256: 8 more registers would spill; one LDS per element instead).
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
            for (int c = tid; c < BN; c += V2_THREADS) s_base[c] = base_of(n0 + c);
            __syncthreads();
        }
    } else {
        for (int c = tid; c < BN; c += V2_THREADS) s_col[c] = pixel_column(p, n0 + c);
        __syncthreads();
    }

    auto load_stage = [&](int stage, int k) {
    // A: weight[m][k + a_r + 8f] -> As[stage][a_r + 8f][a_m + 32e]
#pragma unroll
        for (int f = 0; f < KF; ++f) {
            const bool r_ok = k + a_r + 8 * f < ke;
#pragma unroll
            for (int e = 0; e < A_ROWS; ++e) {
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
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
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
        const float* a_s = As + read_stage * A_STAGE + tm * 4;
        const float* b_s = Bs + read_stage * B_STAGE + tn * 4;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(a_s + kk * AS);
            const float4 a1 = *reinterpret_cast<const float4*>(a_s + kk * AS + BM / 2);
            const float4 b0 = *reinterpret_cast<const float4*>(b_s + kk * BS);
            const float4 b1 = *reinterpret_cast<const float4*>(b_s + kk * BS + BN / 2);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
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
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + (i < 4 ? tm * 4 + i : BM / 2 + tm * 4 + i - 4);
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

// Block tiles; see plan_conv2d for when each is used.
struct TileConfig {
    int bm, bn;
};
constexpr TileConfig CV_TILES[] = {
    {128, 128},  // Cout > 64 (v2): 8 x 8 per thread, 4 LDS.128 per 64 FFMA
    {64, 256},   // 32 < Cout <= 64 (v2): 8 x 8 per thread as well, no half-empty M
    {32, 64},    // Cout <= 32 or too few big tiles to fill the GPU (v1 kernel): 2 x 4 per thread
};

// v2 reduction step and pipeline depth. BK = 16: one barrier per 16 rows
// (v1: 8); 3 stages: two tiles of copies in flight behind the FFMAs;
// 128 x 128: 3 x 16 x 264 floats = 51 KB, 64 x 256: 63 KB -> 2 blocks/SM.
constexpr int V2_BK = 16, V2_STAGES = 3;
// IMRESTORE_CONV_TILE = BMxBN forces a tile for every shape, so the tests can
// run each kernel on every padding and odd-size case.
int forced_tile() {
    static const char* e = std::getenv("IMRESTORE_CONV_TILE");
    if (!e || !*e) return -1;
    for (int c = 0; c < 3; ++c)
        if (std::to_string(CV_TILES[c].bm) + "x" + std::to_string(CV_TILES[c].bn) == e) return c;
    return -1;
}

long long tile_count(const TileConfig& t, long long m, long long n) {
    return ((n + t.bn - 1) / t.bn) * ((m + t.bm - 1) / t.bm);
}

std::string context(const Conv2dArgs& a) {
    return "conv2d " + a.in.str() + " -> " + a.out_shape().str() + ", kernel " + std::to_string(a.kernel) +
           ", padding " + std::to_string(a.pad_before) + "/" + std::to_string(a.pad_after) + " " +
           pad_mode_name(a.pad_mode) + (a.bias ? ", bias" : "") +
           (a.activation != Activation::None ? std::string(", ") + activation_name(a.activation) : "") +
           (a.residual ? ", + residual" : "");
}

template <int BM, int BN, int TM, int TN>
void launch_tile(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream) {
    const dim3 grid(unsigned((p.npix + BN - 1) / BN), unsigned((p.cout + BM - 1) / BM), unsigned(split));
    switch (a.pad_mode) {
        case PadMode::Zero:
            conv2d_igemm_kernel<BM, BN, TM, TN, PadMode::Zero><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        case PadMode::Reflect:
            conv2d_igemm_kernel<BM, BN, TM, TN, PadMode::Reflect><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        case PadMode::Replicate:
            conv2d_igemm_kernel<BM, BN, TM, TN, PadMode::Replicate><<<grid, CV_THREADS, 0, stream>>>(p);
            break;
        default:
            throw Error(context(a) + ": unknown pad mode");
    }
    check_launch(context(a), "conv2d_igemm_kernel launch");
}

template <int BM, int BN, int BK, int STAGES, PadMode PAD, bool VALID>
void launch_v2_kernel(const ConvParams& p, const Conv2dArgs& a, dim3 grid, cudaStream_t stream) {
    auto kernel = conv2d_v2_kernel<BM, BN, BK, STAGES, PAD, VALID>;
    constexpr size_t smem = v2_smem_bytes<BM, BN, BK>(STAGES);
    static bool attr_set = false;  // per instantiation; setting it twice is harmless
    if (!attr_set) {
        check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), context(a),
                   "cudaFuncSetAttribute(max dynamic shared memory)");
        attr_set = true;
    }
    kernel<<<grid, V2_THREADS, smem, stream>>>(p);
    check_launch(context(a), "conv2d_v2_kernel launch");
}

template <int BM, int BN>
void launch_v2(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream) {
    const dim3 grid(unsigned((p.npix + BN - 1) / BN), unsigned((p.cout + BM - 1) / BM), unsigned(split));
    const bool valid = a.pad_before == 0 && a.pad_after == 0;
    switch (a.pad_mode) {
        case PadMode::Zero:
            if (valid)
                launch_v2_kernel<BM, BN, V2_BK, V2_STAGES, PadMode::Zero, true>(p, a, grid, stream);
            else
                launch_v2_kernel<BM, BN, V2_BK, V2_STAGES, PadMode::Zero, false>(p, a, grid, stream);
            break;
        case PadMode::Reflect:
            launch_v2_kernel<BM, BN, V2_BK, V2_STAGES, PadMode::Reflect, false>(p, a, grid, stream);
            break;
        case PadMode::Replicate:
            launch_v2_kernel<BM, BN, V2_BK, V2_STAGES, PadMode::Replicate, false>(p, a, grid, stream);
            break;
        default:
            throw Error(context(a) + ": unknown pad mode");
    }
}

}  // namespace

Conv2dPlan plan_conv2d(const Conv2dArgs& a, int sm_count) {
    const Shape o = a.out_shape();
    const long long m = a.out_channels, n = (long long)o.n * o.h * o.w;
    const long long kdim = (long long)a.in.c * a.kernel * a.kernel;
    const TileConfig* tiles = CV_TILES;
    int c = m > 64 ? 0 : m > 32 ? 1 : 2;
    while (c < 2 && tile_count(tiles[c], m, n) < sm_count) ++c;  // fill the GPU before using big tiles
    if (forced_tile() >= 0) c = forced_tile();
    Conv2dPlan plan{tiles[c].bm, tiles[c].bn, 1};
    // Wave quantization: with 1.5 waves the last one runs half empty; two
    // half-length blocks per tile can fill it.
    const long long blocks = tile_count(tiles[c], m, n), slots = (long long)sm_count * CV_MIN_BLOCKS;
    auto efficiency = [&](long long b) { return double(b) / double((b + slots - 1) / slots * slots); };
    // A fused activation or residual needs the whole sum in one block.
    const bool plain_epilogue = a.activation == Activation::None && !a.residual;
    if (plain_epilogue && kdim >= CV_SPLIT_MIN_K && efficiency(2 * blocks) > 1.05 * efficiency(blocks))
        plan.split_k = 2;
    return plan;
}

void conv2d(const Conv2dArgs& a, cudaStream_t stream, int sm_count) {
    check_args(a);
    const Shape o = a.out_shape();
    const long long kdim = (long long)a.in.c * a.kernel * a.kernel;
    if (a.in.count() >= size_t(INT_MAX) || o.count() >= size_t(INT_MAX) || kdim * a.out_channels >= INT_MAX)
        throw Error(context(a) + ": tensors of 2^31 or more elements are not supported on CUDA");
    const Conv2dPlan plan = plan_conv2d(a, sm_count);
    const bool v1 = plan.bm == 32;
    // Split chunks are whole reduction steps of the kernel that runs.
    const int step = v1 ? CV_BK : V2_BK;

    ConvParams p{};
    p.in = a.input, p.weight = a.weight, p.bias = a.bias, p.out = a.output;
    p.residual = a.residual, p.relu = a.activation == Activation::ReLU;
    p.cin = a.in.c, p.h = a.in.h, p.w = a.in.w, p.cout = a.out_channels, p.k = a.kernel, p.pad_before = a.pad_before;
    p.ho = o.h, p.wo = o.w, p.howo = o.h * o.w, p.npix = o.n * o.h * o.w;
    p.kdim = int(kdim), p.kk = a.kernel * a.kernel, p.hw = a.in.h * a.in.w, p.cin_hw = a.in.c * a.in.h * a.in.w;
    p.cout_howo = a.out_channels * o.h * o.w;
    p.div_kk = FastDiv(p.kk), p.div_k = FastDiv(p.k);
    p.atomic = plan.split_k > 1;
    const int steps = (p.kdim + step - 1) / step;
    p.k_chunk = (steps + plan.split_k - 1) / plan.split_k * step;
    if (plan.split_k > 1)
        check_cuda(cudaMemsetAsync(a.output, 0, o.count() * sizeof(float), stream), context(a),
                   "cudaMemsetAsync(output) for the split reduction");

    if (v1) {
        launch_tile<32, 64, 2, 4>(p, a, plan.split_k, stream);
    } else if (plan.bm == 128) {
        launch_v2<128, 128>(p, a, plan.split_k, stream);
    } else {
        launch_v2<64, 256>(p, a, plan.split_k, stream);
    }
}

}  // namespace imr::cuda
