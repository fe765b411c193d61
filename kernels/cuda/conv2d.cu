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
// Each block computes a BM x BN output tile with 256 threads in a 16 x 16
// grid, each thread a TM x TN register block (8 x 8 for the big tile: per
// step of the reduction 16 shared-memory floats feed 64 FFMAs). The
// reduction runs in steps of BK = 8 through two shared-memory buffers: while
// the FFMAs consume one buffer, the next tile is fetched into registers and
// stored into the other, one barrier per step. Tiles too large for the
// problem waste the machine, so smaller shapes get smaller tiles, and a
// reduction too long for a grid of only ~1.5 waves is split over two blocks
// (atomic add of exactly two partial sums onto zero: the result does not
// depend on their order, so it stays deterministic).
#include "conv2d.cuh"

#include <algorithm>
#include <climits>
#include <string>

#include "common.cuh"

namespace imr::cuda {
namespace {

// ---- kernel configuration (chosen for H200 / sm_90)
constexpr int CV_THREADS = 256;  // 16 x 16 thread grid; 8 warps
constexpr int CV_BK = 8;         // reduction step: 8 rows of A and B per barrier (32 threads per B row)
constexpr int CV_PAD = 4;        // smem row padding (floats): conflict-free transposed A stores, 16-byte rows
constexpr int CV_MIN_BLOCKS = 2; // blocks per SM the launch bounds ask for (<= 128 registers per thread)
constexpr int CV_SPLIT_MIN_K = 1024;  // split the reduction only when each half still has >= 64 steps

struct ConvParams {
    const float* in;
    const float* weight;
    const float* bias;
    float* out;
    int cin, h, w, cout, k, pad_before;
    int ho, wo, howo, npix;  // output plane and N of the GEMM
    int kdim, kk, hw, cin_hw, cout_howo;
    int k_chunk;  // reduction length per block (a multiple of CV_BK)
    int atomic;   // split reduction: atomicAdd into a zeroed output
    FastDiv div_kk, div_k;
};

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
    for (int c = tid; c < BN; c += CV_THREADS) {
        const int pidx = n0 + c;
        if (pidx < p.npix) {
            const int img = pidx / p.howo, pix = pidx - img * p.howo, oy = pix / p.wo;
            s_col[c] = make_int4(img * p.cin_hw, oy - p.pad_before, pix - oy * p.wo - p.pad_before, 0);
        } else {
            s_col[c] = make_int4(-1, 0, 0, 0);
        }
    }
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

    // Epilogue: output[img][m][pix] = acc (+ bias, added by the first split only).
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
            const float v = acc[i][j] + bv;
            if (p.atomic)
                atomicAdd(out_m + out_off[j], v);
            else
                out_m[out_off[j]] = v;
        }
    }
}

// The three block tiles; see plan_conv2d for when each is used.
struct TileConfig {
    int bm, bn;
};
constexpr TileConfig CV_TILES[] = {
    {128, 128},  // Cout > 64: 8 x 8 per thread, 16 smem floats per 64 FFMA
    {64, 128},   // 32 < Cout <= 64: 4 x 8 per thread
    {32, 64},    // Cout <= 32 or too few big tiles to fill the GPU: 2 x 4 per thread
};

long long tile_count(const TileConfig& t, long long m, long long n) {
    return ((n + t.bn - 1) / t.bn) * ((m + t.bm - 1) / t.bm);
}

std::string context(const Conv2dArgs& a) {
    return "conv2d " + a.in.str() + " -> " + a.out_shape().str() + ", kernel " + std::to_string(a.kernel) +
           ", padding " + std::to_string(a.pad_before) + "/" + std::to_string(a.pad_after) + " " +
           pad_mode_name(a.pad_mode) + (a.bias ? ", bias" : "");
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

}  // namespace

Conv2dPlan plan_conv2d(const Conv2dArgs& a, int sm_count) {
    const Shape o = a.out_shape();
    const long long m = a.out_channels, n = (long long)o.n * o.h * o.w;
    const long long kdim = (long long)a.in.c * a.kernel * a.kernel;
    int c = m > 64 ? 0 : m > 32 ? 1 : 2;
    while (c < 2 && tile_count(CV_TILES[c], m, n) < sm_count) ++c;  // fill the GPU before using big tiles
    Conv2dPlan plan{CV_TILES[c].bm, CV_TILES[c].bn, 1};
    // Wave quantization: with 1.5 waves the last one runs half empty; two
    // half-length blocks per tile can fill it.
    const long long blocks = tile_count(CV_TILES[c], m, n), slots = (long long)sm_count * CV_MIN_BLOCKS;
    auto efficiency = [&](long long b) { return double(b) / double((b + slots - 1) / slots * slots); };
    if (kdim >= CV_SPLIT_MIN_K && efficiency(2 * blocks) > 1.05 * efficiency(blocks)) plan.split_k = 2;
    return plan;
}

void conv2d(const Conv2dArgs& a, cudaStream_t stream, int sm_count) {
    check_args(a);
    const Shape o = a.out_shape();
    const long long kdim = (long long)a.in.c * a.kernel * a.kernel;
    if (a.in.count() >= size_t(INT_MAX) || o.count() >= size_t(INT_MAX) || kdim * a.out_channels >= INT_MAX)
        throw Error(context(a) + ": tensors of 2^31 or more elements are not supported on CUDA");
    const Conv2dPlan plan = plan_conv2d(a, sm_count);

    ConvParams p{};
    p.in = a.input, p.weight = a.weight, p.bias = a.bias, p.out = a.output;
    p.cin = a.in.c, p.h = a.in.h, p.w = a.in.w, p.cout = a.out_channels, p.k = a.kernel, p.pad_before = a.pad_before;
    p.ho = o.h, p.wo = o.w, p.howo = o.h * o.w, p.npix = o.n * o.h * o.w;
    p.kdim = int(kdim), p.kk = a.kernel * a.kernel, p.hw = a.in.h * a.in.w, p.cin_hw = a.in.c * a.in.h * a.in.w;
    p.cout_howo = a.out_channels * o.h * o.w;
    p.div_kk = FastDiv(p.kk), p.div_k = FastDiv(p.k);
    p.atomic = plan.split_k > 1;
    if (plan.split_k > 1) {
        const int steps = (p.kdim + CV_BK - 1) / CV_BK;
        p.k_chunk = (steps + plan.split_k - 1) / plan.split_k * CV_BK;
        check_cuda(cudaMemsetAsync(a.output, 0, o.count() * sizeof(float), stream), context(a),
                   "cudaMemsetAsync(output) for the split reduction");
    } else {
        p.k_chunk = (p.kdim + CV_BK - 1) / CV_BK * CV_BK;
    }

    if (plan.bm == 128)
        launch_tile<128, 128, 8, 8>(p, a, plan.split_k, stream);
    else if (plan.bm == 64)
        launch_tile<64, 128, 4, 8>(p, a, plan.split_k, stream);
    else
        launch_tile<32, 64, 2, 4>(p, a, plan.split_k, stream);
}

}  // namespace imr::cuda
