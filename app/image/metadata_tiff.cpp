// TIFF metadata: the ICC profile is tag 34675 of the first directory (IFD0);
// EXIF is what the EXIF (34665) and GPS (34853) directories hold plus a few
// descriptive tags of IFD0 (make, model, date, ...). So EXIF read from a TIFF
// is rebuilt as a block of those, and EXIF written into one is spread back:
// the encoder's IFD0 is copied with the new tags to the end of the file (the
// old one stays, unreferenced) and the header points to the copy; pixel data
// does not move, so the offsets to it stay right. Values change byte order
// where the EXIF's and the file's differ. Maker notes are copied as bytes: a
// maker note that holds offsets from the EXIF block's start (some cameras')
// does not survive the move, as with most tools that rewrite EXIF.
#include <algorithm>
#include <cstring>

#include "image/metadata.h"
#include "image/probe.h"
#include "image/tiff_directory.h"

namespace imr::imageio {
namespace {

constexpr uint16_t kIccTag = 34675;
constexpr uint16_t kUndefinedType = 7;

// IFD0 tags that describe the photo rather than the pixels' layout, carried
// between EXIF and TIFF (Orientation is not: the pixels are upright).
bool is_descriptive(uint16_t tag) {
    switch (tag) {
        case 0x010E:  // ImageDescription
        case 0x010F:  // Make
        case 0x0110:  // Model
        case 0x011A:  // XResolution
        case 0x011B:  // YResolution
        case 0x0128:  // ResolutionUnit
        case 0x0131:  // Software
        case 0x0132:  // DateTime
        case 0x013B:  // Artist
        case 0x013C:  // HostComputer
        case 0x8298:  // Copyright
            return true;
        default:
            return false;
    }
}

// EXIF tags for compressed data only (JPEG): exiftool calls them not allowed
// in a TIFF, and libtiff warns about a PixelXDimension of type SHORT.
bool is_for_compressed_data(uint16_t tag) {
    return tag == 0x9101 || tag == 0x9102 || tag == 0xA002 || tag == 0xA003;
}

bool is_exif_part(const tiff::Entry& e) {
    return is_descriptive(e.tag) || ((e.tag == tiff::kExifIfdTag || e.tag == tiff::kGpsIfdTag) && !e.children.empty());
}

// Reads IFD0 of TIFF-structured bytes; false when they have none.
bool read_ifd0(const Bytes& d, bool& little_endian, tiff::Directory& ifd0) {
    uint32_t first;
    return tiff::read_header(d.data(), d.size(), little_endian, first) &&
           tiff::read_directory(d.data(), d.size(), little_endian, first, ifd0);
}

}  // namespace

void find_tiff_metadata(const Bytes& file, ImageMetadata& found, Dropped&) {
    bool le;
    tiff::Directory ifd0;
    if (!read_ifd0(file, le, ifd0)) return;
    if (const tiff::Entry* icc = ifd0.find(kIccTag); icc && (icc->type == kUndefinedType || icc->type == 1))
        found.icc = icc->value;
    tiff::Directory exif;
    for (const tiff::Entry& e : ifd0.entries)
        if (is_exif_part(e)) exif.entries.push_back(e);
    if (exif.entries.empty()) return;
    found.exif = tiff::header(le);
    const uint32_t at = tiff::write_directory(exif, le, 0, 0, found.exif);
    if (at == 0) {
        found.exif.clear();
        return;
    }
    tiff::set_first_directory(found.exif, at, le);
}

void embed_tiff_metadata(Bytes& file, const Bytes& icc, const Bytes& exif, Dropped& dropped) {
    bool le;
    tiff::Directory ifd0;
    // Every entry of the encoder's IFD0 must come along, or the copy would lose part of the image.
    if (!read_ifd0(file, le, ifd0) || ifd0.entries.size() != (le ? le16(&file[ifd0.at]) : be16(&file[ifd0.at]))) {
        dropped.push_back("metadata not written: the encoded TIFF could not be parsed");
        return;
    }
    tiff::Directory out;
    bool exif_read = false, exif_le = le;
    tiff::Directory exif_ifd0;
    if (!exif.empty()) {
        exif_read = read_ifd0(exif, exif_le, exif_ifd0);
        if (!exif_read) dropped.push_back("EXIF not written: it could not be parsed");
        if (exif_read && exif_le != le) tiff::swap_byte_order(exif_ifd0);
    }
    for (tiff::Entry& e : ifd0.entries) {
        if (!icc.empty() && e.tag == kIccTag) continue;
        if (exif_read && (e.tag == tiff::kExifIfdTag || e.tag == tiff::kGpsIfdTag)) continue;
        out.entries.push_back(std::move(e));
    }
    if (!icc.empty()) {
        tiff::Entry e;
        e.tag = kIccTag, e.type = kUndefinedType, e.count = uint32_t(icc.size()), e.value = icc;
        out.entries.push_back(std::move(e));
    }
    for (tiff::Entry& e : exif_ifd0.entries) {
        if (!is_exif_part(e) || out.find(e.tag)) continue;
        if (e.tag == tiff::kExifIfdTag) {
            std::vector<tiff::Entry>& tags = e.children.front().entries;
            tags.erase(std::remove_if(tags.begin(), tags.end(),
                                      [](const tiff::Entry& t) { return is_for_compressed_data(t.tag); }),
                       tags.end());
        }
        out.entries.push_back(std::move(e));
    }
    const uint32_t at = tiff::write_directory(out, le, ifd0.next, 0, file);
    if (at == 0) {
        dropped.push_back("metadata not written: the TIFF would exceed 4 GiB");
        return;
    }
    tiff::set_first_directory(file, at, le);
}

}  // namespace imr::imageio
