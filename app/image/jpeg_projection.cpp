#include "image/jpeg_projection.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "error.h"

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

// One row of a block, eight floats: GCC's and Clang's vector extension, one
// AVX2 register (the file is built for x86-64-v3).
using Row8 = float __attribute__((vector_size(32)));
Row8 load8(const float* p) {
    Row8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
void store8(float* p, Row8 v) {
    std::memcpy(p, &v, sizeof v);
}

// out = a b, 8x8 row-major: each row of out is the rows of b weighted by a
// row of a (64 broadcast multiply-adds of 8 floats, b held in registers).
void matmul8(const float* a, const float* b, float* out) {
    Row8 rows[8];
    for (int k = 0; k < 8; ++k) rows[k] = load8(b + 8 * k);
    for (int r = 0; r < 8; ++r) {
        Row8 acc = a[r * 8] * rows[0];
        for (int k = 1; k < 8; ++k) acc += a[r * 8 + k] * rows[k];
        store8(out + 8 * r, acc);
    }
}

// out = D in D^T (forward) or D^T in D (inverse): 1,024 multiply-adds.
void transform(const float* in, float* out, bool inverse) {
    alignas(32) float t[64];
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
    int made_rows = 0;        // the component rows libjpeg's encoder downsampled: ceil(H / max_v) * v
    int first_row = 0;        // of the component, at the band's top (a multiple of 8)
    int rows = 0, width = 0;  // of the plane: whole block rows in the band, blocks_wide * 8
    std::vector<float> v;
    float* row(int r) { return &v[size_t(r) * width]; }
    const float* row(int r) const { return &v[size_t(r) * width]; }
};

// Where the file's pixel (x, y) is in the image as decoded, which was turned
// upright by the EXIF orientation: pixel index = base(y) + x * step(y). The
// image is read and written in place through it, never turned back.
struct FilePixels {
    int orientation, w, h, upright_width;  // w x h: the file's size
    ptrdiff_t index(int x, int y) const {
        int ux = x, uy = y;
        switch (orientation) {
            case 2:
                ux = w - 1 - x;
                break;
            case 3:
                ux = w - 1 - x, uy = h - 1 - y;
                break;
            case 4:
                uy = h - 1 - y;
                break;
            case 5:
                ux = y, uy = x;
                break;
            case 6:
                ux = h - 1 - y, uy = x;
                break;
            case 7:
                ux = h - 1 - y, uy = w - 1 - x;
                break;
            case 8:
                ux = y, uy = w - 1 - x;
                break;
            default:
                break;
        }
        return ptrdiff_t(uy) * upright_width + ux;
    }
    ptrdiff_t base(int y) const { return index(0, y); }
    ptrdiff_t step(int y) const { return w > 1 ? index(1, y) - index(0, y) : 0; }
};

// Component `c` of the image (read in the file's orientation) as libjpeg's
// encoder makes it, for the band's rows: each row converted, its last pixel
// repeated out to whole blocks at full resolution, averaged over each
// fx x fy box (the last row repeated out to whole row groups of max_v rows),
// level-shifted; component rows past those made repeat the last one.
template <class T>
void fill_band(Band& b, const T* s, int ch, const FilePixels& file, float scale, int c, std::vector<float>& row) {
    const int w = file.w, h = file.h, fx = b.fx, fy = b.fy;
    const float norm = scale / float(fx * fy), level = c == 0 ? kLevel : 0.0f;
    const float k0 = kToYcc[c][0], k1 = kToYcc[c][1], k2 = kToYcc[c][2];
    const size_t padded = size_t(b.width) * fx;  // row has room for it (project_onto_jpeg)
    for (int r = 0; r < b.rows; ++r) {
        float* out = b.row(r);
        std::fill_n(out, b.width, 0.0f);
        const int y = std::min(b.first_row + r, b.made_rows - 1);
        for (int dy = 0; dy < fy; ++dy) {
            const int sy = std::min(y * fy + dy, h - 1);
            const T* src = s + file.base(sy) * ch;
            const ptrdiff_t step = file.step(sy) * ch;
            if (ch == 1 && step == 1)  // the file's own orientation: contiguous, vectorized
                for (int x = 0; x < w; ++x) row[x] = float(src[x]);
            else if (ch == 1)
                for (int x = 0; x < w; ++x) row[x] = float(src[x * step]);
            else if (step == 3)
                for (int x = 0; x < w; ++x)
                    row[x] = k0 * float(src[3 * x]) + k1 * float(src[3 * x + 1]) + k2 * float(src[3 * x + 2]);
            else
                for (int x = 0; x < w; ++x) {
                    const T* px = src + x * step;
                    row[x] = k0 * float(px[0]) + k1 * float(px[1]) + k2 * float(px[2]);
                }
            std::fill(row.begin() + w, row.begin() + ptrdiff_t(padded), row[w - 1]);
            if (fx == 1)  // (one loop per common box width: each vectorizes)
                for (int x = 0; x < b.width; ++x) out[x] += row[x];
            else if (fx == 2)
                for (int x = 0; x < b.width; ++x) out[x] += row[2 * size_t(x)] + row[2 * size_t(x) + 1];
            else
                for (int x = 0; x < b.width; ++x)
                    for (int dx = 0; dx < fx; ++dx) out[x] += row[size_t(x) * fx + dx];
        }
        for (int x = 0; x < b.width; ++x) out[x] = out[x] * norm - level;
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
            const int16_t* k = comp.block(bx, (b.first_row + r) / 8);
            alignas(32) float kf[64];
            for (int i = 0; i < 64; ++i) kf[i] = float(k[i]);
            for (int i = 0; i < 64; ++i) {  // f becomes the change each clamp makes (min/max: vminps/vmaxps)
                const float clamped = std::min(std::max(f[i], (kf[i] - 0.5f) * step[i]), (kf[i] + 0.5f) * step[i]);
                f[i] = clamped - f[i];
            }
            int moved = 0;
            for (int i = 0; i < 64; ++i) moved |= f[i] != 0.0f;
            if (moved) {
                transform(f, block, true);
                for (int y = 0; y < 8; ++y) std::copy_n(block + y * 8, 8, at + size_t(y) * b.width);
            } else {
                for (int y = 0; y < 8; ++y) std::fill_n(at + size_t(y) * b.width, 8, 0.0f);
            }
        }
}

// The bands' changes added to the file's rows [y0, y1), back in RGB (YCbCr
// -> RGB is linear, so the change converts alone: a pixel no block moved
// keeps its exact value), each component's change spread over its box of
// pixels.
template <class T>
void apply_band(T* s, int ch, const FilePixels& file, float top, const std::vector<Band>& bands, int y0, int y1,
                std::vector<float>& d) {
    const int w = file.w;
    const float scale = top / 255.0f;
    for (int y = y0; y < y1; ++y) {
        for (size_t c = 0; c < bands.size(); ++c) {
            const Band& b = bands[c];
            const float* from = b.row(y / b.fy - b.first_row);
            float* to = &d[c * w];
            if (b.fx == 1) {  // each box's change to its pixels (one loop per common box width)
                for (int x = 0; x < w; ++x) to[x] = from[x] * scale;
            } else if (b.fx == 2) {
                for (int i = 0; i < w / 2; ++i) to[2 * i] = to[2 * i + 1] = from[i] * scale;
                if (w % 2) to[w - 1] = from[w / 2] * scale;
            } else {
                for (int x = 0; x < w; ++x) to[x] = from[x / b.fx] * scale;
            }
        }
        T* px = s + file.base(y) * ch;
        const ptrdiff_t step = file.step(y) * ch;
        if (ch == 1) {
            for (int x = 0; x < w; ++x)
                px[x * step] = T(std::clamp(std::nearbyint(float(px[x * step]) + d[x]), 0.0f, top));
            continue;
        }
        const float *dy = &d[0], *dcb = &d[size_t(w)], *dcr = &d[2 * size_t(w)];
        auto put = [top](T& sample, float change) {
            sample = T(std::clamp(std::nearbyint(float(sample) + change), 0.0f, top));
        };
        if (step == 3) {  // the file's own orientation: contiguous
            for (int x = 0; x < w; ++x) {
                put(px[3 * x], dy[x] + 1.402f * dcr[x]);
                put(px[3 * x + 1], dy[x] - 0.344136f * dcb[x] - 0.714136f * dcr[x]);
                put(px[3 * x + 2], dy[x] + 1.772f * dcb[x]);
            }
            continue;
        }
        for (int x = 0; x < w; ++x) {
            T* p = px + x * step;
            put(p[0], dy[x] + 1.402f * dcr[x]);
            put(p[1], dy[x] - 0.344136f * dcb[x] - 0.714136f * dcr[x]);
            put(p[2], dy[x] + 1.772f * dcb[x]);
        }
    }
}

}  // namespace

void project_onto_jpeg(Image& image, const JpegCoefficients& jpeg) {
    // Everything is checked and allocated before the first sample changes: an
    // error leaves the image as it was.
    const size_t n = jpeg.components.size();
    if ((n != 1 && n != 3) || image.channels != (n == 1 ? 1 : 3))
        throw Error("the JPEG has " + std::to_string(n) + " component(s), the image " + std::to_string(image.channels) +
                    " channel(s)");
    const int o = jpeg.orientation >= 1 && jpeg.orientation <= 8 ? jpeg.orientation : 1;
    const int64_t W = jpeg.width, H = jpeg.height;
    const bool swapped = o >= 5;
    if (W < 1 || H < 1 || image.width != (swapped ? H : W) || image.height != (swapped ? W : H))
        throw Error("the image is " + std::to_string(image.width) + "x" + std::to_string(image.height) + ", the JPEG " +
                    std::to_string(W) + "x" + std::to_string(H) + (swapped ? " turned by its EXIF orientation" : ""));
    if (jpeg.max_h < 1 || jpeg.max_h > 4 || jpeg.max_v < 1 || jpeg.max_v > 4)
        throw Error("the JPEG's sampling factors are outside 1..4");
    std::vector<Band> bands(n);
    size_t row_floats = 0;
    for (size_t c = 0; c < n; ++c) {
        const JpegCoefficients::Component& comp = jpeg.components[c];
        auto blocks = [](int64_t size, int64_t factor, int64_t max) {
            return ((size * factor + max - 1) / max + 7) / 8;
        };
        if (comp.h < 1 || comp.v < 1 || jpeg.max_h % comp.h != 0 || jpeg.max_v % comp.v != 0 ||
            comp.blocks_wide != blocks(W, comp.h, jpeg.max_h) || comp.blocks_high != blocks(H, comp.v, jpeg.max_v) ||
            (comp.block_rows.empty() ? comp.k.size() != size_t(comp.blocks_wide) * size_t(comp.blocks_high) * 64
                                     : comp.block_rows.size() != size_t(comp.blocks_high)))
            throw Error("the JPEG's component " + std::to_string(c) + " does not fit its size (" + std::to_string(W) +
                        "x" + std::to_string(H) + ")");
        Band& b = bands[c];
        b.fx = jpeg.max_h / comp.h, b.fy = jpeg.max_v / comp.v;
        b.made_rows = int((H + jpeg.max_v - 1) / jpeg.max_v * comp.v);
        b.width = comp.blocks_wide * 8;
        b.v.resize(size_t(b.width) * 8 * comp.v);
        row_floats = std::max(row_floats, size_t(b.width) * b.fx);
    }
    std::vector<float> row(row_floats), d(size_t(3) * W);
    const FilePixels file{o, int(W), int(H), image.width};
    const float top = float(image.max_value());
    const int band_rows = 8 * jpeg.max_v;  // image rows of one row of MCUs
    with_samples(image, [&](auto* s) {
        for (int y0 = 0; y0 < H; y0 += band_rows) {
            for (size_t c = 0; c < n; ++c) {
                const JpegCoefficients::Component& comp = jpeg.components[c];
                Band& b = bands[c];
                b.first_row = y0 / b.fy;  // a multiple of 8: y0 is one of 8 * max_v
                b.rows = std::min(8 * comp.v, comp.blocks_high * 8 - b.first_row);
                fill_band(b, s, image.channels, file, 255.0f / top, int(c), row);
                project_band(b, comp);
            }
            apply_band(s, image.channels, file, top, bands, y0, int(std::min<int64_t>(y0 + band_rows, H)), d);
        }
    });
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
