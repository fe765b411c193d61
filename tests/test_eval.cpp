// app/eval/: the metrics against independent float64 references, the
// degradations against their definitions (and pinned values, so the noise of
// a seed stays the same across builds), and `imrestore degrade` / `imrestore
// eval` end to end on samples/. Fast on purpose (a few seconds on 2 cores).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli_run.h"
#include "eval/degradations.h"
#include "eval/metrics.h"
#include "eval/noise_estimate.h"
#include "image/jpeg_projection.h"
#include "image/jpeg_quality.h"
#include "report/json_document.h"
#include "sample_edit.h"
#include "test_util.h"

namespace imr {
namespace {

namespace fs = std::filesystem;
using test::imrestore;
using test::q;
using test::RunResult;
using test::ScratchDir;
using test::slurp;

Image make_image(int w, int h, int channels, uint16_t value = 0) {
    Image im;
    im.width = w, im.height = h, im.channels = channels, im.bit_depth = 8;
    im.assign_samples(std::vector<uint16_t>(size_t(w) * h * channels, value));
    return im;
}

Image random_image(std::mt19937& rng, int w, int h, int channels) {
    Image im = make_image(w, h, channels);
    std::uniform_int_distribution<int> d(0, 255);
    test::edit_samples(im, [&](uint16_t& v) { v = uint16_t(d(rng)); });
    return im;
}

// A photo-like test card: smooth gradients plus a few edges and texture.
Image test_card(int w, int h, int channels) {
    Image im = make_image(w, h, channels);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                double v = 40 + 150.0 * x / w + 30 * std::sin(y * 0.3 + c) + ((x / 8 + y / 8) % 2 ? 20 : 0);
                im.set_sample((size_t(y) * w + x) * channels + c, uint16_t(std::clamp(v, 0.0, 255.0)));
            }
    return im;
}

// ---------------------------------------------------------------- metrics

TEST(Metrics, PsnrOfAKnownMse) {
    Image a = make_image(16, 9, 3, 100), b = a;
    test::edit_samples(b, [&](uint16_t& v) { v += 5; });  // MSE 25
    EXPECT_DOUBLE_EQ(mse_8bit(a, b), 25.0);
    EXPECT_NEAR(psnr_8bit(a, b), 10 * std::log10(255.0 * 255 / 25), 1e-12);
    Image c = a;
    for (size_t i = 0; i < c.sample_count(); i += 2) c.set_sample(i, 97);  // half the samples off by 3: MSE 4.5
    EXPECT_NEAR(psnr_8bit(a, c), 10 * std::log10(255.0 * 255 / 4.5), 1e-12);
    EXPECT_TRUE(std::isinf(psnr_8bit(a, a)));
    Image alpha = make_image(16, 9, 4, 100), alpha2 = alpha;  // alpha is not a color sample
    for (size_t i = 3; i < alpha2.sample_count(); i += 4) alpha2.set_sample(i, 0);
    EXPECT_TRUE(std::isinf(psnr_8bit(alpha, alpha2)));
    EXPECT_THROW(psnr_8bit(a, make_image(16, 8, 3)), Error);
}

// SSIM the straightforward way: the 2-D window as the outer product of an
// independently computed 1-D Gaussian, every valid position, every channel.
double direct_ssim(const Image& a, const Image& b) {
    double g[11], gs = 0;
    for (int i = 0; i < 11; ++i) gs += g[i] = std::exp(-(i - 5.0) * (i - 5.0) / 4.5);
    const double c1 = std::pow(0.01 * 255, 2), c2 = std::pow(0.03 * 255, 2);
    double total = 0;
    for (int c = 0; c < a.channels; ++c) {
        double sum = 0;
        for (int y = 0; y + 11 <= a.height; ++y)
            for (int x = 0; x + 11 <= a.width; ++x) {
                double m1 = 0, m2 = 0, e11 = 0, e22 = 0, e12 = 0;
                for (int i = 0; i < 11; ++i)
                    for (int j = 0; j < 11; ++j) {
                        double w = g[i] * g[j] / (gs * gs);
                        double p = a.sample((size_t(y + i) * a.width + x + j) * a.channels + c);
                        double q = b.sample((size_t(y + i) * b.width + x + j) * b.channels + c);
                        m1 += w * p, m2 += w * q, e11 += w * p * p, e22 += w * q * q, e12 += w * p * q;
                    }
                double v1 = e11 - m1 * m1, v2 = e22 - m2 * m2, v12 = e12 - m1 * m2;
                sum += (2 * m1 * m2 + c1) * (2 * v12 + c2) / ((m1 * m1 + m2 * m2 + c1) * (v1 + v2 + c2));
            }
        total += sum / (double(a.width - 10) * (a.height - 10));
    }
    return total / a.channels;
}

TEST(Metrics, SsimMatchesADirectImplementation) {
    std::mt19937 rng(42);
    for (auto [w, h, ch] : {std::tuple{37, 23, 3}, {19, 31, 1}, {11, 11, 3}, {45, 70, 3}}) {
        Image a = random_image(rng, w, h, ch), b = a;
        std::normal_distribution<double> noise(0, 30);
        test::edit_samples(b, [&](uint16_t& v) { v = uint16_t(std::clamp(std::lround(v + noise(rng)), 0L, 255L)); });
        const double expected = direct_ssim(a, b);
        EXPECT_NEAR(ssim_8bit(a, b), expected, 1e-10) << w << "x" << h << "x" << ch;
        EXPECT_GT(expected, 0.05);
        EXPECT_LT(expected, 0.95);
    }
}

TEST(Metrics, SsimOfIdenticalAndConstantImages) {
    std::mt19937 rng(7);
    Image a = random_image(rng, 33, 29, 3);
    EXPECT_NEAR(ssim_8bit(a, a), 1.0, 1e-12);
    // Two flat images: only the luminance term is left, (2ab + C1) / (a^2 + b^2 + C1).
    Image p = make_image(20, 15, 3, 100), q = make_image(20, 15, 3, 110);
    EXPECT_NEAR(ssim_8bit(p, q), (2.0 * 100 * 110 + kSsimC1) / (100.0 * 100 + 110.0 * 110 + kSsimC1), 1e-12);
    EXPECT_THROW(ssim_8bit(make_image(10, 40, 3), make_image(10, 40, 3)), Error);
    // Gray counts as R=G=B.
    Image g = random_image(rng, 25, 25, 1), g2 = random_image(rng, 25, 25, 1);
    EXPECT_NEAR(ssim_8bit(color_channels_as(g, 3), color_channels_as(g2, 3)), ssim_8bit(g, g2), 1e-12);
    EXPECT_NEAR(psnr_8bit(color_channels_as(g, 3), color_channels_as(g2, 3)), psnr_8bit(g, g2), 1e-12);
}

// ---------------------------------------------------------------- degradations

TEST(Degradations, GeneratorIsPinned) {
    // Values from an independent Python implementation of splitmix64 +
    // xoshiro256** + Box-Muller: a change here changes every noisy image.
    NormalRng zero(0);
    EXPECT_EQ(zero.next_u64(), 0x99ec5f36cb75f2b4ull);
    EXPECT_EQ(zero.next_u64(), 0xbf6e1f784956452aull);
    EXPECT_EQ(zero.next_u64(), 0x1a5f849d4933e6e0ull);
    NormalRng normal(12345);
    EXPECT_NEAR(normal.next_normal(), 0.5265157735324959, 1e-15);
    EXPECT_NEAR(normal.next_normal(), 0.5610039085910467, 1e-15);
    EXPECT_EQ(image_noise_seed(7, "some/folder/chelsea.png"), 0x701420005c80fdcull);
    EXPECT_EQ(image_noise_seed(7, "chelsea.png"), image_noise_seed(7, "other/chelsea.png"));
    EXPECT_NE(image_noise_seed(7, "chelsea.png"), image_noise_seed(8, "chelsea.png"));
    EXPECT_NE(image_noise_seed(7, "chelsea.png"), image_noise_seed(7, "coffee.png"));
}

TEST(Degradations, NoiseStatisticsOnAFlatImage) {
    Image im = make_image(512, 512, 3, 128);
    add_gaussian_noise(im, 25, 1);
    double sum = 0, sq = 0;
    for (uint16_t v : im.samples_u16()) sum += v - 128.0, sq += (v - 128.0) * (v - 128.0);
    const double n = double(im.sample_count()), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.15);  // standard error 0.03
    EXPECT_NEAR(sd, 25.0, 0.15);   // rounding adds 1/12 to the variance: 25.002
    Image zero = make_image(8, 8, 3, 128);
    add_gaussian_noise(zero, 0, 1);
    EXPECT_EQ(zero.samples_u16(), make_image(8, 8, 3, 128).samples_u16()) << "sigma 0 is the identity";
}

TEST(Degradations, NoiseIsReproducibleAndLeavesAlpha) {
    Image a = test_card(40, 30, 4), b = a, c = a;
    add_gaussian_noise(a, 15, 99);
    add_gaussian_noise(b, 15, 99);
    add_gaussian_noise(c, 15, 100);
    EXPECT_EQ(a.samples_u16(), b.samples_u16());
    EXPECT_NE(a.samples_u16(), c.samples_u16());
    Image clean = test_card(40, 30, 4);
    for (size_t i = 3; i < a.sample_count(); i += 4) ASSERT_EQ(a.sample(i), clean.sample(i));
    // The spec literally: round(clip(x + s/255 n, 0, 1) * 255), same draws in memory order.
    Image d = test_card(5, 4, 3), expect = d;
    add_gaussian_noise(d, 40, 5);
    NormalRng rng(5);
    test::edit_samples(expect, [&](uint16_t& v) {
        v = uint16_t(std::nearbyint(std::clamp(v / 255.0 + 40 / 255.0 * rng.next_normal(), 0.0, 1.0) * 255));
    });
    EXPECT_EQ(d.samples_u16(), expect.samples_u16());
}

TEST(Degradations, BlurOfAnImpulseIsTheNormalizedGaussian) {
    for (double sigma : {0.4, 1.0, 1.5, 2.2}) {
        const int r = int(std::ceil(3 * sigma)), n = 2 * r + 9;
        std::vector<double> g(2 * r + 1);
        double sum = 0;
        for (int d = -r; d <= r; ++d) sum += g[d + r] = std::exp(-d * d / (2 * sigma * sigma));
        Image im = make_image(n, n, 1);
        im.set_sample(size_t(n / 2) * n + n / 2, 255);
        gaussian_blur(im, sigma);
        for (int y = 0; y < n; ++y)
            for (int x = 0; x < n; ++x) {
                int dy = y - n / 2, dx = x - n / 2;
                double e = std::abs(dx) <= r && std::abs(dy) <= r ? 255 * g[dx + r] * g[dy + r] / (sum * sum) : 0;
                ASSERT_LE(std::abs(im.sample(size_t(y) * n + x) - e), 0.5 + 1e-9)
                    << "sigma " << sigma << " at " << x << "," << y;
            }
    }
    // Reflect-101 at the border: an impulse at x=1 of a 1-row image reaches
    // x=0 from both sides (offsets -1 and +1 both land on x=1), and x=1 from
    // itself and from x=-1 (offset -2), which mirrors onto x=1.
    Image row = make_image(7, 1, 1);
    row.set_sample(1, 200);
    gaussian_blur(row, 1.0);
    const std::vector<double> k = gaussian_kernel(1.0);
    EXPECT_EQ(row.sample(0), uint16_t(std::nearbyint(200 * 2 * k[3 + 1])));
    EXPECT_EQ(row.sample(1), uint16_t(std::nearbyint(200 * (k[3] + k[3 - 2]))));
}

TEST(Degradations, JpegChangesTheImageDeterministically) {
    for (int channels : {1, 3, 4}) {
        Image clean = test_card(64, 48, channels), a = clean, b = clean;
        jpeg_round_trip(a, 20);
        jpeg_round_trip(b, 20);
        EXPECT_EQ(a.samples_u16(), b.samples_u16());
        EXPECT_NE(a.samples_u16(), clean.samples_u16());
        EXPECT_EQ(a.channels, channels);
        double diff = 0;
        for (size_t i = 0; i < a.sample_count(); ++i) diff += std::abs(int(a.sample(i)) - int(clean.sample(i)));
        EXPECT_LT(diff / a.sample_count(), 20) << "JPEG q20 should look like its input";
        if (channels == 4)
            for (size_t i = 3; i < a.sample_count(); i += 4) ASSERT_EQ(a.sample(i), clean.sample(i));
        Image high = clean;
        jpeg_round_trip(high, 95);
        EXPECT_GT(psnr_8bit(clean, high), psnr_8bit(clean, a));
    }
}

TEST(Degradations, CombinedInOrderBlurNoiseJpeg) {
    Image clean = test_card(50, 40, 3);
    Degradation d;
    d.blur = 1.2, d.noise = 10, d.jpeg = 50;
    Image manual = clean;
    gaussian_blur(manual, 1.2);
    add_gaussian_noise(manual, 10, 3);
    jpeg_round_trip(manual, 50);
    EXPECT_EQ(degrade(clean, d, 3).samples_u16(), manual.samples_u16());
    EXPECT_EQ(d.describe(), "blur 1.2, noise 10, jpeg 50");
    const Image sixteen = test::with_depth(clean, 16, [](uint16_t v) { return v * 257; });
    EXPECT_EQ(to_8bit(sixteen).samples_u16(), clean.samples_u16());
    Degradation bad;
    bad.noise = -1;
    EXPECT_THROW(bad.validate(), Error);
}

TEST(Degradations, SubsamplingChangesTheJpegOfColorOnly) {
    Image color = test_card(64, 48, 3), gray = test_card(64, 48, 1);
    Image c420 = color, c444 = color, g420 = gray, g444 = gray;
    jpeg_round_trip(c420, 30);
    jpeg_round_trip(c444, 30, 444);
    EXPECT_NE(c420.samples_u16(), c444.samples_u16());
    // 4:4:4 keeps the color sharper: closer to the input.
    EXPECT_GT(psnr_8bit(color, c444), psnr_8bit(color, c420));
    jpeg_round_trip(g420, 30);
    jpeg_round_trip(g444, 30, 444);
    EXPECT_EQ(g420.samples_u16(), g444.samples_u16());
    Degradation d;
    d.jpeg = 30, d.subsampling = 444;
    EXPECT_EQ(degrade(color, d, 0).samples_u16(), c444.samples_u16());
    EXPECT_EQ(d.describe(), "jpeg 30 4:4:4");
    d.subsampling = 422;
    EXPECT_THROW(d.validate(), Error);
}

// --validate-precision measures each task at the kinds of degradation of its
// README row: a photo model on the photo mix (each photo its own draw), not
// on clean photos.
TEST(Degradations, EachTaskHasItsStandardDegradations) {
    auto described = [](const std::string& task) {
        std::vector<std::string> out;
        for (const Degradation& d : task_standard_degradations(task)) out.push_back(d.describe());
        return out;
    };
    EXPECT_EQ(described("denoise"), (std::vector<std::string>{"noise 15", "noise 25", "noise 50"}));
    EXPECT_EQ(described("deblock"), (std::vector<std::string>{"jpeg 10", "jpeg 20", "jpeg 30", "jpeg 40"}));
    EXPECT_EQ(described("deblur"), (std::vector<std::string>{"blur 1.5, noise 2"}));
    EXPECT_EQ(described("photo"), (std::vector<std::string>{"mix photo"}));
    EXPECT_EQ(described("sharpen"), (std::vector<std::string>{"none"}));
}

// A smooth image (a ramp plus a slow wave per channel, within 60..195 so
// that noise up to sigma 30 is seldom clipped) with Gaussian noise of a
// fresh seed: the estimate is within 5% + 0.3 of the sigma.
TEST(NoiseEstimate, WithinToleranceOnSyntheticNoise) {
    unsigned seed;
    std::mt19937 rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int w = 192, h = 160;
    Image clean = make_image(w, h, 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c)
                clean.set_sample(
                    (size_t(y) * w + x) * 3 + c,
                    uint16_t(std::lround(90 + 0.15 * x + 0.1 * y + 20 * std::sin(0.05 * x + 0.03 * y + c))));
    EXPECT_LT(estimate_noise_sigma(clean), 0.5) << "a smooth image without noise";
    for (double sigma : {2.0, 5.0, 15.0, 30.0}) {
        Image noisy = clean;
        std::normal_distribution<double> n(0, sigma);
        test::edit_samples(noisy, [&](uint16_t& v) { v = uint16_t(std::clamp(std::lround(v + n(rng)), 0L, 255L)); });
        const double estimate = estimate_noise_sigma(noisy);
        EXPECT_NEAR(estimate, sigma, 0.05 * sigma + 0.3) << "sigma " << sigma;
        // the same on 16-bit samples
        const Image sixteen = test::with_depth(noisy, 16, [](uint16_t v) { return v * 257; });
        EXPECT_NEAR(estimate_noise_sigma(sixteen), estimate, 0.02);
    }
    EXPECT_EQ(estimate_noise_sigma(make_image(2, 2, 3, 100)), 0);
}

// The quality read back from the quantization tables of the tool's own
// JPEGs is the quality they were written at; other bytes have none.
TEST(JpegQuality, ReadsTheQualityOfLibjpegTables) {
    const Image color = test_card(40, 32, 3), gray = test_card(40, 32, 1);
    for (int quality : {5, 20, 49, 50, 75, 95, 100}) {
        WriteOptions o;
        o.jpeg_quality = quality;
        for (const Image* image : {&color, &gray}) {
            const std::optional<JpegQuality> q = jpeg_quality(encode_image("x.jpg", *image, o));
            ASSERT_TRUE(q) << quality;
            EXPECT_EQ(q->quality, quality);
            EXPECT_EQ(q->mismatch, 0);
        }
    }
    EXPECT_FALSE(jpeg_quality(encode_image("x.png", color, WriteOptions{})));
    EXPECT_FALSE(jpeg_quality({0xFF, 0xD8, 0xFF, 0xD9}));
    EXPECT_FALSE(jpeg_quality({}));
}

// A photo JPEG'd at quality Q and decoded (no tables left) reads about Q
// from its pixels, at 8 and 16 bits. Where no 8x8 grid of quantized blocks
// is to be seen, it reads as a high quality: the same decoded JPEG cropped by
// 3 columns (its blocks off the grid), and an image never compressed (noise
// over a gradient). An image under 8x8 pixels has no estimate.
TEST(JpegQuality, IsEstimatedFromTheDecodedPixels) {
    const Image photo = read_image(std::string(IMRESTORE_SAMPLES) + "/coffee.png");  // 451x300 RGB
    auto crop_left = [](const Image& im, int cols) {
        Image out = im;
        out.width -= cols;
        out.allocate();
        for (int y = 0; y < out.height; ++y)
            for (int x = 0; x < out.width; ++x)
                for (int c = 0; c < im.channels; ++c)
                    out.set_sample((size_t(y) * out.width + x) * im.channels + c,
                                   im.sample((size_t(y) * im.width + x + cols) * im.channels + c));
        return out;
    };
    for (int quality : {10, 30, 60, 85}) {
        WriteOptions o;
        o.jpeg_quality = quality;
        const Image decoded = decode_image("x.jpg", encode_image("x.jpg", photo, o));
        const std::optional<JpegQuality> q = estimate_jpeg_quality(decoded);
        ASSERT_TRUE(q) << quality;
        EXPECT_NEAR(q->quality, quality, 3) << "mismatch " << q->mismatch;
        const Image sixteen = test::with_depth(decoded, 16, [](uint16_t v) { return v * 257; });
        EXPECT_EQ(estimate_jpeg_quality(sixteen)->quality, q->quality) << quality;
        if (quality <= 60) EXPECT_GE(estimate_jpeg_quality(crop_left(decoded, 3))->quality, 90) << quality;
    }
    unsigned seed;
    std::mt19937 rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::normal_distribution<double> n(0, 12);
    Image never = make_image(200, 120, 3, 0);
    for (size_t i = 0; i < never.sample_count(); ++i)
        never.set_sample(i, uint16_t(std::clamp(std::lround(60 + double(i % 600) / 6 + n(rng)), 0L, 255L)));
    EXPECT_GE(estimate_jpeg_quality(never)->quality, 90);
    EXPECT_FALSE(estimate_jpeg_quality(make_image(7, 9, 3, 100)));
}

// ---------------------------------------------------------------- the commands, end to end

TEST(EvalCli, DegradeSubsamplingAndNoiseEstimateInItsJson) {
    ScratchDir dir("eval");
    const std::string in = std::string(IMRESTORE_SAMPLES) + "/chelsea.png";
    RunResult a = imrestore("degrade " + q(in) + " -o " + q(dir / "a.png") + " --jpeg 30 --json", dir);
    ASSERT_EQ(a.code, 0) << a.err;
    RunResult b = imrestore(
        "degrade " + q(in) + " -o " + q(dir / "b.png") + " --jpeg 30 --subsampling 444 --json --estimate-noise", dir);
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_NE(slurp(dir / "a.png"), slurp(dir / "b.png"));
    const Json ja = Json::parse(a.out), jb = Json::parse(b.out);
    EXPECT_EQ(ja["degradation"]["subsampling"], "420");
    EXPECT_EQ(jb["degradation"]["subsampling"], "444");
    EXPECT_FALSE(ja["files"][0].contains("levels"));
    EXPECT_EQ(jb["files"][0]["levels"][0]["name"], "noise_level");
    EXPECT_EQ(jb["files"][0]["levels"][0]["source"], "estimated");
    // The JPEG quality of what it wrote, from its pixels (coffee, 451x300:
    // chelsea's fur and blur are one of the estimator's misses, 30 -> 15).
    const std::string coffee = std::string(IMRESTORE_SAMPLES) + "/coffee.png";
    RunResult quality = imrestore(
        "degrade " + q(coffee) + " -o " + q(dir / "e.png") + " --jpeg 30 --json --estimate-jpeg-quality", dir);
    ASSERT_EQ(quality.code, 0) << quality.err;
    const Json level = Json::parse(quality.out)["files"][0]["levels"][0];
    EXPECT_EQ(level["name"], "jpeg_quality");
    EXPECT_EQ(level["source"], "estimated");
    EXPECT_NEAR(level["value"].get<double>(), 30, 3);
    RunResult bad = imrestore("degrade " + q(in) + " -o " + q(dir / "c.png") + " --jpeg 30 --subsampling 422", dir);
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.err.find("--subsampling"), std::string::npos) << bad.err;
}

// A JPEG output of a degradation ending in the JPEG round trip is that
// round trip's own file: it decodes to the pixels the PNG output holds (not
// a second encoding of them), and eval on it with --degraded measures what
// eval degrading itself measures, projection included (one file: the same
// bytes, the same cells).
TEST(EvalCli, DegradeToAJpegWritesTheRoundTripsOwnFile) {
    ScratchDir dir("eval");
    const std::string samples = IMRESTORE_SAMPLES;
    fs::create_directories(dir / "clean");
    fs::copy_file(samples + "/coffee.png", dir / "clean/coffee.png");
    for (const char* out : {"q30.png", "q30/coffee.jpg"}) {
        RunResult r = imrestore("degrade " + q(dir / "clean/coffee.png") + " -o " + q(dir / out) + " --jpeg 30", dir);
        ASSERT_EQ(r.code, 0) << r.err;
    }
    const Image png = read_image(dir / "q30.png"), jpg = read_image(dir / "q30/coffee.jpg");
    ASSERT_EQ(png.byte_size(), jpg.byte_size());
    EXPECT_EQ(png.samples_u16(), jpg.samples_u16()) << "the .jpg is not the round trip's file";
    RunResult own =
        imrestore("eval " + q(dir / "clean") + " -m deblock-fast --jpeg 30 -d cpu --json --baselines none", dir);
    RunResult given = imrestore("eval " + q(dir / "clean") + " -m deblock-fast --degraded " + q(dir / "q30") +
                                    " -d cpu --json --baselines none",
                                dir);
    ASSERT_EQ(own.code, 0) << own.err;
    ASSERT_EQ(given.code, 0) << given.err;
    const Json a = Json::parse(own.out)["mean"]["psnr"], b = Json::parse(given.out)["mean"]["psnr"];
    EXPECT_DOUBLE_EQ(a["input"].get<double>(), b["input"].get<double>());
    EXPECT_DOUBLE_EQ(a["model"].get<double>(), b["model"].get<double>());
    // The photo's ICC profile goes into that file as write_image would put it
    // (rocket.jpg holds one), and an image with alpha is still refused for a JPEG.
    const Image rocket = read_image(samples + "/rocket.jpg");
    ASSERT_FALSE(rocket.metadata.icc.empty());
    RunResult r = imrestore("degrade " + q(samples + "/rocket.jpg") + " -o " + q(dir / "r90.jpg") + " --jpeg 90", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(read_image(dir / "r90.jpg").metadata.icc, rocket.metadata.icc);
    write_image(dir / "rgba.png", make_image(64, 48, 4, 100));
    RunResult alpha = imrestore("degrade " + q(dir / "rgba.png") + " -o " + q(dir / "a.jpg") + " --jpeg 30", dir);
    EXPECT_NE(alpha.code, 0);
    EXPECT_NE(alpha.err.find("alpha"), std::string::npos) << alpha.err;
    EXPECT_FALSE(fs::exists(dir / "a.jpg"));
}

// The number after "key": in a JSON text, from position `from`.
double json_value(const std::string& json, const std::string& key, size_t from = 0) {
    size_t at = json.find("\"" + key + "\": ", from);
    if (at == std::string::npos) return NAN;
    return std::atof(json.c_str() + at + key.size() + 4);
}

TEST(EvalCli, DegradeThenEvalAgreeWithEvalDegrading) {
    ScratchDir dir("eval");
    const std::string samples = IMRESTORE_SAMPLES;
    RunResult deg = imrestore("degrade " + q(samples) + " -o " + q(dir / "noisy") + " --noise 25 --seed 3", dir);
    ASSERT_EQ(deg.code, 0) << deg.err;
    for (const char* name : {"camera.png", "chelsea.png", "coffee.png", "rocket.png"})
        EXPECT_TRUE(fs::exists(dir / ("noisy/" + std::string(name)))) << name << "\n" << deg.out;
    Image noisy = read_image(dir / "noisy/chelsea.png"), clean = read_image(samples + "/chelsea.png");
    EXPECT_NEAR(psnr_8bit(clean, noisy), 20.3, 0.5);
    RunResult again = imrestore("degrade " + q(samples) + " -o " + q(dir / "noisy") + " --noise 25 --seed 3", dir);
    EXPECT_EQ(again.code, 0);
    EXPECT_NE(again.err.find("skipped"), std::string::npos) << "existing outputs are skipped without --force";
    RunResult nothing = imrestore("degrade " + q(samples) + " -o " + q(dir / "x"), dir);
    EXPECT_EQ(nothing.code, 2);
    EXPECT_NE(nothing.err.find("nothing to do"), std::string::npos) << nothing.err;

    // eval degrading itself (the same seed) and eval on the files degrade wrote
    // measure the same pixels.
    RunResult own = imrestore("eval " + q(samples) + " -m sharpen --noise 25 --seed 3 -d cpu --json", dir);
    ASSERT_EQ(own.code, 0) << own.err;
    EXPECT_NE(own.out.find("\"subsampling\": \"none\""), std::string::npos) << own.out;
    RunResult given = imrestore(
        "eval " + q(samples) + " -m sharpen --degraded " + q(dir / "noisy") + " -d cpu --json --baselines none", dir);
    ASSERT_EQ(given.code, 0) << given.err;
    for (const RunResult* r : {&own, &given}) {
        for (const char* field : {"\"methods\"", "\"images\"", "\"mean\"", "\"psnr\"", "\"ssim\"", "\"time_ms\"",
                                  "\"input\"", "\"model\"", "\"degradation\""})
            EXPECT_NE(r->out.find(field), std::string::npos) << field << " missing in\n" << r->out;
        EXPECT_EQ(json_value(r->out, "images", r->out.find("\"mean\"")), 4);
        EXPECT_EQ(json_value(r->out, "failed"), 0);
    }
    const size_t own_mean = own.out.find("\"mean\""), given_mean = given.out.find("\"mean\"");
    EXPECT_NEAR(json_value(own.out, "input", own_mean), 20.5, 0.5);
    EXPECT_DOUBLE_EQ(json_value(own.out, "input", own_mean), json_value(given.out, "input", given_mean));
    EXPECT_DOUBLE_EQ(json_value(own.out, "model", own_mean), json_value(given.out, "model", given_mean));
    if (opencv_available()) {  // noise: gaussian, bilateral and nlmeans, each with its chosen setting
        for (const char* b : {"\"gaussian\"", "\"bilateral\"", "\"nlmeans\"", "\"chosen\"", "\"sweep\""})
            EXPECT_NE(own.out.find(b), std::string::npos) << b << " missing in\n" << own.out;
        EXPECT_GT(json_value(own.out, "nlmeans", own_mean), json_value(own.out, "input", own_mean) + 3);
    } else {
        EXPECT_NE(own.out.find("no classical baselines"), std::string::npos) << own.out;
    }

    // A missing pair fails that image only.
    fs::remove(dir / "noisy/coffee.png");
    RunResult missing = imrestore(
        "eval " + q(samples) + " -m sharpen --degraded " + q(dir / "noisy") + " -d cpu --baselines none --json", dir);
    EXPECT_EQ(missing.code, 1);
    EXPECT_NE(missing.err.find("coffee.png"), std::string::npos) << missing.err;
    EXPECT_NE(missing.err.find("no degraded partner"), std::string::npos) << missing.err;
    EXPECT_EQ(json_value(missing.out, "images", missing.out.find("\"mean\"")), 3);
    EXPECT_EQ(json_value(missing.out, "failed"), 1);
}

// eval projects the model's output for its own JPEGs as restoring does
// (--jpeg-projection; auto: for deblocking models), gray and color alike,
// and says so; the projection never takes the output farther from the clean image.
TEST(EvalCli, ProjectsTheModelsOutputOntoItsJpegAsRestoringDoes) {
    if (!jpeg_projection_available()) GTEST_SKIP() << "no libjpeg in this build";
    ScratchDir dir("eval-projection");
    const std::string samples = IMRESTORE_SAMPLES, args = " -m sharpen --jpeg 30 -d cpu --json --baselines none";
    RunResult on = imrestore("eval " + q(samples) + args + " --jpeg-projection on", dir);
    RunResult off = imrestore("eval " + q(samples) + args, dir);  // auto: sharpen is no deblocker
    ASSERT_EQ(on.code, 0) << on.err;
    ASSERT_EQ(off.code, 0) << off.err;
    const nlohmann::json a = nlohmann::json::parse(on.out), b = nlohmann::json::parse(off.out);
    EXPECT_EQ(a["model"]["jpeg_projection"], true);
    EXPECT_EQ(b["model"]["jpeg_projection"], false);
    ASSERT_EQ(a["images"].size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        SCOPED_TRACE(a["images"][i]["name"].get<std::string>());
        EXPECT_EQ(a["images"][i].value("jpeg_projected", false), true);
        EXPECT_EQ(b["images"][i].value("jpeg_projected", false), false);
        const double projected = a["images"][i]["psnr"]["model"], alone = b["images"][i]["psnr"]["model"];
        EXPECT_EQ(a["images"][i]["psnr"]["input"], b["images"][i]["psnr"]["input"]);
        EXPECT_NE(projected, alone);
        EXPECT_GE(projected, alone - 0.01);
    }
}

TEST(EvalCli, TableAndRefusals) {
    ScratchDir dir("eval");
    const std::string samples = IMRESTORE_SAMPLES;
    RunResult table = imrestore("eval " + q(samples) + " -m denoise --jpeg 30 -d cpu --baselines gaussian", dir);
    ASSERT_EQ(table.code, 0) << table.err;
    for (const char* text : {"jpeg 30", "chelsea.png", "mean", "PSNR", "SSIM", "denoise", "MP/s"})
        EXPECT_NE(table.out.find(text), std::string::npos) << text << " missing in\n" << table.out;
    if (opencv_available()) EXPECT_NE(table.out.find("gaussian: sigma"), std::string::npos) << table.out;

    RunResult no_folder = imrestore("eval " + q(dir / "nope") + " --noise 25", dir);
    EXPECT_EQ(no_folder.code, 2);
    EXPECT_NE(no_folder.err.find(dir / "nope"), std::string::npos) << no_folder.err;
    EXPECT_NE(no_folder.err.find("no such"), std::string::npos) << no_folder.err;
    RunResult no_degraded = imrestore("eval " + q(samples) + " --degraded " + q(dir / "nope") + " --json", dir);
    EXPECT_EQ(no_degraded.code, 2);
    EXPECT_NE(no_degraded.out.find("\"error\""), std::string::npos) << "--json reports errors too";
    EXPECT_EQ(imrestore("eval " + q(samples) + " --degraded " + q(samples) + " --noise 5", dir).code, 2);
    EXPECT_EQ(imrestore("eval " + q(samples), dir).code, 2) << "nothing to measure";
    EXPECT_EQ(imrestore("eval " + q(samples) + " --noise 5 --baselines median", dir).code, 2);
    EXPECT_EQ(imrestore("eval " + q(samples) + " --jpeg 0", dir).code, 2);

    // One unreadable image among good ones: reported, the rest measured.
    fs::create_directories(dir / "clean");
    fs::copy_file(samples + "/chelsea.png", dir / "clean/chelsea.png");
    std::ofstream(dir / "clean/broken.png") << "not a png";
    RunResult broken = imrestore("eval " + q(dir / "clean") + " -m sharpen --blur 1 -d cpu --json", dir);
    EXPECT_EQ(broken.code, 1);
    EXPECT_NE(broken.err.find("broken.png"), std::string::npos) << broken.err;
    EXPECT_EQ(json_value(broken.out, "images", broken.out.find("\"mean\"")), 1);
}

}  // namespace
}  // namespace imr
