// Image files in and out: read_image, write_image and their checks (the API
// is image_io.h). This file decides which codec handles what; the work is
// done by one file per job in app/image/:
//   formats.{h,cpp}      the format table: names, extensions, what each codec
//                        reads and writes, what each format can hold;
//   probe.{h,cpp}        sniffing the format from the bytes, structural and
//                        size checks before decoding, turning pixels upright;
//   metadata.{h,cpp}     the ICC profile and EXIF: found in the file's bytes,
//                        put into the encoder's (metadata_jpeg/png/webp/tiff.cpp,
//                        one per container; tiff_directory.{h,cpp} for TIFF
//                        directories, which EXIF is made of);
//   codecs.h             the decoders/encoders below, declared for this file:
//     codec_opencv.cpp   OpenCV (only in a build with OpenCV);
//     codec_libjpeg.cpp  libjpeg(-turbo): JPEG wherever OpenCV does not take it;
//     codec_stb.cpp      stb_image / stb_image_write (their only compilation);
//     codec_libpng.cpp   libpng: PNG wherever OpenCV does not write it;
//     builtin_pnm.cpp    the PNM reader and encoder;
//     builtin_psd.cpp    the PSD reader (composite image);
//   image_batch.{h,cpp}  images <-> the models' NCHW planes.
// The atomic write itself is app/util/atomic_file.{h,cpp}.
// Reading: whole file into memory, sniff, probe, find the metadata, decode,
// normalize channels, apply EXIF orientation. Writing: check
// format/options/channels, convert the bit depth, encode to memory, embed the
// metadata, write atomically.
// A new format: a row in formats(), its magic in sniff(), size checks in
// probe.cpp if its decoder trusts the header, and a case in read_image /
// write_image if Codec::Auto should not prefer OpenCV where OpenCV has it.
//
// Decisions (see also image_io.h):
// - Codec::Auto reads JPEG, TIFF and WebP with OpenCV; PNG, BMP, GIF (first
//   frame) and TGA with stb (stb decodes PNG as fast as libpng here, 8/16-bit
//   and every color type, without libpng's stderr warnings; OpenCV 4.6 drops
//   the alpha of 32-bit BMPs; it still reads the RLE BMPs stb cannot, as a
//   fallback); PSD (composited) with the built-in reader (stb's has undefined
//   behaviour on semi-transparent pixels).
//   It writes PNG, JPEG, BMP, TIFF and WebP with OpenCV and TGA with stb,
//   except gray+alpha PNG (libpng: OpenCV's PNG writer has no gray+alpha) and BMP with alpha (stb: a v4 header with an
//   alpha mask that both codecs read back; OpenCV writes 32-bit BI_RGB and ignores that alpha itself). Without OpenCV
//   every format goes to stb (no TIFF, no WebP), except JPEG, which goes to libjpeg(-turbo) wherever OpenCV does not
//   take it (also --codec stb): stb's JPEG decoder writes past its Huffman tables on invalid files and its encoder is
//   undefined behaviour on every image; libjpeg is also faster (docs/performance.md, "Pipeline and codecs").
// - PNG that OpenCV does not write (no OpenCV, --codec stb, gray+alpha) goes
//   through libpng with OpenCV's settings for a given level, so every build
//   writes the same size at the same speed (8 and 16 bit, 1 to 4 channels;
//   stb_image_write has no 16-bit and keeps its level in a global).
// - PNM (P1-P6) is read by a built-in reader (stb 2.27 byte-swaps 16-bit PNM
//   and misses truncation) unless OpenCV is forced, and written (P5/P6) by a
//   built-in encoder whatever the codec.
// - Every format's declared size is parsed here (probe.cpp) before any
//   decoder runs, and checked against the pixel limit (--max-pixels, by
//   default what the machine's memory allows, at most 2^28) and an estimate
//   of the whole restore's memory; BMP (also RLE), TGA, PSD, GIF and PNM
//   headers are checked against the file size as well, so a corrupt or
//   hostile header cannot make a decoder allocate gigabytes. JPEG Huffman
//   tables are validated first (stb_image 2.27 writes past its tables on
//   invalid ones).
// - Radiance HDR and other floating-point images are not read: the models
//   work on display-referred samples, and tone mapping would be a guess.
// - Gray PNGs (color types 0 and 4) come back from OpenCV as BGR(A); they are
//   turned back into 1 or 2 channels, as stb returns them.
// - GIF comes out of stb as RGBA, PSD out of the built-in reader with its
//   alpha channel; the alpha is dropped when every pixel is opaque. 32-bit BMPs whose alpha is all zero (plain BGRX)
//   read as RGB.
// - Gray+alpha is written as RGBA (R=G=B) to BMP, TIFF and WebP, and to PNG
//   only when OpenCV is forced; 1-channel WebP is written as RGB.
// - EXIF orientation (JPEG APP1, PNG eXIf, WebP EXIF) is read from the
//   metadata (metadata.cpp) and applied after decoding, with either codec, so
//   alpha and 16-bit samples survive (OpenCV applies it only when it also
//   drops alpha and depth); the carried EXIF then says Orientation 1. TIFF's
//   orientation tag is left to the decoder (OpenCV 4.6's applies it, 8- and
//   16-bit) and not carried.
// - Metadata (ICC profile, EXIF) is found in the input's bytes and embedded in
//   the encoder's output bytes by our own code (metadata.h), not by a codec,
//   so every codec and build carries the same: JPEG, PNG, WebP and TIFF in and
//   out, whatever the pair; BMP, TGA and PNM hold none and get none, silently;
//   XMP is not carried. WriteOptions::metadata = false (--strip) writes none.
//   Malformed metadata is dropped with a warning, never an error of the image.
// - A JPEG without an end-of-image marker after its scan, and a PNG without
//   IEND, are rejected as truncated (libjpeg would return a half-gray image).
// - Writing never converts silently: 16-bit to an 8-bit-only format, or alpha
//   to a format without alpha, is an imr::Error naming the file, unless
//   WriteOptions::bit_depth = 8 asks for 8-bit output.
// - Writes go to an unnamed O_TMPFILE (a named hidden temporary where the
//   file system lacks it) that is linked into place when complete
//   (app/util/atomic_file.cpp). It is not fsync'ed: the link/rename keeps
//   readers from seeing a partial file if the process dies, not if the
//   machine loses power.
#include "image/image_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "error.h"
#include "image/codecs.h"
#include "image/formats.h"
#include "image/metadata.h"
#include "image/probe.h"
#include "util/atomic_file.h"

namespace imr {

using namespace imageio;

namespace fs = std::filesystem;

// ---------------------------------------------------------------- reading helpers

std::vector<uint8_t> read_image_file(const std::string& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) throw Error(path + ": no such file");
    if (st.type() == fs::file_type::directory) throw Error(path + ": is a directory");
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(path + ": cannot open: " + std::generic_category().message(errno));
    std::vector<uint8_t> data;
    // stb takes the size as an int.
    constexpr size_t kMaxFile = size_t(INT32_MAX);
    if (st.type() == fs::file_type::regular) {
        uintmax_t size = fs::file_size(path, ec);
        if (!ec && size > kMaxFile) throw Error(path + ": file too large (" + std::to_string(size) + " bytes)");
        if (!ec) data.reserve(size_t(size));
    }
    uint8_t chunk[1 << 16];
    for (;;) {
        size_t got = std::fread(chunk, 1, sizeof chunk, f.get());
        if (got) {
            if (data.size() + got > kMaxFile) throw Error(path + ": file too large (over 2 GiB)");
            data.insert(data.end(), chunk, chunk + got);
        }
        if (got < sizeof chunk) {
            if (std::ferror(f.get())) throw Error(path + ": read error: " + std::generic_category().message(errno));
            break;
        }
    }
    return data;
}

namespace {

// Keeps channel 0 and, when `alpha`, the last channel (gray PNGs from OpenCV).
void collapse_to_gray(Image& img, bool alpha) {
    const int c = img.channels, oc = alpha ? 2 : 1;
    const size_t pixels = size_t(img.width) * img.height;
    with_samples(img, [&](auto* s) {
        for (size_t i = 0; i < pixels; ++i) {
            const auto g = s[i * c], a = s[i * c + c - 1];
            s[i * oc] = g;
            if (alpha) s[i * oc + 1] = a;
        }
    });
    img.shrink_samples(pixels * oc);
    img.channels = oc;
}

// Drops the alpha of an RGBA or gray+alpha image when every pixel has alpha == value.
void drop_alpha_if_all(Image& img, uint16_t value) {
    if (img.channels != 4 && img.channels != 2) return;  // RGBA or gray+alpha
    const int c = img.channels, oc = c - 1;
    const size_t pixels = size_t(img.width) * img.height;
    const bool dropped = with_samples(img, [&](auto* s) {
        for (size_t i = 0; i < pixels; ++i)
            if (s[i * c + oc] != value) return false;
        for (size_t i = 0; i < pixels; ++i)
            for (int k = 0; k < oc; ++k) s[i * oc + k] = s[i * c + k];
        return true;
    });
    if (!dropped) return;
    img.shrink_samples(pixels * oc);
    img.channels = oc;
}

// ---------------------------------------------------------------- writing helpers

uint8_t to8(uint16_t v16) {
    return uint8_t((uint32_t(v16) * 255u + 32767u) / 65535u);
}
uint16_t to16(uint8_t v8) {
    return uint16_t(v8 * 257u);
}

// The image at the other bit depth (8 <-> 16), each sample by to8 or to16.
Image change_depth(const Image& img, int depth) {
    Image out;
    out.width = img.width, out.height = img.height, out.channels = img.channels, out.bit_depth = depth;
    out.allocate();
    const size_t n = img.sample_count();
    if (depth == 8) {
        const uint16_t* in = img.data<uint16_t>();
        uint8_t* o = out.data<uint8_t>();
        for (size_t i = 0; i < n; ++i) o[i] = to8(in[i]);
    } else {
        const uint8_t* in = img.data<uint8_t>();
        uint16_t* o = out.data<uint16_t>();
        for (size_t i = 0; i < n; ++i) o[i] = to16(in[i]);
    }
    return out;
}

// Expands gray (1) to RGB (3) or gray+alpha (2) to RGBA (4).
Image expand_gray(const Image& img) {
    Image out;
    const int c = img.channels, oc = c + 2;
    out.width = img.width, out.height = img.height, out.channels = oc, out.bit_depth = img.bit_depth;
    out.allocate();
    const size_t pixels = size_t(img.width) * img.height;
    with_samples(img, [&](const auto* in) {
        using T = sample_type<decltype(in)>;
        T* o = out.data<T>();
        for (size_t i = 0; i < pixels; ++i) {
            const T g = in[i * c];
            o[i * oc] = o[i * oc + 1] = o[i * oc + 2] = g;
            if (c == 2) o[i * oc + 3] = in[i * c + 1];
        }
    });
    return out;
}

}  // namespace

// ---------------------------------------------------------------- public API

void check_writable_format(const std::string& path, Codec codec) {
    (void)writable_format(path, codec);
}

Image read_image(const std::string& path, Codec codec, uint64_t max_pixels, std::vector<std::string>* warnings) {
    check_codec_available(path, codec);
    return decode_image(path, read_image_file(path), codec, max_pixels, warnings);
}

Image decode_image(const std::string& path, const std::vector<uint8_t>& data, Codec codec, uint64_t max_pixels,
                   std::vector<std::string>* warnings) {
    check_codec_available(path, codec);
    if (data.empty()) throw Error(path + ": empty file");
    const std::string ext = lower_extension(path);
    const FormatInfo* by_ext = format_from_extension(ext, false);

    Format sniffed = sniff(data);
    if (sniffed == Format::Hdr) throw Error(path + ": Radiance HDR (floating-point) images are not supported");
    if (sniffed == Format::Unknown && by_ext && by_ext->format == Format::Tga) sniffed = Format::Tga;  // no magic
    if (sniffed == Format::Unknown) {
        if (by_ext)
            throw Error(path + ": cannot decode: not a " + by_ext->name + " file (starts with bytes " +
                        first_bytes_hex(data) + ")");
        throw Error(path + ": cannot decode: not an image format this build reads (known: " + join_extensions(false) +
                    ")");
    }
    const FormatInfo& fmt = *info_of(sniffed);
    if (!codec_reads(fmt, codec)) {
        if (!codec_reads(fmt, Codec::Auto))
            throw Error(path + ": " + fmt.name + " files cannot be read by this build (no OpenCV)");
        throw Error(path + ": codec '" + codec_name(codec) + "' cannot read " + fmt.name + " (use auto)");
    }

    Probe probe;  // structure and size
    if (fmt.format == Format::Jpeg) probe = probe_jpeg(data);
    if (fmt.format == Format::Png) probe = probe_png(data);
    if (!probe.problem.empty()) throw Error(path + ": cannot decode: " + probe.problem);

    // Size guard before any pixel memory is allocated, on every path: the
    // size from our own parse of the header (probe_*), the pixel limit, the
    // memory estimate, and for the formats that cannot compress much, the
    // file size the header implies (so a 2 KB RLE BMP cannot claim 30000^2).
    if (!probe.width) probe = probe_size(fmt.format, data);
    if (!probe.problem.empty()) throw Error(path + ": cannot decode: " + probe.problem);
    check_pixel_limit(path, probe.width, probe.height, std::max<uint64_t>(probe.channels, 1),
                      max_pixels ? max_pixels : default_max_pixels());
    if (const std::string problem = size_problem(fmt.format, data, probe.width, probe.height); !problem.empty())
        throw Error(path + ": cannot decode: " + problem);

    // PNM: the built-in reader unless OpenCV is forced (then only its header
    // and size are checked here). BMP: stb first, as OpenCV 4.6 drops the
    // alpha of 32-bit BMPs; OpenCV when stb fails (RLE-compressed BMPs).
    // PNG: stb (as fast as OpenCV's libpng on the samples, and silent, where
    // libpng prints warnings such as "iCCP: known incorrect sRGB profile"),
    // except beyond stb's limit of 1 GiB of decoded samples, which OpenCV
    // reads (up to 2^30 pixels).
    const bool png_beyond_stb =
        fmt.format == Format::Png && probe.width * probe.height * probe.channels * 2 >= (uint64_t(1) << 30);
    bool use_cv = codec == Codec::OpenCV ||
                  (codec == Codec::Auto && opencv_available() && fmt.cv_read && fmt.format != Format::Pnm &&
                   fmt.format != Format::Bmp && (fmt.format != Format::Png || png_beyond_stb));
    if (use_cv && fmt.format == Format::Pnm) (void)decode_pnm(path, data, true);
    Image img;
    try {
        if (use_cv) {
#ifdef IMRESTORE_WITH_OPENCV
            img = decode_opencv(path, data, fmt);
#endif
        } else if (fmt.format == Format::Pnm) {
            img = decode_pnm(path, data);
        } else if (fmt.format == Format::Psd) {
            img = decode_psd(path, data);
        } else if (fmt.format == Format::Bmp && codec == Codec::Auto && opencv_available()) {
            try {
                img = decode_stb(path, data, fmt);
            } catch (const Error&) {
#ifdef IMRESTORE_WITH_OPENCV
                img = decode_opencv(path, data, fmt);
                use_cv = true;
#endif
            }
#ifdef IMRESTORE_WITH_LIBJPEG
        } else if (fmt.format == Format::Jpeg) {
            img = decode_libjpeg(path, data);
#endif
        } else {
            img = decode_stb(path, data, fmt);
        }
    } catch (const std::bad_alloc&) {
        throw Error(path + ": out of memory while decoding");
    }

    if (use_cv && fmt.format == Format::Png && (probe.png_color_type == 0 || probe.png_color_type == 4) &&
        img.channels >= 3)
        collapse_to_gray(img, img.channels == 4);
    if (fmt.format == Format::Bmp && data.size() >= 34 && le32(&data[14]) >= 40 && le32(&data[30]) == 0)
        drop_alpha_if_all(img, use_cv ? 0 : 255);  // 32-bit BI_RGB without alpha (BGRX); stb turns all-0 into 255
    if (fmt.format == Format::Gif || fmt.format == Format::Psd) drop_alpha_if_all(img, img.max_value());

    Dropped dropped;
    img.metadata = find_metadata(fmt.format, data, dropped);
    for (const std::string& why : dropped)
        if (warnings) warnings->push_back(path + ": " + why);
    // (A TIFF's EXIF, rebuilt from its tags, has no Orientation: see the top.)
    const int orientation = exif_orientation(img.metadata.exif);
    apply_orientation(img, orientation);
    set_exif_upright(img.metadata.exif, orientation);
    return img;
}

void check_can_write(const std::string& path, int channels, int bit_depth, const WriteOptions& options, Codec codec) {
    const FormatInfo& fmt = writable_format(path, codec);
    const std::string ext = lower_extension(path);

    // Options.
    if (options.bit_depth != 0 && options.bit_depth != 8 && options.bit_depth != 16)
        throw Error(path + ": bit depth " + std::to_string(options.bit_depth) + " is not 0 (keep), 8 or 16");
    if (fmt.format == Format::Jpeg && (options.jpeg_quality < 1 || options.jpeg_quality > 100))
        throw Error(path + ": JPEG quality " + std::to_string(options.jpeg_quality) + " is outside 1..100");
    if (fmt.format == Format::Webp && options.webp_quality < 1)
        throw Error(path + ": WebP quality " + std::to_string(options.webp_quality) + " is below 1");
    if (fmt.format == Format::Png && (options.png_compression < 0 || options.png_compression > 9))
        throw Error(path + ": PNG compression " + std::to_string(options.png_compression) + " is outside 0..9");

    // What the format can hold.
    const int depth = options.bit_depth ? options.bit_depth : bit_depth;
    if (depth == 16 && !fmt.depth16) {
        if (options.bit_depth == 16) throw Error(path + ": " + fmt.name + " cannot hold 16-bit samples");
        throw Error(path + ": " + fmt.name +
                    " holds 8-bit samples only and the image is 16-bit (write it as .png or "
                    ".tif, or use --bit-depth 8)");
    }
    if ((channels == 2 || channels == 4) && !fmt.alpha)
        throw Error(path + ": " + fmt.name + " has no alpha channel and the image has one (write it as .png" +
                    (opencv_available() ? ", .tif, .webp" : "") + " or .tga)");
    if (fmt.format == Format::Pnm && ext == ".pgm" && channels != 1)
        throw Error(path + ": PGM holds gray images only and the image is RGB (write it as .ppm)");
}

void write_image(const std::string& path, const Image& image, const WriteOptions& options, Codec codec,
                 std::vector<std::string>* warnings) {
    write_atomically(path, encode_image(path, image, options, codec, warnings), options.overwrite);
}

std::vector<uint8_t> encode_image(const std::string& path, const Image& image, const WriteOptions& options, Codec codec,
                                  std::vector<std::string>* warnings) {
    const FormatInfo& fmt = writable_format(path, codec);
    const std::string ext = lower_extension(path);

    // The image itself.
    if (image.channels < 1 || image.channels > 4)
        throw Error(path + ": cannot write an image with " + std::to_string(image.channels) + " channels");
    if (image.bit_depth != 8 && image.bit_depth != 16)
        throw Error(path + ": cannot write an image of bit depth " + std::to_string(image.bit_depth));
    if (!image.consistent())
        throw Error(path + ": cannot write: inconsistent image (" + std::to_string(image.width) + "x" +
                    std::to_string(image.height) + "x" + std::to_string(image.channels) + ", " +
                    std::to_string(image.sample_count()) + " samples)");

    check_can_write(path, image.channels, image.bit_depth, options, codec);
    const int depth = options.bit_depth ? options.bit_depth : image.bit_depth;

    // Convert the bit depth and, where the encoder needs it, the channels.
    const Image* src = &image;
    Image converted;
    if (depth != image.bit_depth) {
        converted = change_depth(image, depth);  // the metadata stays in `image`, read from there below
        src = &converted;
    }
    const bool use_cv = fmt.format != Format::Pnm &&
                        (codec == Codec::OpenCV ||
                         (codec == Codec::Auto && opencv_available() && fmt.cv_write &&
                          !(fmt.format == Format::Png && src->channels == 2) &&  // OpenCV has no gray+alpha PNG
                          !(fmt.format == Format::Bmp && src->has_alpha())));    // stb writes BMP alpha OpenCV reads
    Image expanded;
    const bool needs_rgb = (fmt.format == Format::Pnm && ext == ".ppm") ||
                           (fmt.format == Format::Bmp && src->channels == 2) ||
                           (use_cv && (src->channels == 2 || (fmt.format == Format::Webp && src->channels == 1)));
    if (needs_rgb && src->color_channels() == 1) {
        expanded = expand_gray(*src);
        src = &expanded;
    }

    std::vector<uint8_t> bytes;
    if (fmt.format == Format::Pnm) {
        bytes = encode_pnm(*src);
    } else if (use_cv) {
#ifdef IMRESTORE_WITH_OPENCV
        bytes = encode_opencv(path, *src, ext, fmt, options);
#endif
#ifdef IMRESTORE_WITH_LIBJPEG
    } else if (fmt.format == Format::Jpeg) {
        bytes = encode_libjpeg(path, *src, options.jpeg_quality);
#endif
    } else {
        bytes = encode_stb(path, *src, fmt, options);
    }
    if (options.metadata && !image.metadata.empty()) {
        Dropped dropped;
        embed_metadata(fmt.format, bytes, image.metadata, src->color_channels(), dropped);
        for (const std::string& why : dropped)
            if (warnings) warnings->push_back(path + ": " + why);
    }
    return bytes;
}

}  // namespace imr
