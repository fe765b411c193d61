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

}  // namespace

void pixel_shuffle(const PixelShuffleArgs& a, cudaStream_t stream) {
    check_args(a);
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    const Shape wide = to_depth ? a.input.shape : a.out_shape();
    const std::string context = std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") +
                                a.input.shape.str() + ", factor " + std::to_string(a.factor);
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
