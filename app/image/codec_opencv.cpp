// The OpenCV codec: decode with cv::imdecode, encode with cv::imencode,
// swapping OpenCV's B,G,R(,A) order to and from RGB(A). Compiled to nothing
// in a build without OpenCV (IMRESTORE_WITH_OPENCV=OFF).
#ifdef IMRESTORE_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "error.h"
#include "image/codecs.h"
#include "image/probe.h"

namespace imr::imageio {

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
    img.allocate();
    // OpenCV order is B,G,R(,A): swap while copying, in the Mat's sample type (the image's).
    const int map[4] = {c >= 3 ? 2 : 0, 1, c >= 3 ? 0 : 2, 3};
    with_samples(img, [&](auto* samples) {
        using T = sample_type<decltype(samples)>;
        for (int y = 0; y < m.rows; ++y) {
            T* out = samples + size_t(y) * m.cols * c;
            const T* in = m.ptr<T>(y);
            const size_t n = size_t(m.cols);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = in[x * c + map[k]];
        }
    });
    return img;
}

std::vector<uint8_t> encode_opencv(const std::string& path, const Image& img, const std::string& ext,
                                   const FormatInfo& fmt, const WriteOptions& options) {
    const int c = img.channels;
    cv::Mat m(img.height, img.width, CV_MAKETYPE(img.bit_depth == 16 ? CV_16U : CV_8U, c));
    const int map[4] = {c >= 3 ? 2 : 0, 1, c >= 3 ? 0 : 2, 3};  // RGB(A) -> BGR(A)
    with_samples(img, [&](const auto* samples) {
        using T = sample_type<decltype(samples)>;
        for (int y = 0; y < img.height; ++y) {
            const T* in = samples + size_t(y) * img.width * c;
            T* out = m.ptr<T>(y);
            const size_t n = size_t(img.width);
            for (size_t x = 0; x < n; ++x)
                for (int k = 0; k < c; ++k) out[x * c + k] = in[x * c + map[k]];
        }
    });
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

}  // namespace imr::imageio
#endif
