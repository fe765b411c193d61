// TIFF image file directories (IFDs) as a tree of tags: read from
// TIFF-structured bytes (a TIFF file, or an EXIF block, which is one),
// changed, and written elsewhere in either byte order. metadata_tiff.cpp and
// metadata.cpp use it for what TIFF files and EXIF blocks hold: a TIFF's ICC
// profile and EXIF, the EXIF directories written into a TIFF, the EXIF tags
// patched in place. The bytes read are untrusted: every offset and count is
// checked, and an entry that does not fit is left out of the tree.
// Private to app/image/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace imr::imageio::tiff {

// Tags whose value is the offset of another directory: read as its child and
// given a new offset when written.
constexpr uint16_t kExifIfdTag = 0x8769, kGpsIfdTag = 0x8825, kInteropIfdTag = 0xA005;

// The size of one value of a TIFF field type (1 BYTE ... 13 IFD); 0 for an
// unknown type, whose entries are left out.
size_t type_size(uint16_t type);

struct Directory;

struct Entry {
    uint16_t tag = 0, type = 0;
    uint32_t count = 0;
    std::vector<uint8_t> value;       // count values of `type`, in the tree's byte order
    std::vector<Directory> children;  // a directory-offset tag's directory (one); empty otherwise
    size_t at = 0;                    // offset of the entry's 12 bytes in the bytes it was read from
};

struct Directory {
    std::vector<Entry> entries;  // in the order read (sorted by tag when written)
    size_t at = 0;               // offset of the directory in the bytes it was read from
    size_t next_at = 0;          // offset of its next-directory pointer there
    uint32_t next = 0;           // that pointer's value (0: none)
    const Entry* find(uint16_t tag) const;
};

// An 8-byte TIFF header in the byte order `little_endian`, and the offset of
// the first directory set in one.
std::vector<uint8_t> header(bool little_endian);
void set_first_directory(std::vector<uint8_t>& bytes, uint32_t offset, bool little_endian);

// The byte order ("II": little) and first directory offset of TIFF-structured
// bytes; false when they do not start with a TIFF header.
bool read_header(const uint8_t* data, size_t size, bool& little_endian, uint32_t& first_directory);

// The directory at `offset` of `data` and, below it, the directories its
// directory-offset tags name (up to 3 levels: IFD0, EXIF, interoperability).
// False when the directory itself does not fit; entries that do not (a value
// past the end, an unknown type, a child that cannot be read) are left out,
// and so is everything past a total of `size` value bytes or 4096 entries
// (65536 looked at), so crafted offsets that overlap or loop cannot make the
// tree larger than its source or the walk long.
bool read_directory(const uint8_t* data, size_t size, bool little_endian, uint32_t offset, Directory& out);

// The first value of a SHORT or LONG entry (0 for other types).
uint32_t first_number(const Entry& entry, bool little_endian);
// Replaces the values of `entry` with one SHORT or LONG.
void set_number(Entry& entry, uint16_t type, uint32_t value, bool little_endian);

// In-place patches of the bytes a directory was read from (`source`, as
// read): `value` over the value of `entry`, one SHORT or LONG held in the
// entry itself (false where it is another kind, or a SHORT and value does
// not fit); a next-directory pointer of 0 for `dir` (unlinking what follows).
bool patch_number(std::vector<uint8_t>& source, const Entry& entry, uint32_t value, bool little_endian);
void unlink_next(std::vector<uint8_t>& source, const Directory& dir, bool little_endian);

// Converts every value of `dir` and its children from one byte order to the other.
void swap_byte_order(Directory& dir);

// Appends `dir` to `out` (word-aligned), entries sorted by tag, each value
// that does not fit in its entry after the directory, then its children;
// values are already in the byte order `little_endian`. Offsets are counted
// from out[base]. Returns the directory's offset, or 0 when the result would
// not fit in TIFF's 32-bit offsets (`out` is then left as it was).
uint32_t write_directory(const Directory& dir, bool little_endian, uint32_t next, size_t base,
                         std::vector<uint8_t>& out);

}  // namespace imr::imageio::tiff
