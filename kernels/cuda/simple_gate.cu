// simple_gate on CUDA (semantics in kernels/ops/simple_gate.h): one thread
// per 16-byte vector of the output (V = 4 floats or 8 halves; 1 where a
// pointer is not 16-byte aligned or, in NCHW, an image's half is not a
// whole number of vectors), consecutive threads on consecutive vectors.
//   NCHW: per image, the output's C/2 planes and each half of the input's
//     are contiguous runs of (C/2) H W values, so output element j of image
//     n is x1[j] * x2[j] with x1 = in + 2 n (C/2) H W, x2 = x1 + (C/2) H W:
//     three coalesced vector streams.
//   NHWC8: the output vector at (pixel, channels c0..c0+V-1) reads the
//     input's channels c0.. (an aligned vector: c0 is a multiple of V) and
//     c0 + C/2.. (a vector where C/2 is a multiple of V, else per lane: the
//     warp still reads one contiguous span per pixel); lanes at c >= C/2 are
//     the output's padding and are written as zeros.
// Any dtype, NCHW or NHWC8; the product in float, rounded once.
//
// Floor: the input read once, the output written once, 3 x the output's
// bytes (NCHW): a NAFNet block's gate on 12 MP at 64 -> 32 channels, f16,
// moves 2.3 GB, ~0.55 ms at 4.2 TB/s. Launch: 256 threads a block, as the
// flat pass (vector_access.cuh), grid stored output elements / (256 V).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda_backend.cuh"
#include "vector_access.cuh"

namespace imr::cuda {
namespace {

constexpr int kGateThreads = 256;

struct GateParams {
    const void* in;
    void* out;
    long long vectors;  // output vectors of V elements (stored count / V: no tail)
    int nhwc;           // 1: NHWC8, 0: NCHW
    // NCHW: the run of one half of one image, (C/2) H W elements.
    int half_run;
    FastDiv div_half_run;
    // NHWC8: C/2, and channels stored per pixel in the output and the input.
    int half_c, out_stored, in_stored;
    FastDiv div_out_stored;
};

template <class T, int V>
__global__ void __launch_bounds__(kGateThreads) simple_gate_kernel(const GateParams p) {
    const long long t = (long long)blockIdx.x * kGateThreads + threadIdx.x;
    if (t >= p.vectors) return;
    const int e = int(t * V);  // the first lane's output element (< 2^31, checked at launch)
    const T* in = static_cast<const T*>(p.in);
    T* out = static_cast<T*>(p.out);
    Vec<T, V> o;
    if (!p.nhwc) {
        const int n = p.div_half_run.div(e), j = e - n * p.half_run;
        const T* x1 = in + (2LL * n * p.half_run + j);
        const Vec<T, V> a = load_vec<V>(x1), b = load_vec<V>(x1 + p.half_run);
#pragma unroll
        for (int l = 0; l < V; ++l) o.v[l] = narrow<T>(widen(a.v[l]) * widen(b.v[l]));
    } else {
        const int pixel = p.div_out_stored.div(e), c0 = e - pixel * p.out_stored;
        if (c0 >= p.half_c) {  // every lane is padding (c >= C/2): nothing to read
#pragma unroll
            for (int l = 0; l < V; ++l) o.v[l] = narrow<T>(0.f);
        } else {
            const T* x1 = in + ((long long)pixel * p.in_stored + c0);
            // Channels c0..c0+V-1 are within the input's pixel: c0 + V <= out_stored <= in_stored.
            const Vec<T, V> a = load_vec<V>(x1);
            Vec<T, V> b;
            if (p.half_c % V == 0) {
                // c0 < C/2, both multiples of V: c0 + V <= C/2, so this reads channels
                // below C, aligned (x1 + C/2 is a multiple of V elements from x1).
                b = load_vec<V>(x1 + p.half_c);
            } else {
#pragma unroll
                for (int l = 0; l < V; ++l) b.v[l] = c0 + l < p.half_c ? x1[p.half_c + l] : narrow<T>(0.f);
            }
#pragma unroll
            for (int l = 0; l < V; ++l)
                o.v[l] = c0 + l < p.half_c ? narrow<T>(widen(a.v[l]) * widen(b.v[l])) : narrow<T>(0.f);
        }
    }
    store_vec<V>(out + e, o);
}

template <class T>
void launch(const SimpleGateArgs& a, cudaStream_t stream, const std::string& context) {
    const Shape& s = a.input.shape;
    GateParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.nhwc = a.input.layout == Layout::NHWC8;
    p.half_c = s.c / 2;
    p.half_run = int(size_t(p.half_c) * s.h * s.w);  // < the input's count < 2^31
    p.div_half_run = FastDiv(p.half_run);
    p.out_stored = stored_channels(a.output.layout, p.half_c);
    p.in_stored = stored_channels(a.input.layout, s.c);
    p.div_out_stored = FastDiv(p.out_stored);
    constexpr int V = kVec16<T>;
    // NHWC8's pixels are whole vectors; NCHW needs each half-image run to be.
    const bool vector = aligned16(a.input.data) && aligned16(a.output.data) && (p.nhwc || p.half_run % V == 0);
    const long long count = (long long)a.output.stored_count();
    p.vectors = vector ? count / V : count;
    const unsigned blocks = unsigned((p.vectors + kGateThreads - 1) / kGateThreads);
    if (vector)
        simple_gate_kernel<T, V><<<blocks, kGateThreads, 0, stream>>>(p);
    else
        simple_gate_kernel<T, 1><<<blocks, kGateThreads, 0, stream>>>(p);
    check_launch(context, "simple_gate_kernel launch");
}

}  // namespace

void CudaBackend::simple_gate(const SimpleGateArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::SimpleGate, {&a.input, &a.output});
    const std::string context = "simple_gate " + a.input.str() + " on " + name();
    check_element_count(a.input, context);
    check_element_count(a.output, context);
    switch (a.input.dtype) {
        case DType::F32:
            return launch<float>(a, stream_, context);
        case DType::F16:
            return launch<__half>(a, stream_, context);
        case DType::BF16:
            return launch<__nv_bfloat16>(a, stream_, context);
    }
}

}  // namespace imr::cuda
