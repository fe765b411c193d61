// Every op on every backend against its float64 reference (kernels/ops/NAME.h),
// from one table of cases per op, in the style of ggml's test-backend-ops.
// The tests follow the op list (kernels/ops/op_list.h): one per op, named
// after it, runs its table NAME_cases(); an op without a table does not
// compile, and RejectsInvalidArgs fails for an op without a row there.
//
// The suite is parameterized by backend ("cpu", "cuda"); test names end in
// /cpu and /cuda so ctest runs them as separate entries (tests/CMakeLists.txt).
// Within a backend every case runs on the planner's pick and again on every
// kernel variant the backend lists (Backend::variants, forced in turn), and
// once more with weights the backend prepared (Backend::prepare) where it
// prepares any; each variant must run at least one case.
// Without a usable GPU the cuda tests are SKIPPED with the reason, never passed.
//
// Every case runs once per activation type (dtype and layout) the backend
// supports for the op (Backend::supports): inputs are drawn in float, rounded
// to that type, and the float64 reference computes on the rounded values, so
// the tolerance covers only the kernel's own arithmetic and the rounding of
// its output to the stored type (accuracy_bound, below).
//
// Every run: fresh N(0,1) inputs (seed from std::random_device, printed on
// failure; IMRESTORE_TEST_SEED=<seed> reproduces a run; IMRESTORE_TEST_ALL_CASES=1
// runs the GPU-only cases on the CPU too), the output poisoned
// with NaN and framed by sentinel guards (unwritten elements and out-of-bounds
// writes both fail), the input checked unchanged, every parameter of a failing
// case printed through SCOPED_TRACE.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend.h"

namespace {

using imr::Activation;
using imr::Backend;
using imr::Conv2dArgs;
using imr::DeviceBuffer;
using imr::DType;
using imr::Layout;
using imr::Op;
using imr::PadMode;
using imr::PixelShuffleArgs;
using imr::ResidualBlockArgs;
using imr::Shape;
using imr::ShuffleDirection;
using imr::Tensor;

// ---------------------------------------------------------------- tolerances
//
// Our own random cases: an fp32 dot product of length L accumulated in any
// order (sequential, blocked, split-K, FMA or not) has a rounding error that
// behaves like a random walk: each of the L additions errs by at most
// u = 2^-24 times a partial sum of size ~sqrt(L) * sigma, so the total error
// is ~u * L * sigma ~ u * sqrt(L) * |typical output|. We allow 16 times that
// against the largest output, which leaves room for the tail of the error
// distribution over millions of elements and for the residual block's two
// chained reductions (L = 9 * C + 9 * hidden), yet stays ~500x below what a
// TF32 (u = 2^-11) or fp16 kernel would produce:
//   max |out - ref| <= 16 * 2^-24 * sqrt(L) * max |ref|
// A kernel that stores its output in a narrower type (f16, bf16) rounds the
// f32 result once more, by at most that type's unit roundoff u (2^-11,
// 2^-8) relative, so for such outputs the bound adds u * max |ref| (the
// inputs are in the narrow type already: the reference sees the same
// values). A kernel whose products round their f32 operands (TF32: 10
// mantissa bits, rounded to nearest, u = 2^-11) errs on each product by
// at most 2u of it, errors that add up like the products themselves: about
// 2u of a typical output whatever L is (simulated on these cases: 0.5-1.1 u
// of max |ref|). It passes u as `operand_unit`, for 8u of max |ref| more.
constexpr double kFp32Unit = imr::unit_roundoff(DType::F32);
constexpr double kTf32Unit = 0x1p-11;
constexpr double kOwnToleranceFactor = 16.0;
constexpr double kOperandToleranceFactor = 8.0;
double accuracy_bound(DType stored, long reduction, double max_abs_ref, double operand_unit = 0) {
    const double accumulate = kOwnToleranceFactor * kFp32Unit * std::sqrt(double(reduction));
    const double operands = kOperandToleranceFactor * operand_unit;
    const double store = stored == DType::F32 ? 0.0 : imr::unit_roundoff(stored);
    return (accumulate + operands + store) * max_abs_ref;
}
// SOL-ExecBench L1/040: |out - ref| <= atol(case) + 1e-5 * |ref| for >= 99% of elements.
constexpr double kSolRtol = 1e-5;
constexpr double kSolPassFraction = 0.99;
// GPU MODE conv2d_v2: |out - ref| <= 1e-3 + 1e-3 * |ref| for every element.
constexpr double kGpuModeTol = 1e-3;
// Convolutions above this many multiply-adds are checked against float64 on
// kSampledElements random output elements (reference_conv2d_at) instead of
// all of them: the full float64 reference of the GPU MODE ranked shape
// (8.5e11 MACs) would take minutes even on 16 cores.
constexpr double kFullReferenceMacs = 1e10;
constexpr int kSampledElements = 4096;
// Elements of sentinel on each side of every output buffer.
constexpr size_t kGuard = 64;
constexpr float kSentinel = -1234.5f;

using imr::TensorType;
std::string type_name(const TensorType& t) {
    return t.str();
}

// ---------------------------------------------------------------- inputs
uint64_t draw_seed() {
    if (const char* env = std::getenv("IMRESTORE_TEST_SEED")) return std::strtoull(env, nullptr, 10);
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
}

std::vector<float> normal(std::mt19937_64& rng, size_t count, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = dist(rng) * scale;
    return v;
}

// A tensor in host memory of any type: the values of `logical` (NCHW
// order) rounded to the type and stored in its layout (NHWC8's padding
// channels zero).
struct HostTensor {
    std::vector<unsigned char> bytes;
    Tensor view;  // over bytes: moves keep it valid, copies would not (deleted)
    HostTensor() = default;
    HostTensor(HostTensor&&) = default;
    HostTensor& operator=(HostTensor&&) = default;
    HostTensor(const HostTensor&) = delete;
};
HostTensor host_tensor(const std::vector<float>& logical, Shape s, TensorType t) {
    HostTensor h;
    h.view = {nullptr, s, t.dtype, t.layout};
    h.bytes.assign(h.view.bytes(), 0);
    h.view.data = h.bytes.data();
    for (int n = 0; n < s.n; ++n)
        for (int c = 0; c < s.c; ++c)
            for (int y = 0; y < s.h; ++y)
                for (int x = 0; x < s.w; ++x)
                    imr::store_float(h.view, h.view.offset(n, c, y, x),
                                     logical[((size_t(n) * s.c + c) * s.h + y) * s.w + x]);
    return h;
}
// The values of a host tensor in NCHW order (exact: every type widens to float).
std::vector<float> logical_values(const Tensor& t) {
    const Shape& s = t.shape;
    std::vector<float> v(s.count());
    for (int n = 0; n < s.n; ++n)
        for (int c = 0; c < s.c; ++c)
            for (int y = 0; y < s.h; ++y)
                for (int x = 0; x < s.w; ++x)
                    v[((size_t(n) * s.c + c) * s.h + y) * s.w + x] = imr::load_float(t, t.offset(n, c, y, x));
    return v;
}

DeviceBuffer to_device(Backend& backend, const void* host, size_t bytes) {
    DeviceBuffer buf(backend, bytes);
    backend.upload(buf.data(), host, bytes);
    return buf;
}
DeviceBuffer to_device(Backend& backend, const std::vector<float>& host) {
    return to_device(backend, host.data(), host.size() * sizeof(float));
}
DeviceBuffer to_device(Backend& backend, const HostTensor& host) {
    return to_device(backend, host.bytes.data(), host.bytes.size());
}

// An output tensor of `shape` and type `t`, poisoned with NaN, framed by
// kGuard sentinel elements on each side.
class GuardedOutput {
public:
    GuardedOutput(Backend& backend, Shape shape, TensorType t = {DType::F32, Layout::NCHW})
        : backend_(backend), view_{nullptr, shape, t.dtype, t.layout} {
        const size_t elem = imr::dtype_size(t.dtype), count = view_.stored_count() + 2 * kGuard;
        init_.resize(count * elem);
        const Tensor all{init_.data(), {1, 1, 1, int(count)}, t.dtype, Layout::NCHW};
        for (size_t i = 0; i < count; ++i)
            imr::store_float(all, i,
                             i < kGuard || i >= count - kGuard ? kSentinel : std::numeric_limits<float>::quiet_NaN());
        buf_ = DeviceBuffer(backend, init_.size());
        backend_.upload(buf_.data(), init_.data(), init_.size());
        view_.data = buf_.as<unsigned char>() + kGuard * elem;
    }
    const Tensor& tensor() const { return view_; }

    // Downloads the output as float in NCHW order; fails the test if a guard
    // was overwritten. (NHWC8's padding channels are not part of the output.)
    std::vector<float> download() {
        std::vector<unsigned char> all(init_.size());
        backend_.download(all.data(), buf_.data(), all.size());
        const size_t guard = kGuard * imr::dtype_size(view_.dtype);
        const bool intact =
            std::memcmp(all.data(), init_.data(), guard) == 0 &&
            std::memcmp(all.data() + all.size() - guard, init_.data() + init_.size() - guard, guard) == 0;
        EXPECT_TRUE(intact) << "the op wrote outside its output (guard elements overwritten)";
        Tensor host = view_;
        host.data = all.data() + guard;
        // NHWC8: every op writes its padding channels as zeros (tensor.h).
        size_t nonzero_padding = 0;
        for (int n = 0; n < host.shape.n; ++n)
            for (int y = 0; y < host.shape.h; ++y)
                for (int x = 0; x < host.shape.w; ++x)
                    for (int c = host.shape.c; c < imr::stored_channels(host.layout, host.shape.c); ++c)
                        nonzero_padding += imr::load_float(host, host.offset(n, c, y, x)) != 0.0f;
        EXPECT_EQ(nonzero_padding, 0u) << "NHWC8 padding channels not zero";
        return logical_values(host);
    }

private:
    Backend& backend_;
    Tensor view_;
    std::vector<unsigned char> init_;
    DeviceBuffer buf_;
};

void expect_unchanged(Backend& backend, const DeviceBuffer& buf, const void* host, size_t bytes, const char* what) {
    std::vector<unsigned char> now(bytes);
    backend.download(now.data(), buf.data(), bytes);
    EXPECT_EQ(std::memcmp(now.data(), host, bytes), 0) << "the op modified its " << what;
}
void expect_unchanged(Backend& backend, const DeviceBuffer& buf, const HostTensor& host, const char* what) {
    expect_unchanged(backend, buf, host.bytes.data(), host.bytes.size(), what);
}

// ---------------------------------------------------------------- comparison
// What to compare: out (all of it) against ref, either at every element
// (index empty) or at the listed elements only (ref[i] belongs to index[i]).
struct Comparison {
    double max_abs_err = 0, max_abs_ref = 0;
    size_t worst = 0;                 // element index of max_abs_err
    size_t compared = 0, within = 0;  // elements compared, and within atol + rtol * |ref|
    size_t nonfinite = 0;             // NaN/Inf anywhere in out
    size_t first_nonfinite = 0;
};

Comparison compare(const std::vector<float>& out, const std::vector<double>& ref, const std::vector<size_t>& index,
                   double atol, double rtol) {
    Comparison r;
    for (size_t i = out.size(); i-- > 0;)
        if (!std::isfinite(out[i])) ++r.nonfinite, r.first_nonfinite = i;
    r.compared = ref.size();
    for (size_t j = 0; j < ref.size(); ++j) {
        const size_t i = index.empty() ? j : index[j];
        const double err = std::abs(double(out[i]) - ref[j]);
        r.max_abs_ref = std::max(r.max_abs_ref, std::abs(ref[j]));
        if (!(err <= r.max_abs_err)) r.max_abs_err = err, r.worst = i;  // NaN err is the worst
        r.within += err <= atol + rtol * std::abs(ref[j]);
    }
    return r;
}

std::string where(const Shape& s, size_t i) {
    std::ostringstream o;
    o << "(n=" << i / (size_t(s.c) * s.h * s.w) << ", c=" << i / (size_t(s.h) * s.w) % s.c
      << ", y=" << i / size_t(s.w) % s.h << ", x=" << i % s.w << ")";
    return o.str();
}

double value_at(const std::vector<double>& ref, const std::vector<size_t>& index, size_t i) {
    if (index.empty()) return ref[i];
    return ref[size_t(std::find(index.begin(), index.end(), i) - index.begin())];
}

void expect_all_finite(const Comparison& r, const Shape& s) {
    EXPECT_EQ(r.nonfinite, 0u) << "NaN/Inf in the output (unwritten or overflowed), first at "
                               << where(s, r.first_nonfinite);
}

// Our own cases: the accumulation bound above (accuracy_bound) for an output
// stored in `stored`, on the worst element. Returns the error as a fraction
// of the allowed bound (for the summary).
double expect_accurate(const std::vector<float>& out, const std::vector<double>& ref, const std::vector<size_t>& index,
                       const Shape& s, long reduction, DType stored, double operand_unit = 0) {
    const Comparison r = compare(out, ref, index, 0, 0);
    expect_all_finite(r, s);
    const double bound = accuracy_bound(stored, reduction, r.max_abs_ref, operand_unit);
    EXPECT_LE(r.max_abs_err, bound) << "worst element " << where(s, r.worst) << ": got " << out[r.worst] << ", float64 "
                                    << value_at(ref, index, r.worst) << " (max |ref| " << r.max_abs_ref
                                    << ", reduction length " << reduction << ")";
    return bound > 0 ? r.max_abs_err / bound : 0;
}

// ---------------------------------------------------------------- per-element bounds
// For ops whose error is not the accumulation bound's (layer_norm,
// window_mean, the gated depthwise, a multiplying residual): |out - ref| <=
// bound[i] at every element, each bound derived for its op below. Returns the worst error as a fraction of its bound.
double expect_within(const std::vector<float>& out, const std::vector<double>& ref, const std::vector<double>& bound,
                     const Shape& s) {
    size_t worst = 0, beyond = 0, nonfinite = 0, first_nonfinite = 0;
    double worst_fraction = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (!std::isfinite(out[i]) && nonfinite++ == 0) first_nonfinite = i;
        const double err = std::abs(double(out[i]) - ref[i]);
        const double fraction = err == 0 ? 0.0 : err / bound[i];
        if (!(fraction <= worst_fraction)) worst_fraction = fraction, worst = i;  // NaN is the worst
        beyond += !(err <= bound[i]);
    }
    EXPECT_EQ(nonfinite, 0u) << "NaN/Inf in the output (unwritten or overflowed), first at "
                             << where(s, first_nonfinite);
    EXPECT_EQ(beyond, 0u) << beyond << " of " << out.size() << " elements beyond their bound; worst " << where(s, worst)
                          << ": got " << out[worst] << ", float64 " << ref[worst] << ", bound " << bound[worst];
    return worst_fraction;
}

// The bound of a gated output (simple_gate's product of channel c and c +
// C/2, both sums in float): `sums` is the un-gated float64 output [N, C, h,
// w] of `gated`'s size; within acc * (max|A| |B| + max|B| |A|) <= 2 acc
// max|A| max|B| of the product, plus `roundings` (relative units: the
// product's and the stores') of max|A| max|B|.
double gate_bound(const std::vector<double>& sums, const Shape& gated, double acc, double roundings) {
    const size_t plane = size_t(gated.h) * gated.w;
    double max_a = 0, max_b = 0;
    for (size_t i = 0; i < sums.size(); ++i) {
        double& m = int(i / plane % size_t(2 * gated.c)) < gated.c ? max_a : max_b;  // channel of [N, C, h, w]
        m = std::max(m, std::abs(sums[i]));
    }
    return (2 * acc + roundings) * max_a * max_b + 1e-30;
}

// ---------------------------------------------------------------- cases
struct ResidualCase {
    int n, c, h, w, hidden;
    double sol_atol = 0;    // > 0: a SOL-ExecBench L1/040 case and its atol; 0: our own case
    bool gpu_only = false;  // too large for the CPU backend within CI time
};

std::ostream& operator<<(std::ostream& o, const ResidualCase& k) {
    o << "residual_block N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << " hidden=" << k.hidden;
    if (k.sol_atol > 0) o << " (SOL-ExecBench L1/040, atol " << k.sol_atol << ")";
    return o;
}

// SOL cases above this many pixels run on GPUs only: the CPU backend would
// need seconds each (and the float64 reference on 2 cores longer still).
constexpr long kCpuMaxSolPixels = 600'000;

std::vector<ResidualCase> residual_block_cases() {
    std::vector<ResidualCase> cases = {
        // Tiny and odd: narrower than one 8-float vector, single pixels and rows.
        {1, 3, 1, 1, 32},
        {1, 3, 2, 3, 32},
        {1, 3, 7, 5, 32},
        {1, 1, 7, 5, 17},
        {2, 1, 1, 9, 5},
        {1, 3, 13, 1, 32},
        // Hidden widths that do not fill a register tile.
        {2, 3, 9, 17, 5},
        {1, 3, 19, 23, 17},
        {1, 3, 8, 8, 1},
        // Channel counts around the CPU's 4-channel tiles.
        {1, 4, 11, 33, 32},
        {2, 5, 10, 12, 8},
        {1, 16, 20, 24, 64},
        // Odd image sizes of the benchmark, several CPU tiles wide/high.
        {1, 3, 131, 131, 32},
        {2, 3, 37, 541, 32},
        {1, 3, 300, 9, 32},
        {3, 3, 64, 200, 32},
    };
    // SOL-ExecBench L1/040, /work/shared/anchors/solexec_040_residual_block.json.
    struct Sol {
        int n, h, w;
        double atol;
    };
    const Sol sol[] = {{8, 512, 512, 0.069},  {32, 256, 256, 0.066}, {2, 256, 256, 0.071}, {4, 512, 512, 0.07},
                       {1, 128, 128, 0.058},  {16, 64, 64, 0.064},   {8, 373, 373, 0.072}, {64, 128, 128, 0.074},
                       {16, 128, 128, 0.067}, {1, 64, 64, 0.058},    {1, 512, 512, 0.066}, {2, 512, 512, 0.062},
                       {2, 64, 64, 0.058},    {1, 131, 131, 0.062},  {2, 541, 541, 0.072}, {16, 256, 256, 0.078}};
    for (const Sol& s : sol) cases.push_back({s.n, 3, s.h, s.w, 32, s.atol, long(s.n) * s.h * s.w > kCpuMaxSolPixels});
    return cases;
}

struct ConvCase {
    int n, cin, cout, h, w, k;
    int pad_before = 0, pad_after = 0;
    PadMode mode = PadMode::Zero;
    bool bias = false;
    // A GPU MODE conv2d_v2 shape. Its test shapes (reduction length <= 4096)
    // are also held to the benchmark's own rule, atol = rtol = 1e-3 on every
    // element, against float64. Its benchmark shapes (gpu_only, reductions of
    // 16384..131072 terms) are judged by the fp32 bound only: GPU MODE states
    // that rule against torch fp32, and against float64 any fp32 sum of 1e5
    // terms of N(0,1) products errs by ~1e-3 on some elements (torch's own
    // cuDNN result is 3.7e-2 off float64 on the ranked shape, per the anchor).
    bool gpu_mode = false;
    bool gpu_only = false;  // too large for the CPU backend within CI time
    // The fused epilogue: activation after the bias, then an output-shaped residual.
    Activation act = Activation::None;
    bool residual = false;
    bool multiply = false;  // the residual multiplies (ResidualOp::Multiply: channel attention)
    bool gate = false;      // the simple gate: Cout/2 outputs, first half * second half

    double macs() const {
        const double ho = h + pad_before + pad_after - k + 1, wo = w + pad_before + pad_after - k + 1;
        return double(n) * cout * ho * wo * cin * k * k;
    }
};

std::ostream& operator<<(std::ostream& o, const ConvCase& k) {
    o << "conv2d N=" << k.n << " Cin=" << k.cin << " Cout=" << k.cout << " H=" << k.h << " W=" << k.w << " K=" << k.k
      << " pad " << k.pad_before << "/" << k.pad_after << " " << imr::pad_mode_name(k.mode)
      << (k.bias ? " bias" : " no bias");
    if (k.act != Activation::None) o << " " << imr::activation_name(k.act);
    if (k.residual) o << (k.multiply ? " * residual" : " + residual");
    if (k.gate) o << " gate";
    if (k.gpu_mode) o << (k.gpu_only ? " (GPU MODE conv2d_v2 benchmark shape)" : " (GPU MODE conv2d_v2 test shape)");
    return o;
}

// Size-keeping padding (what model files use): pad_before + pad_after = K - 1.
ConvCase same(int n, int cin, int cout, int h, int w, int k, PadMode mode, bool bias) {
    return {n, cin, cout, h, w, k, (k - 1) / 2, k - 1 - (k - 1) / 2, mode, bias};
}

// GPU MODE conv2d_v2 (/work/shared/anchors/gpumode_conv2d_v2.json): C -> C, no padding, no bias.
ConvCase gpu_mode(int batch, int channels, int size, int k, bool gpu_only) {
    return {batch, channels, channels, size, size, k, 0, 0, PadMode::Zero, false, true, gpu_only};
}

// The same case with a fused activation and/or residual add.
ConvCase fused(ConvCase c, Activation act, bool residual, bool gpu_only = false) {
    c.act = act, c.residual = residual, c.gpu_only = gpu_only;
    return c;
}
// The same case with a multiplying residual.
ConvCase multiplied(ConvCase c, Activation act) {
    c.act = act, c.residual = c.multiply = true;
    return c;
}
// The same case with the simple gate.
ConvCase gated(ConvCase c) {
    c.gate = true;
    return c;
}
std::vector<ConvCase> conv2d_cases() {
    const PadMode Z = PadMode::Zero, R = PadMode::Reflect, P = PadMode::Replicate;
    const Activation ReLU = Activation::ReLU, None = Activation::None;
    return {
        // The fused epilogue on every kernel tile (Cout 5, 12, 64, 96 pick
        // different tiles), odd sizes, batches; the unshuffle-CNN layer shapes
        // (12 -> 64 -> 64 -> 12 channels, 3x3, zero padding) among them.
        fused(same(2, 3, 5, 17, 23, 3, Z, true), ReLU, false),
        fused(same(2, 4, 6, 19, 14, 5, R, false), ReLU, true),
        fused(same(1, 3, 4, 4, 1, 1, Z, true), ReLU, true),
        fused(same(1, 12, 64, 19, 27, 3, Z, true), ReLU, false),
        fused(same(2, 64, 64, 13, 21, 3, Z, true), ReLU, false),
        fused(same(1, 64, 12, 9, 35, 3, Z, true), None, true),
        fused(same(1, 96, 96, 17, 11, 3, P, true), ReLU, true),
        fused(same(2, 64, 64, 128, 96, 3, Z, true), ReLU, false, true),
        fused(same(1, 64, 12, 256, 200, 3, Z, true), None, true, true),
        // The multiplying residual (channel attention's 1x1 on the means:
        // the picked 32- and 64-channel 1x1 rows), 3x3, a narrow output.
        multiplied(same(1, 32, 32, 23, 37, 1, Z, true), None),
        multiplied(same(2, 64, 64, 11, 19, 1, Z, true), None),
        multiplied(same(1, 8, 20, 13, 17, 3, R, true), ReLU),
        multiplied(same(2, 16, 3, 9, 14, 3, P, false), None),
        // The simple gate: 1x1 of a multiple of 16 channels (on CUDA's
        // tensor cores in the epilogue), wider (several channel blocks), and
        // where the pairing cannot take it (6 channels, 3x3: the sums, then
        // simple_gate).
        // 1x1 at the U-Nets' deep widths: the planner's cuBLASLt rows (bias,
        // ReLU, an added residual; Cin 136: 8 channels past a 16-channel
        // slice of the packed weights), and ReLU then a residual, which only
        // the tensor-core rows take.
        fused(same(2, 128, 256, 9, 13, 1, Z, true), None, true),
        fused(same(1, 256, 128, 7, 11, 1, Z, true), ReLU, false),
        same(1, 136, 128, 6, 7, 1, Z, false),
        fused(same(1, 128, 128, 5, 9, 1, Z, true), ReLU, true),
        gated(same(1, 32, 64, 23, 37, 1, Z, true)),
        gated(same(2, 16, 32, 13, 19, 1, Z, true)),
        gated(same(1, 24, 256, 7, 9, 1, Z, false)),
        gated(same(1, 128, 256, 5, 7, 1, Z, true)),  // CUDA: cuBLASLt's GEMM, then simple_gate
        gated(same(2, 5, 6, 11, 14, 1, Z, true)),
        gated(same(1, 8, 16, 12, 10, 3, R, true)),
        // Every pad mode with size-keeping padding, odd and even K, batches > 1.
        same(2, 3, 5, 17, 23, 3, Z, true),
        same(2, 3, 5, 17, 23, 3, R, true),
        same(2, 3, 5, 17, 23, 3, P, true),
        same(1, 4, 6, 19, 14, 5, Z, false),
        same(1, 4, 6, 19, 14, 5, R, true),
        same(3, 4, 6, 19, 14, 5, P, false),
        same(2, 5, 3, 12, 21, 4, Z, true),
        same(2, 5, 3, 12, 21, 4, R, false),
        same(2, 5, 3, 12, 21, 4, P, true),
        same(1, 2, 7, 9, 10, 2, R, true),
        same(1, 2, 7, 9, 10, 2, P, false),
        // Reflect at its widest (pad = size - 1) and on a 2-pixel axis.
        {1, 3, 2, 3, 3, 5, 2, 2, R, true},
        {2, 1, 1, 2, 6, 3, 1, 1, R, false},
        // K = 1; K = min(H, W); K > 32; no padding, one padded side only.
        {1, 8, 16, 13, 9, 1, 0, 0, Z, false},
        {1, 4, 3, 7, 11, 7, 0, 0, Z, true},
        {1, 2, 3, 40, 37, 33, 0, 0, Z, true},
        same(1, 4, 4, 48, 40, 32, Z, false),
        {2, 3, 4, 10, 15, 3, 0, 2, P, true},
        {2, 3, 4, 10, 15, 3, 2, 0, R, true},
        fused({1, 5, 6, 9, 14, 4, 3, 0, Z, false}, ReLU, true),
        // C = 1, Cin != Cout both ways, C up to 256 with small images.
        same(1, 1, 1, 31, 29, 5, R, true),
        same(2, 6, 2, 16, 16, 3, Z, true),
        same(1, 2, 9, 16, 16, 3, Z, false),
        same(1, 256, 256, 8, 8, 3, P, true),
        same(1, 256, 3, 16, 16, 3, Z, true),
        same(2, 3, 256, 6, 10, 3, R, false),
        // Narrower than one 8-float vector; odd widths over several tiles.
        same(3, 3, 4, 5, 3, 3, Z, true),
        same(1, 3, 4, 4, 1, 1, Z, true),
        {1, 3, 4, 6, 1, 1, 0, 0, Z, false},
        same(1, 3, 8, 31, 131, 3, R, true),
        same(1, 32, 32, 12, 373, 3, Z, true),
        // GPU MODE conv2d_v2: the 5 test shapes, then the 5 benchmark shapes (GPU only).
        gpu_mode(1, 16, 32, 4, false),
        gpu_mode(2, 16, 32, 4, false),
        gpu_mode(1, 32, 64, 4, false),
        gpu_mode(2, 32, 64, 8, false),
        gpu_mode(1, 64, 128, 8, false),
        gpu_mode(4, 64, 128, 8, true),
        gpu_mode(4, 64, 128, 16, true),
        gpu_mode(2, 128, 256, 16, true),
        gpu_mode(2, 128, 256, 16, true),
        gpu_mode(1, 128, 256, 32, true),
    };
}

// ---------------------------------------------------------------- fixture
class OpsTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (GetParam() == "cuda") {
            std::string why;
            if (imr::cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
        }
        backend_ = GetParam() == "cuda" ? imr::make_cuda_backend(0) : imr::make_cpu_backend();
    }
    // GPU-only cases run on host-memory backends only with IMRESTORE_TEST_ALL_CASES=1
    // (e.g. to check the CPU backend on a many-core machine).
    // IMRESTORE_TEST_SKIP_GPU_ONLY=1 skips them everywhere (compute-sanitizer
    // runs, where the big shapes would take minutes).
    bool runs(bool gpu_only) const {
        static const bool all = std::getenv("IMRESTORE_TEST_ALL_CASES") != nullptr;
        static const bool none = std::getenv("IMRESTORE_TEST_SKIP_GPU_ONLY") != nullptr;
        if (gpu_only && none) return false;
        return !gpu_only || all || !backend_->is_host_memory();
    }

    // The ways to run `op` on this backend: "" (the planner's pick), then
    // every listed kernel variant, then "prepared" (the planner with weights
    // from Backend::prepare) when the op has weights to prepare.
    std::vector<std::string> ways(Op op, bool has_weights) const {
        std::vector<std::string> w{""};
        for (const std::string& v : backend_->variants(op)) w.push_back(v);
        if (has_weights) w.push_back(kPrepared);
        return w;
    }
    // Selects a way (see ways()): "prepared" runs on the planner's pick.
    void select(Op op, const std::string& way) { backend_->force_variant(op, way == kPrepared ? "" : way); }
    // The activation types this backend runs `op` in (Backend::supports),
    // f32 NCHW first; each case runs in every one of them.
    std::vector<TensorType> types(Op op) const {
        std::vector<TensorType> t;
        for (DType d : imr::kDTypes)
            for (Layout l : imr::kLayouts)
                if (backend_->supports(op, d, l)) t.push_back({d, l});
        EXPECT_FALSE(t.empty()) << imr::op_name(op) << " supports no tensor type on " << backend_->name();
        return t;
    }

    // Runs the op once per way (ways()): a fresh NaN-poisoned, guarded output
    // of `out_type` each time, `a` with that output and the way's prepared
    // weights given to `call`; NotApplicable is counted, any other exception
    // fails. `check` gets each result (float, NCHW order); the input must
    // come back unchanged.
    template <class Args, class Call, class Check>
    void run_every_way(Op op, const Args& a, TensorType out_type, const DeviceBuffer& input,
                       const HostTensor& host_input, std::map<std::string, int>& ran,
                       std::map<std::string, int>& not_applicable, Call call, Check check) {
        Backend& be = *backend_;
        for (const std::string& way : ways(op, true)) {
            SCOPED_TRACE("kernel: " + (way.empty() ? std::string("the planner's pick") : way));
            select(op, way);
            GuardedOutput out(be, a.out_shape(), out_type);
            Args run = a;
            run.output = out.tensor();
            std::unique_ptr<imr::PreparedWeights> prepared;
            try {
                // Prepared for the types it runs in (a half-precision conv2d
                // packs its weights for its dtype; NotApplicable where no
                // kernel takes the types and shape).
                if (way == kPrepared) {
                    prepared = be.prepare(run);
                    if (!prepared) continue;  // nothing to prepare on this backend
                }
                run.prepared = prepared.get();
                call(run);
            } catch (const imr::NotApplicable&) {
                ++not_applicable[way];
                continue;
            } catch (const std::exception& e) {
                ADD_FAILURE() << "threw: " << e.what();
                continue;
            }
            ++ran[way];
            be.synchronize();
            way_ = way;
            check(out.download());
            expect_unchanged(be, input, host_input, "input");
        }
    }

    // After all cases: every variant must have run at least one case; prints
    // how many each ran.
    void report_ways(Op op, const std::map<std::string, int>& ran, const std::map<std::string, int>& not_applicable) {
        backend_->force_variant(op, "");
        std::cout << "[          ] " << imr::op_name(op) << " on " << backend_->name() << ":";
        for (const std::string& way : ways(op, true)) {
            const int n = ran.count(way) ? ran.at(way) : 0;
            if (way == kPrepared && n == 0) continue;  // this backend prepares nothing for these cases
            std::cout << " " << (way.empty() ? "planner" : way) << " " << n;
            if (not_applicable.count(way)) std::cout << " (" << not_applicable.at(way) << " not applicable)";
            EXPECT_GT(n, 0) << "kernel variant " << way << " ran no case";
        }
        std::cout << "\n";
    }

    // Runs an op's case table on this backend: one definition per op, for its
    // case type (below), called by the op's test (generated from the op list
    // at the end of this file).
    template <class Case>
    void run_cases(const std::vector<Case>& cases);

    static constexpr const char* kPrepared = "prepared";
    std::unique_ptr<Backend> backend_;
    std::string way_;  // the way (ways()) whose result run_every_way is checking
};

template <>
void OpsTest::run_cases(const std::vector<ResidualCase>& cases) {
    Backend& be = *backend_;
    double worst_fraction = 0;
    int skipped = 0;
    std::map<std::string, int> ran, not_applicable;
    for (const TensorType& type : types(Op::ResidualBlock)) {
        for (const ResidualCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());

            // As SOL-ExecBench draws them: x and biases ~ N(0,1), weights ~ N(0,1) / sqrt(3).
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            const float wscale = 1.0f / std::sqrt(3.0f);
            const HostTensor x = host_tensor(normal(rng, s.count()), s, type);
            const std::vector<float> w_in = normal(rng, size_t(k.hidden) * k.c * 9, wscale);
            const std::vector<float> b_in = normal(rng, size_t(k.hidden));
            const std::vector<float> w_out = normal(rng, size_t(k.c) * k.hidden * 9, wscale);
            const std::vector<float> b_out = normal(rng, size_t(k.c));

            DeviceBuffer dx = to_device(be, x), dw_in = to_device(be, w_in), db_in = to_device(be, b_in);
            DeviceBuffer dw_out = to_device(be, w_out), db_out = to_device(be, b_out);
            ResidualBlockArgs a;
            a.input = x.view, a.input.data = dx.data();
            a.hidden = k.hidden;
            a.conv_in_weight = dw_in.tensor({k.hidden, k.c, 3, 3}), a.conv_in_bias = db_in.tensor({1, k.hidden, 1, 1});
            a.conv_out_weight = dw_out.tensor({k.c, k.hidden, 3, 3}), a.conv_out_bias = db_out.tensor({1, k.c, 1, 1});

            ResidualBlockArgs host = a;
            host.input = x.view, host.output.data = nullptr;
            host.conv_in_weight.data = const_cast<float*>(w_in.data());
            host.conv_in_bias.data = const_cast<float*>(b_in.data());
            host.conv_out_weight.data = const_cast<float*>(w_out.data());
            host.conv_out_bias.data = const_cast<float*>(b_out.data());
            const std::vector<double> ref = imr::reference_residual_block(host);

            run_every_way(
                Op::ResidualBlock, a, type, dx, x, ran, not_applicable,
                [&](ResidualBlockArgs& run) { be.residual_block(run); },
                [&](const std::vector<float>& got) {
                    // Every case: the accuracy bound; SOL cases also by the benchmark's own rule.
                    worst_fraction = std::max(worst_fraction,
                                              expect_accurate(got, ref, {}, s, 9L * k.c + 9L * k.hidden, type.dtype));
                    if (k.sol_atol > 0) {
                        const Comparison r = compare(got, ref, {}, k.sol_atol, kSolRtol);
                        EXPECT_GE(double(r.within), kSolPassFraction * double(r.compared))
                            << r.compared - r.within << " of " << r.compared << " elements beyond atol " << k.sol_atol
                            << " + rtol " << kSolRtol << "; worst " << where(s, r.worst) << ": got " << got[r.worst]
                            << ", float64 " << ref[r.worst];
                    }
                });
        }
    }
    report_ways(Op::ResidualBlock, ran, not_applicable);
    std::cout << "[          ] worst error: " << worst_fraction << " of the accuracy bound; " << skipped
              << " GPU-only cases not run on " << be.name() << "\n";
}

template <>
void OpsTest::run_cases(const std::vector<ConvCase>& cases) {
    Backend& be = *backend_;
    double worst_fraction = 0;
    std::map<std::string, double> worst_by_way;  // per kernel variant: Winograd's error differs from direct's
    int skipped = 0;
    std::map<std::string, int> ran, not_applicable;
    // Every supported type in and out, and the network's ends where a half
    // type is supported: f32 NCHW in (the batch) -> half out, half in -> f32
    // NCHW out (with an f32 residual: the model input).
    std::vector<std::pair<TensorType, TensorType>> type_pairs;
    const TensorType f32{};
    for (const TensorType& type : types(Op::Conv2d)) type_pairs.push_back({type, type});
    for (const TensorType& type : types(Op::Conv2d))
        if (type.dtype != DType::F32 && be.supports(Op::Conv2d, DType::F32, Layout::NCHW))
            type_pairs.push_back({f32, type}), type_pairs.push_back({type, f32});
    for (const auto& [in_type, type] : type_pairs) {
        // The half type the kernel computes in (that of its input or output):
        // an f32 input, the weights and the bias (which prepare packs in that
        // type) are drawn as values of that type, so the kernel's own rounding of them
        // is exact and the bound stays that of the output.
        const DType compute = in_type.dtype != DType::F32 ? in_type.dtype : type.dtype;
        auto round_to_compute = [&](std::vector<float>& values) {
            if (compute == DType::F32) return;
            const HostTensor rounded = host_tensor(values, {1, 1, 1, int(values.size())}, {compute, Layout::NCHW});
            for (size_t i = 0; i < values.size(); ++i) values[i] = imr::load_float(rounded.view, i);
        };
        for (const ConvCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const bool sampled = k.macs() > kFullReferenceMacs;
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(in_type);
            if (in_type != type) trace << " -> " << type_name(type);
            trace << " on " << be.name() << ", seed " << seed << (sampled ? ", float64 on sampled elements" : "");
            SCOPED_TRACE(trace.str());

            std::mt19937_64 rng(seed);
            const Shape in{k.n, k.cin, k.h, k.w};
            std::vector<float> x_values = normal(rng, in.count());
            round_to_compute(x_values);
            const HostTensor x = host_tensor(x_values, in, in_type);
            std::vector<float> w = normal(rng, size_t(k.cout) * k.cin * k.k * k.k);
            round_to_compute(w);
            std::vector<float> bias = k.bias ? normal(rng, size_t(k.cout)) : std::vector<float>();
            round_to_compute(bias);  // as the weights: a kernel may take the bias in its type (cuBLASLt's 1x1 rows)

            DeviceBuffer dx = to_device(be, x), dw = to_device(be, w);
            DeviceBuffer db = k.bias ? to_device(be, bias) : DeviceBuffer();
            Conv2dArgs a;
            a.input = x.view, a.input.data = dx.data();
            a.out_channels = k.cout, a.kernel = k.k;
            a.pad_before = k.pad_before, a.pad_after = k.pad_after, a.pad_mode = k.mode;
            a.weight = dw.tensor({k.cout, k.cin, k.k, k.k});
            if (k.bias) a.bias = db.tensor({1, k.cout, 1, 1});
            a.activation = k.act;
            a.gate = k.gate;
            const Shape os = a.out_shape();
            a.output = Tensor{nullptr, os, type.dtype, type.layout};  // its type: the reference checks the residual's
            const HostTensor res = k.residual ? host_tensor(normal(rng, os.count()), os, type) : HostTensor();
            DeviceBuffer dres = k.residual ? to_device(be, res) : DeviceBuffer();
            if (k.residual) a.residual = res.view, a.residual.data = dres.data();
            if (k.multiply) a.residual_op = imr::ResidualOp::Multiply;

            Conv2dArgs host = a;
            host.input = x.view, host.weight.data = const_cast<float*>(w.data());
            if (k.bias) host.bias.data = const_cast<float*>(bias.data());
            if (k.residual) host.residual = res.view;
            host.output.data = nullptr;
            std::vector<double> ref;
            std::vector<size_t> index;
            bool have_ref = false;
            // The float64 reference, made for the first result to check: a
            // type pair no kernel takes for this case (an f32 end with many
            // channels) costs no float64 pass.
            auto make_reference = [&]() {
                if (have_ref) return;
                have_ref = true;
                if (sampled) {
                    std::uniform_int_distribution<size_t> pick(0, os.count() - 1);
                    index.resize(kSampledElements);
                    for (size_t& i : index) i = pick(rng);
                    ref.resize(index.size());
#pragma omp parallel for schedule(dynamic)
                    for (int j = 0; j < int(index.size()); ++j) {
                        const size_t i = index[size_t(j)];
                        ref[size_t(j)] = imr::reference_conv2d_at(host, int(i / (size_t(os.c) * os.h * os.w)),
                                                                  int(i / (size_t(os.h) * os.w) % os.c),
                                                                  int(i / size_t(os.w) % os.h), int(i % os.w));
                    }
                } else {
                    ref = imr::reference_conv2d(host);
                }
            };

            run_every_way(
                Op::Conv2d, a, type, dx, x, ran, not_applicable, [&](Conv2dArgs& run) { be.conv2d(run); },
                [&](const std::vector<float>& got) {
                    make_reference();
                    // Every case: the accuracy bound; GPU MODE test shapes also by the benchmark's own rule.
                    // The TF32 rows round the f32 operands of their products.
                    const double unit = way_.rfind("igemm_tf32", 0) == 0 ? kTf32Unit : 0;
                    const long reduction = long(k.cin) * k.k * k.k;
                    double fraction = 0;
                    if (k.gate) {
                        // The product's and the store's roundings; where
                        // the gate is not in the kernel's epilogue (CUDA:
                        // f32, 3x3, channels the pairing cannot split) A and
                        // B are stored in the output's type first, as the two
                        // stages would: two roundings more.
                        EXPECT_FALSE(sampled) << "a gated case must be small enough for a full reference";
                        Conv2dArgs sums = host;
                        sums.gate = false, sums.output.shape = sums.out_shape();
                        const double store = type.dtype == DType::F32 ? 0.0 : imr::unit_roundoff(type.dtype);
                        const double bound =
                            gate_bound(imr::reference_conv2d(sums), os,
                                       accuracy_bound(DType::F32, reduction, 1.0, unit), kFp32Unit + 3 * store);
                        fraction = expect_within(got, ref, std::vector<double>(got.size(), bound), os);
                    } else if (!k.multiply) {
                        fraction = expect_accurate(got, ref, index, os, reduction, type.dtype, unit);
                    } else {
                        // The sum's error (the bound of max |sum|) scaled by
                        // max |r|, the product's fp32 rounding and the store's.
                        EXPECT_FALSE(sampled) << "a multiplying case must be small enough for a full reference";
                        Conv2dArgs plain = host;
                        plain.residual = {};
                        const std::vector<double> sums = imr::reference_conv2d(plain);
                        double max_sum = 0, max_r = 0, max_ref = 0;
                        for (double v : sums) max_sum = std::max(max_sum, std::abs(v));
                        for (double v : logical_values(res.view)) max_r = std::max(max_r, std::abs(v));
                        for (double v : ref) max_ref = std::max(max_ref, std::abs(v));
                        const double store = type.dtype == DType::F32 ? 0.0 : imr::unit_roundoff(type.dtype);
                        const double bound = accuracy_bound(DType::F32, reduction, max_sum * max_r, unit) +
                                             (kFp32Unit + store) * max_ref;
                        fraction = expect_within(got, ref, std::vector<double>(got.size(), bound), os);
                    }
                    worst_fraction = std::max(worst_fraction, fraction);
                    worst_by_way[way_] = std::max(worst_by_way[way_], fraction);
                    if (k.gpu_mode && !k.gpu_only && unit == 0) {  // the benchmark's rule is fp32's
                        const Comparison r = compare(got, ref, index, kGpuModeTol, kGpuModeTol);
                        EXPECT_EQ(r.within, r.compared)
                            << r.compared - r.within << " of " << r.compared
                            << " elements beyond atol = rtol = " << kGpuModeTol << "; worst " << where(os, r.worst)
                            << ": got " << got[r.worst] << ", float64 " << value_at(ref, index, r.worst);
                    }
                });
        }
    }
    report_ways(Op::Conv2d, ran, not_applicable);
    std::cout << "[          ] worst error: " << worst_fraction << " of the accuracy bound; " << skipped
              << " GPU-only cases not run on " << be.name() << "\n[          ] worst error per way:";
    for (const auto& [way, fraction] : worst_by_way)
        std::cout << " " << (way.empty() ? "planner" : way) << " " << fraction;
    std::cout << "\n";
}

struct ShuffleCase {
    int n, c, h, w, factor;
    ShuffleDirection dir;
    bool residual = false;
};
std::ostream& operator<<(std::ostream& o, const ShuffleCase& k) {
    return o << "pixel_shuffle " << (k.dir == ShuffleDirection::ToDepth ? "to depth" : "to space") << " N=" << k.n
             << " C=" << k.c << " H=" << k.h << " W=" << k.w << " factor " << k.factor
             << (k.residual ? " + residual" : "");
}
std::vector<ShuffleCase> pixel_shuffle_cases() {
    const ShuffleDirection D = ShuffleDirection::ToDepth, S = ShuffleDirection::ToSpace;
    // Then NHWC8 padding on both sides (5 -> 20 channels, 8 -> 24 stored;
    // 20 -> 5; 9 -> 81, 16 -> 88; 2 -> 32 with a residual), odd sizes, batches.
    // The last ten: the wide side's channels a multiple of 8 (the vector
    // variant's cases: a U-Net's ways down and up, factors 2-4, residuals).
    return {
        {1, 3, 2, 2, 2, D},         {2, 3, 14, 38, 2, D},          {1, 1, 9, 27, 3, D},       {3, 2, 8, 4, 4, D, true},
        {1, 12, 1, 1, 2, S},        {2, 12, 7, 19, 2, S, true},    {1, 27, 5, 3, 3, S},       {2, 32, 3, 6, 4, S, true},
        {1, 3, 512, 386, 2, D},     {1, 12, 256, 193, 2, S, true}, {2, 5, 6, 10, 2, D, true}, {3, 20, 3, 5, 2, S, true},
        {1, 9, 9, 3, 3, D},         {2, 2, 12, 8, 4, D, true},     {1, 81, 2, 5, 3, S},       {2, 48, 5, 7, 4, S},
        {1, 48, 14, 22, 2, D},      {2, 8, 6, 10, 2, D, true},     {1, 16, 9, 12, 3, D},      {1, 8, 8, 4, 4, D, true},
        {1, 192, 7, 11, 2, S},      {2, 32, 3, 5, 2, S, true},     {1, 72, 3, 4, 3, S, true}, {1, 128, 2, 3, 4, S},
        {2, 256, 3, 5, 4, S, true}, {2, 24, 8, 12, 4, D, true},
    };
}

template <>
void OpsTest::run_cases(const std::vector<ShuffleCase>& cases) {
    Backend& be = *backend_;
    for (const std::string& way : ways(Op::PixelShuffle, false)) {
        select(Op::PixelShuffle, way);
        int ran = 0;  // cases the way took (a variant refuses those it cannot run)
        for (const TensorType& type : types(Op::PixelShuffle)) {
            for (const ShuffleCase& k : cases) {
                const uint64_t seed = draw_seed();
                std::ostringstream trace;
                trace << k << " in " << type_name(type) << " on " << be.name() << (way.empty() ? "" : " (" + way + ")")
                      << ", seed " << seed;
                SCOPED_TRACE(trace.str());
                std::mt19937_64 rng(seed);
                PixelShuffleArgs a;
                a.input.shape = {k.n, k.c, k.h, k.w}, a.factor = k.factor, a.direction = k.dir;
                const Shape os = a.out_shape();
                const HostTensor x = host_tensor(normal(rng, a.input.shape.count()), a.input.shape, type);
                const HostTensor res = k.residual ? host_tensor(normal(rng, os.count()), os, type) : HostTensor();
                DeviceBuffer dx = to_device(be, x);
                DeviceBuffer dres = k.residual ? to_device(be, res) : DeviceBuffer();
                GuardedOutput out(be, os, type);
                a.input = x.view, a.input.data = dx.data(), a.output = out.tensor();
                if (k.residual) a.residual = res.view, a.residual.data = dres.data();
                try {
                    be.pixel_shuffle(a);
                } catch (const imr::NotApplicable&) {
                    EXPECT_FALSE(way.empty()) << "the planner's pick refused its case";
                    continue;  // a variant that does not take this case
                } catch (const std::exception& e) {
                    ADD_FAILURE() << e.what();
                    continue;
                }
                ++ran;
                be.synchronize();
                const std::vector<float> got = out.download();
                expect_unchanged(be, dx, x, "input");
                PixelShuffleArgs host = a;
                host.input = x.view, host.residual = res.view, host.output.data = nullptr;
                const std::vector<double> ref = imr::reference_pixel_shuffle(host);
                // A permutation is exact; with the residual, one f32 add rounds by
                // half an ulp, and a narrower output type rounds once more.
                const double rtol =
                    k.residual ? kFp32Unit + (type.dtype == DType::F32 ? 0 : imr::unit_roundoff(type.dtype)) : 0.0;
                const Comparison r =
                    compare(got, ref, {}, k.residual ? imr::subnormal_roundoff(type.dtype) : 0.0, rtol);
                expect_all_finite(r, os);
                EXPECT_EQ(r.within, r.compared)
                    << "worst " << where(os, r.worst) << ": got " << got[r.worst] << ", float64 " << ref[r.worst];
            }
        }
        EXPECT_GT(ran, 0) << "pixel_shuffle " << (way.empty() ? "as planned" : way) << " ran none of the cases";
    }
    select(Op::PixelShuffle, "");
}

struct ConvertCase {
    int n, c, h, w;
    float scale = 1.0f;  // of the N(0,1) values: 3e4 overflows f16 in places, 1e-6 is f16-subnormal
};
std::ostream& operator<<(std::ostream& o, const ConvertCase& k) {
    return o << "convert N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << ", values N(0,1) x " << k.scale;
}
std::vector<ConvertCase> convert_cases() {
    return {
        {1, 1, 1, 1},   {2, 3, 7, 5},         {1, 8, 3, 4},          {1, 9, 5, 3},   {2, 12, 6, 11},
        {1, 3, 64, 97}, {1, 3, 17, 19, 3e4f}, {1, 3, 17, 19, 1e-6f}, {1, 48, 9, 13}, {3, 5, 1, 33, 1e3f},
    };
}

// Every pair of types the backend converts between (in and out), on every case.
// The reference rounds each value to the output type itself (reference_round:
// by scaling to the type's quantum), so the result must match exactly: the
// per-dtype tolerance of a conversion is its rounding, which the reference
// already applies.
template <>
void OpsTest::run_cases(const std::vector<ConvertCase>& cases) {
    Backend& be = *backend_;
    const std::vector<TensorType> types = this->types(Op::Convert);
    int pairs = 0;
    for (const TensorType& from : types) {
        for (const TensorType& to : types) {
            ++pairs;
            for (const ConvertCase& k : cases) {
                const uint64_t seed = draw_seed();
                std::ostringstream trace;
                trace << k << ", " << type_name(from) << " -> " << type_name(to) << " on " << be.name() << ", seed "
                      << seed;
                SCOPED_TRACE(trace.str());
                std::mt19937_64 rng(seed);
                const Shape s{k.n, k.c, k.h, k.w};
                const HostTensor x = host_tensor(normal(rng, s.count(), k.scale), s, from);
                DeviceBuffer dx = to_device(be, x);
                GuardedOutput out(be, s, to);
                imr::ConvertArgs a;
                a.input = x.view, a.input.data = dx.data(), a.output = out.tensor();
                ASSERT_NO_THROW(be.convert(a));
                be.synchronize();
                const std::vector<float> got = out.download();
                expect_unchanged(be, dx, x, "input");
                imr::ConvertArgs host = a;
                host.input = x.view, host.output.data = nullptr;
                const std::vector<double> ref = imr::reference_convert(host);
                size_t wrong = 0, first = 0;
                for (size_t i = got.size(); i-- > 0;)
                    if (!(double(got[i]) == ref[i])) ++wrong, first = i;
                EXPECT_EQ(wrong, 0u) << "first at " << where(s, first) << ": got " << got[first] << ", expected "
                                     << ref[first] << " (the input rounded to " << imr::dtype_name(to.dtype) << ")";
            }
        }
    }
    std::cout << "[          ] convert on " << be.name() << ": " << pairs << " type pairs\n";
}

// ---------------------------------------------------------------- image_planes
struct ImagePlanesCase {
    int n, h, w, channels, bit_depth, model_channels;
    int pad_h = 0, pad_w = 0;  // planes this much larger than the images (the size-multiple padding)
    float strength = 1;
};
std::ostream& operator<<(std::ostream& o, const ImagePlanesCase& k) {
    return o << "image_planes " << k.n << " image(s) " << k.w << "x" << k.h << ", " << k.channels << " channel(s) of "
             << k.bit_depth << " bits, model of " << k.model_channels << " channel(s), planes +" << k.pad_h << "x+"
             << k.pad_w << ", strength " << k.strength;
}
std::vector<ImagePlanesCase> image_planes_cases() {
    return {
        // Every channel mapping (image_planes_items) at both depths.
        {1, 1, 1, 3, 8, 3},
        {2, 7, 5, 3, 8, 3, 1, 3},
        {1, 13, 9, 4, 8, 3, 3, 7},
        {3, 5, 11, 1, 8, 1, 0, 5},
        {2, 6, 7, 2, 8, 1},
        {1, 9, 10, 1, 8, 3, 7, 6},   // gray through RGB: replicated in, mean out
        {2, 4, 33, 2, 16, 3, 4, 0},  // gray + alpha through RGB, 16 bits
        {1, 8, 9, 3, 8, 1, 0, 7},    // RGB through a 1-channel model: three items
        {2, 5, 3, 4, 16, 1, 3, 1},
        {1, 17, 23, 3, 16, 3, 15, 9},
        // The strength blend: between, 0 (the input itself) and beyond 1.
        {2, 7, 6, 3, 8, 3, 1, 2, 0.5f},
        {1, 5, 5, 4, 16, 3, 3, 3, 0.0f},
        {1, 6, 4, 1, 8, 3, 2, 4, 1.7f},
        {1, 7, 3, 3, 8, 1, 1, 5, 0.25f},
        // Larger than a few blocks of threads, with odd sides.
        {1, 61, 97, 3, 8, 3, 3, 7},
        {2, 40, 37, 4, 16, 3, 0, 3, 0.8f},
    };
}

// Both directions, on fresh random samples and planes. FromSamples must give
// the float64 value within f32's rounding of it (s * (1/max) is one
// rounding of s / max twice over); ToSamples each color sample within 0.5
// of the float64 value (the rounding to a level) plus the f32 roundings of
// the blend, the gray mean and the scaling (16 units of 2^-24 of the
// largest sample), alpha and the pixels past the samples untouched. The
// planes given to ToSamples span [-0.2, 1.2] (clamping at both ends), with a
// NaN and infinities among them (NaN -> 0), and a fifth of them a float
// step from a rounding boundary ((k + 0.5) / max): there the f32 steps
// decide the level, so a device backend must give the CPU backend's bytes
// exactly, in both directions (the CPU's are held to app/image's
// conversions by the runner's tests).
template <>
void OpsTest::run_cases(const std::vector<ImagePlanesCase>& cases) {
    Backend& be = *backend_;
    for (const ImagePlanesCase& k : cases) {
        const uint64_t seed = draw_seed();
        std::ostringstream trace;
        trace << k << " on " << be.name() << ", seed " << seed;
        SCOPED_TRACE(trace.str());
        std::mt19937_64 rng(seed);
        imr::ImageSamples s;
        s.n = k.n, s.h = k.h, s.w = k.w, s.channels = k.channels, s.bit_depth = k.bit_depth;
        const int items = imr::image_planes_items(k.model_channels, s.color_channels());
        ASSERT_GT(items, 0);
        const Shape ps{k.n * items, k.model_channels, k.h + k.pad_h, k.w + k.pad_w};
        const size_t sample_size = k.bit_depth / 8, guard = kGuard * sample_size;
        // The samples with kGuard samples of guard on each side.
        std::vector<unsigned char> host(s.bytes() + 2 * guard);
        std::uniform_int_distribution<int> byte(0, 255);
        for (unsigned char& b : host) b = (unsigned char)byte(rng);
        DeviceBuffer dsamples = to_device(be, host.data(), host.size());
        s.data = dsamples.as<unsigned char>() + guard;

        // From samples.
        GuardedOutput planes(be, ps);
        imr::ImagePlanesArgs from;
        from.direction = imr::PlanesDirection::FromSamples;
        from.samples = s, from.planes = planes.tensor();
        ASSERT_NO_THROW(be.image_planes(from));
        be.synchronize();
        const std::vector<float> got = planes.download();
        expect_unchanged(be, dsamples, host.data(), host.size(), "samples");
        imr::ImagePlanesArgs href = from;
        href.samples.data = host.data() + guard;
        std::vector<float> stand_in(ps.count());
        href.planes.data = stand_in.data();
        const std::vector<double> ref = imr::reference_image_planes_from_samples(href);
        const Comparison c = compare(got, ref, {}, 0, 0);
        expect_all_finite(c, ps);
        EXPECT_LE(c.max_abs_err, 2 * kFp32Unit) << "from samples, worst element " << where(ps, c.worst) << ": got "
                                                << got[c.worst] << ", float64 " << ref[c.worst];

        // To samples: fresh planes (and the model's input for the blend).
        std::uniform_real_distribution<float> value(-0.2f, 1.2f);
        std::vector<float> out(ps.count()), in(ps.count());
        for (float& v : out) v = value(rng);
        for (float& v : in) v = value(rng) * 0.8f + 0.1f;
        std::uniform_int_distribution<int> level(0, s.max_value() - 1), side(-1, 1);
        for (size_t i = 0; i < out.size(); i += 5) {
            const float boundary = (float(level(rng)) + 0.5f) / float(s.max_value());
            const int d = side(rng);
            out[i] = d == 0 ? boundary : std::nextafter(boundary, d < 0 ? 0.0f : 2.0f);
        }
        out[out.size() / 2] = std::numeric_limits<float>::quiet_NaN();
        out[out.size() / 3] = std::numeric_limits<float>::infinity();
        out[out.size() - 1] = -std::numeric_limits<float>::infinity();
        DeviceBuffer dout = to_device(be, out), din = to_device(be, in);
        imr::ImagePlanesArgs to;
        to.direction = imr::PlanesDirection::ToSamples;
        to.samples = s, to.strength = k.strength;
        to.planes = dout.tensor(ps);
        if (k.strength != 1) to.input = din.tensor(ps);
        ASSERT_NO_THROW(be.image_planes(to));
        be.synchronize();
        std::vector<unsigned char> after(host.size());
        be.download(after.data(), dsamples.data(), after.size());
        expect_unchanged(be, dout, out.data(), out.size() * sizeof(float), "planes");
        imr::ImagePlanesArgs tref = to;
        tref.samples.data = host.data() + guard;
        tref.planes.data = out.data();
        if (k.strength != 1) tref.input.data = in.data();
        const std::vector<double> expect = imr::reference_image_planes_to_samples(tref);
        EXPECT_EQ(std::memcmp(after.data(), host.data(), guard), 0) << "wrote before the samples";
        EXPECT_EQ(std::memcmp(after.data() + host.size() - guard, host.data() + host.size() - guard, guard), 0)
            << "wrote past the samples";
        auto sample = [&](const std::vector<unsigned char>& b, size_t i) {
            return sample_size == 2 ? double(reinterpret_cast<const uint16_t*>(b.data() + guard)[i])
                                    : double(b[guard + i]);
        };
        const double slack = 0.5 + 16 * kFp32Unit * s.max_value();
        const int color = s.color_channels();
        size_t j = 0, wrong = 0, alpha_changed = 0;
        double worst = 0;
        for (size_t p = 0; p < size_t(s.n) * s.h * s.w; ++p) {
            for (int ch = 0; ch < color; ++ch, ++j) {
                const double err = std::abs(sample(after, p * s.channels + ch) - expect[j]);
                if (!(err <= slack)) {
                    if (wrong++ == 0)
                        ADD_FAILURE() << "to samples: pixel " << p << " channel " << ch << " is "
                                      << sample(after, p * s.channels + ch) << ", float64 " << expect[j];
                }
                worst = std::max(worst, err);
            }
            if (color < s.channels)
                alpha_changed += sample(after, p * s.channels + color) != sample(host, p * s.channels + color);
        }
        EXPECT_EQ(wrong, 0u) << "samples off by more than " << slack << " (worst " << worst << ")";
        EXPECT_EQ(alpha_changed, 0u) << "alpha written";

        // A device: the CPU backend's bytes, in both directions.
        if (!be.is_host_memory()) {
            auto cpu = imr::make_cpu_backend();
            std::vector<float> cpu_planes(ps.count());
            imr::ImagePlanesArgs c = href;
            c.planes.data = cpu_planes.data();
            cpu->image_planes(c);
            EXPECT_EQ(std::memcmp(cpu_planes.data(), got.data(), got.size() * sizeof(float)), 0)
                << "from samples: not the CPU backend's floats";
            std::vector<unsigned char> cpu_samples = host;
            imr::ImagePlanesArgs ct = tref;
            ct.samples.data = cpu_samples.data() + guard;
            cpu->image_planes(ct);
            EXPECT_TRUE(cpu_samples == after) << "to samples: not the CPU backend's bytes";
        }
    }
}

// ---------------------------------------------------------------- memory-bound ops
// elementwise, activation, simple_gate and concat (layer_norm, depthwise_conv2d
// and window_mean, further down, take their inputs the same way, aligned). Their inputs may start
// anywhere (`misaligned`: one element into the buffer, not 16-byte aligned:
// the kernels' one-element paths), and NHWC8 inputs carry NaN in their
// padding channels: no op may let those into its output, and every op
// writes its own output's padding as zeros (GuardedOutput checks).

// An input in the backend's memory: `logical` rounded to `t`, `offset`
// elements into its buffer.
struct DeviceInput {
    HostTensor host;                   // the values (NHWC8 padding NaN), for the reference
    std::vector<unsigned char> image;  // the whole buffer as uploaded
    DeviceBuffer buf;
    Tensor tensor;  // host.view's shape and type, in buf
};
DeviceInput device_input(Backend& be, const std::vector<float>& logical, Shape s, TensorType t, int offset = 0) {
    DeviceInput d;
    d.host = host_tensor(logical, s, t);
    const Tensor& v = d.host.view;
    for (int n = 0; n < s.n; ++n)
        for (int y = 0; y < s.h; ++y)
            for (int x = 0; x < s.w; ++x)
                for (int c = s.c; c < imr::stored_channels(t.layout, s.c); ++c)
                    imr::store_float(v, v.offset(n, c, y, x), std::numeric_limits<float>::quiet_NaN());
    const size_t skip = size_t(offset) * imr::dtype_size(t.dtype);
    d.image.assign(skip, 0);
    d.image.insert(d.image.end(), d.host.bytes.begin(), d.host.bytes.end());
    d.buf = to_device(be, d.image.data(), d.image.size());
    d.tensor = v;
    d.tensor.data = d.buf.as<unsigned char>() + skip;
    return d;
}
void expect_unchanged(Backend& be, const DeviceInput& d) {
    expect_unchanged(be, d.buf, d.image.data(), d.image.size(), "input");
}

// Every element within atol + rtol * |ref|: these ops round each result on
// its own (no reduction), so the bound is per element. rtol: the float
// arithmetic's few roundings of 2^-24 (`float_roundings` of them) plus the
// store's unit roundoff in a narrower type; atol: float's smallest normal
// 2^-126 (below it float arithmetic is only absolutely accurate: GELU and
// SiLU of large negative inputs), plus the store's subnormal rounding, plus
// `float_atol` where the float formulation has an absolute error of its own.
void expect_per_element(const std::vector<float>& got, const std::vector<double>& ref, const Shape& s, DType stored,
                        int float_roundings, double float_atol = 0) {
    const double rtol = float_roundings * kFp32Unit + (stored == DType::F32 ? 0.0 : imr::unit_roundoff(stored));
    const double atol = float_atol + std::ldexp(1.0, -126) + imr::subnormal_roundoff(stored);
    const Comparison r = compare(got, ref, {}, atol, rtol);
    expect_all_finite(r, s);
    EXPECT_EQ(r.within, r.compared) << r.compared - r.within << " elements beyond " << atol << " + " << rtol
                                    << " |ref|; worst " << where(s, r.worst) << ": got " << got[r.worst] << ", float64 "
                                    << ref[r.worst];
}

void report_skipped(const char* op, int skipped, const Backend& be) {
    if (skipped)
        std::cout << "[          ] " << op << ": " << skipped << " GPU-only cases not run on " << be.name() << "\n";
}

struct ElementwiseCase {
    int n, c, h, w;
    imr::ElementwiseOp op;
    bool same_input = false;  // rhs is lhs (x * x)
    bool misaligned = false;  // lhs one element into its buffer
    bool gpu_only = false;
};
std::ostream& operator<<(std::ostream& o, const ElementwiseCase& k) {
    return o << "elementwise " << imr::elementwise_op_name(k.op) << " N=" << k.n << " C=" << k.c << " H=" << k.h
             << " W=" << k.w << (k.same_input ? " (rhs = lhs)" : "") << (k.misaligned ? " (lhs misaligned)" : "");
}
std::vector<ElementwiseCase> elementwise_cases() {
    const imr::ElementwiseOp A = imr::ElementwiseOp::Add, M = imr::ElementwiseOp::Mul;
    return {
        {1, 1, 1, 1, A},
        {2, 3, 7, 5, M},
        {1, 8, 3, 4, A},
        {3, 9, 5, 3, M},
        {2, 12, 6, 11, A, false, true},
        {1, 5, 1, 33, M, true},
        {2, 17, 9, 13, M, false, true},
        {1, 48, 31, 29, A},
        {2, 40, 499, 501, M, false, false, true},  // 20 M elements
    };
}

template <>
void OpsTest::run_cases(const std::vector<ElementwiseCase>& cases) {
    Backend& be = *backend_;
    int skipped = 0;
    for (const TensorType& type : types(Op::Elementwise)) {
        for (const ElementwiseCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            const DeviceInput lhs = device_input(be, normal(rng, s.count()), s, type, k.misaligned ? 1 : 0);
            const DeviceInput rhs = k.same_input ? DeviceInput() : device_input(be, normal(rng, s.count()), s, type);
            GuardedOutput out(be, s, type);
            imr::ElementwiseArgs a;
            a.lhs = lhs.tensor, a.rhs = k.same_input ? lhs.tensor : rhs.tensor, a.op = k.op, a.output = out.tensor();
            ASSERT_NO_THROW(be.elementwise(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, lhs);
            if (!k.same_input) expect_unchanged(be, rhs);
            imr::ElementwiseArgs host = a;
            host.lhs = lhs.host.view, host.rhs = k.same_input ? lhs.host.view : rhs.host.view;
            host.output.data = nullptr;
            // One float rounding (exact for f16/bf16 sums); the double rounding
            // through float to a narrower type adds at most 2^-24 relative.
            expect_per_element(got, imr::reference_elementwise(host), s, type.dtype, 2);
        }
    }
    report_skipped("elementwise", skipped, be);
}

struct ActivationCase {
    int n, c, h, w;
    imr::UnaryFunction function;
    float slope = 0.01f;
    float scale = 3.0f;  // of the N(0,1) inputs: 30 reaches SiLU's exp overflow (x < -88.7)
    bool misaligned = false;
    bool gpu_only = false;
};
std::ostream& operator<<(std::ostream& o, const ActivationCase& k) {
    o << "activation " << imr::unary_function_name(k.function);
    if (k.function == imr::UnaryFunction::LeakyReLU) o << " slope " << k.slope;
    return o << " N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << ", inputs N(0,1) x " << k.scale
             << (k.misaligned ? " (input misaligned)" : "");
}
std::vector<ActivationCase> activation_cases() {
    const imr::UnaryFunction R = imr::UnaryFunction::ReLU, L = imr::UnaryFunction::LeakyReLU,
                             G = imr::UnaryFunction::GELU, S = imr::UnaryFunction::SiLU;
    return {
        {1, 1, 1, 1, R},
        {2, 3, 7, 5, R},
        {1, 9, 5, 3, L},
        {3, 12, 6, 11, L, 0.2f, 3.0f, true},
        {2, 8, 3, 4, G},
        {1, 17, 9, 13, G, 0.01f, 3.0f, true},
        {2, 5, 1, 33, S},
        {1, 48, 31, 29, S, 0.01f, 30.0f},
        {1, 6, 13, 7, G, 0.01f, 30.0f},
        {2, 40, 499, 501, G, 0.01f, 3.0f, false, true},  // 20 M elements
    };
}

template <>
void OpsTest::run_cases(const std::vector<ActivationCase>& cases) {
    Backend& be = *backend_;
    int skipped = 0;
    for (const TensorType& type : types(Op::Activation)) {
        for (const ActivationCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            const DeviceInput x = device_input(be, normal(rng, s.count(), k.scale), s, type, k.misaligned ? 1 : 0);
            GuardedOutput out(be, s, type);
            imr::ActivationArgs a;
            a.input = x.tensor, a.function = k.function, a.slope = k.slope, a.output = out.tensor();
            ASSERT_NO_THROW(be.activation(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, x);
            imr::ActivationArgs host = a;
            host.input = x.host.view, host.output.data = nullptr;
            // erfcf / expf err by a few ulp, then a product or quotient or two.
            // GELU: the argument x / sqrt 2 rounds by 2^-24 relative, which erfc
            // turns into x/2 * 2/sqrt(pi) e^(-x^2/2) * 2^-24 |x/sqrt 2| =
            // 2^-24 x^2 phi(x) <= 0.3 * 2^-24 absolute (largest at x^2 = 2): a
            // large relative error only where GELU is tiny (x < -4).
            const double gelu_atol = k.function == imr::UnaryFunction::GELU ? kFp32Unit : 0.0;
            expect_per_element(got, imr::reference_activation(host), s, type.dtype, 16, gelu_atol);
        }
    }
    report_skipped("activation", skipped, be);
}

struct SimpleGateCase {
    int n, c, h, w;
    bool misaligned = false;
    bool gpu_only = false;
};
std::ostream& operator<<(std::ostream& o, const SimpleGateCase& k) {
    return o << "simple_gate N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w
             << (k.misaligned ? " (input misaligned)" : "");
}
// C/2 of 1..32: multiples of 8 and 4 (whole vectors in NHWC8) and not; H W
// odd and even (NCHW half-image runs of whole vectors and not).
std::vector<SimpleGateCase> simple_gate_cases() {
    return {
        {1, 2, 1, 1},    {2, 4, 7, 5},         {1, 12, 3, 4},
        {3, 18, 5, 3},   {2, 16, 6, 11},       {1, 10, 9, 13, true},
        {2, 64, 17, 19}, {1, 8, 32, 32, true}, {2, 64, 401, 397, false, true},  // 20 M input elements
    };
}

template <>
void OpsTest::run_cases(const std::vector<SimpleGateCase>& cases) {
    Backend& be = *backend_;
    int skipped = 0;
    for (const TensorType& type : types(Op::SimpleGate)) {
        for (const SimpleGateCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            const DeviceInput x = device_input(be, normal(rng, s.count()), s, type, k.misaligned ? 1 : 0);
            imr::SimpleGateArgs a;
            a.input = x.tensor;
            GuardedOutput out(be, a.out_shape(), type);
            a.output = out.tensor();
            ASSERT_NO_THROW(be.simple_gate(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, x);
            imr::SimpleGateArgs host = a;
            host.input = x.host.view, host.output.data = nullptr;
            expect_per_element(got, imr::reference_simple_gate(host), a.out_shape(), type.dtype, 2);
        }
    }
    report_skipped("simple_gate", skipped, be);
}

struct ConcatCase {
    int n, h, w;
    std::vector<int> channels;  // of each input
    bool misaligned = false;    // input 0 one element into its buffer
    bool repeat = false;        // the last input is input 0 again (torch.cat([x, ..., x]))
    bool gpu_only = false;
};
std::ostream& operator<<(std::ostream& o, const ConcatCase& k) {
    o << "concat N=" << k.n << " H=" << k.h << " W=" << k.w << " C=";
    for (size_t i = 0; i < k.channels.size(); ++i) o << (i ? "+" : "") << k.channels[i];
    return o << (k.misaligned ? " (input 0 misaligned)" : "") << (k.repeat ? " (the last input is input 0)" : "");
}
// Channel offsets that are multiples of 8 and 4 (whole vectors in NHWC8)
// and not, runs of C_k H W that are whole vectors (NCHW) and not, and the
// most inputs allowed.
std::vector<ConcatCase> concat_cases() {
    std::vector<int> sixteen;
    for (int c = 1; c <= imr::kConcatMaxInputs; ++c) sixteen.push_back(c);
    return {
        {1, 1, 1, {1, 1}},
        {2, 7, 5, {3, 1}},
        {1, 9, 13, {8, 8}},
        {3, 5, 3, {4, 4, 4}},
        {2, 6, 11, {16, 3, 5}},
        {2, 4, 4, sixteen},
        {1, 11, 9, {32, 32}},
        {1, 3, 33, {5, 7}, true},
        {2, 5, 7, {6, 2, 6}, false, true},
        {2, 8, 8, {8, 12}, true},
        {2, 401, 397, {32, 32, 3}, false, false, true},  // 21 M output elements
    };
}

template <>
void OpsTest::run_cases(const std::vector<ConcatCase>& cases) {
    Backend& be = *backend_;
    int skipped = 0;
    for (const TensorType& type : types(Op::Concat)) {
        for (const ConcatCase& k : cases) {
            if (!runs(k.gpu_only)) {
                ++skipped;
                continue;
            }
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const size_t count = k.channels.size();
            const size_t distinct = k.repeat ? count - 1 : count;
            std::vector<DeviceInput> inputs;
            for (size_t i = 0; i < distinct; ++i) {
                const Shape s{k.n, k.channels[i], k.h, k.w};
                inputs.push_back(device_input(be, normal(rng, s.count()), s, type, i == 0 && k.misaligned ? 1 : 0));
            }
            imr::ConcatArgs a, host;
            for (size_t i = 0; i < count; ++i) {
                const DeviceInput& d = inputs[i < distinct ? i : 0];
                a.inputs.push_back(d.tensor);
                host.inputs.push_back(d.host.view);
            }
            GuardedOutput out(be, a.out_shape(), type);
            a.output = out.tensor();
            ASSERT_NO_THROW(be.concat(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            for (const DeviceInput& d : inputs) expect_unchanged(be, d);
            host.output = a.output, host.output.data = nullptr;
            const std::vector<double> ref = imr::reference_concat(host);
            // A copy: exact.
            size_t wrong = 0, first = 0;
            for (size_t i = got.size(); i-- > 0;)
                if (!(double(got[i]) == ref[i])) ++wrong, first = i;
            EXPECT_EQ(wrong, 0u) << "first at " << where(a.out_shape(), first) << ": got " << got[first]
                                 << ", expected " << ref[first];
        }
    }
    report_skipped("concat", skipped, be);
}

// ---------------------------------------------------------------- layer_norm
struct LayerNormCase {
    int n, c, h, w;
    float offset = 0.0f;  // added to the N(0,1) inputs: a common mean far larger than the spread
    float eps = 1e-6f;
};
std::ostream& operator<<(std::ostream& o, const LayerNormCase& k) {
    return o << "layer_norm N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << ", inputs " << k.offset
             << " + N(0,1), eps " << k.eps;
}
std::vector<LayerNormCase> layer_norm_cases() {
    return {
        // C = 1: every deviation is 0, the output is the bias.
        {1, 1, 1, 1},
        {2, 1, 3, 5},
        // Channel counts below, at and around NHWC8's vectors (1..8 per
        // pixel: 1, 2, 4 and 8 lanes per pixel on CUDA), odd sizes, batches.
        {2, 3, 7, 5},
        {1, 8, 3, 4},
        {1, 9, 5, 3},
        {3, 12, 6, 11},
        {2, 16, 9, 13},
        {1, 24, 5, 17},
        {2, 32, 11, 7},
        {1, 33, 4, 9},
        {1, 64, 13, 19},
        // An eps that matters next to the variance.
        {1, 3, 5, 7, 0.0f, 0.5f},
        // |mean| >> the deviations: a one-pass sum of squares would cancel.
        {2, 64, 6, 5, 100.0f},
        {1, 7, 9, 3, 30.0f},
        // 25 and 38 vectors per NHWC8 pixel (a warp per pixel), and 138 (more
        // than the 128 a warp keeps in registers: the re-read path).
        {1, 200, 3, 5},
        {1, 300, 2, 3},
        {1, 1100, 2, 3},
        // CUDA NCHW: 100 channels (8 groups of 13), 512 (16 groups of 32,
        // the most a thread holds), 520 (the three-pass kernel); NHWC8: 13,
        // 64 and 65 vectors (16 lanes; 32 lanes with 2 and 4 a lane).
        {1, 100, 5, 7},
        {1, 512, 3, 7},
        {2, 520, 3, 5},
        // CUDA NHWC8: more pixels than one wave of blocks takes (1200 blocks
        // of 16 pixels), so the grid-stride loop runs a second time.
        {1, 200, 160, 120},
        // Several CPU runs of pixels per row, many CUDA blocks.
        {1, 32, 128, 97},
        {2, 5, 300, 301},
    };
}

// The bound, derived for two-pass float arithmetic (what every kernel does)
// per pixel from the exact statistics of its (rounded) inputs: mean mu,
// sigma = sqrt(var + eps), A = mean of |x_c|, z_c = (x_c - mu) / sigma, and
// u = 2^-24, gamma_k = k u / (1 - k u):
//   - the mean, any summation order, then the division: |e| <= gamma_C * A;
//   - d_c = x_c - mean rounds once (u); sum d_c^2 / C: the cross term
//     2 e sum(d_c) vanishes, so (v + e^2)(1 + theta_(C+3)); + eps, sqrt and
//     1/x: the scale is (1/sigma)(1 + eps_s), |eps_s| <= (C/2 + 4) u +
//     e^2 / (2 sigma^2);
//   - (d * scale) * w + b: 2 products and the add (u each).
// So |out_c - ref_c| <= |w_c| m + |w_c z_c| ((C/2 + 8) u + m^2 / 2) + u |b_c|
// with m = gamma_C A / sigma (the mean's error, in output units), to first
// order; we allow (C/2 + 10) u for the second-order terms. An f16/bf16 output
// adds its rounding of the float result (u_out |ref|, subnormal quantum).
std::vector<double> layer_norm_bounds(const std::vector<float>& x, const Shape& s, const std::vector<float>& weight,
                                      const std::vector<float>& bias, float eps, const std::vector<double>& ref,
                                      DType stored) {
    const double u = kFp32Unit, C = s.c;
    const double gamma = C * u / (1 - C * u);
    std::vector<double> bound(ref.size());
    const size_t plane = size_t(s.h) * s.w;
    for (int n = 0; n < s.n; ++n)
        for (size_t p = 0; p < plane; ++p) {
            const size_t base = size_t(n) * s.c * plane + p;
            double mean = 0, abs_mean = 0, var = 0;
            for (int c = 0; c < s.c; ++c)
                mean += x[base + c * plane], abs_mean += std::abs(double(x[base + c * plane]));
            mean /= C, abs_mean /= C;
            for (int c = 0; c < s.c; ++c) var += (x[base + c * plane] - mean) * (x[base + c * plane] - mean);
            const double sigma = std::sqrt(var / C + double(eps));
            const double m = gamma * abs_mean / sigma;
            for (int c = 0; c < s.c; ++c) {
                const size_t i = base + c * plane;
                const double w = std::abs(double(weight[size_t(c)])), z = std::abs(x[i] - mean) / sigma;
                double b =
                    w * m * (1 + u) + w * z * ((C / 2 + 10) * u + m * m / 2) + u * std::abs(double(bias[size_t(c)]));
                if (stored != DType::F32)
                    b += imr::unit_roundoff(stored) * (std::abs(ref[i]) + b) + imr::subnormal_roundoff(stored);
                bound[i] = b;
            }
        }
    return bound;
}

template <>
void OpsTest::run_cases(const std::vector<LayerNormCase>& cases) {
    Backend& be = *backend_;
    double worst_fraction = 0;
    for (const TensorType& type : types(Op::LayerNorm)) {
        for (const LayerNormCase& k : cases) {
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            std::vector<float> values = normal(rng, s.count());
            for (float& v : values) v += k.offset;
            const DeviceInput dx = device_input(be, values, s, type);  // NHWC8 padding NaN
            const HostTensor& x = dx.host;
            const std::vector<float> weight = normal(rng, size_t(k.c)), bias = normal(rng, size_t(k.c));
            DeviceBuffer dw = to_device(be, weight), db = to_device(be, bias);
            GuardedOutput out(be, s, type);
            imr::LayerNormArgs a;
            a.input = dx.tensor, a.output = out.tensor();
            a.weight = dw.tensor({1, k.c, 1, 1}), a.bias = db.tensor({1, k.c, 1, 1});
            a.eps = k.eps;
            ASSERT_NO_THROW(be.layer_norm(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, dx);
            imr::LayerNormArgs host = a;
            host.input = x.view, host.output.data = nullptr;
            host.weight.data = const_cast<float*>(weight.data()), host.bias.data = const_cast<float*>(bias.data());
            const std::vector<double> ref = imr::reference_layer_norm(host);
            const std::vector<double> bound =
                layer_norm_bounds(logical_values(x.view), s, weight, bias, k.eps, ref, type.dtype);
            worst_fraction = std::max(worst_fraction, expect_within(got, ref, bound, s));
        }
    }
    std::cout << "[          ] layer_norm on " << be.name() << ": worst error " << worst_fraction << " of its bound\n";
}

// ---------------------------------------------------------------- depthwise_conv2d
struct DepthwiseCase {
    int n, c, h, w, k;
    int pad_before = 0, pad_after = 0;
    PadMode mode = PadMode::Zero;
    bool bias = false;
    bool gate = false;  // the fused simple gate: C/2 outputs, first half * second half
};
std::ostream& operator<<(std::ostream& o, const DepthwiseCase& k) {
    return o << "depthwise_conv2d N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << " K=" << k.k << " pad "
             << k.pad_before << "/" << k.pad_after << " " << imr::pad_mode_name(k.mode)
             << (k.bias ? " bias" : " no bias") << (k.gate ? " gate" : "");
}
// Size-keeping padding (what model files use): K/2 on each side.
DepthwiseCase dw_same(int n, int c, int h, int w, int k, PadMode mode, bool bias, bool gate = false) {
    return {n, c, h, w, k, k / 2, k / 2, mode, bias, gate};
}
std::vector<DepthwiseCase> depthwise_conv2d_cases() {
    const PadMode Z = PadMode::Zero, R = PadMode::Reflect, P = PadMode::Replicate;
    return {
        // Every K in every pad mode, odd sizes, batches > 1, channel counts
        // that are not multiples of 8.
        dw_same(2, 3, 17, 23, 3, Z, true),
        dw_same(2, 3, 17, 23, 3, R, false),
        dw_same(2, 3, 17, 23, 3, P, true),
        dw_same(1, 9, 13, 10, 1, Z, true),
        dw_same(3, 5, 12, 9, 5, Z, false),
        dw_same(1, 12, 12, 9, 5, R, true),
        dw_same(2, 7, 11, 14, 5, P, true),
        dw_same(1, 1, 19, 15, 7, Z, true),
        dw_same(2, 16, 9, 21, 7, R, true),
        dw_same(1, 33, 10, 8, 7, P, false),
        dw_same(2, 64, 13, 21, 3, R, true),
        // Reflect at its widest (pad = size - 1); images smaller than K.
        {1, 4, 4, 5, 7, 3, 3, R, true},
        {1, 3, 1, 1, 3, 1, 1, Z, true},
        {1, 3, 1, 2, 3, 1, 1, P, true},
        {2, 10, 3, 2, 7, 3, 3, Z, true},
        // No padding; one padded side only.
        {2, 5, 9, 11, 5, 0, 0, Z, false},
        {1, 6, 8, 10, 3, 0, 2, P, true},
        {1, 6, 8, 10, 3, 2, 0, R, false},
        // Wide pixels (CUDA NHWC8: several blocks of 16 4-channel quads, the
        // last partial; 6 quads a block), widths that are not whole runs.
        dw_same(2, 136, 11, 37, 3, Z, true),
        dw_same(1, 24, 7, 41, 5, P, true),
        {1, 72, 9, 30, 3, 0, 2, R, true},
        dw_same(1, 72, 9, 13, 7, R, true),
        // Larger: many CUDA blocks, several CPU bands.
        dw_same(2, 16, 64, 97, 7, R, true),
        dw_same(1, 32, 131, 77, 3, Z, true),
        // The fused gate: C/2 a multiple of 8 (NAFNet's), of 4 but not 8 (a
        // padding quad in CUDA's NHWC8 output), odd or 2 (the second half's
        // quads unaligned there), 1; wide pixels (several blocks of quads);
        // every K and pad mode; one padded side.
        dw_same(2, 16, 13, 21, 3, Z, true, true),
        dw_same(1, 24, 9, 11, 5, R, true, true),
        dw_same(2, 6, 17, 23, 3, P, false, true),
        dw_same(1, 4, 8, 9, 7, Z, true, true),
        dw_same(3, 2, 5, 7, 1, Z, true, true),
        dw_same(1, 136, 11, 37, 3, Z, true, true),
        dw_same(1, 128, 7, 30, 3, R, true, true),
        {1, 10, 8, 10, 3, 0, 2, P, true, true},
        dw_same(1, 64, 67, 41, 3, Z, true, true),
    };
}

template <>
void OpsTest::run_cases(const std::vector<DepthwiseCase>& cases) {
    Backend& be = *backend_;
    double worst_fraction = 0;
    for (const TensorType& type : types(Op::DepthwiseConv2d)) {
        for (const DepthwiseCase& k : cases) {
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            const DeviceInput dx = device_input(be, normal(rng, s.count()), s, type);  // NHWC8 padding NaN
            const HostTensor& x = dx.host;
            const std::vector<float> weight = normal(rng, size_t(k.c) * k.k * k.k);
            const std::vector<float> bias = k.bias ? normal(rng, size_t(k.c)) : std::vector<float>();
            DeviceBuffer dw = to_device(be, weight);
            DeviceBuffer db = k.bias ? to_device(be, bias) : DeviceBuffer();
            imr::DepthwiseConv2dArgs a;
            a.input = dx.tensor;
            a.kernel = k.k, a.pad_before = k.pad_before, a.pad_after = k.pad_after, a.pad_mode = k.mode;
            a.gate = k.gate;
            a.weight = dw.tensor({k.c, 1, k.k, k.k});
            if (k.bias) a.bias = db.tensor({1, k.c, 1, 1});
            const Shape os = a.out_shape();
            GuardedOutput out(be, os, type);
            a.output = out.tensor();
            ASSERT_NO_THROW(be.depthwise_conv2d(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, dx);
            imr::DepthwiseConv2dArgs host = a;
            host.input = x.view, host.output.data = nullptr, host.weight.data = const_cast<float*>(weight.data());
            if (k.bias) host.bias.data = const_cast<float*>(bias.data());
            const std::vector<double> ref = imr::reference_depthwise_conv2d(host);
            const long terms = long(k.k) * k.k + 1;  // a dot product of K * K terms plus the bias, in float
            if (!k.gate) {
                worst_fraction = std::max(worst_fraction, expect_accurate(got, ref, {}, os, terms, type.dtype));
                continue;
            }
            // The gate multiplies two such sums in float, rounded once to the output.
            imr::DepthwiseConv2dArgs halves = host;
            halves.gate = false, halves.output.shape = halves.out_shape();
            const double store = type.dtype == DType::F32 ? 0.0 : imr::unit_roundoff(type.dtype);
            const double bound = gate_bound(imr::reference_depthwise_conv2d(halves), os,
                                            accuracy_bound(DType::F32, terms, 1.0), kFp32Unit + store);
            worst_fraction =
                std::max(worst_fraction, expect_within(got, ref, std::vector<double>(got.size(), bound), os));
        }
    }
    std::cout << "[          ] depthwise_conv2d on " << be.name() << ": worst error " << worst_fraction
              << " of the accuracy bound\n";
}

// ---------------------------------------------------------------- window_mean
struct WindowMeanCase {
    int n, c, h, w, window;
    float offset = 0.0f, scale = 1.0f;  // inputs offset + scale * N(0,1)
};
std::ostream& operator<<(std::ostream& o, const WindowMeanCase& k) {
    return o << "window_mean N=" << k.n << " C=" << k.c << " H=" << k.h << " W=" << k.w << " window " << k.window
             << ", inputs " << k.offset << " + " << k.scale << " * N(0,1)";
}
std::vector<WindowMeanCase> window_mean_cases() {
    return {
        // window 1 (the identity), even and odd windows, odd sizes, batches,
        // channel counts that are not multiples of 8.
        {1, 1, 1, 1, 1},
        {2, 3, 7, 5, 1},
        {2, 3, 7, 5, 2},
        {1, 9, 5, 3, 3},
        {1, 12, 6, 11, 4},
        {3, 5, 9, 13, 5},
        {2, 8, 13, 17, 16},
        // Windows larger than the image (every box clipped on both sides).
        {1, 3, 7, 5, 1024},
        {2, 2, 65, 1, 9},
        {1, 2, 1, 77, 12},
        // Several CUDA chunks (of at least 2 windows; the last one shorter)
        // along both axes; several CPU bands.
        {1, 4, 40, 70, 33},
        {1, 9, 100, 150, 7},
        {1, 17, 37, 29, 64},
        // 12 channels (a vector half padding, an odd channel pair of it
        // real) in NHWC8, batches; windows over 32 in several chunks along
        // both axes, on both sides of CUDA's channel-pair limit (64: its
        // rows pass one channel a thread above it, a pair below).
        {2, 12, 33, 44, 6},
        {1, 3, 150, 150, 33},
        {1, 12, 300, 400, 65},
        // A large image of image-like values (mean 0.5): a float prefix sum
        // over its rows would lose ~W / window * 2^-24 of each box sum.
        {1, 3, 600, 800, 5, 0.5f, 0.1f},
        // The largest windows on a wide image.
        {1, 1, 300, 1100, 1000, 0.5f, 0.1f},
        {1, 2, 50, 1500, 1024},
    };
}

// The bound: every kernel sums in double (error ~2^-42 of the summed
// magnitudes at most) and rounds the mean to float once (u |ref|); CUDA's
// two passes also round each column sum to float in its scratch, an error of at
// most u * (sum of |x| over the box) / count = u * (the box mean of |x|).
// So |out - ref| <= u (2 * mean_box |x| + |ref|), the factor 2 covering the
// double sums; an f16/bf16 output adds its rounding of the float result.
template <>
void OpsTest::run_cases(const std::vector<WindowMeanCase>& cases) {
    Backend& be = *backend_;
    double worst_fraction = 0;
    for (const TensorType& type : types(Op::WindowMean)) {
        for (const WindowMeanCase& k : cases) {
            const uint64_t seed = draw_seed();
            std::ostringstream trace;
            trace << k << " in " << type_name(type) << " on " << be.name() << ", seed " << seed;
            SCOPED_TRACE(trace.str());
            std::mt19937_64 rng(seed);
            const Shape s{k.n, k.c, k.h, k.w};
            std::vector<float> values = normal(rng, s.count(), k.scale);
            for (float& v : values) v += k.offset;
            const DeviceInput dx = device_input(be, values, s, type);  // NHWC8 padding NaN
            const HostTensor& x = dx.host;
            GuardedOutput out(be, s, type);
            imr::WindowMeanArgs a;
            a.input = dx.tensor, a.output = out.tensor(), a.window = k.window;
            ASSERT_NO_THROW(be.window_mean(a));
            be.synchronize();
            const std::vector<float> got = out.download();
            expect_unchanged(be, dx);
            imr::WindowMeanArgs host = a;
            host.input = x.view, host.output.data = nullptr;
            const std::vector<double> ref = imr::reference_window_mean(host);
            std::vector<float> magnitudes = logical_values(x.view);
            for (float& v : magnitudes) v = std::abs(v);
            host.input = imr::f32_nchw(magnitudes.data(), s);  // |x| as f32: its output type must match
            host.output = imr::f32_nchw(nullptr, s);
            const std::vector<double> abs_mean = imr::reference_window_mean(host);
            std::vector<double> bound(ref.size());
            for (size_t i = 0; i < ref.size(); ++i) {
                bound[i] = kFp32Unit * (2 * abs_mean[i] + std::abs(ref[i]));
                if (type.dtype != DType::F32)
                    bound[i] += imr::unit_roundoff(type.dtype) * std::abs(ref[i]) + imr::subnormal_roundoff(type.dtype);
            }
            worst_fraction = std::max(worst_fraction, expect_within(got, ref, bound, s));
        }
    }
    std::cout << "[          ] window_mean on " << be.name() << ": worst error " << worst_fraction << " of its bound\n";
}

// The host's conversions (tensor.h), which the CPU kernels and the tests'
// inputs use, against the reference's rounding: every f16 and bf16 value
// round-trips, and random floats of every magnitude, ties and the edges of
// the ranges round to nearest even.
TEST(TensorTypes, HostConversionsRoundToNearestEven) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f16 = imr::f16_to_float(uint16_t(h)), bf16 = imr::bf16_to_float(uint16_t(h));
        if (!std::isnan(f16)) EXPECT_EQ(imr::float_to_f16(f16), h) << std::hex << h;
        if (!std::isnan(bf16)) EXPECT_EQ(imr::float_to_bf16(bf16), h) << std::hex << h;
        if (!std::isnan(f16)) {  // the midpoint to the next value up rounds to the even one of the two
            const float next = imr::f16_to_float(uint16_t(h + 1));
            if (std::isfinite(next) && std::signbit(next) == std::signbit(f16)) {
                const double mid = (double(f16) + double(next)) / 2;
                EXPECT_EQ(double(imr::f16_to_float(imr::float_to_f16(float(mid)))),
                          imr::reference_round(mid, DType::F16))
                    << "tie between " << f16 << " and " << next;
            }
        }
    }
    const uint64_t seed = draw_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<uint32_t> bits;
    for (int i = 0; i < 200000; ++i) {
        uint32_t u = bits(rng);
        float v;
        std::memcpy(&v, &u, sizeof v);
        if (std::isnan(v)) continue;
        EXPECT_EQ(double(imr::f16_to_float(imr::float_to_f16(v))), imr::reference_round(v, DType::F16)) << v;
        EXPECT_EQ(double(imr::bf16_to_float(imr::float_to_bf16(v))), imr::reference_round(v, DType::BF16)) << v;
    }
    EXPECT_EQ(imr::float_to_f16(65519.0f), 0x7bffu);  // the largest finite half, 65504
    EXPECT_EQ(imr::float_to_f16(65520.0f), 0x7c00u);  // rounds to infinity
    EXPECT_TRUE(std::isnan(imr::f16_to_float(imr::float_to_f16(std::nanf("")))));
    EXPECT_TRUE(std::isnan(imr::bf16_to_float(imr::float_to_bf16(std::nanf("")))));
}

TEST_P(OpsTest, RejectsInvalidArgs) {
    Backend& be = *backend_;
    // Each row's call must throw imr::Error. Rows are counted per op, so an
    // op of the list without one fails at the end.
    std::array<int, imr::kOpCount> rows{};
    auto refuses = [&](Op op, const char* what, const auto& call) {
        ++rows[size_t(op)];
        EXPECT_THROW(call(), imr::Error) << what;
    };
    const size_t f = sizeof(float);
    DeviceBuffer input(be, 2 * 3 * 8 * 8 * f), output(be, 2 * 12 * 8 * 8 * f), weight(be, 3 * 3 * 9 * 9 * f),
        bias(be, 32 * f);
    const Tensor in = input.tensor({2, 3, 8, 8});

    Conv2dArgs conv;
    conv.input = in;
    conv.out_channels = 3, conv.kernel = 3;
    conv.output = output.tensor({2, 3, 6, 6});
    conv.weight = weight.tensor({3, 3, 3, 3}), conv.bias = bias.tensor({1, 3, 1, 1});
    ASSERT_NO_THROW(be.conv2d(conv)) << "the valid baseline must run";
    be.synchronize();

    Conv2dArgs bad = conv;
    bad.kernel = 9;  // larger than the 8x8 image, no padding
    refuses(Op::Conv2d, "kernel larger than the image", [&] { be.conv2d(bad); });
    bad = conv;
    bad.pad_before = bad.pad_after = 8, bad.pad_mode = PadMode::Reflect;  // reflect extends by at most 7
    refuses(Op::Conv2d, "reflect padding as wide as the image", [&] { be.conv2d(bad); });
    bad = conv;
    bad.output.data = static_cast<char*>(in.data) + 4;
    refuses(Op::Conv2d, "output overlapping input", [&] { be.conv2d(bad); });
    bad = conv;
    bad.out_channels = 0;
    refuses(Op::Conv2d, "zero output channels", [&] { be.conv2d(bad); });
    bad = conv;
    bad.weight = {};
    refuses(Op::Conv2d, "null weight", [&] { be.conv2d(bad); });
    bad = conv;
    bad.weight.shape = {3, 3, 5, 5};
    refuses(Op::Conv2d, "weight of another kernel size", [&] { be.conv2d(bad); });
    bad = conv;
    bad.output.shape = {2, 3, 8, 8};
    refuses(Op::Conv2d, "output of another shape", [&] { be.conv2d(bad); });
    bad = conv;
    bad.weight.dtype = DType::F16;
    refuses(Op::Conv2d, "f16 weights (model weights are f32; prepare converts)", [&] { be.conv2d(bad); });
    bad = conv;
    bad.output.layout = Layout::NHWC;  // allowed by check_args, but no kernel of either backend writes it
    refuses(Op::Conv2d, "an output layout the backend does not support", [&] { be.conv2d(bad); });
    bad = conv;
    bad.residual = output.tensor({2, 3, 6, 6}, DType::BF16);
    bad.residual.data = static_cast<char*>(output.data()) + 2 * 3 * 6 * 6 * f;
    refuses(Op::Conv2d, "residual of another dtype than the output", [&] { be.conv2d(bad); });
    for (DType d : imr::kDTypes) {
        if (be.supports(Op::Conv2d, d)) continue;
        bad = conv;
        bad.input.dtype = bad.output.dtype = d;
        refuses(Op::Conv2d, "a dtype the backend does not support", [&] { be.conv2d(bad); });
    }

    ResidualBlockArgs rb;
    rb.input = in, rb.hidden = 3;
    rb.output = output.tensor({2, 3, 8, 8});
    rb.conv_in_weight = weight.tensor({3, 3, 3, 3}), rb.conv_in_bias = bias.tensor({1, 3, 1, 1});
    rb.conv_out_weight = weight.tensor({3, 3, 3, 3}), rb.conv_out_bias = bias.tensor({1, 3, 1, 1});
    ASSERT_NO_THROW(be.residual_block(rb)) << "the valid baseline must run";
    be.synchronize();
    ResidualBlockArgs rbad = rb;
    rbad.output = in;
    refuses(Op::ResidualBlock, "output aliasing input", [&] { be.residual_block(rbad); });
    rbad = rb;
    rbad.hidden = 0;
    refuses(Op::ResidualBlock, "zero hidden channels", [&] { be.residual_block(rbad); });
    rbad = rb;
    rbad.input.shape.w = 0;
    refuses(Op::ResidualBlock, "empty image", [&] { be.residual_block(rbad); });
    rbad = rb;
    rbad.input.dtype = rbad.output.dtype = DType::F16;
    refuses(Op::ResidualBlock, "f16 tensors (the op is f32 only)", [&] { be.residual_block(rbad); });
    rbad = rb;
    rbad.conv_out_bias.shape = {1, 4, 1, 1};
    refuses(Op::ResidualBlock, "bias of another length", [&] { be.residual_block(rbad); });

    bad = conv;
    bad.residual = bad.output;
    refuses(Op::Conv2d, "output aliasing the residual", [&] { be.conv2d(bad); });
    bad = conv;
    bad.gate = true, bad.output.shape = {2, 1, 6, 6};
    refuses(Op::Conv2d, "the gate on an odd channel count (3)", [&] { be.conv2d(bad); });
    Conv2dArgs pair = conv;  // 2 output channels: a valid count for the gate
    pair.out_channels = 2, pair.gate = true;
    pair.weight = weight.tensor({2, 3, 3, 3}), pair.bias = bias.tensor({1, 2, 1, 1});
    pair.output = output.tensor({2, 1, 6, 6});
    ASSERT_NO_THROW(be.conv2d(pair)) << "the valid gated baseline must run";
    be.synchronize();
    bad = pair;
    bad.output.shape = {2, 2, 6, 6};
    refuses(Op::Conv2d, "the gate with an output of all the channels", [&] { be.conv2d(bad); });
    bad = pair;
    bad.activation = Activation::ReLU;
    refuses(Op::Conv2d, "the gate after a ReLU", [&] { be.conv2d(bad); });

    EXPECT_THROW(be.force_variant(Op::Conv2d, "no-such-kernel"), imr::Error) << "unknown kernel variant";
    if (const std::unique_ptr<imr::PreparedWeights> prepared = be.prepare(conv)) {
        bad = conv;
        bad.out_channels = conv.out_channels - 1;
        bad.output.shape.c = bad.out_channels;
        bad.weight.shape.n = bad.out_channels;
        bad.bias.shape.c = bad.out_channels;
        bad.prepared = prepared.get();
        refuses(Op::Conv2d, "weights prepared for another shape", [&] { be.conv2d(bad); });
    }

    PixelShuffleArgs ps;
    ps.input = in, ps.factor = 2, ps.direction = ShuffleDirection::ToDepth;
    ps.output = output.tensor({2, 12, 4, 4});
    ASSERT_NO_THROW(be.pixel_shuffle(ps)) << "the valid baseline must run";
    be.synchronize();
    PixelShuffleArgs psbad = ps;
    psbad.factor = 3;  // 8 is not a multiple of 3
    refuses(Op::PixelShuffle, "size not a multiple of the factor", [&] { be.pixel_shuffle(psbad); });
    psbad = ps;
    psbad.direction = ShuffleDirection::ToSpace;  // 3 channels are not a multiple of 4
    refuses(Op::PixelShuffle, "channels not a multiple of factor^2", [&] { be.pixel_shuffle(psbad); });
    psbad = ps;
    psbad.factor = 0;
    refuses(Op::PixelShuffle, "zero factor", [&] { be.pixel_shuffle(psbad); });
    psbad = ps;
    psbad.output = in;
    psbad.output.shape = ps.output.shape;
    refuses(Op::PixelShuffle, "output aliasing input", [&] { be.pixel_shuffle(psbad); });
    psbad = ps;
    psbad.output.dtype = DType::F16;
    refuses(Op::PixelShuffle, "output of another dtype than the input", [&] { be.pixel_shuffle(psbad); });
    psbad = ps;
    psbad.output.shape.w = 5;
    refuses(Op::PixelShuffle, "output of another shape", [&] { be.pixel_shuffle(psbad); });

    imr::ConvertArgs cv;
    cv.input = in;
    cv.output = output.tensor({2, 3, 8, 8}, DType::F16, Layout::NHWC8);
    ASSERT_NO_THROW(be.convert(cv)) << "the valid baseline must run";
    be.synchronize();
    imr::ConvertArgs cvbad = cv;
    cvbad.output.shape = {2, 3, 8, 7};
    refuses(Op::Convert, "output of another shape", [&] { be.convert(cvbad); });
    cvbad = cv;
    cvbad.output.data = static_cast<char*>(in.data) + 2;
    refuses(Op::Convert, "output overlapping input", [&] { be.convert(cvbad); });
    cvbad = cv;
    cvbad.input = {};
    refuses(Op::Convert, "null input", [&] { be.convert(cvbad); });

    imr::ElementwiseArgs ew;
    ew.lhs = in, ew.rhs = weight.tensor({2, 3, 8, 8}), ew.op = imr::ElementwiseOp::Mul;
    ew.output = output.tensor({2, 3, 8, 8});
    ASSERT_NO_THROW(be.elementwise(ew)) << "the valid baseline must run";
    be.synchronize();
    imr::ElementwiseArgs ewbad = ew;
    ewbad.rhs.shape = {2, 3, 8, 7};
    refuses(Op::Elementwise, "rhs of another shape", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.rhs.dtype = DType::F16;
    refuses(Op::Elementwise, "rhs of another dtype", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.rhs = {};
    refuses(Op::Elementwise, "null rhs", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.output = in;
    refuses(Op::Elementwise, "output aliasing lhs", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.output.data = static_cast<char*>(ew.rhs.data) + 4;
    refuses(Op::Elementwise, "output overlapping rhs", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.output.shape = {2, 3, 4, 16};
    refuses(Op::Elementwise, "output of another shape", [&] { be.elementwise(ewbad); });
    ewbad = ew;
    ewbad.lhs.layout = ewbad.rhs.layout = ewbad.output.layout = Layout::NHWC;  // no backend has it
    refuses(Op::Elementwise, "a layout the backend does not support", [&] { be.elementwise(ewbad); });

    imr::ActivationArgs act;
    act.input = in, act.function = imr::UnaryFunction::GELU;
    act.output = output.tensor({2, 3, 8, 8});
    ASSERT_NO_THROW(be.activation(act)) << "the valid baseline must run";
    be.synchronize();
    imr::ActivationArgs actbad = act;
    actbad.function = imr::UnaryFunction::LeakyReLU, actbad.slope = std::numeric_limits<float>::quiet_NaN();
    refuses(Op::Activation, "slope not finite", [&] { be.activation(actbad); });
    actbad = act;
    actbad.function = imr::UnaryFunction(17);
    refuses(Op::Activation, "unknown function", [&] { be.activation(actbad); });
    actbad = act;
    actbad.output = in;
    refuses(Op::Activation, "output aliasing input", [&] { be.activation(actbad); });
    actbad = act;
    actbad.output.dtype = DType::BF16;
    refuses(Op::Activation, "output of another dtype than the input", [&] { be.activation(actbad); });
    actbad = act;
    actbad.output.shape.c = 4;
    refuses(Op::Activation, "output of another shape", [&] { be.activation(actbad); });
    actbad = act;
    actbad.input.layout = actbad.output.layout = Layout::NHWC;  // no backend has it
    refuses(Op::Activation, "a layout the backend does not support", [&] { be.activation(actbad); });

    imr::SimpleGateArgs sg;
    sg.input = weight.tensor({1, 4, 8, 8});
    sg.output = output.tensor({1, 2, 8, 8});
    ASSERT_NO_THROW(be.simple_gate(sg)) << "the valid baseline must run";
    be.synchronize();
    imr::SimpleGateArgs sgbad = sg;
    sgbad.input = in;  // 3 channels
    sgbad.output.shape = {2, 1, 8, 8};
    refuses(Op::SimpleGate, "odd channel count", [&] { be.simple_gate(sgbad); });
    sgbad = sg;
    sgbad.output.shape = {1, 4, 8, 8};
    refuses(Op::SimpleGate, "output with the input's channel count", [&] { be.simple_gate(sgbad); });
    sgbad = sg;
    sgbad.output.data = static_cast<char*>(sg.input.data) + 8;
    refuses(Op::SimpleGate, "output overlapping input", [&] { be.simple_gate(sgbad); });
    sgbad = sg;
    sgbad.output.dtype = DType::F16;
    refuses(Op::SimpleGate, "output of another dtype than the input", [&] { be.simple_gate(sgbad); });
    sgbad = sg;
    sgbad.input = {};
    refuses(Op::SimpleGate, "null input", [&] { be.simple_gate(sgbad); });

    imr::ConcatArgs cat;
    cat.inputs = {in, weight.tensor({2, 3, 8, 8})};
    cat.output = output.tensor({2, 6, 8, 8});
    ASSERT_NO_THROW(be.concat(cat)) << "the valid baseline must run";
    be.synchronize();
    imr::ConcatArgs catbad = cat;
    catbad.inputs = {in};
    catbad.output.shape = in.shape;
    refuses(Op::Concat, "one input", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.inputs.assign(imr::kConcatMaxInputs + 1, in);
    catbad.output.shape.c = 3 * (imr::kConcatMaxInputs + 1);
    refuses(Op::Concat, "more inputs than allowed", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.inputs[1].shape.h = 7;
    refuses(Op::Concat, "inputs of different heights", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.inputs[1].shape.n = 1;
    refuses(Op::Concat, "inputs of different batch sizes", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.inputs[1].dtype = DType::F16;
    refuses(Op::Concat, "inputs of different dtypes", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.inputs[1] = {};
    refuses(Op::Concat, "null input", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.output.shape.c = 5;
    refuses(Op::Concat, "output of another channel count", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.output.data = static_cast<char*>(cat.inputs[1].data) + 4;
    refuses(Op::Concat, "output overlapping an input", [&] { be.concat(catbad); });
    catbad = cat;
    catbad.output.layout = Layout::NHWC8;
    refuses(Op::Concat, "output of another layout than the inputs", [&] { be.concat(catbad); });

    imr::LayerNormArgs ln;
    ln.input = in, ln.output = output.tensor({2, 3, 8, 8});
    ln.weight = weight.tensor({1, 3, 1, 1}), ln.bias = bias.tensor({1, 3, 1, 1});
    ASSERT_NO_THROW(be.layer_norm(ln)) << "the valid baseline must run";
    be.synchronize();
    imr::LayerNormArgs lnbad = ln;
    lnbad.eps = 0.0f;
    refuses(Op::LayerNorm, "eps 0", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.eps = std::numeric_limits<float>::quiet_NaN();
    refuses(Op::LayerNorm, "eps NaN", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.weight.shape = {1, 4, 1, 1};
    refuses(Op::LayerNorm, "weight of another length", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.bias = {};
    refuses(Op::LayerNorm, "null bias", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.weight.dtype = DType::F16;
    refuses(Op::LayerNorm, "f16 weight (weights are f32)", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.output.dtype = DType::BF16;
    refuses(Op::LayerNorm, "output of another dtype than the input", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.output.data = static_cast<char*>(in.data) + 4;
    refuses(Op::LayerNorm, "output overlapping input", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.output.shape = {2, 3, 8, 7};
    refuses(Op::LayerNorm, "output of another shape", [&] { be.layer_norm(lnbad); });
    lnbad = ln;
    lnbad.input.dtype = lnbad.output.dtype = DType::F16;  // half runs in NHWC8 only, and not on the CPU
    refuses(Op::LayerNorm, "f16 NCHW, which no backend has", [&] { be.layer_norm(lnbad); });

    imr::DepthwiseConv2dArgs dw;
    dw.input = in, dw.kernel = 3, dw.pad_before = dw.pad_after = 1, dw.pad_mode = PadMode::Reflect;
    dw.output = output.tensor({2, 3, 8, 8});
    dw.weight = weight.tensor({3, 1, 3, 3}), dw.bias = bias.tensor({1, 3, 1, 1});
    ASSERT_NO_THROW(be.depthwise_conv2d(dw)) << "the valid baseline must run";
    be.synchronize();
    imr::DepthwiseConv2dArgs dwbad = dw;
    dwbad.kernel = 2, dwbad.pad_before = 0, dwbad.weight.shape = {3, 1, 2, 2};
    refuses(Op::DepthwiseConv2d, "even kernel", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.gate = true, dwbad.output.shape = {2, 1, 8, 8};
    refuses(Op::DepthwiseConv2d, "the gate on an odd channel count (3)", [&] { be.depthwise_conv2d(dwbad); });
    imr::DepthwiseConv2dArgs dwpair = dw;  // 2 channels: a valid count for the gate
    dwpair.input.shape.c = 2, dwpair.gate = true;
    dwpair.weight = weight.tensor({2, 1, 3, 3}), dwpair.bias = bias.tensor({1, 2, 1, 1});
    dwpair.output = output.tensor({2, 1, 8, 8});
    ASSERT_NO_THROW(be.depthwise_conv2d(dwpair)) << "the valid gated baseline must run";
    be.synchronize();
    dwbad = dwpair;
    dwbad.output.shape = {2, 2, 8, 8};
    refuses(Op::DepthwiseConv2d, "the gate with an output of all the channels", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.kernel = 9, dwbad.pad_before = dwbad.pad_after = 4, dwbad.pad_mode = PadMode::Zero;
    dwbad.weight.shape = {3, 1, 9, 9};
    refuses(Op::DepthwiseConv2d, "kernel above 7", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.weight.shape = {3, 3, 3, 3};
    refuses(Op::DepthwiseConv2d, "a full convolution's weight shape", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.pad_before = dwbad.pad_after = 8;
    dwbad.output.shape = {2, 3, 22, 22};
    refuses(Op::DepthwiseConv2d, "reflect padding as wide as the image", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.pad_after = -1;
    refuses(Op::DepthwiseConv2d, "negative padding", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.output.shape = {2, 3, 6, 6};
    refuses(Op::DepthwiseConv2d, "output of another shape", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.bias.shape = {1, 4, 1, 1};
    refuses(Op::DepthwiseConv2d, "bias of another length", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.output.data = static_cast<char*>(in.data) + 4;
    refuses(Op::DepthwiseConv2d, "output overlapping input", [&] { be.depthwise_conv2d(dwbad); });
    dwbad = dw;
    dwbad.output.dtype = DType::F16;
    refuses(Op::DepthwiseConv2d, "output of another dtype than the input", [&] { be.depthwise_conv2d(dwbad); });

    imr::WindowMeanArgs wm;
    wm.input = in, wm.window = 3, wm.output = output.tensor({2, 3, 8, 8});
    ASSERT_NO_THROW(be.window_mean(wm)) << "the valid baseline must run";
    be.synchronize();
    imr::WindowMeanArgs wmbad = wm;
    wmbad.window = 0;
    refuses(Op::WindowMean, "window 0", [&] { be.window_mean(wmbad); });
    wmbad = wm;
    wmbad.window = imr::kWindowMeanMaxWindow + 1;
    refuses(Op::WindowMean, "window above 1024", [&] { be.window_mean(wmbad); });
    wmbad = wm;
    wmbad.output.shape = {2, 3, 4, 4};
    refuses(Op::WindowMean, "output of another shape", [&] { be.window_mean(wmbad); });
    wmbad = wm;
    wmbad.output = in;
    refuses(Op::WindowMean, "output aliasing input", [&] { be.window_mean(wmbad); });
    wmbad = wm;
    wmbad.output.layout = Layout::NHWC8;
    refuses(Op::WindowMean, "output of another layout than the input", [&] { be.window_mean(wmbad); });
    wmbad = wm;
    wmbad.input.layout = wmbad.output.layout = Layout::NHWC;  // no kernel of either backend reads it
    refuses(Op::WindowMean, "a layout the backend does not support", [&] { be.window_mean(wmbad); });

    imr::ImagePlanesArgs ip;
    DeviceBuffer samples(be, 2 * 8 * 8 * 4);
    ip.samples.data = samples.data();
    ip.samples.n = 2, ip.samples.h = 8, ip.samples.w = 8, ip.samples.channels = 4, ip.samples.bit_depth = 8;
    ip.planes = output.tensor({2, 3, 8, 8});
    ASSERT_NO_THROW(be.image_planes(ip)) << "the valid baseline must run";
    ip.direction = imr::PlanesDirection::ToSamples;
    ASSERT_NO_THROW(be.image_planes(ip)) << "the valid baseline must run";
    be.synchronize();
    imr::ImagePlanesArgs ipbad = ip;
    ipbad.planes.shape = {2, 3, 7, 8};
    refuses(Op::ImagePlanes, "planes smaller than the images", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.planes.shape = {2, 2, 8, 8};
    refuses(Op::ImagePlanes, "channels that do not map (RGBA through a 2-channel model)",
            [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.planes.shape = {3, 3, 8, 8};
    refuses(Op::ImagePlanes, "planes of another item count", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.samples.bit_depth = 12;
    refuses(Op::ImagePlanes, "12-bit samples", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.samples.channels = 5;
    refuses(Op::ImagePlanes, "5 channels", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.strength = 0.5f;
    refuses(Op::ImagePlanes, "a strength without the model's input", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.planes.dtype = DType::F16;
    refuses(Op::ImagePlanes, "f16 planes", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.planes.data = samples.data();
    refuses(Op::ImagePlanes, "planes overlapping the samples", [&] { be.image_planes(ipbad); });
    ipbad = ip;
    ipbad.samples.data = nullptr;
    refuses(Op::ImagePlanes, "null samples", [&] { be.image_planes(ipbad); });

    for (size_t i = 0; i < imr::kOpCount; ++i)
        EXPECT_GT(rows[i], 0) << imr::op_name(Op(i)) << " has no row in RejectsInvalidArgs";
}

// One test per op of the list (kernels/ops/op_list.h), named after it
// (OpsTest.Conv2d/cpu): it runs the op's case table NAME_cases() through
// run_cases for the table's case type. A new op without its table does not
// compile, without its run_cases does not link, and an empty table fails.
#define IMR_OP_TEST(Enum, name, Args)                             \
    TEST_P(OpsTest, Enum) {                                       \
        const auto cases = name##_cases();                        \
        ASSERT_FALSE(cases.empty()) << #name "_cases() is empty"; \
        run_cases(cases);                                         \
    }
IMR_FOR_EACH_OP(IMR_OP_TEST)
#undef IMR_OP_TEST

INSTANTIATE_TEST_SUITE_P(Backends, OpsTest, ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
