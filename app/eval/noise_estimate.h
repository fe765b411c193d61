// A classical estimate of an image's additive noise, for models that take a
// noise level (--noise-level not given) and `imrestore degrade
// --estimate-noise`: the median absolute deviation of a fine-scale
// high-pass band, on the flattest pixels.
//
// The estimator (after Immerkaer, "Fast noise variance estimation", 1996,
// made robust as Tai and Yang, 2008, and with the median of Donoho's wavelet
// estimate):
//   1. each color channel is filtered with Immerkaer's 3x3 mask
//      [1 -2 1; -2 4 -2; 1 -2 1] / 6, the difference of two Laplacians,
//      which is zero on any local plane and ramp and passes white noise of
//      sigma s as noise of sigma s (its weights' squares sum to 1);
//   2. pixels whose 3x3 neighbourhood holds a clipped sample (0 or the
//      largest value: noise cut off there is not Gaussian) are left out, and
//      so are the 10% of the rest with the strongest Sobel gradient (edges;
//      for Gaussian noise the Sobel and Immerkaer responses of a pixel are
//      independent, their masks being orthogonal, so this biases nothing on
//      a flat image);
//   3. sigma = 1.4826 * median(|response|) over the pixels kept, all color
//      channels pooled (1.4826 = 1 / Phi^-1(3/4): exact for Gaussian noise);
//   4. where that is 2 or more, again over the windows whose mean is at
//      least twice it from 0 and 255 (if there are 1000 and 5% of them):
//      near the ends noise is clipped so often that the windows without a
//      clipped sample have truncated noise (10% low at sigma 50 without it).
// Known bias: fine texture (foliage, fabric, gravel, text) passes the mask
// and reads as noise, so textured photos get too high an estimate at low
// sigma (the held-out error is measured in weights/README.md); clipping
// at high sigma and JPEG compression (which removes fine-scale noise) bias
// it low. Sub-8-bit rounding alone reads as about 0.3.
#pragma once

#include "image/image_io.h"

namespace imr {

// The noise sigma of `image`'s color channels, on the 0-255 scale (16-bit
// samples scaled to it); 0 for an image of fewer than 3x3 pixels or with no
// unclipped pixel.
double estimate_noise_sigma(const Image& image);

}  // namespace imr
