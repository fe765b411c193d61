// CPU ops against OpenCV DNN's convolution, same shapes, same thread count,
// in one Google Benchmark run. Reports FLOP/s (FLOPs = 2 x multiply-adds, the
// direct-convolution count for both, whatever algorithm OpenCV picks).
//
//   bench_cpu [--benchmark_filter=...]     threads: IMRESTORE_THREADS, else all cores
//
// The OpenCV residual block is conv_in -> conv_out -> Eltwise sum with the
// input, built from LayerParams; its output is checked against ours once per
// shape (so both sides provably do the same work).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <random>
#include <string>
#include <vector>

#include "backend.h"

namespace {

int bench_threads() {
    if (const char* env = std::getenv("IMRESTORE_THREADS")) return std::max(1, std::atoi(env));
    return omp_get_num_procs();
}

std::vector<float> normal(size_t count, float scale, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = dist(rng) * scale;
    return v;
}

void set_flops(benchmark::State& state, double flops) {
    state.counters["FLOP/s"] =
        benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// ---------------------------------------------------------------- residual block
constexpr int kHidden = 32;  // SOL-ExecBench L1/040: C = 3, hidden = 32
constexpr int kChannels = 3;

struct ResidualData {
    imr::Shape shape;
    std::vector<float> input, w_in, b_in, w_out, b_out, output;
    explicit ResidualData(imr::Shape s)
        : shape(s),
          input(normal(s.count(), 1.0f, 1)),
          w_in(normal(size_t(kHidden) * s.c * 9, 1.0f / std::sqrt(3.0f), 2)),
          b_in(normal(kHidden, 1.0f, 3)),
          w_out(normal(size_t(s.c) * kHidden * 9, 1.0f / std::sqrt(3.0f), 4)),
          b_out(normal(size_t(s.c), 1.0f, 5)),
          output(s.count()) {}
    imr::ResidualBlockArgs args() {
        imr::ResidualBlockArgs a;
        a.input = imr::f32_nchw(input.data(), shape), a.hidden = kHidden;
        a.output = imr::f32_nchw(output.data(), shape);
        a.conv_in_weight = imr::f32_nchw(w_in.data(), {kHidden, shape.c, 3, 3});
        a.conv_in_bias = imr::f32_vector(b_in.data(), kHidden);
        a.conv_out_weight = imr::f32_nchw(w_out.data(), {shape.c, kHidden, 3, 3});
        a.conv_out_bias = imr::f32_vector(b_out.data(), shape.c);
        return a;
    }
    double flops() const { return 2.0 * 2.0 * double(shape.n) * shape.h * shape.w * 9 * shape.c * kHidden; }
};

cv::dnn::LayerParams conv_layer(const std::string& name, int cin, int cout, int k, int pad, const float* weight,
                                const float* bias) {
    cv::dnn::LayerParams lp;
    lp.name = name, lp.type = "Convolution";
    lp.set("kernel_size", k), lp.set("pad", pad), lp.set("stride", 1), lp.set("num_output", cout);
    lp.set("bias_term", bias != nullptr);
    const int wshape[] = {cout, cin, k, k};
    lp.blobs.push_back(cv::Mat(4, wshape, CV_32F, const_cast<float*>(weight)).clone());
    if (bias) lp.blobs.push_back(cv::Mat(1, cout, CV_32F, const_cast<float*>(bias)).clone());
    return lp;
}

cv::Mat nchw(const imr::Shape& s, float* data) {
    const int dims[] = {s.n, s.c, s.h, s.w};
    return cv::Mat(4, dims, CV_32F, data);
}

void BM_ResidualBlock_imr(benchmark::State& state) {
    ResidualData d({int(state.range(0)), kChannels, int(state.range(1)), int(state.range(1))});
    auto backend = imr::make_cpu_backend(bench_threads());
    const imr::ResidualBlockArgs a = d.args();
    for (auto _ : state) {
        backend->residual_block(a);
        benchmark::DoNotOptimize(d.output.data());
    }
    set_flops(state, d.flops());
    state.SetLabel(backend->description());
}

void BM_ResidualBlock_OpenCV(benchmark::State& state) {
    ResidualData d({int(state.range(0)), kChannels, int(state.range(1)), int(state.range(1))});
    const int threads = bench_threads();
    cv::setNumThreads(threads);
    cv::dnn::Net net;
    auto c_in = conv_layer("conv_in", kChannels, kHidden, 3, 1, d.w_in.data(), d.b_in.data());
    auto c_out = conv_layer("conv_out", kHidden, kChannels, 3, 1, d.w_out.data(), d.b_out.data());
    const int id_in = net.addLayer(c_in.name, c_in.type, c_in);
    net.connect(0, 0, id_in, 0);
    const int id_out = net.addLayer(c_out.name, c_out.type, c_out);
    net.connect(id_in, 0, id_out, 0);
    cv::dnn::LayerParams sum;
    sum.name = "sum", sum.type = "Eltwise";
    sum.set("operation", "sum");
    const int id_sum = net.addLayer(sum.name, sum.type, sum);
    net.connect(0, 0, id_sum, 0);
    net.connect(id_out, 0, id_sum, 1);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    net.setInput(nchw(d.shape, d.input.data()));

    // Same result as ours (fp32 rounding apart)?
    cv::Mat out = net.forward();
    imr::make_cpu_backend(threads)->residual_block(d.args());
    const double diff =
        cv::norm(out.reshape(1, 1), cv::Mat(1, int(d.output.size()), CV_32F, d.output.data()), cv::NORM_INF);
    if (!(diff < 1e-3)) state.SkipWithError(("OpenCV and imrestore differ by " + std::to_string(diff)).c_str());

    for (auto _ : state) {
        out = net.forward();
        benchmark::DoNotOptimize(out.data);
    }
    set_flops(state, d.flops());
    state.SetLabel("OpenCV " CV_VERSION " DNN, " + std::to_string(cv::getNumThreads()) + " threads");
}

// ---------------------------------------------------------------- conv2d
// args: batch, channels (in = out), size, kernel, pad (zero, (K-1)/2 each side or 0)
// [, output channels, image height when `model_shape`: S is then the width]
struct ConvData {
    imr::Conv2dArgs a;
    std::vector<float> input, weight, bias, output;
    explicit ConvData(const benchmark::State& state, bool model_shape = false) {
        const int n = int(state.range(0)), c = int(state.range(1)), s = int(state.range(2)), k = int(state.range(3));
        const int pad = int(state.range(4));
        const int cout = model_shape ? int(state.range(5)) : c;
        const int h = model_shape ? int(state.range(6)) : s;
        const imr::Shape in{n, c, h, s};
        a.out_channels = cout, a.kernel = k, a.pad_before = a.pad_after = pad;
        input = normal(in.count(), 1.0f, 1), weight = normal(size_t(cout) * c * k * k, 1.0f, 2);
        a.input = imr::f32_nchw(input.data(), in);
        bias = normal(size_t(cout), 1.0f, 3), output.resize(a.out_shape().count());
        a.weight = imr::f32_nchw(weight.data(), {cout, c, k, k}), a.bias = imr::f32_vector(bias.data(), cout);
        a.output = imr::f32_nchw(output.data(), a.out_shape());
    }
    double flops() const {
        const imr::Shape o = a.out_shape();
        return 2.0 * double(o.count()) * a.input.shape.c * a.kernel * a.kernel;
    }
};

void BM_Conv2d_imr(benchmark::State& state) {
    ConvData d(state);
    auto backend = imr::make_cpu_backend(bench_threads());
    for (auto _ : state) {
        backend->conv2d(d.a);
        benchmark::DoNotOptimize(d.output.data());
    }
    set_flops(state, d.flops());
    state.SetLabel(backend->description());
}

// Each conv2d kernel variant of the CPU backend (forced), on the default
// model's layer shapes with its weights prepared once, as the tool runs them;
// the label names the variant.
void BM_Conv2d_imr_variant(benchmark::State& state, const std::string& variant) {
    ConvData d(state, true);
    auto backend = imr::make_cpu_backend(bench_threads());
    backend->force_variant(imr::Op::Conv2d, variant);
    const std::unique_ptr<imr::PreparedWeights> prepared = backend->prepare(d.a);
    d.a.prepared = prepared.get();
    try {
        backend->conv2d(d.a);
    } catch (const imr::NotApplicable& e) {
        state.SkipWithError(e.what());
        return;
    }
    for (auto _ : state) {
        backend->conv2d(d.a);
        benchmark::DoNotOptimize(d.output.data());
    }
    set_flops(state, d.flops());
    state.SetLabel((variant.empty() ? std::string("planner") : variant) + ", " + backend->description());
}

void BM_Conv2d_OpenCV(benchmark::State& state) {
    ConvData d(state);
    const int threads = bench_threads();
    cv::setNumThreads(threads);
    cv::dnn::Net net;
    auto conv = conv_layer("conv", d.a.input.shape.c, d.a.out_channels, d.a.kernel, d.a.pad_before, d.weight.data(),
                           d.bias.data());
    net.connect(0, 0, net.addLayer(conv.name, conv.type, conv), 0);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    net.setInput(nchw(d.a.input.shape, d.input.data()));

    cv::Mat out = net.forward();
    imr::make_cpu_backend(threads)->conv2d(d.a);
    const double diff =
        cv::norm(out.reshape(1, 1), cv::Mat(1, int(d.output.size()), CV_32F, d.output.data()), cv::NORM_INF);
    if (!(diff < 1e-2)) state.SkipWithError(("OpenCV and imrestore differ by " + std::to_string(diff)).c_str());

    for (auto _ : state) {
        out = net.forward();
        benchmark::DoNotOptimize(out.data);
    }
    set_flops(state, d.flops());
    state.SetLabel("OpenCV " CV_VERSION " DNN, " + std::to_string(cv::getNumThreads()) + " threads");
}

// Residual block: {batch, size} of SOL-ExecBench-like images.
void residual_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"N", "S"})->Args({1, 512})->Args({4, 256});
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}
// conv2d: GPU MODE conv2d_v2's largest test shape (no padding) and a
// model-like 3x3 layer with size-keeping zero padding.
void conv_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"N", "C", "S", "K", "pad"})->Args({1, 64, 128, 8, 0})->Args({1, 64, 256, 3, 1});
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

// The default `denoise` model's layers (3 -> 48, 48 -> 48, 48 -> 3, 3x3,
// zero padding 1) on a 1000 x 750 image: 1/16 of a 12 MP photo.
void model_layer_shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"N", "Cin", "W", "K", "pad", "Cout", "H"});
    b->Args({1, 3, 1000, 3, 1, 48, 750})->Args({1, 48, 1000, 3, 1, 48, 750})->Args({1, 48, 1000, 3, 1, 3, 750});
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

const bool kVariantBenchmarks = [] {
    std::vector<std::string> names{""};
    for (const std::string& v : imr::make_cpu_backend(1)->variants(imr::Op::Conv2d)) names.push_back(v);
    for (const std::string& v : names)
        benchmark::RegisterBenchmark(("BM_Conv2d_imr_variant/" + (v.empty() ? std::string("planner") : v)).c_str(),
                                     BM_Conv2d_imr_variant, v)
            ->Apply(model_layer_shapes);
    return true;
}();

BENCHMARK(BM_ResidualBlock_imr)->Apply(residual_shapes);
BENCHMARK(BM_ResidualBlock_OpenCV)->Apply(residual_shapes);
BENCHMARK(BM_Conv2d_imr)->Apply(conv_shapes);
BENCHMARK(BM_Conv2d_OpenCV)->Apply(conv_shapes);

}  // namespace

BENCHMARK_MAIN();
