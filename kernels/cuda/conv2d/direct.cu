// conv2d's direct kernel for few output channels
// (conv2d_direct_small_cout_kernel): a network's last layer, 48 -> 3 or
// 64 -> 12. An implicit GEMM wastes most of its M tile there (3 of 32 rows:
// 1.9% of peak on the H200); the direct kernel stages an input tile with its
// halo in shared memory once per channel and computes all output channels of
// 4 pixels per thread from it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv2d_kernels.cuh"

namespace imr::cuda::conv2d_detail {
namespace {

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

}  // namespace

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

// The table's configurations (conv2d_variants.cu).
template void launch_direct<4>(const ConvParams&, const Conv2dArgs&, int, cudaStream_t);
template void launch_direct<16>(const ConvParams&, const Conv2dArgs&, int, cudaStream_t);

}  // namespace imr::cuda::conv2d_detail
