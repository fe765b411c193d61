// conv2d's igemm double-buffer kernel (conv2d_igemm_double_buffer_kernel):
// implicit GEMM in fp32 FFMA, register-staged loads, two shared-memory
// buffers, a 32 x 64 tile for the shapes too small or too narrow for the
// multistage tiles (it ran every shape until ed1dc63). The GEMM view and
// the pad modes as an index mapping: conv2d_variants.cu.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv2d_kernels.cuh"

namespace imr::cuda::conv2d_detail {
namespace {

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
    for (int j = 0; j < TN; ++j) out_off[j] = output_offset(p, n0 + tn * TN + j);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + tm * TM + i;
        if (m >= p.cout) continue;
        const float bv = (p.bias && blockIdx.z == 0) ? __ldg(p.bias + m) : 0.f;
#pragma unroll
        for (int j = 0; j < TN; ++j)
            if (out_off[j] >= 0) store_output(p, m, out_off[j], acc[i][j] + bv);
    }
}

}  // namespace

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

// The table's configurations (conv2d_variants.cu).
template void launch_double_buffer<32, 64>(const ConvParams&, const Conv2dArgs&, int, cudaStream_t);

}  // namespace imr::cuda::conv2d_detail
