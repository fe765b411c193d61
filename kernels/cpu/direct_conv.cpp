// Register-tiled direct convolution (see direct_conv.h for the tiling).
#include "direct_conv.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace imr::cpu {

namespace {

// ---------------------------------------------------------------- 8 x fp32
// AVX2 + FMA where the compiler targets it (the build uses -march=x86-64-v3);
// elsewhere GCC/Clang generic vectors, which lower to NEON, SSE or scalars.
#if defined(__AVX2__) && defined(__FMA__)
using f32x8 = __m256;
inline f32x8 load8(const float* p) {
    return _mm256_loadu_ps(p);
}
inline void store8(float* p, f32x8 v) {
    _mm256_storeu_ps(p, v);
}
inline f32x8 splat8(float s) {
    return _mm256_set1_ps(s);
}
inline f32x8 fma8(f32x8 a, f32x8 b, f32x8 c) {
    return _mm256_fmadd_ps(a, b, c);
}
inline f32x8 add8(f32x8 a, f32x8 b) {
    return _mm256_add_ps(a, b);
}
inline f32x8 relu8(f32x8 a) {
    return _mm256_max_ps(a, _mm256_setzero_ps());
}
#else
typedef float f32x8 __attribute__((vector_size(32)));
inline f32x8 load8(const float* p) {
    f32x8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store8(float* p, f32x8 v) {
    std::memcpy(p, &v, sizeof v);
}
inline f32x8 splat8(float s) {
    return f32x8{} + s;
}
inline f32x8 fma8(f32x8 a, f32x8 b, f32x8 c) {
    return a * b + c;
}
inline f32x8 add8(f32x8 a, f32x8 b) {
    return a + b;
}
inline f32x8 relu8(f32x8 a) {
    return a > 0 ? a : 0;
}
#endif

// Most 8-float vectors per tile row; the tile width a co_block uses (kMainXB)
// keeps COB * XB accumulators at 8..12 registers.
constexpr int kMaxXB = 8;
constexpr int kMainXB[5] = {0, 8, 6, 4, 3};

// Taps (ci, ky, kx) summed in one accumulator before it is added to the
// tile's total. One fp32 accumulator over L terms errs by ~u * L (u = 2^-24)
// times the term size; summing chunks of ~kChunkTaps and then the chunks cuts
// that to ~u * (kChunkTaps + L / kChunkTaps), e.g. 30x for GPU MODE's
// L = 131072 (needed there to stay within 1e-3 of float64 near zero outputs),
// for one add per accumulator per chunk (~2% at 12 FMAs per tap).
constexpr int kChunkTaps = 256;

// One register tile: COB channels x (XB * 8) columns of one output row.
// in: in[0][y][x0]; w: packed block (stride ws per (ci, ky, kx)); bias: the
// block's COB biases; res/out: [co0][y][x0]; cols: valid columns (<= 8 * XB).
template <int COB, int XB>
void conv_tile(const DirectConv& g, const float* in, const float* w, int ws, const float* bias, const float* res,
               float* out, int cols) {
    // Two-level sum: acc collects the taps of a chunk of input channels,
    // total the chunks (see kChunkTaps).
    f32x8 total[COB][XB], acc[COB][XB];
    for (int c = 0; c < COB; ++c)
        for (int b = 0; b < XB; ++b) total[c][b] = splat8(bias[c]);

    const int k = g.k;
    const int ci_chunk = std::max(1, kChunkTaps / (k * k));
    for (int ci0 = 0; ci0 < g.cin; ci0 += ci_chunk) {
        for (int c = 0; c < COB; ++c)
            for (int b = 0; b < XB; ++b) acc[c][b] = splat8(0.0f);
        const int ci1 = std::min(g.cin, ci0 + ci_chunk);
        for (int ci = ci0; ci < ci1; ++ci) {
            const float* plane = in + ci * g.in_plane;
            for (int ky = 0; ky < k; ++ky) {
                const float* row = plane + ky * g.in_row;
                for (int kx = 0; kx < k; ++kx, w += ws) {
                    f32x8 v[XB];
                    for (int b = 0; b < XB; ++b) v[b] = load8(row + kx + 8 * b);
                    for (int c = 0; c < COB; ++c) {
                        const f32x8 wc = splat8(w[c]);
                        for (int b = 0; b < XB; ++b) acc[c][b] = fma8(v[b], wc, acc[c][b]);
                    }
                }
            }
        }
        for (int c = 0; c < COB; ++c)
            for (int b = 0; b < XB; ++b) total[c][b] = add8(total[c][b], acc[c][b]);
    }
    for (int c = 0; c < COB; ++c)
        for (int b = 0; b < XB; ++b) acc[c][b] = total[c][b];

    if (g.relu) {
        for (int c = 0; c < COB; ++c)
            for (int b = 0; b < XB; ++b) acc[c][b] = relu8(acc[c][b]);
    }
    if (res) {
        alignas(32) float part[8 * XB] = {};  // lanes past `cols` stay finite (zero)
        for (int c = 0; c < COB; ++c) {
            const float* r = res + c * g.res_plane;
            if (cols < 8 * XB) {  // the row's last tile: read only the columns that exist
                std::memcpy(part, r, sizeof(float) * size_t(cols));
                r = part;
            }
            for (int b = 0; b < XB; ++b) acc[c][b] = add8(acc[c][b], load8(r + 8 * b));
        }
    }
    if (cols == 8 * XB) {
        for (int c = 0; c < COB; ++c)
            for (int b = 0; b < XB; ++b) store8(out + c * g.out_plane + 8 * b, acc[c][b]);
    } else {
        alignas(32) float tmp[8 * XB];
        for (int c = 0; c < COB; ++c) {
            for (int b = 0; b < XB; ++b) store8(tmp + 8 * b, acc[c][b]);
            std::memcpy(out + c * g.out_plane, tmp, sizeof(float) * size_t(cols));
        }
    }
}

using TileFn = void (*)(const DirectConv&, const float*, const float*, int, const float*, const float*, float*, int);

template <int COB, int... XB>
constexpr auto tile_row(std::integer_sequence<int, XB...>) {
    return std::array<TileFn, kMaxXB>{&conv_tile<COB, XB + 1>...};
}

// kTiles[COB - 1][XB - 1]
const std::array<std::array<TileFn, kMaxXB>, 4> kTiles = {
    tile_row<1>(std::make_integer_sequence<int, kMaxXB>{}), tile_row<2>(std::make_integer_sequence<int, kMaxXB>{}),
    tile_row<3>(std::make_integer_sequence<int, kMaxXB>{}), tile_row<4>(std::make_integer_sequence<int, kMaxXB>{})};

}  // namespace

std::vector<float> pack_weights(const float* weight, int cout, int cin, int k, int co_block) {
    const int blocks = (cout + co_block - 1) / co_block;
    const size_t taps = size_t(cin) * k * k;  // (ci, ky, kx) per output channel
    std::vector<float> packed(size_t(blocks) * taps * co_block, 0.0f);
    for (int co = 0; co < cout; ++co) {
        float* dst = packed.data() + size_t(co / co_block) * taps * co_block + co % co_block;
        const float* src = weight + size_t(co) * taps;
        for (size_t t = 0; t < taps; ++t) dst[t * co_block] = src[t];
    }
    return packed;
}

std::vector<float> pack_bias(const float* bias, int cout, int co_block) {
    const int blocks = (cout + co_block - 1) / co_block;
    std::vector<float> packed(size_t(blocks) * co_block, 0.0f);
    if (bias) std::copy(bias, bias + cout, packed.begin());
    return packed;
}

PackedConv pack_conv(const float* weight, const float* bias, int cout, int cin, int k) {
    PackedConv p;
    p.cout = cout, p.cin = cin, p.k = k, p.co_block = choose_co_block(cout);
    p.weight = pack_weights(weight, cout, cin, k, p.co_block);
    p.bias = pack_bias(bias, cout, p.co_block);
    return p;
}

const PackedConv& packed_or_pack(const PreparedWeights* prepared, const float* weight, const float* bias, int cout,
                                 int cin, int k, PackedConv& local, const std::string& op) {
    if (!prepared) {
        local = pack_conv(weight, bias, cout, cin, k);
        return local;
    }
    const auto* p = dynamic_cast<const PackedConv*>(prepared);
    if (!p || p->cout != cout || p->cin != cin || p->k != k)
        throw Error(op + ": its prepared weights were made for another shape or backend");
    return *p;
}

void direct_conv_rows(const DirectConv& g, int block, int y_begin, int y_end) {
    const int co0 = block * g.co_block;
    const int cob = std::min(g.co_block, g.cout - co0);
    const int xb_main = kMainXB[g.co_block];
    const float* w = g.weight + size_t(block) * g.cin * g.k * g.k * g.co_block;
    const float* bias = g.bias + co0;
    for (int y = y_begin; y < y_end; ++y) {
        const float* in = g.in + y * g.in_row;
        const float* res = g.residual ? g.residual + co0 * g.res_plane + y * g.res_row : nullptr;
        float* out = g.out + co0 * g.out_plane + y * g.out_row;
        for (int x = 0; x < g.cols; x += 8 * xb_main) {
            const int cols = std::min(8 * xb_main, g.cols - x);
            const int xb = (cols + 7) / 8;
            kTiles[cob - 1][xb - 1](g, in + x, w, g.co_block, bias, res ? res + x : nullptr, out + x, cols);
        }
    }
}

}  // namespace imr::cpu
