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
//
// f16/bf16 NHWC8 with the wide side's channels a multiple of 8 and f <= 4
// (pixel_shuffle_nhwc8_vec_kernel, variant "nhwc8_vec16": a U-Net's ways down
// and up, where neither side has padding channels): one thread per (deep
// pixel, 8 wide channels) moves its 8 x f*f elements as f*f 16-byte vectors
// each way, transposed in registers. On the deep side they are the pixel's
// channels [8g f*f, 8(g+1) f*f), contiguous; on the wide side channels
// [8g, 8g+8) of each of the f*f wide pixels the deep one covers. Every load
// and store is a whole vector, where the kernel above moves 2 bytes a
// thread with five divisions each: on the H200 at 12 MP, 48 channels, f = 2,
// to depth, `denoise-unet`'s first way down spent ~2.4 ms in it for a floor
// of 0.54 ms (1.15 GB each way).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"
#include "pixel_shuffle.cuh"
#include "vector8.cuh"

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

struct ShuffleVecParams {
    const void* in;
    const void* residual;  // the output's shape and layout
    void* out;
    int to_depth;
    int wide_h, wide_w, wide_c;  // the wide tensor: size, channels (stored = logical, a multiple of 8)
    int deep_h, deep_w, deep_c;  // the deep tensor: size, channels (wide_c * f*f)
    int groups;                  // wide_c / 8
    long long count;             // deep pixels x groups: one thread each
    FastDiv div_groups, div_deep_w, div_deep_h;
};

template <class T, int F, bool ToDepth>  // the direction a template argument: FF vectors in registers, not 2 FF
__global__ void __launch_bounds__(PS_THREADS) pixel_shuffle_nhwc8_vec_kernel(const ShuffleVecParams p) {
    constexpr int FF = F * F;
    const long long i = (long long)blockIdx.x * PS_THREADS + threadIdx.x;
    if (i >= p.count) return;
    // Thread t = deep pixel * groups + g; counts are < 2^31 (checked at launch).
    const int t = int(i);
    const int pixel = p.div_groups.div(t), g = t - pixel * p.groups;
    const int row = p.div_deep_w.div(pixel), x = pixel - row * p.deep_w;
    const int n = p.div_deep_h.div(row), y = row - n * p.deep_h;
    // Deep element k * FF + q (k < 8) is wide channel 8g + k of wide pixel q = dy * F + dx.
    const size_t deep_at = size_t(pixel) * p.deep_c + size_t(g) * 8 * FF;
    size_t wide_at[FF];
#pragma unroll
    for (int q = 0; q < FF; ++q)
        wide_at[q] = ((size_t(n) * p.wide_h + F * y + q / F) * p.wide_w + F * x + q % F) * p.wide_c + 8 * g;
    const uint4* in = static_cast<const uint4*>(p.in);  // vectors of 8 elements: offsets / 8
    uint4* out = static_cast<uint4*>(p.out);
    uint4 src[FF], dst[FF];
#pragma unroll
    for (int q = 0; q < FF; ++q) src[q] = __ldg(in + (ToDepth ? wide_at[q] : deep_at + 8 * q) / 8);
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int q = 0; q < FF; ++q) {
            if constexpr (ToDepth)
                d[k * FF + q] = s[q * 8 + k];  // wide vector q, element k -> deep element k * FF + q
            else
                d[q * 8 + k] = s[k * FF + q];
        }
#pragma unroll
    for (int q = 0; q < FF; ++q) {
        const size_t at = (ToDepth ? deep_at + 8 * q : wide_at[q]) / 8;
        if (p.residual) {  // as the kernels above: the sum in float, rounded once
            float a[8], r[8];
            unpack8<T>(dst[q], a);
            unpack8<T>(__ldg(static_cast<const uint4*>(p.residual) + at), r);
#pragma unroll
            for (int k = 0; k < 8; ++k) a[k] += r[k];
            dst[q] = pack8<T>(a);
        }
        out[at] = dst[q];
    }
}

// Whether the vector kernel takes `a` (the op's arguments already checked).
bool vector_applies(const PixelShuffleArgs& a) {
    const Shape& wide = a.direction == ShuffleDirection::ToDepth ? a.input.shape : a.out_shape();
    const bool aligned = reinterpret_cast<uintptr_t>(a.input.data) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(a.output.data) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(a.residual.data) % 16 == 0;
    return a.input.layout == Layout::NHWC8 && (a.input.dtype == DType::F16 || a.input.dtype == DType::BF16) &&
           a.factor >= 2 && a.factor <= 4 && wide.c % 8 == 0 && aligned;
}

template <class T, bool ToDepth>
void launch_vec(const ShuffleVecParams& p, int factor, unsigned blocks, cudaStream_t stream) {
    switch (factor) {
        case 2:
            return pixel_shuffle_nhwc8_vec_kernel<T, 2, ToDepth><<<blocks, PS_THREADS, 0, stream>>>(p);
        case 3:
            return pixel_shuffle_nhwc8_vec_kernel<T, 3, ToDepth><<<blocks, PS_THREADS, 0, stream>>>(p);
        default:
            return pixel_shuffle_nhwc8_vec_kernel<T, 4, ToDepth><<<blocks, PS_THREADS, 0, stream>>>(p);
    }
}

template <class T>
void launch_vec(const ShuffleVecParams& p, int factor, unsigned blocks, cudaStream_t stream) {
    if (p.to_depth)
        launch_vec<T, true>(p, factor, blocks, stream);
    else
        launch_vec<T, false>(p, factor, blocks, stream);
}

void pixel_shuffle_nhwc8_vec(const PixelShuffleArgs& a, const std::string& context, cudaStream_t stream) {
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : a.out_shape(), deep = to_depth ? a.out_shape() : a.input.shape;
    if (a.output.stored_count() >= size_t(INT_MAX) || a.input.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    ShuffleVecParams p{};
    p.in = a.input.data, p.residual = a.residual.data, p.out = a.output.data;
    p.to_depth = to_depth;
    p.wide_h = wide.h, p.wide_w = wide.w, p.wide_c = wide.c;
    p.deep_h = deep.h, p.deep_w = deep.w, p.deep_c = deep.c;
    p.groups = wide.c / 8;
    p.count = (long long)deep.n * deep.h * deep.w * p.groups;
    p.div_groups = FastDiv(p.groups), p.div_deep_w = FastDiv(deep.w), p.div_deep_h = FastDiv(deep.h);
    const unsigned blocks = unsigned((p.count + PS_THREADS - 1) / PS_THREADS);
    if (a.input.dtype == DType::F16)
        launch_vec<__half>(p, a.factor, blocks, stream);
    else
        launch_vec<__nv_bfloat16>(p, a.factor, blocks, stream);
    check_launch(context, "pixel_shuffle_nhwc8_vec_kernel launch");
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

// The variants (Backend::variants): the per-element kernels, which run every
// case, and the vector kernel, which runs the cases vector_applies takes and
// is the planner's pick there: on the H200 (2026-12-02, 12 MP, --bench 20)
// it took denoise-unet from 82.2 to 77.4 ms and denoise-unet-s from 31.6 to
// 28.1 ms, as predicted (docs/performance.md), after the op tests and
// memcheck passed on it.
const char* const kShuffleVariants[] = {"per_element", "nhwc8_vec16"};
constexpr int kPerElement = 0, kVector = 1;

}  // namespace

std::vector<std::string> pixel_shuffle_variants() {
    return {std::begin(kShuffleVariants), std::end(kShuffleVariants)};
}

void pixel_shuffle(const PixelShuffleArgs& a, cudaStream_t stream, int forced) {
    check_args(a);
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : a.out_shape();
    const std::string context = std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") +
                                a.input.shape.str() + ", factor " + std::to_string(a.factor);
    const bool vector_ok = vector_applies(a);
    const int variant = forced >= 0 ? forced : vector_ok ? kVector : kPerElement;
    if (variant == kVector) {
        if (!vector_ok)
            throw NotApplicable(context +
                                ": variant nhwc8_vec16 takes f16/bf16 NHWC8 with factor 2-4, the wide "
                                "side's channels a multiple of 8 and 16-byte aligned tensors");
        return pixel_shuffle_nhwc8_vec(a, context, stream);
    }
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
    cuda::pixel_shuffle(a, stream_, forced_variant(Op::PixelShuffle));
}

}  // namespace imr::cuda
