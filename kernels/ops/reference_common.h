// The float64 oracle for every op: plain loops that are obviously correct,
// used by the tests (tests/test_ops.cpp) to judge every backend. Not fast, not
// for production. All tensors in the Args are in HOST memory here, whatever
// backend the data is later uploaded to. Each op's reference is declared in
// its own header (kernels/ops/NAME.h: reference_NAME) and defined beside its
// check_args; this file holds what they share.
//
// The whole-tensor functions are parallel over (batch, output channel) with
// OpenMP so the large GPU cases finish in seconds on a many-core host; the
// *_at functions compute one output element, for shapes too large to check
// in full (a few thousand randomly sampled elements instead).
//
// The convolutions are all written the same way: pad the input into a
// float64 copy (pad_planes), then a plain "valid" cross-correlation over that
// copy (correlate_padded). The single-element versions spell the sums out
// with reference_pad_index instead.
#pragma once

#include <memory>
#include <vector>

#include "conv2d.h"

namespace imr {

// The Args must pass check_args; the reference never writes a.output, so the
// tests may leave its data null (it is then checked as a separate tensor of
// its dtype and layout and the op's output shape, never read or written).
template <class Args>
void check_reference_args(Args a) {
    std::unique_ptr<unsigned char[]> stand_in;  // never touched: its pages are never committed
    if (!a.output) {
        a.output.shape = a.out_shape();
        stand_in.reset(new unsigned char[a.output.bytes()]);
        a.output.data = stand_in.get();
    }
    check_args(a);
}

// The values of a host tensor of any dtype and layout, as float64 in NCHW
// order (what every reference computes on).
std::vector<double> reference_values(const Tensor& t);
// Element (n, c, y, x) of a host tensor as float64.
inline double reference_value(const Tensor& t, int n, int c, int y, int x) {
    return double(load_float(t, t.offset(n, c, y, x)));
}

// Where padded coordinate p (in [-pad_before, size + pad_after)) reads from in
// an axis of `size` elements, or -1 for a zero. Zero: -1 outside [0, size);
// Reflect: mirror about the edge without repeating it (-1 -> 1); Replicate:
// clamp to the edge.
int reference_pad_index(int p, int size, PadMode mode);

// planes x [h, w] -> planes x [h + pb + pa, w + pb + pa] in float64.
template <class T>
std::vector<double> pad_planes(const T* in, int planes, int h, int w, int pb, int pa, PadMode mode) {
    const int hp = h + pb + pa, wp = w + pb + pa;
    std::vector<double> out(size_t(planes) * hp * wp);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < planes; ++p) {
        const T* src = in + size_t(p) * h * w;
        double* dst = out.data() + size_t(p) * hp * wp;
        for (int y = 0; y < hp; ++y) {
            const int sy = reference_pad_index(y - pb, h, mode);
            for (int x = 0; x < wp; ++x) {
                const int sx = reference_pad_index(x - pb, w, mode);
                dst[size_t(y) * wp + x] = (sy < 0 || sx < 0) ? 0.0 : double(src[size_t(sy) * w + sx]);
            }
        }
    }
    return out;
}

// out[n, co, y, x] = bias[co] + sum over ci, ky, kx of
//                    weight[co, ci, ky, kx] * padded[n, ci, y + ky, x + kx]
// with padded [n, cin, hp, wp] and out [n, cout, hp - k + 1, wp - k + 1].
std::vector<double> correlate_padded(const std::vector<double>& padded, int n, int cin, int hp, int wp,
                                     const float* weight, const float* bias, int cout, int k);

}  // namespace imr
