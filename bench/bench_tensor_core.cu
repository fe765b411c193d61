// Test and benchmark of the tensor-core convolution (kernels/cuda/conv2d_tensor_core.cu),
// standalone (not in CMake's targets). Build from the repository root:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DIMR_BUILD_SM90A=1 -Ikernels/cuda
//        bench/bench_tensor_core.cu kernels/cuda/conv2d_tensor_core.cu -lcudnn -o bench_tensor_core
//   (sm_90a: the wgmma rows; IMRESTORE_WGMMA=1 or 0 in the environment makes
//   the shapes that name no row run on the wgmma or the mma.sync rows: an A/B
//   of two runs)
//   (one line; cuDNN headers in /usr/include/x86_64-linux-gnu/ on the GPU host)
// Run:
//   bench_tensor_core [--test] [--quick] [--bench] [--json FILE] [--runs N] [--commit SHA]
//                     [--only NAME_PART] [--no-net] [--no-cudnn]   (--only: bench shapes whose name has it)
//   (no mode flag: --test then --bench; --quick: a few small test cases, for
//   compute-sanitizer --tool memcheck).
//
// Test: each case, on every configuration row of its kernel size (forced by
// name; --quick: only the row tc_conv2d picks), against a float64 CPU
// reference computed from the SAME
// rounded inputs and weights (the fp32 inputs rounded to the storage type T
// on the host with round-to-nearest-even, as the kernel rounds them), fresh
// random values per case, the output poisoned with NaN (0xFF bytes) before
// the call, every output element checked (the NHWC stride's padded channels
// must be exactly 0). Tolerance per element, for a reduction of
// n = Cin*K*K products (exact in fp32: 11- or 8-bit significands), summed in
// fp32 by the tensor cores (which may truncate rather than round: unit 2^-23),
// then bias, ReLU, residual in fp32 and one rounding to the output type:
//   tol = u_out * |ref| + (n + 2) * 2^-23 * (sum |w*x| + |bias| + |residual|) + tiny
//   u_out = 2^-11 (fp16), 2^-8 (bf16), 2^-24 (fp32 output); tiny = 2^-24 for
//   fp16 (its subnormal spacing), 1e-30 otherwise.
// A case passes when max |out - ref| / tol <= 1. A negative control (the
// reference with one weight's sign flipped) must fail, so the check can fail.
//
// Benchmark (the anchors' protocol): CUDA events around each call, a buffer
// of 2x the L2 size written (cudaMemsetAsync) on the stream before every
// call (cold L2), warm-up, median of --runs; cuDNN fp16 NHWC in the same
// process on the same data (cudnnFindConvolutionForwardAlgorithmEx, tensor-op
// math), the convolution alone. Reports ms, TFLOP/s (2*N*Ho*Wo*Cout*Cin*K*K
// useful FLOP), % of 790 TFLOP/s.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv2d_tensor_core.cuh"

using namespace imr::cuda::tc;

namespace {

constexpr double kPeakTflops = 790.0;  // measured dense fp16/bf16 on the H200 (KINDS.md, anchors)
constexpr double kCopyTBs = 4.23;      // device-to-device copy (read + write), measured by bench_gpu on the H200

void ck(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "CUDA error: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}
void ckd(cudnnStatus_t s, const char* what) {
    if (s != CUDNN_STATUS_SUCCESS) {
        std::fprintf(stderr, "cuDNN error: %s: %s\n", what, cudnnGetErrorString(s));
        std::exit(2);
    }
}

template <class P>
struct DevBuf {
    P* p = nullptr;
    size_t n = 0;
    explicit DevBuf(size_t count) : n(count) {
        ck(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(P)), "cudaMalloc");
    }
    ~DevBuf() { cudaFree(p); }
    DevBuf(const DevBuf&) = delete;
    DevBuf& operator=(const DevBuf&) = delete;
};

// Host rounding to the storage type (round to nearest even, as the kernel).
float round_to(TcDType t, float v) {
    return t == TcDType::F16 ? __half2float(__float2half_rn(v)) : __bfloat162float(__float2bfloat16_rn(v));
}
uint16_t bits_of(TcDType t, float v) {
    if (t == TcDType::F16) return __half_raw(__float2half_rn(v)).x;
    return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
}
float from_bits(TcDType t, uint16_t b) {
    if (t == TcDType::F16) {
        __half_raw r;
        r.x = b;
        return __half2float(__half(r));
    }
    __nv_bfloat16_raw r;
    r.x = b;
    return __bfloat162float(__nv_bfloat16(r));
}
const char* dtype_name(TcDType t) {
    return t == TcDType::F16 ? "fp16" : "bf16";
}
const char* pad_name(TcPad p) {
    return p == TcPad::Zero ? "zero" : p == TcPad::Reflect ? "reflect" : "replicate";
}

// ------------------------------------------------------------------ test
struct Case {
    int n, cin, h, w, cout, k, pb, pa;
    TcPad pad;
    bool bias, relu, residual, in_nchw, out_nchw;
    bool res_mul = false;  // the residual multiplies (channel attention) instead of adding
    bool gate = false;     // the simple gate in the epilogue: cout / 2 outputs (TcConvParams::gate)
};

std::string describe(const Case& c, TcDType t) {
    char s[256];
    std::snprintf(s, sizeof s, "%s %dx%dx%dx%d -> %d k%d pad %d/%d %s%s%s%s in %s out %s", dtype_name(t), c.n, c.cin,
                  c.h, c.w, c.cout, c.k, c.pb, c.pa, pad_name(c.pad), c.bias ? " bias" : "", c.relu ? " relu" : "",
                  c.residual ? (c.res_mul ? " x residual" : " residual")
                  : c.gate   ? " gate"
                             : "",
                  c.in_nchw ? "nchw-f32" : "nhwc", c.out_nchw ? "nchw-f32" : "nhwc");
    return s;
}

int map_host(int i, int n, TcPad pad) {  // -1: zero
    if (pad == TcPad::Zero) return (i < 0 || i >= n) ? -1 : i;
    if (pad == TcPad::Replicate) return std::min(std::max(i, 0), n - 1);
    i = i < 0 ? -i : i;
    return i >= n ? 2 * n - 2 - i : i;
}

struct CaseResult {
    std::string config;
    double worst = 0;  // max |out - ref| / tol
    double max_abs_err = 0;
    bool nan = false, padding_nonzero = false;
    bool ok() const { return !nan && !padding_nonzero && worst <= 1.0; }
};

// Runs one case on every configuration of its kernel size (or only the one
// tc_conv2d picks, when `picked_only`), each against the same float64
// reference. `flip_weight`: the reference uses one weight of flipped sign
// (the negative control).
std::vector<CaseResult> run_case(const Case& c, TcDType t, std::mt19937& rng, bool flip_weight, bool picked_only) {
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    const int ho = c.h + c.pb + c.pa - c.k + 1, wo = c.w + c.pb + c.pa - c.k + 1;
    const int cs_in = tc_channel_stride(c.cin), cs_out = tc_channel_stride(c.cout), kk = c.k * c.k;
    const int oc = c.gate ? c.cout / 2 : c.cout, cs_oc = tc_channel_stride(oc);  // the output's channels
    const float wscale = 1.f / std::sqrt(float(c.cin * kk));
    // Logical NCHW values; xr/wr/rr: as the kernel sees them (rounded).
    std::vector<float> x(size_t(c.n) * c.cin * c.h * c.w), w(size_t(c.cout) * c.cin * kk), b(c.cout),
        r(size_t(c.n) * c.cout * ho * wo);
    for (auto& v : x) v = U(rng);
    for (auto& v : w) v = U(rng) * wscale;
    for (auto& v : b) v = 0.5f * U(rng);
    for (auto& v : r) v = U(rng);
    std::vector<float> xr(x.size()), wr(w.size()), rr(r.size());
    for (size_t i = 0; i < x.size(); ++i) xr[i] = round_to(t, x[i]);
    for (size_t i = 0; i < w.size(); ++i) wr[i] = round_to(t, w[i]);
    for (size_t i = 0; i < r.size(); ++i) rr[i] = c.out_nchw ? r[i] : round_to(t, r[i]);

    // Device buffers.
    DevBuf<uint8_t> din(c.in_nchw ? x.size() * 4 : size_t(c.n) * c.h * c.w * cs_in * 2);
    if (c.in_nchw) {
        ck(cudaMemcpy(din.p, x.data(), x.size() * 4, cudaMemcpyHostToDevice), "upload x");
    } else {
        std::vector<uint16_t> h(size_t(c.n) * c.h * c.w * cs_in, 0);
        for (int n = 0; n < c.n; ++n)
            for (int ci = 0; ci < c.cin; ++ci)
                for (int y = 0; y < c.h; ++y)
                    for (int xx = 0; xx < c.w; ++xx)
                        h[((size_t(n) * c.h + y) * c.w + xx) * cs_in + ci] =
                            bits_of(t, x[((size_t(n) * c.cin + ci) * c.h + y) * c.w + xx]);
        ck(cudaMemcpy(din.p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "upload x");
    }
    DevBuf<float> dw(w.size()), db(b.size());
    ck(cudaMemcpy(dw.p, w.data(), w.size() * 4, cudaMemcpyHostToDevice), "upload w");
    ck(cudaMemcpy(db.p, b.data(), b.size() * 4, cudaMemcpyHostToDevice), "upload b");
    DevBuf<uint8_t> dpacked(tc_conv_weights_bytes(c.cout, c.cin, c.k));
    tc_conv_prepare_weights(dw.p, c.cout, c.cin, c.k, t, dpacked.p, nullptr, c.gate);
    const size_t out_bytes = c.out_nchw ? r.size() * 4 : size_t(c.n) * ho * wo * cs_out * 2;
    DevBuf<uint8_t> dres(out_bytes), dout(out_bytes);
    if (c.out_nchw) {
        ck(cudaMemcpy(dres.p, r.data(), r.size() * 4, cudaMemcpyHostToDevice), "upload residual");
    } else {
        std::vector<uint16_t> h(size_t(c.n) * ho * wo * cs_out, 0);
        for (int n = 0; n < c.n; ++n)
            for (int co = 0; co < c.cout; ++co)
                for (int y = 0; y < ho; ++y)
                    for (int xx = 0; xx < wo; ++xx)
                        h[((size_t(n) * ho + y) * wo + xx) * cs_out + co] =
                            bits_of(t, r[((size_t(n) * c.cout + co) * ho + y) * wo + xx]);
        ck(cudaMemcpy(dres.p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "upload residual");
    }

    // The float64 reference and each element's tolerance, NCHW order.
    if (flip_weight) {
        size_t big = 0;
        for (size_t i = 0; i < wr.size(); ++i)
            if (std::fabs(wr[i]) > std::fabs(wr[big])) big = i;
        wr[big] = -wr[big];
    }
    const double u_out = c.out_nchw          ? std::ldexp(1.0, -24)
                         : t == TcDType::F16 ? std::ldexp(1.0, -11)
                                             : std::ldexp(1.0, -8);
    const double tiny = (!c.out_nchw && t == TcDType::F16) ? std::ldexp(1.0, -24) : 1e-30;
    const double g = (double(c.cin) * kk + 2) * std::ldexp(1.0, -23);
    std::vector<double> ref(r.size()), tol(r.size()), mags(r.size());
    for (int n = 0; n < c.n; ++n)
        for (int co = 0; co < c.cout; ++co)
            for (int y = 0; y < ho; ++y)
                for (int xx = 0; xx < wo; ++xx) {
                    double acc = 0, mag = 0;
                    for (int ci = 0; ci < c.cin; ++ci)
                        for (int ky = 0; ky < c.k; ++ky) {
                            const int iy = map_host(y + ky - c.pb, c.h, c.pad);
                            if (iy < 0) continue;
                            for (int kx = 0; kx < c.k; ++kx) {
                                const int ix = map_host(xx + kx - c.pb, c.w, c.pad);
                                if (ix < 0) continue;
                                const double pr = double(wr[((size_t(co) * c.cin + ci) * c.k + ky) * c.k + kx]) *
                                                  xr[((size_t(n) * c.cin + ci) * c.h + iy) * c.w + ix];
                                acc += pr, mag += std::fabs(pr);
                            }
                        }
                    if (c.bias) acc += b[co], mag += std::fabs(b[co]);
                    if (c.relu) acc = std::max(acc, 0.0);
                    const size_t i = ((size_t(n) * c.cout + co) * ho + y) * wo + xx;
                    if (c.residual && c.res_mul)  // the sum's error scales with |r|; one more fp32 rounding
                        acc *= rr[i], mag = mag * std::fabs(rr[i]) + std::fabs(acc);
                    else if (c.residual)
                        acc += rr[i], mag += std::fabs(rr[i]);
                    ref[i] = acc, mags[i] = mag;
                    tol[i] = u_out * std::fabs(acc) + g * mag + tiny;
                }
    if (c.gate) {  // channel co times co + cout/2: each sum's error times the other's magnitude, one fp32 rounding
        const size_t plane = size_t(ho) * wo;
        std::vector<double> gref(size_t(c.n) * oc * plane), gtol(gref.size());
        for (int n = 0; n < c.n; ++n)
            for (int co = 0; co < oc; ++co)
                for (size_t q = 0; q < plane; ++q) {
                    const size_t a = (size_t(n) * c.cout + co) * plane + q, b2 = a + size_t(oc) * plane;
                    const size_t o = (size_t(n) * oc + co) * plane + q;
                    gref[o] = ref[a] * ref[b2];
                    gtol[o] = (u_out + std::ldexp(1.0, -24)) * std::fabs(gref[o]) +
                              g * (mags[a] * std::fabs(ref[b2]) + mags[b2] * std::fabs(ref[a])) + tiny;
                }
        ref = std::move(gref), tol = std::move(gtol);
    }

    TcConvParams p;
    p.n = c.n, p.h = c.h, p.w = c.w, p.in_channels = c.cin, p.out_channels = c.cout, p.kernel = c.k;
    p.pad_before = c.pb, p.pad_after = c.pa, p.pad = c.pad, p.dtype = t;
    p.input_layout = c.in_nchw ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
    p.output_layout = c.out_nchw ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
    p.input = din.p, p.output = dout.p, p.weights = dpacked.p;
    p.bias = c.bias ? db.p : nullptr, p.relu = c.relu, p.residual = c.residual ? dres.p : nullptr;
    p.residual_multiplies = c.res_mul, p.gate = c.gate;

    std::vector<CaseResult> results;
    std::vector<uint8_t> out(out_bytes);
    for (int cfg = -1; cfg < tc_conv2d_config_count(); ++cfg) {
        if (cfg >= 0 && (picked_only || tc_conv2d_config_kernel_at(cfg) != c.k)) continue;
        p.force_config = cfg < 0 ? nullptr : tc_conv2d_config_name_at(cfg);
        if (cfg >= 0 && std::string(p.force_config) == tc_conv2d_config_name([&] {
                            TcConvParams q = p;
                            q.force_config = nullptr;
                            return q;
                        }()))
            continue;  // the picked row ran as cfg -1
        ck(cudaMemset(dout.p, 0xFF, out_bytes), "poison");
        try {
            tc_conv2d(p, nullptr);
        } catch (const std::invalid_argument& e) {  // a row this GPU cannot run (wgmma off sm_90)
            if (cfg < 0) throw;
            continue;
        }
        ck(cudaDeviceSynchronize(), "conv");
        ck(cudaMemcpy(out.data(), dout.p, out_bytes, cudaMemcpyDeviceToHost), "download");
        CaseResult res;
        res.config = tc_conv2d_config_name(p);
        if (cfg < 0) res.config += " (picked)";
        for (int n = 0; n < c.n; ++n)
            for (int y = 0; y < ho; ++y)
                for (int xx = 0; xx < wo; ++xx)
                    for (int co = 0; co < cs_oc; ++co) {
                        const size_t nhwc = ((size_t(n) * ho + y) * wo + xx) * cs_oc + co;
                        if (co >= oc) {  // the stride's padding: NHWC only
                            if (c.out_nchw) break;
                            uint16_t bits;
                            std::memcpy(&bits, out.data() + nhwc * 2, 2);
                            if (bits != 0) res.padding_nonzero = true;
                            continue;
                        }
                        const size_t i = ((size_t(n) * oc + co) * ho + y) * wo + xx;
                        double got;
                        if (c.out_nchw) {
                            float f;
                            std::memcpy(&f, out.data() + i * 4, 4);
                            got = f;
                        } else {
                            uint16_t bits;
                            std::memcpy(&bits, out.data() + nhwc * 2, 2);
                            got = from_bits(t, bits);
                        }
                        if (!std::isfinite(got)) {
                            res.nan = true;
                            continue;
                        }
                        const double err = std::fabs(got - ref[i]);
                        res.worst = std::max(res.worst, err / tol[i]);
                        res.max_abs_err = std::max(res.max_abs_err, err);
                    }
        results.push_back(res);
    }
    return results;
}

std::vector<Case> test_cases(bool quick) {
    const TcPad Z = TcPad::Zero, R = TcPad::Reflect, P = TcPad::Replicate;
    std::vector<Case> all = {
        // n cin  h   w  cout k pb pa pad  bias  relu  res   in_nchw out_nchw
        {1, 13, 37, 29, 5, 3, 1, 1, Z, true, true, false, false, false},    // k3 n8, odd everything
        {2, 48, 40, 70, 48, 3, 1, 1, R, true, true, true, false, false},    // resident 48 -> 48, batch 2
        {3, 5, 17, 33, 67, 3, 1, 1, P, false, false, false, false, false},  // n96 (67 channels), cin 5
        {1, 67, 23, 41, 13, 1, 0, 0, Z, true, false, true, false, false},   // 1x1 n64, cin 67
        {1, 3, 50, 61, 48, 3, 1, 1, Z, true, true, false, true, false},     // first layer: fp32 NCHW in
        {2, 48, 45, 38, 3, 3, 1, 1, Z, true, false, true, false, true},     // last layer: fp32 NCHW out + residual
        {1, 130, 19, 21, 140, 3, 1, 1, R, true, true, false, false,
         false},  // n96 x2 tiles (140), chunks of 32 (partial)
        {1, 256, 12, 14, 200, 3, 1, 1, P, true, false, true, false, false},   // 8 chunks, 2 channel tiles
        {2, 67, 21, 35, 48, 3, 2, 0, Z, false, true, false, false, false},    // asymmetric pad, chunked n48
        {1, 64, 33, 47, 64, 3, 1, 1, R, true, true, true, false, false},      // n64 chunked
        {1, 16, 20, 18, 30, 3, 0, 0, Z, true, false, false, false, false},    // no padding (valid), n32
        {2, 40, 9, 11, 20, 3, 1, 1, R, false, false, true, false, true},      // reflect, fp32 out
        {1, 8, 15, 19, 16, 3, 1, 1, P, true, true, false, true, true},        // fp32 in and out, n16
        {1, 150, 13, 25, 130, 1, 0, 0, Z, true, true, true, false, false},    // 1x1 n96 x2 (130), chunked
        {2, 33, 7, 5, 9, 1, 1, 1, R, true, false, false, false, false},       // 1x1 with reflect padding
        {1, 1, 29, 35, 16, 3, 1, 1, R, true, true, false, true, false},       // folded first layer, cin 1, reflect
        {2, 2, 33, 18, 24, 3, 2, 0, P, true, false, true, true, false},       // folded, cin 2, asymmetric, residual
        {1, 48, 31, 45, 1, 3, 1, 1, R, true, false, true, false, false},      // taps row, cout 1, NHWC out + residual
        {1, 20, 26, 30, 2, 3, 0, 2, P, false, true, false, false, true},      // taps row, cout 2, fp32 out, asymmetric
        {2, 96, 35, 50, 96, 3, 1, 1, Z, false, false, true, false, false},    // n96: a U-Net level, residual, batch 2
        {1, 96, 33, 40, 192, 3, 1, 1, R, true, true, true, false, false},     // n96 x2 tiles (192), residual
        {1, 192, 18, 34, 96, 1, 0, 0, Z, false, false, false, false, false},  // 1x1 n96: a way down's 192 -> 96
        {2, 96, 17, 35, 192, 1, 0, 0, Z, true, false, true, false, false},    // 1x1 n96 x2 (96 -> 192), residual
        // The residual multiplying (channel attention): 1x1 at NAFNet's
        // widths (n32, n64 rows), 3x3, the taps row, fp32 out.
        {1, 32, 37, 45, 32, 1, 0, 0, Z, true, false, true, false, false, true},
        {2, 64, 19, 23, 64, 1, 0, 0, Z, true, true, true, false, false, true},
        {1, 24, 21, 26, 40, 3, 1, 1, R, true, false, true, false, false, true},
        {1, 16, 17, 19, 2, 3, 1, 1, Z, true, false, true, false, false, true},
        {1, 12, 13, 15, 20, 3, 1, 1, P, false, true, true, false, true, true},
        // The simple gate in the epilogue (1x1, cout a multiple of 16):
        // NAFNet's 32 -> 64 -> 32, wider (several channel blocks), 16 -> 8.
        {1, 32, 37, 45, 64, 1, 0, 0, Z, true, false, false, false, false, false, true},
        {2, 64, 19, 23, 128, 1, 0, 0, Z, true, false, false, false, false, false, true},
        {1, 40, 11, 13, 256, 1, 0, 0, Z, false, false, false, false, false, false, true},
        {1, 8, 9, 35, 16, 1, 0, 0, Z, true, false, false, false, false, false, true},
    };
    if (!quick) return all;
    return {all[0], all[1], all[4], all[5], all[6], all[13], all[16], all[17]};
}

int run_tests(bool quick, std::string& json) {
    std::mt19937 rng(std::random_device{}());
    int failures = 0, runs = 0;
    double worst = 0;
    json += "  \"tests\": [\n";
    bool first = true;
    for (TcDType t : {TcDType::F16, TcDType::BF16}) {
        for (const Case& c : test_cases(quick)) {
            for (const CaseResult& r : run_case(c, t, rng, false, quick)) {
                failures += !r.ok(), ++runs;
                worst = std::max(worst, r.worst);
                std::printf("%s %-84s %-28s err/tol %.3f max|err| %.3g%s%s\n", r.ok() ? "PASS" : "FAIL",
                            describe(c, t).c_str(), r.config.c_str(), r.worst, r.max_abs_err,
                            r.nan ? " NaN/unwritten" : "", r.padding_nonzero ? " padding!=0" : "");
                char s[512];
                std::snprintf(s, sizeof s,
                              "%s    {\"case\": \"%s\", \"config\": \"%s\", \"pass\": %s, \"err_over_tol\": %.4f, "
                              "\"max_abs_err\": %.4g}",
                              first ? "" : ",\n", describe(c, t).c_str(), r.config.c_str(), r.ok() ? "true" : "false",
                              r.worst, r.max_abs_err);
                json += s;
                first = false;
            }
        }
    }
    json += "\n  ],\n";
    // Negative control: the check must fail when the result is wrong.
    const CaseResult neg = run_case(test_cases(true)[1], TcDType::F16, rng, true, true)[0];
    const bool caught = neg.worst > 1.0;
    std::printf("%s negative control (one weight's sign flipped in the reference): err/tol %.1f\n",
                caught ? "PASS" : "FAIL", neg.worst);
    failures += !caught;
    std::printf("%d runs, worst err/tol %.3f\n", runs, worst);
    json +=
        "  \"test_runs\": " + std::to_string(runs) + ",\n  \"worst_err_over_tol\": " + std::to_string(worst) + ",\n";
    return failures;
}

// ------------------------------------------------------------------ bench
__global__ void fill_random_kernel(uint16_t* p, size_t n, uint32_t seed, int is_bf16, int channels, int stride) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
        float v = (h >> 8) * (2.f / 16777216.f) - 1.f;
        if (stride && int(i % stride) >= channels) v = 0.f;
        uint16_t b;
        if (is_bf16) {
            __nv_bfloat16 x = __float2bfloat16_rn(v);
            b = *reinterpret_cast<uint16_t*>(&x);
        } else {
            __half x = __float2half_rn(v);
            b = *reinterpret_cast<uint16_t*>(&x);
        }
        p[i] = b;
    }
}
__global__ void fill_random_f32_kernel(float* p, size_t n, uint32_t seed, float scale) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
        p[i] = ((h >> 8) * (2.f / 16777216.f) - 1.f) * scale;
    }
}

struct Timer {
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    void* flush;
    size_t flush_bytes;
    Timer() {
        ck(cudaStreamCreate(&stream), "stream");
        ck(cudaEventCreate(&e0), "event");
        ck(cudaEventCreate(&e1), "event");
        int dev = 0, l2 = 0;
        ck(cudaGetDevice(&dev), "dev");
        ck(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "L2 size");
        flush_bytes = size_t(2) * l2;
        ck(cudaMalloc(&flush, flush_bytes), "flush buffer");
    }
    // Median ms of op, cold L2 before each call.
    double median_ms(const std::function<void()>& op, int warmup, int runs) {
        for (int i = 0; i < warmup; ++i) op();
        std::vector<double> t;
        for (int i = 0; i < runs; ++i) {
            ck(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, stream), "flush L2");
            ck(cudaEventRecord(e0, stream), "event");
            op();
            ck(cudaEventRecord(e1, stream), "event");
            ck(cudaEventSynchronize(e1), "event sync");
            float ms = 0;
            ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
            t.push_back(ms);
        }
        ck(cudaGetLastError(), "after timing");
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }
};

struct BenchShape {
    const char* name;
    int n, cin, h, w, cout, k;
    bool in_nchw, out_nchw, relu, residual;
    TcDType dtype;
    bool cudnn;
    const char* force = nullptr;  // a configuration by name (null: as tc_conv2d picks)
    bool gate = false;            // the simple gate in the epilogue (cout / 2 channels written)
};

// cuDNN fp16 NHWC convolution (tensor-op math), its fastest algorithm.
struct CudnnConv {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x{}, y{};
    cudnnFilterDescriptor_t w{};
    cudnnConvolutionDescriptor_t conv{};
    cudnnConvolutionFwdAlgo_t algo{};
    void* ws = nullptr;
    size_t ws_bytes = 0;
    bool ok = false;
    CudnnConv(cudnnHandle_t handle, const BenchShape& s, const void* dx, const void* dw, void* dy) : h(handle) {
        const cudnnDataType_t dt = s.dtype == TcDType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
        ckd(cudnnCreateTensorDescriptor(&x), "desc");
        ckd(cudnnCreateTensorDescriptor(&y), "desc");
        ckd(cudnnCreateFilterDescriptor(&w), "desc");
        ckd(cudnnCreateConvolutionDescriptor(&conv), "desc");
        ckd(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, dt, s.n, s.cin, s.h, s.w), "x desc");
        ckd(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NHWC, s.cout, s.cin, s.k, s.k), "w desc");
        ckd(cudnnSetConvolution2dDescriptor(conv, s.k / 2, s.k / 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            "conv desc");
        ckd(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH), "math type");
        ckd(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, dt, s.n, s.cout, s.h, s.w), "y desc");
        size_t free_b = 0, total_b = 0;
        ck(cudaMemGetInfo(&free_b, &total_b), "meminfo");
        const size_t search_ws = std::min<size_t>(size_t(4) << 30, free_b / 4);
        void* sws = nullptr;
        ck(cudaMalloc(&sws, search_ws), "cudnn search workspace");
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int found = 0;
        const cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithmEx(
            h, x, dx, w, dw, conv, y, dy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, sws, search_ws);
        cudaFree(sws);
        if (st != CUDNN_STATUS_SUCCESS) {
            std::printf("  cuDNN find failed: %s\n", cudnnGetErrorString(st));
            return;
        }
        for (int i = 0; i < found; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS) {
                algo = perf[i].algo, ws_bytes = perf[i].memory, ok = true;
                break;
            }
        if (ok && ws_bytes) ck(cudaMalloc(&ws, ws_bytes), "cudnn workspace");
    }
    ~CudnnConv() {
        if (ws) cudaFree(ws);
        cudnnDestroyTensorDescriptor(x);
        cudnnDestroyTensorDescriptor(y);
        cudnnDestroyFilterDescriptor(w);
        cudnnDestroyConvolutionDescriptor(conv);
    }
    void run(const void* dx, const void* dw, void* dy) {
        const float one = 1.f, zero = 0.f;
        ckd(cudnnConvolutionForward(h, &one, x, dx, w, dw, conv, algo, ws, ws_bytes, &zero, y, dy), "cudnn forward");
    }
};

// fp32 [cout][cin][k][k] -> T [cout][k][k][cin] (cuDNN's NHWC filter layout).
__global__ void krsc_kernel(const float* w, int cout, int cin, int kk, int is_bf16, uint16_t* out) {
    const size_t total = size_t(cout) * cin * kk;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ci = int(i % cin), tap = int(i / cin % kk), co = int(i / (size_t(cin) * kk));
        const float v = w[(size_t(co) * cin + ci) * kk + tap];
        uint16_t b;
        if (is_bf16) {
            __nv_bfloat16 x = __float2bfloat16_rn(v);
            b = *reinterpret_cast<uint16_t*>(&x);
        } else {
            __half x = __float2half_rn(v);
            b = *reinterpret_cast<uint16_t*>(&x);
        }
        out[i] = b;
    }
}

double flop_of(const BenchShape& s) {
    return 2.0 * s.n * s.h * s.w * double(s.cout) * s.cin * s.k * s.k;
}

// The bytes a convolution must move: its input, output (and residual, of the
// output's layout) once each, and its packed weights.
double bytes_of(const BenchShape& s) {
    const double pix = double(s.n) * s.h * s.w;
    const double in = s.in_nchw ? pix * s.cin * 4 : pix * tc_channel_stride(s.cin) * 2;
    const double out = s.out_nchw ? pix * s.cout * 4 : pix * tc_channel_stride(s.gate ? s.cout / 2 : s.cout) * 2;
    return in + out * (s.residual ? 2 : 1) + double(tc_conv_weights_bytes(s.cout, s.cin, s.k));
}

// The shape's floor: its FLOPs at the tensor cores' peak or its bytes at the
// copy bandwidth, whichever takes longer (the 1x1 layers of a U-Net's upper
// levels are memory-bound: 32 -> 64 at 12 MP moves 2.3 GB for 0.05 TFLOP).
double floor_ms_of(const BenchShape& s) {
    return std::max(flop_of(s) / (kPeakTflops * 1e9), bytes_of(s) / (kCopyTBs * 1e9));
}

void run_bench(int runs, const std::string& only, bool net, bool use_cudnn, std::string& json) {
    Timer tm;
    cudnnHandle_t cudnn;
    ckd(cudnnCreate(&cudnn), "cudnnCreate");
    ckd(cudnnSetStream(cudnn, tm.stream), "cudnnSetStream");
    const TcDType F = TcDType::F16, B = TcDType::BF16;
    const std::vector<BenchShape> shapes = {
        {"denoise first 3->48 (fp32 NCHW in)", 1, 3, 3000, 4000, 48, 3, true, false, true, false, F, false},
        {"denoise 48->48", 1, 48, 3000, 4000, 48, 3, false, false, true, false, F, true},
        {"denoise 48->48 16x32 wide warps", 1, 48, 3000, 4000, 48, 3, false, false, true, false, F, false,
         "k3_16x32_n48_wide_warps"},
        {"denoise 48->48 bf16", 1, 48, 3000, 4000, 48, 3, false, false, true, false, B, true},
        {"denoise last 48->3 (fp32 NCHW out + residual)", 1, 48, 3000, 4000, 3, 3, false, true, false, true, F, false},
        {"denoise last 48->3 v5 row n8", 1, 48, 3000, 4000, 3, 3, false, true, false, true, F, false, "k3_16x16_n8"},
        {"64->64 12 MP", 1, 64, 3000, 4000, 64, 3, false, false, true, false, F, true},
        {"128->128 3 MP", 1, 128, 1500, 2000, 128, 3, false, false, true, false, F, true},
        {"256->256 0.75 MP", 1, 256, 750, 1000, 256, 3, false, false, true, false, F, true},
        {"512->512 0.19 MP", 1, 512, 375, 500, 512, 3, false, false, true, false, F, true},
        {"1x1 128->128 3 MP", 1, 128, 1500, 2000, 128, 1, false, false, true, false, F, true},
        {"1024->1024 0.05 MP", 1, 1024, 188, 250, 1024, 3, false, false, true, false, F, true},
        // the four-level denoise-unet's levels (DRUNet-like, 48-384 channels, bundled until 2026-12-04;
        // residual: the second conv of a block),
        // and the small U-Nets' first (32 channels)
        {"unet 32->32 12 MP", 1, 32, 3000, 4000, 32, 3, false, false, true, false, F, false},
        {"unet 32->32 + residual 12 MP", 1, 32, 3000, 4000, 32, 3, false, false, false, true, F, false},
        {"unet 48->48 12 MP", 1, 48, 3000, 4000, 48, 3, false, false, true, false, F, false},
        {"unet 48->48 + residual 12 MP", 1, 48, 3000, 4000, 48, 3, false, false, false, true, F, false},
        {"unet 96->96 3 MP", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false},
        {"unet 96->96 3 MP n128 row", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false, "k3_16x16_n128"},
        {"unet 96->96 3 MP n96 16 warps", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false,
         "k3_16x16_n96_w16"},
        {"unet 96->96 + residual 3 MP", 1, 96, 1500, 2000, 96, 3, false, false, false, true, F, false},
        {"unet 192->192 0.75 MP", 1, 192, 750, 1000, 192, 3, false, false, true, false, F, false},
        {"unet 192->192 0.75 MP n128 row", 1, 192, 750, 1000, 192, 3, false, false, true, false, F, false,
         "k3_16x16_n128"},
        {"unet 192->192 + residual 0.75 MP", 1, 192, 750, 1000, 192, 3, false, false, false, true, F, false},
        {"unet 384->384 + residual 0.19 MP", 1, 384, 375, 500, 384, 3, false, false, false, true, F, false},
        {"unet 1x1 192->96 3 MP (way down)", 1, 192, 1500, 2000, 96, 1, false, false, false, false, F, false},
        {"unet 1x1 192->96 3 MP n128 row", 1, 192, 1500, 2000, 96, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        {"unet 1x1 96->192 3 MP (way up)", 1, 96, 1500, 2000, 192, 1, false, false, false, false, F, false},
        // nafnet-large's 1x1 layers (weights/architectures.py; 12 MP padded to
        // 4000 x 3008): per block at width c, c -> 2c twice (before the gates),
        // c -> c on the window means and c -> c + the block's input twice.
        // Memory-bound at 32-128 channels (%floor is the column to read).
        {"nafnet 1x1 32->64 12 MP", 1, 32, 3008, 4000, 64, 1, false, false, false, false, F, true},
        {"nafnet 1x1 32->32 + residual 12 MP", 1, 32, 3008, 4000, 32, 1, false, false, false, true, F, false},
        {"nafnet 1x1 64->128 3 MP", 1, 64, 1504, 2000, 128, 1, false, false, false, false, F, true},
        {"nafnet 1x1 64->64 + residual 3 MP", 1, 64, 1504, 2000, 64, 1, false, false, false, true, F, false},
        {"nafnet 1x1 128->256 0.75 MP", 1, 128, 752, 1000, 256, 1, false, false, false, false, F, true},
        {"nafnet 1x1 256->512 0.19 MP", 1, 256, 376, 500, 512, 1, false, false, false, false, F, true},
        {"nafnet 1x1 512->1024 0.05 MP", 1, 512, 188, 250, 1024, 1, false, false, false, false, F, true},
        // drunet-large's ways down (space_to_depth then these 1x1) and up
        // (these 1x1 then depth_to_space), deep in Cin or Cout: the picked
        // 1x1 row against the first one (chunked weights, streamed per tile).
        {"drunet 1x1 256->128 3 MP (down)", 1, 256, 1500, 2000, 128, 1, false, false, false, false, F, false},
        {"drunet 1x1 256->128 3 MP (down) first row", 1, 256, 1500, 2000, 128, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        {"drunet 1x1 512->256 0.75 MP (down)", 1, 512, 750, 1000, 256, 1, false, false, false, false, F, false},
        {"drunet 1x1 512->256 0.75 MP (down) first row", 1, 512, 750, 1000, 256, 1, false, false, false, false, F,
         false, "k1_16x16_n128"},
        {"drunet 1x1 1024->512 0.19 MP (down)", 1, 1024, 375, 500, 512, 1, false, false, false, false, F, false},
        {"drunet 1x1 1024->512 0.19 MP (down) first row", 1, 1024, 375, 500, 512, 1, false, false, false, false, F,
         false, "k1_16x16_n128"},
        {"drunet 1x1 128->256 3 MP (up)", 1, 128, 1500, 2000, 256, 1, false, false, false, false, F, false},
        {"drunet 1x1 128->256 3 MP (up) first row", 1, 128, 1500, 2000, 256, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        {"drunet 1x1 256->512 0.75 MP (up)", 1, 256, 750, 1000, 512, 1, false, false, false, false, F, false},
        {"drunet 1x1 256->512 0.75 MP (up) first row", 1, 256, 750, 1000, 512, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        {"drunet 1x1 512->1024 0.19 MP (up)", 1, 512, 375, 500, 1024, 1, false, false, false, false, F, false},
        {"drunet 1x1 512->1024 0.19 MP (up) first row", 1, 512, 375, 500, 1024, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        // The second expansion of each block with its simple gate fused (c -> 2c -> c).
        {"nafnet 1x1 32->64 + gate 12 MP", 1, 32, 3008, 4000, 64, 1, false, false, false, false, F, false, nullptr,
         true},
        {"nafnet 1x1 64->128 + gate 3 MP", 1, 64, 1504, 2000, 128, 1, false, false, false, false, F, false, nullptr,
         true},
        // The first 1x1 rows (one block of 8 warps an SM) and a 16 x 16 twin
        // of the picked 64-channel row, on the same shapes: against the picks above.
        {"nafnet 1x1 32->64 12 MP first row", 1, 32, 3008, 4000, 64, 1, false, false, false, false, F, false,
         "k1_16x32_n64"},
        {"nafnet 1x1 32->64 12 MP n64_2blk", 1, 32, 3008, 4000, 64, 1, false, false, false, false, F, false,
         "k1_16x16_n64_2blk"},
        {"nafnet 1x1 32->32 + residual 12 MP first row", 1, 32, 3008, 4000, 32, 1, false, false, false, true, F, false,
         "k1_16x32_n64"},
        {"nafnet 1x1 64->128 3 MP first row", 1, 64, 1504, 2000, 128, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        {"nafnet 1x1 256->512 0.19 MP first row", 1, 256, 376, 500, 512, 1, false, false, false, false, F, false,
         "k1_16x16_n128"},
        // The wgmma rows one warpgroup wide (N = the block's 96 or 128
        // channels), never picked yet: against the picked rows above.
        {"unet 96->96 3 MP wgmma wide", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_wide"},
        {"unet 192->192 0.75 MP wgmma wide", 1, 192, 750, 1000, 192, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_wide"},
        {"128->128 3 MP wgmma wide", 1, 128, 1500, 2000, 128, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_wide"},
        {"256->256 0.75 MP wgmma wide", 1, 256, 750, 1000, 256, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_wide"},
        {"unet 384->384 + residual 0.19 MP wgmma wide", 1, 384, 375, 500, 384, 3, false, false, false, true, F, false,
         "k3_16x16_n128_wgmma_wide"},
        // The chunked weights walked in slice order (not yet picked).
        {"unet 96->96 3 MP wgmma slices", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_slices"},
        {"unet 192->192 0.75 MP wgmma slices", 1, 192, 750, 1000, 192, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_slices"},
        {"128->128 3 MP wgmma slices", 1, 128, 1500, 2000, 128, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_slices"},
        {"256->256 0.75 MP wgmma slices", 1, 256, 750, 1000, 256, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_slices"},
        {"unet 384->384 + residual 0.19 MP wgmma slices", 1, 384, 375, 500, 384, 3, false, false, false, true, F, false,
         "k3_16x16_n128_wgmma_slices"},
        // One commit group in flight while the next A fragments load (not yet
        // picked): against the picked rows above (--only pipe).
        {"denoise 48->48 pipe", 1, 48, 3000, 4000, 48, 3, false, false, true, false, F, false,
         "k3_16x16_n48_wgmma_pipe"},
        {"unet 48->48 + residual 12 MP pipe", 1, 48, 3000, 4000, 48, 3, false, false, false, true, F, false,
         "k3_16x16_n48_wgmma_pipe"},
        {"64->64 12 MP pipe", 1, 64, 3000, 4000, 64, 3, false, false, true, false, F, false, "k3_16x16_n64_wgmma_pipe"},
        {"unet 96->96 3 MP pipe", 1, 96, 1500, 2000, 96, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_pipe"},
        {"unet 192->192 0.75 MP pipe", 1, 192, 750, 1000, 192, 3, false, false, true, false, F, false,
         "k3_16x16_n96_wgmma_pipe"},
        {"128->128 3 MP pipe", 1, 128, 1500, 2000, 128, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_pipe"},
        {"256->256 0.75 MP pipe", 1, 256, 750, 1000, 256, 3, false, false, true, false, F, false,
         "k3_16x16_n128_wgmma_pipe"},
        {"unet 384->384 + residual 0.19 MP pipe", 1, 384, 375, 500, 384, 3, false, false, false, true, F, false,
         "k3_16x16_n128_wgmma_pipe"},
        {"1x1 128->128 3 MP pipe", 1, 128, 1500, 2000, 128, 1, false, false, true, false, F, false,
         "k1_16x16_n128_wgmma_pipe"},
        {"unet 1x1 192->96 3 MP (way down) pipe", 1, 192, 1500, 2000, 96, 1, false, false, false, false, F, false,
         "k1_16x16_n96_wgmma_pipe"},
        {"unet 1x1 96->192 3 MP (way up) pipe", 1, 96, 1500, 2000, 192, 1, false, false, false, false, F, false,
         "k1_16x16_n96_wgmma_pipe"},
    };
    std::printf("\n%-48s %-14s %9s %8s %6s %6s | %9s %8s %6s %6s  %s\n", "shape", "config", "ours ms", "TFLOP/s",
                "%peak", "%floor", "cuDNN ms", "TFLOP/s", "%peak", "%floor", "rel diff vs cuDNN");
    json += "  \"bench\": [\n";
    bool first = true;
    for (const BenchShape& s : shapes) {
        if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
        const int cs_in = tc_channel_stride(s.cin), cs_out = tc_channel_stride(s.cout);
        const size_t pix = size_t(s.n) * s.h * s.w;
        const bool bf = s.dtype == B;
        DevBuf<uint8_t> in(s.in_nchw ? pix * s.cin * 4 : pix * cs_in * 2);
        DevBuf<uint8_t> out(s.out_nchw ? pix * s.cout * 4 : pix * cs_out * 2);
        DevBuf<uint8_t> out2(s.out_nchw ? 1 : pix * cs_out * 2);
        DevBuf<float> res(s.residual ? pix * s.cout : 1);
        DevBuf<float> w32(size_t(s.cout) * s.cin * s.k * s.k), bias(s.cout);
        DevBuf<uint8_t> packed(tc_conv_weights_bytes(s.cout, s.cin, s.k));
        if (s.in_nchw)
            fill_random_f32_kernel<<<4096, 256, 0, tm.stream>>>(reinterpret_cast<float*>(in.p), pix * s.cin, 1, 1.f);
        else
            fill_random_kernel<<<4096, 256, 0, tm.stream>>>(reinterpret_cast<uint16_t*>(in.p), pix * cs_in, 1, bf,
                                                            s.cin, cs_in);
        fill_random_f32_kernel<<<256, 256, 0, tm.stream>>>(w32.p, w32.n, 2, 1.f / std::sqrt(float(s.cin * s.k * s.k)));
        fill_random_f32_kernel<<<1, 256, 0, tm.stream>>>(bias.p, bias.n, 3, 0.1f);
        if (s.residual) fill_random_f32_kernel<<<4096, 256, 0, tm.stream>>>(res.p, res.n, 4, 1.f);
        tc_conv_prepare_weights(w32.p, s.cout, s.cin, s.k, s.dtype, packed.p, tm.stream, s.gate);
        TcConvParams p;
        p.n = s.n, p.h = s.h, p.w = s.w, p.in_channels = s.cin, p.out_channels = s.cout, p.kernel = s.k;
        p.pad_before = p.pad_after = s.k / 2, p.dtype = s.dtype;
        p.input_layout = s.in_nchw ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
        p.output_layout = s.out_nchw ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
        p.input = in.p, p.output = out.p, p.weights = packed.p, p.bias = bias.p, p.relu = s.relu;
        p.residual = s.residual ? res.p : nullptr;
        p.force_config = s.force, p.gate = s.gate;
        const double ms = tm.median_ms([&] { tc_conv2d(p, tm.stream); }, 3, runs);
        const double tf = flop_of(s) / ms * 1e-9;
        double cms = 0, diff = -1;
        std::string algo;
        // cuDNN on the same data and weights (in its KRSC layout); the outputs
        // are compared too (NHWC with Cout % 8 == 0: the same layout as ours).
        if (use_cudnn && s.cudnn && s.cin % 8 == 0 && s.cout % 8 == 0) {
            DevBuf<uint16_t> krsc(w32.n);
            krsc_kernel<<<256, 256, 0, tm.stream>>>(w32.p, s.cout, s.cin, s.k * s.k, bf, krsc.p);
            CudnnConv c(cudnn, s, in.p, krsc.p, out2.p);
            if (c.ok) {
                cms = tm.median_ms([&] { c.run(in.p, krsc.p, out2.p); }, 3, runs);
                algo = std::to_string(int(c.algo));
                TcConvParams q = p;
                q.bias = nullptr, q.relu = false, q.residual = nullptr;
                tc_conv2d(q, tm.stream);
                ck(cudaStreamSynchronize(tm.stream), "compare run");
                const size_t cnt = std::min<size_t>(pix * cs_out, size_t(1) << 24);
                std::vector<uint16_t> a(cnt), b2(cnt);
                ck(cudaMemcpy(a.data(), out.p, cnt * 2, cudaMemcpyDeviceToHost), "download");
                ck(cudaMemcpy(b2.data(), out2.p, cnt * 2, cudaMemcpyDeviceToHost), "download");
                double num = 0, den = 0;
                for (size_t i = 0; i < cnt; ++i) {
                    const double u = from_bits(s.dtype, a[i]), v = from_bits(s.dtype, b2[i]);
                    num = std::max(num, std::fabs(u - v)), den = std::max(den, std::fabs(v));
                }
                diff = num / den;
            }
        }
        const double fl = floor_ms_of(s);
        std::printf("%-48s %-14s %9.3f %8.1f %5.1f%% %5.1f%% | %9.3f %8.1f %5.1f%% %5.1f%%  %.2g (algo %s)\n", s.name,
                    tc_conv2d_config_name(p), ms, tf, 100 * tf / kPeakTflops, 100 * fl / ms, cms,
                    cms ? flop_of(s) / cms * 1e-9 : 0.0, cms ? 100 * flop_of(s) / cms * 1e-9 / kPeakTflops : 0.0,
                    cms ? 100 * fl / cms : 0.0, diff, algo.c_str());
        std::fflush(stdout);
        char buf[768];
        std::snprintf(buf, sizeof buf,
                      "%s    {\"shape\": \"%s\", \"dtype\": \"%s\", \"n\": %d, \"cin\": %d, \"h\": %d, \"w\": %d, "
                      "\"cout\": %d, \"k\": %d, \"config\": \"%s\", \"ms\": %.4f, \"tflops\": %.2f, "
                      "\"pct_of_790\": %.2f, \"floor_ms\": %.4f, \"cudnn_ms\": %.4f, \"cudnn_algo\": \"%s\", "
                      "\"max_diff_vs_cudnn_rel\": %.3g}",
                      first ? "" : ",\n", s.name, dtype_name(s.dtype), s.n, s.cin, s.h, s.w, s.cout, s.k,
                      tc_conv2d_config_name(p), ms, tf, 100 * tf / kPeakTflops, fl, cms, algo.c_str(), diff);
        json += buf;
        first = false;
    }
    json += "\n  ],\n";

    // The whole default denoise network at 12 MP: 3->48 (fp32 NCHW in), eight
    // 48->48, 48->3 (fp32 NCHW out + the input as residual); 3x3 zero pad 1,
    // ReLU except the last.
    for (TcDType t : {F, B}) {
        if (!net) break;
        const int H = 3000, W = 4000;
        const size_t pix = size_t(H) * W;
        DevBuf<float> x(pix * 3), y(pix * 3);
        DevBuf<uint8_t> a(pix * 48 * 2), b2(pix * 48 * 2);
        fill_random_f32_kernel<<<4096, 256, 0, tm.stream>>>(x.p, x.n, 7, 1.f);
        std::vector<DevBuf<uint8_t>*> wts;
        std::vector<DevBuf<float>*> biases;
        DevBuf<float> w32(48 * 48 * 9);
        const int cin[10] = {3, 48, 48, 48, 48, 48, 48, 48, 48, 48};
        const int cout[10] = {48, 48, 48, 48, 48, 48, 48, 48, 48, 3};
        for (int l = 0; l < 10; ++l) {
            wts.push_back(new DevBuf<uint8_t>(tc_conv_weights_bytes(cout[l], cin[l], 3)));
            biases.push_back(new DevBuf<float>(cout[l]));
            fill_random_f32_kernel<<<64, 256, 0, tm.stream>>>(w32.p, size_t(cout[l]) * cin[l] * 9, 10 + l,
                                                              1.f / std::sqrt(float(cin[l] * 9)));
            fill_random_f32_kernel<<<1, 64, 0, tm.stream>>>(biases[l]->p, cout[l], 30 + l, 0.1f);
            tc_conv_prepare_weights(w32.p, cout[l], cin[l], 3, t, wts[l]->p, tm.stream);
        }
        auto net = [&] {
            for (int l = 0; l < 10; ++l) {
                TcConvParams p;
                p.n = 1, p.h = H, p.w = W, p.in_channels = cin[l], p.out_channels = cout[l], p.kernel = 3;
                p.pad_before = p.pad_after = 1, p.dtype = t;
                p.input_layout = l == 0 ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
                p.output_layout = l == 9 ? TcLayout::NchwF32 : TcLayout::NhwcHalf;
                p.input = l == 0 ? static_cast<const void*>(x.p) : (l % 2 ? a.p : b2.p);
                p.output = l == 9 ? static_cast<void*>(y.p) : (l % 2 ? b2.p : a.p);
                p.weights = wts[l]->p, p.bias = biases[l]->p, p.relu = l < 9;
                p.residual = l == 9 ? x.p : nullptr;
                tc_conv2d(p, tm.stream);
            }
        };
        const double ms = tm.median_ms(net, 2, std::max(5, runs / 2));
        const double fl = 2.0 * pix * 9 * (3 * 48 + 8 * 48 * 48 + 48 * 3);
        std::printf(
            "\ndenoise network 12 MP %s: %.3f ms (%.1f TFLOP/s useful, goal <= 12 ms; PyTorch best 27.0 ms: %.2fx)\n",
            dtype_name(t), ms, fl / ms * 1e-9, 27.0 / ms);
        char buf[256];
        std::snprintf(buf, sizeof buf, "  \"denoise_network_12mp_%s_ms\": %.4f,\n", dtype_name(t), ms);
        json += buf;
        for (auto* p : wts) delete p;
        for (auto* p : biases) delete p;
    }
    cudnnDestroy(cudnn);
}

}  // namespace

int main(int argc, char** argv) {
    bool test = false, bench = false, quick = false, net = true, use_cudnn = true;
    std::string only;
    int runs = 20;
    std::string json_path, commit = "unknown";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--test")
            test = true;
        else if (a == "--bench")
            bench = true;
        else if (a == "--quick")
            test = quick = true;
        else if (a == "--runs" && i + 1 < argc)
            runs = std::atoi(argv[++i]);
        else if (a == "--json" && i + 1 < argc)
            json_path = argv[++i];
        else if (a == "--commit" && i + 1 < argc)
            commit = argv[++i];
        else if (a == "--only" && i + 1 < argc)
            only = argv[++i];
        else if (a == "--no-net")
            net = false;
        else if (a == "--no-cudnn")
            use_cudnn = false;
        else {
            std::fprintf(
                stderr,
                "usage: %s [--test] [--quick] [--bench] [--runs N] [--json FILE] [--commit SHA] [--only NAME_PART] "
                "[--no-net] [--no-cudnn]\n",
                argv[0]);
            return 2;
        }
    }
    if (!test && !bench) test = bench = true;
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, 0), "device properties");
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    std::printf("device %s, %d SMs, L2 %d MB, driver %d, runtime %d, cuDNN %zu\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize >> 20, drv, rt, cudnnGetVersion());
    std::string json = "{\n  \"device\": \"" + std::string(prop.name) + "\",\n  \"commit\": \"" + commit +
                       "\",\n  \"driver\": " + std::to_string(drv) + ",\n  \"runtime\": " + std::to_string(rt) +
                       ",\n  \"cudnn\": " + std::to_string(cudnnGetVersion()) +
                       ",\n  \"runs\": " + std::to_string(runs) + ",\n";
    int failures = 0;
    if (test) failures = run_tests(quick, json);
    if (bench) run_bench(runs, only, net, use_cudnn, json);
    json += "  \"test_failures\": " + std::to_string(failures) + "\n}\n";
    if (!json_path.empty()) {
        FILE* f = std::fopen(json_path.c_str(), "w");
        if (!f) {
            std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
            return 2;
        }
        std::fputs(json.c_str(), f);
        std::fclose(f);
    }
    if (test) std::printf("%s: %d test failure(s)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
