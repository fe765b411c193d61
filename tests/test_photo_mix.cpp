// The `photo` mix (app/eval/photo_mix.h, weights/README.md "Degradations"):
// its draws (deterministic per seed and file name, different between seeds,
// within the written ranges at the written rates, a no-op path), the camera
// noise's statistics (variance shot * x + read in linear light, chroma noise
// spatially correlated and stronger than luma), the resampling and JPEG
// steps, and `degrade` / `eval --mix photo` end to end. Fresh random seeds,
// printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli_run.h"
#include "eval/degradations.h"
#include "eval/metrics.h"
#include "eval/photo_mix.h"
#include "test_util.h"

namespace imr {
namespace {

using test::imrestore;
using test::q;
using test::RunResult;
using test::ScratchDir;

Image flat(int w, int h, int channels, int value) {
    Image im;
    im.width = w, im.height = h, im.channels = channels, im.bit_depth = 8;
    im.assign_samples(std::vector<uint16_t>(size_t(w) * h * channels, uint16_t(value)));
    return im;
}

// Smooth colour gradients, stripes and a checkerboard: something for blur,
// resampling and JPEG to change.
Image card(int w, int h) {
    Image im = flat(w, h, 3, 0);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c) {
                double v = 30 + 170.0 * (c == 1 ? y : x) / w + 25 * std::sin(x * 0.4 + y * 0.1 * c) +
                           ((x / 6 + y / 6) % 2 ? 20 : 0);
                im.set_sample((size_t(y) * w + x) * 3 + c, uint16_t(std::clamp(v, 0.0, 255.0)));
            }
    return im;
}

uint64_t fresh_seed(std::mt19937& rng) {
    return (uint64_t(rng()) << 32) | rng();
}

double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / v.size();
}

double variance(const std::vector<double>& v) {
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s / (v.size() - 1);
}

// Correlation of v with its right neighbour in a w-wide row-major field.
double neighbour_correlation(const std::vector<double>& v, int w) {
    const int h = int(v.size() / w);
    const double m = mean(v), var = variance(v);
    double s = 0;
    int n = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x + 1 < w; ++x, ++n) s += (v[size_t(y) * w + x] - m) * (v[size_t(y) * w + x + 1] - m);
    return s / n / var;
}

TEST(PhotoMix, DrawsAreDeterministicWithinTheirRangesAndDifferBetweenSeeds) {
    unsigned s;
    std::mt19937 rng = test::fresh_rng(&s);
    SCOPED_TRACE("fresh seed " + std::to_string(s));
    constexpr int kDraws = 4000;
    int blur = 0, noise = 0, camera = 0, resample = 0, web = 0, web_first = 0, s444 = 0, noop = 0, bicubic = 0;
    std::set<std::string> descriptions;
    for (int i = 0; i < kDraws; ++i) {
        const uint64_t seed = fresh_seed(rng);
        const PhotoMixParams p = draw_photo_mix(seed), again = draw_photo_mix(seed);
        ASSERT_EQ(p.describe(), again.describe()) << "seed " << seed;
        ASSERT_EQ(p.noise_seed, again.noise_seed);
        descriptions.insert(p.describe() + std::to_string(p.noise_seed));
        if (p.blur > 0) {
            ++blur;
            EXPECT_TRUE(p.blur >= 0.3 && p.blur <= 1.5) << p.blur;
        }
        noise += p.noise_on;
        EXPECT_TRUE(p.noise.shot >= 1e-4 && p.noise.shot <= 3e-2) << p.noise.shot;
        const double rel = p.noise.read / p.noise.shot;
        EXPECT_TRUE(rel >= 2e-4 * (1 - 1e-9) && rel <= 2e-3 * (1 + 1e-9)) << rel;
        EXPECT_TRUE(p.noise.chroma_ratio >= 1 && p.noise.chroma_ratio <= 3);
        EXPECT_TRUE(p.noise.chroma_sigma >= 0.5 && p.noise.chroma_sigma <= 2.5);
        if (p.camera_jpeg.quality > 0) {
            ++camera;
            EXPECT_TRUE(p.camera_jpeg.quality >= 75 && p.camera_jpeg.quality <= 95) << p.camera_jpeg.quality;
        }
        if (p.web_jpeg.quality > 0) {
            ++web;
            EXPECT_TRUE(p.web_jpeg.quality >= 30 && p.web_jpeg.quality <= 95) << p.web_jpeg.quality;
        }
        s444 += p.web_jpeg.subsampling == 444;
        resample += p.resample_on;
        bicubic += p.resample.down_bicubic;
        EXPECT_TRUE(p.resample.factor >= 0.5 && p.resample.factor <= 0.9) << p.resample.factor;
        web_first += p.web_jpeg_first;
        noop += p.is_noop();
    }
    EXPECT_EQ(int(descriptions.size()), kDraws) << "every seed its own draw";
    // The written rates, within 6 binomial standard deviations (nine
    // checks at 5 failed about once in 170,000 runs).
    auto near_rate = [&](int count, double p, const char* what) {
        const double sd = std::sqrt(kDraws * p * (1 - p));
        EXPECT_NEAR(count, kDraws * p, 6 * sd) << what;
    };
    near_rate(blur, 0.25, "blur");
    near_rate(noise, 0.6, "noise");
    near_rate(camera, 0.4, "camera jpeg");
    near_rate(resample, 0.4, "resample");
    near_rate(bicubic, 0.5, "bicubic downscale");
    near_rate(web, 0.6, "web jpeg");
    near_rate(s444, 0.2, "4:4:4");
    near_rate(web_first, 0.5, "web jpeg first");
    near_rate(noop, 0.75 * 0.4 * 0.6 * 0.6 * 0.4, "nothing at all");
}

TEST(PhotoMix, TheImageDependsOnlyOnTheSeedAndTheFileName) {
    unsigned s;
    std::mt19937 rng = test::fresh_rng(&s);
    SCOPED_TRACE("fresh seed " + std::to_string(s));
    // The card with a corner of one-pixel black/white checks: the mildest
    // step of a draw (a blur of 0.3 px alone) moves a 255-level edge by more
    // than half a level, where the card's own edges of 20 levels round back
    // (a draw of only "blur 0.313" left the plain card as it was: 1 run in 200).
    Image clean = card(96, 80);
    for (int y = 0; y < 12; ++y)
        for (int x = 0; x < 12; ++x)
            for (int c = 0; c < 3; ++c) clean.set_sample((size_t(y) * 96 + x) * 3 + c, (x + y) % 2 ? 255 : 0);
    Degradation d;
    d.mix = "photo";
    d.validate();
    int differ = 0, tried = 0, noop_seen = 0;
    for (int i = 0; i < 20; ++i) {
        const uint64_t seed = fresh_seed(rng);
        const uint64_t file_seed = image_noise_seed(seed, "some/folder/x.png");
        ASSERT_EQ(file_seed, image_noise_seed(seed, "x.png"));
        const Image a = degrade(clean, d, file_seed), b = degrade(clean, d, image_noise_seed(seed, "x.png"));
        ASSERT_EQ(a.samples_u16(), b.samples_u16()) << "seed " << seed;
        EXPECT_NE(a.samples_u16(), clean.samples_u16())
            << "--mix photo redraws a draw that skips every step; this one: "
            << draw_photo_mix_for_eval(file_seed).describe();
        // Another seed, or another file name: another draw. Its image must
        // differ where either draw adds noise (a fresh field). Two draws
        // without noise may legitimately give the same pixels: the same JPEG
        // quality alone, or resample factors that round to the same size.
        const PhotoMixParams mine = draw_photo_mix_for_eval(file_seed);
        for (uint64_t other : {image_noise_seed(seed + 1, "x.png"), image_noise_seed(seed, "y.png")}) {
            const PhotoMixParams theirs = draw_photo_mix_for_eval(other);
            EXPECT_TRUE(theirs.describe() != mine.describe() || theirs.noise_seed != mine.noise_seed);
            if (!mine.noise_on && !theirs.noise_on) continue;
            ++tried;
            differ += degrade(clean, d, other).samples_u16() != a.samples_u16();
        }
    }
    EXPECT_GT(tried, 0);
    EXPECT_EQ(differ, tried);
    // The evaluation's draw: the training draw unless that skips everything, then a later one.
    for (int i = 0; i < 2000; ++i) {
        const uint64_t seed = fresh_seed(rng);
        const PhotoMixParams train = draw_photo_mix(seed), eval = draw_photo_mix_for_eval(seed);
        EXPECT_FALSE(eval.is_noop());
        if (!train.is_noop()) EXPECT_EQ(eval.describe(), train.describe());
        noop_seen += train.is_noop();
    }
    EXPECT_GT(noop_seen, 0) << "the training draw has a no-op path";
    // The no-op path, applied: every step skipped leaves the pixels as they were.
    PhotoMixParams none;
    EXPECT_TRUE(none.is_noop());
    EXPECT_EQ(none.describe(), "none");
    EXPECT_EQ(apply_photo_mix(clean, none).samples_u16(), clean.samples_u16());
}

TEST(PhotoMix, CameraNoiseVarianceIsShotTimesSignalPlusReadInLinearLight) {
    unsigned s;
    std::mt19937 rng = test::fresh_rng(&s);
    SCOPED_TRACE("fresh seed " + std::to_string(s));
    const CameraNoise n{0.01, 1e-5, 2.0, 1.2};
    std::vector<double> measured;
    for (int level : {100, 160, 220}) {  // away from clipping at 0 and 1
        Image im = flat(320, 320, 3, level);
        add_camera_noise(im, n, fresh_seed(rng));
        const double x = srgb_to_linear(level / 255.0);
        for (int c = 0; c < 3; ++c) {
            std::vector<double> lin;
            for (size_t i = c; i < im.sample_count(); i += 3) lin.push_back(srgb_to_linear(im.sample(i) / 255.0));
            const double var = variance(lin), expected = n.shot * x + n.read;
            EXPECT_NEAR(var / expected, 1.0, 0.12) << "level " << level << " channel " << c;
            EXPECT_NEAR(mean(lin), x, 0.1 * std::sqrt(expected)) << "zero-mean noise";
            if (c == 0) measured.push_back(var);
        }
    }
    EXPECT_LT(measured[0], measured[1]);
    EXPECT_LT(measured[1], measured[2]);
    // No noise parameters, no change.
    Image im = card(40, 30), before = im;
    add_camera_noise(im, CameraNoise{0, 0, 2, 1}, 1);
    EXPECT_EQ(im.samples_u16(), before.samples_u16());
}

TEST(PhotoMix, ChromaNoiseIsSpatiallyCorrelatedAndStrongerThanLuma) {
    unsigned s;
    std::mt19937 rng = test::fresh_rng(&s);
    SCOPED_TRACE("fresh seed " + std::to_string(s));
    std::uniform_real_distribution<double> u(0, 1);
    const double ratio = 1.5 + u(rng), sigma = 1.0 + u(rng);
    SCOPED_TRACE("chroma ratio " + std::to_string(ratio) + ", sigma " + std::to_string(sigma));
    const int w = 256, h = 256, level = 128;
    Image im = flat(w, h, 3, level);
    add_camera_noise(im, CameraNoise{0.004, 1e-5, ratio, sigma}, fresh_seed(rng));
    // Residuals in linear light: luma (the mean of R, G, B, where the chroma
    // axes cancel) and chroma (R - G, where the luma cancels).
    const double x = srgb_to_linear(level / 255.0);
    std::vector<double> luma, chroma;
    for (size_t i = 0; i < im.sample_count(); i += 3) {
        double r = srgb_to_linear(im.sample(i) / 255.0) - x, g = srgb_to_linear(im.sample(i + 1) / 255.0) - x,
               b = srgb_to_linear(im.sample(i + 2) / 255.0) - x;
        luma.push_back((r + g + b) / 3);
        chroma.push_back(r - g);
    }
    // Gaussian-blurred white noise: neighbour correlation exp(-1 / (4 sigma^2)).
    const double expected = std::exp(-1.0 / (4 * sigma * sigma));
    EXPECT_GT(neighbour_correlation(chroma, w), 0.5);
    EXPECT_NEAR(neighbour_correlation(chroma, w), expected, 0.08);
    EXPECT_NEAR(neighbour_correlation(luma, w), 0.0, 0.05) << "luma noise is white";
    // Per channel, chroma variance / luma variance = ratio^2 (var(R - G) = 3 chroma variance).
    EXPECT_NEAR(variance(chroma) / 3 / variance(luma) / (ratio * ratio), 1.0, 0.25);

    // A gray image: luma noise only, white.
    Image gray = flat(w, h, 1, level);
    add_camera_noise(gray, CameraNoise{0.004, 1e-5, ratio, sigma}, fresh_seed(rng));
    std::vector<double> g;
    for (uint16_t v : gray.samples_u16()) g.push_back(srgb_to_linear(v / 255.0) - x);
    EXPECT_NEAR(variance(g) / (0.004 * x + 1e-5), 1.0, 0.1);
    EXPECT_NEAR(neighbour_correlation(g, w), 0.0, 0.05);
}

TEST(PhotoMix, ResamplingAndJpegSteps) {
    const Image clean = card(123, 77);
    // Factor 1: Pillow's filters at integer offsets are the identity.
    for (bool down : {false, true})
        for (bool up : {false, true}) {
            Image im = clean;
            resample_round_trip(im, Resample{1.0, down, up});
            EXPECT_EQ(im.samples_u16(), clean.samples_u16()) << down << up;
        }
    // A flat image stays flat; a detailed one loses more at a smaller factor.
    Image f = flat(50, 31, 3, 77);
    resample_round_trip(f, Resample{0.55, true, false});
    EXPECT_EQ(f.samples_u16(), flat(50, 31, 3, 77).samples_u16());
    Image half = clean, most = clean;
    resample_round_trip(half, Resample{0.5, true, true});
    resample_round_trip(most, Resample{0.9, true, true});
    EXPECT_LT(psnr_8bit(clean, half), psnr_8bit(clean, most));
    EXPECT_GT(psnr_8bit(clean, half), 15.0);
    EXPECT_LT(psnr_8bit(clean, most), 60.0);
    // Alpha is left alone.
    Image rgba = flat(20, 10, 4, 90);
    for (size_t i = 3; i < rgba.sample_count(); i += 4) rgba.set_sample(i, uint16_t(i % 256));
    const Image rgba_before = rgba;
    resample_round_trip(rgba, Resample{0.6, false, false});
    for (size_t i = 3; i < rgba.sample_count(); i += 4) EXPECT_EQ(rgba.sample(i), rgba_before.sample(i));
    // 4:4:4 keeps more colour than 4:2:0 at the same quality.
    if (jpeg_is_libjpeg()) {
        Image a = clean, b = clean;
        jpeg_step(a, JpegStep{90, 444});
        jpeg_step(b, JpegStep{90, 420});
        EXPECT_GT(psnr_8bit(clean, a), psnr_8bit(clean, b) + 0.5);
    }
}

TEST(PhotoMixCli, DegradeAndEval) {
    ScratchDir dir("photomix");
    const std::string samples = IMRESTORE_SAMPLES;
    RunResult deg = imrestore("degrade " + q(samples) + " -o " + q(dir / "a") + " --mix photo --seed 11", dir);
    ASSERT_EQ(deg.code, 0) << deg.err;
    EXPECT_NE(deg.err.find("mix photo (seed 11)"), std::string::npos) << deg.err;
    RunResult again = imrestore("degrade " + q(samples) + " -o " + q(dir / "b") + " --mix photo --seed 11", dir);
    ASSERT_EQ(again.code, 0) << again.err;
    RunResult other = imrestore("degrade " + q(samples) + " -o " + q(dir / "c") + " --mix photo --seed 12", dir);
    ASSERT_EQ(other.code, 0) << other.err;
    int differ = 0;
    for (const char* name : {"camera.png", "chelsea.png", "coffee.png", "rocket.png"}) {
        const Image a = read_image(dir / ("a/" + std::string(name))), b = read_image(dir / ("b/" + std::string(name)));
        EXPECT_EQ(a.samples_u16(), b.samples_u16()) << name;
        differ += read_image(dir / ("c/" + std::string(name))).samples_u16() != a.samples_u16();
    }
    EXPECT_GE(differ, 3) << "another seed, other draws";

    // eval degrading itself equals eval on degrade's files; the JSON names the mix.
    RunResult own =
        imrestore("eval " + q(samples) + " -m sharpen --mix photo --seed 11 -d cpu --json --baselines gaussian", dir);
    ASSERT_EQ(own.code, 0) << own.err;
    EXPECT_NE(own.out.find("\"mix\": \"photo\""), std::string::npos) << own.out;
    // Each image says which steps its draw ran, as draw_photo_mix_for_eval has them for its file.
    const nlohmann::json report = nlohmann::json::parse(own.out);  // alive for the loop (not a temporary's member)
    for (const auto& image : report["images"]) {
        const std::string file = image["file"];
        EXPECT_EQ(image["degradation"], draw_photo_mix_for_eval(image_noise_seed(11, file)).describe()) << file;
        EXPECT_NE(image["degradation"], "none") << file;
    }
    RunResult given = imrestore(
        "eval " + q(samples) + " -m sharpen --degraded " + q(dir / "a") + " -d cpu --json --baselines none", dir);
    ASSERT_EQ(given.code, 0) << given.err;
    auto mean_input = [](const std::string& json) {
        const size_t at = json.find("\"input\": ", json.find("\"mean\""));
        return at == std::string::npos ? NAN : std::atof(json.c_str() + at + 9);
    };
    EXPECT_DOUBLE_EQ(mean_input(own.out), mean_input(given.out));
    RunResult table = imrestore("eval " + q(samples) + " -m sharpen --mix photo -d cpu --baselines none", dir);
    ASSERT_EQ(table.code, 0) << table.err;
    EXPECT_NE(table.out.find("eval: mix photo (seed 0)"), std::string::npos) << table.out;

    // A mix is the whole degradation; unknown names are refused.
    EXPECT_EQ(imrestore("degrade " + q(samples) + " -o " + q(dir / "d") + " --mix photo --noise 5", dir).code, 2);
    EXPECT_EQ(imrestore("degrade " + q(samples) + " -o " + q(dir / "d") + " --mix video", dir).code, 2);
    EXPECT_EQ(imrestore("eval " + q(samples) + " --mix photo --jpeg 30", dir).code, 2);
}

}  // namespace
}  // namespace imr
