// conv2d's igemm multistage kernel (conv2d_igemm_multistage_kernel):
// implicit GEMM in fp32 FFMA with CUTLASS-style conflict-free fragments and
// a cp.async pipeline of STAGES tiles of BK rows. H200: GPU MODE's ranked
// shape 40.6 ms = 62% of fp32 peak. The GEMM view: conv2d_variants.cu.
//
// The same kernel with TF32 = true (--precision tf32, issue 16) computes the
// block tile on tensor cores instead: the loaders and the pipeline are the
// fp32 kernel's, and each BK-row step is BK/8 steps of warp-level
// mma.sync.m16n8k8 with TF32 operands (rounded to nearest, ties away, by
// cvt.rna as cuBLAS does) and fp32 accumulation. The 8 warps tile the block
// as WM x WN warp tiles (tf32_warps_m): 128x128 as 2 x 4 warps of 64 x 32,
// 64x256 as 2 x 4 of 32 x 64, 48x256 as 1 x 8 of 48 x 32; 64 or 48
// accumulators a thread, as the FFMA kernel has. The fragments are read
// from the FFMA kernel's shared-memory rows (stride BM or BN + 4 floats),
// which puts lanes t and t + 1 of a k step 4 banks apart: 2-way bank
// conflicts on every fragment load. Floor of one k8 step of a 64 x 32 warp
// tile: 24 fragment loads (48 wavefronts) for 16 mma (32768 FLOP), ~680
// FLOP per clock per SM from shared memory, ~180 TFLOP/s on the H200 (the
// 48-row tile's 48 x 32 warp tiles: ~160), about 4x the FFMA kernel's 42
// TFLOP/s on GPU MODE's ranked shape and below the tensor cores' TF32 rate;
// a conflict-free fragment layout is the next step. Prediction (not yet
// run): the 3x3 48 -> 48 layer of `denoise` at 12 MP ~3.5 ms (3.1 ms of
// compute at 160 TFLOP/s, 4.6 GB of f32 traffic) against ~10 ms for the
// Winograd kernel that fp32 takes there (99.9 ms for its ten layers).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv2d_kernels.cuh"

namespace imr::cuda::conv2d_detail {
namespace {

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

// TF32 warp layout: WM warps along M (the rest along N), so that a warp
// tile is whole m16 x n8 tiles: 1 for a 48-row block, else 2.
__host__ __device__ constexpr int tf32_warps_m(int bm) {
    return bm % 32 == 0 ? 2 : 1;
}

__device__ __forceinline__ unsigned to_tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}

// d += a * b for one m16n8k8 tile: a row-major 16 x 8, b column-major 8 x 8
// (PTX ISA, "Matrix Fragments for mma.m16n8k8" with .tf32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int BM, int BN, int BK, int STAGES, int FG, int FR, PadMode PAD, bool VALID, bool TF32>
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
    float acc[TF32 ? 1 : TM][8];
#pragma unroll
    for (int i = 0; i < (TF32 ? 1 : TM); ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
    // TF32: warp (wm, wn) owns rows wm * WTM + [0, WTM) and columns wn * WTN
    // + [0, WTN) of the block tile; lane = 4 g + t holds, of each m16n8 tile,
    // rows g and g + 8, columns 2t and 2t + 1.
    constexpr int WM = tf32_warps_m(BM), WN = MS_THREADS / 32 / WM;
    constexpr int WTM = BM / WM, WTN = BN / WN, MT = WTM / 16, NT = WTN / 8;
    static_assert(!TF32 || (MT * 16 == WTM && NT * 8 == WTN && BK % 8 == 0), "whole m16n8k8 tiles");
    const int wm = warp / WN, wn = warp % WN, g = lane / 4, t = lane % 4;
    float c[TF32 ? MT : 1][TF32 ? NT : 1][4];
#pragma unroll
    for (int i = 0; i < (TF32 ? MT : 1); ++i)
#pragma unroll
        for (int j = 0; j < (TF32 ? NT : 1); ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) c[i][j][r] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_stage(s, kb + s * BK);
        cp_async_commit();
    }
    int read_stage = 0, write_stage = STAGES - 1;
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
        __syncthreads();              // everyone's have; and everyone is done reading tile kt-1's stage
        if (kt + STAGES - 1 < k_tiles) load_stage(write_stage, kb + (kt + STAGES - 1) * BK);
        cp_async_commit();  // (an empty group keeps the wait count uniform)
        if constexpr (TF32) {
            // A[m][k] = As[k][m], B[k][n] = Bs[k][n]; fragments of rows k8 + t and k8 + t + 4.
            const float* a_s = As + read_stage * A_STAGE + t * AS + wm * WTM + g;
            const float* b_s = Bs + read_stage * B_STAGE + t * BS + wn * WTN + g;
#pragma unroll
            for (int k8 = 0; k8 < BK; k8 += 8) {
                unsigned af[MT][4], bf[NT][2];
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    const float* a = a_s + k8 * AS + i * 16;
                    af[i][0] = to_tf32(a[0]), af[i][1] = to_tf32(a[8]);
                    af[i][2] = to_tf32(a[4 * AS]), af[i][3] = to_tf32(a[4 * AS + 8]);
                }
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const float* b = b_s + k8 * BS + j * 8;
                    bf[j][0] = to_tf32(b[0]), bf[j][1] = to_tf32(b[4 * BS]);
                }
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(c[i][j], af[i], bf[j]);
            }
        } else {
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
        }
        read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
        write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
    }
    cp_async_wait<0>();

    if constexpr (TF32) {    // the same epilogue, element by element of the fragments
        int out_off[NT][2];  // columns 2t and 2t + 1 of each n8 tile
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) out_off[j][e] = output_offset(p, n0 + wn * WTN + j * 8 + 2 * t + e);
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // rows g and g + 8
                const int m = m0 + wm * WTM + i * 16 + g + 8 * h;
                if (m >= p.cout) continue;
                const float bv = (p.bias && blockIdx.z == 0) ? __ldg(p.bias + m) : 0.f;
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (out_off[j][e] >= 0) store_output(p, m, out_off[j][e], c[i][j][2 * h + e] + bv);
            }
    } else {
        // Epilogue: output[img][m][pix] = epilogue(acc + bias) (bias added by the first split only).
        int out_off[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) out_off[j] = output_offset(p, n0 + (j < 4 ? tn * 4 + j : BN / 2 + tn * 4 + j - 4));
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = m0 + (i / FR) * (BM / FG) + tm * FR + i % FR;
            if (m >= p.cout) continue;
            const float bv = (p.bias && blockIdx.z == 0) ? __ldg(p.bias + m) : 0.f;
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (out_off[j] >= 0) store_output(p, m, out_off[j], acc[i][j] + bv);
        }
    }
}

template <int BM, int BN, int BK, int STAGES, int FG, int FR, PadMode PAD, bool VALID, bool TF32>
void launch_multistage_kernel(const ConvParams& p, const Conv2dArgs& a, dim3 grid, cudaStream_t stream) {
    auto kernel = conv2d_igemm_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PAD, VALID, TF32>;
    constexpr size_t smem = multistage_smem_bytes(BM, BN, BK, STAGES);
    allow_smem(kernel, smem, a);
    kernel<<<grid, MS_THREADS, smem, stream>>>(p);
    check_launched(a, "conv2d_igemm_multistage_kernel launch");
}

}  // namespace

template <int BM, int BN, int BK, int STAGES, int FG, int FR, bool TF32>
void launch_multistage(const ConvParams& p, const Conv2dArgs& a, int split, cudaStream_t stream) {
    const dim3 grid(unsigned((p.npix + BN - 1) / BN), unsigned((p.cout + BM - 1) / BM), unsigned(split));
    const bool valid = a.pad_before == 0 && a.pad_after == 0;
    switch (a.pad_mode) {
        case PadMode::Zero:
            if (valid)
                launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Zero, true, TF32>(p, a, grid, stream);
            else
                launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Zero, false, TF32>(p, a, grid, stream);
            break;
        case PadMode::Reflect:
            launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Reflect, false, TF32>(p, a, grid, stream);
            break;
        case PadMode::Replicate:
            launch_multistage_kernel<BM, BN, BK, STAGES, FG, FR, PadMode::Replicate, false, TF32>(p, a, grid, stream);
            break;
        default:
            unknown_pad_mode(a);
    }
}

// The table's configurations (conv2d_variants.cu), in FFMA and on TF32 tensor cores.
#define IMR_MULTISTAGE(BM, BN, FG, FR, TF32)                                                                           \
    template void launch_multistage<BM, BN, MS_BK, MS_STAGES, FG, FR, TF32>(const ConvParams&, const Conv2dArgs&, int, \
                                                                            cudaStream_t)
IMR_MULTISTAGE(128, 128, 2, 4, false);
IMR_MULTISTAGE(64, 256, 2, 4, false);
IMR_MULTISTAGE(48, 256, 3, 2, false);
IMR_MULTISTAGE(128, 128, 2, 4, true);
IMR_MULTISTAGE(64, 256, 2, 4, true);
IMR_MULTISTAGE(48, 256, 3, 2, true);
#undef IMR_MULTISTAGE

}  // namespace imr::cuda::conv2d_detail
