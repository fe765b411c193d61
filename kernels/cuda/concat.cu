// concat on CUDA (semantics in kernels/ops/concat.h): one thread per
// 16-byte vector of the output (V = 4 floats or 8 halves; V = 1 where the
// conditions below fail), consecutive threads on consecutive vectors, so the
// output is written fully coalesced and each input read in the same order.
//   NCHW: per image the output is the inputs' runs of C_k H W values one
//     after another; a vector comes from one input when every run is a
//     whole number of vectors (and every pointer 16-byte aligned), else
//     V = 1.
//   NHWC8: the output vector at (pixel, channels c0..c0+V-1) comes from one
//     input when every input but the last has a multiple of V channels (its
//     channel offsets are then multiples of V): one aligned vector load from
//     that input's pixel; otherwise each lane finds its input and loads its
//     value alone (the warp still reads one contiguous span per input and
//     pixel). Lanes at c >= C are the output's padding, written as zeros.
// Any dtype, NCHW or NHWC8: a copy, every value stored exactly.
//
// Finding a lane's input: the largest k with start[k] <= its offset, a loop
// over the inputs there are (the parameters are __grid_constant__, so an
// array indexed by k is read from the constant bank, not copied to local
// memory). The first version unrolled a compare-and-select over all
// kConcatMaxInputs (16) slots: three times the instructions of a copy, and
// at 47% of the floor it was bound by issuing them (ncu on the H200: 567 M
// instructions against ReLU's 192 M on the same bytes, few warps waiting on
// memory).
//
// Floor: every element read once and written once, 2 x the output's bytes
// (NCHW): a U-Net skip of 2 x 64 channels at 12 MP in f16 moves 6.1 GB,
// ~1.5 ms at 4.2 TB/s. Launch: 256 threads a block, as the flat pass
// (vector_access.cuh), grid stored output elements / (256 V).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda_backend.cuh"
#include "vector_access.cuh"

namespace imr::cuda {
namespace {

constexpr int kConcatThreads = 256;

struct ConcatParams {
    const void* in[kConcatMaxInputs];
    void* out;
    // NCHW: the first element of input k's run in an image's output run, and
    // the run's length (C_k H W). NHWC8: input k's first output channel, and
    // its channels stored per pixel (its pixel stride).
    int start[kConcatMaxInputs];
    int stride[kConcatMaxInputs];
    int inputs;
    int nhwc;           // 1: NHWC8, 0: NCHW
    int outer_run;      // NCHW: C H W (an image); NHWC8: the output's channels stored per pixel
    int channels;       // C (NHWC8: lanes at c >= C are padding)
    int whole;          // every vector comes from one input (see the top)
    long long vectors;  // output vectors of V elements (stored count / V: no tail)
    FastDiv div_outer_run;
};

// The input that output offset r (an element of an image's run, or a channel)
// comes from: its data at `outer` (image or pixel) and r's offset in it.
template <class T>
__device__ __forceinline__ const T* source(const ConcatParams& p, int outer, int r) {
    int k = 0;
    while (k + 1 < p.inputs && r >= p.start[k + 1]) ++k;
    return static_cast<const T*>(p.in[k]) + ((long long)outer * p.stride[k] + (r - p.start[k]));
}

template <class T, int V>
__global__ void __launch_bounds__(kConcatThreads) concat_kernel(const __grid_constant__ ConcatParams p) {
    const long long t = (long long)blockIdx.x * kConcatThreads + threadIdx.x;
    if (t >= p.vectors) return;
    const int e = int(t * V);  // the first lane's output element (< 2^31, checked at launch)
    const int outer = p.div_outer_run.div(e), r = e - outer * p.outer_run;
    Vec<T, V> o;
    if (p.nhwc && r >= p.channels) {  // every lane is padding
#pragma unroll
        for (int l = 0; l < V; ++l) o.v[l] = narrow<T>(0.f);
    } else if (p.whole) {
        // One input holds lanes r..r+V-1 (those below C): its vector, aligned
        // and within its run or pixel (its run / channel offsets are multiples
        // of V; the last input's pixel has >= its channels rounded up to V).
        const Vec<T, V> a = load_vec<V>(source<T>(p, outer, r));
#pragma unroll
        for (int l = 0; l < V; ++l) o.v[l] = !p.nhwc || r + l < p.channels ? a.v[l] : narrow<T>(0.f);
    } else {
#pragma unroll
        for (int l = 0; l < V; ++l)
            o.v[l] = !p.nhwc || r + l < p.channels ? *source<T>(p, outer, r + l) : narrow<T>(0.f);
    }
    store_vec<V>(static_cast<T*>(p.out) + e, o);
}

template <class T>
void launch(const ConcatArgs& a, cudaStream_t stream, const std::string& context) {
    const Shape o = a.out_shape();
    ConcatParams p{};
    p.out = a.output.data;
    p.inputs = int(a.inputs.size());
    p.nhwc = a.output.layout == Layout::NHWC8;
    p.channels = o.c;
    const long long plane = (long long)o.h * o.w;
    constexpr int V = kVec16<T>;
    bool aligned = aligned16(a.output.data);
    bool whole = true;  // every vector from one input, with V lanes
    int offset = 0;     // the output channel of input k's channel 0
    for (int k = 0; k < p.inputs; ++k) {
        const Tensor& t = a.inputs[k];
        p.in[k] = t.data;
        aligned = aligned && aligned16(t.data);
        if (p.nhwc) {
            p.start[k] = offset;
            p.stride[k] = stored_channels(t.layout, t.shape.c);
            whole = whole && offset % V == 0;
        } else {
            p.start[k] = int(offset * plane);  // < the output's count < 2^31
            p.stride[k] = int(t.shape.c * plane);
            whole = whole && p.stride[k] % V == 0;
        }
        offset += t.shape.c;
    }
    p.outer_run = p.nhwc ? stored_channels(a.output.layout, o.c) : int(o.c * plane);
    p.div_outer_run = FastDiv(p.outer_run);
    // NHWC8's pixels are whole vectors whatever the inputs; NCHW takes V > 1
    // only where every input's run is whole vectors (then so is every vector).
    const bool vector = aligned && (p.nhwc || whole);
    p.whole = vector ? whole : 1;  // one lane is always from one input
    const long long count = (long long)a.output.stored_count();
    p.vectors = vector ? count / V : count;
    const unsigned blocks = unsigned((p.vectors + kConcatThreads - 1) / kConcatThreads);
    if (vector)
        concat_kernel<T, V><<<blocks, kConcatThreads, 0, stream>>>(p);
    else
        concat_kernel<T, 1><<<blocks, kConcatThreads, 0, stream>>>(p);
    check_launch(context, "concat_kernel launch");
}

}  // namespace

void CudaBackend::concat(const ConcatArgs& a) {
    use_device();
    check_args(a);
    for (const Tensor& t : a.inputs) check_supported(*this, Op::Concat, {&t});
    check_supported(*this, Op::Concat, {&a.output});
    std::string context = "concat";
    for (size_t k = 0; k < a.inputs.size(); ++k) context += (k ? " + " : " ") + a.inputs[k].str();
    context += " on " + name();
    for (const Tensor& t : a.inputs) check_element_count(t, context);
    check_element_count(a.output, context);
    switch (a.output.dtype) {
        case DType::F32:
            return launch<float>(a, stream_, context);
        case DType::F16:
            return launch<__half>(a, stream_, context);
        case DType::BF16:
            return launch<__nv_bfloat16>(a, stream_, context);
    }
}

}  // namespace imr::cuda
