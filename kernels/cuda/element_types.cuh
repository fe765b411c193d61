// The element types a CUDA kernel stores (float, __half, __nv_bfloat16) to and
// from the float it computes in, shared by the kernels that move typed data
// (convert, pixel_shuffle): widening is exact; narrowing rounds to nearest
// even with the CUDA intrinsics, as the float64 references round.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace imr::cuda {

__device__ __forceinline__ float widen(float v) {
    return v;
}
__device__ __forceinline__ float widen(__half v) {
    return __half2float(v);
}
__device__ __forceinline__ float widen(__nv_bfloat16 v) {
    return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T narrow(float v);
template <>
__device__ __forceinline__ float narrow<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

}  // namespace imr::cuda
