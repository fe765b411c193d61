// simple_gate on the CPU (semantics in kernels/ops/simple_gate.h), f32 NCHW
// (what the CPU backend supports): per image, the output's C/2 planes are
// one contiguous run, and so is each half of the input's, so it is a flat
// product of two runs, parallel over (image, output plane). Memory-bound:
// 12 bytes per output element.
#include "cpu_backend.h"

namespace imr::cpu {

void CpuBackend::simple_gate(const SimpleGateArgs& a) {
    check_args(a);
    check_supported(*this, Op::SimpleGate, {&a.input, &a.output});
    const Shape& s = a.input.shape;
    const int half = s.c / 2;
    const size_t plane = size_t(s.h) * s.w;
    const float* in = a.input.as<const float>();
    float* out = a.output.as<float>();
    const long planes = long(s.n) * half;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long p = 0; p < planes; ++p) {
        const long n = p / half, c = p % half;
        const float* x1 = in + (size_t(n) * s.c + size_t(c)) * plane;
        const float* x2 = x1 + size_t(half) * plane;
        float* o = out + size_t(p) * plane;
#pragma omp simd
        for (size_t i = 0; i < plane; ++i) o[i] = x1[i] * x2[i];
    }
}

}  // namespace imr::cpu
