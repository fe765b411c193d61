// pixel_shuffle on CUDA: one thread per element of the wide ([C, H, W])
// tensor, consecutive threads on consecutive wide columns, so the wide side
// is read or written fully coalesced and the deep side in f interleaved runs
// (each warp touches f segments of 32/f floats: whole 32-byte sectors for
// f <= 4, what the models use).
//
// Floor: a permutation moves every element once each way, 8 bytes per element
// (12 with the residual): the 3-channel 12 MP image of a model ending in
// ToSpace is ~0.4 GB, ~0.1 ms at 4.2 TB/s, next to ~100 ms of convolutions.
// f16 and bf16 tensors: the same kernel on 2-byte elements (half the bytes);
// the residual is added in float and the sum rounded once to the type.
//
// f16/bf16 NHWC8 (pixel_shuffle_nhwc8_kernel): one thread per stored element
// of the output, padding channels included (written as zeros), consecutive
// threads on consecutive output addresses, so the writes (and the residual's
// reads) are coalesced; the element read comes from one input pixel (ToSpace:
// channel c*f*f + dy*f + dx of deep pixel (y/f, x/f), so a warp reads f*f-
// strided channels of one or two pixels; ToDepth: channel c of wide pixel
// (y*f + dy, x*f + dx), so consecutive output channels read the same channel
// of f neighbouring pixels, <= f * 16-byte rows per 8 outputs): every input
// sector a warp touches is used within it or by its neighbours through L1/L2.
// The same floor as above, plus the padding channels' bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"
#include "pixel_shuffle.cuh"

namespace imr::cuda {
namespace {

constexpr int PS_THREADS = 256;  // any multiple of 32 works; 256 keeps enough blocks per SM resident

struct ShuffleParams {
    const void* in;
    const void* residual;
    void* out;
    int to_depth;
    int f, wide_h, wide_w, deep_h, deep_w;
    long long count;
    FastDiv div_w, div_h, div_f;
};

template <class T>
__global__ void __launch_bounds__(PS_THREADS) pixel_shuffle_kernel(const ShuffleParams p) {
    const long long i = (long long)blockIdx.x * PS_THREADS + threadIdx.x;
    if (i >= p.count) return;
    // Wide index i = ((nc * H) + Y) * W + X; counts are < 2^31 (checked at launch).
    const int wi = int(i);
    const int row = p.div_w.div(wi), X = wi - row * p.wide_w;
    const int nc = p.div_h.div(row), Y = row - nc * p.wide_h;
    const int y = p.div_f.div(Y), dy = Y - y * p.f;
    const int x = p.div_f.div(X), dx = X - x * p.f;
    const int di = ((nc * p.f * p.f + dy * p.f + dx) * p.deep_h + y) * p.deep_w + x;
    const int src = p.to_depth ? wi : di, dst = p.to_depth ? di : wi;
    const T* in = static_cast<const T*>(p.in);
    T* out = static_cast<T*>(p.out);
    if (p.residual) {
        const T* residual = static_cast<const T*>(p.residual);
        out[dst] = narrow<T>(widen(__ldg(in + src)) + widen(__ldg(residual + dst)));
    } else {
        out[dst] = __ldg(in + src);
    }
}

struct ShuffleNhwc8Params {
    const void* in;
    const void* residual;  // the output's shape and layout
    void* out;
    int to_depth;
    int f, ff;                        // factor, factor^2
    int out_c, out_h, out_w, out_c8;  // output: logical channels, size, stored channels
    int in_h, in_w, in_c8;            // input: size, stored channels
    long long count;                  // stored output elements
    FastDiv div_out_c8, div_out_w, div_out_h, div_f, div_ff;
};

template <class T>
__global__ void __launch_bounds__(PS_THREADS) pixel_shuffle_nhwc8_kernel(const ShuffleNhwc8Params p) {
    const long long i = (long long)blockIdx.x * PS_THREADS + threadIdx.x;
    if (i >= p.count) return;
    // Output index e = ((n * OH + y) * OW + x) * OC8 + c; counts are < 2^31 (checked at launch).
    const int e = int(i);
    const int pixel = p.div_out_c8.div(e), c = e - pixel * p.out_c8;
    T* out = static_cast<T*>(p.out);
    if (c >= p.out_c) {  // padding channel
        out[e] = narrow<T>(0.f);
        return;
    }
    const int row = p.div_out_w.div(pixel), x = pixel - row * p.out_w;
    const int n = p.div_out_h.div(row), y = row - n * p.out_h;
    int sc, sy, sx;
    if (p.to_depth) {  // output channel c = wide channel * f*f + dy * f + dx
        const int wide_c = p.div_ff.div(c), r = c - wide_c * p.ff;
        const int dy = p.div_f.div(r), dx = r - dy * p.f;
        sc = wide_c, sy = y * p.f + dy, sx = x * p.f + dx;
    } else {  // output pixel (y, x) of wide channel c
        sy = p.div_f.div(y), sx = p.div_f.div(x);
        const int dy = y - sy * p.f, dx = x - sx * p.f;
        sc = c * p.ff + dy * p.f + dx;
    }
    const int src = ((n * p.in_h + sy) * p.in_w + sx) * p.in_c8 + sc;
    const T* in = static_cast<const T*>(p.in);
    if (p.residual) {
        const T* residual = static_cast<const T*>(p.residual);
        out[e] = narrow<T>(widen(__ldg(in + src)) + widen(__ldg(residual + e)));
    } else {
        out[e] = __ldg(in + src);
    }
}

void pixel_shuffle_nhwc8(const PixelShuffleArgs& a, const std::string& context, cudaStream_t stream) {
    const Shape& in = a.input.shape;
    const Shape o = a.out_shape();
    if (a.output.stored_count() >= size_t(INT_MAX) || a.input.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    ShuffleNhwc8Params p{};
    p.in = a.input.data, p.residual = a.residual.data, p.out = a.output.data;
    p.to_depth = a.direction == ShuffleDirection::ToDepth;
    p.f = a.factor, p.ff = a.factor * a.factor;
    p.out_c = o.c, p.out_h = o.h, p.out_w = o.w, p.out_c8 = stored_channels(Layout::NHWC8, o.c);
    p.in_h = in.h, p.in_w = in.w, p.in_c8 = stored_channels(Layout::NHWC8, in.c);
    p.count = (long long)a.output.stored_count();
    p.div_out_c8 = FastDiv(p.out_c8), p.div_out_w = FastDiv(o.w), p.div_out_h = FastDiv(o.h);
    p.div_f = FastDiv(p.f), p.div_ff = FastDiv(p.ff);
    const unsigned blocks = unsigned((p.count + PS_THREADS - 1) / PS_THREADS);
    if (a.input.dtype == DType::F16)
        pixel_shuffle_nhwc8_kernel<__half><<<blocks, PS_THREADS, 0, stream>>>(p);
    else if (a.input.dtype == DType::BF16)
        pixel_shuffle_nhwc8_kernel<__nv_bfloat16><<<blocks, PS_THREADS, 0, stream>>>(p);
    else
        throw Error(context + ": no CUDA kernel takes " + a.input.str());  // supports() refuses it first
    check_launch(context, "pixel_shuffle_nhwc8_kernel launch");
}

}  // namespace

void pixel_shuffle(const PixelShuffleArgs& a, cudaStream_t stream) {
    check_args(a);
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : a.out_shape();
    const std::string context = std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") +
                                a.input.shape.str() + ", factor " + std::to_string(a.factor);
    if (a.input.layout == Layout::NHWC8) return pixel_shuffle_nhwc8(a, context, stream);
    if (a.input.layout != Layout::NCHW) throw Error(context + ": no CUDA kernel takes " + a.input.str());
    if (wide.count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    ShuffleParams p{};
    p.in = a.input.data, p.residual = a.residual.data, p.out = a.output.data;
    p.to_depth = to_depth;
    p.f = a.factor, p.wide_h = wide.h, p.wide_w = wide.w, p.deep_h = wide.h / a.factor, p.deep_w = wide.w / a.factor;
    p.count = (long long)wide.count();
    p.div_w = FastDiv(wide.w), p.div_h = FastDiv(wide.h), p.div_f = FastDiv(a.factor);
    const unsigned blocks = unsigned((p.count + PS_THREADS - 1) / PS_THREADS);
    switch (a.input.dtype) {
        case DType::F32:
            pixel_shuffle_kernel<float><<<blocks, PS_THREADS, 0, stream>>>(p);
            break;
        case DType::F16:
            pixel_shuffle_kernel<__half><<<blocks, PS_THREADS, 0, stream>>>(p);
            break;
        case DType::BF16:
            pixel_shuffle_kernel<__nv_bfloat16><<<blocks, PS_THREADS, 0, stream>>>(p);
            break;
    }
    check_launch(context, "pixel_shuffle_kernel launch");
}

void CudaBackend::pixel_shuffle(const PixelShuffleArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::PixelShuffle, {&a.input, &a.output, &a.residual});
    cuda::pixel_shuffle(a, stream_);
}

}  // namespace imr::cuda
