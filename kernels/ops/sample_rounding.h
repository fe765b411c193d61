// How a model's float becomes an 8- or 16-bit sample: the one definition that
// the CPU image conversions (app/image/interleave.cpp), the CPU image_planes
// kernel and the CUDA one share, since a device must give the host's bytes
// (kernels/ops/image_planes.h states the semantics). Every step is one f32
// rounding, in the order written: on the device through explicitly rounded
// intrinsics (nvcc would otherwise fuse x * max + 0.5 into an FMA, which
// rounds once), on the host because the files that include this are built
// with -ffp-contract=off (CMakeLists.txt).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define IMR_SAMPLE_FN __host__ __device__ __forceinline__
#else
#define IMR_SAMPLE_FN inline
#endif

namespace imr::sample_rounding {

IMR_SAMPLE_FN float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

IMR_SAMPLE_FN float add(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

// v clamped to [0, 1]; NaN -> 0.
IMR_SAMPLE_FN float clamp_unit(float v) {
    v = v > 0.f ? v : 0.f;  // false for NaN
    return v < 1.f ? v : 1.f;
}

// trunc(clamp(x * max + 0.5, 0, max)) for max 255 or 65535; NaN -> 0. The
// caller narrows the result to its sample type, which holds it.
IMR_SAMPLE_FN uint16_t quantize(float x, float max) {
    float v = add(mul(x, max), 0.5f);
    v = v > 0.f ? v : 0.f;  // false for NaN
    v = v < max ? v : max;
    return uint16_t(v);
}

}  // namespace imr::sample_rounding

#undef IMR_SAMPLE_FN
