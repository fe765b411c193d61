// JPEG consistency (app/image/jpeg_projection.h): the projection against a
// float64 reference written here from JPEG's definitions (the DCT by its
// cosine sum, not a matrix), on odd sizes, every sampling layout libjpeg
// writes, gray, 8 and 16 bits and every EXIF orientation; then on real
// libjpeg files, where the clean photo lies in the set and a smoothed copy
// must come closer to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "image/codecs.h"
#include "image/image_io.h"
#include "image/jpeg_projection.h"
#include "image_test_files.h"
#include "test_util.h"

namespace {

using imr::Image;
using imr::JpegCoefficients;

Image random_image(std::mt19937& rng, int w, int h, int channels, int depth = 8) {
    Image im;
    im.width = w, im.height = h, im.channels = channels, im.bit_depth = depth;
    im.allocate();
    // Smooth ramps plus noise: coefficients at every frequency, most of them small.
    std::uniform_real_distribution<double> u(0, 1);
    const double a = u(rng) * 6, b = u(rng) * 6;
    std::normal_distribution<double> noise(0, 20);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                const double v = 128 + 80 * std::sin(a * x / w + b * y / h + c) + noise(rng);
                im.set_sample((size_t(y) * w + x) * channels + c,
                              uint16_t(std::clamp(std::lround(v), 0L, 255L) * (depth == 16 ? 257 : 1)));
            }
    return im;
}

// ---------------------------------------------------------------- the float64 reference

double basis(int u, int x) {
    return (u == 0 ? std::sqrt(0.125) : 0.5) * std::cos((2 * x + 1) * u * M_PI / 16);
}

// Component c's plane of `im` (file orientation), level-shifted, averaged
// over fx x fy boxes, as libjpeg encodes: each row's last pixel repeated out
// to whole blocks at full resolution before averaging, the last row out to
// whole row groups of max_v rows, then the last component row made repeated.
std::vector<double> ref_plane(const Image& im, int c, int fx, int fy, int max_v, int pw, int ph) {
    const double m[3][3] = {{0.299, 0.587, 0.114}, {-0.168736, -0.331264, 0.5}, {0.5, -0.418688, -0.081312}};
    const double scale = 255.0 / im.max_value();
    auto value = [&](int x, int y) {
        x = std::min(x, im.width - 1), y = std::min(y, im.height - 1);
        const size_t i = (size_t(y) * im.width + x) * im.channels;
        if (im.channels == 1) return im.sample(i) * scale;
        double v = 0;
        for (int k = 0; k < 3; ++k) v += m[c][k] * im.sample(i + k) * scale;
        return v;
    };
    const int made = (im.height + max_v - 1) / max_v * (max_v / fy);
    std::vector<double> p(size_t(pw) * ph);
    for (int y = 0; y < ph; ++y)
        for (int x = 0; x < pw; ++x) {
            const int sy = std::min(y, made - 1);
            double s = 0;
            for (int dy = 0; dy < fy; ++dy)
                for (int dx = 0; dx < fx; ++dx) s += value(x * fx + dx, sy * fy + dy);
            p[size_t(y) * pw + x] = s / (fx * fy) - (c == 0 ? 128 : 0);
        }
    return p;
}

// The change each block's clamp makes, by the DCT's sums.
std::vector<double> ref_change(const std::vector<double>& p, const JpegCoefficients::Component& comp) {
    const int pw = comp.blocks_wide * 8;
    std::vector<double> out(p.size(), 0);
    for (int by = 0; by < comp.blocks_high; ++by)
        for (int bx = 0; bx < comp.blocks_wide; ++bx) {
            double d[64];
            for (int v = 0; v < 8; ++v)
                for (int u = 0; u < 8; ++u) {
                    double f = 0;
                    for (int y = 0; y < 8; ++y)
                        for (int x = 0; x < 8; ++x)
                            f += basis(v, y) * basis(u, x) * p[size_t(by * 8 + y) * pw + bx * 8 + x];
                    const int i = v * 8 + u;
                    const double k = comp.k[(size_t(by) * comp.blocks_wide + bx) * 64 + i], q = comp.step[i];
                    d[i] = std::clamp(f, (k - 0.5) * q, (k + 0.5) * q) - f;
                }
            for (int y = 0; y < 8; ++y)
                for (int x = 0; x < 8; ++x) {
                    double s = 0;
                    for (int i = 0; i < 64; ++i) s += basis(i / 8, y) * basis(i % 8, x) * d[i];
                    out[size_t(by * 8 + y) * pw + bx * 8 + x] = s;
                }
        }
    return out;
}

// The projected image in doubles (before rounding), file orientation.
std::vector<double> ref_project(const Image& im, const JpegCoefficients& j) {
    std::vector<std::vector<double>> change;
    for (size_t c = 0; c < j.components.size(); ++c) {
        const auto& comp = j.components[c];
        const int fx = j.max_h / comp.h, fy = j.max_v / comp.v;
        change.push_back(
            ref_change(ref_plane(im, int(c), fx, fy, j.max_v, comp.blocks_wide * 8, comp.blocks_high * 8), comp));
    }
    std::vector<double> out(im.sample_count());
    const double scale = im.max_value() / 255.0;
    for (int y = 0; y < im.height; ++y)
        for (int x = 0; x < im.width; ++x) {
            double d[3] = {0, 0, 0};
            for (size_t c = 0; c < j.components.size(); ++c) {
                const auto& comp = j.components[c];
                const int fx = j.max_h / comp.h, fy = j.max_v / comp.v;
                d[c] = change[c][size_t(y / fy) * comp.blocks_wide * 8 + x / fx] * scale;
            }
            const double rgb[3] = {d[0] + 1.402 * d[2], d[0] - 0.344136 * d[1] - 0.714136 * d[2], d[0] + 1.772 * d[1]};
            for (int c = 0; c < im.channels; ++c) {
                const size_t i = (size_t(y) * im.width + x) * im.channels + c;
                out[i] = std::clamp(im.sample(i) + rgb[c], 0.0, double(im.max_value()));
            }
        }
    return out;
}

// Coefficients for `im` (file orientation) with random steps, each k the
// rounded coefficient of `near` (another image): many of im's coefficients
// fall outside their cells, by little and by much.
JpegCoefficients synthetic(std::mt19937& rng, const Image& near, int max_h, int max_v,
                           const std::vector<std::pair<int, int>>& factors) {
    JpegCoefficients j;
    j.width = near.width, j.height = near.height, j.max_h = max_h, j.max_v = max_v;
    std::uniform_int_distribution<int> step(1, 40);
    for (size_t c = 0; c < factors.size(); ++c) {
        JpegCoefficients::Component comp;
        comp.h = factors[c].first, comp.v = factors[c].second;
        const int fx = max_h / comp.h, fy = max_v / comp.v;
        const int cw = (near.width + fx - 1) / fx, ch = (near.height + fy - 1) / fy;
        comp.blocks_wide = (cw + 7) / 8, comp.blocks_high = (ch + 7) / 8;
        for (auto& s : comp.step) s = uint16_t(step(rng));
        const std::vector<double> p =
            ref_plane(near, int(c), fx, fy, max_v, comp.blocks_wide * 8, comp.blocks_high * 8);
        for (int by = 0; by < comp.blocks_high; ++by)
            for (int bx = 0; bx < comp.blocks_wide; ++bx)
                for (int i = 0; i < 64; ++i) {
                    double f = 0;
                    for (int y = 0; y < 8; ++y)
                        for (int x = 0; x < 8; ++x)
                            f += basis(i / 8, y) * basis(i % 8, x) *
                                 p[size_t(by * 8 + y) * comp.blocks_wide * 8 + bx * 8 + x];
                    comp.k.push_back(int16_t(std::lround(f / comp.step[i])));
                }
        j.components.push_back(std::move(comp));
    }
    return j;
}

struct Layout {
    const char* name;
    int channels, max_h, max_v;
    std::vector<std::pair<int, int>> factors;
};

const Layout kLayouts[] = {
    {"gray", 1, 1, 1, {{1, 1}}},
    {"4:4:4", 3, 1, 1, {{1, 1}, {1, 1}, {1, 1}}},
    {"4:2:0", 3, 2, 2, {{2, 2}, {1, 1}, {1, 1}}},
    {"4:2:2", 3, 2, 1, {{2, 1}, {1, 1}, {1, 1}}},
    {"4:4:0", 3, 1, 2, {{1, 2}, {1, 1}, {1, 1}}},
    {"4:1:1", 3, 4, 1, {{4, 1}, {1, 1}, {1, 1}}},
};

TEST(JpegProjection, MatchesFloat64ReferenceEveryLayoutDepthAndOrientation) {
    unsigned seed;
    std::mt19937 rng = imr::test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::pair<int, int> sizes[] = {{37, 29}, {8, 8}, {45, 17}, {1, 3}};
    for (const Layout& l : kLayouts)
        for (const auto& [w, h] : sizes)
            for (int depth : {8, 16})
                for (int orientation : {1, 6, 7}) {
                    SCOPED_TRACE(std::string(l.name) + " " + std::to_string(w) + "x" + std::to_string(h) + " depth " +
                                 std::to_string(depth) + " orientation " + std::to_string(orientation));
                    const Image file = random_image(rng, w, h, l.channels, depth);  // the file's orientation
                    JpegCoefficients j =
                        synthetic(rng, random_image(rng, w, h, l.channels), l.max_h, l.max_v, l.factors);
                    j.orientation = orientation;
                    const std::vector<double> want = ref_project(file, j);
                    Image got = imr::test::oriented(file, orientation);  // as the decoder turned it upright
                    imr::project_onto_jpeg(got, j);
                    const Image back = imr::test::oriented(got, orientation == 6 ? 8 : orientation);
                    ASSERT_EQ(back.width, w);
                    size_t off = 0, moved = 0;
                    for (size_t i = 0; i < want.size(); ++i) {
                        const double d = std::abs(back.sample(i) - std::nearbyint(want[i]));
                        // float against float64: a value within a hair of .5 may round the other way
                        ASSERT_LE(d, 1.0) << "sample " << i << ": " << back.sample(i) << " vs " << want[i];
                        // 16 bits: float's error at 65535 is a few hundredths of a level,
                        // so a sample within a quarter level of a tie is not counted
                        const double from_tie = std::abs(want[i] - std::floor(want[i]) - 0.5);
                        off += d != 0 && (depth != 16 || from_tie > 0.25);
                        moved += std::nearbyint(want[i]) != file.sample(i);
                    }
                    EXPECT_LE(off, want.size() / 50 + 2);
                    if (w * h >= 64) EXPECT_GT(moved, 0u) << "nothing was outside its cell: the case tests nothing";
                }
}

TEST(JpegProjection, RefusesAnImageThatIsNotTheFiles) {
    unsigned seed;
    std::mt19937 rng = imr::test::fresh_rng(&seed);
    const Image im = random_image(rng, 20, 12, 3);
    const JpegCoefficients j = synthetic(rng, im, 2, 2, {{2, 2}, {1, 1}, {1, 1}});
    Image wrong_size = random_image(rng, 12, 20, 3), gray = random_image(rng, 20, 12, 1);
    const Image before = wrong_size;
    EXPECT_THROW(imr::project_onto_jpeg(wrong_size, j), imr::Error);
    EXPECT_EQ(wrong_size.samples_u16(), before.samples_u16());  // an error leaves the image as it was
    EXPECT_THROW(imr::project_onto_jpeg(gray, j), imr::Error);
    JpegCoefficients turned = j;
    turned.orientation = 6;  // the upright image of a turned file is 12x20
    Image upright = random_image(rng, 12, 20, 3);
    EXPECT_NO_THROW(imr::project_onto_jpeg(upright, turned));
    Image file_way = random_image(rng, 20, 12, 3);
    const Image unturned = file_way;
    EXPECT_THROW(imr::project_onto_jpeg(file_way, turned), imr::Error);
    EXPECT_EQ(file_way.samples_u16(), unturned.samples_u16());
    // Inconsistent coefficients (not what libjpeg hands out) are refused, never indexed.
    for (auto spoil : std::vector<std::function<void(JpegCoefficients&)>>{
             [](JpegCoefficients& x) { x.max_h = 0; }, [](JpegCoefficients& x) { x.max_v = 5; },
             [](JpegCoefficients& x) { x.components[1].h = 3; },
             [](JpegCoefficients& x) { x.components[2].blocks_wide++; },
             [](JpegCoefficients& x) { x.components[0].k.pop_back(); },
             [](JpegCoefficients& x) { x.width = 1 << 30; }}) {
        JpegCoefficients bad = j;
        spoil(bad);
        Image im2 = before;
        im2.width = 20, im2.height = 12;
        EXPECT_THROW(imr::project_onto_jpeg(im2, bad), imr::Error);
    }
    EXPECT_THROW(imr::read_jpeg_coefficients("x.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0, 2, 1}), imr::Error);
}

#ifdef IMRESTORE_WITH_LIBJPEG
double psnr(const Image& a, const Image& b) {
    double se = 0;
    for (size_t i = 0; i < a.sample_count(); ++i) se += std::pow(double(a.sample(i)) - b.sample(i), 2);
    return 10 * std::log10(255.0 * 255.0 * a.sample_count() / std::max(se, 1e-9));
}

Image box_blur(const Image& a) {
    Image o = a;
    for (int y = 0; y < a.height; ++y)
        for (int x = 0; x < a.width; ++x)
            for (int c = 0; c < a.channels; ++c) {
                int s = 0, n = 0;
                for (int dy = -2; dy <= 2; ++dy)
                    for (int dx = -2; dx <= 2; ++dx) {
                        const int xx = std::clamp(x + dx, 0, a.width - 1), yy = std::clamp(y + dy, 0, a.height - 1);
                        s += a.sample((size_t(yy) * a.width + xx) * a.channels + c), ++n;
                    }
                o.set_sample((size_t(y) * a.width + x) * a.channels + c, uint16_t((s + n / 2) / n));
            }
    return o;
}

// Real files: libjpeg's own coefficients, as the tool reads them.
TEST(JpegProjection, OnLibjpegFilesTheCleanPhotoStaysAndASmoothedCopyComesCloser) {
    unsigned seed;
    std::mt19937 rng = imr::test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (int channels : {1, 3})
        for (int subsampling : {420, 444})
            for (int quality : {20, 60, 95})
                for (const auto& [w, h] : {std::pair{83, 61}, std::pair{84, 62}}) {  // even, not whole MCUs, too
                    if (channels == 1 && subsampling == 444) continue;
                    SCOPED_TRACE(std::to_string(channels) + " channel(s), " + std::to_string(subsampling) +
                                 ", quality " + std::to_string(quality) + ", " + std::to_string(w) + "x" +
                                 std::to_string(h));
                    const Image clean = random_image(rng, w, h, channels);
                    const std::vector<uint8_t> bytes =
                        imr::imageio::encode_libjpeg("c.jpg", clean, quality, subsampling);
                    const JpegCoefficients j = imr::read_jpeg_coefficients("c.jpg", bytes);
                    ASSERT_EQ(j.components.size(), size_t(channels));
                    EXPECT_EQ(j.width, w);
                    EXPECT_EQ(j.components[0].blocks_wide, (w + 7) / 8);
                    EXPECT_EQ(j.components.back().blocks_wide,
                              subsampling == 420 && channels == 3 ? (w + 15) / 16 : (w + 7) / 8);
                    // The clean photo was the encoder's input: inside its cells but for the
                    // encoder's rounding, the edge blocks too (padded as libjpeg pads).
                    Image same = clean;
                    imr::project_onto_jpeg(same, j);
                    int moved = 0;
                    for (size_t i = 0; i < same.sample_count(); ++i)
                        moved = std::max(moved, std::abs(int(same.sample(i)) - int(clean.sample(i))));
                    EXPECT_LE(moved, 2);
                    // The decoded JPEG is in the set too (up to the decoder's chroma upsampling).
                    const Image decoded = imr::decode_image("c.jpg", bytes);
                    Image again = decoded;
                    imr::project_onto_jpeg(again, j);
                    EXPECT_GT(psnr(again, decoded), 40.0);
                    // A smoothed copy comes no farther from the clean photo (the projection onto a
                    // convex set holding it; up to the rounding to 8 bits), and at quality 95,
                    // where the cells are narrow, much closer (less with 4:2:0, whose chroma
                    // detail the file does not hold).
                    const Image smooth = box_blur(decoded);
                    Image projected = smooth;
                    imr::project_onto_jpeg(projected, j);
                    EXPECT_GT(psnr(projected, clean), psnr(smooth, clean) - 0.05);
                    if (quality == 95)
                        EXPECT_GT(psnr(projected, clean),
                                  psnr(smooth, clean) + (subsampling == 420 && channels == 3 ? 1.5 : 5.0));
                }
}
#endif

}  // namespace
