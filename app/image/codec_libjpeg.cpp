// JPEG through libjpeg(-turbo) directly: the codec for JPEG wherever OpenCV
// does not take it (the OpenCV-free build for GPU hosts, --codec stb). It
// replaces stb's JPEG paths, which are slower (a 12 MP photo: ~170 ms to
// decode, ~450 ms to encode on the GPU host) and unsafe (stb_image 2.27's
// Huffman table builder writes past its tables on invalid files;
// stb_image_write's encoder shifts negative values: undefined behaviour on
// every JPEG). libjpeg reports errors through a callback that must not
// return: it longjmps back here, and the error becomes an imr::Error; no
// C++ object with a destructor lives across the setjmp.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
// (after jpeglib.h, which it needs)
#include <jerror.h>

#include "error.h"
#include "image/codecs.h"
#include "image/jpeg_projection.h"
#include "image/metadata.h"
#include "image/probe.h"

namespace imr::imageio {

namespace {

struct ErrorManager {
    jpeg_error_mgr pub;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    // libjpeg's standard manager with on_error / on_message (below) in place
    // of its exit() and stderr output.
    jpeg_error_mgr* install();
};

void on_error(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
}

// Warnings (corrupt data libjpeg can step over) stay silent: a truncated
// file is refused before decoding (probe_jpeg), the rest decodes as libjpeg
// sees fit, as OpenCV's build does.
void on_message(j_common_ptr, int) {}

jpeg_error_mgr* ErrorManager::install() {
    jpeg_std_error(&pub);
    pub.error_exit = on_error;
    pub.emit_message = on_message;
    return &pub;
}

// The decoder's state lives in this object, never in automatic variables of
// a function that calls setjmp: those are indeterminate after a longjmp if
// they changed in between. Each step returns false after a libjpeg error.
class Decoder {
public:
    Decoder() { cinfo_.err = err_.install(); }
    ~Decoder() {
        if (created_) jpeg_destroy_decompress(&cinfo_);
    }
    Decoder(const Decoder&) = delete;
    Decoder& operator=(const Decoder&) = delete;

    bool start(const std::vector<uint8_t>& data) {
        if (setjmp(err_.jump)) return false;
        jpeg_create_decompress(&cinfo_);  // can fail too (out of memory): after the setjmp
        created_ = true;
        jpeg_mem_src(&cinfo_, data.data(), static_cast<unsigned long>(data.size()));
        jpeg_read_header(&cinfo_, TRUE);
        cmyk_ = cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK;
        cinfo_.out_color_space = cmyk_ ? JCS_CMYK : cinfo_.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
        jpeg_start_decompress(&cinfo_);
        return true;
    }
    int width() const { return int(cinfo_.output_width); }
    int height() const { return int(cinfo_.output_height); }
    int channels() const { return cmyk_ ? 3 : cinfo_.output_components; }

    // All rows into the image's 8-bit samples (allocated by the caller):
    // gray and RGB straight into its rows, CMYK through row_.
    bool read(Image& img) {
        row_.resize(size_t(width()) * cinfo_.output_components);
        if (setjmp(err_.jump)) return false;
        const size_t w = size_t(width()), c = size_t(channels());
        uint8_t* samples = img.data<uint8_t>();
        while (cinfo_.output_scanline < cinfo_.output_height) {
            uint8_t* dst = samples + size_t(cinfo_.output_scanline) * w * c;
            JSAMPROW rows[1] = {cmyk_ ? row_.data() : dst};
            jpeg_read_scanlines(&cinfo_, rows, 1);
            if (!cmyk_) continue;
            // Adobe CMYK/YCCK JPEGs store inverted inks: libjpeg hands back
            // C' = 255 - C etc., so R = C' * K' / 255 (the usual conversion).
            const bool inverted = cinfo_.saw_Adobe_marker;
            for (size_t x = 0; x < w; ++x) {
                const uint8_t* p = &row_[x * 4];
                const unsigned k = inverted ? p[3] : 255u - p[3];
                for (size_t ch = 0; ch < 3; ++ch) {
                    const unsigned ink = inverted ? p[ch] : 255u - p[ch];
                    dst[x * 3 + ch] = uint8_t((ink * k + 127) / 255);
                }
            }
        }
        jpeg_finish_decompress(&cinfo_);
        return true;
    }
    const char* message() const { return err_.message; }

private:
    jpeg_decompress_struct cinfo_{};
    ErrorManager err_{};
    bool created_ = false, cmyk_ = false;
    std::vector<uint8_t> row_;
};

// Reads a JPEG's quantized coefficients (jpeg_read_coefficients: the entropy
// decoding alone, no inverse DCT) into a JpegCoefficients. Its state lives in
// the object for the same reason as the Decoder's.
class CoefficientReader {
public:
    CoefficientReader() { cinfo_.err = err_.install(); }
    ~CoefficientReader() {
        if (created_) jpeg_destroy_decompress(&cinfo_);
    }
    CoefficientReader(const CoefficientReader&) = delete;
    CoefficientReader& operator=(const CoefficientReader&) = delete;

    // false after a libjpeg error (message()) or with refusal_ set (a JPEG
    // the projection does not take).
    bool read(const std::vector<uint8_t>& data, JpegCoefficients& out) {
        if (setjmp(err_.jump)) return false;
        jpeg_create_decompress(&cinfo_);
        created_ = true;
        jpeg_mem_src(&cinfo_, data.data(), static_cast<unsigned long>(data.size()));
        jpeg_read_header(&cinfo_, TRUE);
        const int n = cinfo_.num_components;
        if (!((cinfo_.jpeg_color_space == JCS_GRAYSCALE && n == 1) || (cinfo_.jpeg_color_space == JCS_YCbCr && n == 3)))
            return refuse(cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK
                              ? "a CMYK JPEG"
                              : "a JPEG neither gray nor YCbCr (its colors are coded another way)");
        if (cinfo_.data_precision != 8) return refuse("a JPEG of 12-bit samples");
        jvirt_barray_ptr* arrays = jpeg_read_coefficients(&cinfo_);
        out.width = int(cinfo_.image_width), out.height = int(cinfo_.image_height);
        out.max_h = cinfo_.max_h_samp_factor, out.max_v = cinfo_.max_v_samp_factor;
        out.components.resize(size_t(n));
        for (int c = 0; c < n; ++c) {
            const jpeg_component_info& info = cinfo_.comp_info[c];
            JpegCoefficients::Component& comp = out.components[size_t(c)];
            if (out.max_h % info.h_samp_factor != 0 || out.max_v % info.v_samp_factor != 0)
                return refuse("a JPEG whose chroma sampling is no whole-number ratio of its luma's");
            if (!info.quant_table) return refuse("a JPEG without a quantization table for each component");
            comp.h = info.h_samp_factor, comp.v = info.v_samp_factor;
            comp.blocks_wide = int(info.width_in_blocks), comp.blocks_high = int(info.height_in_blocks);
            for (int i = 0; i < DCTSIZE2; ++i) {
                comp.step[size_t(i)] = info.quant_table->quantval[i];
                if (comp.step[size_t(i)] == 0) return refuse("a JPEG with a quantization step of 0");
            }
            // Each row of blocks where libjpeg keeps it (in memory: libjpeg-turbo's
            // memory manager has no backing store), not copied: this reader lives
            // as long as the JpegCoefficients (JpegCoefficients::owner).
            comp.block_rows.resize(info.height_in_blocks);
            for (JDIMENSION row = 0; row < info.height_in_blocks; ++row) {
                comp.block_rows[row] = (*cinfo_.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo_),
                                                                         arrays[c], row, 1, FALSE)[0][0];
                // A libjpeg with a backing store would hand out one window of rows again and again.
                if (row > 0 && comp.block_rows[row] == comp.block_rows[row - 1])
                    return refuse("a libjpeg that keeps coefficients outside memory (this tool needs libjpeg-turbo's)");
            }
        }
        return true;  // no jpeg_finish_decompress: it would free the arrays (the destructor does)
    }
    const char* message() const { return refusal_ ? refusal_ : err_.message; }

private:
    bool refuse(const char* why) {
        refusal_ = why;
        return false;
    }
    jpeg_decompress_struct cinfo_{};
    ErrorManager err_{};
    bool created_ = false;
    const char* refusal_ = nullptr;
};

// The encoder writes into a std::vector through its own destination manager
// (jpeg_mem_dest's buffer may be freed and replaced while libjpeg works, so
// it cannot be released safely after an error).
class Encoder {
public:
    Encoder() {
        cinfo_.err = err_.install();
        dest_.init_destination = on_init;
        dest_.empty_output_buffer = on_full;
        dest_.term_destination = on_term;
    }
    ~Encoder() {
        if (created_) jpeg_destroy_compress(&cinfo_);
    }
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    bool encode(const Image& img, int quality, int subsampling) {
        if (setjmp(err_.jump)) return false;
        jpeg_create_compress(&cinfo_);
        created_ = true;
        cinfo_.client_data = this;
        cinfo_.dest = &dest_;
        cinfo_.image_width = JDIMENSION(img.width), cinfo_.image_height = JDIMENSION(img.height);
        cinfo_.input_components = img.channels;
        cinfo_.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
        jpeg_set_defaults(&cinfo_);  // baseline, 4:2:0 (libjpeg's and OpenCV's default)
        jpeg_set_quality(&cinfo_, quality, TRUE);
        if (subsampling == 444 && img.channels == 3)
            for (int c = 0; c < 3; ++c) cinfo_.comp_info[c].h_samp_factor = cinfo_.comp_info[c].v_samp_factor = 1;
        jpeg_start_compress(&cinfo_, TRUE);
        const uint8_t* samples = img.data<uint8_t>();
        const size_t row_samples = size_t(img.width) * img.channels;
        while (cinfo_.next_scanline < cinfo_.image_height) {
            // libjpeg only reads the rows it is given (JSAMPROW is not const in its API).
            JSAMPROW rows[1] = {const_cast<uint8_t*>(samples + size_t(cinfo_.next_scanline) * row_samples)};
            jpeg_write_scanlines(&cinfo_, rows, 1);
        }
        jpeg_finish_compress(&cinfo_);
        return true;
    }
    std::vector<uint8_t>& bytes() { return out_; }
    const char* message() const { return err_.message; }

private:
    static constexpr size_t kChunk = 1 << 16;
    static Encoder* self(j_compress_ptr c) { return static_cast<Encoder*>(c->client_data); }
    // Grows the output by one chunk; out of memory becomes libjpeg's error
    // (no C++ exception may cross its C frames).
    static void grow(j_compress_ptr c) {
        Encoder* e = self(c);
        try {
            e->out_.resize(e->out_.size() + kChunk);
        } catch (const std::bad_alloc&) {
            c->err->msg_code = JERR_OUT_OF_MEMORY;
            (*c->err->error_exit)(reinterpret_cast<j_common_ptr>(c));
        }
        c->dest->next_output_byte = e->out_.data() + e->out_.size() - kChunk;
        c->dest->free_in_buffer = kChunk;
    }
    static void on_init(j_compress_ptr c) { grow(c); }
    static boolean on_full(j_compress_ptr c) {  // the whole chunk is full
        grow(c);
        return TRUE;
    }
    static void on_term(j_compress_ptr c) {  // drop the unused end of the last chunk
        self(c)->out_.resize(self(c)->out_.size() - c->dest->free_in_buffer);
    }

    jpeg_compress_struct cinfo_{};
    ErrorManager err_{};
    jpeg_destination_mgr dest_{};
    bool created_ = false;
    std::vector<uint8_t> out_;
};

}  // namespace

Image decode_libjpeg(const std::string& path, const std::vector<uint8_t>& data) {
    auto dec = std::make_unique<Decoder>();
    if (!dec->start(data)) throw Error(path + ": cannot decode: " + dec->message());
    check_dimensions(path, uint64_t(dec->width()), uint64_t(dec->height()), uint64_t(dec->channels()));
    Image img;
    img.width = dec->width(), img.height = dec->height(), img.channels = dec->channels(), img.bit_depth = 8;
    img.allocate();
    if (!dec->read(img)) throw Error(path + ": cannot decode: " + dec->message());
    return img;
}

std::vector<uint8_t> encode_libjpeg(const std::string& path, const Image& img, int quality, int subsampling) {
    if (img.bit_depth != 8 || (img.channels != 1 && img.channels != 3))
        throw Error(path + ": JPEG holds 8-bit gray or RGB only");
    auto enc = std::make_unique<Encoder>();
    if (!enc->encode(img, quality, subsampling)) throw Error(path + ": cannot encode the JPEG: " + enc->message());
    return std::move(enc->bytes());
}

}  // namespace imr::imageio

namespace imr {

JpegCoefficients read_jpeg_coefficients(const std::string& path, const std::vector<uint8_t>& bytes) {
    static_assert(sizeof(JCOEF) == sizeof(int16_t) && sizeof(JBLOCK) == 64 * sizeof(int16_t));
    JpegCoefficients out;
    auto reader = std::make_shared<imageio::CoefficientReader>();
    if (!reader->read(bytes, out)) throw Error(path + ": " + reader->message());
    out.owner = reader;
    imageio::Dropped dropped;  // said when the image was read
    out.orientation = imageio::exif_orientation(imageio::find_metadata(imageio::Format::Jpeg, bytes, dropped).exif);
    return out;
}

bool jpeg_projection_available() {
    return true;
}

}  // namespace imr
