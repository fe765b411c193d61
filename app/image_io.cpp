// Image files in and out. Layout of this file:
//   1. formats: the table of what each format and codec can do;
//   2. reading: whole file into memory, sniff the format from its bytes,
//      structural checks (JPEG/PNG truncation), decode with OpenCV or stb,
//      normalize channels, apply EXIF orientation;
//   3. writing: check format/options/channels, convert the bit depth,
//      encode to memory (OpenCV, stb, or the built-in PNG/PNM encoders),
//      then write a temporary file next to the target and rename it.
//
// Decisions (see also image_io.h):
// - Codec::Auto reads JPEG, TIFF and WebP with OpenCV; PNG, BMP, GIF (first
//   frame), TGA and PSD (composited) with stb (stb decodes PNG as fast as
//   libpng here, 8/16-bit and every color type, without libpng's stderr
//   warnings; OpenCV 4.6 drops the alpha of 32-bit BMPs; it still reads the
//   RLE BMPs stb cannot, as a fallback).
//   It writes PNG, JPEG, BMP, TIFF and WebP with OpenCV and TGA with stb,
//   except gray+alpha PNG (built-in encoder: OpenCV's PNG writer has no
//   gray+alpha) and BMP with alpha (stb: a v4 header with an alpha mask that
//   both codecs read back; OpenCV writes 32-bit BI_RGB and ignores that alpha
//   itself). Without OpenCV every format goes to stb (no TIFF, no WebP).
// - PNG written by the stb codec goes through a built-in encoder (PNG filters
//   + stb's zlib): it writes 8 and 16 bit, 1 to 4 channels, and takes the
//   compression level per call (stb_image_write keeps it in a global).
// - PNM (P1-P6) is read by a built-in reader (stb 2.27 byte-swaps 16-bit PNM
//   and misses truncation) unless OpenCV is forced, and written (P5/P6) by a
//   built-in encoder whatever the codec.
// - BMP, TGA, PSD, GIF and PNM headers are checked against the file size
//   before decoding, so a corrupt header cannot make a decoder allocate
//   gigabytes and read zeros past the end of the file.
// - Radiance HDR and other floating-point images are not read: the models
//   work on display-referred samples, and tone mapping would be a guess.
// - Gray PNGs (color types 0 and 4) come back from OpenCV as BGR(A); they are
//   turned back into 1 or 2 channels, as stb returns them.
// - GIF and PSD come out of stb as RGBA; the alpha is dropped when every pixel
//   is opaque. 32-bit BMPs whose alpha is all zero (plain BGRX) read as RGB.
// - Gray+alpha is written as RGBA (R=G=B) to BMP, TIFF and WebP, and to PNG
//   only when OpenCV is forced; 1-channel WebP is written as RGB.
// - EXIF orientation (JPEG APP1, PNG eXIf, WebP EXIF) is parsed here and
//   applied after decoding, with either codec, so alpha and 16-bit samples
//   survive (OpenCV applies it only when it also drops alpha and depth).
//   TIFF's orientation tag is not applied.
// - A JPEG without an end-of-image marker after its scan, and a PNG without
//   IEND, are rejected as truncated (libjpeg would return a half-gray image).
// - Writing never converts silently: 16-bit to an 8-bit-only format, or alpha
//   to a format without alpha, is an imr::Error naming the file, unless
//   WriteOptions::bit_depth = 8 asks for 8-bit output.
// - Writes go to an unnamed O_TMPFILE (a named hidden temporary where the
//   file system lacks it) that is linked into place when complete. It is not
//   fsync'ed: the link/rename keeps readers from seeing
//   a partial file if the process dies, not if the machine loses power.
#include "image_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "error.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STBI_NO_PIC
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#ifdef IMRESTORE_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace imr {
namespace {

namespace fs = std::filesystem;

// Absurd-size guard: more samples than this is refused before decoding
// (4 GiB of uint16 samples).
constexpr uint64_t kMaxSamples = uint64_t(1) << 31;

// ---------------------------------------------------------------- formats

enum class Format { Unknown, Png, Jpeg, Bmp, Tiff, Webp, Pnm, Gif, Tga, Psd, Hdr };

struct FormatInfo {
    Format format;
    const char* name;
    std::vector<const char*> read_ext;   // extensions that name this format when reading
    std::vector<const char*> write_ext;  // extensions it can be written to (empty: read-only)
    bool cv_read, stb_read;
    bool cv_write, stb_write;  // PNM: built-in encoder, counted as both
    bool alpha;                // can hold alpha when written
    bool depth16;              // can hold 16-bit samples when written
};

const std::vector<FormatInfo>& formats() {
    static const std::vector<FormatInfo> table = {
        {Format::Png, "PNG", {".png"}, {".png"}, true, true, true, true, true, true},
        {Format::Jpeg, "JPEG", {".jpg", ".jpeg"}, {".jpg", ".jpeg"}, true, true, true, true, false, false},
        {Format::Bmp, "BMP", {".bmp"}, {".bmp"}, true, true, true, true, true, false},
        {Format::Tiff, "TIFF", {".tif", ".tiff"}, {".tif", ".tiff"}, true, false, true, false, true, true},
        {Format::Webp, "WebP", {".webp"}, {".webp"}, true, false, true, false, true, false},
        {Format::Pnm,
         "PNM",
         {".pbm", ".pgm", ".ppm", ".pnm"},
         {".pgm", ".ppm", ".pnm"},
         true,
         true,
         true,
         true,
         false,
         true},
        {Format::Gif, "GIF", {".gif"}, {}, false, true, false, false, false, false},
        {Format::Tga, "TGA", {".tga"}, {".tga"}, false, true, false, true, true, false},
        {Format::Psd, "PSD", {".psd"}, {}, false, true, false, false, false, false},
    };
    return table;
}

const FormatInfo* info_of(Format f) {
    for (const auto& i : formats())
        if (i.format == f) return &i;
    return nullptr;
}

std::string lower_extension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

bool codec_reads(const FormatInfo& f, Codec codec) {
    bool cv = opencv_available() && f.cv_read;
    if (codec == Codec::OpenCV) return cv;
    if (codec == Codec::Stb) return f.stb_read;
    return cv || f.stb_read;
}

bool codec_writes(const FormatInfo& f, Codec codec) {
    bool cv = opencv_available() && f.cv_write;
    if (codec == Codec::OpenCV) return cv;
    if (codec == Codec::Stb) return f.stb_write;
    return cv || f.stb_write;
}

// A format readable (write = false) or writable by this build under some codec.
const FormatInfo* format_from_extension(const std::string& ext, bool write) {
    for (const auto& f : formats()) {
        const auto& list = write ? f.write_ext : f.read_ext;
        for (const char* e : list)
            if (ext == e && (write ? codec_writes(f, Codec::Auto) : codec_reads(f, Codec::Auto))) return &f;
    }
    return nullptr;
}

std::string join_extensions(bool write) {
    std::string out;
    for (const auto& f : formats()) {
        if (write ? !codec_writes(f, Codec::Auto) : !codec_reads(f, Codec::Auto)) continue;
        for (const char* e : write ? f.write_ext : f.read_ext) out += (out.empty() ? "" : " ") + std::string(e);
    }
    return out;
}

void check_codec_available(const std::string& path, Codec codec) {
    if (codec == Codec::OpenCV && !opencv_available())
        throw Error(path + ": codec 'opencv' is not available: this build has no OpenCV (use auto or stb)");
}

// ---------------------------------------------------------------- byte helpers

uint32_t be16(const uint8_t* p) {
    return uint32_t(p[0]) << 8 | p[1];
}
uint32_t be32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint32_t le16(const uint8_t* p) {
    return uint32_t(p[1]) << 8 | p[0];
}
uint32_t le32(const uint8_t* p) {
    return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
}

Format sniff(const std::vector<uint8_t>& d) {
    auto starts = [&](const char* magic, size_t n, size_t at = 0) {
        return d.size() >= at + n && std::memcmp(d.data() + at, magic, n) == 0;
    };
    if (starts("\x89PNG\r\n\x1a\n", 8)) return Format::Png;
    if (starts("\xff\xd8\xff", 3)) return Format::Jpeg;
    if (starts("GIF87a", 6) || starts("GIF89a", 6)) return Format::Gif;
    if (starts("II*\0", 4) || starts("MM\0*", 4)) return Format::Tiff;
    if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return Format::Webp;
    if (starts("8BPS", 4)) return Format::Psd;
    if (starts("BM", 2) && d.size() >= 26) return Format::Bmp;
    if (starts("#?RADIANCE", 10) || starts("#?RGBE", 6)) return Format::Hdr;
    if (d.size() >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && std::isspace(d[2])) return Format::Pnm;
    return Format::Unknown;
}

std::string first_bytes_hex(const std::vector<uint8_t>& d) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < d.size() && i < 4; ++i) {
        if (i) s += ' ';
        s += digits[d[i] >> 4];
        s += digits[d[i] & 15];
    }
    return s;
}

// ---------------------------------------------------------------- EXIF orientation

// Orientation tag (0x0112) of IFD0 in a TIFF-structured block (an EXIF payload
// or a TIFF file); 1 when absent or malformed.
int tiff_orientation(const uint8_t* t, size_t n) {
    if (n < 8) return 1;
    bool le;
    if (t[0] == 'I' && t[1] == 'I')
        le = true;
    else if (t[0] == 'M' && t[1] == 'M')
        le = false;
    else
        return 1;
    auto u16 = [&](size_t at) { return le ? uint32_t(t[at]) | uint32_t(t[at + 1]) << 8 : be16(t + at); };
    auto u32 = [&](size_t at) { return le ? le32(t + at) : be32(t + at); };
    if (u16(2) != 42) return 1;
    uint64_t ifd = u32(4);
    if (ifd + 2 > n) return 1;
    uint32_t count = u16(size_t(ifd));
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t e = ifd + 2 + 12 * uint64_t(i);
        if (e + 12 > n) return 1;
        if (u16(size_t(e)) != 0x0112) continue;
        if (u16(size_t(e) + 2) != 3) return 1;  // must be SHORT
        uint32_t v = u16(size_t(e) + 8);
        return v >= 1 && v <= 8 ? int(v) : 1;
    }
    return 1;
}

int exif_payload_orientation(const uint8_t* p, size_t n) {
    if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) p += 6, n -= 6;
    return tiff_orientation(p, n);
}

// What the structural checks found: orientation, PNG color type, or a problem.
struct Probe {
    int orientation = 1;
    int png_color_type = -1;
    uint64_t width = 0, height = 0, channels = 0;  // from the header, when parsed (0: unknown)
    std::string problem;                           // non-empty: the file is corrupt or truncated
};

Probe probe_jpeg(const std::vector<uint8_t>& d) {
    Probe r;
    const size_t n = d.size();
    size_t pos = 2, scan = 0;
    bool have_exif = false;
    while (pos + 2 <= n) {
        if (d[pos] != 0xFF) {
            r.problem = "corrupt JPEG marker structure at byte " + std::to_string(pos);
            return r;
        }
        uint8_t m = d[pos + 1];
        if (m == 0xFF) {  // fill byte
            ++pos;
            continue;
        }
        if (m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
            pos += 2;
            continue;
        }
        if (m == 0xD9) {
            r.problem = "JPEG ends before any image data";
            return r;
        }
        if (pos + 4 > n) break;
        size_t len = be16(&d[pos + 2]);
        if (len < 2 || pos + 2 + len > n) break;
        if (m == 0xE1 && !have_exif && len >= 8 && std::memcmp(&d[pos + 4], "Exif\0\0", 6) == 0) {
            r.orientation = exif_payload_orientation(&d[pos + 4], len - 2);
            have_exif = true;
        }
        const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
        if (sof && len >= 8) {
            r.height = be16(&d[pos + 5]), r.width = be16(&d[pos + 7]), r.channels = d[pos + 9];
            if (r.height == 0) r.height = 1;  // DNL-defined height: unknown but at least one row
        }
        if (m == 0xDA) {
            scan = pos + 2 + len;
            break;
        }
        pos += 2 + len;
    }
    if (scan == 0) {
        r.problem = "truncated JPEG file (ends in its headers)";
        return r;
    }
    // Inside entropy-coded data 0xFF is always followed by 0x00 or RSTn, so
    // the first FF D9 after the scan header is the end-of-image marker.
    for (size_t i = scan; i + 1 < n; ++i) {
        const void* ff = std::memchr(&d[i], 0xFF, n - 1 - i);
        if (!ff) break;
        i = size_t(static_cast<const uint8_t*>(ff) - d.data());
        if (d[i + 1] == 0xD9) return r;
    }
    r.problem = "truncated JPEG file (no end-of-image marker)";
    return r;
}

Probe probe_png(const std::vector<uint8_t>& d) {
    Probe r;
    const size_t n = d.size();
    if (n < 8 + 8 + 13 + 4 || std::memcmp(&d[12], "IHDR", 4) != 0 || be32(&d[8]) != 13) {
        r.problem = "corrupt PNG file (no IHDR header)";
        return r;
    }
    r.png_color_type = d[8 + 8 + 9];
    r.width = be32(&d[16]), r.height = be32(&d[20]);
    static const int channels_of_type[7] = {1, 0, 3, 3, 2, 0, 4};
    r.channels = r.png_color_type <= 6 ? uint64_t(std::max(1, channels_of_type[r.png_color_type])) : 1;
    size_t pos = 8;
    while (pos + 12 <= n) {
        uint64_t len = be32(&d[pos]);
        if (pos + 12 + len > n) break;
        const uint8_t* type = &d[pos + 4];
        if (std::memcmp(type, "eXIf", 4) == 0) r.orientation = exif_payload_orientation(&d[pos + 8], size_t(len));
        if (std::memcmp(type, "IEND", 4) == 0) return r;
        pos += size_t(12 + len);
    }
    r.problem = "truncated PNG file (no IEND chunk)";
    return r;
}

Probe probe_webp(const std::vector<uint8_t>& d) {
    Probe r;
    size_t pos = 12;
    while (pos + 8 <= d.size()) {
        uint64_t len = le32(&d[pos + 4]);
        if (pos + 8 + len > d.size()) break;
        if (std::memcmp(&d[pos], "EXIF", 4) == 0) {
            r.orientation = exif_payload_orientation(&d[pos + 8], size_t(len));
            break;
        }
        pos += size_t(8 + len + (len & 1));
    }
    return r;  // libwebp itself rejects truncated files
}

// Formats with little or no compression (BMP, TGA, PSD) and GIF (LZW gives
// at most ~2730 pixels per byte) cannot hold more pixels than their size
// allows: a header claiming more is corrupt or truncated, and is refused
// before the decoder allocates for it and reads zeros past the end.
std::string size_problem(Format f, const std::vector<uint8_t>& d, uint64_t w, uint64_t h) {
    const uint64_t n = d.size();
    uint64_t need = 0;
    const char* name = "";
    if (f == Format::Bmp && n >= 30) {
        name = "BMP";
        const uint32_t header = le32(&d[14]);
        uint64_t bpp, compression = 0;
        if (header == 12) {
            w = le16(&d[18]), h = le16(&d[20]), bpp = le16(&d[24]);
        } else if (n >= 34) {
            const int32_t sh = int32_t(le32(&d[22]));
            w = le32(&d[18]), h = uint64_t(sh < 0 ? -int64_t(sh) : int64_t(sh)), bpp = le16(&d[28]);
            compression = le32(&d[30]);
        } else {
            return "";
        }
        const uint64_t offset = le32(&d[10]);
        if (w == 0 || h == 0 || w > (1u << 30) || bpp == 0) return "";
        if (compression == 0 || compression == 3 || compression == 6)  // uncompressed rows; last one unpadded
            need = offset + ((w * bpp + 31) / 32) * 4 * (h - 1) + (w * bpp + 7) / 8;
        else if (compression == 1 || compression == 2)  // RLE: 2 bytes for at most 255 pixels
            need = offset + w * h / 128;
    } else if (f == Format::Tga && n >= 18) {
        name = "TGA";
        const uint64_t bytes = (uint64_t(d[16]) + 7) / 8;
        const uint64_t base = 18 + d[0] + (d[1] ? le16(&d[5]) * ((uint64_t(d[7]) + 7) / 8) : 0);
        if (d[2] >= 1 && d[2] <= 3) need = base + w * h * bytes;
        if (d[2] >= 9 && d[2] <= 11) need = base + (w * h + 127) / 128 * (1 + bytes);
    } else if (f == Format::Psd && n >= 26) {
        name = "PSD";
        const uint64_t channels = be16(&d[12]), depth = be16(&d[22]);
        uint64_t off = 26;
        for (int section = 0; section < 3; ++section) {  // color mode, resources, layers
            if (off + 4 > n) return "truncated PSD file";
            off += 4 + uint64_t(be32(&d[size_t(off)]));
        }
        if (off + 2 > n) return "truncated PSD file";
        const uint32_t compression = be16(&d[size_t(off)]);
        off += 2;
        if (compression == 0) need = off + w * h * channels * std::max<uint64_t>(depth / 8, 1);
        if (compression == 1) need = off + h * channels * 2 + h * channels * ((w + 127) / 128) * 2;
    } else if (f == Format::Gif) {
        name = "GIF";
        if (w * h > n * 4096)
            return "corrupt GIF file (far too small for " + std::to_string(w) + "x" + std::to_string(h) + " pixels)";
    }
    if (need > n)
        return "truncated or corrupt " + std::string(name) + " file (" + std::to_string(n) +
               " bytes, its header needs " + std::to_string(need) + ")";
    return "";
}

// Rotates/flips `img` in place per EXIF orientation 1..8.
void apply_orientation(Image& img, int orientation) {
    if (orientation <= 1 || orientation > 8) return;
    const int w = img.width, h = img.height, c = img.channels;
    const bool swap = orientation >= 5;
    const int ow = swap ? h : w, oh = swap ? w : h;
    std::vector<uint16_t> out(img.samples.size());
    for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
            int sx, sy;
            switch (orientation) {
                case 2:
                    sx = w - 1 - ox, sy = oy;
                    break;  // mirror horizontal
                case 3:
                    sx = w - 1 - ox, sy = h - 1 - oy;
                    break;  // rotate 180
                case 4:
                    sx = ox, sy = h - 1 - oy;
                    break;  // mirror vertical
                case 5:
                    sx = oy, sy = ox;
                    break;  // transpose
                case 6:
                    sx = oy, sy = h - 1 - ox;
                    break;  // rotate 90 clockwise
                case 7:
                    sx = w - 1 - oy, sy = h - 1 - ox;
                    break;  // transverse
                default:
                    sx = w - 1 - oy, sy = ox;
                    break;  // 8: rotate 90 counter-clockwise
            }
            const uint16_t* s = &img.samples[(size_t(sy) * w + sx) * c];
            std::copy(s, s + c, &out[(size_t(oy) * ow + ox) * c]);
        }
    }
    img.samples.swap(out);
    img.width = ow, img.height = oh;
}

// ---------------------------------------------------------------- reading

std::string errno_text(int err) {
    return std::generic_category().message(err);
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) throw Error(path + ": no such file");
    if (st.type() == fs::file_type::directory) throw Error(path + ": is a directory");
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(path + ": cannot open: " + errno_text(errno));
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
            if (std::ferror(f.get())) throw Error(path + ": read error: " + errno_text(errno));
            break;
        }
    }
    if (data.empty()) throw Error(path + ": empty file");
    return data;
}

void check_dimensions(const std::string& path, uint64_t w, uint64_t h, uint64_t c) {
    if (w == 0 || h == 0) throw Error(path + ": cannot decode: image has no pixels");
    if (w * h * c > kMaxSamples)
        throw Error(path + ": image too large: " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                    std::to_string(c) + " samples (limit 2^31)");
}

// Keeps channel 0 and, when `alpha`, the last channel (gray PNGs from OpenCV).
void collapse_to_gray(Image& img, bool alpha) {
    const int c = img.channels, oc = alpha ? 2 : 1;
    const size_t pixels = size_t(img.width) * img.height;
    for (size_t i = 0; i < pixels; ++i) {
        uint16_t g = img.samples[i * c], a = img.samples[i * c + c - 1];
        img.samples[i * oc] = g;
        if (alpha) img.samples[i * oc + 1] = a;
    }
    img.samples.resize(pixels * oc);
    img.channels = oc;
}

// Drops the alpha of an RGBA image when every pixel has alpha == value.
void drop_alpha_if_all(Image& img, uint16_t value) {
    if (img.channels != 4) return;
    const size_t pixels = size_t(img.width) * img.height;
    for (size_t i = 0; i < pixels; ++i)
        if (img.samples[i * 4 + 3] != value) return;
    for (size_t i = 0; i < pixels; ++i)
        for (int k = 0; k < 3; ++k) img.samples[i * 3 + k] = img.samples[i * 4 + k];
    img.samples.resize(pixels * 3);
    img.channels = 3;
}

#ifdef IMRESTORE_WITH_OPENCV
Image decode_opencv(const std::string& path, const std::vector<uint8_t>& data, const FormatInfo& fmt) {
    cv::Mat m;
    try {
        cv::Mat buf(1, int(data.size()), CV_8U, const_cast<uint8_t*>(data.data()));
        m = cv::imdecode(buf, cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
        throw Error(path + ": cannot decode " + fmt.name + ": " + e.err);
    } catch (const std::bad_alloc&) {
        throw Error(path + ": cannot decode " + fmt.name + ": out of memory");
    }
    if (m.empty()) throw Error(path + ": cannot decode: corrupt or unsupported " + std::string(fmt.name) + " file");
    const int depth = m.depth(), c = m.channels();
    if (depth != CV_8U && depth != CV_16U)
        throw Error(path + ": unsupported sample type (only 8- and 16-bit unsigned integer images are read)");
    if (c < 1 || c > 4) throw Error(path + ": unsupported channel count " + std::to_string(c));
    check_dimensions(path, uint64_t(m.cols), uint64_t(m.rows), uint64_t(c));
    Image img;
    img.width = m.cols, img.height = m.rows, img.channels = c;
    img.bit_depth = depth == CV_16U ? 16 : 8;
    img.samples.resize(size_t(m.cols) * m.rows * c);
    // OpenCV order is B,G,R(,A): swap while copying.
    const int map[4] = {c >= 3 ? 2 : 0, 1, c >= 3 ? 0 : 2, 3};
    for (int y = 0; y < m.rows; ++y) {
        uint16_t* out = &img.samples[size_t(y) * m.cols * c];
        const size_t n = size_t(m.cols);
        if (depth == CV_8U) {
            const uint8_t* in = m.ptr<uint8_t>(y);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = in[x * c + map[k]];
        } else {
            const uint16_t* in = m.ptr<uint16_t>(y);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = in[x * c + map[k]];
        }
    }
    return img;
}
#endif

Image decode_stb(const std::string& path, const std::vector<uint8_t>& data, const FormatInfo& fmt) {
    const int len = int(data.size());
    int w = 0, h = 0, c = 0;
    std::unique_ptr<void, void (*)(void*)> pixels(nullptr, &stbi_image_free);
    const bool is16 = stbi_is_16_bit_from_memory(data.data(), len);
    if (is16)
        pixels.reset(stbi_load_16_from_memory(data.data(), len, &w, &h, &c, 0));
    else
        pixels.reset(stbi_load_from_memory(data.data(), len, &w, &h, &c, 0));
    if (!pixels) {
        const char* why = stbi_failure_reason();
        throw Error(path + ": cannot decode " + fmt.name + ": " + (why ? why : "unknown stb error"));
    }
    if (c < 1 || c > 4) throw Error(path + ": unsupported channel count " + std::to_string(c));
    check_dimensions(path, uint64_t(w), uint64_t(h), uint64_t(c));
    Image img;
    img.width = w, img.height = h, img.channels = c, img.bit_depth = is16 ? 16 : 8;
    const size_t n = size_t(w) * h * c;
    if (is16) {
        const uint16_t* in = static_cast<const uint16_t*>(pixels.get());
        img.samples.assign(in, in + n);
    } else {
        const uint8_t* in = static_cast<const uint8_t*>(pixels.get());
        img.samples.assign(in, in + n);
    }
    return img;
}

// Built-in PNM reader (P1 to P6), used in place of stb's: stb 2.27 returns
// 16-bit PNM samples byte-swapped, does not notice truncation and has no
// P1-P4. Bitmaps (P1/P4) read as 8-bit gray with 1 = black. A maxval other
// than 255/65535 is rescaled to 8 bit (maxval <= 255) or 16 bit.
Image decode_pnm(const std::string& path, const std::vector<uint8_t>& d, bool check_only = false) {
    const size_t n = d.size();
    size_t pos = 2;
    auto fail = [&](const std::string& what) { return Error(path + ": cannot decode PNM: " + what); };
    auto skip_space = [&] {
        for (;;) {  // whitespace and comments
            while (pos < n && std::isspace(d[pos])) ++pos;
            if (pos < n && d[pos] == '#') {
                while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
                continue;
            }
            return;
        }
    };
    auto number = [&](const char* what) -> uint64_t {
        skip_space();
        if (pos >= n || !std::isdigit(d[pos])) throw fail(std::string("bad or missing ") + what);
        uint64_t v = 0;
        while (pos < n && std::isdigit(d[pos]) && v < (uint64_t(1) << 40)) v = v * 10 + uint64_t(d[pos++] - '0');
        return v;
    };
    const char kind = char(d[1]);
    const bool bitmap = kind == '1' || kind == '4', binary = kind >= '4';
    const uint64_t w = number("width"), h = number("height"), maxval = bitmap ? 1 : number("maxval");
    const int c = kind == '3' || kind == '6' ? 3 : 1;
    if (maxval == 0 || maxval > 65535) throw fail("maxval " + std::to_string(maxval) + " is not 1..65535");
    check_dimensions(path, w, h, uint64_t(c));
    const size_t count = size_t(w * h * uint64_t(c));
    const size_t bytes = bitmap ? size_t((w + 7) / 8 * h) : count * (maxval > 255 ? 2 : 1);
    if (binary) {
        ++pos;  // the single whitespace byte after the header
        if (pos > n || n - pos < bytes)
            throw fail("truncated file (" + std::to_string(n > pos ? n - pos : 0) + " of " + std::to_string(bytes) +
                       " pixel bytes)");
    } else if (n - pos < count) {  // at least one character per sample
        throw fail("truncated file (fewer characters than samples)");
    }
    if (check_only) return {};
    Image img;
    img.width = int(w), img.height = int(h), img.channels = c, img.bit_depth = maxval > 255 ? 16 : 8;
    img.samples.resize(count);
    const uint32_t out_max = img.max_value();
    auto store = [&](size_t i, uint64_t v) {
        if (v > maxval) throw fail("sample " + std::to_string(v) + " above maxval " + std::to_string(maxval));
        if (bitmap)
            img.samples[i] = v ? 0 : 255;
        else
            img.samples[i] = uint16_t(maxval == out_max ? v : (v * out_max + maxval / 2) / maxval);
    };
    if (binary) {
        const uint8_t* p = &d[pos];
        if (bitmap) {
            const size_t row = size_t((w + 7) / 8);
            for (size_t y = 0; y < h; ++y)
                for (size_t x = 0; x < w; ++x) store(y * w + x, (p[y * row + x / 8] >> (7 - x % 8)) & 1);
        } else if (maxval > 255) {
            for (size_t i = 0; i < count; ++i) store(i, be16(p + 2 * i));
        } else {
            for (size_t i = 0; i < count; ++i) store(i, p[i]);
        }
    } else if (bitmap) {  // P1: single digits, separators optional
        for (size_t i = 0; i < count; ++i) {
            skip_space();
            if (pos >= n || (d[pos] != '0' && d[pos] != '1')) throw fail("bad or missing bit");
            store(i, uint64_t(d[pos++] - '0'));
        }
    } else {
        for (size_t i = 0; i < count; ++i) store(i, number("sample"));
    }
    return img;
}

// ---------------------------------------------------------------- writing helpers

uint16_t to8(uint16_t v16) {
    return uint16_t((uint32_t(v16) * 255u + 32767u) / 65535u);
}
uint16_t to16(uint16_t v8) {
    return uint16_t(v8 * 257u);
}

// Expands gray (1) to RGB (3) or gray+alpha (2) to RGBA (4).
Image expand_gray(const Image& img) {
    Image out = img;
    const int c = img.channels, oc = c + 2;
    const size_t pixels = size_t(img.width) * img.height;
    out.channels = oc;
    out.samples.resize(pixels * oc);
    for (size_t i = 0; i < pixels; ++i) {
        uint16_t g = img.samples[i * c];
        out.samples[i * oc] = out.samples[i * oc + 1] = out.samples[i * oc + 2] = g;
        if (c == 2) out.samples[i * oc + 3] = img.samples[i * c + 1];
    }
    return out;
}

std::vector<uint8_t> to_bytes8(const Image& img) {
    return std::vector<uint8_t>(img.samples.begin(), img.samples.end());
}

// ---- built-in PNG encoder (8/16 bit, 1-4 channels): per-row adaptive filter + stb's zlib.

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
    static const auto table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

void png_chunk(std::vector<uint8_t>& out, const char* type, const uint8_t* data, size_t n) {
    put32(out, uint32_t(n));
    size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data, data + n);
    put32(out, crc32(&out[start], n + 4));
}

int paeth(int a, int b, int c) {
    int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

std::vector<uint8_t> encode_png_builtin(const std::string& path, const Image& img, int compression) {
    const int bytes = img.bit_depth / 8, bpp = img.channels * bytes;
    const size_t stride = size_t(img.width) * bpp, rows = size_t(img.height);
    if ((stride + 1) * rows > size_t(INT32_MAX)) throw Error(path + ": image too large for the stb PNG encoder");
    // Raw rows, big-endian samples.
    std::vector<uint8_t> raw(stride * rows);
    if (bytes == 1) {
        for (size_t i = 0; i < img.samples.size(); ++i) raw[i] = uint8_t(img.samples[i]);
    } else {
        for (size_t i = 0; i < img.samples.size(); ++i)
            raw[2 * i] = uint8_t(img.samples[i] >> 8), raw[2 * i + 1] = uint8_t(img.samples[i]);
    }
    std::vector<uint8_t> filtered((stride + 1) * rows);
    std::vector<uint8_t> zero(stride, 0), trial(stride);
    for (size_t y = 0; y < rows; ++y) {
        const uint8_t* cur = &raw[y * stride];
        const uint8_t* up = y ? &raw[(y - 1) * stride] : zero.data();
        uint8_t* dst = &filtered[y * (stride + 1)];
        // Level 0 stores rows unfiltered; otherwise the filter with the least
        // sum of absolute (signed) residuals, as libpng's heuristic.
        uint64_t best_cost = UINT64_MAX;
        for (int f = 0; f < (compression == 0 ? 1 : 5); ++f) {
            uint64_t cost = 0;
            for (size_t i = 0; i < stride; ++i) {
                int a = i >= size_t(bpp) ? cur[i - bpp] : 0, b = up[i], c = i >= size_t(bpp) ? up[i - bpp] : 0;
                int pred = f == 0 ? 0 : f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : paeth(a, b, c);
                uint8_t v = uint8_t(cur[i] - pred);
                trial[i] = v;
                cost += uint64_t(std::abs(int(int8_t(v))));
            }
            if (cost < best_cost) {
                best_cost = cost;
                dst[0] = uint8_t(f);
                std::copy(trial.begin(), trial.end(), dst + 1);
            }
        }
    }
    // stb's deflate: "quality" is the hash-chain length (minimum 5).
    int zlen = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> z(
        stbi_zlib_compress(filtered.data(), int(filtered.size()), &zlen, std::max(5, 2 * compression)), &std::free);
    if (!z) throw Error(path + ": PNG compression failed (out of memory)");
    static const uint8_t color_type[5] = {0, 0, 4, 2, 6};
    uint8_t ihdr[13];
    for (int i = 0; i < 4; ++i) ihdr[i] = uint8_t(uint32_t(img.width) >> (24 - 8 * i));
    for (int i = 0; i < 4; ++i) ihdr[4 + i] = uint8_t(uint32_t(img.height) >> (24 - 8 * i));
    ihdr[8] = uint8_t(img.bit_depth), ihdr[9] = color_type[img.channels], ihdr[10] = ihdr[11] = ihdr[12] = 0;
    std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    out.reserve(size_t(zlen) + 64);
    png_chunk(out, "IHDR", ihdr, 13);
    png_chunk(out, "IDAT", z.get(), size_t(zlen));
    png_chunk(out, "IEND", nullptr, 0);
    return out;
}

// ---- built-in PNM encoder: P5 (gray) / P6 (RGB), 8 or 16 bit (big-endian).
std::vector<uint8_t> encode_pnm(const Image& img) {
    const std::string header = std::string(img.channels == 1 ? "P5" : "P6") + "\n" + std::to_string(img.width) + " " +
                               std::to_string(img.height) + "\n" + std::to_string(img.max_value()) + "\n";
    std::vector<uint8_t> out(header.begin(), header.end());
    const size_t start = out.size();
    if (img.bit_depth == 8) {
        out.resize(start + img.samples.size());
        for (size_t i = 0; i < img.samples.size(); ++i) out[start + i] = uint8_t(img.samples[i]);
    } else {
        out.resize(start + 2 * img.samples.size());
        for (size_t i = 0; i < img.samples.size(); ++i)
            out[start + 2 * i] = uint8_t(img.samples[i] >> 8), out[start + 2 * i + 1] = uint8_t(img.samples[i]);
    }
    return out;
}

void append_bytes(void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const uint8_t* p = static_cast<const uint8_t*>(data);
    out->insert(out->end(), p, p + size);
}

std::vector<uint8_t> encode_stb(const std::string& path, const Image& img, const FormatInfo& fmt,
                                const WriteOptions& options) {
    if (fmt.format == Format::Png) return encode_png_builtin(path, img, options.png_compression);
    std::vector<uint8_t> out;
    const std::vector<uint8_t> px = to_bytes8(img);
    int ok = 0;
    switch (fmt.format) {
        case Format::Jpeg:
            ok = stbi_write_jpg_to_func(append_bytes, &out, img.width, img.height, img.channels, px.data(),
                                        options.jpeg_quality);
            break;
        case Format::Bmp:
            ok = stbi_write_bmp_to_func(append_bytes, &out, img.width, img.height, img.channels, px.data());
            break;
        case Format::Tga:
            ok = stbi_write_tga_to_func(append_bytes, &out, img.width, img.height, img.channels, px.data());
            break;
        default:
            break;
    }
    if (!ok || out.empty()) throw Error(path + ": stb could not encode the " + std::string(fmt.name) + " image");
    return out;
}

#ifdef IMRESTORE_WITH_OPENCV
std::vector<uint8_t> encode_opencv(const std::string& path, const Image& img, const std::string& ext,
                                   const FormatInfo& fmt, const WriteOptions& options) {
    const int c = img.channels;
    cv::Mat m(img.height, img.width, CV_MAKETYPE(img.bit_depth == 16 ? CV_16U : CV_8U, c));
    const int map[4] = {c >= 3 ? 2 : 0, 1, c >= 3 ? 0 : 2, 3};  // RGB(A) -> BGR(A)
    for (int y = 0; y < img.height; ++y) {
        const uint16_t* in = &img.samples[size_t(y) * img.width * c];
        const size_t n = size_t(img.width);
        if (img.bit_depth == 16) {
            uint16_t* out = m.ptr<uint16_t>(y);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = in[x * c + map[k]];
        } else {
            uint8_t* out = m.ptr<uint8_t>(y);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = uint8_t(in[x * c + map[k]]);
        }
    }
    std::vector<int> params;
    if (fmt.format == Format::Jpeg) params = {cv::IMWRITE_JPEG_QUALITY, options.jpeg_quality};
    if (fmt.format == Format::Webp) params = {cv::IMWRITE_WEBP_QUALITY, options.webp_quality};
    if (fmt.format == Format::Png) params = {cv::IMWRITE_PNG_COMPRESSION, options.png_compression};
    std::vector<uint8_t> out;
    try {
        if (!cv::imencode(ext, m, out, params))
            throw Error(path + ": OpenCV could not encode the " + std::string(fmt.name) + " image");
    } catch (const cv::Exception& e) {
        throw Error(path + ": OpenCV could not encode the " + std::string(fmt.name) + " image: " + e.err);
    }
    if (out.empty()) throw Error(path + ": OpenCV could not encode the " + std::string(fmt.name) + " image");
    return out;
}
#endif

// Writes all of `bytes` to fd; errno-style code on failure, 0 on success.
int write_all(int fd, const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        done += size_t(w);
    }
    return 0;
}

// Writes `bytes` to `path` so that no reader, and no crash, ever sees a
// partial file. Preferred: an unnamed file in the target's folder
// (O_TMPFILE) that gets a name only once complete: a process killed at any
// point leaves nothing behind. Where the file system has no O_TMPFILE: a
// hidden temporary file beside `path`, renamed over it, removed on every
// failure. overwrite false: `path` must still not exist, checked atomically
// by the link/rename itself.
void write_atomically(const std::string& path, const std::vector<uint8_t>& bytes, bool overwrite) {
    static std::atomic<unsigned> counter{0};
    const fs::path target(path);
    const fs::path dir = target.parent_path();
    const std::string dir_text = dir.empty() ? "." : dir.string();
    std::string name = target.filename().string();
    if (name.size() > 180) name.resize(180);  // stay below NAME_MAX with the suffix
    const std::string tmp = (dir / ("." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
                                    std::to_string(counter.fetch_add(1)) + target.extension().string()))
                                .string();
    auto open_error = [&](int err) {
        if (err == ENOENT) return Error(path + ": cannot write: directory '" + dir_text + "' does not exist");
        if (err == ENOTDIR) return Error(path + ": cannot write: '" + dir_text + "' is not a directory");
        return Error(path + ": cannot create a file in '" + dir_text + "': " + errno_text(err));
    };
    auto place_error = [&](int err) {
        if (err == EISDIR) return Error(path + ": is a directory");
        if (err == EEXIST && !overwrite)
            return Error(path + ": appeared while it was being restored; not overwritten (--force overwrites)");
        return Error(path + ": cannot replace the file: " + errno_text(err));
    };

    int fd = ::open(dir_text.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) {
        if (int err = write_all(fd, bytes)) {
            ::close(fd);
            throw Error(path + ": cannot write: " + errno_text(err));
        }
        const std::string self = "/proc/self/fd/" + std::to_string(fd);
        // Without overwrite the link is the final name (fails if it exists);
        // with it, a complete file gets a temporary name, then replaces path.
        const std::string& link_to = overwrite ? tmp : path;
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, link_to.c_str(), AT_SYMLINK_FOLLOW) == 0) {
            ::close(fd);
            if (overwrite && std::rename(tmp.c_str(), path.c_str()) != 0) {
                int err = errno;
                ::unlink(tmp.c_str());
                throw place_error(err);
            }
            return;
        }
        int err = errno;
        ::close(fd);
        if (err == EEXIST || err == EISDIR) throw place_error(err);
        // No /proc to link through: fall back to a named temporary file.
    } else if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS) {
        throw open_error(errno);
    }

    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) throw open_error(errno);
    int err = write_all(fd, bytes);
    if (::close(fd) != 0 && !err) err = errno;
    if (err) {
        ::unlink(tmp.c_str());
        throw Error(path + ": cannot write: " + errno_text(err));
    }
    int placed = overwrite ? std::rename(tmp.c_str(), path.c_str())
                           : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (placed != 0) {
        err = errno;
        ::unlink(tmp.c_str());
        throw place_error(err);
    }
}

const FormatInfo& writable_format(const std::string& path, Codec codec) {
    check_codec_available(path, codec);
    const std::string ext = lower_extension(path);
    if (ext.empty())
        throw Error(path + ": no file extension to choose the output format (known: " + join_extensions(true) + ")");
    const FormatInfo* fmt = format_from_extension(ext, true);
    if (!fmt) throw Error(path + ": unknown output format '" + ext + "' (known: " + join_extensions(true) + ")");
    if (!codec_writes(*fmt, codec))
        throw Error(path + ": codec '" + codec_name(codec) + "' cannot write " + fmt->name + " (use auto" +
                    (fmt->cv_write && codec != Codec::OpenCV && opencv_available() ? " or opencv)" : ")"));
    return *fmt;
}

}  // namespace

// ---------------------------------------------------------------- public API

const char* codec_name(Codec codec) {
    switch (codec) {
        case Codec::Auto:
            return "auto";
        case Codec::OpenCV:
            return "opencv";
        case Codec::Stb:
            return "stb";
    }
    return "?";
}

Codec parse_codec(const std::string& name) {
    std::string s = name;
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (s == "auto") return Codec::Auto;
    if (s == "stb") return Codec::Stb;
    if (s == "opencv") {
        if (!opencv_available())
            throw Error("codec 'opencv' is not available: this build has no OpenCV (known: auto, stb)");
        return Codec::OpenCV;
    }
    throw Error("unknown codec '" + name + "' (known: auto, " + (opencv_available() ? "opencv, " : "") + "stb)");
}

bool opencv_available() {
#ifdef IMRESTORE_WITH_OPENCV
    return true;
#else
    return false;
#endif
}

std::vector<std::string> readable_extensions() {
    std::vector<std::string> out;
    for (const auto& f : formats())
        if (codec_reads(f, Codec::Auto))
            for (const char* e : f.read_ext) out.emplace_back(e);
    return out;
}

bool is_readable_extension(const std::string& path) {
    return format_from_extension(lower_extension(path), false) != nullptr;
}

void check_writable_format(const std::string& path, Codec codec) {
    (void)writable_format(path, codec);
}

Image read_image(const std::string& path, Codec codec) {
    check_codec_available(path, codec);
    const std::vector<uint8_t> data = read_file(path);
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

    Probe probe;
    if (fmt.format == Format::Jpeg) probe = probe_jpeg(data);
    if (fmt.format == Format::Png) probe = probe_png(data);
    if (fmt.format == Format::Webp) probe = probe_webp(data);
    if (!probe.problem.empty()) throw Error(path + ": cannot decode: " + probe.problem);

    // Size guard before any pixel memory is allocated: our own header parse
    // (PNG, JPEG), else stb's (it reads the headers of all its formats);
    // OpenCV refuses more than 2^30 pixels on its own.
    if (probe.width) {
        check_dimensions(path, probe.width, probe.height, std::max<uint64_t>(probe.channels, 1));
    } else if (fmt.stb_read && fmt.format != Format::Pnm) {
        int iw = 0, ih = 0, ic = 0;
        if (stbi_info_from_memory(data.data(), int(data.size()), &iw, &ih, &ic)) {
            check_dimensions(path, uint64_t(iw), uint64_t(ih), uint64_t(std::max(ic, 1)));
            const std::string problem = size_problem(fmt.format, data, uint64_t(iw), uint64_t(ih));
            if (!problem.empty()) throw Error(path + ": cannot decode: " + problem);
        } else if (const char* why = stbi_failure_reason(); why && std::strcmp(why, "too large") == 0)
            throw Error(path + ": image too large (header claims more than stb's limits)");
    }

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
        } else if (fmt.format == Format::Bmp && codec == Codec::Auto && opencv_available()) {
            try {
                img = decode_stb(path, data, fmt);
            } catch (const Error&) {
#ifdef IMRESTORE_WITH_OPENCV
                img = decode_opencv(path, data, fmt);
                use_cv = true;
#endif
            }
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
    apply_orientation(img, probe.orientation);
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

void write_image(const std::string& path, const Image& image, const WriteOptions& options, Codec codec) {
    const FormatInfo& fmt = writable_format(path, codec);
    const std::string ext = lower_extension(path);

    // The image itself.
    if (image.channels < 1 || image.channels > 4)
        throw Error(path + ": cannot write an image with " + std::to_string(image.channels) + " channels");
    if (image.bit_depth != 8 && image.bit_depth != 16)
        throw Error(path + ": cannot write an image of bit depth " + std::to_string(image.bit_depth));
    if (image.width <= 0 || image.height <= 0 ||
        image.samples.size() != size_t(image.width) * size_t(image.height) * size_t(image.channels))
        throw Error(path + ": cannot write: inconsistent image (" + std::to_string(image.width) + "x" +
                    std::to_string(image.height) + "x" + std::to_string(image.channels) + ", " +
                    std::to_string(image.samples.size()) + " samples)");

    check_can_write(path, image.channels, image.bit_depth, options, codec);
    const int depth = options.bit_depth ? options.bit_depth : image.bit_depth;

    // Convert the bit depth and, where the encoder needs it, the channels.
    const Image* src = &image;
    Image converted;
    if (depth != image.bit_depth) {
        converted = image;
        converted.bit_depth = depth;
        for (uint16_t& v : converted.samples) v = depth == 8 ? to8(v) : to16(v);
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
    } else {
        bytes = encode_stb(path, *src, fmt, options);
    }
    write_atomically(path, bytes, options.overwrite);
}

}  // namespace imr
