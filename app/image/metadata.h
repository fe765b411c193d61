// The ICC profile and EXIF of image files: found in the bytes a file was read
// from, and put into the bytes an encoder wrote, so they work the same
// whichever codec (OpenCV, libjpeg, libpng, stb) decoded or encoded the
// pixels. One file per container does the work: metadata_jpeg.cpp (APP1
// Exif, APP2 ICC_PROFILE chunks), metadata_png.cpp (eXIf, iCCP),
// metadata_webp.cpp (VP8X with ICCP and EXIF chunks), metadata_tiff.cpp (tag
// 34675 and the EXIF/GPS directories); this file's .cpp checks what they
// find and keeps EXIF right after the pixels were turned upright.
//
// Files are untrusted: metadata that is malformed, inconsistent or larger
// than kMaxMetadataBytes is dropped (with a line in `dropped` saying why),
// never an error of the image and never read out of bounds. Formats that
// hold neither (BMP, TGA, PNM) get none, silently; XMP and other metadata are
// not carried. Private to app/image/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/formats.h"
#include "image/image_io.h"

namespace imr::imageio {

// Larger ICC profiles or EXIF blocks are dropped (also the cap on inflating a
// PNG iCCP chunk, so a small file cannot unpack into gigabytes). Real ones
// are a few KB to a few MB.
constexpr size_t kMaxMetadataBytes = size_t(16) << 20;

// What was left out and why, one line each ("ICC profile dropped: ..."),
// for the user's warnings; callers prefix the file name.
using Dropped = std::vector<std::string>;
using Bytes = std::vector<uint8_t>;

// The metadata of a JPEG, PNG, WebP or TIFF file (none for other formats).
// The ICC profile must have a sound header (size, 'acsp'); the EXIF a TIFF
// header and a readable first directory.
ImageMetadata find_metadata(Format format, const Bytes& file, Dropped& dropped);

// The EXIF Orientation (tag 0x0112 of IFD0): 1..8, 1 when absent or invalid.
int exif_orientation(const Bytes& exif);

// After the pixels were turned upright by `applied` (1..8): Orientation
// becomes 1 and, for the orientations that swap width and height (5..8), so
// do PixelXDimension and PixelYDimension; the thumbnail (IFD1) is unlinked,
// as it shows the unrestored photo the old way up. Patched in place, so
// everything else (maker notes with absolute offsets too) stays as it was.
void set_exif_upright(Bytes& exif, int applied);

// Puts `metadata` into `file`, encoded bytes of `format`, for an image of
// `color_channels` (1 gray, 3 RGB): the ICC profile only where its color
// space ('GRAY' or 'RGB ', header bytes 16..19) matches. Where the bytes are
// not a well-formed file of that format, or a part does not fit the format's
// limits, that part is left out (and said in `dropped`).
void embed_metadata(Format format, Bytes& file, const ImageMetadata& metadata, int color_channels, Dropped& dropped);

// ---------------------------------------------------------------- one file per container
// find_*: the raw ICC profile and EXIF block as the file holds them (checked
// by find_metadata, which also removes an "Exif\0\0" prefix); embed_*: the
// file with them in (either may be empty: none), replacing any the encoder
// wrote; unchanged, and a line in `dropped`, when it cannot be parsed.

void find_jpeg_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped);
void find_png_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped);
void find_webp_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped);
void find_tiff_metadata(const Bytes& file, ImageMetadata& found, Dropped& dropped);

void embed_jpeg_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped);
void embed_png_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped);
void embed_webp_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped);
void embed_tiff_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped);

}  // namespace imr::imageio
