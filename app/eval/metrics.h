// Image quality metrics as restoration papers report them, so our numbers
// can be put next to published ones: PSNR and SSIM on 8-bit RGB samples
// (BasicSR's calculate_psnr/calculate_ssim with crop_border=0 and
// test_y_channel=False; SSIM as Wang et al.'s MATLAB ssim_index).
// Alpha is ignored; a gray image counts as R=G=B, which gives the same
// numbers as its one channel.
#pragma once

#include <vector>

#include "image/image_io.h"

namespace imr {

constexpr int kSsimWindow = 11;      // 11x11 Gaussian window ...
constexpr double kSsimSigma = 1.5;   // ... of sigma 1.5
constexpr double kSsimC1 = 6.5025;   // (0.01 * 255)^2
constexpr double kSsimC2 = 58.5225;  // (0.03 * 255)^2

// Throws imr::Error("what: ...") unless the two are 8-bit with the same size
// and color channels (what SSIM and PSNR compare).
void check_comparable(const Image& reference, const Image& test, const std::string& what);

// A copy with only the color channels (alpha dropped), gray replicated to
// RGB when colors is 3. Lets a gray clean image meet an RGB restoration.
Image color_channels_as(const Image& image, int colors);

// Mean squared error over all color samples (0-255 scale).
double mse_8bit(const Image& reference, const Image& test);
// 10 log10(255^2 / MSE); +infinity for identical images.
double psnr_8bit(const Image& reference, const Image& test);
// Mean SSIM over the 'valid' window positions ((H-10) x (W-10)), per color
// channel, then averaged over channels; float64 throughout. Needs at least
// 11x11 pixels (else imr::Error).
double ssim_8bit(const Image& reference, const Image& test);

// The 11-tap normalized Gaussian (cv2.getGaussianKernel(11, 1.5)).
std::vector<double> ssim_window_1d();

}  // namespace imr
