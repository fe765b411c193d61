// convert on the CPU (semantics in kernels/ops/convert.h): a pass over the
// output, parallel over its (image, row) pairs, each element read from the
// input's layout, widened to float (exact for every type) and rounded to the
// output's type (tensor.h's conversions). Memory-bound: 2-8 bytes per
// element each way. The CPU runs every other op in f32 NCHW, so no model
// places it here today; it exists so every backend has the whole op list and
// the tests can check it against the float64 reference.
#include "cpu_backend.h"

namespace imr::cpu {

void CpuBackend::convert(const ConvertArgs& a) {
    check_args(a);
    check_supported(*this, Op::Convert, {&a.input, &a.output});
    const Tensor& in = a.input;
    const Tensor& out = a.output;
    const Shape s = in.shape;
    const int padded = stored_channels(out.layout, s.c);
    const long rows = long(s.n) * s.h;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long r = 0; r < rows; ++r) {
        const int n = int(r / s.h), y = int(r % s.h);
        for (int c = 0; c < s.c; ++c)
            for (int x = 0; x < s.w; ++x)
                store_float(out, out.offset(n, c, y, x), load_float(in, in.offset(n, c, y, x)));
        // NHWC8: the padding channels of every pixel of the row are zeros.
        for (int c = s.c; c < padded; ++c)
            for (int x = 0; x < s.w; ++x) store_float(out, out.offset(n, c, y, x), 0.0f);
    }
}

}  // namespace imr::cpu
