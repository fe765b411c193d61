// Helpers shared by the CUDA ops: error checks that turn a CUDA failure into
// an imr::Error naming the op and its shapes, and a division by a run-time
// constant done as a multiply (the conv2d tile loader divides on every step).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "backend.h"

namespace imr::cuda {

// Throws imr::Error "<context>: <what> failed: <CUDA message> (<error name>)".
[[noreturn]] inline void throw_cuda(const std::string& context, const char* what, cudaError_t err) {
    throw Error(context + ": " + what + " failed: " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

inline void check_cuda(cudaError_t err, const std::string& context, const char* what) {
    if (err != cudaSuccess) throw_cuda(context, what, err);
}

// After a launch: cudaGetLastError returns (and clears) a launch or
// configuration error; a fault of earlier asynchronous work is sticky and
// shows up here or at the next synchronizing call.
inline void check_launch(const std::string& context, const char* kernel) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) throw_cuda(context, kernel, err);
}

// Raises `kernel`'s dynamic shared memory limit on the current device to at
// least `bytes`; never lowers it. The limit belongs to the kernel, not to a
// stream: two compute lanes (two backends, two threads) that launch one
// kernel with different sizes would otherwise race, one lowering the limit
// between the other's raise and its launch (seen on the H200: 19,188 of
// 400,000 launches failed). Thread-safe; returns the CUDA error, if any.
cudaError_t raise_smem_limit(const void* kernel, size_t bytes);

// n / d and n % d for 0 <= n < 2^31 and a divisor fixed at launch: q =
// umulhi(n, mul) >> shift with mul = ceil(2^(31+l) / d), l = ceil(log2 d)
// (the round-up method CUTLASS's FastDivmod uses). Four instructions
// instead of the ~20 of an integer division.
struct FastDiv {
    int d = 1;
    unsigned mul = 0, shift = 0;

    FastDiv() = default;
    explicit FastDiv(int divisor) : d(divisor) {
        if (d == 1) return;
        unsigned l = 0;
        while ((1ull << l) < unsigned(d)) ++l;
        mul = unsigned(((1ull << (31 + l)) + unsigned(d) - 1) / unsigned(d));
        shift = l - 1;
    }
    __device__ __forceinline__ int div(int n) const { return d == 1 ? n : int(__umulhi(unsigned(n), mul) >> shift); }
};

}  // namespace imr::cuda
