// concat on the CPU (semantics in kernels/ops/concat.h), f32 NCHW (what the
// CPU backend supports): every output plane (image, channel) is one input
// plane, copied whole, in parallel over the output planes (a 2-input concat
// of one image still splits over all threads). Memory-bound: 8 bytes per
// element.
#include <cstring>

#include "cpu_backend.h"

namespace imr::cpu {

void CpuBackend::concat(const ConcatArgs& a) {
    check_args(a);
    for (const Tensor& t : a.inputs) check_supported(*this, Op::Concat, {&t});
    check_supported(*this, Op::Concat, {&a.output});
    const Shape o = a.out_shape();
    const size_t plane = size_t(o.h) * o.w;
    // Per output channel: the input it comes from (its data and channel
    // count) and its channel there.
    struct Source {
        const float* data;
        int channels, channel;
    };
    std::vector<Source> source;
    source.reserve(size_t(o.c));
    for (const Tensor& t : a.inputs)
        for (int c = 0; c < t.shape.c; ++c) source.push_back({t.as<const float>(), t.shape.c, c});
    float* out = a.output.as<float>();
    const long planes = long(o.n) * o.c;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long p = 0; p < planes; ++p) {
        const Source& s = source[size_t(p % o.c)];
        const size_t n = size_t(p / o.c);
        std::memcpy(out + size_t(p) * plane, s.data + (n * size_t(s.channels) + size_t(s.channel)) * plane,
                    plane * sizeof(float));
    }
}

}  // namespace imr::cpu
