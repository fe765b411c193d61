// image_planes on CUDA (semantics in kernels/ops/image_planes.h).
//   FromSamples: one thread per element of the planes (NCHW), consecutive
//     threads on consecutive addresses (coalesced 4-byte writes); the
//     sample reads are strided by the channel count, bytes of the same few
//     cache lines per warp (L1 absorbs them).
//   ToSamples: one thread per pixel, reading its planes (coalesced) and
//     writing its color samples (a warp's 32 pixels: 96-128 contiguous
//     bytes at 8 bits).
// Every arithmetic step is an explicitly rounded f32 intrinsic (__fmul_rn,
// __fadd_rn, __fsub_rn): nvcc contracts a * b + c into an FMA by default,
// which would round once where the CPU's conversion rounds twice and move
// samples that sit at a rounding boundary by one level. The constants
// (1 / max, 1 / 3) come from the host, as the CPU computes them.
//
// Floor: bytes / bandwidth. A 12 MP RGB 8-bit photo: 36 MB read + 144 MB
// written from samples, 144 MB read + 36 MB written (plus 144 MB of the
// model's input where the strength blends) to samples: ~0.04-0.08 ms each
// at 4.2 TB/s, against ~24 ms for its f32 planes to cross PCIe.
#include <climits>
#include <cstdint>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "ops/sample_rounding.h"

namespace imr::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32; enough blocks per SM resident

struct Params {
    void* samples;
    float* planes;
    const float* input;  // ToSamples with strength other than 1
    int h, w, channels, color, items;
    int ph, pw, pc;  // the planes' size and channels
    long long count;
    float max, scale, third, strength;
    FastDiv div_w, div_h, div_pw, div_ph, div_pc, div_items;
};

template <class T>
__global__ void __launch_bounds__(kThreads) from_samples_kernel(const Params p) {
    const long long i = (long long)blockIdx.x * kThreads + threadIdx.x;
    if (i >= p.count) return;
    const int e = int(i);  // counts are < 2^31 (checked at launch)
    const int row = p.div_pw.div(e), x = e - row * p.pw;
    const int plane = p.div_ph.div(row), y = row - plane * p.ph;
    const int item = p.div_pc.div(plane), c = plane - item * p.pc;
    const int image = p.div_items.div(item);
    const int ch = p.items == 3 ? item - image * 3 : p.color == 1 ? 0 : c;
    const int sy = min(y, p.h - 1), sx = min(x, p.w - 1);
    const T* s = static_cast<const T*>(p.samples);
    const T v = s[((long long)(image * p.h + sy) * p.w + sx) * p.channels + ch];
    p.planes[i] = __fmul_rn(float(v), p.scale);
}

using sample_rounding::clamp_unit;

template <class T>
__device__ __forceinline__ T quantize(float x, float max) {
    return T(sample_rounding::quantize(x, max));
}

// Element i of the planes moved toward the model's input by the strength.
__device__ __forceinline__ float blended(const Params& p, long long i) {
    const float v = p.planes[i];
    if (p.strength == 1.f) return v;
    const float in = p.input[i];
    if (p.strength == 0.f) return in;
    return __fadd_rn(in, __fmul_rn(p.strength, __fsub_rn(v, in)));
}

template <class T>
__global__ void __launch_bounds__(kThreads) to_samples_kernel(const Params p) {
    const long long i = (long long)blockIdx.x * kThreads + threadIdx.x;
    if (i >= p.count) return;
    const int e = int(i);
    const int row = p.div_w.div(e), x = e - row * p.w;
    const int image = p.div_h.div(row), y = row - image * p.h;
    const long long plane = (long long)p.ph * p.pw, at = (long long)y * p.pw + x;
    T* px = static_cast<T*>(p.samples) + i * p.channels;
    if (p.pc == 3 && p.color == 1) {  // gray through a 3-channel model: the mean of R, G, B
        const long long first = (long long)image * 3 * plane + at;
        const float sum = __fadd_rn(__fadd_rn(clamp_unit(blended(p, first)), clamp_unit(blended(p, first + plane))),
                                    clamp_unit(blended(p, first + 2 * plane)));
        px[0] = quantize<T>(__fmul_rn(sum, p.third), p.max);
        return;
    }
    for (int ch = 0; ch < p.color; ++ch) {
        const long long k =
            p.items == 3 ? ((long long)image * 3 + ch) * plane + at : ((long long)image * p.pc + ch) * plane + at;
        px[ch] = quantize<T>(blended(p, k), p.max);
    }
}

void launch(const ImagePlanesArgs& a, cudaStream_t stream) {
    const ImageSamples& s = a.samples;
    const Shape& ps = a.planes.shape;
    const std::string context = "image_planes " + s.str() + " <-> " + a.planes.str();
    if (a.planes.stored_count() >= size_t(INT_MAX) || s.count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    Params p{};
    p.samples = s.data, p.planes = a.planes.as<float>(), p.input = a.input.as<const float>();
    p.h = s.h, p.w = s.w, p.channels = s.channels, p.color = s.color_channels();
    p.items = image_planes_items(ps.c, p.color);
    p.ph = ps.h, p.pw = ps.w, p.pc = ps.c;
    p.max = float(s.max_value());
    p.scale = 1.0f / p.max;  // as app/image/interleave.cpp computes it
    p.third = 1.0f / 3.0f;
    p.strength = a.strength;
    p.div_w = FastDiv(s.w), p.div_h = FastDiv(s.h), p.div_pw = FastDiv(ps.w), p.div_ph = FastDiv(ps.h);
    p.div_pc = FastDiv(ps.c), p.div_items = FastDiv(p.items);
    const bool wide = s.bit_depth == 16;
    if (a.direction == PlanesDirection::FromSamples) {
        p.count = (long long)ps.count();
        const unsigned blocks = unsigned((p.count + kThreads - 1) / kThreads);
        if (wide)
            from_samples_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(p);
        else
            from_samples_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(p);
        check_launch(context, "from_samples_kernel launch");
    } else {
        p.count = (long long)s.n * s.h * s.w;
        const unsigned blocks = unsigned((p.count + kThreads - 1) / kThreads);
        if (wide)
            to_samples_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(p);
        else
            to_samples_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(p);
        check_launch(context, "to_samples_kernel launch");
    }
}

}  // namespace

void CudaBackend::image_planes(const ImagePlanesArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::ImagePlanes, {&a.planes, &a.input});
    launch(a, stream_);
}

}  // namespace imr::cuda
