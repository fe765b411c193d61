#include "eval/degradations.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "error.h"
#include "eval/photo_mix.h"
#include "image/codecs.h"
#include "runner_options.h"

namespace imr {

namespace {

uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

// Samples are rounded half to even (std::nearbyint in the default rounding
// mode), as torch.round does in training.
uint8_t round_to_8bit(double v) {
    return uint8_t(std::nearbyint(std::clamp(v, 0.0, 255.0)));
}

void require_8bit(const Image& image, const char* what) {
    if (image.bit_depth != 8)
        throw Error(std::string(what) + ": needs an 8-bit image (got " + std::to_string(image.bit_depth) +
                    "-bit; convert with to_8bit first)");
}

}  // namespace

int reflect101(int i, int n) {
    if (n == 1) return 0;
    const int period = 2 * n - 2;
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}

std::vector<Degradation> task_standard_degradations(const std::string& task) {
    if (task == "denoise") return {{0, 15, 0}, {0, 25, 0}, {0, 50, 0}};
    if (task == "deblock") return {{0, 0, 10}, {0, 0, 20}, {0, 0, 30}, {0, 0, 40}};
    if (task == "deblur") return {{1.5, 2, 0}};
    if (task == "photo") {  // the photo mix, each photo its own draw of the caller's seed
        Degradation mix;
        mix.mix = "photo";
        return {mix};
    }
    return {Degradation{}};
}

std::vector<std::pair<std::string, float>> degradation_levels(const std::string& model_name,
                                                              const std::vector<std::string>& extra_inputs,
                                                              const Degradation& d, const std::string& what) {
    std::vector<std::pair<std::string, float>> levels;
    for (const std::string& name : extra_inputs) {
        const bool noise = name == "noise_level";
        const double level = noise ? d.noise : double(d.jpeg);
        if (!(level > 0) || !d.mix.empty())
            throw Error(what + ": model '" + model_name + "' takes " + (noise ? "a noise level" : "a JPEG quality") +
                        ", which " + what + " gives it from the degradation's " + (noise ? "noise" : "JPEG quality") +
                        "; degradation [" + d.describe() + "] has none to give");
        levels.emplace_back(name, extra_input_value(name, level));
    }
    return levels;
}

std::string Degradation::describe() const {
    std::ostringstream s;
    const char* sep = "";
    if (blur > 0) s << sep << "blur " << blur, sep = ", ";
    if (noise > 0) s << sep << "noise " << noise, sep = ", ";
    if (jpeg > 0) s << sep << "jpeg " << jpeg << (subsampling == 444 ? " 4:4:4" : ""), sep = ", ";
    if (!mix.empty()) s << sep << "mix " << mix, sep = ", ";
    return any() ? s.str() : "none";
}

void Degradation::validate() const {
    // Finite and in range; the upper blur limit keeps the kernel (6 sigma
    // wide) from being larger than any sensible photo.
    if (!(blur >= 0 && blur <= 50)) throw Error("--blur " + std::to_string(blur) + ": must be within 0..50 pixels");
    if (!(noise >= 0 && noise <= 255))
        throw Error("--noise " + std::to_string(noise) + ": must be within 0..255 (sigma on the 8-bit scale)");
    if (jpeg < 0 || jpeg > 100) throw Error("--jpeg " + std::to_string(jpeg) + ": quality must be within 1..100");
    if (subsampling != 420 && subsampling != 444)
        throw Error("--subsampling " + std::to_string(subsampling) + ": must be 420 or 444");
    if (!mix.empty()) {
        const auto& names = degradation_mix_names();
        if (std::find(names.begin(), names.end(), mix) == names.end()) {
            std::string list;
            for (const std::string& n : names) list += " " + n;
            throw Error("--mix " + mix + ": unknown (known:" + list + ")");
        }
        if (blur > 0 || noise > 0 || jpeg > 0 || subsampling != 420)
            throw Error("--mix " + mix +
                        " is a whole degradation of its own: give it without --blur/--noise/--jpeg/--subsampling");
    }
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

NormalRng::NormalRng(uint64_t seed) {
    // splitmix64 is the seeding xoshiro's authors recommend: it never gives
    // the all-zero state xoshiro cannot leave.
    for (uint64_t& s : s_) s = splitmix64(seed);
}

uint64_t NormalRng::next_u64() {  // xoshiro256** 1.0
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double NormalRng::next_uniform() {
    return double((next_u64() >> 11) + 1) * 0x1.0p-53;  // 53 random bits, in (0, 1]
}

double NormalRng::next_normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    // Box-Muller: exact in distribution, two normals per two uniforms, and
    // only log/sqrt/cos/sin (glibc's agree across machines far below the 8-bit
    // rounding that follows).
    const double r = std::sqrt(-2.0 * std::log(next_uniform()));
    const double angle = 2.0 * M_PI * next_uniform();
    spare_ = r * std::sin(angle);
    has_spare_ = true;
    return r * std::cos(angle);
}

uint64_t image_noise_seed(uint64_t seed, const std::string& file_name) {
    std::string name = file_name;
    size_t slash = name.find_last_of('/');
    if (slash != std::string::npos) name.erase(0, slash + 1);
    uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a 64
    for (unsigned char c : name) hash = (hash ^ c) * 0x100000001B3ull;
    uint64_t state = seed ^ hash;
    return splitmix64(state);
}

Image to_8bit(const Image& image) {
    if (image.bit_depth == 8) return image;
    Image out;
    out.width = image.width, out.height = image.height, out.channels = image.channels, out.bit_depth = 8;
    out.metadata = image.metadata;
    out.allocate();
    const uint16_t* in = image.data<uint16_t>();
    uint8_t* o = out.data<uint8_t>();
    for (size_t i = 0, n = image.sample_count(); i < n; ++i)
        o[i] = uint8_t((uint32_t(in[i]) * 2 + 257) / 514);  // round(v / 257), halves up
    return out;
}

std::vector<double> gaussian_kernel(double sigma) {
    if (!(sigma > 0)) throw Error("gaussian_kernel: sigma must be > 0 (got " + std::to_string(sigma) + ")");
    const int r = int(std::ceil(3.0 * sigma));
    std::vector<double> k(2 * r + 1);
    double sum = 0;
    for (int d = -r; d <= r; ++d) sum += k[d + r] = std::exp(-double(d) * d / (2.0 * sigma * sigma));
    for (double& w : k) w /= sum;
    return k;
}

void gaussian_blur(Image& image, double sigma) {
    require_8bit(image, "blur");
    if (sigma <= 0) return;
    const std::vector<double> k = gaussian_kernel(sigma);
    const int r = int(k.size() / 2), w = image.width, h = image.height, ch = image.channels;
    const int colors = image.color_channels();
    uint8_t* samples = image.data<uint8_t>();
    // Rows first into a float64 buffer (no rounding in between), then
    // columns, then one rounding to 8 bits: the spec's order.
    std::vector<double> rows(size_t(w) * h * colors);
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < colors; ++c) {
                double s = 0;
                for (int d = -r; d <= r; ++d) s += k[d + r] * samples[(size_t(y) * w + reflect101(x + d, w)) * ch + c];
                rows[(size_t(y) * w + x) * colors + c] = s;
            }
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < colors; ++c) {
                double s = 0;
                for (int d = -r; d <= r; ++d) s += k[d + r] * rows[(size_t(reflect101(y + d, h)) * w + x) * colors + c];
                samples[(size_t(y) * w + x) * ch + c] = round_to_8bit(s);
            }
}

void add_gaussian_noise(Image& image, double sigma, uint64_t seed) {
    require_8bit(image, "noise");
    if (sigma <= 0) return;
    // One sequential stream in memory order (row-major, then channel), so the
    // noise does not depend on the thread count.
    NormalRng rng(seed);
    const int ch = image.channels, colors = image.color_channels();
    const double scale = sigma / 255.0;
    uint8_t* samples = image.data<uint8_t>();
    for (size_t p = 0, n = image.sample_count(); p < n; p += ch)
        for (int c = 0; c < colors; ++c) {
            // y = round(clip(x + s/255 * n, 0, 1) * 255), literally as the spec writes it.
            const double x = samples[p + c] / 255.0;
            const double y = std::clamp(x + scale * rng.next_normal(), 0.0, 1.0);
            samples[p + c] = uint8_t(std::nearbyint(y * 255.0));
        }
}

bool jpeg_is_libjpeg() {
#if defined(IMRESTORE_WITH_OPENCV) || defined(IMRESTORE_WITH_LIBJPEG)
    return true;
#else
    return false;
#endif
}

void jpeg_round_trip(Image& image, int quality, int subsampling, std::vector<uint8_t>* file) {
    require_8bit(image, "jpeg");
    if (quality <= 0) return;
    if (quality > 100) throw Error("jpeg: quality " + std::to_string(quality) + " is above 100");
    if (subsampling != 420 && subsampling != 444)
        throw Error("jpeg: subsampling " + std::to_string(subsampling) + " is not 420 or 444");
    const int ch = image.channels, colors = image.color_channels();
    // The color channels through the tool's own JPEG writer and reader
    // (libjpeg: baseline, 4:2:0 for color, as training's torchvision
    // encode_jpeg; 4:4:4 through libjpeg directly, as OpenCV 4.6 has no
    // option for it); alpha is kept aside, untouched.
    Image color;
    color.width = image.width, color.height = image.height, color.channels = colors, color.bit_depth = 8;
    color.allocate();
    uint8_t* samples = image.data<uint8_t>();
    uint8_t* color_samples = color.data<uint8_t>();
    for (size_t i = 0, n = size_t(image.width) * image.height; i < n; ++i)
        for (int c = 0; c < colors; ++c) color_samples[i * colors + c] = samples[i * ch + c];
    WriteOptions o;
    o.jpeg_quality = quality;
    std::vector<uint8_t> bytes;
    if (subsampling == 444 && colors == 3) {
#ifdef IMRESTORE_WITH_LIBJPEG
        bytes = imageio::encode_libjpeg("degraded.jpg", color, quality, 444);
#else
        throw Error("jpeg: 4:4:4 subsampling needs libjpeg, which this build lacks");
#endif
    } else {
        bytes = encode_image("degraded.jpg", color, o);
    }
    const Image back = decode_image("degraded.jpg", bytes);
    if (back.width != image.width || back.height != image.height)
        throw Error("jpeg: the JPEG round trip changed the image size");
    const int bc = back.channels;                        // stb (without libjpeg) returns gray as RGB
    const uint8_t* back_samples = back.data<uint8_t>();  // a JPEG decodes to 8 bits
    for (size_t i = 0, n = size_t(image.width) * image.height; i < n; ++i)
        for (int c = 0; c < colors; ++c) samples[i * ch + c] = back_samples[i * bc + (bc == colors ? c : 1)];
    if (file) *file = std::move(bytes);
}

Image degrade(const Image& clean, const Degradation& d, uint64_t seed, std::vector<uint8_t>* jpeg_file) {
    d.validate();
    if (clean.color_channels() != 1 && clean.color_channels() != 3)
        throw Error("degrade: " + std::to_string(clean.channels) + " channels; expected gray or RGB (with alpha)");
    if (!d.mix.empty()) return photo_mix(clean, seed);  // "photo", the only mix (validate)
    Image out = to_8bit(clean);
    if (d.blur > 0) gaussian_blur(out, d.blur);
    if (d.noise > 0) add_gaussian_noise(out, d.noise, seed);
    if (d.jpeg > 0) jpeg_round_trip(out, d.jpeg, d.subsampling, jpeg_file);  // the last step: the file holds it
    return out;
}

}  // namespace imr
