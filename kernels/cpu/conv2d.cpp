// conv2d on the CPU, in parallel over (batch, band of output rows): a task
// pads the input rows its band needs (all channels, any PadMode, plus the
// readable slack its kernel wants per row) into its thread's slice of the
// backend's scratch, then runs one of two kernels over them (the variant
// table, kConv2dVariants below): the register-tiled direct convolution of
// direct_conv.h for every block of output channels, or, for 3x3 kernels,
// Winograd F(2x2, 3x3) of winograd_conv.h.
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
#include "winograd_conv.h"

namespace imr::cpu {

namespace {

// Output rows per task at most: small enough that every thread gets several
// tasks (dynamic scheduling evens out the image edges) and the band's padded
// rows stay in cache, large enough that the K - 1 extra rows a band pads are
// a small part of it.
constexpr int kMaxBandRows = 8;
// Tasks per thread wanted before bands get shorter than kMaxBandRows.
constexpr int kTasksPerThread = 4;
// Winograd needs at least this many input and output channels (see plan_conv2d).
constexpr int kWinogradMinChannels = 16;

// The geometry shared by both kernels' drivers: padded width, the column map
// of a padded row (source column or -1 for a zero, the same for all rows).
struct Padding {
    int wp = 0, hp = 0;  // padded width and height
    std::vector<int> col_src;
    explicit Padding(const Conv2dArgs& a)
        : wp(a.input.shape.w + a.pad_before + a.pad_after),
          hp(a.input.shape.h + a.pad_before + a.pad_after),
          col_src(size_t(wp)) {
        for (int x = 0; x < wp; ++x) col_src[size_t(x)] = source_index(x - a.pad_before, a.input.shape.w, a.pad_mode);
    }
};

// Padded rows y0 .. y0 + count - 1 of every input channel of image n into
// buf ([cin][plane], rows of `row` floats: columns past wp zero). Rows past
// the padded image (a kernel reading whole tiles) are zero.
void pad_rows(const Conv2dArgs& a, const Padding& p, int n, int y0, int count, float* buf, size_t plane, size_t row) {
    const Shape& in = a.input.shape;
    const int pb = a.pad_before;
    for (int c = 0; c < in.c; ++c) {
        const float* src_plane = a.input.as<const float>() + (size_t(n) * in.c + c) * size_t(in.h) * in.w;
        for (int r = 0; r < count; ++r) {
            float* dst = buf + size_t(c) * plane + size_t(r) * row;
            const int sy = y0 + r < p.hp ? source_index(y0 + r - pb, in.h, a.pad_mode) : -1;
            if (sy < 0) {
                std::fill(dst, dst + row, 0.0f);
                continue;
            }
            const float* src = src_plane + size_t(sy) * in.w;
            for (int x = 0; x < pb; ++x) dst[x] = p.col_src[size_t(x)] < 0 ? 0.0f : src[p.col_src[size_t(x)]];
            std::memcpy(dst + pb, src, sizeof(float) * size_t(in.w));
            for (int x = pb + in.w; x < p.wp; ++x) dst[x] = p.col_src[size_t(x)] < 0 ? 0.0f : src[p.col_src[size_t(x)]];
            std::fill(dst + p.wp, dst + row, 0.0f);
        }
    }
}

// Output rows per band: at most `max_rows`, a multiple of `multiple`, and
// short enough that each thread gets kTasksPerThread tasks where it can.
int band_rows(const Shape& out, int threads, int max_rows, int multiple) {
    const long units = (long(out.h) + multiple - 1) / multiple;
    return multiple *
           int(std::clamp<long>(long(out.n) * units / (long(kTasksPerThread) * threads), 1, max_rows / multiple));
}

void run_direct(const Conv2dArgs& a, int threads, Scratch& scratch) {
    const Shape in = a.input.shape, out = a.out_shape();
    const int k = a.kernel;
    const Padding pad(a);
    // Row stride of the padded rows: a multiple of 8 floats (32-byte rows).
    const size_t row = (size_t(pad.wp) + kRowSlack + 7) / 8 * 8;

    PackedConv local;
    const PackedConv& packed = packed_or_pack(a.prepared, a.weight.as<const float>(), a.bias.as<const float>(),
                                              a.out_channels, in.c, k, local, "conv2d " + in.str());

    const int band = band_rows(out, threads, kMaxBandRows, 1);
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
        pad_rows(a, pad, n, y0, rows + k - 1, buf, band_plane, row);
        DirectConv gn = g;
        gn.in = buf;
        gn.out = a.output.as<float>() + size_t(n) * out.c * g.out_plane + size_t(y0) * g.out_row;
        if (a.residual)
            gn.residual = a.residual.as<const float>() + size_t(n) * out.c * g.res_plane + size_t(y0) * g.res_row;
        for (int block = 0; block < blocks; ++block) direct_conv_rows(gn, block, 0, rows);
    }
}

void run_winograd(const Conv2dArgs& a, int threads, Scratch& scratch) {
    if (a.kernel != 3)
        throw NotApplicable("cpu conv2d winograd_2x2_3x3: kernel " + std::to_string(a.kernel) + ", not 3");
    const Shape in = a.input.shape, out = a.out_shape();
    const Padding pad(a);
    const size_t row = (std::max(size_t(pad.wp), winograd_row_floats(out.w)) + 7) / 8 * 8;

    // U from prepare when it made one for this shape; else transformed now.
    PackedConv local;
    const PackedConv& packed = packed_or_pack(a.prepared, a.weight.as<const float>(), a.bias.as<const float>(),
                                              a.out_channels, in.c, 3, local, "conv2d " + in.str());
    const auto* prepared = dynamic_cast<const WinogradPackedConv*>(&packed);
    std::vector<float> local_u;
    if (!prepared) local_u = winograd_transform_weights(a.weight.as<const float>(), a.out_channels, in.c);
    const float* u = prepared ? prepared->u.data() : local_u.data();

    // Bands of whole tile rows; a band pads 2 rows more than it has.
    const int band = band_rows(out, threads, kMaxBandRows, 2);
    const int bands = (out.h + band - 1) / band;
    const long tasks = long(out.n) * bands;
    const size_t band_plane = size_t(band + 2) * row;
    const size_t work = winograd_work_floats(in.c, a.out_channels);
    const size_t per_thread = size_t(in.c) * band_plane + work;
    float* const buffers = scratch.get(per_thread * size_t(threads));

    WinogradConv g;
    g.in_plane = band_plane, g.in_row = row;
    g.cin = in.c, g.cout = a.out_channels;
    g.u = u, g.bias = packed.bias.data();
    g.relu = a.activation == Activation::ReLU;
    g.res_plane = size_t(out.h) * out.w, g.res_row = size_t(out.w);
    g.out_plane = size_t(out.h) * out.w, g.out_row = size_t(out.w);
    g.cols = out.w;

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (long t = 0; t < tasks; ++t) {
        const int n = int(t / bands), y0 = int(t % bands) * band;
        const int rows = std::min(out.h - y0, band);
        float* const buf = buffers + per_thread * size_t(omp_get_thread_num());
        pad_rows(a, pad, n, y0, (rows + 1) / 2 * 2 + 2, buf, band_plane, row);
        WinogradConv gn = g;
        gn.in = buf;
        gn.work = buf + size_t(in.c) * band_plane;
        gn.out = a.output.as<float>() + size_t(n) * out.c * g.out_plane + size_t(y0) * g.out_row;
        if (a.residual)
            gn.residual = a.residual.as<const float>() + size_t(n) * out.c * g.res_plane + size_t(y0) * g.res_row;
        winograd_conv_rows(gn, rows);
    }
}

// conv2d's kernel variants. The planner (plan_conv2d) picks per shape; the
// op tests and bench_cpu reach each by name (force_variant).
struct Conv2dVariant {
    const char* name;
    void (*run)(const Conv2dArgs&, int threads, Scratch&);
};
constexpr Conv2dVariant kConv2dVariants[] = {
    // Any kernel size, pad mode and channel count.
    {"direct_register_tile", run_direct},
    // 3x3 only (NotApplicable otherwise): 16 instead of 36 multiplies per
    // 2x2 output tile and channel pair, plus the transforms.
    {"winograd_2x2_3x3", run_winograd},
};
constexpr int kVariantCount = int(sizeof(kConv2dVariants) / sizeof(kConv2dVariants[0]));
constexpr int V_DIRECT = 0, V_WINOGRAD = 1;

// The planner's rule: Winograd for 3x3 layers with enough channels on both
// sides that the GEMMs (16 * Cin * Cout multiply-adds per tile) outweigh the
// transforms (~32 * (Cin + Cout) additions per tile); the direct kernel for
// everything else. Measured reason: see docs/performance.md, "CPU Winograd
// F(2x2, 3x3)".
int plan_conv2d(const Conv2dArgs& a) {
    if (a.kernel == 3 && a.input.shape.c >= kWinogradMinChannels && a.out_channels >= kWinogradMinChannels)
        return V_WINOGRAD;
    return V_DIRECT;
}

}  // namespace

std::vector<std::string> conv2d_variants() {
    std::vector<std::string> names;
    for (const Conv2dVariant& v : kConv2dVariants) names.push_back(v.name);
    return names;
}

std::unique_ptr<PreparedWeights> CpuBackend::prepare(const Conv2dArgs& a) {
    const int cin = a.input.shape.c;
    if (!a.weight || a.out_channels < 1 || cin < 1 || a.kernel < 1)
        throw Error("cpu: conv2d weights to prepare: null weight or non-positive sizes");
    if (a.weight.dtype != DType::F32 || (a.bias && a.bias.dtype != DType::F32))
        throw Error("cpu: conv2d weights to prepare: " + a.weight.str() + ", expected f32");
    // The types of the activations it would run with (Backend::prepare): f32 NCHW only.
    if (a.input.type() != TensorType{} || a.output.type() != TensorType{})
        throw NotApplicable("cpu: conv2d computes in f32 NCHW only, not " + a.input.type().str() + " -> " +
                            a.output.type().str());
    const float *weight = a.weight.as<const float>(), *bias = a.bias.as<const float>();
    if (a.kernel != 3) return std::make_unique<PackedConv>(pack_conv(weight, bias, a.out_channels, cin, a.kernel));
    // 3x3: packed for both kernels, so either variant can run with it.
    auto p = std::make_unique<WinogradPackedConv>();
    static_cast<PackedConv&>(*p) = pack_conv(weight, bias, a.out_channels, cin, a.kernel);
    p->u = winograd_transform_weights(weight, a.out_channels, cin);
    return p;
}

void CpuBackend::conv2d(const Conv2dArgs& a) {
    check_args(a);
    check_supported(*this, Op::Conv2d, {&a.input, &a.output, &a.residual});
    const int forced = forced_variant(Op::Conv2d);
    const int v = forced >= 0 && forced < kVariantCount ? forced : plan_conv2d(a);
    if (a.gate) {
        // The gate: the Cout sums into a buffer, then simple_gate (the same
        // float operations as the two stages).
        Conv2dArgs sums = a;
        sums.gate = false;
        std::vector<float> buffer(sums.out_shape().count());
        sums.output = f32_nchw(buffer.data(), sums.out_shape());
        kConv2dVariants[v].run(sums, threads_, conv_scratch_);
        SimpleGateArgs g;
        g.input = sums.output, g.output = a.output;
        return simple_gate(g);
    }
    if (!a.residual || a.residual_op == ResidualOp::Add) return kConv2dVariants[v].run(a, threads_, conv_scratch_);
    // A multiplying residual: the kernels' epilogues add, so the convolution
    // runs without it and the output is multiplied after (the same float
    // operations as a convolution and a mul stage).
    Conv2dArgs plain = a;
    plain.residual = {};
    kConv2dVariants[v].run(plain, threads_, conv_scratch_);
    float* out = a.output.as<float>();
    const float* r = a.residual.as<const float>();
    const long count = long(a.output.shape.count());
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (long i = 0; i < count; ++i) out[i] *= r[i];
}

}  // namespace imr::cpu
