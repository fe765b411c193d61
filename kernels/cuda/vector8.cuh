// Eight consecutive channels of an NHWC8 pixel as one 16-byte vector (uint4),
// for the kernels that read and write f16/bf16 NHWC8 tensors a vector at a
// time (layer_norm, depthwise_conv2d): unpacked to eight floats (exact) and
// packed back with one rounding each (element_types.cuh, nearest even).
// NHWC8 pixels are 16-byte multiples, so a vector load is aligned wherever
// the tensor's data pointer is (check_aligned16 at launch).
#pragma once

#include <cstdint>
#include <string>

#include "common.cuh"
#include "element_types.cuh"

namespace imr::cuda {

template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
    static_assert(sizeof(T) == 2, "eight 2-byte elements per vector");
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) f[k] = widen(e[k]);
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    static_assert(sizeof(T) == 2, "eight 2-byte elements per vector");
    uint4 v;
    T* e = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < 8; ++k) e[k] = narrow<T>(f[k]);
    return v;
}

// Throws imr::Error "<context>: <what> is not 16-byte aligned" for a tensor
// the vector kernels cannot load (a view that starts mid-pixel).
inline void check_aligned16(const void* p, const std::string& context, const char* what) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
        throw Error(context + ": " + what + " is not 16-byte aligned (NHWC8 kernels load whole 8-channel vectors)");
}

}  // namespace imr::cuda
