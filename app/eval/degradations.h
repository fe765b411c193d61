// The degradations of `imrestore degrade` and `imrestore eval`, with the same
// definitions as training (weights/train.py): Gaussian blur, additive
// Gaussian noise and a JPEG round trip, applied in that order when combined.
// They work on 8-bit samples; alpha is never touched, a gray image stays gray
// (noise per sample of its one channel, a grayscale JPEG).
//
// The noise comes from our own generator (xoshiro256** seeded through
// splitmix64, Box-Muller), not std:: distributions, whose output the C++
// standard leaves to each library: the same --seed gives the same noisy file
// on every machine and build.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/image_io.h"

namespace imr {

// --seed's default. The noise of a file depends on the seed and on the file's
// name only (image_noise_seed), never on the folder it sits in or the other
// files of the run, so `degrade` then `eval --degraded` equals `eval --noise`.
constexpr uint64_t kDefaultDegradeSeed = 0;

struct Degradation {
    double blur = 0;        // Gaussian sigma in pixels; 0: none
    double noise = 0;       // Gaussian sigma on the 0-255 scale; 0: none
    int jpeg = 0;           // JPEG quality 1..100; 0: none
    int subsampling = 420;  // the JPEG's chroma subsampling: 420 (training's default) or 444

    // A named mix instead of the above ("photo": eval/photo_mix.h); empty: none.
    std::string mix{};
    bool any() const { return blur > 0 || noise > 0 || jpeg > 0 || !mix.empty(); }
    // Whether --seed matters (noise, or a mix, whose every draw is seeded).
    bool seeded() const { return noise > 0 || !mix.empty(); }
    // "blur 1.5, noise 25, jpeg 20" (in the order they are applied; "jpeg 20 4:4:4" for 444).
    std::string describe() const;
    // Throws imr::Error for values out of range (blur 0..50, noise 0..255, jpeg 0..100,
    // subsampling 420 or 444), an unknown mix, or a mix with blur/noise/jpeg/subsampling (a
    // mix is the whole degradation).
    void validate() const;
};

// The degradations a model of `task` is measured at (the kinds of its
// README row; --validate-precision's, with its own seed): noise 15, 25, 50 for denoise; JPEG 10..40 for
// deblock; blur 1.5 + noise 2 for deblur; the photo mix for photo; the clean
// images as they are (one empty Degradation) otherwise.
std::vector<Degradation> task_standard_degradations(const std::string& task);

// The values a model's extra inputs get for images of degradation `d`, in the
// model's extra_inputs order, as the runner takes them (RunnerOptions::
// extra_inputs): noise_level the noise's sigma / 255, jpeg_quality the
// quality / 100 (as the non-blind models of the literature are measured).
// Throws imr::Error naming the model where `d` has no such level to give (a
// mix, or no noise or no JPEG): `what` says which command asked.
std::vector<std::pair<std::string, float>> degradation_levels(const std::string& model_name,
                                                              const std::vector<std::string>& extra_inputs,
                                                              const Degradation& d, const std::string& what);

// splitmix64 step: expands one 64-bit seed into well-mixed state words.
uint64_t splitmix64(uint64_t& state);

// Standard normal numbers from xoshiro256** + Box-Muller (both values of each
// pair used). Doubles in, doubles out: the same sequence everywhere.
class NormalRng {
public:
    explicit NormalRng(uint64_t seed);
    uint64_t next_u64();
    double next_uniform();  // (0, 1]: never 0, so log() is finite
    double next_normal();

private:
    uint64_t s_[4];
    double spare_ = 0;
    bool has_spare_ = false;
};

// The per-file noise seed: seed mixed with the FNV-1a hash of the file name
// (the last path component, e.g. "chelsea.png").
uint64_t image_noise_seed(uint64_t seed, const std::string& file_name);

// 8-bit copy of an image (16-bit samples: round(v / 257)); 8-bit images unchanged.
Image to_8bit(const Image& image);

// Normalized Gaussian weights for offsets -r..r, r = ceil(3 * sigma).
std::vector<double> gaussian_kernel(double sigma);

// Each degradation in place, on an 8-bit image's color channels.
void gaussian_blur(Image& image, double sigma);
void add_gaussian_noise(Image& image, double sigma, uint64_t seed);
// subsampling: 420 (libjpeg's default, as training's) or 444 (color at full
// resolution; needs libjpeg, which every build with OpenCV has). Gray images
// have no chroma: the same bytes either way.
// file: where given, the JPEG's bytes (for the JPEG projection of a model's output).
void jpeg_round_trip(Image& image, int quality, int subsampling = 420, std::vector<uint8_t>* file = nullptr);

// OpenCV's BORDER_REFLECT_101 (numpy/torch 'reflect'): ... 2 1 | 0 1 2 ... n-1 | n-2 ...
// of index i in 0..n-1; folds as often as needed, so radii wider than the
// image are defined too (the blurs' border).
int reflect101(int i, int n);

// True when jpeg_round_trip uses libjpeg (through OpenCV), as training does;
// false in a build without OpenCV, where stb's encoder and decoder stand in
// (same quantization tables and 4:2:0 up to quality 90, 4:4:4 above, but other
// rounding: results differ slightly from libjpeg's; 4:4:4 on request is refused).
bool jpeg_is_libjpeg();

// blur, then noise (seeded with `seed`, see image_noise_seed), then JPEG, on
// an 8-bit copy of `clean`; or d.mix's draw for `seed` (eval/photo_mix.h).
// jpeg_file: where given and the degradation ends with a JPEG, that file's
// bytes (else left empty).
Image degrade(const Image& clean, const Degradation& d, uint64_t seed, std::vector<uint8_t>* jpeg_file = nullptr);

}  // namespace imr
