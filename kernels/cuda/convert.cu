// convert on CUDA (semantics in kernels/ops/convert.h): one thread per
// stored element of the output, consecutive threads on consecutive output
// addresses (coalesced writes; the reads are coalesced too when both layouts
// agree, and strided by the channel count when they differ, which the L2
// absorbs for the few channels of an image batch). Each value is widened to
// float (exact) and rounded to the output type with the CUDA intrinsics
// (round to nearest even). An NHWC8 output's padding channels are zeros.
//
// Floor: (input + output bytes) / bandwidth: a 12 MP RGB f32 NCHW batch to
// f16 NHWC8 moves 144 + 192 MB, ~0.08 ms at 4.2 TB/s.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_backend.cuh"
#include "element_types.cuh"

namespace imr::cuda {
namespace {

constexpr int CVT_THREADS = 256;  // a multiple of 32; enough blocks per SM resident

// Element strides of a layout, for reading the input at (n, c, y, x).
struct Strides {
    long long n, c, y, x;
};
Strides strides_of(const Tensor& t) {
    const Shape& s = t.shape;
    if (t.layout == Layout::NCHW) return {(long long)s.c * s.h * s.w, (long long)s.h * s.w, s.w, 1};
    const long long cs = stored_channels(t.layout, s.c);
    return {cs * s.h * s.w, 1, cs * s.w, cs};
}

struct ConvertParams {
    const void* in;
    void* out;
    Strides in_stride;
    int c, h, w;
    int out_c;        // channels stored per output pixel (NHWC, NHWC8) or c (NCHW)
    long long count;  // stored output elements
    FastDiv div_w, div_h, div_c, div_out_c;
};

// OUT_NHWC: the output is NHWC or NHWC8 (index = ((n*H + y)*W + x)*out_c + c);
// else NCHW (index = ((n*C + c)*H + y)*W + x).
template <class In, class Out, bool OUT_NHWC>
__global__ void __launch_bounds__(CVT_THREADS) convert_kernel(const ConvertParams p) {
    const long long i = (long long)blockIdx.x * CVT_THREADS + threadIdx.x;
    if (i >= p.count) return;
    const int e = int(i);  // counts are < 2^31 (checked at launch)
    int n, c, y, x;
    if constexpr (OUT_NHWC) {
        const int pixel = p.div_out_c.div(e);
        c = e - pixel * p.out_c;
        const int row = p.div_w.div(pixel);
        x = pixel - row * p.w;
        n = p.div_h.div(row), y = row - n * p.h;
    } else {
        const int row = p.div_w.div(e);
        x = e - row * p.w;
        const int plane = p.div_h.div(row);
        y = row - plane * p.h;
        n = p.div_c.div(plane), c = plane - n * p.c;
    }
    Out* out = static_cast<Out*>(p.out);
    if (c >= p.c) {  // NHWC8 padding
        out[i] = narrow<Out>(0.f);
        return;
    }
    const In* in = static_cast<const In*>(p.in);
    const long long src = n * p.in_stride.n + c * p.in_stride.c + y * p.in_stride.y + x * p.in_stride.x;
    out[i] = narrow<Out>(widen(in[src]));
}

template <class In, class Out>
void launch(const ConvertParams& p, bool out_nhwc, unsigned blocks, cudaStream_t stream) {
    if (out_nhwc)
        convert_kernel<In, Out, true><<<blocks, CVT_THREADS, 0, stream>>>(p);
    else
        convert_kernel<In, Out, false><<<blocks, CVT_THREADS, 0, stream>>>(p);
}

template <class In>
void launch_from(const ConvertParams& p, DType out, bool out_nhwc, unsigned blocks, cudaStream_t stream) {
    switch (out) {
        case DType::F32:
            return launch<In, float>(p, out_nhwc, blocks, stream);
        case DType::F16:
            return launch<In, __half>(p, out_nhwc, blocks, stream);
        case DType::BF16:
            return launch<In, __nv_bfloat16>(p, out_nhwc, blocks, stream);
    }
}

}  // namespace

void convert(const ConvertArgs& a, cudaStream_t stream) {
    check_args(a);
    const std::string context = "convert " + a.input.str() + " -> " + a.output.str();
    const Shape& s = a.input.shape;
    ConvertParams p{};
    p.in = a.input.data, p.out = a.output.data;
    p.in_stride = strides_of(a.input);
    p.c = s.c, p.h = s.h, p.w = s.w;
    p.out_c = stored_channels(a.output.layout, s.c);
    p.count = (long long)a.output.stored_count();
    if (a.output.stored_count() >= size_t(INT_MAX) || a.input.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
    p.div_w = FastDiv(s.w), p.div_h = FastDiv(s.h), p.div_c = FastDiv(s.c), p.div_out_c = FastDiv(p.out_c);
    const bool out_nhwc = a.output.layout != Layout::NCHW;
    const unsigned blocks = unsigned((p.count + CVT_THREADS - 1) / CVT_THREADS);
    switch (a.input.dtype) {
        case DType::F32:
            launch_from<float>(p, a.output.dtype, out_nhwc, blocks, stream);
            break;
        case DType::F16:
            launch_from<__half>(p, a.output.dtype, out_nhwc, blocks, stream);
            break;
        case DType::BF16:
            launch_from<__nv_bfloat16>(p, a.output.dtype, out_nhwc, blocks, stream);
            break;
    }
    check_launch(context, "convert_kernel launch");
}

void CudaBackend::convert(const ConvertArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::Convert, {&a.input, &a.output});
    cuda::convert(a, stream_);
}

}  // namespace imr::cuda
