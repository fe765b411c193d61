// What the containers find is checked here, EXIF is kept right once the
// pixels are upright, and the metadata goes to the container that embeds it
// (see metadata.h; one file per container does the parsing).
#include "image/metadata.h"

#include <cstring>

#include "image/probe.h"
#include "image/tiff_directory.h"

namespace imr::imageio {
namespace {

constexpr uint16_t kOrientationTag = 0x0112, kPixelXDimensionTag = 0xA002, kPixelYDimensionTag = 0xA003;

// Four signature bytes of an ICC header as text, unprintable ones as '?'
// (the profile is untrusted and the text reaches the terminal).
std::string signature(const Bytes& icc, size_t at) {
    std::string s;
    for (size_t i = at; i < at + 4 && i < icc.size(); ++i) s += icc[i] >= 32 && icc[i] < 127 ? char(icc[i]) : '?';
    return s;
}

// An ICC profile starts with a 128-byte header, then its tag count: its
// size (big-endian, first 4 bytes) and the 'acsp' signature (at 36) must be
// right. Bytes after the declared size (padding some writers add) are cut.
std::string icc_problem(Bytes& icc) {
    if (icc.size() < 132)
        return "ICC profile dropped: " + std::to_string(icc.size()) + " bytes, too short for a profile";
    if (signature(icc, 36) != "acsp") return "ICC profile dropped: its header has no 'acsp' signature";
    const uint32_t declared = be32(icc.data());
    if (declared < 132 || declared > icc.size())
        return "ICC profile dropped: its header declares " + std::to_string(declared) + " bytes and " +
               std::to_string(icc.size()) + " are there";
    icc.resize(declared);
    return "";
}

std::string exif_problem(const Bytes& exif) {
    bool le;
    uint32_t first;
    tiff::Directory ifd0;
    if (!tiff::read_header(exif.data(), exif.size(), le, first))
        return "EXIF dropped: it does not start with a TIFF header (II*\\0 or MM\\0*)";
    if (!tiff::read_directory(exif.data(), exif.size(), le, first, ifd0))
        return "EXIF dropped: its first directory lies outside its " + std::to_string(exif.size()) + " bytes";
    return "";
}

}  // namespace

ImageMetadata find_metadata(Format format, const Bytes& file, Dropped& dropped) {
    ImageMetadata found;
    switch (format) {
        case Format::Jpeg:
            find_jpeg_metadata(file, found, dropped);
            break;
        case Format::Png:
            find_png_metadata(file, found, dropped);
            break;
        case Format::Webp:
            find_webp_metadata(file, found, dropped);
            break;
        case Format::Tiff:
            find_tiff_metadata(file, found, dropped);
            break;
        default:
            return found;
    }
    // PNG eXIf and WebP EXIF hold the bare TIFF block, but some writers keep
    // JPEG's "Exif\0\0" in front of it.
    if (found.exif.size() >= 6 && std::memcmp(found.exif.data(), "Exif\0\0", 6) == 0)
        found.exif.erase(found.exif.begin(), found.exif.begin() + 6);
    for (Bytes* part : {&found.icc, &found.exif})
        if (part->size() > kMaxMetadataBytes) {
            dropped.push_back(std::string(part == &found.icc ? "ICC profile" : "EXIF") +
                              " dropped: " + std::to_string(part->size()) + " bytes, over the limit of " +
                              std::to_string(kMaxMetadataBytes));
            part->clear();
        }
    if (!found.icc.empty())
        if (std::string problem = icc_problem(found.icc); !problem.empty()) {
            dropped.push_back(problem);
            found.icc.clear();
        }
    if (!found.exif.empty())
        if (std::string problem = exif_problem(found.exif); !problem.empty()) {
            dropped.push_back(problem);
            found.exif.clear();
        }
    return found;
}

int exif_orientation(const Bytes& exif) {
    bool le;
    uint32_t first;
    tiff::Directory ifd0;
    if (!tiff::read_header(exif.data(), exif.size(), le, first) ||
        !tiff::read_directory(exif.data(), exif.size(), le, first, ifd0))
        return 1;
    // The standard's SHORT, or a LONG some writers use: whatever is read here
    // is applied, and set_exif_upright then resets it.
    const tiff::Entry* tag = ifd0.find(kOrientationTag);
    if (!tag || (tag->type != 3 && tag->type != 4) || tag->count != 1) return 1;
    const uint32_t v = tiff::first_number(*tag, le);
    return v >= 1 && v <= 8 ? int(v) : 1;
}

void set_exif_upright(Bytes& exif, int applied) {
    bool le;
    uint32_t first;
    tiff::Directory ifd0;
    if (!tiff::read_header(exif.data(), exif.size(), le, first) ||
        !tiff::read_directory(exif.data(), exif.size(), le, first, ifd0))
        return;
    // Every Orientation entry: a crafted IFD0 with two would otherwise keep
    // the second, and a viewer that reads that one would turn the photo again.
    for (const tiff::Entry& e : ifd0.entries)
        if (e.tag == kOrientationTag) tiff::patch_number(exif, e, 1, le);
    if (applied <= 1 || applied > 8) return;
    tiff::unlink_next(exif, ifd0, le);  // the thumbnail: the old way up
    const tiff::Entry* sub = ifd0.find(tiff::kExifIfdTag);
    if (applied < 5 || !sub || sub->children.empty()) return;
    const tiff::Directory& exif_ifd = sub->children.front();
    const tiff::Entry* x = exif_ifd.find(kPixelXDimensionTag);
    const tiff::Entry* y = exif_ifd.find(kPixelYDimensionTag);
    if (!x || !y) return;
    const uint32_t width = tiff::first_number(*x, le), height = tiff::first_number(*y, le);
    // Both or neither: a SHORT that cannot take the other's value leaves both as they were.
    Bytes patched = exif;
    if (tiff::patch_number(patched, *x, height, le) && tiff::patch_number(patched, *y, width, le)) exif.swap(patched);
}

void embed_metadata(Format format, Bytes& file, const ImageMetadata& metadata, int color_channels, Dropped& dropped) {
    if (format != Format::Jpeg && format != Format::Png && format != Format::Webp && format != Format::Tiff) return;
    static const Bytes none;
    const Bytes* icc = &metadata.icc;
    if (!icc->empty()) {
        // A profile describes one color space: an RGB profile on gray samples
        // (or the reverse) is wrong, and PNG forbids it.
        const std::string space = signature(*icc, 16), want = color_channels == 1 ? "GRAY" : "RGB ";
        if (space != want) {
            dropped.push_back("ICC profile not written: it is for '" + space + "' and the image is " +
                              (color_channels == 1 ? "gray" : "RGB"));
            icc = &none;
        }
    }
    if (icc->empty() && metadata.exif.empty()) return;
    switch (format) {
        case Format::Jpeg:
            embed_jpeg_metadata(file, *icc, metadata.exif, dropped);
            break;
        case Format::Png:
            embed_png_metadata(file, *icc, metadata.exif, dropped);
            break;
        case Format::Webp:
            embed_webp_metadata(file, *icc, metadata.exif, dropped);
            break;
        default:
            embed_tiff_metadata(file, *icc, metadata.exif, dropped);
            break;
    }
}

}  // namespace imr::imageio
