// PNG written through libpng wherever OpenCV does not write it (the
// OpenCV-free build, --codec stb, gray+alpha, which OpenCV's writer lacks):
// 8 or 16 bit, 1 to 4 channels, with the settings OpenCV uses when given a
// compression level (zlib level, default strategy, libpng's adaptive row
// filters), so both builds write files of the same size at the same speed
// (the built-in encoder it replaces wrote 45-52% larger files). libpng
// reports errors by longjmp: the encoder's state lives in a heap object,
// never in automatic variables of the function that calls setjmp.
#include <png.h>

#include <csetjmp>
#include <memory>
#include <new>

#include "error.h"
#include "image/codecs.h"

namespace imr::imageio {

namespace {

class PngWriter {
public:
    PngWriter() {
        png_ = png_create_write_struct(PNG_LIBPNG_VER_STRING, this, on_error, on_warning);
        if (png_) info_ = png_create_info_struct(png_);
    }
    ~PngWriter() { png_destroy_write_struct(&png_, &info_); }
    PngWriter(const PngWriter&) = delete;
    PngWriter& operator=(const PngWriter&) = delete;

    bool encode(const Image& img, int level) {
        if (!png_ || !info_) {
            message_ = "out of memory";
            return false;
        }
        // 8-bit rows go to libpng as they are; 16-bit ones through row_, big-endian.
        const uint8_t* samples8 = img.bit_depth == 8 ? img.data<uint8_t>() : nullptr;
        const uint16_t* samples16 = img.bit_depth == 16 ? img.data<uint16_t>() : nullptr;
        if (samples16) row_.resize(size_t(img.width) * img.channels * 2);
        if (setjmp(png_jmpbuf(png_))) return false;
        png_set_write_fn(png_, this, on_write, nullptr);
        png_set_user_limits(png_, 0x7fffffff, 0x7fffffff);  // libpng's default refuses a side over 1,000,000
        static const int kColorType[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                          PNG_COLOR_TYPE_RGB_ALPHA};
        png_set_IHDR(png_, info_, png_uint_32(img.width), png_uint_32(img.height), img.bit_depth,
                     kColorType[img.channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_set_compression_level(png_, level);
        png_write_info(png_, info_);
        const size_t samples = size_t(img.width) * img.channels;
        for (int y = 0; y < img.height; ++y) {
            if (samples8) {
                png_write_row(png_, samples8 + size_t(y) * samples);
                continue;
            }
            const uint16_t* src = samples16 + size_t(y) * samples;
            for (size_t i = 0; i < samples; ++i)  // PNG stores 16-bit samples big-endian
                row_[2 * i] = uint8_t(src[i] >> 8), row_[2 * i + 1] = uint8_t(src[i]);
            png_write_row(png_, row_.data());
        }
        png_write_end(png_, nullptr);
        return true;
    }
    std::vector<uint8_t>& bytes() { return out_; }
    const std::string& message() const { return message_; }

private:
    // No C++ exception may cross libpng's C frames: out of memory becomes
    // libpng's error, which longjmps back to encode().
    static void on_write(png_structp png, png_bytep data, png_size_t n) {
        auto* self = static_cast<PngWriter*>(png_get_io_ptr(png));
        try {
            self->out_.insert(self->out_.end(), data, data + n);
        } catch (const std::bad_alloc&) {
            png_error(png, "out of memory");
        }
    }
    static void on_error(png_structp png, png_const_charp msg) {
        try {
            static_cast<PngWriter*>(png_get_error_ptr(png))->message_ = msg ? msg : "libpng error";
        } catch (const std::bad_alloc&) {
        }
        png_longjmp(png, 1);
    }
    static void on_warning(png_structp, png_const_charp) {}

    png_structp png_ = nullptr;
    png_infop info_ = nullptr;
    std::vector<uint8_t> row_, out_;
    std::string message_;
};

}  // namespace

std::vector<uint8_t> encode_libpng(const std::string& path, const Image& img, int compression) {
    if (img.channels < 1 || img.channels > 4 || (img.bit_depth != 8 && img.bit_depth != 16))
        throw Error(path + ": PNG holds 8 or 16 bits and 1 to 4 channels");
    auto writer = std::make_unique<PngWriter>();
    if (!writer->encode(img, compression)) throw Error(path + ": cannot encode the PNG: " + writer->message());
    return std::move(writer->bytes());
}

}  // namespace imr::imageio
