// The format table: each image format's name, its extensions, which codec
// reads and writes it, and what it can hold; and the lookups on it. A new
// format starts here (a row in formats() and its Format), then sniff() in
// probe.cpp and the codec that reads it.
// Private to app/image/ (the public API is image_io.h).
#pragma once

#include <string>
#include <vector>

#include "image/image_io.h"

// app/image/ shares these helpers between its files; the rest of the tool
// sees only image_io.h.
namespace imr::imageio {

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

// Every format this tool knows, readable or writable by some codec.
const std::vector<FormatInfo>& formats();
const FormatInfo* info_of(Format f);

// The extension of `path`, lower-case with its dot (".png"); "" without one.
std::string lower_extension(const std::string& path);

// Whether `codec` (Auto: either) reads / writes the format in this build.
bool codec_reads(const FormatInfo& f, Codec codec);
bool codec_writes(const FormatInfo& f, Codec codec);

// A format readable (write = false) or writable by this build under some codec.
const FormatInfo* format_from_extension(const std::string& ext, bool write);
// The extensions this build reads (write = false) or writes, space-separated.
std::string join_extensions(bool write);

// Throws imr::Error("PATH: ...") when `codec` is OpenCV and the build has none.
void check_codec_available(const std::string& path, Codec codec);
// The format `path`'s extension names, or imr::Error("PATH: why") when `codec`
// cannot write it (no extension, unknown extension, codec lacks it).
const FormatInfo& writable_format(const std::string& path, Codec codec);

}  // namespace imr::imageio
