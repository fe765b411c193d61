// Kernel benchmark of the CUDA backend against cuDNN, on the two public
// suites (SOL-ExecBench L1/040 residual block: 16 cases; GPU MODE conv2d_v2:
// the 5 benchmark shapes), on the layers of the bundled unshuffle-CNN models
// for a 12-megapixel photo (suite "model": conv2d with the fused bias + ReLU
// epilogue against cuDNN's convolution + bias add + ReLU, as PyTorch runs
// them, and the pixel shuffles), the same layers on every conv2d kernel
// variant that can run them (suite "variants": the table in
// kernels/cuda/conv2d/conv2d_variants.cu, so the planner's pick can be checked against the alternatives),
// the model graphs' element-wise, normalization and pooling ops on the
// reference U-Nets' 12 MP shapes (suite "graph-ops", not part of "all"; see
// its comment below), and on any shape given on the command line.
//
//   bench_gpu [--suite all|residual|conv|model|variants|graph-ops|none] [--residual B,H,W]... [--conv B,C,S,K]...
//             [--runs N] [--conv-runs N] [--no-cudnn] [--device N] [--json FILE] [--commit SHA] [--only TEXT,...]
//
// Method (the anchors' protocol): per timed call, a buffer of 2x the L2 size
// is zeroed with cudaMemsetAsync on the same stream first (cold L2), then
// CUDA events around the call; warm-up first; median of --runs (default 50)
// or --conv-runs (default 10) for convolutions of more than 50 GFLOP.
// cuDNN runs in the same process on the same data: cudnnConvolutionForward
// with the fastest fp32 FMA algorithm (CUDNN_FMA_MATH: no TF32 tensor ops)
// found by cudnnFindConvolutionForwardAlgorithmEx, plus cudnnAddTensor for
// bias and, for the residual block, the residual add. Each case reports our
// max |error| against float64 on sampled elements, and |ours - cuDNN|.
// Floors: bytes that must move / the device-to-device copy bandwidth measured
// at start; FLOPs / the fp32 FFMA peak (SMs x 128 lanes x 2 x max clock).
#include <cuda_runtime.h>
#ifdef IMRESTORE_WITH_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend.h"
#include "cuda/conv2d.cuh"
#include "cuda/pixel_shuffle.cuh"
#include "cuda/residual_block.cuh"

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "bench_gpu: %s\n", msg.c_str());
    std::exit(1);
}

void ck(cudaError_t e, const char* what) {
    if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

#ifdef IMRESTORE_WITH_CUDNN
void ckd(cudnnStatus_t s, const char* what) {
    if (s != CUDNN_STATUS_SUCCESS) die(std::string(what) + ": " + cudnnGetErrorString(s));
}
#endif

struct DevBuf {
    float* p = nullptr;
    size_t n = 0;
    explicit DevBuf(size_t count = 0) : n(count) {
        if (count) ck(cudaMalloc(&p, count * sizeof(float)), "cudaMalloc");
    }
    ~DevBuf() {
        if (p) cudaFree(p);
    }
    DevBuf(const DevBuf&) = delete;
    DevBuf& operator=(const DevBuf&) = delete;
};

std::vector<float> randn(std::mt19937& rng, size_t n, float scale) {
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

void upload(DevBuf& b, const std::vector<float>& h) {
    ck(cudaMemcpy(b.p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
}
std::vector<float> download(const DevBuf& b) {
    std::vector<float> h(b.n);
    ck(cudaMemcpy(h.data(), b.p, b.n * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return h;
}

struct Gpu {
    cudaStream_t stream = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    DevBuf* flush = nullptr;
    int sm_count = 0;
    imr::cuda::GpuInfo gpu;  // sm_count and compute capability, for the conv2d planner
    double copy_tbps = 0;    // measured device-to-device, bytes read + written
    double peak_tflops = 0;  // fp32 FFMA peak at the max clock
    std::string name, driver, runtime;
#ifdef IMRESTORE_WITH_CUDNN
    cudnnHandle_t cudnn = nullptr;
#endif

    // Median time in microseconds of `op`, cold L2 before each call.
    double time_us(const std::function<void()>& op, int warmup, int runs) {
        for (int i = 0; i < warmup; ++i) op();
        std::vector<double> t;
        for (int i = 0; i < runs; ++i) {
            ck(cudaMemsetAsync(flush->p, 0, flush->n * sizeof(float), stream), "flush L2");
            ck(cudaEventRecord(e0, stream), "event");
            op();
            ck(cudaEventRecord(e1, stream), "event");
            ck(cudaEventSynchronize(e1), "event sync");
            float ms = 0;
            ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
            t.push_back(ms * 1e3);
        }
        ck(cudaGetLastError(), "after timing");
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }
};

#ifdef IMRESTORE_WITH_CUDNN
// One cudnnConvolutionForward of fixed shape with its fastest FMA algorithm.
struct CudnnConv {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnConvolutionFwdAlgo_t algo{};
    size_t ws_bytes = 0;
    float algo_ms = 0;
    void* ws = nullptr;
    Gpu* gpu;

    CudnnConv(Gpu& g, int n, int cin, int h, int wd, int cout, int k, int pad, const float* dx, const float* dw,
              float* dy)
        : gpu(&g) {
        ckd(cudnnCreateTensorDescriptor(&x), "desc");
        ckd(cudnnCreateTensorDescriptor(&y), "desc");
        ckd(cudnnCreateTensorDescriptor(&b), "desc");
        ckd(cudnnCreateFilterDescriptor(&w), "desc");
        ckd(cudnnCreateConvolutionDescriptor(&conv), "desc");
        ckd(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, cin, h, wd), "x desc");
        ckd(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cout, cin, k, k), "w desc");
        ckd(cudnnSetConvolution2dDescriptor(conv, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "conv desc");
        ckd(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "math type");
        int on, oc, oh, ow;
        ckd(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &oc, &oh, &ow), "out dim");
        ckd(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow), "y desc");
        ckd(cudnnSetTensor4dDescriptor(b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, cout, 1, 1), "b desc");
        // Search with a generous workspace, then keep only what the winner needs.
        size_t free_b = 0, total_b = 0;
        ck(cudaMemGetInfo(&free_b, &total_b), "meminfo");
        size_t search_ws = std::min<size_t>(size_t(8) << 30, free_b / 4);
        void* sws = nullptr;
        ck(cudaMalloc(&sws, search_ws), "cudnn search workspace");
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int found = 0;
        ckd(cudnnFindConvolutionForwardAlgorithmEx(g.cudnn, x, dx, w, dw, conv, y, dy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                   &found, perf, sws, search_ws),
            "cudnnFindConvolutionForwardAlgorithmEx");
        cudaFree(sws);
        int best = -1;
        for (int i = 0; i < found; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
                perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
                best = i;
                break;
            }
        if (best < 0) die("cuDNN found no FMA algorithm");
        algo = perf[best].algo;
        ws_bytes = perf[best].memory;
        algo_ms = perf[best].time;
        if (ws_bytes) ck(cudaMalloc(&ws, ws_bytes), "cudnn workspace");
    }
    ~CudnnConv() {
        if (ws) cudaFree(ws);
        cudnnDestroyTensorDescriptor(x);
        cudnnDestroyTensorDescriptor(y);
        cudnnDestroyTensorDescriptor(b);
        cudnnDestroyFilterDescriptor(w);
        cudnnDestroyConvolutionDescriptor(conv);
    }
    void run(const float* dx, const float* dw, float* dy, const float* bias) {
        const float one = 1.f, zero = 0.f;
        ckd(cudnnConvolutionForward(gpu->cudnn, &one, x, dx, w, dw, conv, algo, ws, ws_bytes, &zero, y, dy),
            "cudnnConvolutionForward");
        if (bias) ckd(cudnnAddTensor(gpu->cudnn, &one, b, bias, &one, y, dy), "cudnnAddTensor(bias)");
    }
};

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
            return "implicit_gemm";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
            return "implicit_precomp_gemm";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
            return "gemm";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
            return "direct";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
            return "fft";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
            return "fft_tiling";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
            return "winograd";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
            return "winograd_nonfused";
        default:
            return "?";
    }
}
#endif

// The H200's HBM3e peak (NVIDIA's figure); the floors here use the measured
// copy bandwidth (about 4.27 TB/s read + write), this is printed beside it.
constexpr double kHbmPeakBps = 4.8e12;

struct Result {
    std::string suite, name;
    double flop = 0, bytes = 0;
    double ours_us = 0, cudnn_us = 0;  // cudnn_us 0: not run
    std::string cudnn_algo;
    double err_vs_f64 = 0, diff_vs_cudnn = -1;
    double atol = 0;           // the suite's tolerance, 0 when none
    int count = 0;             // graph-ops: how often the source network runs the case at 12 MP
    std::string source, type;  // graph-ops: the network the shape is from, the tensors' dtype and layout
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(double(a[i]) - double(b[i]));
        if (!(d <= m)) m = d;  // NaN propagates as the max
    }
    return m;
}

struct Options {
    std::string suite = "all";
    std::vector<std::array<int, 3>> residual;
    std::vector<std::array<int, 4>> conv;
    int runs = 50, conv_runs = 10, device = 0;
    bool cudnn = true;
    std::string json, commit;
    std::vector<std::string> only;  // graph-ops: run the cases whose name contains one of these
};

// SOL-ExecBench L1/040 cases and atol (rtol 1e-5), as in shared/anchors/solexec_040_residual_block.json.
struct ResidualCase {
    int b, h, w;
    double atol;
};
const ResidualCase kResidualSuite[] = {
    {8, 512, 512, 0.069},  {32, 256, 256, 0.066}, {2, 256, 256, 0.071}, {4, 512, 512, 0.07},
    {1, 128, 128, 0.058},  {16, 64, 64, 0.064},   {8, 373, 373, 0.072}, {64, 128, 128, 0.074},
    {16, 128, 128, 0.067}, {1, 64, 64, 0.058},    {1, 512, 512, 0.066}, {2, 512, 512, 0.062},
    {2, 64, 64, 0.058},    {1, 131, 131, 0.062},  {2, 541, 541, 0.072}, {16, 256, 256, 0.078},
};
// GPU MODE conv2d_v2 benchmarks (B, C, S, K), the last one ranked.
const std::array<int, 4> kConvSuite[] = {
    {4, 64, 128, 8}, {4, 64, 128, 16}, {2, 128, 256, 16}, {2, 128, 256, 16}, {1, 128, 256, 32},
};

Result bench_residual(Gpu& g, const Options& o, std::mt19937& rng, const std::string& suite, int B, int H, int W,
                      double atol) {
    const int C = 3, HID = 32;
    Result r;
    r.suite = suite;
    r.name = "residual " + std::to_string(B) + "x" + std::to_string(H) + "x" + std::to_string(W);
    r.atol = atol;
    const double px = double(B) * H * W;
    r.flop = px * 2.0 * (9.0 * C * HID + 9.0 * HID * C);
    r.bytes = px * C * 4.0 * 2.0;
    const size_t n = size_t(B) * C * H * W;
    auto hx = randn(rng, n, 1.f), hw1 = randn(rng, HID * C * 9, 1.f / std::sqrt(3.f)), hb1 = randn(rng, HID, 1.f),
         hw2 = randn(rng, C * HID * 9, 1.f / std::sqrt(3.f)), hb2 = randn(rng, C, 1.f);
    DevBuf x(n), y(n), w1(hw1.size()), b1(HID), w2(hw2.size()), b2(C);
    upload(x, hx), upload(w1, hw1), upload(b1, hb1), upload(w2, hw2), upload(b2, hb2);
    ck(cudaMemset(y.p, 0xff, n * sizeof(float)), "poison");  // NaN: unwritten outputs show
    imr::ResidualBlockArgs a;
    const imr::Shape shape{B, C, H, W};
    a.hidden = HID;
    a.input = imr::f32_nchw(x.p, shape), a.output = imr::f32_nchw(y.p, shape);
    a.conv_in_weight = imr::f32_nchw(w1.p, {HID, C, 3, 3}), a.conv_in_bias = imr::f32_vector(b1.p, HID);
    a.conv_out_weight = imr::f32_nchw(w2.p, {C, HID, 3, 3}), a.conv_out_bias = imr::f32_vector(b2.p, C);
    imr::cuda::residual_block(a, g.stream, g.sm_count);
    ck(cudaStreamSynchronize(g.stream), "residual_block");
    const auto ours = download(y);
    // float64 check on sampled elements (host copies of the same data).
    imr::ResidualBlockArgs ha = a;
    ha.input.data = hx.data(), ha.conv_in_weight.data = hw1.data(), ha.conv_in_bias.data = hb1.data();
    ha.conv_out_weight.data = hw2.data(), ha.conv_out_bias.data = hb2.data(), ha.output.data = nullptr;
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    for (int s = 0; s < 2000; ++s) {
        size_t i = s < 4 ? (s == 0 ? 0 : s == 1 ? n - 1 : s == 2 ? size_t(W) - 1 : size_t(H - 1) * W) : pick(rng);
        const int xx = int(i % W), yy = int((i / W) % H), cc = int((i / (size_t(W) * H)) % C),
                  nn = int(i / (size_t(W) * H * C));
        const double ref = imr::reference_residual_block_at(ha, nn, cc, yy, xx);
        const double d = std::fabs(ref - double(ours[i]));
        if (!(d <= r.err_vs_f64)) r.err_vs_f64 = d;
    }
    r.ours_us = g.time_us([&] { imr::cuda::residual_block(a, g.stream, g.sm_count); }, 10, o.runs);
#ifdef IMRESTORE_WITH_CUDNN
    if (o.cudnn) {
        DevBuf hid(size_t(B) * HID * H * W), yc(n);
        CudnnConv c1(g, B, C, H, W, HID, 3, 1, x.p, w1.p, hid.p);
        CudnnConv c2(g, B, HID, H, W, C, 3, 1, hid.p, w2.p, yc.p);
        auto op = [&] {
            const float one = 1.f;
            c1.run(x.p, w1.p, hid.p, b1.p);
            c2.run(hid.p, w2.p, yc.p, b2.p);
            ckd(cudnnAddTensor(g.cudnn, &one, c2.y, x.p, &one, c2.y, yc.p), "cudnnAddTensor(residual)");
        };
        op();
        ck(cudaStreamSynchronize(g.stream), "cudnn residual");
        r.diff_vs_cudnn = max_abs_diff(ours, download(yc));
        r.cudnn_us = g.time_us(op, 10, o.runs);
        r.cudnn_algo = std::string(algo_name(c1.algo)) + "+" + algo_name(c2.algo);
    }
#endif
    return r;
}

// One layer of the unshuffle CNN: 3x3 conv, zero padding 1, bias, optional
// ReLU, on [1, cin, H, W] (the half-resolution planes of a 12 MP photo).
// cuDNN side: the convolution, cudnnAddTensor for the bias, then
// cudnnActivationForward for the ReLU (three passes over the output, as an
// eager framework runs Conv2d + ReLU).
// residual: the layer also adds an output-shaped tensor (the model input),
// fused here, a cudnnAddTensor more for cuDNN.
// The distinct convolution layers of the bundled models on a 12 MP photo,
// for the "model" and "variants" suites: the unshuffle CNN (denoise-fast,
// deblock-fast, deblur-fast; half resolution) and the full-resolution CNN (denoise).
struct ModelLayer {
    const char* model;
    int cin, cout, h, w;
    bool relu, residual;
};
constexpr ModelLayer kModelLayers[] = {
    {"unshuffle_cnn", 12, 64, 1500, 2000, true, false},  {"unshuffle_cnn", 64, 64, 1500, 2000, true, false},
    {"unshuffle_cnn", 64, 12, 1500, 2000, false, false}, {"fullres_cnn", 3, 48, 3000, 4000, true, false},
    {"fullres_cnn", 48, 48, 3000, 4000, true, false},    {"fullres_cnn", 48, 3, 3000, 4000, false, true},
};

// forced non-empty: that kernel variant (kernels/cuda/conv2d/conv2d_variants.cu's table) instead
// of the planner's pick, and no cuDNN run; the name ends in the variant's.
Result bench_model_conv(Gpu& g, const Options& o, std::mt19937& rng, const std::string& suite, int cin, int cout, int H,
                        int W, bool relu, bool residual = false, const std::string& forced = "") {
    Result r;
    r.suite = suite;
    const double npix = double(H) * W;
    r.flop = 2.0 * npix * cin * cout * 9;
    const size_t nin = size_t(cin) * H * W, nw = size_t(cout) * cin * 9, nout = size_t(cout) * H * W;
    r.bytes = 4.0 * double(nin + nw + nout * (residual ? 2 : 1) + cout);
    auto hx = randn(rng, nin, 1.f), hw = randn(rng, nw, 1.f / std::sqrt(9.f * cin)), hb = randn(rng, cout, 0.1f);
    auto hr = residual ? randn(rng, nout, 1.f) : std::vector<float>();
    DevBuf x(nin), w(nw), b(cout), y(nout), res(residual ? nout : 1);
    upload(x, hx), upload(w, hw), upload(b, hb);
    if (residual) upload(res, hr);
    ck(cudaMemset(y.p, 0xff, nout * sizeof(float)), "poison");
    imr::Conv2dArgs a;
    a.input = imr::f32_nchw(x.p, {1, cin, H, W});
    a.out_channels = cout, a.kernel = 3, a.pad_before = 1, a.pad_after = 1;
    a.weight = imr::f32_nchw(w.p, {cout, cin, 3, 3}), a.bias = imr::f32_vector(b.p, cout);
    a.output = imr::f32_nchw(y.p, a.out_shape());
    a.activation = relu ? imr::Activation::ReLU : imr::Activation::None;
    if (residual) a.residual = imr::f32_nchw(res.p, a.out_shape());
    // Weights prepared once, as a model's layer does (the Winograd transform).
    const std::unique_ptr<imr::PreparedWeights> prepared = imr::cuda::prepare_conv2d(a, g.stream);
    a.prepared = prepared.get();
    r.name = "conv3x3 " + std::to_string(cin) + "->" + std::to_string(cout) + (relu ? " relu " : " ") +
             (residual ? "+in " : "") + std::to_string(W) + "x" + std::to_string(H) + " [" +
             imr::cuda::plan_conv2d(a, g.gpu, forced).name + "]";
    imr::cuda::conv2d(a, g.stream, g.gpu, forced);
    ck(cudaStreamSynchronize(g.stream), "conv2d");
    const auto ours = download(y);
    imr::Conv2dArgs ha = a;
    ha.input.data = hx.data(), ha.weight.data = hw.data(), ha.bias.data = hb.data(), ha.output.data = nullptr;
    if (residual) ha.residual.data = hr.data();
    std::uniform_int_distribution<size_t> pick(0, nout - 1);
    for (int s = 0; s < 1000; ++s) {
        const size_t i = s == 0 ? 0 : s == 1 ? nout - 1 : pick(rng);
        const int xx = int(i % W), yy = int(i / W % H), cc = int(i / (size_t(W) * H));
        const double d = std::fabs(imr::reference_conv2d_at(ha, 0, cc, yy, xx) - double(ours[i]));
        if (!(d <= r.err_vs_f64)) r.err_vs_f64 = d;
    }
    r.ours_us = g.time_us([&] { imr::cuda::conv2d(a, g.stream, g.gpu, forced); }, 5, o.runs);
#ifdef IMRESTORE_WITH_CUDNN
    if (o.cudnn && forced.empty()) {
        DevBuf yc(nout);
        CudnnConv c(g, 1, cin, H, W, cout, 3, 1, x.p, w.p, yc.p);
        cudnnActivationDescriptor_t act = nullptr;
        ckd(cudnnCreateActivationDescriptor(&act), "activation desc");
        ckd(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), "relu desc");
        auto op = [&] {
            const float one = 1.f, zero = 0.f;
            c.run(x.p, w.p, yc.p, b.p);
            if (relu) ckd(cudnnActivationForward(g.cudnn, act, &one, c.y, yc.p, &zero, c.y, yc.p), "relu");
            if (residual) ckd(cudnnAddTensor(g.cudnn, &one, c.y, res.p, &one, c.y, yc.p), "residual");
        };
        op();
        ck(cudaStreamSynchronize(g.stream), "cudnn conv");
        r.diff_vs_cudnn = max_abs_diff(ours, download(yc));
        r.cudnn_us = g.time_us(op, 5, o.runs);
        r.cudnn_algo = std::string(algo_name(c.algo)) + "+bias" + (relu ? "+relu" : "") + (residual ? "+add" : "");
        cudnnDestroyActivationDescriptor(act);
    }
#endif
    return r;
}

// The pixel shuffles of the unshuffle CNN on a 12 MP photo: to depth
// [1,3,H,W] -> [1,12,H/2,W/2], and to space with the model input added.
// Memory-bound: floor = bytes / copy bandwidth. (No cuDNN equivalent.)
Result bench_model_shuffle(Gpu& g, const Options& o, std::mt19937& rng, int H, int W, bool to_depth) {
    Result r;
    r.suite = "unshuffle_cnn_12mp";
    r.name = std::string(to_depth ? "space_to_depth 2 " : "depth_to_space 2 +input ") + std::to_string(W) + "x" +
             std::to_string(H);
    const size_t n = size_t(3) * H * W;
    r.bytes = 4.0 * n * (to_depth ? 2 : 3);
    auto hx = randn(rng, n, 1.f), hr = randn(rng, n, 1.f);
    DevBuf x(n), res(n), y(n);
    upload(x, hx), upload(res, hr);
    imr::PixelShuffleArgs a;
    a.factor = 2;
    a.direction = to_depth ? imr::ShuffleDirection::ToDepth : imr::ShuffleDirection::ToSpace;
    a.input = imr::f32_nchw(x.p, to_depth ? imr::Shape{1, 3, H, W} : imr::Shape{1, 12, H / 2, W / 2});
    a.output = imr::f32_nchw(y.p, a.out_shape());
    if (!to_depth) a.residual = imr::f32_nchw(res.p, a.out_shape());
    imr::cuda::pixel_shuffle(a, g.stream);
    ck(cudaStreamSynchronize(g.stream), "pixel_shuffle");
    const auto ours = download(y);
    imr::PixelShuffleArgs ha = a;
    ha.input.data = hx.data(), ha.output.data = nullptr;
    if (!to_depth) ha.residual.data = hr.data();
    r.err_vs_f64 = max_abs_diff(ours, [&] {
        const std::vector<double> ref = imr::reference_pixel_shuffle(ha);
        return std::vector<float>(ref.begin(), ref.end());
    }());
    r.ours_us = g.time_us([&] { imr::cuda::pixel_shuffle(a, g.stream); }, 10, o.runs);
    return r;
}

// A whole model from the rows [first, end) of its three conv layers (first,
// middle, last), the middle one counted `middle` times.
Result model_total(const std::string& suite, const std::string& name, const std::vector<Result>& rows, size_t first,
                   size_t end, int middle) {
    Result total;
    total.suite = suite, total.name = name, total.cudnn_algo = "sum";
    for (size_t i = first; i < end; ++i) {
        const int times = i == first + 1 ? middle : 1;
        total.ours_us += times * rows[i].ours_us, total.cudnn_us += times * rows[i].cudnn_us;
        total.flop += times * rows[i].flop, total.bytes += times * rows[i].bytes;
        total.err_vs_f64 = std::max(total.err_vs_f64, rows[i].err_vs_f64);
    }
    return total;
}

Result bench_conv(Gpu& g, const Options& o, std::mt19937& rng, const std::string& suite, int B, int C, int S, int K) {
    Result r;
    r.suite = suite;
    r.name =
        "conv B" + std::to_string(B) + " C" + std::to_string(C) + " S" + std::to_string(S) + " K" + std::to_string(K);
    // No atol flag: GPU MODE's rtol = atol = 1e-3 is against torch fp32, whose own
    // error against float64 reaches 3.7e-2 on the ranked shape (anchor note).
    r.atol = 0;
    const int So = S - K + 1;
    const double npix = double(B) * So * So;
    r.flop = 2.0 * npix * C * double(C) * K * K;
    const size_t nin = size_t(B) * C * S * S, nw = size_t(C) * C * K * K, nout = size_t(B) * C * So * So;
    r.bytes = 4.0 * double(nin + nw + nout);
    auto hx = randn(rng, nin, 1.f), hw = randn(rng, nw, 1.f);
    DevBuf x(nin), w(nw), y(nout);
    upload(x, hx), upload(w, hw);
    ck(cudaMemset(y.p, 0xff, nout * sizeof(float)), "poison");
    imr::Conv2dArgs a;
    a.input = imr::f32_nchw(x.p, {B, C, S, S});
    a.out_channels = C;
    a.kernel = K;
    a.weight = imr::f32_nchw(w.p, {C, C, K, K}), a.output = imr::f32_nchw(y.p, a.out_shape());
    imr::cuda::conv2d(a, g.stream, g.gpu);
    ck(cudaStreamSynchronize(g.stream), "conv2d");
    const auto ours = download(y);
    imr::Conv2dArgs ha = a;
    ha.input.data = hx.data(), ha.weight.data = hw.data(), ha.output.data = nullptr;
    std::uniform_int_distribution<size_t> pick(0, nout - 1);
    const int samples = K >= 32 ? 300 : 1000;
    for (int s = 0; s < samples; ++s) {
        const size_t i = s == 0 ? 0 : s == 1 ? nout - 1 : pick(rng);
        const int xx = int(i % So), yy = int((i / So) % So), cc = int((i / (size_t(So) * So)) % C),
                  nn = int(i / (size_t(So) * So * C));
        const double d = std::fabs(imr::reference_conv2d_at(ha, nn, cc, yy, xx) - double(ours[i]));
        if (!(d <= r.err_vs_f64)) r.err_vs_f64 = d;
    }
    const int runs = r.flop > 50e9 ? o.conv_runs : o.runs;
    const int warm = r.flop > 50e9 ? 2 : 10;
    r.ours_us = g.time_us([&] { imr::cuda::conv2d(a, g.stream, g.gpu); }, warm, runs);
#ifdef IMRESTORE_WITH_CUDNN
    if (o.cudnn) {
        DevBuf yc(nout);
        CudnnConv c(g, B, C, S, S, C, K, 0, x.p, w.p, yc.p);
        c.run(x.p, w.p, yc.p, nullptr);
        ck(cudaStreamSynchronize(g.stream), "cudnn conv");
        r.diff_vs_cudnn = max_abs_diff(ours, download(yc));
        r.cudnn_us = g.time_us([&] { c.run(x.p, w.p, yc.p, nullptr); }, warm, runs);
        r.cudnn_algo = algo_name(c.algo);
    }
#endif
    return r;
}

// ------------------------------------------------------------------ suite graph-ops
// The ops model graphs added (issue 17): elementwise add/mul, activation,
// simple_gate, concat, layer_norm, depthwise_conv2d, window_mean, on the
// shapes the reference U-Nets of weights/architectures.py run at 12 MP
// (4000 x 3000, batch 1; NAFNet's size multiple 16 pads the rows to 3008),
// each in f32 NCHW (the fp32 path) and f16 / bf16 NHWC8 (the half path).
// The shapes were listed from the exported graphs (weights/export_graph.py
// drunet-large / nafnet-large, every stage's input channels and scale):
//   DRUNet-large (widths 64/128/256/512 at full, 1/2, 1/4, 1/8): one add per
//     scale (the skip added before each up-convolution, and before the tail);
//   NAFNet-large (width 32, enc 2/2/4/8, middle 12, dec 2/2/2/2; 32..512
//     channels at full .. 1/16): per NAFBlock at width c two layer_norm(c),
//     one depthwise 3x3 (2c, zero padding, bias), two simple_gate(2c -> c),
//     channel attention = window_mean(c, 192 / 2^level) + 1x1 conv + mul(c);
//     one add per decoder level (the skip after the PixelShuffle up).
//   Neither uses a stand-alone activation (DRUNet's ReLUs are fused into its
//   convolutions) or a concat: those rows are representative shapes (each
//   function on DRUNet's widest tensor, ReLU also on its deepest; a
//   concat-style U-Net decoder's [up, skip] at DRUNet's widths).
// Every op is memory-bound on the H200 (at most 18 FLOPs, depthwise K = 3,
// per 8 bytes in f32): its floor is the bytes it must move (each input read
// once, the output written once, the kernels' headers say which) over the
// device-to-device copy bandwidth measured at start (read + write, ~4.27
// TB/s; the fraction of the 4.8 TB/s HBM3e peak is printed beside it).
// Ours: the CUDA backend's op (imr::make_cuda_backend), timed with its
// BackendTimer (CUDA events on its stream) right after a 2x-L2 buffer was
// written on that stream (cold L2: a ReLU from one 2x-L2 buffer into another,
// through the backend, whose stream this file cannot see), warm-up first,
// median of --runs. cuDNN where it has the op, on the same data in the same
// types, timed as the other suites (the 2x-L2 memset, events on the
// benchmark's stream): cudnnOpTensor (add, mul),
// cudnnActivationForward (ReLU; SiLU = CUDNN_ACTIVATION_SWISH, beta 1),
// cudnnConvolutionForward with groups = channels (depthwise; fastest
// algorithm by FindEx: FMA math in f32 as elsewhere in this file, tensor-op
// math allowed in half) + cudnnAddTensor for the bias. The others (GELU,
// LeakyReLU, simple_gate, concat, layer_norm, window_mean) have no cuDNN
// counterpart: bench/torch_models.py --ops times PyTorch on the same shapes.
// Inputs are a 4 Mi-value random pattern tiled over the tensor (filling 3 GB
// from the host would take longer than timing it); every case checks 64
// sampled outputs against float64 computed from that pattern here, and
// against cuDNN's output at the same places.

enum class GOp {
    Add,
    Mul,
    Relu,
    LeakyRelu,
    Gelu,
    Silu,
    SimpleGate,
    Concat,
    LayerNorm,
    Depthwise3x3,
    Depthwise3x3Gate,
    WindowMean
};

const char* gop_name(GOp op) {
    switch (op) {
        case GOp::Add:
            return "add";
        case GOp::Mul:
            return "mul";
        case GOp::Relu:
            return "relu";
        case GOp::LeakyRelu:
            return "leaky_relu";
        case GOp::Gelu:
            return "gelu";
        case GOp::Silu:
            return "silu";
        case GOp::SimpleGate:
            return "simple_gate";
        case GOp::Concat:
            return "concat";
        case GOp::LayerNorm:
            return "layer_norm";
        case GOp::Depthwise3x3:
            return "depthwise3x3";
        case GOp::Depthwise3x3Gate:
            return "depthwise3x3+gate";
        case GOp::WindowMean:
            return "window_mean";
    }
    return "?";
}

struct GraphOpCase {
    const char* source;  // "drunet-large", "nafnet-large", "representative"
    GOp op;
    int c, h, w;     // the (first) input [1, c, h, w]; concat: two inputs of c channels
    int window = 0;  // window_mean
    int count = 1;   // how often the source network runs it at 12 MP (0: representative)
};

// clang-format off
const GraphOpCase kGraphOpCases[] = {
    // DRUNet-large: the skip adds (full, 1/2, 1/4, 1/8).
    {"drunet-large", GOp::Add, 64, 3000, 4000, 0, 1}, {"drunet-large", GOp::Add, 128, 1500, 2000, 0, 1},
    {"drunet-large", GOp::Add, 256, 750, 1000, 0, 1}, {"drunet-large", GOp::Add, 512, 375, 500, 0, 1},
    // NAFNet-large, level by level (full .. 1/16).
    {"nafnet-large", GOp::Add, 32, 3008, 4000, 0, 1}, {"nafnet-large", GOp::Add, 64, 1504, 2000, 0, 1},
    {"nafnet-large", GOp::Add, 128, 752, 1000, 0, 1}, {"nafnet-large", GOp::Add, 256, 376, 500, 0, 1},
    {"nafnet-large", GOp::Mul, 32, 3008, 4000, 0, 4}, {"nafnet-large", GOp::Mul, 64, 1504, 2000, 0, 4},
    {"nafnet-large", GOp::Mul, 128, 752, 1000, 0, 6}, {"nafnet-large", GOp::Mul, 256, 376, 500, 0, 10},
    {"nafnet-large", GOp::Mul, 512, 188, 250, 0, 12},
    {"nafnet-large", GOp::LayerNorm, 32, 3008, 4000, 0, 8}, {"nafnet-large", GOp::LayerNorm, 64, 1504, 2000, 0, 8},
    {"nafnet-large", GOp::LayerNorm, 128, 752, 1000, 0, 12}, {"nafnet-large", GOp::LayerNorm, 256, 376, 500, 0, 20},
    {"nafnet-large", GOp::LayerNorm, 512, 188, 250, 0, 24},
    {"nafnet-large", GOp::Depthwise3x3, 64, 3008, 4000, 0, 4},
    {"nafnet-large", GOp::Depthwise3x3, 128, 1504, 2000, 0, 4},
    {"nafnet-large", GOp::Depthwise3x3, 256, 752, 1000, 0, 6},
    {"nafnet-large", GOp::Depthwise3x3, 512, 376, 500, 0, 10},
    {"nafnet-large", GOp::Depthwise3x3, 1024, 188, 250, 0, 12},
    {"nafnet-large", GOp::SimpleGate, 64, 3008, 4000, 0, 8}, {"nafnet-large", GOp::SimpleGate, 128, 1504, 2000, 0, 8},
    {"nafnet-large", GOp::SimpleGate, 256, 752, 1000, 0, 12}, {"nafnet-large", GOp::SimpleGate, 512, 376, 500, 0, 20},
    {"nafnet-large", GOp::SimpleGate, 1024, 188, 250, 0, 24},
    {"nafnet-large", GOp::WindowMean, 32, 3008, 4000, 192, 4}, {"nafnet-large", GOp::WindowMean, 64, 1504, 2000, 96, 4},
    {"nafnet-large", GOp::WindowMean, 128, 752, 1000, 48, 6}, {"nafnet-large", GOp::WindowMean, 256, 376, 500, 24, 10},
    {"nafnet-large", GOp::WindowMean, 512, 188, 250, 12, 12},
    // NAFNet-large's depthwise -> simple_gate as the runner fuses them
    // (app/model_fusion.h): the two rows above it replaces, summed apart.
    {"nafnet-large fused", GOp::Depthwise3x3Gate, 64, 3008, 4000, 0, 4},
    {"nafnet-large fused", GOp::Depthwise3x3Gate, 128, 1504, 2000, 0, 4},
    {"nafnet-large fused", GOp::Depthwise3x3Gate, 256, 752, 1000, 0, 6},
    {"nafnet-large fused", GOp::Depthwise3x3Gate, 512, 376, 500, 0, 10},
    {"nafnet-large fused", GOp::Depthwise3x3Gate, 1024, 188, 250, 0, 12},
    // Representative (no stand-alone activation or concat in the reference U-Nets).
    {"representative", GOp::Relu, 64, 3000, 4000, 0, 0}, {"representative", GOp::LeakyRelu, 64, 3000, 4000, 0, 0},
    {"representative", GOp::Gelu, 64, 3000, 4000, 0, 0}, {"representative", GOp::Silu, 64, 3000, 4000, 0, 0},
    {"representative", GOp::Relu, 512, 375, 500, 0, 0},
    {"representative", GOp::Concat, 64, 3000, 4000, 0, 0}, {"representative", GOp::Concat, 128, 1500, 2000, 0, 0},
    {"representative", GOp::Concat, 256, 750, 1000, 0, 0}, {"representative", GOp::Concat, 512, 375, 500, 0, 0},
};
// clang-format on

struct GType {
    imr::DType dtype;
    imr::Layout layout;
};
constexpr GType kGraphTypes[] = {{imr::DType::F32, imr::Layout::NCHW},
                                 {imr::DType::F16, imr::Layout::NHWC8},
                                 {imr::DType::BF16, imr::Layout::NHWC8}};
std::string gtype_name(const GType& t) {
    return std::string(imr::dtype_name(t.dtype)) + " " + imr::layout_name(t.layout);
}
int dtype_index(imr::DType d) {
    return d == imr::DType::F32 ? 0 : d == imr::DType::F16 ? 1 : 2;
}

// Device memory in bytes (DevBuf counts floats).
struct DevBytes {
    void* p = nullptr;
    size_t bytes = 0;
    explicit DevBytes(size_t n = 0) { reset(n); }
    ~DevBytes() { reset(0); }
    void reset(size_t n) {
        if (p) cudaFree(p);
        p = nullptr, bytes = n;
        if (n) ck(cudaMalloc(&p, n), "cudaMalloc");
    }
    DevBytes(const DevBytes&) = delete;
    DevBytes& operator=(const DevBytes&) = delete;
};

// The random values every graph-ops tensor is tiled from: element i (in
// memory order) of a tensor filled with shift s is value(type, (i + s) % kCount).
struct Pattern {
    static constexpr size_t kCount = size_t(1) << 22;
    std::vector<float> host[3];  // per dtype: the values as that type rounds them
    DevBytes dev[3];             // per dtype: the stored values
    explicit Pattern(std::mt19937& rng) {
        const std::vector<float> v = randn(rng, kCount, 1.f);
        std::vector<uint16_t> h16(kCount), hb16(kCount);
        host[0] = v, host[1].resize(kCount), host[2].resize(kCount);
        for (size_t i = 0; i < kCount; ++i) {
            h16[i] = imr::float_to_f16(v[i]), host[1][i] = imr::f16_to_float(h16[i]);
            hb16[i] = imr::float_to_bf16(v[i]), host[2][i] = imr::bf16_to_float(hb16[i]);
        }
        const void* src[3] = {v.data(), h16.data(), hb16.data()};
        for (int t = 0; t < 3; ++t) {
            dev[t].reset(kCount * (t == 0 ? 4 : 2));
            ck(cudaMemcpy(dev[t].p, src[t], dev[t].bytes, cudaMemcpyHostToDevice), "pattern upload");
        }
    }
    float value(imr::DType d, size_t shift, size_t i) const { return host[dtype_index(d)][(i + shift) % kCount]; }
    // Fills the tensor's stored elements (its NHWC8 padding too: the shapes
    // here have none) on `stream`: the rotated pattern, then doubling copies.
    void fill(const imr::Tensor& t, size_t shift, cudaStream_t stream) const {
        const size_t es = imr::dtype_size(t.dtype), count = t.stored_count();
        char* dst = static_cast<char*>(t.data);
        const char* src = static_cast<const char*>(dev[dtype_index(t.dtype)].p);
        shift %= kCount;
        const size_t first = std::min(count, kCount - shift);
        ck(cudaMemcpyAsync(dst, src + shift * es, first * es, cudaMemcpyDeviceToDevice, stream), "fill");
        if (count > first) {
            const size_t second = std::min(count - first, shift);
            ck(cudaMemcpyAsync(dst + first * es, src, second * es, cudaMemcpyDeviceToDevice, stream), "fill");
        }
        for (size_t done = std::min(count, kCount); done < count;) {
            const size_t n = std::min(done, count - done);
            ck(cudaMemcpyAsync(dst + done * es, dst, n * es, cudaMemcpyDeviceToDevice, stream), "fill");
            done += n;
        }
    }
};

// One stored element of a device tensor, as a float.
float read_element(const imr::Tensor& t, size_t offset) {
    if (t.dtype == imr::DType::F32) {
        float v = 0;
        ck(cudaMemcpy(&v, static_cast<const float*>(t.data) + offset, 4, cudaMemcpyDeviceToHost), "sample");
        return v;
    }
    uint16_t h = 0;
    ck(cudaMemcpy(&h, static_cast<const uint16_t*>(t.data) + offset, 2, cudaMemcpyDeviceToHost), "sample");
    return t.dtype == imr::DType::F16 ? imr::f16_to_float(h) : imr::bf16_to_float(h);
}

#ifdef IMRESTORE_WITH_CUDNN
// cuDNN calls that may be unsupported for a type: false (and why) instead of exiting.
bool okd(cudnnStatus_t s, const char* what, std::string* why) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    if (why->empty()) *why = std::string("cuDNN: ") + what + ": " + cudnnGetErrorString(s);
    return false;
}
cudnnDataType_t cudnn_type(imr::DType d) {
    return d == imr::DType::F32 ? CUDNN_DATA_FLOAT : d == imr::DType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}
// A 4-d descriptor of a tensor (NHWC8 without padding channels is NHWC).
struct CudnnDesc {
    cudnnTensorDescriptor_t d = nullptr;
    CudnnDesc(const imr::Shape& s, const GType& t, std::string* why) {
        ckd(cudnnCreateTensorDescriptor(&d), "desc");
        okd(cudnnSetTensor4dDescriptor(d, t.layout == imr::Layout::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC,
                                       cudnn_type(t.dtype), s.n, s.c, s.h, s.w),
            "cudnnSetTensor4dDescriptor", why);
    }
    ~CudnnDesc() { cudnnDestroyTensorDescriptor(d); }
};
#endif

// backend_flush: writes 2x the L2 on the backend's stream (cold L2 for its ops).
Result bench_graph_op(Gpu& g, const Options& o, imr::Backend& be, imr::BackendTimer& timer,
                      const std::function<void()>& backend_flush, const Pattern& pat, std::mt19937& rng,
                      const GraphOpCase& k, const GType& ty) {
    using imr::Shape;
    using imr::Tensor;
    Result r;
    r.suite = "graph_ops";
    const Shape in_shape{1, k.c, k.h, k.w};
    const size_t es = imr::dtype_size(ty.dtype);
    auto tensor = [&](DevBytes& b, const Shape& s) {
        Tensor t{nullptr, s, ty.dtype, ty.layout};
        b.reset(t.bytes());
        t.data = b.p;
        return t;
    };
    DevBytes in_b, in2_b, out_b, ref_b, w_b, b_b, wc_b;
    const Tensor in = tensor(in_b, in_shape);
    pat.fill(in, 0, g.stream);
    Tensor in2, out;
    std::vector<float> hw, hb;  // layer_norm / depthwise weights and bias (f32, as model files hold them)
    std::function<void()> ours;
    std::function<double(int, int, int)> ref;  // float64 output at (c, y, x)
    auto x = [&](const Tensor& t, size_t shift, int c, int y, int xx) {
        return double(pat.value(ty.dtype, shift, t.offset(0, c, y, xx)));
    };
    const size_t kShift2 = 1234567;  // the second input's pattern offset
    double elems_out = double(in_shape.count()), flop_per_out = 1, bytes = 0;
    std::string what = gop_name(k.op);
    switch (k.op) {
        case GOp::Add:
        case GOp::Mul: {
            in2 = tensor(in2_b, in_shape);
            pat.fill(in2, kShift2, g.stream);
            out = tensor(out_b, in_shape);
            imr::ElementwiseArgs a;
            a.lhs = in, a.rhs = in2, a.output = out;
            a.op = k.op == GOp::Add ? imr::ElementwiseOp::Add : imr::ElementwiseOp::Mul;
            ours = [&be, a] { be.elementwise(a); };
            ref = [&, add = k.op == GOp::Add](int c, int y, int xx) {
                const double l = x(in, 0, c, y, xx), rr = x(in2, kShift2, c, y, xx);
                return add ? l + rr : l * rr;
            };
            bytes = 3.0 * in.bytes();
            break;
        }
        case GOp::Relu:
        case GOp::LeakyRelu:
        case GOp::Gelu:
        case GOp::Silu: {
            out = tensor(out_b, in_shape);
            imr::ActivationArgs a;
            a.input = in, a.output = out;
            a.function = k.op == GOp::Relu        ? imr::UnaryFunction::ReLU
                         : k.op == GOp::LeakyRelu ? imr::UnaryFunction::LeakyReLU
                         : k.op == GOp::Gelu      ? imr::UnaryFunction::GELU
                                                  : imr::UnaryFunction::SiLU;
            const double slope = a.slope;
            ours = [&be, a] { be.activation(a); };
            ref = [&, op = k.op, slope](int c, int y, int xx) {
                const double v = x(in, 0, c, y, xx);
                switch (op) {
                    case GOp::Relu:
                        return v < 0 ? 0.0 : v;
                    case GOp::LeakyRelu:
                        return v < 0 ? slope * v : v;
                    case GOp::Gelu:
                        return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
                    default:
                        return v / (1.0 + std::exp(-v));
                }
            };
            flop_per_out = k.op == GOp::Gelu ? 20 : k.op == GOp::Silu ? 10 : 1;
            bytes = 2.0 * in.bytes();
            break;
        }
        case GOp::SimpleGate: {
            out = tensor(out_b, {1, k.c / 2, k.h, k.w});
            imr::SimpleGateArgs a;
            a.input = in, a.output = out;
            ours = [&be, a] { be.simple_gate(a); };
            ref = [&](int c, int y, int xx) { return x(in, 0, c, y, xx) * x(in, 0, c + k.c / 2, y, xx); };
            elems_out /= 2;
            bytes = double(in.bytes()) + double(out.bytes());
            break;
        }
        case GOp::Concat: {
            in2 = tensor(in2_b, in_shape);
            pat.fill(in2, kShift2, g.stream);
            out = tensor(out_b, {1, 2 * k.c, k.h, k.w});
            imr::ConcatArgs a;
            a.inputs = {in, in2}, a.output = out;
            ours = [&be, a] { be.concat(a); };
            ref = [&](int c, int y, int xx) { return c < k.c ? x(in, 0, c, y, xx) : x(in2, kShift2, c - k.c, y, xx); };
            elems_out *= 2, flop_per_out = 0;
            bytes = 2.0 * out.bytes();
            break;
        }
        case GOp::LayerNorm: {
            out = tensor(out_b, in_shape);
            hw = randn(rng, k.c, 0.2f), hb = randn(rng, k.c, 0.1f);
            for (float& v : hw) v += 1.f;
            w_b.reset(4 * size_t(k.c));
            b_b.reset(4 * size_t(k.c));
            ck(cudaMemcpy(w_b.p, hw.data(), w_b.bytes, cudaMemcpyHostToDevice), "upload");
            ck(cudaMemcpy(b_b.p, hb.data(), b_b.bytes, cudaMemcpyHostToDevice), "upload");
            imr::LayerNormArgs a;
            a.input = in, a.output = out;
            a.weight = imr::f32_vector(static_cast<float*>(w_b.p), k.c);
            a.bias = imr::f32_vector(static_cast<float*>(b_b.p), k.c);
            const double eps = a.eps;
            ours = [&be, a] { be.layer_norm(a); };
            ref = [&, eps](int c, int y, int xx) {
                double mean = 0, var = 0;
                for (int i = 0; i < k.c; ++i) mean += x(in, 0, i, y, xx);
                mean /= k.c;
                for (int i = 0; i < k.c; ++i) var += (x(in, 0, i, y, xx) - mean) * (x(in, 0, i, y, xx) - mean);
                var /= k.c;
                return (x(in, 0, c, y, xx) - mean) / std::sqrt(var + eps) * hw[c] + hb[c];
            };
            flop_per_out = 8;
            bytes = 2.0 * in.bytes();
            break;
        }
        case GOp::Depthwise3x3:
        case GOp::Depthwise3x3Gate: {
            const bool gate = k.op == GOp::Depthwise3x3Gate;
            out = tensor(out_b, gate ? Shape{1, k.c / 2, k.h, k.w} : in_shape);
            hw = randn(rng, size_t(k.c) * 9, 1.f / 3.f), hb = randn(rng, k.c, 0.1f);
            w_b.reset(4 * hw.size());
            b_b.reset(4 * size_t(k.c));
            ck(cudaMemcpy(w_b.p, hw.data(), w_b.bytes, cudaMemcpyHostToDevice), "upload");
            ck(cudaMemcpy(b_b.p, hb.data(), b_b.bytes, cudaMemcpyHostToDevice), "upload");
            imr::DepthwiseConv2dArgs a;
            a.input = in, a.output = out, a.kernel = 3, a.pad_before = 1, a.pad_after = 1;
            a.pad_mode = imr::PadMode::Zero;  // NAFNet's (nn.Conv2d's default)
            a.gate = gate;
            a.weight = imr::f32_nchw(static_cast<float*>(w_b.p), {k.c, 1, 3, 3});
            a.bias = imr::f32_vector(static_cast<float*>(b_b.p), k.c);
            ours = [&be, a] { be.depthwise_conv2d(a); };
            auto dw = [&](int c, int y, int xx) {
                double s = hb[c];
                for (int ky = 0; ky < 3; ++ky)
                    for (int kx = 0; kx < 3; ++kx) {
                        const int yy = y + ky - 1, xq = xx + kx - 1;
                        if (yy >= 0 && yy < k.h && xq >= 0 && xq < k.w)
                            s += double(hw[size_t(c) * 9 + ky * 3 + kx]) * x(in, 0, c, yy, xq);
                    }
                return s;
            };
            ref = [dw, gate, half = k.c / 2](int c, int y, int xx) {
                return gate ? dw(c, y, xx) * dw(c + half, y, xx) : dw(c, y, xx);
            };
            elems_out = double(out.shape.count());
            flop_per_out = gate ? 2 * 19 + 1 : 19;
            bytes = double(in.bytes()) + double(out.bytes());
            break;
        }
        case GOp::WindowMean: {
            out = tensor(out_b, in_shape);
            imr::WindowMeanArgs a;
            a.input = in, a.output = out, a.window = k.window;
            ours = [&be, a] { be.window_mean(a); };
            ref = [&, before = a.before(), after = a.after()](int c, int y, int xx) {
                const int y0 = std::max(0, y - before), y1 = std::min(k.h - 1, y + after);
                const int x0 = std::max(0, xx - before), x1 = std::min(k.w - 1, xx + after);
                double s = 0;
                for (int yy = y0; yy <= y1; ++yy)
                    for (int xq = x0; xq <= x1; ++xq) s += x(in, 0, c, yy, xq);
                return s / (double(y1 - y0 + 1) * (x1 - x0 + 1));
            };
            what += " w" + std::to_string(k.window);
            flop_per_out = 4;
            bytes = 2.0 * in.bytes();
            break;
        }
    }
    ck(cudaStreamSynchronize(g.stream), "fill");
    r.name = what + " " + std::to_string(k.c) + "x" + std::to_string(k.w) + "x" + std::to_string(k.h) + " " +
             gtype_name(ty) + " [" + k.source + (k.count > 1 ? " x" + std::to_string(k.count) : "") + "]";
    r.flop = elems_out * flop_per_out;
    r.bytes = bytes;
    r.count = k.count;
    r.source = k.source;
    r.type = gtype_name(ty);
    // Time a call with a cold L2: `flush` writes 2x the L2 on the stream the
    // call runs on, then the events around the call (as Gpu::time_us; the
    // call is queued while the flush runs, so no launch gap is timed).
    auto timed = [&](const std::function<void()>& op, const std::function<void()>& flush,
                     const std::function<void()>& start, const std::function<void()>& stop,
                     const std::function<double()>& elapsed_ms) {
        for (int i = 0; i < 3; ++i) op();
        ck(cudaDeviceSynchronize(), "warm-up");
        std::vector<double> t;
        for (int i = 0; i < o.runs; ++i) {
            flush();
            start();
            op();
            stop();
            t.push_back(elapsed_ms() * 1e3);
        }
        ck(cudaGetLastError(), "after timing");
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    ours();
    be.synchronize();
    // Sampled check: the corners, then random places.
    const Shape os = out.shape;
    std::uniform_int_distribution<int> pc(0, os.c - 1), py(0, os.h - 1), px(0, os.w - 1);
    std::vector<std::array<int, 3>> samples = {
        {0, 0, 0}, {os.c - 1, os.h - 1, os.w - 1}, {0, os.h - 1, 0}, {os.c - 1, 0, os.w - 1}};
    while (samples.size() < 64) samples.push_back({pc(rng), py(rng), px(rng)});
    std::vector<double> want;
    for (const auto& s : samples) {
        want.push_back(ref(s[0], s[1], s[2]));
        const double d = std::fabs(double(read_element(out, out.offset(0, s[0], s[1], s[2]))) - want.back());
        if (!(d <= r.err_vs_f64)) r.err_vs_f64 = d;
    }
    r.ours_us = timed(
        ours, backend_flush, [&] { timer.start(); }, [&] { timer.stop(); }, [&] { return timer.elapsed_ms(); });
#ifdef IMRESTORE_WITH_CUDNN
    if (o.cudnn) {
        std::string why;
        std::function<void()> theirs;
        const float one = 1.f, zero = 0.f;
        CudnnDesc din(in_shape, ty, &why), dout(os, ty, &why);
        cudnnOpTensorDescriptor_t opd = nullptr;
        cudnnActivationDescriptor_t act = nullptr;
        cudnnFilterDescriptor_t fd = nullptr;
        cudnnConvolutionDescriptor_t cd = nullptr;
        std::unique_ptr<CudnnDesc> dbias;
        size_t ws_bytes = 0;
        cudnnConvolutionFwdAlgo_t algo{};
        const Tensor theirs_out{nullptr, os, ty.dtype, ty.layout};
        Tensor tout = theirs_out;
        if (k.op == GOp::Add || k.op == GOp::Mul || k.op == GOp::Relu || k.op == GOp::Silu ||
            k.op == GOp::Depthwise3x3) {
            ref_b.reset(out.bytes());
            tout.data = ref_b.p;
        }
        if (k.op == GOp::Add || k.op == GOp::Mul) {
            ckd(cudnnCreateOpTensorDescriptor(&opd), "op desc");
            if (okd(cudnnSetOpTensorDescriptor(opd, k.op == GOp::Add ? CUDNN_OP_TENSOR_ADD : CUDNN_OP_TENSOR_MUL,
                                               CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
                    "cudnnSetOpTensorDescriptor", &why))
                theirs = [&] {
                    okd(cudnnOpTensor(g.cudnn, opd, &one, din.d, in.data, &one, din.d, in2.data, &zero, dout.d,
                                      tout.data),
                        "cudnnOpTensor", &why);
                };
            r.cudnn_algo = "cudnnOpTensor";
        } else if (k.op == GOp::Relu || k.op == GOp::Silu) {
            ckd(cudnnCreateActivationDescriptor(&act), "activation desc");
            bool ok = okd(
                cudnnSetActivationDescriptor(act, k.op == GOp::Relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_SWISH,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor", &why);
            if (ok && k.op == GOp::Silu) ok = okd(cudnnSetActivationDescriptorSwishBeta(act, 1.0), "SwishBeta", &why);
            if (ok)
                theirs = [&] {
                    okd(cudnnActivationForward(g.cudnn, act, &one, din.d, in.data, &zero, dout.d, tout.data),
                        "cudnnActivationForward", &why);
                };
            r.cudnn_algo = "cudnnActivationForward";
        } else if (k.op == GOp::Depthwise3x3) {
            // Weights and bias in the tensors' type (KRSC = [C][3][3][1] for NHWC, the same order as [C][1][3][3]).
            std::vector<uint16_t> h16(hw.size()), b16(hb.size());
            const bool half = ty.dtype != imr::DType::F32;
            for (size_t i = 0; i < hw.size(); ++i)
                h16[i] = ty.dtype == imr::DType::F16 ? imr::float_to_f16(hw[i]) : imr::float_to_bf16(hw[i]);
            for (size_t i = 0; i < hb.size(); ++i)
                b16[i] = ty.dtype == imr::DType::F16 ? imr::float_to_f16(hb[i]) : imr::float_to_bf16(hb[i]);
            wc_b.reset((hw.size() + hb.size()) * es);
            char* wdev = static_cast<char*>(wc_b.p);
            ck(cudaMemcpy(wdev, half ? (const void*)h16.data() : (const void*)hw.data(), hw.size() * es,
                          cudaMemcpyHostToDevice),
               "upload");
            ck(cudaMemcpy(wdev + hw.size() * es, half ? (const void*)b16.data() : (const void*)hb.data(),
                          hb.size() * es, cudaMemcpyHostToDevice),
               "upload");
            ckd(cudnnCreateFilterDescriptor(&fd), "filter desc");
            ckd(cudnnCreateConvolutionDescriptor(&cd), "conv desc");
            dbias = std::make_unique<CudnnDesc>(Shape{1, k.c, 1, 1}, ty, &why);
            bool ok =
                okd(cudnnSetFilter4dDescriptor(fd, cudnn_type(ty.dtype), half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                               k.c, 1, 3, 3),
                    "filter", &why) &&
                okd(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                    "conv", &why) &&
                okd(cudnnSetConvolutionGroupCount(cd, k.c), "groups", &why) &&
                okd(cudnnSetConvolutionMathType(cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), "math", &why);
            if (ok) {
                size_t free_b = 0, total_b = 0;
                ck(cudaMemGetInfo(&free_b, &total_b), "meminfo");
                DevBytes sws(std::min<size_t>(size_t(4) << 30, free_b / 4));
                cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
                int found = 0;
                ok = okd(cudnnFindConvolutionForwardAlgorithmEx(g.cudnn, din.d, in.data, fd, wdev, cd, dout.d,
                                                                tout.data, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found,
                                                                perf, sws.p, sws.bytes),
                         "cudnnFindConvolutionForwardAlgorithmEx", &why);
                int best = -1;
                for (int i = 0; ok && i < found; ++i)
                    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
                        (half || (perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
                                  perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))) {
                        best = i;
                        break;
                    }
                if (ok && best < 0) ok = okd(CUDNN_STATUS_NOT_SUPPORTED, "no depthwise algorithm", &why);
                if (ok) {
                    algo = perf[best].algo, ws_bytes = perf[best].memory;
                    r.cudnn_algo = std::string(algo_name(algo)) + "+bias";
                }
            }
            if (ok) {
                auto ws = std::make_shared<DevBytes>(ws_bytes);
                theirs = [&, ws, wdev] {
                    okd(cudnnConvolutionForward(g.cudnn, &one, din.d, in.data, fd, wdev, cd, algo, ws->p, ws_bytes,
                                                &zero, dout.d, tout.data),
                        "cudnnConvolutionForward", &why);
                    okd(cudnnAddTensor(g.cudnn, &one, dbias->d, wdev + hw.size() * es, &one, dout.d, tout.data),
                        "cudnnAddTensor(bias)", &why);
                };
            }
        } else {
            r.cudnn_algo = "none (PyTorch: torch_models.py --ops)";
        }
        if (theirs) {
            theirs();
            ck(cudaStreamSynchronize(g.stream), "cudnn");
            if (why.empty()) {
                r.diff_vs_cudnn = 0;
                for (size_t i = 0; i < samples.size(); ++i) {
                    const auto& s = samples[i];
                    const double d = std::fabs(double(read_element(tout, tout.offset(0, s[0], s[1], s[2]))) -
                                               double(read_element(out, out.offset(0, s[0], s[1], s[2]))));
                    if (!(d <= r.diff_vs_cudnn)) r.diff_vs_cudnn = d;
                }
                r.cudnn_us = timed(
                    theirs, [&] { ck(cudaMemsetAsync(g.flush->p, 0, g.flush->n * sizeof(float), g.stream), "flush"); },
                    [&] { ck(cudaEventRecord(g.e0, g.stream), "event"); },
                    [&] { ck(cudaEventRecord(g.e1, g.stream), "event"); },
                    [&] {
                        ck(cudaEventSynchronize(g.e1), "event sync");
                        float ms = 0;
                        ck(cudaEventElapsedTime(&ms, g.e0, g.e1), "elapsed");
                        return double(ms);
                    });
            }
        }
        if (!why.empty()) r.cudnn_algo = why, r.cudnn_us = 0, r.diff_vs_cudnn = -1;
        if (opd) cudnnDestroyOpTensorDescriptor(opd);
        if (act) cudnnDestroyActivationDescriptor(act);
        if (fd) cudnnDestroyFilterDescriptor(fd);
        if (cd) cudnnDestroyConvolutionDescriptor(cd);
    }
#endif
    return r;
}

// The graph-ops rows again as a table of bandwidths and floors, and per
// network and type the ops' sum over the larger U-Net (each case times the
// number of times the network runs it at 12 MP).
void print_graph_ops_summary(const std::vector<Result>& results, double copy_tbps) {
    bool any = false;
    for (const Result& r : results) any = any || r.suite == "graph_ops";
    if (!any) return;
    std::printf(
        "\ngraph-ops (floor = bytes / measured copy %.2f TB/s; goal >= 60%% of it; cuDNN where it has the op)\n",
        copy_tbps);
    std::printf("%-62s %9s %8s %7s %7s %9s %8s %7s\n", "case", "ours_ms", "GB/s", "%floor", "%4.8T", "cudnn_ms", "GB/s",
                "x_cudnn");
    struct Sum {
        std::string key;
        double ours = 0, floor = 0, cudnn = 0, cudnn_ours = 0;
    };
    std::vector<Sum> sums;
    for (const Result& r : results) {
        if (r.suite != "graph_ops") continue;
        const double floor_us = r.bytes / (copy_tbps * 1e12) * 1e6;
        std::printf("%-62s %9.3f %8.0f %7.1f %7.1f %9.3f %8.0f %7.2f%s\n", r.name.c_str(), r.ours_us / 1e3,
                    r.bytes / (r.ours_us * 1e-6) / 1e9, 100.0 * floor_us / r.ours_us,
                    100.0 * r.bytes / kHbmPeakBps / (r.ours_us * 1e-6), r.cudnn_us / 1e3,
                    r.cudnn_us > 0 ? r.bytes / (r.cudnn_us * 1e-6) / 1e9 : 0.0,
                    r.cudnn_us > 0 ? r.cudnn_us / r.ours_us : 0.0, floor_us / r.ours_us < 0.6 ? "  (< 60%)" : "");
        if (r.count <= 0) continue;
        const std::string key = r.source + " " + r.type;
        auto it = std::find_if(sums.begin(), sums.end(), [&](const Sum& s) { return s.key == key; });
        if (it == sums.end()) it = sums.insert(sums.end(), Sum{key});
        it->ours += r.count * r.ours_us, it->floor += r.count * floor_us;
        if (r.cudnn_us > 0) it->cudnn += r.count * r.cudnn_us, it->cudnn_ours += r.count * r.ours_us;
    }
    for (const Sum& s : sums)
        std::printf(
            "sum over %-30s these ops %8.2f ms, floor %7.2f ms (%4.1f%%); where cuDNN has them: ours %7.2f "
            "ms, cuDNN %7.2f ms\n",
            s.key.c_str(), s.ours / 1e3, s.floor / 1e3, 100.0 * s.floor / s.ours, s.cudnn_ours / 1e3, s.cudnn / 1e3);
}

bool parse_ints(const std::string& s, int* out, int n) {
    std::stringstream ss(s);
    std::string tok;
    int i = 0;
    while (std::getline(ss, tok, ',')) {
        if (i >= n) return false;
        char* end = nullptr;
        const long v = std::strtol(tok.c_str(), &end, 10);
        if (*end || v <= 0 || v > 1 << 20) return false;
        out[i++] = int(v);
    }
    return i == n;
}

Options parse(int argc, char** argv) {
    Options o;
    if (const char* c = std::getenv("IMRESTORE_COMMIT")) o.commit = c;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(k + " needs a value");
            return argv[++i];
        };
        if (k == "--suite") {
            o.suite = val();
            if (o.suite != "all" && o.suite != "residual" && o.suite != "conv" && o.suite != "model" &&
                o.suite != "variants" && o.suite != "graph-ops" && o.suite != "none")
                die("--suite: expected all, residual, conv, model, variants, graph-ops or none");
        } else if (k == "--residual") {
            std::array<int, 3> v;
            if (!parse_ints(val(), v.data(), 3)) die("--residual expects B,H,W");
            o.residual.push_back(v);
        } else if (k == "--conv") {
            std::array<int, 4> v;
            if (!parse_ints(val(), v.data(), 4)) die("--conv expects B,C,S,K");
            if (v[3] > v[2]) die("--conv: K must not exceed S");
            o.conv.push_back(v);
        } else if (k == "--runs") {
            o.runs = std::max(1, std::atoi(val().c_str()));
        } else if (k == "--conv-runs") {
            o.conv_runs = std::max(1, std::atoi(val().c_str()));
        } else if (k == "--device") {
            o.device = std::atoi(val().c_str());
        } else if (k == "--only") {
            std::stringstream ss(val());
            for (std::string tok; std::getline(ss, tok, ',');)
                if (!tok.empty()) o.only.push_back(tok);
        } else if (k == "--no-cudnn") {
            o.cudnn = false;
        } else if (k == "--json") {
            o.json = val();
        } else if (k == "--commit") {
            o.commit = val();
        } else if (k == "-h" || k == "--help") {
            std::printf(
                "bench_gpu [--suite all|residual|conv|model|variants|graph-ops|none] [--residual B,H,W]...\n"
                "          [--conv B,C,S,K]... [--runs N (50)] [--conv-runs N (10, convs > 50 GFLOP)] [--no-cudnn]\n"
                "          [--device N (0)] [--json FILE] [--commit SHA (default $IMRESTORE_COMMIT)]\n"
                "          [--only TEXT[,TEXT...]] (graph-ops: only the cases whose name contains one of them,\n"
                "          e.g. --only f16,window_mean; all is residual, conv, model and variants, not graph-ops)\n");
            std::exit(0);
        } else {
            die("unknown argument " + k + " (see --help)");
        }
    }
    return o;
}

std::string json_escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c;
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    Gpu g;
    ck(cudaSetDevice(o.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
    g.sm_count = prop.multiProcessorCount;
    g.gpu = {prop.multiProcessorCount, prop.major * 10 + prop.minor};
    g.name = prop.name;
    int drv = 0, rt = 0, clock_khz = 0;
    ck(cudaDriverGetVersion(&drv), "driver version");
    ck(cudaRuntimeGetVersion(&rt), "runtime version");
    ck(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, o.device), "clock rate");
    // The kernel driver's version (580.x) from /proc; the CUDA driver API version as a fallback.
    g.driver = "CUDA driver API " + std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10);
    if (std::ifstream v("/proc/driver/nvidia/version"); v) {
        std::string line, tok;
        std::getline(v, line);
        std::istringstream ls(line);
        while (ls >> tok)
            if (!tok.empty() && std::isdigit((unsigned char)tok[0]) && tok.find('.') != std::string::npos) {
                g.driver = tok;
                break;
            }
    }
    g.runtime = std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10);
    // FP32 FFMA: 128 lanes per SM on sm_90 (and sm_80/86/89 consumer parts differ; this is a Hopper number).
    g.peak_tflops = double(g.sm_count) * 128 * 2 * clock_khz * 1e3 / 1e12;
    ck(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "stream");
    ck(cudaEventCreate(&g.e0), "event");
    ck(cudaEventCreate(&g.e1), "event");
    DevBuf flush(size_t(2) * prop.l2CacheSize / sizeof(float));
    g.flush = &flush;
    {                                                   // device-to-device copy bandwidth, bytes read + written
        DevBuf a(size_t(1) << 28), b(size_t(1) << 28);  // 1 GiB each
        ck(cudaMemsetAsync(a.p, 0, a.n * 4, g.stream), "memset");
        const double us = g.time_us(
            [&] { ck(cudaMemcpyAsync(b.p, a.p, a.n * 4, cudaMemcpyDeviceToDevice, g.stream), "copy"); }, 3, 10);
        g.copy_tbps = 2.0 * a.n * 4 / (us * 1e-6) / 1e12;
    }
    std::string cudnn_version = "none";
#ifdef IMRESTORE_WITH_CUDNN
    if (o.cudnn) {
        ckd(cudnnCreate(&g.cudnn), "cudnnCreate");
        ckd(cudnnSetStream(g.cudnn, g.stream), "cudnnSetStream");
        cudnn_version = std::to_string(cudnnGetVersion());
    }
#else
    o.cudnn = false;
#endif
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::printf("bench_gpu: %s, %d SMs, L2 %d MB, driver %s, CUDA runtime %s, cuDNN %s, %s\n", g.name.c_str(),
                g.sm_count, prop.l2CacheSize >> 20, g.driver.c_str(), g.runtime.c_str(), cudnn_version.c_str(), date);
    std::printf("copy bandwidth %.2f TB/s (read+write), fp32 FFMA peak %.1f TFLOP/s (%d SMs x 128 x 2 x %.2f GHz)\n",
                g.copy_tbps, g.peak_tflops, g.sm_count, clock_khz / 1e6);
    std::fflush(stdout);

    std::mt19937 rng(20261129);
    std::vector<Result> results;
    auto report = [&](const Result& r) {
        std::printf("%-34s ours %10.1f us  cudnn %10.1f us (%s)  err_f64 %.2e  |ours-cudnn| %.2e\n", r.name.c_str(),
                    r.ours_us, r.cudnn_us, r.cudnn_algo.c_str(), r.err_vs_f64, r.diff_vs_cudnn);
        std::fflush(stdout);
        results.push_back(r);
    };
    if (o.suite == "all" || o.suite == "residual")
        for (const auto& c : kResidualSuite) report(bench_residual(g, o, rng, "solexec_040", c.b, c.h, c.w, c.atol));
    if (o.suite == "all" || o.suite == "conv")
        for (const auto& c : kConvSuite) report(bench_conv(g, o, rng, "gpumode_conv2d_v2", c[0], c[1], c[2], c[3]));
    if (o.suite == "all" || o.suite == "model") {
        // 4000 x 3000 photo; the unshuffle CNN's convolutions run on the 2000 x
        // 1500 half-resolution planes, between its two shuffles.
        const int H = 3000, W = 4000;
        auto run_layers = [&](const char* model) {
            for (const ModelLayer& l : kModelLayers)
                if (std::string(l.model) == model)
                    report(bench_model_conv(g, o, rng, std::string(model) + "_12mp", l.cin, l.cout, l.h, l.w, l.relu,
                                            l.residual));
        };
        report(bench_model_shuffle(g, o, rng, H, W, true));
        run_layers("unshuffle_cnn");
        report(bench_model_shuffle(g, o, rng, H, W, false));
        // The denoise model's 14 convolutions (1 + 12 + 1) from the layers
        // above; the two shuffles add their own rows (cuDNN has none).
        const size_t k = results.size();
        report(model_total("unshuffle_cnn_12mp_total", "denoise 14 convs 4000x3000", results, k - 4, k - 1, 12));
        // The full-resolution CNN (10 convolutions of width 48, the last adding the input).
        run_layers("fullres_cnn");
        const size_t k1 = results.size();
        report(model_total("fullres_cnn_12mp_total", "full-res 10 convs 4000x3000", results, k1 - 3, k1, 8));
    }
    if (o.suite == "all" || o.suite == "variants") {
        // Every conv2d variant that can run each model layer; the planner's pick appears among them.
        for (const ModelLayer& l : kModelLayers)
            for (const std::string& v : imr::cuda::conv2d_variants(g.gpu.arch)) {
                try {
                    report(bench_model_conv(g, o, rng, std::string("variants_") + l.model, l.cin, l.cout, l.h, l.w,
                                            l.relu, l.residual, v));
                } catch (const imr::NotApplicable&) {
                }
            }
    }
    if (o.suite == "graph-ops") {
        const std::unique_ptr<imr::Backend> be = imr::make_cuda_backend(o.device);
        const std::unique_ptr<imr::BackendTimer> timer = be->make_timer();
        const Pattern pattern(rng);
        // The cold-L2 flush on the backend's stream: ReLU from one 2x-L2 buffer into another.
        const int flush_n = int(g.flush->n);
        DevBuf fa(g.flush->n), fb(g.flush->n);
        ck(cudaMemset(fa.p, 0, fa.n * sizeof(float)), "memset");
        imr::ActivationArgs fl;
        fl.input = imr::f32_nchw(fa.p, {1, 1, 1, flush_n}), fl.output = imr::f32_nchw(fb.p, {1, 1, 1, flush_n});
        const std::function<void()> backend_flush = [&] { be->activation(fl); };
        for (const GraphOpCase& k : kGraphOpCases)
            for (const GType& ty : kGraphTypes) {
                if (!o.only.empty()) {
                    const std::string name = std::string(gop_name(k.op)) + " " + std::to_string(k.c) + "x" +
                                             std::to_string(k.w) + "x" + std::to_string(k.h) + " " + gtype_name(ty) +
                                             " " + k.source;
                    bool any = false;
                    for (const std::string& t : o.only) any = any || name.find(t) != std::string::npos;
                    if (!any) continue;
                }
                try {  // one case's failure (an op the backend refuses) is reported, the rest still run
                    report(bench_graph_op(g, o, *be, *timer, backend_flush, pattern, rng, k, ty));
                } catch (const std::exception& e) {
                    std::printf("%s %d %s %s: FAILED: %s\n", gop_name(k.op), k.c, gtype_name(ty).c_str(), k.source,
                                e.what());
                    std::fflush(stdout);
                    ck(cudaDeviceSynchronize(), "after a failed case");  // a sticky CUDA error ends the run here
                }
            }
    }
    for (const auto& c : o.residual) report(bench_residual(g, o, rng, "custom", c[0], c[1], c[2], 0));
    for (const auto& c : o.conv) report(bench_conv(g, o, rng, "custom", c[0], c[1], c[2], c[3]));

    // Suite means (arithmetic, as the anchors report them).
    struct Mean {
        std::string suite;
        double ours = 0, cudnn = 0;
        int n = 0;
    };
    std::vector<Mean> means;
    for (const auto& r : results) {
        auto it = std::find_if(means.begin(), means.end(), [&](const Mean& m) { return m.suite == r.suite; });
        if (it == means.end()) it = means.insert(means.end(), Mean{r.suite});
        it->ours += r.ours_us, it->cudnn += r.cudnn_us, ++it->n;
    }
    for (auto& m : means) m.ours /= m.n, m.cudnn /= m.n;

    if (!o.json.empty()) {
        std::ofstream f(o.json);
        f << "{\n  \"date\": \"" << date << "\",\n  \"gpu\": \"" << json_escape(g.name)
          << "\",\n  \"sm_count\": " << g.sm_count << ",\n  \"driver\": \"" << g.driver << "\",\n  \"cuda_runtime\": \""
          << g.runtime << "\",\n  \"cudnn\": \"" << cudnn_version << "\",\n  \"commit\": \"" << json_escape(o.commit)
          << "\",\n  \"method\": \"CUDA events, 2x-L2 buffer zeroed before every call, median of " << o.runs << " ("
          << o.conv_runs
          << " for convs > 50 GFLOP) after warm-up; cuDNN: fastest CUDNN_FMA_MATH algorithm by FindEx\",\n"
          << "  \"copy_TBps_read_plus_write\": " << g.copy_tbps << ",\n  \"fp32_peak_TFLOPs\": " << g.peak_tflops
          << ",\n  \"cases\": [\n";
        for (size_t i = 0; i < results.size(); ++i) {
            const auto& r = results[i];
            f << "    {\"suite\": \"" << r.suite << "\", \"case\": \"" << r.name << "\", \"ours_us\": " << r.ours_us
              << ", \"cudnn_us\": " << r.cudnn_us << ", \"cudnn_algo\": \"" << r.cudnn_algo
              << "\", \"gflop\": " << r.flop / 1e9 << ", \"mbytes\": " << r.bytes / 1e6
              << ", \"frac_memory_floor\": " << (r.bytes / (g.copy_tbps * 1e12)) / (r.ours_us * 1e-6)
              << ", \"frac_compute_floor\": " << (r.flop / (g.peak_tflops * 1e12)) / (r.ours_us * 1e-6)
              << ", \"frac_hbm_4.8TBps\": " << (r.bytes / kHbmPeakBps) / (r.ours_us * 1e-6)
              << ", \"max_abs_err_vs_float64_sampled\": " << r.err_vs_f64
              << ", \"max_abs_diff_vs_cudnn\": " << r.diff_vs_cudnn;
            if (!r.source.empty())
                f << ", \"source\": \"" << r.source << "\", \"type\": \"" << r.type << "\", \"count\": " << r.count;
            f << "}" << (i + 1 < results.size() ? "," : "") << "\n";
        }
        f << "  ],\n  \"suite_means_us\": {";
        for (size_t i = 0; i < means.size(); ++i)
            f << (i ? ", " : "") << "\"" << means[i].suite << "\": {\"ours\": " << means[i].ours
              << ", \"cudnn\": " << means[i].cudnn << "}";
        f << "}\n}\n";
        if (!f) die("could not write " + o.json);
    }

    std::printf("\n%-30s %10s %10s %7s %6s %6s %9s %9s\n", "case", "ours_us", "cudnn_us", "speedup", "%mem", "%fp32",
                "err_f64", "vs_cudnn");
    for (const auto& r : results) {
        const double mem = 100.0 * (r.bytes / (g.copy_tbps * 1e12)) / (r.ours_us * 1e-6);
        const double cmp = 100.0 * (r.flop / (g.peak_tflops * 1e12)) / (r.ours_us * 1e-6);
        std::printf("%-30s %10.1f %10.1f %7.2f %6.1f %6.1f %9.2e %9.2e%s\n", r.name.c_str(), r.ours_us, r.cudnn_us,
                    r.cudnn_us > 0 ? r.cudnn_us / r.ours_us : 0.0, mem, cmp, r.err_vs_f64, r.diff_vs_cudnn,
                    (r.atol > 0 && !(r.err_vs_f64 <= r.atol)) ? "  OVER ATOL" : "");
    }
    for (const auto& m : means)
        std::printf("mean %-25s %10.1f %10.1f %7.2f\n", m.suite.c_str(), m.ours, m.cudnn,
                    m.cudnn > 0 ? m.cudnn / m.ours : 0.0);
    print_graph_ops_summary(results, g.copy_tbps);
    return 0;
}
