// A photo in black and white stays black and white. An RGB image whose R, G
// and B are equal at every pixel (a scan saved as color, a JPEG whose chroma
// is exactly neutral: libjpeg decodes Cb = Cr = 128 to R = G = B) is a gray
// photo, and any color a model's output gives it is an artifact: the
// networks see color photos and leave specks of up to ~10 levels of color
// in a gray one (measured: `deblock` on skimage's camera at JPEG quality
// 10-95). Its output is therefore made neutral again, each pixel's R, G and
// B set to their mean: the gray nearest to the model's color (a 1-channel
// gray image's output is the mean of the model's float RGB rounded once,
// image_batch.h; this is the mean of the rounded samples, so the two can
// differ by one level). Alpha is left as it is.
//
// For the tasks that restore a photo's own colors only (keep_gray_wanted): a
// model of another task (a colorizer, a white balance) may mean to give a
// gray photo color.
#pragma once

#include <string>

#include "image/image.h"

namespace imr {

// Whether `image` has three color channels (RGB or RGBA) and R == G == B at
// every pixel. Stops at the first pixel that is not: one pixel's work for
// almost every color photo, one pass over the samples for a gray one.
bool is_neutral_rgb(const Image& image);

// Each pixel's R, G and B of an RGB(A) image set to their mean, rounded to
// the nearest sample value; nothing else changes. Throws
// imr::Error for an image without three color channels or inconsistent.
void make_neutral_rgb(Image& image);

// --keep-gray MODE for a model of task `task`: on, off, or auto (on for the
// bundled tasks, which restore an image's own colors: denoise, deblock,
// deblur, photo, sharpen). Throws imr::Error for another mode.
bool keep_gray_wanted(const std::string& mode, const std::string& task);

}  // namespace imr
