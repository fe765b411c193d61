#include "eval/noise_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace imr {

namespace {

// Bins of the two histograms (a median and a percentile by counting, in one
// pass each, with no copy of the image): the gradient in steps of 1/4 and
// the response in steps of 1/100 on the 0-255 scale.
constexpr double kGradientStep = 0.25, kResponseStep = 0.01;
constexpr double kEdgeShare = 0.10;     // the strongest gradients left out
constexpr uint64_t kMinWindows = 1000;  // fewest mid-range windows to estimate from (pass 3)

// The value below which `share` of the histogram's count lies (bin units).
double quantile(const std::vector<uint64_t>& histogram, double share) {
    uint64_t total = 0;
    for (uint64_t n : histogram) total += n;
    if (total == 0) return 0;
    const double target = share * double(total);
    uint64_t below = 0;
    for (size_t b = 0; b < histogram.size(); ++b) {
        if (double(below + histogram[b]) >= target) {
            // Linear within the bin.
            const double within = histogram[b] ? (target - double(below)) / double(histogram[b]) : 0;
            return double(b) + within;
        }
        below += histogram[b];
    }
    return double(histogram.size());
}

}  // namespace

double estimate_noise_sigma(const Image& image) {
    const int w = image.width, h = image.height, ch = image.channels, colors = image.color_channels();
    if (w < 3 || h < 3 || colors < 1) return 0;
    const uint16_t top = uint16_t(image.max_value());
    const double scale = 255.0 / top;
    // Each 3x3 window of channel c, at (x, y) its center: called for the
    // kept pixels with the Sobel gradient and the Immerkaer response.
    auto visit_windows = [&](const auto* samples, auto&& use) {
        using T = sample_type<decltype(samples)>;
        for (int c = 0; c < colors; ++c)
            for (int y = 1; y + 1 < h; ++y) {
                const T* rows[3];
                for (int k = 0; k < 3; ++k) rows[k] = samples + size_t(y - 1 + k) * w * ch + c;
                for (int x = 1; x + 1 < w; ++x) {
                    double v[3][3];
                    bool clipped = false;
                    for (int k = 0; k < 3; ++k)
                        for (int d = 0; d < 3; ++d) {
                            const T s = rows[k][size_t(x - 1 + d) * ch];
                            clipped |= s == 0 || s == top;
                            v[k][d] = s;
                        }
                    if (clipped) continue;
                    const double gx = (v[0][2] + 2 * v[1][2] + v[2][2]) - (v[0][0] + 2 * v[1][0] + v[2][0]);
                    const double gy = (v[2][0] + 2 * v[2][1] + v[2][2]) - (v[0][0] + 2 * v[0][1] + v[0][2]);
                    const double r = (v[0][0] + v[0][2] + v[2][0] + v[2][2]) -
                                     2 * (v[0][1] + v[1][0] + v[1][2] + v[2][1]) + 4 * v[1][1];
                    double sum = 0;
                    for (int k = 0; k < 3; ++k) sum += v[k][0] + v[k][1] + v[k][2];
                    use((std::abs(gx) + std::abs(gy)) * scale, std::abs(r) * scale / 6.0, sum * scale / 9.0);
                }
            }
    };
    auto visit = [&](auto&& use) { with_samples(image, [&](const auto* samples) { visit_windows(samples, use); }); };
    // Pass 1: the gradient below which 90% of the unclipped pixels lie.
    std::vector<uint64_t> gradients(size_t(8 * 255 / kGradientStep) + 2, 0);
    visit([&](double g, double, double) { ++gradients[std::min(size_t(g / kGradientStep), gradients.size() - 1)]; });
    const double edge = quantile(gradients, 1.0 - kEdgeShare) * kGradientStep;
    // Pass 2: the median response of the pixels below it, in windows whose
    // mean lies at least `margin` from 0 and 255.
    auto sigma = [&](double margin, uint64_t* count) {
        std::vector<uint64_t> responses(size_t(16 * 255 / 6 / kResponseStep) + 2, 0);
        visit([&](double g, double r, double mean) {
            if (g <= edge && mean >= margin && mean <= 255 - margin)
                ++responses[std::min(size_t(r / kResponseStep), responses.size() - 1)];
        });
        *count = 0;
        for (uint64_t n : responses) *count += n;
        return 1.482602218505602 * quantile(responses, 0.5) * kResponseStep;
    };
    uint64_t all = 0, mid = 0;
    const double first = sigma(0, &all);
    // Pass 3: where noise is clipped often (dark and bright areas at high
    // sigma), the windows left have had their noise truncated, which biases
    // the estimate low (10% at sigma 50 on photos): the windows whose mean is
    // at least two first estimates from either end, where clipping is rare,
    // if there are enough of them (the window's mean is independent of its
    // response for Gaussian noise: the masks are orthogonal).
    if (first < 2) return first;
    const double second = sigma(2 * first, &mid);
    return mid >= std::max<uint64_t>(kMinWindows, all / 20) ? second : first;
}

}  // namespace imr
