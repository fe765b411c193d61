// conv2d on the CPU, in parallel over (batch, band of output rows): a task
// pads the input rows its band needs (all channels, any PadMode, plus
// kRowSlack readable floats per row) into its thread's slice of the backend's
// scratch, then runs the direct convolution of direct_conv.h over them for
// every block of output channels.
//
// Why bands: padding the whole input once meant writing and reading back an
// input-sized copy (2.3 GB for a 48-channel 12 MP layer) through DRAM on
// every layer; a band's rows (48 channels x 10 rows x 16 KB = 7.7 MB at 4000
// px) stay in the L3 cache while all channel blocks read them.
//
// Floor: 2 * N * Cout * Ho * Wo * Cin * K * K FLOPs; bytes 4 * (input + weight
// + output). Every shape beyond K = 1 with a few channels is compute-bound,
// so the kernel is built to keep the FMA units busy.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu_backend.h"
#include "direct_conv.h"

namespace imr::cpu {

namespace {

// Output rows per task at most: small enough that every thread gets several
// tasks (dynamic scheduling evens out the image edges) and the band's padded
// rows stay in cache, large enough that the K - 1 extra rows a band pads are
// a small part of it.
constexpr int kMaxBandRows = 8;
// Tasks per thread wanted before bands get shorter than kMaxBandRows.
constexpr int kTasksPerThread = 4;

// Padded coordinate p -> source index in [0, size), or -1 for a zero.
// (Deliberately not shared with the reference_pad_index of the float64
// references, kernels/ops/reference_common.cpp: the oracle stays
// independent of the code it judges.)
int source_index(int p, int size, PadMode mode) {
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

}  // namespace

std::unique_ptr<PreparedWeights> CpuBackend::prepare(const Conv2dArgs& a) {
    if (!a.weight || a.out_channels < 1 || a.in.c < 1 || a.kernel < 1)
        throw Error("cpu: conv2d weights to prepare: null weight or non-positive sizes");
    return std::make_unique<PackedConv>(pack_conv(a.weight, a.bias, a.out_channels, a.in.c, a.kernel));
}

void CpuBackend::conv2d(const Conv2dArgs& a) {
    check_args(a);
    const int threads = threads_;
    Scratch& scratch = conv_scratch_;
    const Shape in = a.in, out = a.out_shape();
    const int k = a.kernel, pb = a.pad_before;
    const int wp = in.w + a.pad_before + a.pad_after;
    // Row stride of the padded rows: a multiple of 8 floats (32-byte rows).
    const size_t row = (size_t(wp) + kRowSlack + 7) / 8 * 8;

    // Column map of a padded row: source column or -1 (zero), shared by all rows.
    std::vector<int> col_src(static_cast<size_t>(wp));
    for (int x = 0; x < wp; ++x) col_src[size_t(x)] = source_index(x - pb, in.w, a.pad_mode);

    PackedConv local;
    const PackedConv& packed =
        packed_or_pack(a.prepared, a.weight, a.bias, a.out_channels, in.c, k, local, "conv2d " + in.str());

    const int band = int(std::clamp<long>(long(out.n) * out.h / (long(kTasksPerThread) * threads), 1, kMaxBandRows));
    const int bands = (out.h + band - 1) / band;
    const long tasks = long(out.n) * bands;
    // Each thread pads the input rows of its band (all channels) into its own
    // slice of the scratch, then runs every channel block over them.
    const size_t band_plane = size_t(band + k - 1) * row;
    const size_t per_thread = size_t(in.c) * band_plane;
    float* const buffers = scratch.get(per_thread * size_t(threads));

    DirectConv g;
    g.in_plane = band_plane, g.in_row = row;
    g.cin = in.c, g.k = k;
    g.weight = packed.weight.data(), g.bias = packed.bias.data();
    g.cout = a.out_channels, g.co_block = packed.co_block;
    g.relu = a.activation == Activation::ReLU;
    g.res_plane = size_t(out.h) * out.w, g.res_row = size_t(out.w);
    g.out_plane = size_t(out.h) * out.w, g.out_row = size_t(out.w);
    g.cols = out.w;
    const int blocks = co_blocks(g);

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (long t = 0; t < tasks; ++t) {
        const int n = int(t / bands), y0 = int(t % bands) * band;
        const int rows = std::min(out.h - y0, band);
        float* const buf = buffers + per_thread * size_t(omp_get_thread_num());
        // Padded rows y0 .. y0 + rows + k - 2 of every input channel of image n.
        for (int c = 0; c < in.c; ++c) {
            const float* plane = a.input + (size_t(n) * in.c + c) * size_t(in.h) * in.w;
            for (int r = 0; r < rows + k - 1; ++r) {
                float* dst = buf + size_t(c) * band_plane + size_t(r) * row;
                const int sy = source_index(y0 + r - pb, in.h, a.pad_mode);
                if (sy < 0) {
                    std::fill(dst, dst + row, 0.0f);
                    continue;
                }
                const float* src = plane + size_t(sy) * in.w;
                for (int x = 0; x < pb; ++x) dst[x] = col_src[size_t(x)] < 0 ? 0.0f : src[col_src[size_t(x)]];
                std::memcpy(dst + pb, src, sizeof(float) * size_t(in.w));
                for (int x = pb + in.w; x < wp; ++x) dst[x] = col_src[size_t(x)] < 0 ? 0.0f : src[col_src[size_t(x)]];
                std::fill(dst + wp, dst + row, 0.0f);
            }
        }
        DirectConv gn = g;
        gn.in = buf;
        gn.out = a.output + size_t(n) * out.c * g.out_plane + size_t(y0) * g.out_row;
        if (a.residual) gn.residual = a.residual + size_t(n) * out.c * g.res_plane + size_t(y0) * g.res_row;
        for (int block = 0; block < blocks; ++block) direct_conv_rows(gn, block, 0, rows);
    }
}

}  // namespace imr::cpu
