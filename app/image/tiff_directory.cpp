// TIFF directories read into a tree and written back (see tiff_directory.h).
#include "image/tiff_directory.h"

#include <algorithm>
#include <cstring>

#include "image/probe.h"

namespace imr::imageio::tiff {
namespace {

// IFD0 -> EXIF -> interoperability is the deepest chain EXIF has; a deeper
// one (or a loop of offsets) is not followed.
constexpr int kMaxDepth = 3;
constexpr size_t kMaxEntries = 4096;
// Entries looked at, kept or not: skipped ones (unknown type, no values)
// cost no value bytes, so without this a crafted tree of 65535-entry
// directories would be walked for seconds.
constexpr size_t kMaxVisits = 16 * kMaxEntries;

bool names_a_directory(uint16_t tag) {
    return tag == kExifIfdTag || tag == kGpsIfdTag || tag == kInteropIfdTag;
}

// The bytes one value of `type` is swapped in when the byte order changes
// (a RATIONAL is two LONGs).
size_t swap_unit(uint16_t type) {
    return type == 5 || type == 10 ? 4 : type_size(type);
}

uint32_t get16(const uint8_t* p, bool le) {
    return le ? le16(p) : be16(p);
}
uint32_t get32(const uint8_t* p, bool le) {
    return le ? le32(p) : be32(p);
}
void put16(uint8_t* p, uint32_t v, bool le) {
    p[le ? 0 : 1] = uint8_t(v), p[le ? 1 : 0] = uint8_t(v >> 8);
}
void put32(uint8_t* p, uint32_t v, bool le) {
    for (int i = 0; i < 4; ++i) p[le ? i : 3 - i] = uint8_t(v >> (8 * i));
}

class Reader {
public:
    Reader(const uint8_t* data, size_t size, bool le)
        : d_(data), n_(size), le_(le), value_budget_(size), entry_budget_(kMaxEntries), visit_budget_(kMaxVisits) {}

    bool read(uint32_t offset, int depth, Directory& out) {
        if (uint64_t(offset) + 2 > n_) return false;
        const uint32_t count = get16(d_ + offset, le_);
        const uint64_t end = uint64_t(offset) + 2 + 12 * uint64_t(count);
        if (end > n_) return false;
        out.at = offset, out.next_at = size_t(end);
        out.next = end + 4 <= n_ ? get32(d_ + end, le_) : 0;
        for (uint32_t i = 0; i < count && entry_budget_ > 0 && visit_budget_ > 0; ++i) {
            --visit_budget_;
            const size_t at = size_t(offset) + 2 + 12 * size_t(i);
            Entry e;
            e.tag = uint16_t(get16(d_ + at, le_)), e.type = uint16_t(get16(d_ + at + 2, le_));
            e.count = get32(d_ + at + 4, le_), e.at = at;
            const uint64_t bytes = uint64_t(e.count) * type_size(e.type);
            if (bytes == 0 || bytes > value_budget_) continue;  // unknown type, no values, or beyond the budget
            const uint64_t from = bytes <= 4 ? at + 8 : get32(d_ + at + 8, le_);
            if (from + bytes > n_) continue;
            // Charged before a child directory is read, so the child sees
            // only what is left: charged after it, a child that used up the
            // rest would wrap these counters below zero, and a directory
            // that names itself would then be read ~count^3 times.
            value_budget_ -= size_t(bytes);
            --entry_budget_;
            e.value.assign(d_ + from, d_ + from + bytes);
            if (names_a_directory(e.tag)) {
                if (depth >= kMaxDepth || e.count != 1 || (e.type != 4 && e.type != 13)) continue;
                Directory child;
                if (!read(first_number(e, le_), depth + 1, child)) continue;
                e.children.push_back(std::move(child));
            }
            out.entries.push_back(std::move(e));
        }
        return true;
    }

private:
    const uint8_t* d_;
    size_t n_;
    bool le_;
    size_t value_budget_, entry_budget_, visit_budget_;
};

void align_word(std::vector<uint8_t>& out, size_t base) {
    if ((out.size() - base) & 1) out.push_back(0);
}

// write_directory without the final check of the offsets' range.
size_t append_directory(const Directory& dir, bool le, uint32_t next, size_t base, std::vector<uint8_t>& out) {
    std::vector<const Entry*> sorted;
    for (const Entry& e : dir.entries) sorted.push_back(&e);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) { return a->tag < b->tag; });
    align_word(out, base);
    const size_t at = out.size();
    out.resize(at + 2 + 12 * sorted.size() + 4, 0);
    put16(&out[at], uint32_t(sorted.size()), le);
    put32(&out[at + 2 + 12 * sorted.size()], next, le);
    for (size_t i = 0; i < sorted.size(); ++i) {
        const Entry& e = *sorted[i];
        const size_t entry = at + 2 + 12 * i;
        put16(&out[entry], e.tag, le), put16(&out[entry + 2], e.type, le), put32(&out[entry + 4], e.count, le);
        if (!e.children.empty()) continue;  // its offset is known once the child is written (below)
        if (e.value.size() <= 4) {
            std::copy(e.value.begin(), e.value.end(), out.begin() + long(entry + 8));
            continue;
        }
        align_word(out, base);
        const size_t value_at = out.size();
        out.insert(out.end(), e.value.begin(), e.value.end());
        put32(&out[entry + 8], uint32_t(value_at - base), le);
    }
    for (size_t i = 0; i < sorted.size(); ++i) {
        if (sorted[i]->children.empty()) continue;
        const size_t child = append_directory(sorted[i]->children.front(), le, 0, base, out);
        put32(&out[at + 2 + 12 * i + 8], uint32_t(child - base), le);
    }
    return at;
}

}  // namespace

size_t type_size(uint16_t type) {
    static const uint8_t sizes[14] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4};
    return type < 14 ? sizes[type] : 0;
}

const Entry* Directory::find(uint16_t tag) const {
    for (const Entry& e : entries)
        if (e.tag == tag) return &e;
    return nullptr;
}

std::vector<uint8_t> header(bool little_endian) {
    if (little_endian) return {'I', 'I', 42, 0, 0, 0, 0, 0};
    return {'M', 'M', 0, 42, 0, 0, 0, 0};
}

void set_first_directory(std::vector<uint8_t>& bytes, uint32_t offset, bool little_endian) {
    if (bytes.size() >= 8) put32(&bytes[4], offset, little_endian);
}

bool read_header(const uint8_t* data, size_t size, bool& little_endian, uint32_t& first_directory) {
    if (size < 8) return false;
    if (std::memcmp(data, "II*\0", 4) == 0)
        little_endian = true;
    else if (std::memcmp(data, "MM\0*", 4) == 0)
        little_endian = false;
    else
        return false;
    first_directory = get32(data + 4, little_endian);
    return true;
}

bool read_directory(const uint8_t* data, size_t size, bool little_endian, uint32_t offset, Directory& out) {
    out = Directory{};
    return Reader(data, size, little_endian).read(offset, 1, out);
}

uint32_t first_number(const Entry& entry, bool little_endian) {
    if (entry.type == 3 && entry.value.size() >= 2) return get16(entry.value.data(), little_endian);
    if ((entry.type == 4 || entry.type == 13) && entry.value.size() >= 4)
        return get32(entry.value.data(), little_endian);
    return 0;
}

void set_number(Entry& entry, uint16_t type, uint32_t value, bool little_endian) {
    entry.type = type, entry.count = 1;
    entry.value.assign(type == 3 ? 2 : 4, 0);
    if (type == 3)
        put16(entry.value.data(), value, little_endian);
    else
        put32(entry.value.data(), value, little_endian);
}

bool patch_number(std::vector<uint8_t>& source, const Entry& entry, uint32_t value, bool little_endian) {
    if (entry.count != 1 || entry.at + 12 > source.size()) return false;
    if (entry.type == 3 && value <= 0xFFFF) {
        put16(&source[entry.at + 8], value, little_endian);
        return true;
    }
    if (entry.type == 4) {
        put32(&source[entry.at + 8], value, little_endian);
        return true;
    }
    return false;
}

void unlink_next(std::vector<uint8_t>& source, const Directory& dir, bool little_endian) {
    if (dir.next != 0 && dir.next_at + 4 <= source.size()) put32(&source[dir.next_at], 0, little_endian);
}

void swap_byte_order(Directory& dir) {
    for (Entry& e : dir.entries) {
        const size_t unit = swap_unit(e.type);
        if (unit > 1)
            for (size_t i = 0; i + unit <= e.value.size(); i += unit)
                std::reverse(e.value.begin() + long(i), e.value.begin() + long(i + unit));
        for (Directory& child : e.children) swap_byte_order(child);
    }
}

uint32_t write_directory(const Directory& dir, bool little_endian, uint32_t next, size_t base,
                         std::vector<uint8_t>& out) {
    const size_t before = out.size();
    const size_t at = append_directory(dir, little_endian, next, base, out);
    if (out.size() - base > UINT32_MAX) {
        out.resize(before);
        return 0;
    }
    return uint32_t(at - base);
}

}  // namespace imr::imageio::tiff
