// The register-tiled direct convolution both CPU ops are built on (private to
// kernels/cpu/).
//
// A DirectConv is a "valid" cross-correlation over planes that the caller has
// already padded, so the inner loop never tests a border:
//
//   out[co][y][x] = act(bias[co] + sum over ci, ky, kx of
//                       weight[co][ci][ky][kx] * in[ci][y + ky][x + kx])
//                   (+ residual[co][y][x] when residual is set)
// with act = ReLU when relu is set, else the identity.
//
// The unit of work is a register tile: co_block output channels (1..4) x up
// to 8 vectors of 8 output columns of one output row, accumulated in
// registers over the whole reduction (cin * k * k steps). Each step loads the
// XB input vectors once and broadcasts one weight per output channel, so a
// 4 x 3 tile does 12 FMAs per 3 vector loads + 4 broadcasts: FMA-bound on
// AVX2 (2 FMA and 2-3 load ports per cycle), and the weights stream
// sequentially through L1 (they are repacked so the co_block weights of one
// (ci, ky, kx) are adjacent).
//
// Reads past the last output column: a tile reads whole vectors, so every
// input row must be readable (and hold finite values, e.g. zeros) for
// kRowSlack floats beyond column cols + k - 2. The residual is read exactly
// (columns [0, cols)), so it can be any tensor, e.g. the previous layer's
// output. Writes are exact: only columns [0, cols) and channels [0, cout) are
// stored.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend.h"

namespace imr::cpu {

// Floats a row must be readable beyond its last used column (see above): the
// last tile of a row rounds its width up to a whole 8-float vector.
constexpr int kRowSlack = 8;

// Padded coordinate p -> source index in [0, size), or -1 for a zero: the
// padding of both CPU convolutions (conv2d and depthwise_conv2d).
// (Deliberately not shared with the reference_pad_index of the float64
// references, kernels/ops/reference_common.cpp: the oracle stays
// independent of the code it judges.)
inline int source_index(int p, int size, PadMode mode) {
    if (p >= 0 && p < size) return p;
    switch (mode) {
        case PadMode::Zero:
            return -1;
        case PadMode::Reflect:
            return p < 0 ? -p : 2 * (size - 1) - p;
        case PadMode::Replicate:
            return p < 0 ? 0 : size - 1;
    }
    return -1;
}

// Output channels per register tile for a layer with cout channels: 4 (4 x 3
// vectors = 12 of AVX2's 16 registers accumulate) or all of them when fewer.
inline int choose_co_block(int cout) {
    return cout >= 4 ? 4 : cout;
}

struct DirectConv {
    const float* in = nullptr;  // [cin][rows + k - 1][in_row], see slack above
    size_t in_plane = 0, in_row = 0;
    int cin = 0, k = 0;
    const float* weight = nullptr;  // from pack_weights
    const float* bias = nullptr;    // from pack_bias
    int cout = 0, co_block = 0;     // co_block from choose_co_block(cout)
    bool relu = false;
    const float* residual = nullptr;  // optional [cout][rows][res_row]
    size_t res_plane = 0, res_row = 0;
    float* out = nullptr;  // [cout][rows][out_row]
    size_t out_plane = 0, out_row = 0;
    int cols = 0;  // output columns per row
};

// weight [cout][cin][k][k] -> [ceil(cout / co_block)][cin][k][k][co_block],
// missing channels of the last block zero.
std::vector<float> pack_weights(const float* weight, int cout, int cin, int k, int co_block);
// bias [cout] (or null: zeros) -> [ceil(cout / co_block) * co_block].
std::vector<float> pack_bias(const float* bias, int cout, int co_block);

// One convolution's weights and bias packed for direct_conv_rows, with the
// shape they were packed for: what the CPU backend's prepare() returns.
struct PackedConv : PreparedWeights {
    int cout = 0, cin = 0, k = 0, co_block = 0;
    std::vector<float> weight, bias;
};
PackedConv pack_conv(const float* weight, const float* bias, int cout, int cin, int k);

// `prepared` (from the CPU backend's prepare) when the op carries it, checked
// to be a PackedConv of this shape (imr::Error naming `op` otherwise); else
// the weights packed now into `local`.
const PackedConv& packed_or_pack(const PreparedWeights* prepared, const float* weight, const float* bias, int cout,
                                 int cin, int k, PackedConv& local, const std::string& op);

// Output rows [y_begin, y_end) of channel block `block` (channels
// block * co_block ...), all columns.
void direct_conv_rows(const DirectConv& g, int block, int y_begin, int y_end);

inline int co_blocks(const DirectConv& g) {
    return (g.cout + g.co_block - 1) / g.co_block;
}

}  // namespace imr::cpu
