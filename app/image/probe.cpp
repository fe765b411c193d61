// Sniffing, structural and size checks, and turning pixels upright (see probe.h).
#include "image/probe.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "error.h"
#include "system_memory.h"

namespace imr::imageio {
namespace {

// A DHT segment's Huffman tables must be a valid canonical code: at most
// 256 symbols per table, code counts that fit their lengths (Kraft), tables
// inside the segment. stb_image 2.27 builds its lookup tables from the counts
// without these checks and writes past them on a crafted file (up to ~3.8 KB
// beyond `size[257]`); it decodes JPEG only in builds without libjpeg, but the
// check runs for every JPEG, so each decoder path refuses such a file with
// the same message before it sees it.
std::string dht_problem(const uint8_t* p, size_t len) {
    size_t pos = 0;
    while (pos < len) {
        if (len - pos < 17) return "corrupt JPEG Huffman table (DHT segment too short)";
        const int tc = p[pos] >> 4, th = p[pos] & 15;
        if (tc > 1 || th > 3)
            return "corrupt JPEG Huffman table (class " + std::to_string(tc) + ", id " + std::to_string(th) + ")";
        uint32_t symbols = 0, code = 0;
        for (int l = 1; l <= 16; ++l) {
            const uint32_t count = p[pos + size_t(l)];
            symbols += count;
            code += count;  // codes of length l: [code - count, code)
            if (code > (1u << l))
                return "corrupt JPEG Huffman table (more codes of length " + std::to_string(l) + " than fit)";
            code <<= 1;
        }
        if (symbols > 256) return "corrupt JPEG Huffman table (" + std::to_string(symbols) + " symbols, at most 256)";
        pos += 17 + symbols;
        if (pos > len) return "corrupt JPEG Huffman table (runs past its segment)";
    }
    return "";
}

// The text number at `pos` of a PNM header (comments and white space
// skipped); 0 when there is none.
uint64_t pnm_number(const std::vector<uint8_t>& d, size_t& pos) {
    for (;;) {
        while (pos < d.size() && std::isspace(d[pos])) ++pos;
        if (pos < d.size() && d[pos] == '#') {
            while (pos < d.size() && d[pos] != '\n' && d[pos] != '\r') ++pos;
            continue;
        }
        break;
    }
    uint64_t v = 0;
    while (pos < d.size() && std::isdigit(d[pos]) && v < (uint64_t(1) << 40)) v = v * 10 + uint64_t(d[pos++] - '0');
    return v;
}

// TIFF: ImageWidth (256), ImageLength (257), SamplesPerPixel (277) of the
// first IFD (the page every reader decodes). Classic TIFF only (BigTIFF is
// not sniffed as TIFF).
void tiff_size(const std::vector<uint8_t>& d, Probe& r) {
    const bool le = d[0] == 'I';
    auto u16 = [&](size_t o) { return le ? le16(&d[o]) : be16(&d[o]); };
    auto u32 = [&](size_t o) { return le ? le32(&d[o]) : be32(&d[o]); };
    if (d.size() < 8) return;
    const uint64_t ifd = u32(4);
    if (ifd + 2 > d.size()) return;
    const uint64_t entries = u16(size_t(ifd));
    r.channels = 1;
    for (uint64_t e = 0; e < entries; ++e) {
        const uint64_t at = ifd + 2 + 12 * e;
        if (at + 12 > d.size()) return;
        const uint32_t tag = u16(size_t(at)), type = u16(size_t(at + 2));
        const uint64_t v = type == 3 ? u16(size_t(at + 8)) : type == 4 ? u32(size_t(at + 8)) : 0;
        if (tag == 256) r.width = v;
        if (tag == 257) r.height = v;
        if (tag == 277) r.channels = v;
    }
}

// WebP: the canvas of VP8X, or the frame of a simple VP8 / VP8L file.
void webp_size(const std::vector<uint8_t>& d, Probe& r) {
    if (d.size() < 30) return;
    const uint8_t* c = &d[12];
    const uint8_t* p = c + 8;  // the first chunk's payload
    r.channels = 4;
    if (std::memcmp(c, "VP8X", 4) == 0) {
        r.width = 1 + (uint64_t(p[4]) | uint64_t(p[5]) << 8 | uint64_t(p[6]) << 16);
        r.height = 1 + (uint64_t(p[7]) | uint64_t(p[8]) << 8 | uint64_t(p[9]) << 16);
    } else if (std::memcmp(c, "VP8 ", 4) == 0 && p[3] == 0x9d && p[4] == 0x01 && p[5] == 0x2a) {
        r.width = le16(p + 6) & 0x3fff, r.height = le16(p + 8) & 0x3fff;
    } else if (std::memcmp(c, "VP8L", 4) == 0 && p[0] == 0x2f) {
        const uint32_t bits = le32(p + 1);
        r.width = 1 + (bits & 0x3fff), r.height = 1 + (bits >> 14 & 0x3fff);
    }
}

}  // namespace

Probe probe_size(Format f, const std::vector<uint8_t>& d) {
    Probe r;
    const size_t n = d.size();
    switch (f) {
        case Format::Bmp:
            if (n >= 26 && le32(&d[14]) == 12) {
                r.width = le16(&d[18]), r.height = le16(&d[20]);
            } else if (n >= 30) {
                const int32_t w = int32_t(le32(&d[18])), h = int32_t(le32(&d[22]));
                r.width = uint64_t(w < 0 ? -int64_t(w) : int64_t(w));
                r.height = uint64_t(h < 0 ? -int64_t(h) : int64_t(h));
            }
            r.channels = 4;
            break;
        case Format::Tga:
            if (n >= 18) r.width = le16(&d[12]), r.height = le16(&d[14]), r.channels = 4;
            break;
        case Format::Gif:  // the logical screen: what stb allocates for every frame
            if (n >= 10) r.width = le16(&d[6]), r.height = le16(&d[8]), r.channels = 4;
            break;
        case Format::Psd:
            if (n >= 26) r.height = be32(&d[14]), r.width = be32(&d[18]), r.channels = 4;
            break;
        case Format::Pnm: {
            size_t pos = 2;
            r.width = pnm_number(d, pos), r.height = pnm_number(d, pos);
            r.channels = d[1] == '3' || d[1] == '6' ? 3 : 1;
            break;
        }
        case Format::Tiff:
            tiff_size(d, r);
            break;
        case Format::Webp:
            webp_size(d, r);
            break;
        default:
            break;
    }
    if (r.width == 0 || r.height == 0) r.problem = "cannot read the image size from its header";
    return r;
}

// ---------------------------------------------------------------- sniffing

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

// ---------------------------------------------------------------- structural checks

Probe probe_jpeg(const std::vector<uint8_t>& d) {
    Probe r;
    const size_t n = d.size();
    size_t pos = 2, scan = 0;
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
        if (m == 0xC4) {  // DHT: validated before any decoder (see dht_problem)
            r.problem = dht_problem(&d[pos + 4], len - 2);
            if (!r.problem.empty()) return r;
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
        if (std::memcmp(&d[pos + 4], "IEND", 4) == 0) return r;
        pos += size_t(12 + len);
    }
    r.problem = "truncated PNG file (no IEND chunk)";
    return r;
}

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

void check_pixel_limit(const std::string& path, uint64_t w, uint64_t h, uint64_t c, uint64_t max_pixels) {
    check_dimensions(path, w, h, c);  // w, h, c < 2^31 each and w * h * c < 2^31 after it: no product below wraps
    const auto mp = [](uint64_t px) { return std::to_string((px + 500000) / 1000000) + " MP"; };
    if (w * h > max_pixels)
        throw Error(path + ": image too large: " + std::to_string(w) + "x" + std::to_string(h) + " (" + mp(w * h) +
                    ") is over the limit of " + std::to_string(max_pixels) + " pixels (" + mp(max_pixels) +
                    "; --max-pixels raises it)");
    const uint64_t need = w * h * std::max<uint64_t>(c, 1) * kRunBytesPerSample;
    const uint64_t have = host_memory_available();
    if (need > have)
        throw Error(path + ": image too large for this machine's memory: restoring " + std::to_string(w) + "x" +
                    std::to_string(h) + " needs about " + std::to_string((need >> 20) + 1) + " MiB, " +
                    std::to_string(have >> 20) + " MiB available");
}

uint64_t default_max_pixels() {
    const uint64_t by_memory = host_memory_available() / (4 * kRunBytesPerSample);
    return std::clamp<uint64_t>(by_memory, uint64_t(1) << 24, kMaxDefaultPixels);
}

void check_dimensions(const std::string& path, uint64_t w, uint64_t h, uint64_t c) {
    if (w == 0 || h == 0) throw Error(path + ": cannot decode: image has no pixels");
    // Each factor below 2^31 first (headers can hold up to 2^43 and more), so
    // the product cannot wrap.
    uint64_t samples = 0;
    if (w >= (uint64_t(1) << 31) || h >= (uint64_t(1) << 31) || c >= (uint64_t(1) << 31) ||
        __builtin_mul_overflow(w, h, &samples) || __builtin_mul_overflow(samples, c, &samples) || samples > kMaxSamples)
        throw Error(path + ": image too large: " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                    std::to_string(c) + " samples (limit 2^31)");
}

// ---------------------------------------------------------------- orientation

void apply_orientation(Image& img, int orientation) {
    if (orientation <= 1 || orientation > 8) return;
    const int w = img.width, h = img.height, c = img.channels;
    const bool swap = orientation >= 5;
    const int ow = swap ? h : w, oh = swap ? w : h;
    Image out;
    out.width = ow, out.height = oh, out.channels = c, out.bit_depth = img.bit_depth;
    out.allocate();
    with_samples(img, [&](const auto* in) {
        using T = sample_type<decltype(in)>;
        T* to = out.data<T>();
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
                const T* s = in + (size_t(sy) * w + sx) * c;
                std::copy(s, s + c, to + (size_t(oy) * ow + ox) * c);
            }
        }
    });
    out.metadata = std::move(img.metadata);
    img = std::move(out);
}

}  // namespace imr::imageio
