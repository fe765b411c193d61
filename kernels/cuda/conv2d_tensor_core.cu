// Tensor-core convolution: implicit GEMM on mma.sync m16n8k16 (sm_80+) or,
// on sm_90a, warpgroup MMA (wgmma m64nNk16; "Warpgroup MMA" below), fp16/bf16
// operands, fp32 accumulation. Interface: conv2d_tensor_core.cuh.
//
// GEMM view: M = output pixels (a block's tile: TH x TW pixels of one image),
// N = output channels (BN per block), K = K*K taps x Cin (in chunks of CK
// channels). Each chunk stages in shared memory
//   - the input tile with its halo, (TH+K-1) x (TW+K-1) pixels x CK channels,
//     one row per pixel (CK + 8 halves: the 16-byte pad makes the ldmatrix
//     rows of 8 consecutive pixels fall in distinct banks);
//   - the weights of the chunk, BN rows x (K*K*CK + 8) halves (same reason).
// A tap (ky, kx) is then just an offset of (ky*(TW+K-1) + kx) halo rows: every
// lane hands ldmatrix the address of its own pixel's row, so the K*K shifted
// copies an im2col would make never exist. The padding mode is an index
// mapping while the halo is loaded (zero: cp.async zero-fill; reflect:
// mirror; replicate: clamp), never a padded copy.
//
// Pipeline: persistent blocks (grid = what fits on the SMs), each walking its
// tiles; the work items (tile, chunk) are loaded by cp.async STAGES deep (2,
// or 3 for the memory-bound 1x1 rows), the next items' loads in flight while
// the current one is multiplied. When all
// of Cin fits one chunk, the weights of the block's BN channels are loaded
// once and stay resident (48 -> 48: 42 KB), and a stage holds only the halo.
// Epilogue from the accumulator registers: bias, ReLU, residual (added, or
// multiplying), conversion and store (NHWC T pairs or fp32 NCHW); or, for a
// gated 1x1, the product of each lane's paired channels (tc_gate_channel),
// stored as gated pairs.
//
// Two special kernels for a network's ends (below the main kernel): the fold
// kernel for fp32 NCHW input of Cin <= 3 (every 3x3 row uses it for such
// input) and the taps kernel for Cout <= 3 (its own row, k3_14x14_taps_n3).
//
// Floors (the whole convolution, T = 2 bytes):
//   FLOP  = 2 * N*Ho*Wo * Cout * Cin * K*K (useful work; channel padding and
//           partial tiles add to what the tensor cores run);
//   bytes = input (N*H*W*Cs_in*2, or *4 for fp32 NCHW) + output (N*Ho*Wo*
//           Cs_out*2, or Cout*4 fp32) + residual (as output) + weights;
//   H200: 790 TFLOP/s dense fp16/bf16 (measured, wgmma), 4.27 TB/s copy.
//   12 MP 48 -> 48 3x3: 0.498 TFLOP = 0.63 ms; 2.30 GB = 0.54 ms. Measured
//   (v7): 1.39 ms, 45% of 790; mma.sync's own ceiling is lower (ncu: 6
//   tensor-pipe cycles per HMMA.16816, ~640 TFLOP/s at 1.8 GHz). Per shape:
//   docs/performance.md, "Tensor-core convolution".
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "conv2d_tensor_core.cuh"

namespace imr::cuda::tc {
namespace {

// ---- tile configurations (tuned for the H200, sm_90, on mma.sync)
// A block runs WARPS_M x WARPS_N warps; a warp owns MT x NT mma tiles
// (16 pixels x 8 channels each) of the block's TH x TW pixels x BN channels.
template <int KS_, int WARPS_M_, int WARPS_N_, int MT_, int NT_, int TW_, int STAGES_ = 2, int MIN_BLOCKS_ = 1,
          bool WGMMA_ = false, bool SLICE_WALK_ = false, bool PIPE_A_ = false>
struct TileConfig {
    static constexpr int KS = KS_;                  // kernel size (1 or 3)
    static constexpr int WARPS_M = WARPS_M_;        // warps along the pixels
    static constexpr int WARPS_N = WARPS_N_;        // warps along the output channels
    static constexpr int MT = MT_;                  // m16 tiles per warp (pixels / 16)
    static constexpr int NT = NT_;                  // n8 tiles per warp (channels / 8)
    static constexpr int TW = TW_;                  // tile width: a multiple of 16, so an m16 tile is one row run
    static constexpr int STAGES = STAGES_;          // cp.async stages (items loading while one is multiplied: STAGES-1)
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;  // blocks per SM the registers must allow (launch bounds)
    // Hopper's warpgroup MMA (sm_90a) instead of mma.sync: each group of 4
    // warps (a warpgroup: warps 4g..4g+3, which share their channels) issues
    // one wgmma.m64nNk16 per m16 tile index and tap, N = NT * 8, reading A
    // from the same ldmatrix fragments and B straight from shared memory (MT
    // instructions a tap where mma.sync took MT x NT plus NT / 2 ldmatrix
    // of B). See "Warpgroup MMA" below.
    static constexpr bool WGMMA = WGMMA_;
    // wgmma: the chunked weights' cp.async walk in slice order (load_weights)
    // instead of row order.
    static constexpr bool SLICE_WALK = SLICE_WALK_;
    // wgmma: two sets of A fragments, so one (k step, kx) commit group stays
    // in flight while the next one's fragments load (wait_group 1 instead of
    // 0; "Warpgroup MMA" below).
    static constexpr bool PIPE_A = PIPE_A_;
    static constexpr int BM = WARPS_M * MT * 16;  // pixels per tile
    static constexpr int BN = WARPS_N * NT * 8;   // output channels per block
    static constexpr int TH = BM / TW;            // tile height
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int HH = TH + KS - 1;  // halo tile rows
    static constexpr int HW = TW + KS - 1;  // halo tile columns
    static constexpr int HP = HH * HW;      // halo pixels
    static_assert(TW % 16 == 0 && BM % TW == 0, "an m16 tile must lie in one tile row");
    static_assert(!SLICE_WALK || WGMMA, "the slice walk is the wgmma layout's");
    static_assert(!PIPE_A || WGMMA, "the A pipeline is the wgmma path's");
    static_assert(!WGMMA || (WARPS_M % 4 == 0 && (NT == 6 || NT == 8 || NT == 12 || NT == 16) && TW == 16),
                  "a warpgroup's 4 warps must share their channels, N one of the wgmma shapes written below, and "
                  "a warp's m16 tiles be consecutive tile rows (the A fragments' reuse across ky)");
};

// 3x3, Cout <= 64: all channels in one block so the input tile is read once.
// 16 x 16 pixels, 8 warps of 32 pixels (2 m16 tiles) x all channels, at most
// 128 registers, and shared memory for two blocks per SM (48 -> 48: 42 KB
// resident weights + 2 x 36 KB halo = 112 KB each): 16 warps per SM, one
// block's loads, barrier and epilogue overlapping the other's mma. H200, 48 ->
// 48 at 12 MP: 1.39 ms (v7; 45% of 790) against 1.49 ms for the 16 x 32 tile
// of 8 warps of 64 pixels (one block per SM).
using K3N8 = TileConfig<3, 8, 1, 2, 1, 16, 2, 2>;   // Cout 4..8 (Cout <= 3: the taps row)
using K3N16 = TileConfig<3, 8, 1, 2, 2, 16, 2, 2>;  // Cout 9..16
using K3N32 = TileConfig<3, 8, 1, 2, 4, 16, 2, 2>;  // Cout 17..32
using K3N48 = TileConfig<3, 8, 1, 2, 6, 16, 2, 2>;  // Cout 33..48: the denoise model's layers
using K3N64 = TileConfig<3, 8, 1, 2, 8, 16>;        // Cout 49..64: ~200 registers, one block per SM
// The v1-v3 shape, kept to compare: 16 x 32 pixels, 8 warps of 64 pixels
// (4 m16 tiles: fewer ldmatrix per mma, 2 warps per scheduler).
using K3N48Wide = TileConfig<3, 8, 1, 4, 6, 32>;
// Last layers with 4 warps of 64 pixels: half the per-warp tile overhead
// (loads, barrier, tile decode) per pixel, but 8 warps per SM. Tried against
// K3N8 and lost: 48 -> 3 at 12 MP 1.62 ms against 1.13 ms (v5).
using K3N8W4 = TileConfig<3, 4, 1, 4, 1, 16, 2, 2>;
// 3x3, Cout 97..1024 (but multiples of 96 that 128 does not divide, below):
// 128 channels per block, 2 x 4 warps of 64 x 64 (A:B loads
// 4:4 per 32 mma, 128 accumulators), tile 16 x 16 (halo 1.27x), chunks of 32
// input channels with their weights streamed per chunk; more output
// channels take more blocks (grid.y).
using K3N128 = TileConfig<3, 4, 2, 4, 8, 16>;
// 3x3, Cout 65..96 and multiples of 96 that 128 does not divide (a U-Net's
// 96 and 192 channels): K3N128's warp grid with 6 n8 tiles a warp, so no
// mma runs on padding (96 -> 96 on K3N128 computes 128 channels, a third
// more than needed; 192 two tiles of 128, a third more again).
using K3N96 = TileConfig<3, 4, 2, 4, 6, 16>;
// The same block of 96 channels on 16 warps of 32 pixels (48 accumulators a
// thread: K3N48's warp shape, two warp columns): twice the warps per SM to
// hide latency, more ldmatrix per mma. Tests and benchmarks only (A/B).
using K3N96W16 = TileConfig<3, 8, 2, 2, 6, 16>;
// 1x1: no halo. The picked rows are for the memory-bound layers (a U-Net's
// upper levels, 32-128 channels, where a tile's few MMAs cannot hide its
// loads): 2 m16 tiles a warp (<= 128 registers), three stages and 2-4
// blocks an SM, so more tiles' loads are in flight per SM. The first 1x1
// rows (4 m16 tiles a warp, two stages) held one block of 8 warps an SM
// (250 registers; ncu at nafnet's 32 -> 64, 12 MP: 12% of the warps an SM
// holds active, waits on memory dominating). H200, 2026-12-03, against
// those rows (bench_tc, % of the byte floor): 32 -> 64 at 12 MP 0.917 ms
// (60%) / 1.475 (37%), 32 -> 32 + residual 0.731 (75%) / 1.793 (31%),
// 64 -> 128 at 3 MP 0.504 (54%) / 0.699 (39%), 128 -> 256 and 256 -> 512 at
// 0.75 and 0.19 MP within 5% either way.
using K1N32B2 = TileConfig<1, 8, 1, 2, 4, 16, 3, 2>;  // Cout <= 32: 16 x 16 pixels, 8 warps, 2 blocks an SM
using K1N64B4 = TileConfig<1, 4, 1, 2, 8, 16, 3, 4>;  // Cout 33..64: 8 x 16 pixels, 4 warps, 4 blocks
using K1N96 = TileConfig<1, 4, 2, 4, 6, 16>;  // Cout 65..96, and 96k (K3N96's reason: a U-Net's ways down and up)
using K1N128B2 = TileConfig<1, 4, 2, 2, 8, 16, 3, 2>;  // Cout > 96 (but K1N96's multiples): 8 x 16 pixels, 2 blocks
// The first rows, kept to compare (tests and benchmarks only), and a
// 16 x 16 twin of K1N64B4 with 8 warps and 2 blocks an SM (32 -> 64: 1.051 ms).
using K1N64 = TileConfig<1, 8, 1, 4, 8, 32>;
using K1N128 = TileConfig<1, 4, 2, 4, 8, 16>;
using K1N64B2 = TileConfig<1, 8, 1, 2, 8, 16, 3, 2>;
// The 3x3 shapes on warpgroup MMA (sm_90a; the planner's pick on an H100 or
// H200 where the build has sm_90a code). Same tiles, warps, stages and
// blocks per SM as their mma.sync twins, so the two differ only in how the
// products are issued (and the A fragments' reuse across ky, which the
// mma.sync kernel does not do). H200, 12 MP fp16, against the twin: 48 -> 48
// 1.212 ms / 1.384 (-12%), with a residual 1.435 / 1.687, 64 -> 64 2.450 /
// 2.623, 96 -> 192 -> 384 -2 to -3%, 2026-12-03.
using K3N48G = TileConfig<3, 8, 1, 2, 6, 16, 2, 2, true>;   // N = 48 a warpgroup
using K3N64G = TileConfig<3, 8, 1, 2, 8, 16, 2, 1, true>;   // N = 64
using K3N96G = TileConfig<3, 4, 2, 4, 6, 16, 2, 1, true>;   // 2 warpgroups of N = 48
using K3N128G = TileConfig<3, 4, 2, 4, 8, 16, 2, 1, true>;  // 2 warpgroups of N = 64
// Wider warpgroups for the wide layers: one warpgroup's N is all of the
// block's channels, so each A fragment (ldmatrix from the halo) feeds 96 or
// 128 channels instead of 48 or 64: half the A traffic per product, twice
// the accumulators (96 / 128 a thread: one block per SM). Measured 2-7%
// ahead of K3N96G / K3N128G on the 96- to 384-channel shapes (H200,
// 2026-12-03); tests and benchmarks only until measured on whole models.
using K3N96GW = TileConfig<3, 8, 1, 2, 12, 16, 2, 1, true>;
using K3N128GW = TileConfig<3, 8, 1, 2, 16, 16, 2, 1, true>;
// K3N96G and K3N128G with the chunked weights loaded in slice order. Their
// weights do not fit beside two halo stages, so each (tile, chunk) reloads
// them: 72 KB against a 26 KB halo for K3N128G's chunks of 32. In row order a
// warp's 32 cp.async of one channel's row land 128 bytes apart in the
// core-matrix layout, all on the same 4 banks; the slice walk spreads them.
// Predicted 10-25% faster on 96 -> 384; measured (H200, 2026-12-03) -4% at
// 96, +1 to +12% slower at 128-384: the store conflicts were not what holds
// these layers (docs/performance.md, eighth session). Tests and benchmarks
// only.
using K3N96GS = TileConfig<3, 4, 2, 4, 6, 16, 2, 1, true, true>;
using K3N128GS = TileConfig<3, 4, 2, 4, 8, 16, 2, 1, true, true>;
// The picked wgmma rows with one commit group in flight while the next A
// fragments load (PIPE_A; written 2026-12-03 after the session's device time:
// not yet run on a GPU, tests and benchmarks only). The rows above wait for
// each (k step, kx) group before the next ldmatrix, so a warpgroup's tensor
// work stops for the loads' latency every 3 x MT wgmmas (48 -> 48: every 6,
// ~200 cycles of tensor work against ~100 of ldmatrix, fence and wait); with
// two fragment sets it does not. Predicted: 48 -> 48 at 12 MP 1.00-1.10 ms
// (60% of 790) against 1.200, the 96- to 1024-channel layers 5-10% (their
// weight reloads per (tile, chunk) stay), the 1x1 rows (a group of 2
// wgmmas each) 20-40%. ptxas keeps the two fragment sets apart while their
// wgmmas run (scripts/wgmma_sass_check.py on every row) and serializes none
// of them (no C7514 note); K3N48GP, at the 128-register bound of two blocks
// an SM, spills 24 bytes, outside the wgmma loop (loader addresses).
using K3N48GP = TileConfig<3, 8, 1, 2, 6, 16, 2, 2, true, false, true>;
using K3N64GP = TileConfig<3, 8, 1, 2, 8, 16, 2, 1, true, false, true>;
using K3N96GP = TileConfig<3, 4, 2, 4, 6, 16, 2, 1, true, false, true>;
using K3N128GP = TileConfig<3, 4, 2, 4, 8, 16, 2, 1, true, false, true>;
// 1x1 on wgmma: not twins of the mma.sync 1x1 rows (one warpgroup N = all of
// the block's channels, 2 m16 tiles a warp: the mma.sync rows' 4 spilled up
// to 1.6 KB a thread in a first version), and slower than them on the H200
// (192 -> 96 at 3 MP 1.053 ms against 0.887; 128 -> 128 0.806 / 0.764:
// with K = 1 a commit group is 2 wgmmas, waited for before the next loads).
// Tests and benchmarks only.
using K1N64G = TileConfig<1, 8, 1, 2, 8, 16, 2, 1, true>;
using K1N96G = TileConfig<1, 8, 1, 2, 12, 16, 2, 1, true>;
using K1N128G = TileConfig<1, 8, 1, 2, 16, 16, 2, 1, true>;
using K1N96GP = TileConfig<1, 8, 1, 2, 12, 16, 2, 1, true, false, true>;  // PIPE_A (above)
using K1N128GP = TileConfig<1, 8, 1, 2, 16, 16, 2, 1, true, false, true>;

// What a launch needs, flattened for the kernel.
struct KernelParams {
    const void* in;
    void* out;
    const void* weight;  // T [cout8][cin16/16][K*K][16]
    const float* bias;
    const void* residual;
    int n, h, w, cin, cs_in, cin16;  // cs_in: NHWC channel stride
    int cout, cout8, cs_out, ho, wo;
    int pad_before, pad_after, pad;  // pad: TcPad as int
    int in_nchw, out_nchw, relu;
    int res_mul;                // the residual multiplies (TcConvParams::residual_multiplies)
    int gate;                   // TcConvParams::gate: cs_out is then the stride of cout / 2
    int ck, nchunks, resident;  // channels per chunk, chunks, weights resident
    int tiles_x, tiles_y, tiles;
    int as, ws;  // shared row strides in halves: halo (ck + 8), weights (K*K*ck + 8)
};

template <class T>
struct TypeOps;
template <>
struct TypeOps<__half> {
    using T2 = __half2;
    static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
    static __device__ __forceinline__ T2 pair(float a, float b) { return __floats2half2_rn(a, b); }
    static __device__ __forceinline__ float2 unpair(T2 v) { return __half22float2(v); }
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
template <>
struct TypeOps<__nv_bfloat16> {
    using T2 = __nv_bfloat162;
    static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
    static __device__ __forceinline__ T2 pair(float a, float b) { return __floats2bfloat162_rn(a, b); }
    static __device__ __forceinline__ float2 unpair(T2 v) { return __bfloat1622float2(v); }
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; zero-filled when !valid (src then unread).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// 4 bytes global -> shared (through L1), zero-filled when !valid.
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t& r0, uint32_t& r1, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

// ---- Warpgroup MMA (sm_90a)
// wgmma.mma_async with A from registers (the mma.sync A fragments, one m16
// tile a warp: the warpgroup's 4 warps make the m64) and B from shared memory
// through a matrix descriptor. B's shared layout is the canonical one without
// swizzle, K-major: core matrices of 8 rows (output channels) x 16 bytes (8
// k), each 128 contiguous bytes; the descriptor's leading byte offset is the
// distance between the two core matrices of a k16 step (K), its stride byte
// offset between consecutive groups of 8 channels (N). The weights are staged
// as [k16 step][tap][channel group][k half][8][8] (load_weights), so the
// (step, tap) of a warpgroup is one descriptor of LBO 128, SBO 256, starting
// at ((step * K*K + tap) * BN + the warpgroup's first channel) * 32 bytes.
// The accumulators of a warp are the m16nN rows it gave: per n8 tile j, the
// mma.sync C fragment (acc[i][j][0..3]), so the epilogue is shared.
//
// Asynchrony: a wgmma reads its A registers and shared B after issue, so (1)
// wgmma.fence before the first wgmma that follows register writes (the A
// fragments, the zeroed accumulators); (2) in the picked rows each (k step,
// kx)'s wgmmas are one commit group, waited for (wait_group 0) before the
// next A fragments are loaded, which also frees the accumulators for the
// epilogue and the stage for the next cp.async. (A first version that kept
// one tap's group in flight while loading the next computed wrong sums on
// the H200; ptxas reusing in-flight A registers was blamed, but the PIPE_A
// rows' SASS shows it keeping their two fragment sets apart, so the cause is
// not settled: those rows also fence the accumulators at the loop's exit,
// fence_accumulators, without which the compiler's copies of them preceded
// the last wait.) (3) fence.proxy.async after the cp.async data land, before
// the barrier, so the async proxy (wgmma's reads) sees them.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IMR_HAS_WGMMA 1
#else
#define IMR_HAS_WGMMA 0
#endif

__device__ __forceinline__ void wgmma_fence() {
#if IMR_HAS_WGMMA
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if IMR_HAS_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if IMR_HAS_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// The accumulators pass through this point (CUTLASS's
// warpgroup_fence_operand): after the last wait of a pipelined loop, so that
// the compiler's copies of them at the loop's exit (phi moves) come after
// that wait. Without it those moves were placed before it, reading
// accumulators of wgmmas in flight, and ptxas serialized every wgmma of the
// kernel (its C7514 note) to keep them right.
template <int MT, int NT>
__device__ __forceinline__ void fence_accumulators(float (&acc)[MT][NT][4]) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(acc[i][j][e])::"memory");
}

// Makes this thread's generic-proxy writes to shared memory (cp.async's)
// visible to the async proxy that wgmma reads through.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if IMR_HAS_WGMMA
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

constexpr uint32_t kWgmmaCoreBytes = 128;  // one core matrix: 8 rows x 16 bytes
// The descriptor of a K-major, unswizzled B operand at shared address `addr`
// (LBO: the k-half core matrices 128 bytes apart; SBO: channel groups 256).
// Fields (each a byte count >> 4): start address bits 0-13, LBO 16-29, SBO
// 32-45; base offset 0, swizzle mode 0 (bits 62-63: none).
// (scripts/wgmma_probe.cu checks this reading of the PTX ISA on the GPU.)
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr) {
    constexpr uint32_t lbo = kWgmmaCoreBytes, sbo = 2 * kWgmmaCoreBytes;
    return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

// One wgmma.m64nNk16, N = NT * 8, fp32 accumulators += A (registers) x B (desc).
template <class T, int NT>
struct WgmmaRS {
    static __device__ __forceinline__ void mma(float (&d)[NT][4], const uint32_t (&a)[4], uint64_t desc);
};
// Its specializations: for N = 48, 64, 96, 128 (the rows' NT 6, 8, 12, 16)
// and each half type, the accumulator operands d[j][0..3] in the order of
// the instruction's D registers (IMR_WGMMA_D), its register numbers as text
// (D, then the 4 of A, then the descriptor).
#if IMR_HAS_WGMMA
#define IMR_WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define IMR_WGMMA_ASM(...) __trap()
#endif
#define IMR_WGMMA_D(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define IMR_WGMMA_D6 IMR_WGMMA_D(0), IMR_WGMMA_D(1), IMR_WGMMA_D(2), IMR_WGMMA_D(3), IMR_WGMMA_D(4), IMR_WGMMA_D(5)
#define IMR_WGMMA_D8 IMR_WGMMA_D6, IMR_WGMMA_D(6), IMR_WGMMA_D(7)
#define IMR_WGMMA_D12 IMR_WGMMA_D8, IMR_WGMMA_D(8), IMR_WGMMA_D(9), IMR_WGMMA_D(10), IMR_WGMMA_D(11)
#define IMR_WGMMA_D16 IMR_WGMMA_D12, IMR_WGMMA_D(12), IMR_WGMMA_D(13), IMR_WGMMA_D(14), IMR_WGMMA_D(15)
#define IMR_WGMMA_REGS48                                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, " \
    "{%24, %25, %26, %27}, %28"
#define IMR_WGMMA_REGS64                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36"
#define IMR_WGMMA_REGS96                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
    "%46, %47}, {%48, %49, %50, %51}, %52"
#define IMR_WGMMA_REGS128                                                                                             \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, "     \
    "%67}, %68"
#define IMR_WGMMA_RS(T, TY, NT, N)                                                                                \
    template <>                                                                                                   \
    __device__ __forceinline__ void WgmmaRS<T, NT>::mma(float(&d)[NT][4], const uint32_t(&a)[4], uint64_t desc) { \
        (void)d, (void)a, (void)desc;                                                                             \
        IMR_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " IMR_WGMMA_REGS##N           \
                      ", 1, 1, 1, 0;\n"                                                                           \
                      : IMR_WGMMA_D##NT                                                                           \
                      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));                                   \
    }
IMR_WGMMA_RS(__half, "f16", 6, 48)
IMR_WGMMA_RS(__nv_bfloat16, "bf16", 6, 48)
IMR_WGMMA_RS(__half, "f16", 8, 64)
IMR_WGMMA_RS(__nv_bfloat16, "bf16", 8, 64)
IMR_WGMMA_RS(__half, "f16", 12, 96)
IMR_WGMMA_RS(__nv_bfloat16, "bf16", 12, 96)
IMR_WGMMA_RS(__half, "f16", 16, 128)
IMR_WGMMA_RS(__nv_bfloat16, "bf16", 16, 128)
#undef IMR_WGMMA_RS
#undef IMR_WGMMA_ASM
#undef IMR_WGMMA_D
#undef IMR_WGMMA_D6
#undef IMR_WGMMA_D8
#undef IMR_WGMMA_D12
#undef IMR_WGMMA_D16
#undef IMR_WGMMA_REGS48
#undef IMR_WGMMA_REGS64
#undef IMR_WGMMA_REGS96
#undef IMR_WGMMA_REGS128

// Maps a padded-image coordinate i into [0, n); false: a zero (or a position
// outside the padded image, which only outputs beyond the image read).
// Written with selects, not branches (the loaders run it per 16 bytes).
__device__ __forceinline__ bool map_coord(int& i, int n, int pad_before, int pad_after, int pad) {
    const bool padded_image = i >= -pad_before && i < n + pad_after;
    const int reflected = i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i);  // the edge not repeated; pad < n (host check)
    const int replicated = min(max(i, 0), n - 1);
    const bool zero = pad == int(TcPad::Zero);
    const bool inside = unsigned(i) < unsigned(n);
    i = zero ? i : (pad == int(TcPad::Reflect) ? reflected : replicated);
    return padded_image && (!zero || inside);
}

struct TileCoord {
    int n, y0, x0;  // image, first output row and column
};
template <class Cfg>
__device__ __forceinline__ TileCoord tile_coord(const KernelParams& p, int tile) {
    const int per_image = p.tiles_x * p.tiles_y;
    const int n = tile / per_image;
    const int r = tile - n * per_image;
    const int ty = r / p.tiles_x;
    return {n, ty * Cfg::TH, (r - ty * p.tiles_x) * Cfg::TW};
}

// A thread's walk over the 16-byte groups of a rows x R copy: group
// idx = tid + k * THREADS is (row, rem) = (idx / R, idx % R), stepped by
// adding (THREADS / R, THREADS % R) with a carry, so the loaders divide once
// per kernel, not once per 16 bytes.
struct Walk {
    int row, rem;    // the thread's first group
    int drow, drem;  // the step
    int r;           // groups per row
    __device__ __forceinline__ void init(int groups_per_row, int threads) {
        r = groups_per_row;
        row = threadIdx.x / r, rem = threadIdx.x - row * r;
        drow = threads / r, drem = threads - drow * r;
    }
    __device__ __forceinline__ void step(int& rw, int& rm) const {
        rm += drem, rw += drow;
        if (rm >= r) rm -= r, ++rw;
    }
};

// Stages the halo tile of channels [c0, c0 + ck) into `halo` (HP rows of as
// halves). NHWC: ck/8 cp.async groups per pixel. fp32 NCHW (a network's first
// layer, one chunk): one scalar per (channel < cin, pixel), converted here;
// the other channels of the stage stay the zeros written at the start.
template <class Cfg, class T>
__device__ __forceinline__ void load_halo(const KernelParams& p, T* halo, TileCoord t, int c0, const Walk& wk) {
    const int iy0 = t.y0 - p.pad_before, ix0 = t.x0 - p.pad_before;
    if (!p.in_nchw) {
        const T* in = static_cast<const T*>(p.in);
        const T* img = in + size_t(t.n) * p.h * p.w * p.cs_in + c0;
        const uint32_t base = smem_addr(halo);
        int pix = wk.row, g = wk.rem;
        // Interior tiles (most of them): the halo is inside the image and the
        // chunk inside the channel stride, so a group's source is a fixed
        // offset from the tile's corner: no coordinate mapping, no checks
        // (the general loop below costs ~80 instructions per 16 bytes).
        if (iy0 >= 0 && ix0 >= 0 && iy0 + Cfg::HH <= p.h && ix0 + Cfg::HW <= p.w && c0 + p.ck <= p.cs_in) {
            const T* corner = img + (size_t(iy0) * p.w + ix0) * p.cs_in;
#pragma unroll 4
            for (; pix < Cfg::HP; wk.step(pix, g)) {
                const int hy = pix / Cfg::HW;
                cp_async16(base + 2 * (pix * p.as + g * 8),
                           corner + size_t(hy * p.w + pix - hy * Cfg::HW) * p.cs_in + g * 8, true);
            }
            return;
        }
#pragma unroll 2
        for (; pix < Cfg::HP; wk.step(pix, g)) {
            const int hy = pix / Cfg::HW;
            int iy = iy0 + hy, ix = ix0 + (pix - hy * Cfg::HW);
            const bool ok = map_coord(iy, p.h, p.pad_before, p.pad_after, p.pad) &&
                            map_coord(ix, p.w, p.pad_before, p.pad_after, p.pad) && c0 + g * 8 < p.cs_in;
            const T* src = ok ? img + size_t(iy * p.w + ix) * p.cs_in + g * 8 : in;
            cp_async16(base + 2 * (pix * p.as + g * 8), src, ok);
        }
        return;
    }
    const float* in = static_cast<const float*>(p.in) + size_t(t.n) * p.cin * p.h * p.w;
    const size_t plane = size_t(p.h) * p.w;
    constexpr int BATCH = 4;  // loads issued before their stores, so their latencies overlap
    for (int base = threadIdx.x; base < p.cin * Cfg::HP; base += BATCH * Cfg::THREADS) {
        float v[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int idx = base + b * Cfg::THREADS;
            const int c = idx / Cfg::HP, pix = idx - c * Cfg::HP;
            const int hy = pix / Cfg::HW;
            int iy = iy0 + hy, ix = ix0 + (pix - hy * Cfg::HW);
            const bool ok = idx < p.cin * Cfg::HP && map_coord(iy, p.h, p.pad_before, p.pad_after, p.pad) &&
                            map_coord(ix, p.w, p.pad_before, p.pad_after, p.pad);
            const float x = __ldg(in + (ok ? c * plane + size_t(iy) * p.w + ix : 0));  // unconditional: no branch
            v[b] = ok ? x : 0.f;
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int idx = base + b * Cfg::THREADS;
            const int c = idx / Cfg::HP, pix = idx - c * Cfg::HP;
            if (idx < p.cin * Cfg::HP) halo[pix * p.as + c] = TypeOps<T>::from_float(v[b]);
        }
    }
}

// Stages the weights of channels [co0, co0 + BN) x [c0, c0 + ck) into `wt`:
// BN rows of ws halves. The packed layout [cout8][cin16/16][K*K][16] makes a
// chunk's row one contiguous run of K*K*ck halves (16-channel slices, each
// tap after tap), copied as is.
template <class Cfg, class T>
__device__ __forceinline__ void load_weights(const KernelParams& p, T* wt, int co0, int c0, const Walk& wk) {
    constexpr int KK = Cfg::KS * Cfg::KS;
    const T* w = static_cast<const T*>(p.weight);
    const T* src0 = w + size_t(co0) * KK * p.cin16 + c0 * KK;
    const uint32_t base = smem_addr(wt);
    // One 16-byte group: row co, group g of the row's run.
    auto copy = [&](int co, int g) {
        const bool ok = co0 + co < p.cout8 && g * 8 < (p.cin16 - c0) * KK;  // a partial last chunk ends early
        // mma.sync: the row as it is (ldmatrix rows). wgmma: group g = (k16
        // step s, tap, k half h) goes to its core matrix, [s][tap][co / 8][h]
        // of 128 bytes, row co % 8 (the layout wgmma_desc describes).
        uint32_t dst;
        if constexpr (Cfg::WGMMA) {
            const int s = g / (2 * KK), tap = g / 2 - s * KK, h = g & 1;
            dst = ((((s * KK + tap) * (Cfg::BN / 8) + co / 8) * 2 + h) * kWgmmaCoreBytes) + (co & 7) * 16;
        } else {
            dst = 2 * (co * p.ws + g * 8);
        }
        cp_async16(base + dst, ok ? src0 + size_t(co) * KK * p.cin16 + g * 8 : w, ok);
    };
    if constexpr (Cfg::SLICE_WALK) {
        if (!p.resident) {
            // Slice order: 16 consecutive threads take one (step, tap) slice
            // of 8 channels, both k halves: 32 contiguous bytes of each
            // channel's row (a whole sector) into 256 contiguous shared bytes
            // (two core matrices): a warp's 512 bytes in 4 wavefronts.
            // A thread keeps its channel (lane & 7) and k half; its units of
            // 16 (8-channel block, slice) step by THREADS / 16 with a carry,
            // so the loop divides twice per call, not once per 16 bytes.
            const int slices = KK * p.ck / 16;  // a row's
            const int co_lo = threadIdx.x & 7, h = (threadIdx.x >> 3) & 1, unit = threadIdx.x >> 4;
            constexpr int kUnits = Cfg::THREADS / 16;
            const int dblock = kUnits / slices, dslice = kUnits - dblock * slices;
            int block = unit / slices, slice = unit - block * slices;
            while (block < Cfg::BN / 8) {
                copy(block * 8 + co_lo, slice * 2 + h);
                slice += dslice, block += dblock;
                if (slice >= slices) slice -= slices, ++block;
            }
            return;
        }
    }
    int co = wk.row, g = wk.rem;
#pragma unroll 2
    for (; co < Cfg::BN; wk.step(co, g)) copy(co, g);
}

// How many m16 tiles' residual pairs the epilogue loads at once: the most
// that divides MT and keeps them within `regs` registers (2 rows x NT pairs
// each): 32 where a thread may have up to 255 registers, 12 where it has
// 128 (two blocks of 8 warps, or one of 16, per SM; more spilled there).
__host__ __device__ constexpr int residual_tiles_at_once(int mt, int nt, int regs) {
    int ri = mt;
    while (ri > 1 && (mt % ri != 0 || 2 * ri * nt > regs)) --ri;
    return ri;
}

// The residual applied to v (after bias and ReLU, in fp32): added, or
// multiplied where the parameters say so.
__device__ __forceinline__ float with_residual(const KernelParams& p, float v, float r) {
    return p.res_mul ? v * r : v + r;
}

// Bias, ReLU, residual, conversion and store of the block's accumulators
// (or the gate's products). bias_r: this lane's bias values, those of its
// columns' channels (tc_gate_channel's under the gate), 0 past cout. Within each row group the
// residual loads are issued before the stores so their latencies overlap.
template <class Cfg, class T>
__device__ __forceinline__ void epilogue(const KernelParams& p, const float (&acc)[Cfg::MT][Cfg::NT][4],
                                         const float (&bias_r)[Cfg::NT][2], TileCoord t, int wm0, int co_w0) {
    using Ops = TypeOps<T>;
    using T2 = typename Ops::T2;
    const int lane = threadIdx.x & 31;
    const int co_l = co_w0 + (lane & 3) * 2;  // + j * 8: this lane's channel pair
    // The common case, without checks: NHWC, all of the warp's channels
    // real, the whole tile inside the image. A lane's loads and stores are
    // then at fixed offsets from one offset per m16 tile.
    if (!p.out_nchw && co_w0 + Cfg::NT * 8 <= p.cout && t.y0 + Cfg::TH <= p.ho && t.x0 + Cfg::TW <= p.wo) {
        T* __restrict__ out = static_cast<T*>(p.out);
        auto first = [&](int i) {  // the lane's first element of m16 tile i: a run of 16 pixels in one tile row
            const int m = wm0 + i * 16, py = m / Cfg::TW;
            return ((size_t(t.n) * p.ho + t.y0 + py) * p.wo + t.x0 + (m - py * Cfg::TW) + (lane >> 2)) * p.cs_out +
                   co_l;
        };
        if (p.gate) {
            // n8 tiles j and j + 1 give this lane gated channels co_w0 / 2 +
            // 4 j + 2 l and that + 1 (tc_gate_channel): one pair store.
            const int g_l = co_w0 / 2 + (lane & 3) * 2;
#pragma unroll
            for (int i = 0; i < Cfg::MT; ++i) {
                T* o = out + first(i) - co_l + g_l;
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j + 1 < Cfg::NT; j += 2) {
                        const float g0 = (acc[i][j][2 * h] + bias_r[j][0]) * (acc[i][j][2 * h + 1] + bias_r[j][1]);
                        const float g1 =
                            (acc[i][j + 1][2 * h] + bias_r[j + 1][0]) * (acc[i][j + 1][2 * h + 1] + bias_r[j + 1][1]);
                        *reinterpret_cast<T2*>(o + size_t(h) * 8 * p.cs_out + j * 4) = Ops::pair(g0, g1);
                    }
            }
            return;
        }
        if (!p.residual) {
#pragma unroll
            for (int i = 0; i < Cfg::MT; ++i) {
                T* o = out + first(i);
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j) {
                        float v0 = acc[i][j][2 * h] + bias_r[j][0], v1 = acc[i][j][2 * h + 1] + bias_r[j][1];
                        if (p.relu) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
                        *reinterpret_cast<T2*>(o + size_t(h) * 8 * p.cs_out + j * 8) = Ops::pair(v0, v1);
                    }
            }
            return;
        }
        // With a residual: the pairs of RI m16 tiles (up to 32 registers) are
        // loaded before any of their stores, so their latencies overlap.
        // Loaded pair by pair as they were used (the general path below), the
        // residual made a U-Net's residual 3x3 convolutions 38% (48 -> 48:
        // 1.92 ms against 1.39) to 41% (96 -> 96: 2.86 against 2.03 ms)
        // slower at 12 MP on the H200, where its bytes take 0.27 / 0.14 ms.
        constexpr int RI =
            residual_tiles_at_once(Cfg::MT, Cfg::NT, 65536 / (Cfg::THREADS * Cfg::MIN_BLOCKS) > 128 ? 32 : 12);
        const T* __restrict__ res = static_cast<const T*>(p.residual);
#pragma unroll
        for (int i0 = 0; i0 < Cfg::MT; i0 += RI) {
            size_t at[RI];
#pragma unroll
            for (int ii = 0; ii < RI; ++ii) at[ii] = first(i0 + ii);
            T2 r[RI][2][Cfg::NT];
#pragma unroll
            for (int ii = 0; ii < RI; ++ii)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j)
                        r[ii][h][j] = *reinterpret_cast<const T2*>(res + at[ii] + size_t(h) * 8 * p.cs_out + j * 8);
#pragma unroll
            for (int ii = 0; ii < RI; ++ii)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j) {
                        float v0 = acc[i0 + ii][j][2 * h] + bias_r[j][0];
                        float v1 = acc[i0 + ii][j][2 * h + 1] + bias_r[j][1];
                        if (p.relu) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
                        const float2 rv = Ops::unpair(r[ii][h][j]);  // as the general path: after ReLU, in fp32
                        *reinterpret_cast<T2*>(out + at[ii] + size_t(h) * 8 * p.cs_out + j * 8) =
                            Ops::pair(with_residual(p, v0, rv.x), with_residual(p, v1, rv.y));
                    }
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < Cfg::MT; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = wm0 + i * 16 + (lane >> 2) + h * 8;
            const int py = m / Cfg::TW;
            const int oy = t.y0 + py, ox = t.x0 + (m - py * Cfg::TW);
            if (oy >= p.ho || ox >= p.wo) continue;
            float v[Cfg::NT][2];
#pragma unroll
            for (int j = 0; j < Cfg::NT; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    v[j][e] = acc[i][j][2 * h + e] + bias_r[j][e];
                    if (p.relu) v[j][e] = fmaxf(v[j][e], 0.f);
                }
            if (p.gate) {  // as in the common case above, with the channels checked
                T* __restrict__ out = static_cast<T*>(p.out) + ((size_t(t.n) * p.ho + oy) * p.wo + ox) * p.cs_out;
#pragma unroll
                for (int j = 0; j + 1 < Cfg::NT; j += 2)
                    if (co_l + j * 8 < p.cout)  // both tiles of the pair (cout is a multiple of 16)
                        *reinterpret_cast<T2*>(out + co_w0 / 2 + j * 4 + (lane & 3) * 2) =
                            Ops::pair(v[j][0] * v[j][1], v[j + 1][0] * v[j + 1][1]);
                continue;
            }
            if (!p.out_nchw) {
                const size_t pix = ((size_t(t.n) * p.ho + oy) * p.wo + ox) * p.cs_out;
                if (p.residual) {
                    const T* __restrict__ res = static_cast<const T*>(p.residual) + pix;
                    float2 r[Cfg::NT];
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j) {
                        const int co = co_l + j * 8;
                        r[j] = co < p.cs_out ? Ops::unpair(*reinterpret_cast<const T2*>(res + co)) : float2{0.f, 0.f};
                    }
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j)
                        v[j][0] = with_residual(p, v[j][0], r[j].x), v[j][1] = with_residual(p, v[j][1], r[j].y);
                }
                T* __restrict__ out = static_cast<T*>(p.out) + pix;
#pragma unroll
                for (int j = 0; j < Cfg::NT; ++j) {
                    const int co = co_l + j * 8;
                    // channels past cout (the stride's padding) are written as zeros
                    if (co < p.cs_out)
                        *reinterpret_cast<T2*>(out + co) =
                            Ops::pair(co < p.cout ? v[j][0] : 0.f, co + 1 < p.cout ? v[j][1] : 0.f);
                }
            } else {
                const size_t plane = size_t(p.ho) * p.wo;
                const size_t base = size_t(t.n) * p.cout * plane + size_t(oy) * p.wo + ox;
                if (p.residual) {
                    const float* __restrict__ res = static_cast<const float*>(p.residual) + base;
                    float r[Cfg::NT][2];
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const int co = co_l + j * 8 + e;
                            r[j][e] = co < p.cout ? __ldg(res + co * plane) : 0.f;
                        }
#pragma unroll
                    for (int j = 0; j < Cfg::NT; ++j)
                        v[j][0] = with_residual(p, v[j][0], r[j][0]), v[j][1] = with_residual(p, v[j][1], r[j][1]);
                }
                float* __restrict__ out = static_cast<float*>(p.out) + base;
#pragma unroll
                for (int j = 0; j < Cfg::NT; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int co = co_l + j * 8 + e;
                        if (co < p.cout) out[co * plane] = v[j][e];
                    }
            }
        }
    }
}

// The convolution kernel of one tile configuration; see the file's head.
template <class Cfg, class T>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) conv2d_tc_kernel(const KernelParams p) {
    constexpr int KS = Cfg::KS, MT = Cfg::MT, NT = Cfg::NT;
    extern __shared__ __align__(
        128) unsigned char smem_raw[];  // 128: wgmma's core matrices (one declaration for all kernels)
    T* smem = reinterpret_cast<T*>(smem_raw);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm0 = (warp % Cfg::WARPS_M) * MT * 16;  // the warp's first pixel in the tile
    const int wn0 = (warp / Cfg::WARPS_M) * NT * 8;   // the warp's first channel in the block
    const int co0 = blockIdx.y * Cfg::BN;

    // Shared memory: [resident weights] then STAGES x (halo [+ weights]).
    // wgmma: weights without the row pad, each part 128-byte aligned.
    const int w_elems = Cfg::WGMMA ? Cfg::BN * Cfg::KS * Cfg::KS * p.ck : Cfg::BN * p.ws;
    const int halo_elems = Cfg::WGMMA ? (Cfg::HP * p.as + 63) / 64 * 64 : Cfg::HP * p.as;
    const int stage_elems = halo_elems + (p.resident ? 0 : w_elems);
    T* stages = smem + (p.resident ? w_elems : 0);

    const int my_tiles = p.tiles > int(blockIdx.x) ? (p.tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const int items = my_tiles * p.nchunks;
    if (items == 0) return;

    Walk halo_walk, w_walk;
    halo_walk.init(p.ck / 8, Cfg::THREADS);
    w_walk.init(Cfg::KS * Cfg::KS * p.ck / 8, Cfg::THREADS);
    auto issue = [&](int item) {
        const int tile = blockIdx.x + (item / p.nchunks) * gridDim.x;
        const int c0 = (item % p.nchunks) * p.ck;
        T* st = stages + (item % Cfg::STAGES) * stage_elems;
        load_halo<Cfg, T>(p, st, tile_coord<Cfg>(p, tile), c0, halo_walk);
        if (!p.resident) load_weights<Cfg, T>(p, st + halo_elems, co0, c0, w_walk);
    };
    if (p.in_nchw) {  // channels past cin must read as zeros: the NCHW loader writes only the others
        for (int i = threadIdx.x; i < Cfg::STAGES * stage_elems / 8; i += Cfg::THREADS)
            reinterpret_cast<uint4*>(stages)[i] = make_uint4(0, 0, 0, 0);
        __syncthreads();
    }
    // Items (tile, chunk) 0 .. STAGES-2 in flight before the loop (the
    // resident weights with the first); one cp.async group per item, empty
    // past the last, so the group count stays what wait_group assumes.
    if (p.resident) load_weights<Cfg, T>(p, smem, co0, 0, w_walk);
#pragma unroll
    for (int s = 0; s < Cfg::STAGES - 1; ++s) {
        if (s < items) issue(s);
        cp_async_commit();
    }
    float bias_r[NT][2];  // this lane's bias values, loaded once
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int co = co0 + wn0 + j * 8 + (lane & 3) * 2 + e;
            bias_r[j][e] = p.bias && co < p.cout ? __ldg(p.bias + (p.gate ? tc_gate_channel(co, p.cout) : co)) : 0.f;
        }

    // Per-lane ldmatrix row offsets (halves). A (16 x 16, rows = pixels): lanes
    // 0-15 give rows 0-15 at k 0, lanes 16-31 the same rows at k 8. B (rows =
    // output channels, k contiguous): x4 covers two n8 tiles, lanes 0-7 / 8-15
    // the first at k 0 / 8, lanes 16-23 / 24-31 the second.
    int a_off[MT];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
        const int m = wm0 + i * 16 + (lane & 15);
        const int py = m / Cfg::TW;
        a_off[i] = (py * Cfg::HW + (m - py * Cfg::TW)) * p.as + (lane >> 4) * 8;
    }
    int b_off[(NT + 1) / 2];
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)
        b_off[j] = (wn0 + j * 16 + (lane & 7) + ((lane >> 4) << 3)) * p.ws + ((lane >> 3) & 1) * 8;
    if constexpr (NT % 2) b_off[NT / 2] = (wn0 + (NT - 1) * 8 + (lane & 7)) * p.ws + ((lane >> 3) & 1) * 8;

    const int as_bytes = 2 * p.as;  // one halo row (pixel)
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    for (int item = 0; item < items; ++item) {
        cp_async_wait<Cfg::STAGES - 2>();  // this item's group has landed (this thread's copies)
        if constexpr (Cfg::WGMMA) fence_proxy_async_shared();
        __syncthreads();  // everyone's copies; and the stage read last iteration is free
        if (item + Cfg::STAGES - 1 < items) issue(item + Cfg::STAGES - 1);
        cp_async_commit();

        const int chunk = item % p.nchunks;
        const int c0 = chunk * p.ck;
        const T* st = stages + (item % Cfg::STAGES) * stage_elems;
        const uint32_t halo_base = smem_addr(st);
        const uint32_t w_base = smem_addr(p.resident ? smem : st + halo_elems);
        const int ksteps = min(p.ck, p.cin16 - c0) / 16;
        // Per k step (16 input channels) the K*K taps, unrolled: the ldmatrix
        // addresses are a register per m16 tile / n16 pair plus compile-time
        // offsets, and the compiler can load tap t+1's fragments while tap
        // t's mma run (no branch inside the unrolled body).
        const uint32_t row_bytes = Cfg::HW * as_bytes;  // one halo row of pixels
        if constexpr (Cfg::WGMMA) {
            // A warp's MT m16 tiles are MT consecutive tile rows (TW = 16),
            // so for one kx the K taps (ky) of tile i read halo rows i .. i +
            // K - 1: the warp loads the MT + K - 1 rows' A fragments once
            // per (k step, kx) and each feeds up to K wgmmas, one per ky
            // (3x3: 12 ldmatrix for 18 wgmma at MT = 2, where a tap at a
            // time took 18). B is the (step, ky, kx) block of the staged
            // weights, from the warpgroup's channel wn0. The whole (step,
            // kx) is one commit group; the picked rows wait for it before the
            // next loads, the PIPE_A rows keep it in flight ("Warpgroup MMA"
            // above).
            constexpr uint32_t kTapBytes = Cfg::BN * 32;  // one (step, tap): BN channels x 16 k
            constexpr int R = MT + KS - 1;                // fragment rows per kx
            const uint64_t desc0 = wgmma_desc(w_base + wn0 * 32);
            const uint32_t a_row0 = halo_base + 2 * a_off[0];
            // One (k step, kx) group: its A fragments (the MT + K - 1 rows),
            // and its wgmmas, one commit group.
            auto load = [&](uint32_t(&a)[R][4], int ks, int kx) {
#pragma unroll
                for (int r = 0; r < R; ++r) ldmatrix_x4(a[r], a_row0 + ks * 32 + r * row_bytes + kx * as_bytes);
            };
            auto mma = [&](const uint32_t(&a)[R][4], int ks, int kx) {
                wgmma_fence();  // the fragments' ldmatrix (and the zeroed accumulators) before the wgmmas read them
#pragma unroll
                for (int ky = 0; ky < KS; ++ky) {
                    const uint64_t desc = desc0 + (((ks * KS * KS + ky * KS + kx) * kTapBytes) >> 4);
#pragma unroll
                    for (int i = 0; i < MT; ++i) WgmmaRS<T, NT>::mma(acc[i], a[i + ky], desc);
                }
                wgmma_commit();
            };
            if constexpr (Cfg::PIPE_A) {
                // Group g = (k step g / K, kx g % K). Fragment set a0 feeds the
                // even groups, a1 the odd: group g's set is loaded while group
                // g - 1 runs, after the wait that retires g - 2 (the set's
                // last reader). ptxas keeps the two sets in distinct
                // registers while their wgmmas are in flight (checked in the
                // SASS of every such row: scripts/wgmma_sass_check.py).
                const int groups = ksteps * KS;
                uint32_t a0[R][4], a1[R][4];
                auto load_g = [&](uint32_t(&a)[R][4], int g) { load(a, g / KS, g % KS); };
                auto mma_g = [&](const uint32_t(&a)[R][4], int g) { mma(a, g / KS, g % KS); };
                fence_accumulators(acc);
                load_g(a0, 0);
                for (int g = 0; g < groups; g += 2) {
                    mma_g(a0, g);
                    wgmma_wait<1>();  // g - 1 retired: a1 is free
                    if (g + 1 < groups) {
                        load_g(a1, g + 1);
                        mma_g(a1, g + 1);
                        wgmma_wait<1>();  // g retired: a0 is free
                        if (g + 2 < groups) load_g(a0, g + 2);
                    }
                }
                wgmma_wait<0>();  // every group retired: the stage and the accumulators are free
                fence_accumulators(acc);
            } else {
                // One group at a time, kx unrolled (the picked rows, as measured).
                for (int ks = 0; ks < ksteps; ++ks) {
#pragma unroll
                    for (int kx = 0; kx < KS; ++kx) {
                        uint32_t a[R][4];
                        load(a, ks, kx);
                        mma(a, ks, kx);
                        wgmma_wait<0>();  // the fragments free for the next kx; this stage free after the last
                    }
                }
            }
        } else {
            for (int ks = 0; ks < ksteps; ++ks) {
                uint32_t a_base[MT], b_base[(NT + 1) / 2];
#pragma unroll
                for (int i = 0; i < MT; ++i) a_base[i] = halo_base + 2 * a_off[i] + ks * 32;
#pragma unroll
                for (int j = 0; j < (NT + 1) / 2; ++j) b_base[j] = w_base + 2 * b_off[j] + ks * KS * KS * 32;
#pragma unroll
                for (int ky = 0; ky < KS; ++ky) {
#pragma unroll
                    for (int kx = 0; kx < KS; ++kx) {
                        const uint32_t a_tap = ky * row_bytes + kx * as_bytes;
                        const int b_imm = (ky * KS + kx) * 32;  // the tap's 16 channels in the weight row
                        uint32_t a[MT][4];
#pragma unroll
                        for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], a_base[i] + a_tap);
                        uint32_t b[NT][2];
#pragma unroll
                        for (int j = 0; j < NT / 2; ++j) {
                            uint32_t r[4];
                            ldmatrix_x4(r, b_base[j] + b_imm);
                            b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
                        }
                        if constexpr (NT % 2) ldmatrix_x2(b[NT - 1][0], b[NT - 1][1], b_base[NT / 2] + b_imm);
#pragma unroll
                        for (int i = 0; i < MT; ++i)
#pragma unroll
                            for (int j = 0; j < NT; ++j) TypeOps<T>::mma(acc[i][j], a[i], b[j][0], b[j][1]);
                    }
                }
            }
        }

        if (chunk == p.nchunks - 1) {
            const int tile = blockIdx.x + (item / p.nchunks) * gridDim.x;
            epilogue<Cfg, T>(p, acc, bias_r, tile_coord<Cfg>(p, tile), wm0, co0 + wn0);
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
        }
    }
}

// ---- The first layer: fp32 NCHW input of at most 3 channels, 3x3.
// The main kernel would run 9 taps x a 16-channel k step of which 3 channels
// are real. Here the 9 x Cin (tap, channel) pairs fold into the K dimension
// of an im2col tile in shared memory (BM pixels x kFoldK, k = tap * Cin + c,
// zeros past 9 * Cin): 2 k steps instead of 9. The fp32 halo is staged raw
// by 4-byte cp.async (zero-fill for the zero border), STAGES deep, so the next
// tile's loads are in flight while this one is multiplied (the main kernel's
// NCHW loader waits for its loads); each thread then builds whole im2col rows
// from the raw halo. The weights, gathered into the same k order, stay
// resident. Used by every 3x3 row for such inputs (see launch).
constexpr int kFoldK = 32;               // folded K: 9 taps x Cin <= 3, padded to two k16 steps
constexpr int kFoldStride = kFoldK + 8;  // halves per im2col / weight row (80 bytes: conflict-free ldmatrix)
// The output tile staged for coalesced stores: BN channels + 8 halves per pixel.
template <class Cfg>
constexpr int kFoldOutStride = Cfg::BN + 8;

// The common first-layer epilogue (NHWC out, no residual, a whole tile in the
// image, all BN channels real): bias and ReLU into the shared output tile,
// then whole 16-byte groups to global memory, consecutive threads on
// consecutive addresses (a pixel's BN channels are one run; the tile row one
// run when BN is the channel stride). The direct epilogue's 4-byte stores
// fill 16 bytes of 8 pixels each.
template <class Cfg, class T>
__device__ __forceinline__ void fold_store_staged(const KernelParams& p, const float (&acc)[Cfg::MT][Cfg::NT][4],
                                                  const float (&bias_r)[Cfg::NT][2], TileCoord t, int wm0, int wn0,
                                                  int co0, T* outs) {
    using Ops = TypeOps<T>;
    using T2 = typename Ops::T2;
    constexpr int OS = kFoldOutStride<Cfg>;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < Cfg::MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            T* row = outs + (wm0 + i * 16 + (lane >> 2) + h * 8) * OS + wn0 + (lane & 3) * 2;
#pragma unroll
            for (int j = 0; j < Cfg::NT; ++j) {
                float v0 = acc[i][j][2 * h] + bias_r[j][0], v1 = acc[i][j][2 * h + 1] + bias_r[j][1];
                if (p.relu) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
                *reinterpret_cast<T2*>(row + j * 8) = Ops::pair(v0, v1);
            }
        }
    __syncthreads();
    constexpr int G = Cfg::BN / 8;  // 16-byte groups per pixel
    T* out = static_cast<T*>(p.out) + (size_t(t.n) * p.ho + t.y0) * p.wo * p.cs_out + size_t(t.x0) * p.cs_out + co0;
    for (int idx = threadIdx.x; idx < Cfg::BM * G; idx += Cfg::THREADS) {
        const int m = idx / G, g = idx - m * G;
        const int py = m / Cfg::TW;
        *reinterpret_cast<uint4*>(out + (size_t(py) * p.wo + (m - py * Cfg::TW)) * p.cs_out + g * 8) =
            *reinterpret_cast<const uint4*>(outs + m * OS + g * 8);
    }
}

// The im2col rows of one tile from its raw fp32 halo (CIN planes of HP floats).
template <class Cfg, class T, int CIN>
__device__ __forceinline__ void fold_im2col(const float* raw, T* col) {
    using T2 = typename TypeOps<T>::T2;
    for (int m = threadIdx.x; m < Cfg::BM; m += Cfg::THREADS) {
        const int py = m / Cfg::TW;
        const float* r = raw + py * Cfg::HW + (m - py * Cfg::TW);
        uint32_t pk[kFoldK / 2];
#pragma unroll
        for (int k2 = 0; k2 < kFoldK / 2; ++k2) {
            float v[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int k = 2 * k2 + e, tap = k / CIN, c = k % CIN;
                v[e] = k < 9 * CIN ? r[c * Cfg::HP + (tap / 3) * Cfg::HW + tap % 3] : 0.f;
            }
            const T2 h = TypeOps<T>::pair(v[0], v[1]);
            pk[k2] = reinterpret_cast<const uint32_t&>(h);
        }
        uint4* dst = reinterpret_cast<uint4*>(col + m * kFoldStride);
#pragma unroll
        for (int q = 0; q < kFoldK / 8; ++q)
            dst[q] = make_uint4(pk[4 * q], pk[4 * q + 1], pk[4 * q + 2], pk[4 * q + 3]);
    }
}

template <class Cfg, class T>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) conv2d_tc_fold_kernel(const KernelParams p) {
    static_assert(Cfg::KS == 3, "the fold is for 3x3");
    constexpr int MT = Cfg::MT, NT = Cfg::NT;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* wt = reinterpret_cast<T*>(smem_raw);                                       // BN x kFoldStride
    T* col = wt + Cfg::BN * kFoldStride;                                          // BM x kFoldStride
    T* outs = col + Cfg::BM * kFoldStride;                                        // BM x kFoldOutStride<Cfg>
    float* raw = reinterpret_cast<float*>(outs + Cfg::BM * kFoldOutStride<Cfg>);  // STAGES x cin x HP

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm0 = (warp % Cfg::WARPS_M) * MT * 16;
    const int wn0 = (warp / Cfg::WARPS_M) * NT * 8;
    const int co0 = blockIdx.y * Cfg::BN;
    const int my_tiles = p.tiles > int(blockIdx.x) ? (p.tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    if (my_tiles == 0) return;

    const int raw_elems = p.cin * Cfg::HP;
    const size_t plane = size_t(p.h) * p.w;
    const bool staged_ok = !p.out_nchw && !p.residual && !p.gate && co0 + Cfg::BN <= p.cout;
    auto issue = [&](int j) {  // the raw halo of the block's j-th tile
        const TileCoord t = tile_coord<Cfg>(p, blockIdx.x + j * gridDim.x);
        const float* in = static_cast<const float*>(p.in) + size_t(t.n) * p.cin * plane;
        const uint32_t base = smem_addr(raw + (j % Cfg::STAGES) * raw_elems);
        const int iy0 = t.y0 - p.pad_before, ix0 = t.x0 - p.pad_before;
        if (iy0 >= 0 && ix0 >= 0 && iy0 + Cfg::HH <= p.h && ix0 + Cfg::HW <= p.w) {  // interior: no mapping
            const float* corner = in + size_t(iy0) * p.w + ix0;
            for (int idx = threadIdx.x; idx < raw_elems; idx += Cfg::THREADS) {
                const int c = idx / Cfg::HP, pix = idx - c * Cfg::HP;
                const int hy = pix / Cfg::HW;
                cp_async4(base + 4 * idx, corner + c * plane + size_t(hy) * p.w + (pix - hy * Cfg::HW), true);
            }
            return;
        }
        for (int idx = threadIdx.x; idx < raw_elems; idx += Cfg::THREADS) {
            const int c = idx / Cfg::HP, pix = idx - c * Cfg::HP;
            const int hy = pix / Cfg::HW;
            int iy = iy0 + hy, ix = ix0 + (pix - hy * Cfg::HW);
            const bool ok = map_coord(iy, p.h, p.pad_before, p.pad_after, p.pad) &&
                            map_coord(ix, p.w, p.pad_before, p.pad_after, p.pad);
            cp_async4(base + 4 * idx, ok ? in + c * plane + size_t(iy) * p.w + ix : in, ok);
        }
    };
#pragma unroll
    for (int s = 0; s < Cfg::STAGES - 1; ++s) {
        if (s < my_tiles) issue(s);
        cp_async_commit();
    }
    // The weights in the folded k order, once (read after the loop's first barrier).
    const T* w = static_cast<const T*>(p.weight);
    for (int i = threadIdx.x; i < Cfg::BN * kFoldK; i += Cfg::THREADS) {
        const int co = i / kFoldK, k = i - co * kFoldK;
        const int tap = k / p.cin, c = k - tap * p.cin;
        wt[co * kFoldStride + k] = k < 9 * p.cin && co0 + co < p.cout8
                                       ? w[size_t(co0 + co) * 9 * p.cin16 + tap * 16 + c]
                                       : TypeOps<T>::from_float(0.f);
    }
    float bias_r[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int co = co0 + wn0 + j * 8 + (lane & 3) * 2 + e;
            bias_r[j][e] = p.bias && co < p.cout ? __ldg(p.bias + (p.gate ? tc_gate_channel(co, p.cout) : co)) : 0.f;
        }
    // ldmatrix rows as in the main kernel, A's rows being im2col rows.
    uint32_t a_addr[MT], b_addr[(NT + 1) / 2];
#pragma unroll
    for (int i = 0; i < MT; ++i)
        a_addr[i] = smem_addr(col + (wm0 + i * 16 + (lane & 15)) * kFoldStride + (lane >> 4) * 8);
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)
        b_addr[j] =
            smem_addr(wt + (wn0 + j * 16 + (lane & 7) + ((lane >> 4) << 3)) * kFoldStride + ((lane >> 3) & 1) * 8);
    if constexpr (NT % 2)
        b_addr[NT / 2] = smem_addr(wt + (wn0 + (NT - 1) * 8 + (lane & 7)) * kFoldStride + ((lane >> 3) & 1) * 8);

    for (int j = 0; j < my_tiles; ++j) {
        cp_async_wait<Cfg::STAGES - 2>();
        __syncthreads();  // everyone's raw halo landed; the im2col tile is free (last tile's mma done)
        if (j + Cfg::STAGES - 1 < my_tiles) issue(j + Cfg::STAGES - 1);
        cp_async_commit();
        const float* r = raw + (j % Cfg::STAGES) * raw_elems;
        if (p.cin == 3)
            fold_im2col<Cfg, T, 3>(r, col);
        else if (p.cin == 2)
            fold_im2col<Cfg, T, 2>(r, col);
        else
            fold_im2col<Cfg, T, 1>(r, col);
        __syncthreads();

        float acc[MT][NT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int jn = 0; jn < NT; ++jn)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][jn][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kFoldK / 16; ++ks) {
            uint32_t a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], a_addr[i] + ks * 32);
#pragma unroll
            for (int jn = 0; jn < NT / 2; ++jn) {
                uint32_t q[4];
                ldmatrix_x4(q, b_addr[jn] + ks * 32);
                b[2 * jn][0] = q[0], b[2 * jn][1] = q[1], b[2 * jn + 1][0] = q[2], b[2 * jn + 1][1] = q[3];
            }
            if constexpr (NT % 2) ldmatrix_x2(b[NT - 1][0], b[NT - 1][1], b_addr[NT / 2] + ks * 32);
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int jn = 0; jn < NT; ++jn) TypeOps<T>::mma(acc[i][jn], a[i], b[jn][0], b[jn][1]);
        }
        const TileCoord t = tile_coord<Cfg>(p, blockIdx.x + j * gridDim.x);
        if (staged_ok && t.y0 + Cfg::TH <= p.ho && t.x0 + Cfg::TW <= p.wo)  // block-uniform
            fold_store_staged<Cfg, T>(p, acc, bias_r, t, wm0, wn0, co0, outs);
        else
            epilogue<Cfg, T>(p, acc, bias_r, t, wm0, co0 + wn0);
    }
}

// ---- Narrow outputs (Cout <= 3: a network's last layer, 48 -> 3).
// In the main kernel each of the 9 taps re-reads the whole halo tile by
// ldmatrix for one n8 tile of which 3 channels are real: the A-fragment
// traffic of a 48 -> 48 layer for 1/16 of its useful work. Here the GEMM
// runs over the halo pixels instead: P = halo (HP x Cin) * W (Cin x 27), the
// 27 columns being (tap, output channel) pairs, so every input value is read
// by ldmatrix once; an output is then the sum of 9 shifted entries of P,
//   out(y, x, j) = sum over (ky, kx) of P[(y + ky) * HW + x + kx][(ky*3 + kx) * 3 + j],
// summed in fp32 on CUDA cores with one thread per output pixel, whose fp32
// NCHW stores and residual loads are then coalesced along the rows.
// A block computes 3 output channels; wider Cout takes more blocks (grid.y),
// so this row runs every 3x3 case (slowly when Cout is large).
struct TapsCfg {
    static constexpr int THREADS = 256, WARPS = 8, STAGES = 2;
    static constexpr int HH = 16, HW = 16, HP = HH * HW;  // halo tile: 256 pixels, 16 m16 tiles
    static constexpr int TH = HH - 2, TW = HW - 2;        // output tile 14 x 14
    static constexpr int MT = HP / 16 / WARPS;            // m16 tiles of halo pixels per warp: 2
    static constexpr int G = 3;                           // output channels per block
    static constexpr int NCOL = 9 * G;                    // columns of P: 27, padded to 4 n8 tiles
    static constexpr int NT = 4;
    static constexpr int PS = HP + 4;  // floats per column of P (stride 4 banks: the accumulator stores hit 32 banks)
};

template <class T>
__global__ void __launch_bounds__(TapsCfg::THREADS, 2) conv2d_tc_taps_kernel(const KernelParams p) {
    using Cfg = TapsCfg;
    using Ops = TypeOps<T>;
    constexpr int MT = Cfg::MT, NT = Cfg::NT;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* wt = reinterpret_cast<T*>(smem_raw);                        // NT*8 rows of ws halves, all of Cin
    float* part = reinterpret_cast<float*>(wt + NT * 8 * p.ws);    // P: NCOL columns of PS floats
    T* stages = reinterpret_cast<T*>(part + Cfg::NCOL * Cfg::PS);  // STAGES x HP x as

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int co0 = blockIdx.y * Cfg::G;
    const int halo_elems = Cfg::HP * p.as;
    const int my_tiles = p.tiles > int(blockIdx.x) ? (p.tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const int items = my_tiles * p.nchunks;
    if (items == 0) return;

    Walk halo_walk;
    halo_walk.init(p.ck / 8, Cfg::THREADS);
    auto issue = [&](int item) {
        const int tile = blockIdx.x + (item / p.nchunks) * gridDim.x;
        load_halo<Cfg, T>(p, stages + (item % Cfg::STAGES) * halo_elems, tile_coord<Cfg>(p, tile),
                          (item % p.nchunks) * p.ck, halo_walk);
    };
    if (p.in_nchw) {  // channels past cin must read as zeros: the NCHW loader writes only the others
        for (int i = threadIdx.x; i < Cfg::STAGES * halo_elems / 8; i += Cfg::THREADS)
            reinterpret_cast<uint4*>(stages)[i] = make_uint4(0, 0, 0, 0);
        __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < Cfg::STAGES - 1; ++s) {
        if (s < items) issue(s);
        cp_async_commit();
    }
    // W's columns: n = tap * 3 + j is output channel co0 + j at that tap
    // (packed [cout8][cin16/16][9][16]); columns past 27 and channels past
    // cout8 are zeros. Once, resident (read after the loop's first barrier).
    const T* w = static_cast<const T*>(p.weight);
    for (int i = threadIdx.x; i < NT * 8 * p.cin16; i += Cfg::THREADS) {
        const int n = i / p.cin16, c = i - n * p.cin16;
        const int tap = n / Cfg::G, co = co0 + n - tap * Cfg::G;
        wt[n * p.ws + c] = n < Cfg::NCOL && co < p.cout8
                               ? w[(size_t(co) * (p.cin16 / 16) + c / 16) * 144 + tap * 16 + c % 16]
                               : Ops::from_float(0.f);
    }
    float bias_r[Cfg::G];
#pragma unroll
    for (int j = 0; j < Cfg::G; ++j) bias_r[j] = p.bias && co0 + j < p.cout ? __ldg(p.bias + co0 + j) : 0.f;

    int a_off[MT], b_off[NT / 2];  // halves
#pragma unroll
    for (int i = 0; i < MT; ++i) a_off[i] = ((warp * MT + i) * 16 + (lane & 15)) * p.as + (lane >> 4) * 8;
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)
        b_off[j] = (j * 16 + (lane & 7) + ((lane >> 4) << 3)) * p.ws + ((lane >> 3) & 1) * 8;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    for (int item = 0; item < items; ++item) {
        cp_async_wait<Cfg::STAGES - 2>();
        __syncthreads();  // everyone's copies landed; the stage and P read last item are free
        if (item + Cfg::STAGES - 1 < items) issue(item + Cfg::STAGES - 1);
        cp_async_commit();

        const int chunk = item % p.nchunks, c0 = chunk * p.ck;
        const uint32_t halo_base = smem_addr(stages + (item % Cfg::STAGES) * halo_elems);
        const uint32_t w_base = smem_addr(wt) + 2 * c0;
        const int ksteps = min(p.ck, p.cin16 - c0) / 16;
        for (int ks = 0; ks < ksteps; ++ks) {
            uint32_t a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], halo_base + 2 * a_off[i] + ks * 32);
#pragma unroll
            for (int j = 0; j < NT / 2; ++j) {
                uint32_t q[4];
                ldmatrix_x4(q, w_base + 2 * b_off[j] + ks * 32);
                b[2 * j][0] = q[0], b[2 * j][1] = q[1], b[2 * j + 1][0] = q[2], b[2 * j + 1][1] = q[3];
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) Ops::mma(acc[i][j], a[i], b[j][0], b[j][1]);
        }
        if (chunk != p.nchunks - 1) continue;  // P is formed once per tile, after its last chunk

#pragma unroll
        for (int i = 0; i < MT; ++i)  // P to shared memory (column-major), the accumulators reset
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int n = j * 8 + (lane & 3) * 2 + (e & 1);
                    const int px = (warp * MT + i) * 16 + (lane >> 2) + (e >> 1) * 8;
                    if (n < Cfg::NCOL) part[n * Cfg::PS + px] = acc[i][j][e];
                    acc[i][j][e] = 0.f;
                }
        __syncthreads();

        // One thread per output pixel: its residual loads first (their latency
        // overlaps the sums), the 9 shifted entries of P per channel, bias,
        // ReLU, residual, store.
        const TileCoord t = tile_coord<Cfg>(p, blockIdx.x + (item / p.nchunks) * gridDim.x);
        for (int m = threadIdx.x; m < Cfg::TH * Cfg::TW; m += Cfg::THREADS) {
            const int py = m / Cfg::TW, px = m - py * Cfg::TW;
            const int oy = t.y0 + py, ox = t.x0 + px;
            if (oy >= p.ho || ox >= p.wo) continue;
            const size_t plane = size_t(p.ho) * p.wo;
            const size_t pix = (size_t(t.n) * p.ho + oy) * p.wo + ox;  // NHWC pixel index
            const size_t nchw0 = size_t(t.n) * p.cout * plane + size_t(oy) * p.wo + ox;
            float r[Cfg::G] = {0.f, 0.f, 0.f};
            if (p.residual) {
#pragma unroll
                for (int j = 0; j < Cfg::G; ++j) {
                    const int co = co0 + j;
                    if (co >= p.cout) break;
                    r[j] = p.out_nchw ? __ldg(static_cast<const float*>(p.residual) + nchw0 + co * plane)
                                      : float(static_cast<const T*>(p.residual)[pix * p.cs_out + co]);
                }
            }
            float v[Cfg::G];
            const float* q = part + py * Cfg::HW + px;
#pragma unroll
            for (int j = 0; j < Cfg::G; ++j) {
                float s = bias_r[j];
#pragma unroll
                for (int tap = 0; tap < 9; ++tap) s += q[(tap * Cfg::G + j) * Cfg::PS + (tap / 3) * Cfg::HW + tap % 3];
                if (p.relu) s = fmaxf(s, 0.f);
                v[j] = p.residual ? with_residual(p, s, r[j]) : s;
            }
            if (p.out_nchw) {
                float* out = static_cast<float*>(p.out) + nchw0;
#pragma unroll
                for (int j = 0; j < Cfg::G; ++j)
                    if (co0 + j < p.cout) out[(co0 + j) * plane] = v[j];
            } else {
                T* out = static_cast<T*>(p.out) + pix * p.cs_out;
#pragma unroll
                for (int j = 0; j < Cfg::G; ++j)
                    if (co0 + j < p.cout) out[co0 + j] = Ops::from_float(v[j]);
                if (blockIdx.y == gridDim.y - 1)  // the stride's padded channels: zeros
                    for (int co = p.cout; co < p.cs_out; ++co) out[co] = Ops::from_float(0.f);
            }
        }
    }
}

// ---- weight packing: fp32 [cout][cin][k][k] -> T [cout8][cin16/16][k*k][16]
template <class T>
__global__ void pack_weights_kernel(const float* w, int cout, int cin, int k, int gate, T* out) {
    const int cout8 = (cout + 7) / 8 * 8, cin16 = (cin + 15) / 16 * 16, kk = k * k;
    const size_t total = size_t(cout8) * kk * cin16;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int tap = int(i / 16 % kk);
        const int ci = int(i / (16 * kk) % (cin16 / 16)) * 16 + int(i % 16);
        const int column = int(i / (size_t(cin16) * kk));
        const int co = gate ? tc_gate_channel(column, cout) : column;
        const float v = co < cout && ci < cin ? w[(size_t(co) * cin + ci) * kk + tap] : 0.f;
        out[i] = TypeOps<T>::from_float(v);
    }
}

void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string("tensor-core conv2d: ") + what + ": " + cudaGetErrorString(e));
}

[[noreturn]] void bad(const std::string& what) {
    throw std::invalid_argument("tensor-core conv2d: " + what);
}

void check_params(const TcConvParams& p) {
    const std::string shape = "input [" + std::to_string(p.n) + ", " + std::to_string(p.in_channels) + ", " +
                              std::to_string(p.h) + ", " + std::to_string(p.w) + "], " + std::to_string(p.in_channels) +
                              " -> " + std::to_string(p.out_channels) + ", kernel " + std::to_string(p.kernel);
    if (p.n <= 0 || p.h <= 0 || p.w <= 0) bad("non-positive size: " + shape);
    if (p.in_channels < 1 || p.in_channels > 1024 || p.out_channels < 1 || p.out_channels > 1024)
        bad("channels outside 1..1024: " + shape);
    if (p.kernel != 1 && p.kernel != 3) bad("kernel must be 1 or 3: " + shape);
    if (p.pad_before < 0 || p.pad_after < 0) bad("negative padding: " + shape);
    if (p.out_h() <= 0 || p.out_w() <= 0) bad("kernel larger than the padded image: " + shape);
    if (p.pad == TcPad::Reflect && (p.pad_before >= std::min(p.h, p.w) || p.pad_after >= std::min(p.h, p.w)))
        bad("reflect padding must be smaller than the image: " + shape);
    if (!p.input || !p.output || !p.weights) bad("null input, output or weights: " + shape);
    if (p.output == p.input || (p.residual && p.output == p.residual))
        bad("output aliases input or residual: " + shape);
    if (p.gate &&
        (p.kernel != 1 || p.out_channels % 16 != 0 || p.relu || p.residual || p.output_layout != TcLayout::NhwcHalf))
        bad("the gate is for 1x1 convolutions of a multiple of 16 channels, NHWC output, no ReLU or residual: " +
            shape);
    if (size_t(p.n) * p.h * p.w * tc_channel_stride(std::max(p.in_channels, p.out_channels)) >= (size_t(1) << 40) ||
        size_t(p.h + p.pad_before + p.pad_after) * (p.w + p.pad_before + p.pad_after) >= (size_t(1) << 31))
        bad("tensor too large: " + shape);  // the kernels index pixels within an image in 32 bits
}

// The build has sm_90a code and the environment does not turn the wgmma
// rows off: IMRESTORE_WGMMA=1 / 0 picks the wgmma / the mma.sync rows (an
// A/B of a whole model from one build; forced rows are unaffected), any
// other value or none the build's default. Read once; no CUDA call, so a
// build without sm_90a never asks the device.
bool wgmma_wanted();

#if defined(IMR_BUILD_SM90A)
constexpr bool kBuildHasSm90a = true;  // CMakeLists.txt: the CUDA architectures name 90a
#else
constexpr bool kBuildHasSm90a = false;
#endif

// The current device's compute capability x 10 (p.arch where the caller knows it).
int device_arch(const TcConvParams& p) {
    if (p.arch > 0) return p.arch;
    int dev = 0, major = 0, minor = 0;
    check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "compute capability");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "compute capability");
    return major * 10 + minor;
}

struct DeviceInfo {
    int sms = 0;
    int smem_optin = 0;
};
DeviceInfo device_info(const TcConvParams& a) {
    if (a.sm_count > 0 && a.smem_optin > 0) return {a.sm_count, a.smem_optin};
    int dev = 0;
    check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    DeviceInfo d;
    check_cuda(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    check_cuda(cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "smem limit");
    return d;
}

// Shared bytes of a configuration for chunks of ck channels.
template <class Cfg>
size_t smem_bytes(int ck, bool resident) {
    // as the kernel lays them out (wgmma: weights unpadded, halo 128-byte aligned)
    const size_t halo = Cfg::WGMMA ? (size_t(Cfg::HP) * (ck + 8) + 63) / 64 * 128 : size_t(Cfg::HP) * (ck + 8) * 2;
    const size_t wts = size_t(Cfg::BN) * (Cfg::KS * Cfg::KS * ck + (Cfg::WGMMA ? 0 : 8)) * 2;
    return resident ? wts + Cfg::STAGES * halo : Cfg::STAGES * (halo + wts);
}

// The launch parameters every kernel shares (chunking and tiling left to the caller).
KernelParams base_params(const TcConvParams& a) {
    KernelParams p{};
    p.in = a.input, p.out = a.output, p.weight = a.weights, p.bias = a.bias, p.residual = a.residual;
    p.n = a.n, p.h = a.h, p.w = a.w, p.cin = a.in_channels;
    p.cs_in = tc_channel_stride(a.in_channels), p.cin16 = (a.in_channels + 15) / 16 * 16;
    p.cout = a.out_channels, p.cout8 = tc_channel_stride(a.out_channels), p.cs_out = p.cout8;
    p.ho = a.out_h(), p.wo = a.out_w();
    p.pad_before = a.pad_before, p.pad_after = a.pad_after, p.pad = int(a.pad);
    p.in_nchw = a.input_layout == TcLayout::NchwF32, p.out_nchw = a.output_layout == TcLayout::NchwF32;
    p.relu = a.relu, p.res_mul = a.residual_multiplies, p.gate = a.gate;
    if (a.gate) p.cs_out = tc_channel_stride(a.out_channels / 2);
    return p;
}

void set_tiles(KernelParams& p, int th, int tw) {
    p.tiles_x = (p.wo + tw - 1) / tw, p.tiles_y = (p.ho + th - 1) / th;
    const size_t tiles = size_t(p.n) * p.tiles_x * p.tiles_y;
    if (tiles > size_t(INT32_MAX)) bad("too many tiles");
    p.tiles = int(tiles);
}

// Launches Kernel persistent: as many blocks of `threads` as fit on the SMs
// (at most one per tile), shared among ny channel groups (grid.y). The
// kernel's shared-memory limit (a per-device setting) is raised only, under
// a lock: two streams must not lower each other's limit. The blocks per SM
// are asked of the driver once per device, block size and shared memory,
// not per call.
template <void (*Kernel)(KernelParams)>
void launch_persistent(const KernelParams& p, const DeviceInfo& dev, int threads, size_t smem, int ny,
                       cudaStream_t stream) {
    if (smem > size_t(dev.smem_optin)) bad("configuration needs more shared memory than a block may have");
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    int per_sm = 0;
    {
        static std::mutex m;
        static std::map<int, size_t> raised;                           // device -> limit set
        static std::map<std::tuple<int, int, size_t>, int> occupancy;  // (device, threads, smem) -> blocks per SM
        std::lock_guard<std::mutex> lock(m);
        if (smem > raised[device]) {
            check_cuda(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                       "raise the shared-memory limit");
            raised[device] = smem;
        }
        const auto key = std::make_tuple(device, threads, smem);
        if (const auto it = occupancy.find(key); it != occupancy.end()) {
            per_sm = it->second;
        } else {
            check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads, smem), "occupancy");
            occupancy[key] = per_sm;
        }
    }
    if (per_sm < 1) bad("configuration does not fit an SM");
    const int gx = int(std::min<size_t>(p.tiles, std::max(1, dev.sms * per_sm / ny)));
    Kernel<<<dim3(gx, ny), threads, smem, stream>>>(p);
    check_cuda(cudaGetLastError(), "launch");
}

template <class Cfg, class T>
void launch(const TcConvParams& a, cudaStream_t stream) {
    // The gate pairs each warp's n8 tiles two by two (every 1x1 row has an even NT).
    if (a.gate && Cfg::NT % 2 != 0) bad("the gate needs an even number of n8 tiles a warp");
    KernelParams p = base_params(a);
    const DeviceInfo dev = device_info(a);
    set_tiles(p, Cfg::TH, Cfg::TW);
    const int ny = (p.cout8 + Cfg::BN - 1) / Cfg::BN;
    if constexpr (Cfg::KS == 3) {
        if (p.in_nchw && p.cin * 9 <= kFoldK) {  // a first layer: the folded kernel
            p.ck = p.cin16, p.nchunks = 1, p.resident = 1;
            const size_t smem = (size_t(Cfg::BN + Cfg::BM) * kFoldStride + size_t(Cfg::BM) * kFoldOutStride<Cfg>)*2 +
                                size_t(Cfg::STAGES) * p.cin * Cfg::HP * 4;
            launch_persistent<conv2d_tc_fold_kernel<Cfg, T>>(p, dev, Cfg::THREADS, smem, ny, stream);
            return;
        }
    }
    // Chunking: all of Cin with resident weights when it fits, else the
    // widest chunk of 64, 32 or 16 channels whose STAGES stages fit.
    const size_t optin = size_t(dev.smem_optin);
    size_t smem = 0;
    if (smem_bytes<Cfg>(p.cin16, true) <= optin) {
        p.ck = p.cin16, p.resident = 1, smem = smem_bytes<Cfg>(p.ck, true);
    } else {
        p.resident = 0;
        for (int ck : {64, 32, 16}) {
            if (ck <= p.cin16 && smem_bytes<Cfg>(ck, false) <= optin) {
                p.ck = ck, smem = smem_bytes<Cfg>(ck, false);
                break;
            }
        }
        if (!p.ck) bad("no chunk fits shared memory");
    }
    p.nchunks = (p.cin16 + p.ck - 1) / p.ck;
    if (p.in_nchw && p.nchunks != 1) bad("fp32 NCHW input takes at most " + std::to_string(p.ck) + " channels here");
    p.as = p.ck + 8, p.ws = Cfg::KS * Cfg::KS * p.ck + 8;
    launch_persistent<conv2d_tc_kernel<Cfg, T>>(p, dev, Cfg::THREADS, smem, ny, stream);
}

// The narrow-output kernel (TapsCfg): chunks of up to 64 input channels,
// all of the block's weights resident (32 rows x Cin: at most 66 KB).
template <class T>
void launch_taps(const TcConvParams& a, cudaStream_t stream) {
    if (a.kernel != 3) bad("the taps configuration is for 3x3");
    KernelParams p = base_params(a);
    set_tiles(p, TapsCfg::TH, TapsCfg::TW);
    p.ck = std::min(p.cin16, 64), p.resident = 1;
    p.nchunks = (p.cin16 + p.ck - 1) / p.ck;
    if (p.in_nchw && p.nchunks != 1) bad("fp32 NCHW input takes at most " + std::to_string(p.ck) + " channels here");
    p.as = p.ck + 8, p.ws = p.cin16 + 8;
    const size_t smem = size_t(TapsCfg::NT) * 8 * p.ws * 2 + size_t(TapsCfg::NCOL) * TapsCfg::PS * 4 +
                        size_t(TapsCfg::STAGES) * TapsCfg::HP * p.as * 2;
    launch_persistent<conv2d_tc_taps_kernel<T>>(p, device_info(a), TapsCfg::THREADS, smem,
                                                (p.cout + TapsCfg::G - 1) / TapsCfg::G, stream);
}

// The configuration table: tc_conv2d picks a row by kernel size and Cout
// (the first mma.sync row of its kernel size whose max_cout holds Cout;
// above 128 channels the 96-channel row where it pads less; then its wgmma
// twin where wgmma is picked: pick_config), or the row force_config names. Every row runs any case of its kernel size
// (more channel tiles when Cout > BN), so the tests run every case on every row.
struct ConfigRow {
    const char* name;
    int kernel;
    int max_cout;  // picked for Cout <= max_cout
    int bn;        // output channels per block
    bool wgmma;    // sm_90a only; picked instead of the mma.sync rows where it runs (tc_wgmma_runs)
    void (*run_f16)(const TcConvParams&, cudaStream_t);
    void (*run_bf16)(const TcConvParams&, cudaStream_t);
};
#define IMR_TC_ROW(NAME, CFG, MAX_COUT) \
    { NAME, CFG::KS, MAX_COUT, CFG::BN, CFG::WGMMA, launch<CFG, __half>, launch<CFG, __nv_bfloat16> }
const ConfigRow kConfigs[] = {
    {"k3_14x14_taps_n3", 3, 3, TapsCfg::G, false, launch_taps<__half>, launch_taps<__nv_bfloat16>},
    IMR_TC_ROW("k3_16x16_n8", K3N8, 8),
    IMR_TC_ROW("k3_16x16_n16", K3N16, 16),
    IMR_TC_ROW("k3_16x16_n32", K3N32, 32),
    IMR_TC_ROW("k3_16x16_n48", K3N48, 48),
    IMR_TC_ROW("k3_16x16_n64", K3N64, 64),
    IMR_TC_ROW("k3_16x16_n96", K3N96, 96),
    IMR_TC_ROW("k3_16x16_n128", K3N128, 1024),
    IMR_TC_ROW("k3_16x32_n48_wide_warps", K3N48Wide, 0),  // max_cout 0: never picked, tests and benchmarks only
    IMR_TC_ROW("k3_16x16_n8_w4", K3N8W4, 0),
    IMR_TC_ROW("k3_16x16_n96_w16", K3N96W16, 0),
    IMR_TC_ROW("k1_16x16_n32_2blk", K1N32B2, 32),
    IMR_TC_ROW("k1_8x16_n64_4blk", K1N64B4, 64),
    IMR_TC_ROW("k1_16x16_n96", K1N96, 96),
    IMR_TC_ROW("k1_8x16_n128_2blk", K1N128B2, 1024),
    IMR_TC_ROW("k1_16x32_n64", K1N64, 0),
    IMR_TC_ROW("k1_16x16_n128", K1N128, 0),
    IMR_TC_ROW("k1_16x16_n64_2blk", K1N64B2, 0),
    // Warpgroup MMA (sm_90a): where they are picked, pick_config takes the
    // twin (same kernel size and max_cout) of the mma.sync row it picked;
    // max_cout 0: tests and benchmarks only (the 1x1 rows measured slower).
    IMR_TC_ROW("k3_16x16_n48_wgmma", K3N48G, 48),
    IMR_TC_ROW("k3_16x16_n64_wgmma", K3N64G, 64),
    IMR_TC_ROW("k3_16x16_n96_wgmma", K3N96G, 96),
    IMR_TC_ROW("k3_16x16_n128_wgmma", K3N128G, 1024),
    IMR_TC_ROW("k3_16x16_n96_wgmma_wide", K3N96GW, 0),
    IMR_TC_ROW("k3_16x16_n128_wgmma_wide", K3N128GW, 0),
    IMR_TC_ROW("k3_16x16_n96_wgmma_slices", K3N96GS, 0),
    IMR_TC_ROW("k3_16x16_n128_wgmma_slices", K3N128GS, 0),
    IMR_TC_ROW("k1_16x16_n64_wgmma", K1N64G, 0),
    IMR_TC_ROW("k1_16x16_n96_wgmma", K1N96G, 0),
    IMR_TC_ROW("k1_16x16_n128_wgmma", K1N128G, 0),
    IMR_TC_ROW("k3_16x16_n48_wgmma_pipe", K3N48GP, 0),
    IMR_TC_ROW("k3_16x16_n64_wgmma_pipe", K3N64GP, 0),
    IMR_TC_ROW("k3_16x16_n96_wgmma_pipe", K3N96GP, 0),
    IMR_TC_ROW("k3_16x16_n128_wgmma_pipe", K3N128GP, 0),
    IMR_TC_ROW("k1_16x16_n96_wgmma_pipe", K1N96GP, 0),
    IMR_TC_ROW("k1_16x16_n128_wgmma_pipe", K1N128GP, 0),
};
#undef IMR_TC_ROW

const ConfigRow& pick_config(const TcConvParams& p) {
    if (p.force_config) {
        for (const ConfigRow& r : kConfigs)
            if (std::string(r.name) == p.force_config) {
                if (r.kernel != p.kernel) bad(std::string("configuration ") + r.name + " is for another kernel size");
                // kBuildHasSm90a first: no device query in a build without sm_90a code.
                if (r.wgmma && !(kBuildHasSm90a && tc_wgmma_runs(device_arch(p))))
                    bad(std::string("configuration ") + r.name + " needs an sm_90 GPU and a build with sm_90a code");
                return r;
            }
        bad(std::string("no configuration named ") + p.force_config);
    }
    // The first mma.sync row of the kernel size that holds Cout (above 128
    // channels the 96-channel row where it pads less), then, where wgmma is
    // picked, its wgmma twin (the wgmma row of the same kernel size and
    // max_cout) if it has one (3x3 of Cout > 32 only).
    const ConfigRow* picked = nullptr;
    for (const ConfigRow& r : kConfigs)
        if (!r.wgmma && r.kernel == p.kernel && p.out_channels <= r.max_cout) {
            picked = &r;
            break;
        }
    if (!picked) bad("no configuration for this shape");
    // Above 128 channels, blocks of 96 where they pad less than blocks of 128
    // (192: two of 96 against two of 128, a quarter of whose mma is padding).
    const auto padded = [&](int bn) { return (p.out_channels + bn - 1) / bn * bn; };
    if (p.out_channels > 128 && padded(96) < padded(128))
        for (const ConfigRow& r : kConfigs)
            if (!r.wgmma && r.kernel == p.kernel && r.bn == 96 && r.max_cout > 0) {
                picked = &r;
                break;
            }
    if (wgmma_wanted() && tc_wgmma_runs(device_arch(p)))
        for (const ConfigRow& r : kConfigs)
            if (r.wgmma && r.kernel == picked->kernel && r.max_cout == picked->max_cout) return r;
    return *picked;
}

bool wgmma_wanted() {
    // Whether the planner takes the wgmma rows where they run when the
    // environment does not say: on since they passed the GPU tests and measured
    // faster (2026-12-03, docs/performance.md).
    constexpr bool kWgmmaPickedByDefault = true;
    if (!kBuildHasSm90a) return false;
    static const bool on = [] {
        const char* v = std::getenv("IMRESTORE_WGMMA");
        const std::string s = v ? v : "";
        return s == "1" ? true : s == "0" ? false : kWgmmaPickedByDefault;
    }();
    return on;
}

}  // namespace

bool tc_wgmma_runs(int arch) {
    // wgmma exists on sm_90 alone (neither Ampere nor Blackwell has it), and
    // only in sm_90a machine code, which the build has when its CUDA
    // architectures name 90a (CMakeLists.txt defines IMR_BUILD_SM90A then;
    // the driver then loads that code on an sm_90 GPU, not the PTX).
    return kBuildHasSm90a && arch == 90;
}

bool tc_wgmma_picked(int arch) {
    return wgmma_wanted() && tc_wgmma_runs(arch);
}

size_t tc_conv_weights_bytes(int out_channels, int in_channels, int kernel) {
    return size_t(tc_channel_stride(out_channels)) * kernel * kernel * ((in_channels + 15) / 16 * 16) * 2;
}

void tc_conv_prepare_weights(const float* weights_f32, int out_channels, int in_channels, int kernel, TcDType dtype,
                             void* packed, cudaStream_t stream, bool gate) {
    if (!weights_f32 || !packed || out_channels < 1 || in_channels < 1 || (kernel != 1 && kernel != 3))
        bad("prepare_weights: bad shape or null pointer");
    if (gate && out_channels % 16 != 0) bad("prepare_weights: the gate's channels must be a multiple of 16");
    const size_t total = tc_conv_weights_bytes(out_channels, in_channels, kernel) / 2;
    const int blocks = int(std::min<size_t>((total + 255) / 256, 4096));
    if (dtype == TcDType::F16)
        pack_weights_kernel<__half><<<blocks, 256, 0, stream>>>(weights_f32, out_channels, in_channels, kernel, gate,
                                                                static_cast<__half*>(packed));
    else
        pack_weights_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>(weights_f32, out_channels, in_channels, kernel,
                                                                       gate, static_cast<__nv_bfloat16*>(packed));
    check_cuda(cudaGetLastError(), "prepare_weights launch");
}

void tc_conv2d(const TcConvParams& p, cudaStream_t stream) {
    check_params(p);
    const ConfigRow& row = pick_config(p);
    (p.dtype == TcDType::F16 ? row.run_f16 : row.run_bf16)(p, stream);
}

const char* tc_conv2d_config_name(const TcConvParams& p) {
    return pick_config(p).name;
}

int tc_conv2d_config_count() {
    return int(sizeof kConfigs / sizeof kConfigs[0]);
}
const char* tc_conv2d_config_name_at(int i) {
    return kConfigs[i].name;
}
int tc_conv2d_config_kernel_at(int i) {
    return kConfigs[i].kernel;
}

}  // namespace imr::cuda::tc
