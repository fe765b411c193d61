#include "image/jpeg_projection.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "image/probe.h"

namespace imr {

namespace {

// The orthonormal 8-point DCT-II: JPEG's coefficients of a block X are
// F = D X D^T, with F[v][u] (v the vertical frequency) at index v * 8 + u;
// X = D^T F D.
struct DctMatrices {
    float d[64], dt[64];  // D and D^T, row-major
    DctMatrices() {
        for (int u = 0; u < 8; ++u)
            for (int x = 0; x < 8; ++x)
                dt[x * 8 + u] = d[u * 8 + x] =
                    float((u == 0 ? std::sqrt(1.0 / 8) : 0.5) * std::cos((2 * x + 1) * u * M_PI / 16));
    }
};
const DctMatrices kDct;

// out = a b, 8x8 row-major; the inner loop runs along a row of b and out,
// which the compiler vectorizes (8 floats).
void matmul8(const float* __restrict a, const float* __restrict b, float* __restrict out) {
    for (int i = 0; i < 64; ++i) out[i] = 0;
    for (int r = 0; r < 8; ++r)
        for (int k = 0; k < 8; ++k)
            for (int c = 0; c < 8; ++c) out[r * 8 + c] += a[r * 8 + k] * b[k * 8 + c];
}

// out = D in D^T (forward) or D^T in D (inverse): 1,024 multiply-adds.
void transform(const float* in, float* out, bool inverse) {
    float t[64];
    matmul8(inverse ? kDct.dt : kDct.d, in, t);
    matmul8(t, inverse ? kDct.d : kDct.dt, out);
}

// JFIF's RGB -> YCbCr rows (libjpeg's conversion), without the +128 of the
// chroma: the level shift takes it off again. Y's own level shift is kLevel.
constexpr float kToYcc[3][3] = {
    {0.299f, 0.587f, 0.114f}, {-0.168736f, -0.331264f, 0.5f}, {0.5f, -0.418688f, -0.081312f}};
constexpr float kLevel = 128;

// The image is projected one band at a time: the rows of one row of MCUs
// (8 * max_v image rows), each component's block rows in it as a plane at the
// component's own resolution, padded to whole blocks. A few hundred KB for a
// 12 MP photo instead of float copies of the whole image.
struct Band {
    int fx = 1, fy = 1;       // the component's box of pixels (max_h / h, max_v / v)
    int first_row = 0;        // of the component, at the band's top (a multiple of 8)
    int rows = 0, width = 0;  // of the plane: whole block rows in the band, blocks_wide * 8
    std::vector<float> v;
    float* row(int r) { return &v[size_t(r) * width]; }
    const float* row(int r) const { return &v[size_t(r) * width]; }
};

// Component `c` of `image` (in the file's orientation) as libjpeg's encoder
// sees it, for the band's rows: converted, averaged over each fx x fy box of
// pixels, level-shifted, and the image's last column and row repeated out
// to whole blocks.
template <class T>
void fill_band(Band& b, const Image& image, const T* s, int c, std::vector<float>& row) {
    const int w = image.width, h = image.height, ch = image.channels, fx = b.fx, fy = b.fy;
    const float norm = 255.0f / float(image.max_value()) / float(fx * fy), level = c == 0 ? kLevel : 0.0f;
    const int cw = (w + fx - 1) / fx, chh = (h + fy - 1) / fy;  // the component's own size
    const float k0 = kToYcc[c][0], k1 = kToYcc[c][1], k2 = kToYcc[c][2];
    row.resize(size_t(cw) * fx);  // one image row converted, its last pixel repeated to whole boxes
    for (int r = 0; r < b.rows; ++r) {
        float* out = b.row(r);
        std::fill_n(out, cw, 0.0f);
        const int y = std::min(b.first_row + r, chh - 1);
        for (int dy = 0; dy < fy; ++dy) {
            const T* src = s + size_t(std::min(y * fy + dy, h - 1)) * w * ch;
            if (ch == 1)
                for (int x = 0; x < w; ++x) row[x] = float(src[x]);
            else
                for (int x = 0; x < w; ++x)
                    row[x] = k0 * float(src[3 * x]) + k1 * float(src[3 * x + 1]) + k2 * float(src[3 * x + 2]);
            for (size_t x = size_t(w); x < row.size(); ++x) row[x] = row[w - 1];
            if (fx == 1)
                for (int x = 0; x < cw; ++x) out[x] += row[x];
            else
                for (int x = 0; x < cw; ++x)
                    for (int dx = 0; dx < fx; ++dx) out[x] += row[size_t(x) * fx + dx];
        }
        for (int x = 0; x < cw; ++x) out[x] = out[x] * norm - level;
        for (int x = cw; x < b.width; ++x) out[x] = out[cw - 1];
    }
}

// Each block's coefficients clamped to their cells; the band becomes the
// change (zero where a block was inside already).
void project_band(Band& b, const JpegCoefficients::Component& comp) {
    alignas(32) float block[64], f[64], step[64];
    for (int i = 0; i < 64; ++i) step[i] = comp.step[i];
    for (int r = 0; r < b.rows; r += 8)
        for (int bx = 0; bx < comp.blocks_wide; ++bx) {
            float* at = b.row(r) + bx * 8;
            for (int y = 0; y < 8; ++y) std::copy_n(at + size_t(y) * b.width, 8, block + y * 8);
            transform(block, f, false);
            const int16_t* k = &comp.k[(size_t(b.first_row + r) / 8 * comp.blocks_wide + bx) * 64];
            int moved = 0;
            for (int i = 0; i < 64; ++i) {
                const float kf = float(k[i]);
                const float clamped = std::min(std::max(f[i], (kf - 0.5f) * step[i]), (kf + 0.5f) * step[i]);
                moved |= clamped != f[i];
                f[i] = clamped - f[i];
            }
            if (moved)
                transform(f, block, true);
            else
                std::fill_n(block, 64, 0.0f);
            for (int y = 0; y < 8; ++y) std::copy_n(block + y * 8, 8, at + size_t(y) * b.width);
        }
}

// The bands' changes added to image rows [y0, y1), back in RGB (YCbCr ->
// RGB is linear, so the change converts alone: a pixel no block moved keeps
// its exact value), each component's change spread over its box of pixels.
template <class T>
void apply_band(Image& image, T* s, const std::vector<Band>& bands, int y0, int y1, std::vector<float>& d) {
    const int w = image.width, ch = image.channels;
    const float scale = float(image.max_value()) / 255.0f, top = float(image.max_value());
    d.assign(size_t(3) * w, 0.0f);  // one row's change of each component, at full resolution
    for (int y = y0; y < y1; ++y) {
        for (size_t c = 0; c < bands.size(); ++c) {
            const Band& b = bands[c];
            const float* from = b.row(y / b.fy - b.first_row);
            float* to = &d[c * w];
            for (int x = 0, i = 0; x < w; x += b.fx, ++i)  // each box's change to its pixels
                for (int dx = 0; dx < b.fx && x + dx < w; ++dx) to[x + dx] = from[i] * scale;
        }
        T* px = s + size_t(y) * w * ch;
        if (ch == 1) {
            for (int x = 0; x < w; ++x) px[x] = T(std::clamp(std::nearbyint(float(px[x]) + d[x]), 0.0f, top));
            continue;
        }
        const float *dy = &d[0], *dcb = &d[size_t(w)], *dcr = &d[2 * size_t(w)];
        for (int x = 0; x < w; ++x) {
            const float rgb[3] = {dy[x] + 1.402f * dcr[x], dy[x] - 0.344136f * dcb[x] - 0.714136f * dcr[x],
                                  dy[x] + 1.772f * dcb[x]};
            for (int c = 0; c < 3; ++c)
                px[3 * x + c] = T(std::clamp(std::nearbyint(float(px[3 * x + c]) + rgb[c]), 0.0f, top));
        }
    }
}

int inverse_orientation(int o) {
    return o == 6 ? 8 : o == 8 ? 6 : o;
}

}  // namespace

void project_onto_jpeg(Image& image, const JpegCoefficients& jpeg) {
    const size_t n = jpeg.components.size();
    const int want_channels = n == 1 ? 1 : 3;
    if ((n != 1 && n != 3) || image.channels != want_channels)
        throw Error("the JPEG has " + std::to_string(n) + " component(s), the image " + std::to_string(image.channels) +
                    " channel(s)");
    const bool turned = jpeg.orientation >= 2 && jpeg.orientation <= 8;
    if (turned) imageio::apply_orientation(image, inverse_orientation(jpeg.orientation));
    if (image.width != jpeg.width || image.height != jpeg.height)
        throw Error("the image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                    " (in the file's orientation), the JPEG " + std::to_string(jpeg.width) + "x" +
                    std::to_string(jpeg.height));
    std::vector<Band> bands(n);
    for (size_t c = 0; c < n; ++c) {
        const JpegCoefficients::Component& comp = jpeg.components[c];
        if (comp.h < 1 || comp.v < 1 || jpeg.max_h % comp.h != 0 || jpeg.max_v % comp.v != 0 ||
            comp.blocks_wide != (jpeg.width * comp.h / jpeg.max_h + 7 + (jpeg.width * comp.h % jpeg.max_h != 0)) / 8 ||
            comp.blocks_high !=
                (jpeg.height * comp.v / jpeg.max_v + 7 + (jpeg.height * comp.v % jpeg.max_v != 0)) / 8 ||
            comp.k.size() != size_t(comp.blocks_wide) * comp.blocks_high * 64)
            throw Error("the JPEG's component " + std::to_string(c) + " does not fit its size (" +
                        std::to_string(jpeg.width) + "x" + std::to_string(jpeg.height) + ")");
        bands[c].fx = jpeg.max_h / comp.h, bands[c].fy = jpeg.max_v / comp.v;
        bands[c].width = comp.blocks_wide * 8;
        bands[c].v.resize(size_t(bands[c].width) * 8 * comp.v);
    }
    std::vector<float> scratch;
    const int band_rows = 8 * jpeg.max_v;  // image rows of one row of MCUs
    with_samples(image, [&](auto* s) {
        for (int y0 = 0; y0 < image.height; y0 += band_rows) {
            for (size_t c = 0; c < n; ++c) {
                const JpegCoefficients::Component& comp = jpeg.components[c];
                Band& b = bands[c];
                b.first_row = y0 / b.fy;  // a multiple of 8: y0 is one of 8 * max_v
                b.rows = std::min(8 * comp.v, comp.blocks_high * 8 - b.first_row);
                fill_band(b, image, s, int(c), scratch);
                project_band(b, comp);
            }
            apply_band(image, s, bands, y0, std::min(y0 + band_rows, image.height), scratch);
        }
    });
    if (turned) imageio::apply_orientation(image, jpeg.orientation);
}

bool jpeg_projection_wanted(const std::string& mode, const std::string& task) {
    if (mode != "auto" && mode != "on" && mode != "off")
        throw Error("--jpeg-projection " + mode + ": expected auto, on or off");
    if (mode == "on" && !jpeg_projection_available())
        throw Error("--jpeg-projection on: reading a JPEG's coefficients needs libjpeg, which this build lacks");
    return jpeg_projection_available() && (mode == "on" || (mode == "auto" && task == "deblock"));
}

}  // namespace imr

#ifndef IMRESTORE_WITH_LIBJPEG
namespace imr {
// (codec_libjpeg.cpp has the reader where the build has libjpeg.)
JpegCoefficients read_jpeg_coefficients(const std::string& path, const std::vector<uint8_t>&) {
    throw Error(path + ": reading a JPEG's coefficients needs libjpeg, which this build lacks");
}
bool jpeg_projection_available() {
    return false;
}
}  // namespace imr
#endif
