// Winograd F(2x2, 3x3) convolution over padded planes (private to
// kernels/cpu/; conv2d.cpp bands, pads and threads it like the direct kernel).
//
// Same contract as DirectConv (direct_conv.h) for K = 3: a "valid"
// cross-correlation over rows the caller has padded, then bias, ReLU and
// residual:
//   out[co][y][x] = act(bias[co] + sum over ci, ky, kx of
//                       weight[co][ci][ky][kx] * in[ci][y + ky][x + kx])
//                   (+ residual[co][y][x])
//
// Each 2x2 block of outputs (a tile) is computed from the 4x4 input patch
// under it (Lavin & Gray 2015): V = B^T d B per input channel, then for each
// of the 16 positions xi of the 4x4 Winograd domain one small GEMM
//   M[xi][co][tile] = sum over ci of U[xi][co][ci] * V[xi][ci][tile]
// with U = G g G^T transformed once per model (prepare), then Y = A^T M A.
// That is 16 multiply-adds per tile and channel pair where the direct
// convolution needs 36; the transforms are additions (and halvings in G),
// so everything stays fp32.
//
// Work unit: one row of tiles (2 output rows), kTileBlock tiles at a time.
// The V and M blocks of a unit ([16][cin][kTileBlock] and
// [16][cout][kTileBlock] floats, 2 x 72 KB for 48 channels) live in the
// calling thread's work buffer and stay in its L2; each GEMM step streams one
// xi's V (4.6 KB) and U (9.2 KB) through L1.
//
// Floor: 2 * 16 * Cin * Cout FLOPs per tile in the GEMMs (16/36 of the direct
// count), plus ~4 * 32 * (Cin + Cout) in the transforms; bytes as the direct
// kernel (input + weight + output once): compute-bound for every layer of
// the bundled models.
//
// Reads past the last column: tiles are computed 8 at a time, so each padded
// input row must be readable (finite, e.g. zeros) up to winograd_row_floats(cols)
// floats; and 2 * ceil(rows / 2) + 2 padded rows must be readable. Writes and
// residual reads are exact (rows [0, rows), columns [0, cols)).
#pragma once

#include <cstddef>
#include <vector>

#include "direct_conv.h"

namespace imr::cpu {

// Tiles per work unit (3 vectors of 8 tiles x 4 output channels = 12
// accumulator registers in the GEMM).
constexpr int kTileBlock = 24;
// Output channels per GEMM register tile; U and M are padded to a multiple.
constexpr int kWinogradCoBlock = 4;

// weight [cout][cin][3][3] -> U = G g G^T, packed
// [16][ceil(cout / 4)][cin][4] (missing channels zero), computed in float64.
std::vector<float> winograd_transform_weights(const float* weight, int cout, int cin);

// A conv's weights packed for both kernels: what the CPU backend's prepare()
// returns for a 3x3 conv, so the planner can pick either with it.
struct WinogradPackedConv : PackedConv {
    std::vector<float> u;  // winograd_transform_weights
};

// Floats a padded input row must be readable for `cols` output columns.
size_t winograd_row_floats(int cols);
// Floats of per-thread work buffer for these channel counts.
size_t winograd_work_floats(int cin, int cout);

struct WinogradConv {
    const float* in = nullptr;  // [cin][2 * ceil(rows / 2) + 2][in_row]
    size_t in_plane = 0, in_row = 0;
    int cin = 0, cout = 0;
    const float* u = nullptr;     // winograd_transform_weights
    const float* bias = nullptr;  // [cout] or null
    bool relu = false;
    const float* residual = nullptr;  // optional [cout][rows][res_row]
    size_t res_plane = 0, res_row = 0;
    float* out = nullptr;  // [cout][rows][out_row]
    size_t out_plane = 0, out_row = 0;
    int cols = 0;           // output columns per row
    float* work = nullptr;  // winograd_work_floats(cin, cout), this thread's own
};

// Output rows [0, rows) of every channel, all columns.
void winograd_conv_rows(const WinogradConv& g, int rows);

}  // namespace imr::cpu
