#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "error.h"

namespace imr {

namespace {

std::string size_str(const Image& im) {
    return std::to_string(im.width) + "x" + std::to_string(im.height) + "x" + std::to_string(im.color_channels());
}

}  // namespace

void check_comparable(const Image& reference, const Image& test, const std::string& what) {
    if (reference.bit_depth != 8 || test.bit_depth != 8)
        throw Error(what + ": metrics need 8-bit images (got " + std::to_string(reference.bit_depth) + " and " +
                    std::to_string(test.bit_depth) + " bits)");
    if (reference.width != test.width || reference.height != test.height ||
        reference.color_channels() != test.color_channels())
        throw Error(what + ": sizes differ (" + size_str(reference) + " vs " + size_str(test) + ")");
    if (reference.width <= 0 || reference.height <= 0) throw Error(what + ": empty image");
}

Image color_channels_as(const Image& image, int colors) {
    const int from = image.color_channels();
    if (from != 1 && from != 3) throw Error("metrics: " + std::to_string(image.channels) + " channels");
    if (colors != 1 && colors != 3) throw Error("metrics: cannot make " + std::to_string(colors) + " channels");
    if (from == 3 && colors == 1) throw Error("metrics: an RGB image cannot be compared as gray");
    Image out;
    out.width = image.width, out.height = image.height, out.channels = colors, out.bit_depth = image.bit_depth;
    out.allocate();
    with_samples(image, [&](const auto* in) {
        auto* o = out.data<sample_type<decltype(in)>>();
        for (size_t i = 0, n = size_t(image.width) * image.height; i < n; ++i)
            for (int c = 0; c < colors; ++c) o[i * colors + c] = in[i * image.channels + c % from];
    });
    return out;
}

double mse_8bit(const Image& reference, const Image& test) {
    check_comparable(reference, test, "mse");
    // Integer squared differences summed exactly: the MSE does not depend on
    // summation order (up to 2^64 / 255^2 samples).
    uint64_t sum = 0;
    const int colors = reference.color_channels();
    const size_t pixels = size_t(reference.width) * reference.height;
    const uint8_t *ref = reference.data<uint8_t>(), *got = test.data<uint8_t>();  // 8-bit: checked above
    for (size_t i = 0; i < pixels; ++i)
        for (int c = 0; c < colors; ++c) {
            int64_t d = int64_t(ref[i * reference.channels + c]) - got[i * test.channels + c];
            sum += uint64_t(d * d);
        }
    return double(sum) / double(pixels * colors);
}

double psnr_8bit(const Image& reference, const Image& test) {
    const double mse = mse_8bit(reference, test);
    if (mse == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(255.0 * 255.0 / mse);
}

std::vector<double> ssim_window_1d() {
    std::vector<double> k(kSsimWindow);
    double sum = 0;
    for (int i = 0; i < kSsimWindow; ++i) {
        double x = i - (kSsimWindow - 1) * 0.5;
        sum += k[i] = std::exp(-x * x / (2 * kSsimSigma * kSsimSigma));
    }
    for (double& v : k) v /= sum;
    return k;
}

double ssim_8bit(const Image& reference, const Image& test) {
    check_comparable(reference, test, "ssim");
    constexpr int K = kSsimWindow;
    const int w = reference.width, h = reference.height;
    if (w < K || h < K)
        throw Error("ssim: " + std::to_string(w) + "x" + std::to_string(h) + " is smaller than the " +
                    std::to_string(K) + "x" + std::to_string(K) + " window");
    const std::vector<double> k = ssim_window_1d();
    const int ow = w - K + 1, oh = h - K + 1;  // 'valid' positions
    const int colors = reference.color_channels();
    const uint8_t *ref = reference.data<uint8_t>(), *got = test.data<uint8_t>();  // 8-bit: checked above
    // The 2-D window is the outer product of k with itself, so each of the
    // five local sums (x, y, x^2, y^2, xy) is a row pass then a column pass.
    // A ring of the last K row-filtered lines keeps the memory at O(width)
    // per thread, whatever the image size. Row sums are stored and added in
    // order afterwards, so the result does not depend on the thread count.
    std::vector<double> row_sums(size_t(oh) * colors);
    constexpr int kChunk = 32;  // output rows per task; K-1 rows of overlap are re-filtered
    const int chunks = (oh + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic)
    for (int task = 0; task < chunks * colors; ++task) {
        const int c = task / chunks, y0 = (task % chunks) * kChunk, y1 = std::min(oh, y0 + kChunk);
        std::vector<double> ring(size_t(K) * 5 * ow);  // [line % K][map][x]
        auto filter_line = [&](int y) {
            double* dst = &ring[size_t(y % K) * 5 * ow];
            const uint8_t* a = ref + size_t(y) * w * reference.channels;
            const uint8_t* b = got + size_t(y) * w * test.channels;
            for (int x = 0; x < ow; ++x) {
                double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
                for (int j = 0; j < K; ++j) {
                    const double va = a[size_t(x + j) * reference.channels + c];
                    const double vb = b[size_t(x + j) * test.channels + c];
                    sa += k[j] * va, sb += k[j] * vb;
                    saa += k[j] * (va * va), sbb += k[j] * (vb * vb), sab += k[j] * (va * vb);
                }
                dst[x] = sa, dst[ow + x] = sb, dst[2 * ow + x] = saa, dst[3 * ow + x] = sbb, dst[4 * ow + x] = sab;
            }
        };
        for (int y = y0; y < y0 + K - 1; ++y) filter_line(y);
        for (int y = y0; y < y1; ++y) {
            filter_line(y + K - 1);
            double sum = 0;
            for (int x = 0; x < ow; ++x) {
                double m[5] = {0, 0, 0, 0, 0};
                for (int i = 0; i < K; ++i) {
                    const double* line = &ring[size_t((y + i) % K) * 5 * ow];
                    for (int q = 0; q < 5; ++q) m[q] += k[i] * line[q * ow + x];
                }
                const double mu1 = m[0], mu2 = m[1];
                const double s11 = m[2] - mu1 * mu1, s22 = m[3] - mu2 * mu2, s12 = m[4] - mu1 * mu2;
                sum += ((2 * mu1 * mu2 + kSsimC1) * (2 * s12 + kSsimC2)) /
                       ((mu1 * mu1 + mu2 * mu2 + kSsimC1) * (s11 + s22 + kSsimC2));
            }
            row_sums[size_t(c) * oh + y] = sum;
        }
    }
    double total = 0;
    for (int c = 0; c < colors; ++c) {
        double channel = 0;
        for (int y = 0; y < oh; ++y) channel += row_sums[size_t(c) * oh + y];
        total += channel / (double(ow) * oh);
    }
    return total / colors;
}

}  // namespace imr
