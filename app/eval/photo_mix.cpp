#include "eval/photo_mix.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "error.h"
#include "eval/degradations.h"
#include "image/codecs.h"

namespace imr {

namespace {

// The distribution (weights/README.md, "Degradations", the photo mix; the
// same numbers as weights/train.py's PHOTO_MIX).
constexpr double kBlurP = 0.25, kBlurLo = 0.3, kBlurHi = 1.5;
constexpr double kNoiseP = 0.6;
constexpr double kShotLo = 1e-4, kShotHi = 3e-2;        // log-uniform
constexpr double kReadRelLo = 2e-4, kReadRelHi = 2e-3;  // read = shot * this, log-uniform
constexpr double kChromaRatioLo = 1.0, kChromaRatioHi = 3.0;
constexpr double kChromaSigmaLo = 0.5, kChromaSigmaHi = 2.5;
constexpr double kCameraJpegP = 0.4;
constexpr int kCameraQLo = 75, kCameraQHi = 95;
constexpr double kResampleP = 0.4, kFactorLo = 0.5, kFactorHi = 0.9, kBicubicP = 0.5;
constexpr double kWebJpegP = 0.6;
constexpr int kWebQLo = 30, kWebQHi = 95;
constexpr double k444P = 0.2;  // of each JPEG: 4:4:4, else 4:2:0
constexpr double kWebJpegFirstP = 0.5;

uint8_t round_to_8bit(double v) {
    return uint8_t(std::nearbyint(std::clamp(v, 0.0, 255.0)));
}

// Draws of the mix from one stream: u in (0, 1].
struct Draw {
    NormalRng rng;
    double u() { return rng.next_uniform(); }
    bool chance(double p) { return u() <= p; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * u(); }
    double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
    int integer(int lo, int hi) { return std::min(hi, lo + int(std::floor(u() * (hi - lo + 1)))); }
};

// A w x h float field blurred in place by a normalized Gaussian (radius
// ceil(3 sigma), border reflect-101), rows then columns, then scaled so that
// white noise keeps unit variance (1 / sum of the 2-D kernel's squares'
// square root = 1 / sum k_i^2).
void blur_field(std::vector<float>& f, int w, int h, double sigma) {
    const std::vector<double> k = gaussian_kernel(sigma);
    const int r = int(k.size() / 2);
    double k2 = 0;
    for (double v : k) k2 += v * v;
    std::vector<float> tmp(f.size());
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double s = 0;
            for (int d = -r; d <= r; ++d) s += k[d + r] * f[size_t(y) * w + reflect101(x + d, w)];
            tmp[size_t(y) * w + x] = float(s);
        }
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double s = 0;
            for (int d = -r; d <= r; ++d) s += k[d + r] * tmp[size_t(reflect101(y + d, h)) * w + x];
            f[size_t(y) * w + x] = float(s / k2);
        }
}

// Pillow's resampling filters (support 1 and 2; bicubic with a = -0.5).
double filter(double x, bool bicubic) {
    x = std::fabs(x);
    if (!bicubic) return x < 1 ? 1 - x : 0;
    constexpr double a = -0.5;
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return 0;
}

struct Taps {
    int start = 0;
    std::vector<double> w;
};

// Pillow's precompute_coeffs: output sample i of out_size from in_size, its
// centre at (i + 0.5) * scale, the filter stretched by the scale when
// downscaling, the window clipped to the image and renormalized.
std::vector<Taps> resample_taps(int in_size, int out_size, bool bicubic) {
    const double scale = double(in_size) / out_size, stretch = std::max(scale, 1.0);
    const double support = (bicubic ? 2.0 : 1.0) * stretch;
    std::vector<Taps> taps(out_size);
    for (int i = 0; i < out_size; ++i) {
        const double center = (i + 0.5) * scale;
        const int lo = std::max(int(std::floor(center - support + 0.5)), 0);
        const int hi = std::min(int(std::floor(center + support + 0.5)), in_size);
        Taps& t = taps[i];
        t.start = lo;
        double sum = 0;
        for (int j = lo; j < hi; ++j) sum += t.w.emplace_back(filter((j - center + 0.5) / stretch, bicubic));
        if (sum != 0)
            for (double& v : t.w) v /= sum;
    }
    return taps;
}

// Separable resize of an 8-bit image's color channels, rows then columns in
// float64, rounded once; alpha (if any) is resized by nearest neighbour only
// to keep the shape (the round trip puts the original back).
Image resize(const Image& in, int out_w, int out_h, bool bicubic) {
    const int ch = in.channels, colors = in.color_channels();
    const std::vector<Taps> tx = resample_taps(in.width, out_w, bicubic), ty = resample_taps(in.height, out_h, bicubic);
    std::vector<double> rows(size_t(out_w) * in.height * colors);
    const uint8_t* samples = in.data<uint8_t>();
#pragma omp parallel for schedule(static)
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < out_w; ++x)
            for (int c = 0; c < colors; ++c) {
                double s = 0;
                const Taps& t = tx[x];
                for (size_t j = 0; j < t.w.size(); ++j)
                    s += t.w[j] * samples[(size_t(y) * in.width + t.start + j) * ch + c];
                rows[(size_t(y) * out_w + x) * colors + c] = s;
            }
    Image out;
    out.width = out_w, out.height = out_h, out.channels = colors, out.bit_depth = 8;
    out.allocate();
    uint8_t* out_samples = out.data<uint8_t>();
#pragma omp parallel for schedule(static)
    for (int y = 0; y < out_h; ++y)
        for (int x = 0; x < out_w; ++x)
            for (int c = 0; c < colors; ++c) {
                double s = 0;
                const Taps& t = ty[y];
                for (size_t j = 0; j < t.w.size(); ++j) s += t.w[j] * rows[((t.start + j) * out_w + x) * colors + c];
                out_samples[(size_t(y) * out_w + x) * colors + c] = round_to_8bit(s);
            }
    return out;
}

void require_8bit(const Image& image, const char* what) {
    if (image.bit_depth != 8) throw Error(std::string(what) + ": needs an 8-bit image");
}

std::string num(double v, int digits = 3) {
    std::ostringstream s;
    s.precision(digits);
    s << v;
    return s.str();
}

}  // namespace

const std::vector<std::string>& degradation_mix_names() {
    static const std::vector<std::string> names = {"photo"};
    return names;
}

std::string PhotoMixParams::describe() const {
    std::vector<std::string> steps;
    auto jpeg = [](const JpegStep& j) {
        return "jpeg " + std::to_string(j.quality) + (j.subsampling == 444 ? " 4:4:4" : "");
    };
    if (blur > 0) steps.push_back("blur " + num(blur));
    if (noise_on)
        steps.push_back("noise (shot " + num(noise.shot) + ", read " + num(noise.read) + ", chroma " +
                        num(noise.chroma_ratio) + "x sigma " + num(noise.chroma_sigma) + ")");
    if (camera_jpeg.quality > 0) steps.push_back(jpeg(camera_jpeg));
    const std::string rs = "resample " + num(resample.factor) + " " + (resample.down_bicubic ? "bicubic" : "bilinear") +
                           "/" + (resample.up_bicubic ? "bicubic" : "bilinear");
    if (web_jpeg_first && web_jpeg.quality > 0) steps.push_back(jpeg(web_jpeg));
    if (resample_on) steps.push_back(rs);
    if (!web_jpeg_first && web_jpeg.quality > 0) steps.push_back(jpeg(web_jpeg));
    if (steps.empty()) return "none";
    std::string s;
    for (const std::string& step : steps) s += (s.empty() ? "" : ", ") + step;
    return s;
}

PhotoMixParams draw_photo_mix(uint64_t seed) {
    Draw d{NormalRng(seed)};
    PhotoMixParams p;
    // The order of the draws is part of the definition (weights/README.md).
    const bool blur_on = d.chance(kBlurP);
    const double blur = d.uniform(kBlurLo, kBlurHi);
    p.blur = blur_on ? blur : 0;
    p.noise_on = d.chance(kNoiseP);
    p.noise.shot = d.log_uniform(kShotLo, kShotHi);
    p.noise.read = p.noise.shot * d.log_uniform(kReadRelLo, kReadRelHi);
    p.noise.chroma_ratio = d.uniform(kChromaRatioLo, kChromaRatioHi);
    p.noise.chroma_sigma = d.uniform(kChromaSigmaLo, kChromaSigmaHi);
    const bool camera_on = d.chance(kCameraJpegP);
    const int camera_q = d.integer(kCameraQLo, kCameraQHi);
    p.camera_jpeg = {camera_on ? camera_q : 0, d.chance(k444P) ? 444 : 420};
    p.resample_on = d.chance(kResampleP);
    p.resample.factor = d.uniform(kFactorLo, kFactorHi);
    p.resample.down_bicubic = d.chance(kBicubicP);
    p.resample.up_bicubic = d.chance(kBicubicP);
    const bool web_on = d.chance(kWebJpegP);
    const int web_q = d.integer(kWebQLo, kWebQHi);
    p.web_jpeg = {web_on ? web_q : 0, d.chance(k444P) ? 444 : 420};
    p.web_jpeg_first = d.chance(kWebJpegFirstP);
    p.noise_seed = d.rng.next_u64();
    return p;
}

double srgb_to_linear(double v) {
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
}

double linear_to_srgb(double v) {
    return v <= 0.0031308 ? 12.92 * v : 1.055 * std::pow(v, 1.0 / 2.4) - 0.055;
}

void add_camera_noise(Image& image, const CameraNoise& n, uint64_t seed) {
    require_8bit(image, "camera noise");
    if (!(n.shot >= 0 && n.read >= 0 && n.chroma_ratio >= 0 && n.chroma_sigma > 0))
        throw Error("camera noise: shot, read and chroma ratio must be >= 0, chroma sigma > 0");
    const int w = image.width, h = image.height, ch = image.channels, colors = image.color_channels();
    const size_t pixels = size_t(w) * h;
    // The fields, one sequential stream in this order (luma, then the two
    // chroma fields, each row-major): independent of the thread count.
    NormalRng rng(seed);
    std::vector<float> luma(pixels), c1, c2;
    for (float& v : luma) v = float(rng.next_normal());
    if (colors == 3) {
        c1.resize(pixels), c2.resize(pixels);
        for (float& v : c1) v = float(rng.next_normal());
        for (float& v : c2) v = float(rng.next_normal());
        blur_field(c1, w, h, n.chroma_sigma);
        blur_field(c2, w, h, n.chroma_sigma);
    }
    // Unit-variance opponent axes orthogonal to gray: e1 = (1, -1, 0) / sqrt 2
    // and e2 = (1, 1, -2) / sqrt 6, times sqrt(3/2) so each channel's share is 1.
    const double s = std::sqrt(1.5);
    const double e1[3] = {s / std::sqrt(2.0), -s / std::sqrt(2.0), 0};
    const double e2[3] = {s / std::sqrt(6.0), s / std::sqrt(6.0), -2 * s / std::sqrt(6.0)};
    const double norm = std::sqrt(1 + n.chroma_ratio * n.chroma_ratio);
    const double a = colors == 3 ? 1 / norm : 1, b = colors == 3 ? n.chroma_ratio / norm : 0;
    double lut[256];  // 8-bit sRGB -> linear
    for (int v = 0; v < 256; ++v) lut[v] = srgb_to_linear(v / 255.0);
    uint8_t* samples = image.data<uint8_t>();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < pixels; ++i)
        for (int c = 0; c < colors; ++c) {
            uint8_t& sample = samples[i * ch + c];
            const double x = lut[sample];
            double z = a * luma[i];
            if (colors == 3) z += b * (e1[c] * c1[i] + e2[c] * c2[i]);
            const double y = std::clamp(x + std::sqrt(n.shot * x + n.read) * z, 0.0, 1.0);
            sample = round_to_8bit(255.0 * linear_to_srgb(y));
        }
}

void resample_round_trip(Image& image, const Resample& r) {
    require_8bit(image, "resample");
    if (!(r.factor > 0 && r.factor <= 1)) throw Error("resample: factor must be within (0, 1]");
    const int w = image.width, h = image.height, ch = image.channels, colors = image.color_channels();
    const int sw = std::max(1, int(std::lround(w * r.factor))), sh = std::max(1, int(std::lround(h * r.factor)));
    const Image back = resize(resize(image, sw, sh, r.down_bicubic), w, h, r.up_bicubic);
    uint8_t* samples = image.data<uint8_t>();
    const uint8_t* back_samples = back.data<uint8_t>();
    for (size_t i = 0, n = size_t(w) * h; i < n; ++i)
        for (int c = 0; c < colors; ++c) samples[i * ch + c] = back_samples[i * colors + c];
}

void jpeg_step(Image& image, const JpegStep& j) {
    if (j.quality <= 0) return;
#ifdef IMRESTORE_WITH_LIBJPEG
    jpeg_round_trip(image, j.quality, j.subsampling);
#else
    jpeg_round_trip(image, j.quality);  // 4:4:4 needs libjpeg; stb's choice otherwise (jpeg_is_libjpeg)
#endif
}

Image apply_photo_mix(const Image& clean, const PhotoMixParams& p) {
    if (clean.color_channels() != 1 && clean.color_channels() != 3)
        throw Error("photo mix: " + std::to_string(clean.channels) + " channels; expected gray or RGB (with alpha)");
    Image out = to_8bit(clean);
    if (p.blur > 0) gaussian_blur(out, p.blur);
    if (p.noise_on) add_camera_noise(out, p.noise, p.noise_seed);
    jpeg_step(out, p.camera_jpeg);
    if (p.web_jpeg_first) jpeg_step(out, p.web_jpeg);
    if (p.resample_on) resample_round_trip(out, p.resample);
    if (!p.web_jpeg_first) jpeg_step(out, p.web_jpeg);
    return out;
}

PhotoMixParams draw_photo_mix_for_eval(uint64_t seed) {
    uint64_t state = seed;
    PhotoMixParams p = draw_photo_mix(seed);
    while (p.is_noop()) p = draw_photo_mix(splitmix64(state));
    return p;
}

Image photo_mix(const Image& clean, uint64_t seed) {
    return apply_photo_mix(clean, draw_photo_mix_for_eval(seed));
}

}  // namespace imr
