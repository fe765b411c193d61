// Winograd F(2x2, 3x3) convolution (see winograd_conv.h for the scheme).
//
// Lanes of a vector are 8 neighbouring tiles of one tile row, so the GEMM
// loads V contiguously and broadcasts U, like the direct kernel's register
// tile; the transforms turn even/odd input columns into tile columns with
// two shuffles, and interleave the 2 output columns of a tile back.
#include "winograd_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#if !(defined(__AVX2__) && defined(__FMA__))
#error "winograd_conv.cpp needs AVX2 and FMA (the kernels build with -march=x86-64-v3)"
#endif

namespace imr::cpu {

namespace {

constexpr int kVectorsPerBlock = kTileBlock / 8;

// Columns x, x+2, ..., x+14 of a row, and x+1, ..., x+15.
inline void load_even_odd(const float* p, __m256& even, __m256& odd) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    // Per 128-bit lane: a0 a2 b0 b2 | a4 a6 b4 b6; the 64-bit permute orders the pairs.
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}

// e0 o0 e1 o1 ... e3 o3 and e4 o4 ... e7 o7: the two columns of 8 tiles, in order.
inline void interleave(__m256 e, __m256 o, __m256& first, __m256& second) {
    const __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
    first = _mm256_permute2f128_ps(lo, hi, 0x20);
    second = _mm256_permute2f128_ps(lo, hi, 0x31);
}

// V = B^T d B for 8 tiles (tile t at columns x0 + 2t .. x0 + 2t + 3 of rows
// r0 .. r0 + 3); v[xi] goes to dst + xi * xi_stride.
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
inline void input_transform8(const float* r0, size_t row, float* dst, size_t xi_stride) {
    __m256 t[4][4];
    for (int r = 0; r < 4; ++r) {
        __m256 d0, d1, d2, d3;
        load_even_odd(r0 + r * row, d0, d1);
        load_even_odd(r0 + r * row + 2, d2, d3);
        t[r][0] = _mm256_sub_ps(d0, d2);
        t[r][1] = _mm256_add_ps(d1, d2);
        t[r][2] = _mm256_sub_ps(d2, d1);
        t[r][3] = _mm256_sub_ps(d1, d3);
    }
    for (int j = 0; j < 4; ++j) {
        _mm256_storeu_ps(dst + (0 * 4 + j) * xi_stride, _mm256_sub_ps(t[0][j], t[2][j]));
        _mm256_storeu_ps(dst + (1 * 4 + j) * xi_stride, _mm256_add_ps(t[1][j], t[2][j]));
        _mm256_storeu_ps(dst + (2 * 4 + j) * xi_stride, _mm256_sub_ps(t[2][j], t[1][j]));
        _mm256_storeu_ps(dst + (3 * 4 + j) * xi_stride, _mm256_sub_ps(t[1][j], t[3][j]));
    }
}

// M[xi] = U[xi] V[xi] for the XB vectors of tiles of a block: v [cin][kTileBlock],
// u [blocks][cin][4], m [blocks * 4][kTileBlock]. 4 x XB accumulators; per
// input channel XB loads, 4 broadcasts, 4 * XB FMAs.
template <int XB>
void gemm_xi(const float* v, const float* u, float* m, int cin, int blocks) {
    for (int b = 0; b < blocks; ++b, u += size_t(cin) * kWinogradCoBlock) {
        __m256 acc[kWinogradCoBlock][XB];
        for (int c = 0; c < kWinogradCoBlock; ++c)
            for (int x = 0; x < XB; ++x) acc[c][x] = _mm256_setzero_ps();
        const float* vp = v;
        const float* up = u;
        for (int ci = 0; ci < cin; ++ci, vp += kTileBlock, up += kWinogradCoBlock) {
            __m256 in[XB];
            for (int x = 0; x < XB; ++x) in[x] = _mm256_loadu_ps(vp + 8 * x);
            for (int c = 0; c < kWinogradCoBlock; ++c) {
                const __m256 w = _mm256_broadcast_ss(up + c);
                for (int x = 0; x < XB; ++x) acc[c][x] = _mm256_fmadd_ps(in[x], w, acc[c][x]);
            }
        }
        for (int c = 0; c < kWinogradCoBlock; ++c)
            for (int x = 0; x < XB; ++x)
                _mm256_storeu_ps(m + size_t(b * kWinogradCoBlock + c) * kTileBlock + 8 * x, acc[c][x]);
    }
}

using GemmFn = void (*)(const float*, const float*, float*, int, int);
constexpr GemmFn kGemm[kVectorsPerBlock] = {gemm_xi<1>, gemm_xi<2>, gemm_xi<3>};

// Y = A^T M A for 8 tiles of one channel, then bias, ReLU, residual; stores
// output rows y0 (and y0 + 1 when two_rows) at columns x0 .. x0 + cols - 1
// (cols <= 16). m: M of the channel at its first tile ([16][stride]).
//   A^T = [1 1 1 0; 0 1 -1 -1]
inline void output_transform8(const float* m, size_t xi_stride, float bias, bool relu, const float* res, size_t res_row,
                              float* out, size_t out_row, int cols, bool two_rows) {
    __m256 t[2][4];  // A^T M: rows of Y, columns of the domain
    for (int j = 0; j < 4; ++j) {
        const __m256 m0 = _mm256_loadu_ps(m + (0 * 4 + j) * xi_stride);
        const __m256 m1 = _mm256_loadu_ps(m + (1 * 4 + j) * xi_stride);
        const __m256 m2 = _mm256_loadu_ps(m + (2 * 4 + j) * xi_stride);
        const __m256 m3 = _mm256_loadu_ps(m + (3 * 4 + j) * xi_stride);
        t[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        t[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
    }
    const __m256 b = _mm256_set1_ps(bias);
    for (int i = 0; i < (two_rows ? 2 : 1); ++i) {
        __m256 y0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[i][0], t[i][1]), t[i][2]), b);
        __m256 y1 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(t[i][1], t[i][2]), t[i][3]), b);
        if (relu) {
            y0 = _mm256_max_ps(y0, _mm256_setzero_ps());
            y1 = _mm256_max_ps(y1, _mm256_setzero_ps());
        }
        __m256 first, second;
        interleave(y0, y1, first, second);
        float* dst = out + i * out_row;
        if (cols == 16) {
            if (res) {
                first = _mm256_add_ps(first, _mm256_loadu_ps(res + i * res_row));
                second = _mm256_add_ps(second, _mm256_loadu_ps(res + i * res_row + 8));
            }
            _mm256_storeu_ps(dst, first);
            _mm256_storeu_ps(dst + 8, second);
        } else {  // the row's last tiles: read and write only the columns that exist
            alignas(32) float part[16];
            _mm256_store_ps(part, first);
            _mm256_store_ps(part + 8, second);
            if (res)
                for (int x = 0; x < cols; ++x) part[x] += res[i * res_row + size_t(x)];
            std::memcpy(dst, part, sizeof(float) * size_t(cols));
        }
    }
}

}  // namespace

std::vector<float> winograd_transform_weights(const float* weight, int cout, int cin) {
    // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
    static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    const int blocks = (cout + kWinogradCoBlock - 1) / kWinogradCoBlock;
    std::vector<float> u(size_t(16) * blocks * cin * kWinogradCoBlock, 0.0f);
    for (int co = 0; co < cout; ++co) {
        for (int ci = 0; ci < cin; ++ci) {
            const float* g = weight + (size_t(co) * cin + ci) * 9;
            double gg[4][3];  // G g
            for (int i = 0; i < 4; ++i)
                for (int k = 0; k < 3; ++k) gg[i][k] = G[i][0] * g[k] + G[i][1] * g[3 + k] + G[i][2] * g[6 + k];
            for (int i = 0; i < 4; ++i) {
                for (int j = 0; j < 4; ++j) {
                    const double v = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
                    const size_t xi = size_t(i * 4 + j);
                    u[((xi * blocks + size_t(co / kWinogradCoBlock)) * cin + ci) * kWinogradCoBlock +
                      co % kWinogradCoBlock] = float(v);
                }
            }
        }
    }
    return u;
}

size_t winograd_row_floats(int cols) {
    // Tiles rounded up to whole vectors of 8; the last reads 2 * tiles + 2 columns.
    const size_t tiles = (size_t(cols) + 1) / 2;
    return (tiles + 7) / 8 * 16 + 2;
}

size_t winograd_work_floats(int cin, int cout) {
    const size_t cout_pad = size_t(cout + kWinogradCoBlock - 1) / kWinogradCoBlock * kWinogradCoBlock;
    return 16 * size_t(kTileBlock) * (size_t(cin) + cout_pad);
}

void winograd_conv_rows(const WinogradConv& g, int rows) {
    const int blocks = (g.cout + kWinogradCoBlock - 1) / kWinogradCoBlock;
    const size_t cout_pad = size_t(blocks) * kWinogradCoBlock;
    const size_t v_xi = size_t(g.cin) * kTileBlock, m_xi = cout_pad * kTileBlock;
    float* const v = g.work;              // [16][cin][kTileBlock]
    float* const m = g.work + 16 * v_xi;  // [16][cout_pad][kTileBlock]
    const size_t u_xi = size_t(blocks) * g.cin * kWinogradCoBlock;
    const int tiles = (g.cols + 1) / 2;

    for (int y = 0; y < rows; y += 2) {
        const bool two_rows = y + 1 < rows;
        for (int t0 = 0; t0 < tiles; t0 += kTileBlock) {
            const int vectors = (std::min(kTileBlock, tiles - t0) + 7) / 8;
            for (int ci = 0; ci < g.cin; ++ci) {
                const float* src = g.in + ci * g.in_plane + size_t(y) * g.in_row + 2 * size_t(t0);
                for (int x = 0; x < vectors; ++x)
                    input_transform8(src + 16 * x, g.in_row, v + size_t(ci) * kTileBlock + 8 * x, v_xi);
            }
            for (int xi = 0; xi < 16; ++xi)
                kGemm[vectors - 1](v + xi * v_xi, g.u + xi * u_xi, m + xi * m_xi, g.cin, blocks);
            for (int co = 0; co < g.cout; ++co) {
                const float bias = g.bias ? g.bias[co] : 0.0f;
                for (int x = 0; x < vectors; ++x) {
                    const int col0 = 2 * (t0 + 8 * x);
                    const int cols = std::min(16, g.cols - col0);
                    if (cols <= 0) break;
                    const float* res =
                        g.residual ? g.residual + co * g.res_plane + size_t(y) * g.res_row + col0 : nullptr;
                    output_transform8(m + size_t(co) * kTileBlock + 8 * x, m_xi, bias, g.relu, res, g.res_row,
                                      g.out + co * g.out_plane + size_t(y) * g.out_row + col0, g.out_row, cols,
                                      two_rows);
                }
            }
        }
    }
}

}  // namespace imr::cpu
