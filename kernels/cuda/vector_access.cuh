// 16-byte vector access and the flat element-by-element pass shared by the
// memory-bound ops (elementwise, activation; simple_gate and concat use the
// vector access with their own index math).
//
// A Vec<T, V> is V elements of T moved by one 16-byte load or store
// (ld/st.global.v4: 4 floats or 8 halves) when V = kVec16<T>, which needs
// every pointer 16-byte aligned (each op checks, and runs V = 1 otherwise).
// NHWC8's 8-channel pixels are whole vectors for both widths, so a vector
// never spans two pixels there.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <string>

#include "common.cuh"
#include "element_types.cuh"

namespace imr::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
    T v[V];
};

// Elements of T in 16 bytes: 4 floats, 8 halves (both divide NHWC8's 8 channels).
template <class T>
constexpr int kVec16 = int(16 / sizeof(T));

inline bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <int V, class T>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
    return *reinterpret_cast<const Vec<T, V>*>(p);
}
template <int V, class T>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& v) {
    *reinterpret_cast<Vec<T, V>*>(p) = v;
}

// Throws "<context>: tensors of 2^31 or more elements are not supported on
// CUDA" (the 32-bit index math of the CUDA kernels, as pixel_shuffle and
// convert) unless t stores fewer than INT_MAX elements.
inline void check_element_count(const Tensor& t, const std::string& context) {
    if (t.stored_count() >= size_t(INT_MAX))
        throw Error(context + ": tensors of 2^31 or more elements are not supported on CUDA");
}

// ---------------------------------------------------------------- flat map
// out[i] = f(in_0[i], ..., in_(N-1)[i]) over every stored element of tensors
// of one shape, dtype and layout: the layout does not matter to an
// element-by-element function, except that an NHWC8 output's padding
// channels are written as zeros (whatever the inputs' padding holds).
//
// One thread per 16-byte vector (plus one per element of a tail shorter than
// a vector, NCHW only: NHWC8 counts are multiples of 8), consecutive threads
// on consecutive vectors: every load and store is a full coalesced 16-byte
// access, 512 bytes per warp. 256 threads a block, one vector each: enough
// bytes in flight per SM (2048 threads x 16 B per tensor) to cover the
// latency at HBM bandwidth, and a grid of count / (256 V) blocks, < 2^23 for
// the < 2^31 elements the CUDA backend takes.
constexpr int kFlatThreads = 256;

template <int N>
struct FlatParams {
    const void* in[N];
    void* out;
    long long vectors;    // whole vectors of V elements
    long long count;      // stored elements
    int channels;         // logical channels
    int stored_channels;  // NHWC8 with padding: channels per pixel; else 0 (no padding lanes)
    FastDiv div_stored;
};

// f applied to one element of each input, widened to float.
template <class F, class T>
__device__ __forceinline__ float apply(const F& f, const T (&x)[1]) {
    return f(widen(x[0]));
}
template <class F, class T>
__device__ __forceinline__ float apply(const F& f, const T (&x)[2]) {
    return f(widen(x[0]), widen(x[1]));
}

template <class T, int V, int N, class F>
__global__ void __launch_bounds__(kFlatThreads) flat_map_kernel(const FlatParams<N> p, const F f) {
    const long long t = (long long)blockIdx.x * kFlatThreads + threadIdx.x;
    T* out = static_cast<T*>(p.out);
    if (t < p.vectors) {
        const long long e = t * V;  // < 2^31 (checked at launch)
        Vec<T, V> x[N];
#pragma unroll
        for (int k = 0; k < N; ++k) x[k] = load_vec<V>(static_cast<const T*>(p.in[k]) + e);
        // The first lane's channel (NHWC8: a vector lies within one pixel).
        const int c0 = p.stored_channels ? int(e) - p.div_stored.div(int(e)) * p.stored_channels : 0;
        Vec<T, V> o;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            T lane[N];
#pragma unroll
            for (int k = 0; k < N; ++k) lane[k] = x[k].v[j];
            o.v[j] = p.stored_channels && c0 + j >= p.channels ? narrow<T>(0.f) : narrow<T>(apply(f, lane));
        }
        store_vec<V>(out + e, o);
    } else {  // the tail: one element per thread
        const long long e = p.vectors * V + (t - p.vectors);
        if (e >= p.count) return;
        T lane[N];
#pragma unroll
        for (int k = 0; k < N; ++k) lane[k] = static_cast<const T*>(p.in[k])[e];
        const int c = p.stored_channels ? int(e) - p.div_stored.div(int(e)) * p.stored_channels : 0;
        out[e] = p.stored_channels && c >= p.channels ? narrow<T>(0.f) : narrow<T>(apply(f, lane));
    }
}

// Runs flat_map_kernel for out = f(inputs...) (all of one shape and type, T
// their dtype; checked by the op's check_args), with 16-byte vectors where
// every pointer is 16-byte aligned, else one element per thread.
template <class T, int N, class F>
void flat_map(const std::array<const Tensor*, N>& inputs, const Tensor& out, const F& f, cudaStream_t stream,
              const std::string& context, const char* kernel) {
    FlatParams<N> p{};
    bool aligned = aligned16(out.data);
    for (int k = 0; k < N; ++k) {
        check_element_count(*inputs[k], context);
        p.in[k] = inputs[k]->data;
        aligned = aligned && aligned16(inputs[k]->data);
    }
    check_element_count(out, context);
    p.out = out.data;
    p.count = (long long)out.stored_count();
    p.channels = out.shape.c;
    const int stored = stored_channels(out.layout, out.shape.c);
    p.stored_channels = out.layout == Layout::NHWC8 && stored != out.shape.c ? stored : 0;
    if (p.stored_channels) p.div_stored = FastDiv(p.stored_channels);
    const int V = aligned ? kVec16<T> : 1;
    p.vectors = p.count / V;
    const long long threads = p.vectors + (p.count - p.vectors * V);
    const unsigned blocks = unsigned((threads + kFlatThreads - 1) / kFlatThreads);
    if (aligned)
        flat_map_kernel<T, kVec16<T>, N, F><<<blocks, kFlatThreads, 0, stream>>>(p, f);
    else
        flat_map_kernel<T, 1, N, F><<<blocks, kFlatThreads, 0, stream>>>(p, f);
    check_launch(context, kernel);
}

}  // namespace imr::cuda
