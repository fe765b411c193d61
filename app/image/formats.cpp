// The format table and what is looked up in it (see formats.h), and the
// public names of formats and codecs (codec_name, parse_codec,
// readable_extensions; declared in image_io.h).
#include "image/formats.h"

#include <cctype>
#include <filesystem>

#include "error.h"

namespace imr {
namespace imageio {

namespace fs = std::filesystem;

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

}  // namespace imageio

using namespace imageio;

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

}  // namespace imr
