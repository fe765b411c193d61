// activation on CUDA (semantics in kernels/ops/activation.h): the flat pass
// of vector_access.cuh (one thread per 16-byte vector, coalesced), f in
// float, rounded once to the type; an NHWC8 output's padding channels zero.
// Any dtype, NCHW or NHWC8. One kernel per function (a functor template
// argument), so the loop holds no branch on it.
//
// Floor: a read and a write of every stored element, 2 x the tensor's bytes:
// a 64-channel 12 MP f16 NHWC8 activation moves 3.1 GB, ~0.7 ms at
// 4.2 TB/s. GELU's erfcf (~30 instructions) and SiLU's expf and division
// (~20) per element stay below that: an H200 issues ~60 T FP32/integer
// instructions a second, ~0.8 G elements x 30 is 0.4 ms spread under the
// memory time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda_backend.cuh"
#include "vector_access.cuh"

namespace imr::cuda {
namespace {

// NaN < 0 is false: a NaN input stays NaN (as torch; activation.h).
struct ReluFn {
    __device__ float operator()(float x) const { return x < 0.f ? 0.f : x; }
};
struct LeakyReluFn {
    float slope;
    __device__ float operator()(float x) const { return x < 0.f ? slope * x : x; }
};
// x Phi(x) in the erfc form: 1 + erf(x / sqrt 2) would cancel for negative x.
struct GeluFn {
    __device__ float operator()(float x) const { return 0.5f * x * erfcf(x * -0.70710678118654752f); }
};
// x sigmoid(x) with the sigmoid from e = e^-|x| (no overflow; e/(1+e) for
// x < 0), so results stay accurate to a few ulp down to float's normal
// range. expf, not __expf: the fast one errs by ~2^-21 relative.
struct SiluFn {
    __device__ float operator()(float x) const {
        const float e = expf(-fabsf(x));
        return x * ((x < 0.f ? e : 1.f) / (1.f + e));
    }
};

template <class T>
void launch(const ActivationArgs& a, cudaStream_t stream, const std::string& context) {
    const char* kernel = "activation kernel launch";
    switch (a.function) {
        case UnaryFunction::ReLU:
            return flat_map<T, 1>({&a.input}, a.output, ReluFn{}, stream, context, kernel);
        case UnaryFunction::LeakyReLU:
            return flat_map<T, 1>({&a.input}, a.output, LeakyReluFn{a.slope}, stream, context, kernel);
        case UnaryFunction::GELU:
            return flat_map<T, 1>({&a.input}, a.output, GeluFn{}, stream, context, kernel);
        case UnaryFunction::SiLU:
            return flat_map<T, 1>({&a.input}, a.output, SiluFn{}, stream, context, kernel);
    }
}

}  // namespace

void CudaBackend::activation(const ActivationArgs& a) {
    use_device();
    check_args(a);
    check_supported(*this, Op::Activation, {&a.input, &a.output});
    const std::string context =
        std::string("activation ") + unary_function_name(a.function) + " " + a.input.str() + " on " + name();
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
