// residual_block on the CPU, fused per tile: for a tile of th x tw output
// pixels of one image, copy the input with a 2-pixel halo into a zero-padded
// buffer, compute the hidden activation for the tile plus a 1-pixel halo into
// a second buffer (zero where the halo falls outside the image: that is
// conv_out's zero padding), then conv_out over it with the bias and the
// residual added in registers. The hidden activation never leaves L2.
//
// Floor: 2 * N * H * W * 9 * C * hidden * 2 FLOPs (conv_in + conv_out;
// 3456 per pixel for C = 3, hidden = 32) and 8 * N * C * H * W bytes (read
// the input, write the output), so compute-bound by far. The tile halo
// recomputes (th + 2) * (tw + 2) / (th * tw) - 1 of conv_in: ~10% of it
// (5% of the total) at the default tile for a wide image.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_backend.h"
#include "direct_conv.h"

namespace imr::cpu {

namespace {

// Widest tile: the conv_out tile (3 or 4 channels x 24-32 columns per
// register tile) runs over it in a few whole register tiles.
constexpr int kMaxTileW = 128;
// Bytes of hidden activation per tile: a quarter of a 2 MiB L2 (Sapphire
// Rapids, the dev machine; 1 MiB on older Xeons still holds it with the input
// tile), so conv_out reads what conv_in just wrote from L2, not from memory.
constexpr size_t kHiddenTileBytes = 512 * 1024;
// Fewest rows per tile: below that the halo recompute dominates.
constexpr int kMinTileH = 4;
// Tasks per thread wanted before tiles get shorter (load balance on small images).
constexpr int kTasksPerThread = 4;

int ceil_div(int a, int b) {
    return (a + b - 1) / b;
}
size_t round_up8(size_t v) {
    return (v + 7) / 8 * 8;
}

// The residual block's two convolutions packed for direct_conv: what
// prepare() returns.
struct PackedResidualBlock : PreparedWeights {
    PackedConv conv_in, conv_out;
};

PackedResidualBlock pack_residual_block(const ResidualBlockArgs& a) {
    PackedResidualBlock p;
    p.conv_in =
        pack_conv(a.conv_in_weight.as<const float>(), a.conv_in_bias.as<const float>(), a.hidden, a.input.shape.c, 3);
    p.conv_out =
        pack_conv(a.conv_out_weight.as<const float>(), a.conv_out_bias.as<const float>(), a.input.shape.c, a.hidden, 3);
    return p;
}

}  // namespace

std::unique_ptr<PreparedWeights> CpuBackend::prepare(const ResidualBlockArgs& a) {
    if (!a.conv_in_weight || !a.conv_out_weight || a.hidden < 1 || a.input.shape.c < 1)
        throw Error("cpu: residual_block weights to prepare: null weight or non-positive sizes");
    return std::make_unique<PackedResidualBlock>(pack_residual_block(a));
}

void CpuBackend::residual_block(const ResidualBlockArgs& a) {
    const int threads = threads_;
    check_args(a);
    check_supported(*this, Op::ResidualBlock, {&a.input, &a.output});
    const Shape s = a.input.shape;
    const int hidden = a.hidden;

    // Tile geometry: tiles of equal size, tw a multiple of 8 floats.
    const int tiles_x = ceil_div(s.w, kMaxTileW);
    const int tw = int(round_up8(size_t(ceil_div(s.w, tiles_x))));
    const size_t hid_row = round_up8(size_t(tw) + 2 + kRowSlack);  // hidden tile: tw + 2 columns
    const size_t in_row = round_up8(size_t(tw) + 4 + kRowSlack);   // input tile: tw + 4 columns
    int th = int(kHiddenTileBytes / (sizeof(float) * size_t(hidden) * hid_row)) - 2;
    th = std::min(std::max(th, kMinTileH), s.h);  // not std::clamp: s.h may be below kMinTileH
    const int wanted_y = ceil_div(kTasksPerThread * threads, s.n * tiles_x);
    th = std::min(th, std::max(kMinTileH, ceil_div(s.h, wanted_y)));
    const int tiles_y = ceil_div(s.h, th);
    th = ceil_div(s.h, tiles_y);
    const long tasks = long(s.n) * tiles_y * tiles_x;

    const size_t in_plane = size_t(th + 4) * in_row;
    const size_t hid_plane = size_t(th + 2) * hid_row;

    PackedResidualBlock local;
    const PackedResidualBlock* packed = &local;
    if (a.prepared) {
        packed = dynamic_cast<const PackedResidualBlock*>(a.prepared);
        if (!packed || packed->conv_in.cin != s.c || packed->conv_in.cout != hidden)
            throw Error("residual_block " + s.str() + ": its prepared weights were made for another shape or backend");
    } else {
        local = pack_residual_block(a);
    }
    const PackedConv &pin = packed->conv_in, &pout = packed->conv_out;

#pragma omp parallel num_threads(threads)
    {
        // Per-thread tiles, zeroed once: halo columns outside the image and
        // the slack past each row stay finite.
        std::vector<float> in_tile(size_t(s.c) * in_plane, 0.0f);
        std::vector<float> hid_tile(size_t(hidden) * hid_plane, 0.0f);

        DirectConv conv_in;  // input tile -> hidden tile
        conv_in.in = in_tile.data(), conv_in.in_plane = in_plane, conv_in.in_row = in_row;
        conv_in.cin = s.c, conv_in.k = 3;
        conv_in.weight = pin.weight.data(), conv_in.bias = pin.bias.data();
        conv_in.cout = hidden, conv_in.co_block = pin.co_block;
        conv_in.out = hid_tile.data(), conv_in.out_plane = hid_plane, conv_in.out_row = hid_row;

        DirectConv conv_out;  // hidden tile -> output, + residual from the input tile
        conv_out.in = hid_tile.data(), conv_out.in_plane = hid_plane, conv_out.in_row = hid_row;
        conv_out.cin = hidden, conv_out.k = 3;
        conv_out.weight = pout.weight.data(), conv_out.bias = pout.bias.data();
        conv_out.cout = s.c, conv_out.co_block = pout.co_block;
        conv_out.residual = in_tile.data() + 2 * in_row + 2, conv_out.res_plane = in_plane, conv_out.res_row = in_row;
        conv_out.out_plane = size_t(s.h) * s.w, conv_out.out_row = size_t(s.w);

#pragma omp for schedule(dynamic)
        for (long t = 0; t < tasks; ++t) {
            const int tx = int(t % tiles_x), ty = int(t / tiles_x % tiles_y), n = int(t / tiles_x / tiles_y);
            const int x0 = tx * tw, y0 = ty * th;
            const int cols = std::min(tw, s.w - x0), rows = std::min(th, s.h - y0);
            if (cols <= 0 || rows <= 0) continue;

            // 1. Input rows y0-2 .. y0+rows+1, columns x0-2 .. x0+cols+1, zero outside the image.
            const int xs = std::max(0, x0 - 2), xe = std::min(s.w, x0 + cols + 2);
            for (int c = 0; c < s.c; ++c) {
                for (int r = 0; r < rows + 4; ++r) {
                    float* dst = in_tile.data() + c * in_plane + r * in_row;
                    const int y = y0 - 2 + r;
                    if (y < 0 || y >= s.h) {
                        std::fill(dst, dst + cols + 4, 0.0f);
                        continue;
                    }
                    const float* src = a.input.as<const float>() + ((size_t(n) * s.c + c) * s.h + y) * s.w;
                    std::fill(dst, dst + (xs - (x0 - 2)), 0.0f);
                    std::memcpy(dst + (xs - (x0 - 2)), src + xs, sizeof(float) * size_t(xe - xs));
                    std::fill(dst + (xe - (x0 - 2)), dst + cols + 4, 0.0f);
                }
            }

            // 2. Hidden rows y0-1 .. y0+rows, columns x0-1 .. x0+cols; the
            // halo outside the image is conv_out's zero padding.
            const int r_begin = y0 == 0 ? 1 : 0;
            const int r_end = rows + 2 - (y0 + rows == s.h ? 1 : 0);
            conv_in.cols = cols + 2;
            for (int b = 0; b < co_blocks(conv_in); ++b) direct_conv_rows(conv_in, b, r_begin, r_end);
            for (int h = 0; h < hidden; ++h) {
                float* plane = hid_tile.data() + h * hid_plane;
                if (r_begin == 1) std::fill(plane, plane + cols + 2, 0.0f);
                if (r_end == rows + 1)
                    std::fill(plane + (rows + 1) * hid_row, plane + (rows + 1) * hid_row + cols + 2, 0.0f);
                if (x0 == 0)
                    for (int r = 0; r < rows + 2; ++r) plane[r * hid_row] = 0.0f;
                if (x0 + cols == s.w)
                    for (int r = 0; r < rows + 2; ++r) plane[r * hid_row + cols + 1] = 0.0f;
            }

            // 3. Output rows y0 .. y0+rows-1 = input + conv_out(hidden) + bias.
            conv_out.cols = cols;
            conv_out.out = a.output.as<float>() + ((size_t(n) * s.c) * s.h + y0) * s.w + x0;
            for (int b = 0; b < co_blocks(conv_out); ++b) direct_conv_rows(conv_out, b, 0, rows);
        }
    }
}

}  // namespace imr::cpu
