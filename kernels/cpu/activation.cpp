// activation on the CPU (semantics in kernels/ops/activation.h), f32 NCHW
// (what the CPU backend supports): one flat pass, split evenly over the
// threads. ReLU and LeakyReLU are memory-bound (8 bytes per element); GELU
// and SiLU call erfc / exp per element (libm, scalar), a few ns each.
#include <cmath>

#include "cpu_backend.h"

namespace imr::cpu {

void CpuBackend::activation(const ActivationArgs& a) {
    check_args(a);
    check_supported(*this, Op::Activation, {&a.input, &a.output});
    const float* in = a.input.as<const float>();
    float* out = a.output.as<float>();
    const long count = long(a.output.stored_count());
    const float slope = a.slope;
    switch (a.function) {
        case UnaryFunction::ReLU:
#pragma omp parallel for simd schedule(static) num_threads(threads_)
            for (long i = 0; i < count; ++i) out[i] = in[i] < 0.f ? 0.f : in[i];  // NaN stays NaN
            break;
        case UnaryFunction::LeakyReLU:
#pragma omp parallel for simd schedule(static) num_threads(threads_)
            for (long i = 0; i < count; ++i) out[i] = in[i] < 0.f ? slope * in[i] : in[i];
            break;
        case UnaryFunction::GELU:
            // x Phi(x) in the erfc form: no cancellation in 1 + erf(x / sqrt 2) for negative x.
#pragma omp parallel for schedule(static) num_threads(threads_)
            for (long i = 0; i < count; ++i) out[i] = 0.5f * in[i] * std::erfc(in[i] * -0.70710678118654752f);
            break;
        case UnaryFunction::SiLU:
            // x sigmoid(x), the sigmoid from e = exp(-|x|): no overflow (as kernels/cuda/activation.cu).
#pragma omp parallel for schedule(static) num_threads(threads_)
            for (long i = 0; i < count; ++i) {
                const float x = in[i], e = std::exp(-std::fabs(x));
                out[i] = x * ((x < 0.f ? e : 1.f) / (1.f + e));
            }
            break;
    }
}

}  // namespace imr::cpu
