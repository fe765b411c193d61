// The `photo` degradation mix (`imrestore degrade|eval --mix photo`): what a
// photo goes through between the scene and the user, as a camera and the web
// leave it, for the general `photo` model whose input's problem is unknown.
// The one written definition is weights/README.md ("Degradations", the photo
// mix); weights/train.py (photo_mix) draws the same distribution per training
// patch in torch. Per image, each step skipped or not:
//
//   blur -> camera noise -> camera JPEG -> {resample, web JPEG} in random order
//
// Everything random is drawn from the per-file seed (image_noise_seed of
// --seed and the file name), with the project's own generator
// (eval/degradations.h): the same seed and name give the same image on every
// machine and build. Each step rounds to 8 bits, as a file between the steps
// would; alpha is never touched; a gray image gets luma noise only and a
// grayscale JPEG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/image_io.h"

namespace imr {

// The named mixes of --mix (today: "photo").
const std::vector<std::string>& degradation_mix_names();

// Signal-dependent camera noise in linear light: variance shot * x + read for
// a linear sample x in [0, 1] (Poisson-Gaussian, Gaussian approximation),
// split into luma noise (white) and chroma noise (two opponent-colour fields,
// Gaussian-blurred by chroma_sigma px and renormalized: demosaicing and
// in-camera chroma noise reduction leave it spatially correlated), chroma
// chroma_ratio times as strong as luma. Each channel's variance stays
// shot * x + read.
struct CameraNoise {
    double shot = 0;          // variance per unit of linear signal
    double read = 0;          // variance at black
    double chroma_ratio = 1;  // chroma std / luma std
    double chroma_sigma = 1;  // px, the Gaussian correlation of the chroma fields
};

// Downscale by `factor`, round to 8 bits, upscale back to the same size,
// round: Pillow's (and torch's antialias=True) separable resampling, the
// kernel stretched by the scale when downscaling (antialiased).
struct Resample {
    double factor = 1;  // 0 < factor <= 1; the small size is max(1, round(n * factor)) per axis
    bool down_bicubic = true, up_bicubic = true;  // else bilinear (triangle)
};

struct JpegStep {
    int quality = 0;        // 0: skipped
    int subsampling = 420;  // 420 or 444
};

// One draw of the mix: which steps run, with what.
struct PhotoMixParams {
    double blur = 0;  // Gaussian sigma px (eval/degradations.h gaussian_blur); 0: skipped
    bool noise_on = false;
    CameraNoise noise;
    JpegStep camera_jpeg;
    bool resample_on = false;
    Resample resample;
    JpegStep web_jpeg;
    bool web_jpeg_first = false;  // web JPEG then resample (a JPEG the viewer rescales), else resample then JPEG
    uint64_t noise_seed = 0;      // the noise fields' stream

    bool is_noop() const {
        return blur <= 0 && !noise_on && camera_jpeg.quality <= 0 && !resample_on && web_jpeg.quality <= 0;
    }
    // "blur 0.8, noise (shot 0.0012, read 1.1e-06, chroma 2.1x sigma 1.3), jpeg 85, resample 0.71 bicubic/bilinear,
    // jpeg 47 4:4:4" in the order applied; "none" when every step was skipped.
    std::string describe() const;
};

// The mix's distribution (weights/README.md): every parameter is drawn, in a
// fixed order, whether its step runs or not, so one step's skip never shifts
// another's draw.
PhotoMixParams draw_photo_mix(uint64_t seed);

double srgb_to_linear(double v);  // IEC 61966-2-1, v and the result in [0, 1]
double linear_to_srgb(double v);

// The steps, in place on an 8-bit image's color channels.
void add_camera_noise(Image& image, const CameraNoise& n, uint64_t seed);
void resample_round_trip(Image& image, const Resample& r);
void jpeg_step(Image& image, const JpegStep& j);

// What `--mix photo` applies (the evaluation's draw): draw_photo_mix(seed),
// except that a draw skipping every step is replaced by the draw of the next
// seed of splitmix64 from `seed` (and so on), so every evaluated photo is
// degraded and its input PSNR finite. Training (weights/train.py) keeps those
// draws: 4.3% of its patches are clean, so the model learns to leave a clean
// photo alone.
PhotoMixParams draw_photo_mix_for_eval(uint64_t seed);

// `p` applied to an 8-bit copy of `clean`.
Image apply_photo_mix(const Image& clean, const PhotoMixParams& p);

// The mix of one file: draw_photo_mix_for_eval(seed) applied (seed:
// image_noise_seed of --seed and the file name).
Image photo_mix(const Image& clean, uint64_t seed);

}  // namespace imr
