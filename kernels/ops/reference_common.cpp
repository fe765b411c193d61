// The loops the float64 references share (reference_common.h).
#include "reference_common.h"

#include <cstddef>

namespace imr {

std::vector<double> correlate_padded(const std::vector<double>& padded, int n, int cin, int hp, int wp,
                                     const float* weight, const float* bias, int cout, int k) {
    const int ho = hp - k + 1, wo = wp - k + 1;
    std::vector<double> out(size_t(n) * cout * ho * wo);
    // One task per output row: parallel enough for a 3-channel image on 16
    // cores, and the row being summed stays in L1.
#pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < n; ++b) {
        for (int co = 0; co < cout; ++co) {
            for (int y = 0; y < ho; ++y) {
                double* o = out.data() + ((size_t(b) * cout + co) * ho + y) * wo;
                for (int x = 0; x < wo; ++x) o[x] = bias ? double(bias[co]) : 0.0;
                for (int ci = 0; ci < cin; ++ci) {
                    for (int ky = 0; ky < k; ++ky) {
                        const double* row = padded.data() + ((size_t(b) * cin + ci) * hp + y + ky) * wp;
                        for (int kx = 0; kx < k; ++kx) {
                            const double w = weight[((size_t(co) * cin + ci) * k + ky) * k + kx];
                            for (int x = 0; x < wo; ++x) o[x] += w * row[x + kx];
                        }
                    }
                }
            }
        }
    }
    return out;
}

std::vector<double> reference_values(const Tensor& t) {
    const Shape& s = t.shape;
    std::vector<double> out(s.count());
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < s.n; ++n)
        for (int c = 0; c < s.c; ++c)
            for (int y = 0; y < s.h; ++y)
                for (int x = 0; x < s.w; ++x)
                    out[((size_t(n) * s.c + c) * s.h + y) * s.w + x] = reference_value(t, n, c, y, x);
    return out;
}

int reference_pad_index(int p, int size, PadMode mode) {
    if (p >= 0 && p < size) return p;
    switch (mode) {
        case PadMode::Zero:
            return -1;
        case PadMode::Reflect:
            return p < 0 ? -p : 2 * (size - 1) - p;
        case PadMode::Replicate:
            return p < 0 ? 0 : size - 1;
    }
    return -1;
}

}  // namespace imr
