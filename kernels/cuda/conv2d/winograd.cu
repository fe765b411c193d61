// conv2d's Winograd kernel (conv2d_winograd_2x2_3x3_kernel): 3x3 layers of
// 17..48 output channels, with 16 multiplies per 2x2 outputs where the
// others need 36; and prepare_conv2d, which transforms a layer's weights
// once for it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv2d_kernels.cuh"

namespace imr::cuda::conv2d_detail {
namespace {

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

constexpr size_t kWinogradSmemFloats = std::max<size_t>(size_t(2) * WG_HALO + size_t(2) * WG_U + WG_V, size_t(WG_M));
static_assert(kWinogradSmemFloats * sizeof(float) <= 100 * 1024, "fits beside the L1 share (one block per SM)");

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

}  // namespace

// stream-ordered temporary for this call.
void launch_winograd(const ConvParams& p0, const Conv2dArgs& a, int, cudaStream_t stream) {
    ConvParams p = p0;
    CallTemp temp{nullptr, stream};  // the per-call transformed weights
    if (const auto* prep = dynamic_cast<const Conv2dPrepared*>(a.prepared); prep && prep->winograd_u) {
        p.wino_u = prep->winograd_u;
    } else {
        auto* u = static_cast<float*>(temp.allocate(winograd_u_floats(a.out_channels, a.input.shape.c) * sizeof(float),
                                                    a, "the Winograd weights"));
        transform_winograd_weights(a.weight.as<const float>(), u, a.out_channels, a.input.shape.c, stream, context(a));
        p.wino_u = u;
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

}  // namespace imr::cuda::conv2d_detail

namespace imr::cuda {

using namespace conv2d_detail;

Conv2dPrepared::~Conv2dPrepared() {
    int current = device;
    cudaGetDevice(&current);
    cudaSetDevice(device);
    if (winograd_u) cudaFree(winograd_u);
    if (tc_weights) cudaFree(tc_weights);
    if (tc_bias) cudaFree(tc_bias);
    cudaSetDevice(current);  // the caller's, as it was
}

std::unique_ptr<PreparedWeights> prepare_conv2d(const Conv2dArgs& a, cudaStream_t stream) {
    // Only layers the planner sends to Winograd (any image size: the shape's
    // channels decide; never under TF32) get transformed weights; a forced
    // variant transforms per call.
    if (a.tf32 || a.kernel != 3 || !a.weight || a.out_channels <= 16 || a.out_channels > WG_CO ||
        a.input.shape.c < WG_CC)
        return nullptr;
    auto prep = std::make_unique<Conv2dPrepared>();
    prep->cout = a.out_channels, prep->cin = a.input.shape.c, prep->kernel = 3;
    const std::string ctx =
        "conv2d weights [" + std::to_string(a.out_channels) + "," + std::to_string(a.input.shape.c) + ",3,3]";
    prep->winograd_u = static_cast<float*>(
        prepared_alloc(winograd_u_floats(a.out_channels, a.input.shape.c) * sizeof(float), a, "the Winograd weights"));
    transform_winograd_weights(a.weight.as<const float>(), prep->winograd_u, a.out_channels, a.input.shape.c, stream,
                               ctx);
    return prep;
}

}  // namespace imr::cuda
