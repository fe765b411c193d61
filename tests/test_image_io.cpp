// Image files (app/image/image_io.*) and image <-> plane conversion (app/image/image_batch.*).
// Random images from a fresh seed (printed with every failure), odd sizes,
// every codec this build has. Files go under
// temp_directory_path()/imrestore-test-<pid>/<test>, removed afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_batch.h"
#include "image/image_io.h"
#include "image_decode_input.h"
#include "image_test_files.h"

#ifdef IMRESTORE_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#endif

namespace fs = std::filesystem;
using imr::Codec;
using imr::Image;
using imr::test::build_codecs;
using imr::test::oriented;
using imr::test::png_chunk;
using imr::test::put_be32;
using imr::test::random_image;
using imr::test::read_bytes;
using imr::test::same_image;
using imr::test::smooth_image;
using imr::test::write_bytes;

namespace {

// ---------------------------------------------------------------- helpers

double mean_abs_diff(const Image& a, const Image& b) {
    double sum = 0;
    for (size_t i = 0; i < a.sample_count(); ++i) sum += std::abs(int(a.sample(i)) - int(b.sample(i)));
    return sum / double(a.sample_count());
}

std::vector<std::string> list_dir(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Runs `f`, expects an imr::Error whose message starts with `path` and
// contains `needle`.
template <class F>
::testing::AssertionResult throws_error(F&& f, const std::string& path, const std::string& needle = "") {
    try {
        f();
    } catch (const imr::Error& e) {
        std::string msg = e.what();
        if (msg.rfind(path, 0) != 0)
            return ::testing::AssertionFailure() << "message does not start with path: " << msg;
        if (msg.find(needle) == std::string::npos)
            return ::testing::AssertionFailure() << "message lacks '" << needle << "': " << msg;
        return ::testing::AssertionSuccess() << msg;
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "not an imr::Error: " << e.what();
    }
    return ::testing::AssertionFailure() << "no exception";
}

// A big-endian TIFF block with IFD0 holding one Orientation (0x0112) SHORT.
std::vector<uint8_t> exif_tiff(int orientation) {
    return {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, uint8_t(orientation), 0, 0, 0, 0, 0, 0};
}

std::vector<uint8_t> with_jpeg_exif(std::vector<uint8_t> jpeg, int orientation) {
    std::vector<uint8_t> tiff = exif_tiff(orientation);
    std::vector<uint8_t> app1 = {0xFF, 0xE1};
    size_t len = 2 + 6 + tiff.size();
    app1.push_back(uint8_t(len >> 8)), app1.push_back(uint8_t(len));
    const char exif[6] = {'E', 'x', 'i', 'f', 0, 0};
    app1.insert(app1.end(), exif, exif + 6);
    app1.insert(app1.end(), tiff.begin(), tiff.end());
    jpeg.insert(jpeg.begin() + 2, app1.begin(), app1.end());  // right after SOI
    return jpeg;
}

std::vector<uint8_t> with_png_exif(std::vector<uint8_t> png, int orientation) {
    std::vector<uint8_t> chunk = png_chunk("eXIf", exif_tiff(orientation));
    png.insert(png.begin() + 33, chunk.begin(), chunk.end());  // after signature + IHDR
    return png;
}

// A GIF89a with a 4-color global palette. The LZW stream is "uncompressed":
// a clear code before every second pixel keeps all codes 3 bits wide.
std::vector<uint8_t> make_gif(int w, int h, const std::vector<uint8_t>& index, const uint8_t palette[4][3],
                              int transparent) {
    std::vector<uint8_t> out = {'G', 'I', 'F', '8', '9', 'a'};
    auto le16 = [&](int v) { out.push_back(uint8_t(v)), out.push_back(uint8_t(v >> 8)); };
    le16(w), le16(h);
    out.insert(out.end(), {0x91, 0, 0});  // global table of 4 entries, background 0, aspect 0
    for (int i = 0; i < 4; ++i) out.insert(out.end(), palette[i], palette[i] + 3);
    if (transparent >= 0) out.insert(out.end(), {0x21, 0xF9, 4, 1, 0, 0, uint8_t(transparent), 0});
    out.push_back(0x2C);
    le16(0), le16(0), le16(w), le16(h);
    out.push_back(0);  // no local table, not interlaced
    out.push_back(2);  // LZW minimum code size
    std::vector<uint8_t> data;
    uint32_t bits = 0;
    int nbits = 0;
    auto emit = [&](int code) {
        bits |= uint32_t(code) << nbits, nbits += 3;
        while (nbits >= 8) data.push_back(uint8_t(bits)), bits >>= 8, nbits -= 8;
    };
    for (size_t i = 0; i < index.size(); ++i) {
        if (i % 2 == 0) emit(4);  // clear
        emit(index[i]);
    }
    emit(5);  // end of information
    if (nbits) data.push_back(uint8_t(bits));
    for (size_t i = 0; i < data.size(); i += 255) {
        size_t n = std::min<size_t>(255, data.size() - i);
        out.push_back(uint8_t(n));
        out.insert(out.end(), data.begin() + long(i), data.begin() + long(i + n));
    }
    out.push_back(0);     // block terminator
    out.push_back(0x3B);  // trailer
    return out;
}

// ---------------------------------------------------------------- fixture

class ImageIoFiles : public ::testing::Test {
protected:
    void SetUp() override {
        seed_ = std::random_device{}();
        rng_.seed(seed_);
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() / ("imrestore-test-" + std::to_string(::getpid())) / info->name();
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(dir_, ec);
        fs::remove(dir_.parent_path(), ec);  // only succeeds once empty
    }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    std::string seed_text() const { return "seed " + std::to_string(seed_); }

    unsigned seed_ = 0;
    std::mt19937 rng_;
    fs::path dir_;
};

// ---------------------------------------------------------------- codecs and formats

TEST(ImageIoApi, CodecNames) {
    EXPECT_STREQ(imr::codec_name(Codec::Auto), "auto");
    EXPECT_STREQ(imr::codec_name(Codec::Stb), "stb");
    EXPECT_STREQ(imr::codec_name(Codec::OpenCV), "opencv");
    EXPECT_EQ(imr::parse_codec("auto"), Codec::Auto);
    EXPECT_EQ(imr::parse_codec("STB"), Codec::Stb);
    EXPECT_THROW(imr::parse_codec("libpng"), imr::Error);
    if (imr::opencv_available()) {
        EXPECT_EQ(imr::parse_codec("opencv"), Codec::OpenCV);
    } else {
        EXPECT_THROW(imr::parse_codec("opencv"), imr::Error);
    }
}

TEST(ImageIoApi, ReadableExtensions) {
    const auto exts = imr::readable_extensions();
    for (const char* e : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".psd", ".ppm", ".pgm"})
        EXPECT_NE(std::find(exts.begin(), exts.end(), e), exts.end()) << e;
    EXPECT_TRUE(imr::is_readable_extension("a/b/Photo.JPG"));
    EXPECT_TRUE(imr::is_readable_extension("x.Png"));
    EXPECT_FALSE(imr::is_readable_extension("x.txt"));
    EXPECT_FALSE(imr::is_readable_extension("png"));
    EXPECT_FALSE(imr::is_readable_extension("x.hdr"));
    EXPECT_EQ(imr::is_readable_extension("scan.TIFF"), imr::opencv_available());
    EXPECT_EQ(imr::is_readable_extension("x.webp"), imr::opencv_available());
}

TEST(ImageIoApi, CheckWritableFormat) {
    EXPECT_NO_THROW(imr::check_writable_format("out.PNG", Codec::Auto));
    EXPECT_NO_THROW(imr::check_writable_format("out.jpeg", Codec::Stb));
    EXPECT_NO_THROW(imr::check_writable_format("out.tga", Codec::Auto));
    EXPECT_TRUE(throws_error([] { imr::check_writable_format("out.xyz", Codec::Auto); }, "out.xyz",
                             "unknown output format '.xyz' (known: .png .jpg"));
    EXPECT_TRUE(throws_error([] { imr::check_writable_format("dir/out", Codec::Auto); }, "dir/out", "extension"));
    EXPECT_TRUE(throws_error([] { imr::check_writable_format("a.gif", Codec::Auto); }, "a.gif", "unknown output"));
    if (imr::opencv_available()) {
        EXPECT_NO_THROW(imr::check_writable_format("out.tif", Codec::Auto));
        EXPECT_TRUE(throws_error([] { imr::check_writable_format("out.tif", Codec::Stb); }, "out.tif", "stb"));
        EXPECT_TRUE(throws_error([] { imr::check_writable_format("out.tga", Codec::OpenCV); }, "out.tga", "opencv"));
    } else {
        EXPECT_TRUE(throws_error([] { imr::check_writable_format("out.png", Codec::OpenCV); }, "out.png", "no OpenCV"));
        EXPECT_TRUE(throws_error([] { imr::check_writable_format("out.tif", Codec::Auto); }, "out.tif",
                                 "unknown output format"));
    }
}

// ---------------------------------------------------------------- round trips

TEST_F(ImageIoFiles, PngRoundTripAllChannelsDepthsCodecs) {
    SCOPED_TRACE(seed_text());
    for (int depth : {8, 16})
        for (int channels = 1; channels <= 4; ++channels)
            for (Codec writer : build_codecs())
                for (Codec reader : build_codecs()) {
                    SCOPED_TRACE(std::to_string(depth) + "-bit, " + std::to_string(channels) +
                                 " channels, written by " + imr::codec_name(writer) + ", read by " +
                                 imr::codec_name(reader));
                    Image img = random_image(rng_, 37, 23, channels, depth);
                    const std::string p = path("rt.png");
                    imr::write_image(p, img, {}, writer);
                    Image back = imr::read_image(p, reader);
                    if (channels == 2 && writer == Codec::OpenCV) {
                        // OpenCV has no gray+alpha PNG: stored as RGBA with R=G=B.
                        ASSERT_EQ(back.channels, 4);
                        for (size_t i = 0; i < size_t(37 * 23); ++i) {
                            ASSERT_EQ(back.sample(i * 4), img.sample(i * 2));
                            ASSERT_EQ(back.sample(i * 4 + 2), img.sample(i * 2));
                            ASSERT_EQ(back.sample(i * 4 + 3), img.sample(i * 2 + 1));
                        }
                        continue;
                    }
                    ASSERT_TRUE(same_image(back, img));
                }
}

TEST_F(ImageIoFiles, PngCodecsAgree) {
    if (!imr::opencv_available()) GTEST_SKIP() << "build without OpenCV: only the stb codec";
    SCOPED_TRACE(seed_text());
    for (int depth : {8, 16})
        for (int channels = 1; channels <= 4; ++channels) {
            SCOPED_TRACE(std::to_string(depth) + "-bit, " + std::to_string(channels) + " channels");
            const std::string p = path("agree.png");
            imr::write_image(p, random_image(rng_, 41, 19, channels, depth), {}, Codec::Auto);
            ASSERT_TRUE(same_image(imr::read_image(p, Codec::Stb), imr::read_image(p, Codec::OpenCV)));
        }
}

TEST_F(ImageIoFiles, PngCompressionLevels) {
    SCOPED_TRACE(seed_text());
    Image img = smooth_image(rng_, 64, 33, 3);
    for (Codec codec : build_codecs())
        for (int level : {0, 1, 9}) {
            imr::WriteOptions o;
            o.png_compression = level;
            imr::write_image(path("c.png"), img, o, codec);
            ASSERT_TRUE(same_image(imr::read_image(path("c.png")), img)) << imr::codec_name(codec) << " " << level;
        }
    imr::WriteOptions bad;
    bad.png_compression = 10;
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("c.png"), img, bad); }, path("c.png"), "compression"));
}

TEST_F(ImageIoFiles, JpegRoundTripWithinTolerance) {
    SCOPED_TRACE(seed_text());
    for (int channels : {1, 3})
        for (Codec writer : build_codecs())
            for (Codec reader : build_codecs()) {
                SCOPED_TRACE(std::to_string(channels) + " channels, " + imr::codec_name(writer) + " -> " +
                             imr::codec_name(reader));
                Image img = smooth_image(rng_, 37, 23, channels);
                const std::string p = path("rt.jpg");
                imr::WriteOptions o;
                o.jpeg_quality = 95;
                imr::write_image(p, img, o, writer);
                Image back = imr::read_image(p, reader);
                ASSERT_EQ(back.width, 37);
                ASSERT_EQ(back.height, 23);
#ifdef IMRESTORE_WITH_LIBJPEG
                const bool stb_writes_jpeg = false;  // libjpeg writes gray JPEGs where OpenCV does not take them
#else
                const bool stb_writes_jpeg = true;
#endif
                if (channels == 1 && stb_writes_jpeg &&
                    (writer == Codec::Stb || (writer == Codec::Auto && !imr::opencv_available()))) {
                    // stb writes every JPEG as YCbCr: gray comes back as RGB with R=G=B.
                    ASSERT_EQ(back.channels, 3);
                    Image g = back;
                    g.channels = 1;
                    g.allocate();
                    for (size_t i = 0; i < g.sample_count(); ++i) {
                        ASSERT_LE(std::abs(int(back.sample(3 * i)) - int(back.sample(3 * i + 2))), 1);
                        g.set_sample(i, back.sample(3 * i + 1));
                    }
                    back = g;
                }
                ASSERT_EQ(back.channels, channels);
                EXPECT_LT(mean_abs_diff(back, img), 3.0);
            }
}

TEST_F(ImageIoFiles, BmpAndTgaRoundTrip) {
    SCOPED_TRACE(seed_text());
    for (Codec writer : build_codecs())
        for (Codec reader : build_codecs()) {
            SCOPED_TRACE(std::string(imr::codec_name(writer)) + " -> " + imr::codec_name(reader));
            Image rgb = random_image(rng_, 37, 23, 3, 8);
            imr::write_image(path("rt.bmp"), rgb, {}, writer);
            EXPECT_TRUE(same_image(imr::read_image(path("rt.bmp"), reader), rgb));
            Image rgba = random_image(rng_, 37, 23, 4, 8);
            rgba.set_sample(3, 255);  // not all zero: a BGRX file with alpha 0 everywhere reads as RGB
            imr::write_image(path("rgba.bmp"), rgba, {}, writer);
            if (writer == Codec::OpenCV && reader == Codec::OpenCV) {
                // OpenCV writes 32-bit BI_RGB and ignores that alpha when reading.
                Image rgb_only = imr::read_image(path("rgba.bmp"), reader);
                ASSERT_EQ(rgb_only.channels, 3);
                for (size_t i = 0; i < size_t(37 * 23); ++i)
                    for (int k = 0; k < 3; ++k) ASSERT_EQ(rgb_only.sample(i * 3 + k), rgba.sample(i * 4 + k));
            } else {
                EXPECT_TRUE(same_image(imr::read_image(path("rgba.bmp"), reader), rgba));
            }
            // Gray BMP: stb writes 24-bit, OpenCV a gray palette; gray must survive either way.
            Image gray = random_image(rng_, 37, 23, 1, 8);
            imr::write_image(path("g.bmp"), gray, {}, writer);
            Image back = imr::read_image(path("g.bmp"), reader);
            ASSERT_EQ(back.width, 37);
            ASSERT_EQ(back.height, 23);
            for (size_t i = 0; i < gray.sample_count(); ++i)
                for (int c = 0; c < back.channels; ++c)
                    ASSERT_EQ(back.sample(i * size_t(back.channels) + c), gray.sample(i)) << "pixel " << i;
        }
    for (int channels = 1; channels <= 4; ++channels) {
        SCOPED_TRACE("TGA " + std::to_string(channels) + " channels");
        Image img = random_image(rng_, 37, 23, channels, 8);
        imr::write_image(path("rt.tga"), img);
        EXPECT_TRUE(same_image(imr::read_image(path("rt.tga")), img));
    }
}

TEST_F(ImageIoFiles, PnmRoundTrip) {
    SCOPED_TRACE(seed_text());
    for (int depth : {8, 16})
        for (Codec reader : build_codecs()) {
            SCOPED_TRACE(std::to_string(depth) + "-bit, read by " + std::string(imr::codec_name(reader)));
            Image gray = random_image(rng_, 37, 23, 1, depth), rgb = random_image(rng_, 37, 23, 3, depth);
            imr::write_image(path("g.pgm"), gray);
            imr::write_image(path("c.ppm"), rgb);
            imr::write_image(path("c.pnm"), rgb);
            EXPECT_TRUE(same_image(imr::read_image(path("g.pgm"), reader), gray));
            EXPECT_TRUE(same_image(imr::read_image(path("c.ppm"), reader), rgb));
            EXPECT_TRUE(same_image(imr::read_image(path("c.pnm"), reader), rgb));
        }
    Image rgb = random_image(rng_, 5, 3, 3, 8);
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("c.pgm"), rgb); }, path("c.pgm"), "gray"));
}

TEST_F(ImageIoFiles, PnmVariants) {
    auto text = [](const std::string& t) { return std::vector<uint8_t>(t.begin(), t.end()); };
    // ASCII gray with a comment and maxval 1023: rescaled to 16 bit.
    write_bytes(path("a.pgm"), text("P2\n# comment\n3 1\n1023\n0 1023 512\n"));
    // Bitmaps: 1 = black.
    write_bytes(path("a.pbm"), text("P1\n3 2\n1 0 1\n011\n"));
    std::vector<uint8_t> p4 = text("P4\n10 1\n");
    p4.insert(p4.end(), {0xA5, 0x80});  // 1010010110
    write_bytes(path("b.pbm"), p4);
    for (Codec codec : build_codecs()) {
        SCOPED_TRACE(imr::codec_name(codec));
        Image a = imr::read_image(path("a.pgm"), codec);
        ASSERT_EQ(a.bit_depth, 16);
        ASSERT_EQ(a.sample_count(), 3u);
        if (codec == Codec::Stb) {
            EXPECT_EQ(a.samples_u16(), (std::vector<uint16_t>{0, 65535, (512 * 65535 + 511) / 1023}));
        }
        Image b1 = imr::read_image(path("a.pbm"), codec);
        EXPECT_EQ(b1.samples_u16(), (std::vector<uint16_t>{0, 255, 0, 255, 0, 0}));
        Image b4 = imr::read_image(path("b.pbm"), codec);
        EXPECT_EQ(b4.samples_u16(), (std::vector<uint16_t>{0, 255, 0, 255, 255, 0, 255, 0, 0, 255}));
    }
    std::vector<uint8_t> cut = text("P5\n4 4\n255\n");
    cut.resize(cut.size() + 10, 7);
    write_bytes(path("cut.pgm"), cut);
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("cut.pgm"), Codec::Stb); }, path("cut.pgm"), "truncated"));
}

TEST_F(ImageIoFiles, TiffRoundTrip) {
    if (!imr::opencv_available()) GTEST_SKIP() << "TIFF needs OpenCV; this build is stb only";
    SCOPED_TRACE(seed_text());
    for (int depth : {8, 16})
        for (int channels : {1, 3, 4}) {
            SCOPED_TRACE(std::to_string(depth) + "-bit, " + std::to_string(channels) + " channels");
            Image img = random_image(rng_, 37, 23, channels, depth);
            imr::write_image(path("rt.tif"), img);
            EXPECT_TRUE(same_image(imr::read_image(path("rt.tif")), img));
        }
}

TEST_F(ImageIoFiles, WebpRoundTrip) {
    if (!imr::opencv_available()) GTEST_SKIP() << "WebP needs OpenCV; this build is stb only";
#ifdef IMRESTORE_WITH_OPENCV
    if (!cv::haveImageWriter(".webp")) GTEST_SKIP() << "this OpenCV has no WebP encoder";
#endif
    SCOPED_TRACE(seed_text());
    imr::WriteOptions lossless;
    lossless.webp_quality = 101;
    for (int channels : {3, 4}) {
        Image img = random_image(rng_, 37, 23, channels, 8);
        imr::write_image(path("rt.webp"), img, lossless);
        Image back = imr::read_image(path("rt.webp"));
        if (channels == 4) {
            // libwebp does not keep the color under fully transparent pixels.
            for (size_t i = 0; i < size_t(37 * 23); ++i)
                if (img.sample(i * 4 + 3) == 0)
                    for (int k = 0; k < 3; ++k) back.set_sample(i * 4 + k, img.sample(i * 4 + k));
        }
        EXPECT_TRUE(same_image(back, img)) << channels << " channels, lossless";
    }
    Image smooth = smooth_image(rng_, 37, 23, 3);
    imr::write_image(path("lossy.webp"), smooth);
    Image back = imr::read_image(path("lossy.webp"));
    ASSERT_EQ(back.channels, 3);
    EXPECT_LT(mean_abs_diff(back, smooth), 4.0);
}

TEST_F(ImageIoFiles, GifFirstFrame) {
    SCOPED_TRACE(seed_text());
    const uint8_t palette[4][3] = {{0, 0, 0}, {255, 0, 0}, {12, 200, 34}, {250, 251, 252}};
    const int w = 37, h = 23;
    std::vector<uint8_t> index(size_t(w) * h);
    std::uniform_int_distribution<int> dist(0, 3);
    for (auto& v : index) v = uint8_t(dist(rng_));
    for (int transparent : {-1, 2}) {
        SCOPED_TRACE(transparent < 0 ? "opaque" : "with transparency");
        write_bytes(path("a.gif"), make_gif(w, h, index, palette, transparent));
        for (Codec codec : {Codec::Auto, Codec::Stb}) {
            Image img = imr::read_image(path("a.gif"), codec);
            ASSERT_EQ(img.width, w);
            ASSERT_EQ(img.height, h);
            ASSERT_EQ(img.bit_depth, 8);
            ASSERT_EQ(img.channels, transparent < 0 ? 3 : 4);  // opaque GIFs drop stb's alpha
            const int c = img.channels;
            for (size_t i = 0; i < index.size(); ++i) {
                if (index[i] == transparent) {
                    ASSERT_EQ(img.sample(i * 4 + 3), 0) << "pixel " << i;
                    continue;
                }
                for (int k = 0; k < 3; ++k) ASSERT_EQ(img.sample(i * c + k), palette[index[i]][k]) << "pixel " << i;
                if (c == 4) {
                    ASSERT_EQ(img.sample(i * 4 + 3), 255);
                }
            }
        }
    }
    if (imr::opencv_available()) {
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("a.gif"), Codec::OpenCV); }, path("a.gif"), "GIF"));
    }
}

TEST_F(ImageIoFiles, GrayAlphaAndRgbaAlphaUntouched) {
    SCOPED_TRACE(seed_text());
    for (int depth : {8, 16}) {
        Image ga = random_image(rng_, 37, 23, 2, depth);
        imr::write_image(path("ga.png"), ga);  // Auto: real gray+alpha PNG (color type 4)
        EXPECT_EQ(read_bytes(path("ga.png"))[25], 4);
        for (Codec reader : build_codecs())
            EXPECT_TRUE(same_image(imr::read_image(path("ga.png"), reader), ga)) << imr::codec_name(reader);
        Image rgba = random_image(rng_, 37, 23, 4, depth);
        for (size_t i = 0; i < 37; ++i) rgba.set_sample(i * 4 + 3, 0);  // fully transparent first row
        imr::write_image(path("rgba.png"), rgba);
        for (Codec reader : build_codecs())
            EXPECT_TRUE(same_image(imr::read_image(path("rgba.png"), reader), rgba)) << imr::codec_name(reader);
    }
}

TEST_F(ImageIoFiles, BitDepthConversionOnWrite) {
    SCOPED_TRACE(seed_text());
    Image img16 = random_image(rng_, 37, 23, 3, 16);
    img16.set_sample(0, 0), img16.set_sample(1, 65535), img16.set_sample(2, 128);  // (128*255+32767)/65535 = 0.998 -> 0
    img16.set_sample(3, 129);                                                      // 129*255+32767 = 65662 -> 1
    imr::WriteOptions to8;
    to8.bit_depth = 8;
    imr::write_image(path("d8.png"), img16, to8);
    Image back8 = imr::read_image(path("d8.png"));
    ASSERT_EQ(back8.bit_depth, 8);
    for (size_t i = 0; i < img16.sample_count(); ++i)
        ASSERT_EQ(back8.sample(i), (uint32_t(img16.sample(i)) * 255 + 32767) / 65535) << i;
    EXPECT_EQ(back8.sample(2), 0);
    EXPECT_EQ(back8.sample(3), 1);
    // The same rule lets a 16-bit image go to JPEG.
    EXPECT_NO_THROW(imr::write_image(path("d8.jpg"), img16, to8));

    Image img8 = random_image(rng_, 37, 23, 1, 8);
    imr::WriteOptions to16;
    to16.bit_depth = 16;
    for (Codec codec : build_codecs()) {
        imr::write_image(path("d16.png"), img8, to16, codec);
        Image back16 = imr::read_image(path("d16.png"));
        ASSERT_EQ(back16.bit_depth, 16);
        for (size_t i = 0; i < img8.sample_count(); ++i) ASSERT_EQ(back16.sample(i), img8.sample(i) * 257) << i;
    }
}

TEST_F(ImageIoFiles, WriteRefusesWhatTheFormatCannotHold) {
    SCOPED_TRACE(seed_text());
    Image img16 = random_image(rng_, 7, 5, 3, 16);
    for (const char* name : {"x.jpg", "x.bmp", "x.tga"})
        EXPECT_TRUE(throws_error([&] { imr::write_image(path(name), img16); }, path(name), "16-bit")) << name;
    imr::WriteOptions force16;
    force16.bit_depth = 16;
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.jpg"), random_image(rng_, 7, 5, 3, 8), force16); },
                             path("x.jpg"), "cannot hold 16-bit"));
    Image rgba = random_image(rng_, 7, 5, 4, 8);
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.jpg"), rgba); }, path("x.jpg"), "alpha"));
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.jpeg"), rgba, {}, Codec::Stb); }, path("x.jpeg"), "alpha"));
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.ppm"), rgba); }, path("x.ppm"), "alpha"));
    Image broken = random_image(rng_, 7, 5, 3, 8);
    std::vector<uint16_t> one_short = broken.samples_u16();
    one_short.pop_back();
    broken.assign_samples(one_short);
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.png"), broken); }, path("x.png"), "inconsistent"));
    imr::WriteOptions badq;
    badq.jpeg_quality = 0;
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("x.jpg"), random_image(rng_, 7, 5, 3, 8), badq); },
                             path("x.jpg"), "quality"));
    EXPECT_TRUE(list_dir(dir_).empty());
}

// ---------------------------------------------------------------- EXIF orientation

TEST_F(ImageIoFiles, JpegExifOrientation) {
    SCOPED_TRACE(seed_text());
    Image img = random_image(rng_, 37, 23, 3, 8);
    imr::write_image(path("plain.jpg"), img);
    const std::vector<uint8_t> plain = read_bytes(path("plain.jpg"));
    for (Codec codec : build_codecs()) {
        const Image upright = imr::read_image(path("plain.jpg"), codec);
        for (int o = 1; o <= 8; ++o) {
            SCOPED_TRACE(std::string(imr::codec_name(codec)) + ", orientation " + std::to_string(o));
            const std::string p = path("o" + std::to_string(o) + ".jpg");
            write_bytes(p, with_jpeg_exif(plain, o));
            Image back = imr::read_image(p, codec);
            EXPECT_EQ(back.width, o >= 5 ? 23 : 37);
            EXPECT_EQ(back.height, o >= 5 ? 37 : 23);
            EXPECT_TRUE(same_image(back, oriented(upright, o)));
#ifdef IMRESTORE_WITH_OPENCV
            if (codec != Codec::Stb) {
                // OpenCV's own orientation handling (IMREAD_COLOR applies it) must agree.
                cv::Mat m = cv::imread(p, cv::IMREAD_COLOR);
                ASSERT_EQ(m.cols, back.width);
                ASSERT_EQ(m.rows, back.height);
                for (int y = 0; y < m.rows; ++y)
                    for (int x = 0; x < m.cols; ++x)
                        for (int k = 0; k < 3; ++k)
                            ASSERT_EQ(m.at<cv::Vec3b>(y, x)[2 - k], back.sample((size_t(y) * back.width + x) * 3 + k))
                                << "x=" << x << " y=" << y;
            }
#endif
        }
    }
}

TEST_F(ImageIoFiles, PngExifOrientationKeepsAlphaAnd16Bit) {
    SCOPED_TRACE(seed_text());
    Image img = random_image(rng_, 37, 23, 4, 16);
    imr::write_image(path("plain.png"), img);
    write_bytes(path("rot.png"), with_png_exif(read_bytes(path("plain.png")), 6));
    for (Codec codec : build_codecs()) {
        Image back = imr::read_image(path("rot.png"), codec);
        EXPECT_TRUE(same_image(back, oriented(img, 6))) << imr::codec_name(codec);
    }
}

// ---------------------------------------------------------------- bad input

TEST_F(ImageIoFiles, MissingEmptyDirectoryAndGarbage) {
    SCOPED_TRACE(seed_text());
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("none.png")); }, path("none.png"), "no such file"));
    fs::create_directories(dir_ / "sub.png");
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("sub.png")); }, path("sub.png"), "is a directory"));
    write_bytes(path("empty.jpg"), {});
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("empty.jpg")); }, path("empty.jpg"), "empty file"));
    write_bytes(path("text.jpg"), {'h', 'e', 'l', 'l', 'o', '\n'});
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("text.jpg")); }, path("text.jpg"), "not a JPEG file"));
    write_bytes(path("text.xyz"), {'h', 'e', 'l', 'l', 'o', '\n'});
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("text.xyz")); }, path("text.xyz"), "cannot decode"));
    write_bytes(path("r.hdr"), {'#', '?', 'R', 'A', 'D', 'I', 'A', 'N', 'C', 'E', '\n'});
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("r.hdr")); }, path("r.hdr"), "not supported"));
    if (!imr::opencv_available()) {
        EXPECT_TRUE(
            throws_error([&] { imr::read_image(path("none.png"), Codec::OpenCV); }, path("none.png"), "no OpenCV"));
        write_bytes(path("t.tif"), {'I', 'I', '*', 0, 8, 0, 0, 0});
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("t.tif")); }, path("t.tif"), "TIFF"));
    }
}

TEST_F(ImageIoFiles, TruncatedFilesAreErrors) {
    SCOPED_TRACE(seed_text());
    imr::write_image(path("full.png"), random_image(rng_, 37, 23, 3, 8));
    imr::write_image(path("full.jpg"), smooth_image(rng_, 37, 23, 3));
    for (const char* name : {"full.png", "full.jpg"}) {
        const std::vector<uint8_t> full = read_bytes(path(name));
        for (double frac : {0.1, 0.5, 0.9}) {
            std::vector<uint8_t> part(full.begin(), full.begin() + long(double(full.size()) * frac));
            const std::string p = path(std::string("cut-") + name);
            write_bytes(p, part);
            for (Codec codec : build_codecs())
                EXPECT_TRUE(throws_error([&] { imr::read_image(p, codec); }, p, "truncated"))
                    << name << " cut at " << frac << ", " << imr::codec_name(codec);
        }
    }
}

TEST_F(ImageIoFiles, HugeDimensionsAreRefused) {
    // A well-formed PNG header claiming 2^20 x 2^20 RGB pixels, no pixel data.
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<uint8_t> ihdr;
    put_be32(ihdr, 1u << 20), put_be32(ihdr, 1u << 20);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
    for (auto& chunk :
         {png_chunk("IHDR", ihdr), png_chunk("IDAT", {0x78, 0x9c, 0x03, 0, 0, 0, 0, 1}), png_chunk("IEND", {})})
        png.insert(png.end(), chunk.begin(), chunk.end());
    write_bytes(path("huge.png"), png);
    for (Codec codec : build_codecs())
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("huge.png"), codec); }, path("huge.png"), "too large"))
            << imr::codec_name(codec);
}

// A PSD file: 26-byte header, three empty sections, the composite image
// (planar channels; compression 0 raw or 1 PackBits, here one literal run per
// row, which any width up to 128 bytes allows).
std::vector<uint8_t> make_psd(int w, int h, int channels, int depth, int mode, const std::vector<uint16_t>& planar,
                              bool packbits) {
    std::vector<uint8_t> d = {'8', 'B', 'P', 'S', 0, 1, 0, 0, 0, 0, 0, 0};
    auto be16 = [&](uint32_t v) { d.insert(d.end(), {uint8_t(v >> 8), uint8_t(v)}); };
    auto be32 = [&](uint32_t v) { be16(v >> 16), be16(v & 0xffff); };
    be16(uint32_t(channels)), be32(uint32_t(h)), be32(uint32_t(w)), be16(uint32_t(depth)), be16(uint32_t(mode));
    be32(0), be32(0), be32(0);
    be16(packbits ? 1 : 0);
    const size_t row_bytes = size_t(w) * (depth / 8);
    if (packbits)
        for (int r = 0; r < channels * h; ++r) be16(uint32_t(row_bytes + 1));
    for (int c = 0; c < channels; ++c)
        for (int y = 0; y < h; ++y) {
            if (packbits) d.push_back(uint8_t(row_bytes - 1));
            for (int x = 0; x < w; ++x) {
                const uint16_t v = planar[(size_t(c) * h + y) * w + x];
                if (depth == 16)
                    be16(v);
                else
                    d.push_back(uint8_t(v));
            }
        }
    return d;
}

TEST_F(ImageIoFiles, PsdCompositeImages) {
    SCOPED_TRACE(seed_text());
    std::uniform_int_distribution<int> byte(0, 255), word(0, 65535);
    for (int depth : {8, 16})
        for (bool packbits : {false, true})
            for (int mode : {1, 3}) {
                SCOPED_TRACE("depth " + std::to_string(depth) + (packbits ? " PackBits" : " raw") + " mode " +
                             std::to_string(mode));
                const int w = 13, h = 5, color = mode == 3 ? 3 : 1;
                std::vector<uint16_t> planar(size_t(color) * w * h);
                for (uint16_t& v : planar) v = uint16_t(depth == 8 ? byte(rng_) : word(rng_));
                write_bytes(path("p.psd"), make_psd(w, h, color, depth, mode, planar, packbits));
                const Image img = imr::read_image(path("p.psd"));
                ASSERT_EQ(img.channels, color);
                ASSERT_EQ(img.bit_depth, depth);
                for (int c = 0; c < color; ++c)
                    for (int i = 0; i < w * h; ++i)
                        ASSERT_EQ(img.sample(size_t(i) * color + c), planar[size_t(c) * w * h + i]);
            }
    // RGBA matted against white: c' = a c + (1 - a) 255 is undone (clamped),
    // where stb's loader cast out-of-range floats (undefined behaviour).
    const int w = 4, h = 1;
    const std::vector<uint16_t> planar = {10,  200, 255, 0,   // R: dark over half alpha -> below 0 -> 0
                                          10,  200, 255, 0,   // G
                                          10,  200, 255, 0,   // B
                                          128, 128, 255, 0};  // A
    write_bytes(path("a.psd"), make_psd(w, h, 4, 8, 3, planar, false));
    const Image img = imr::read_image(path("a.psd"));
    ASSERT_EQ(img.channels, 4);
    EXPECT_EQ(img.sample(0), 0) << "10 matted at alpha 128/255 is below black";
    EXPECT_EQ(img.sample(4), uint16_t(std::lround((200 - (1 - 128 / 255.0) * 255) / (128 / 255.0))));
    EXPECT_EQ(img.sample(8), 255);
    EXPECT_EQ(img.sample(3), 128);
    // What it does not read is refused by name.
    write_bytes(path("cmyk.psd"), make_psd(2, 2, 4, 8, 4, std::vector<uint16_t>(16, 1), false));
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("cmyk.psd")); }, path("cmyk.psd"), "color mode 4"));
    std::vector<uint8_t> cut = make_psd(w, h, 4, 8, 3, planar, true);
    cut.resize(cut.size() - 3);
    write_bytes(path("cut.psd"), cut);
    EXPECT_TRUE(throws_error([&] { imr::read_image(path("cut.psd")); }, path("cut.psd"), "cut.psd"));
}

// Image bombs: small files whose headers declare huge images are refused
// before any decoder allocates, on every path (stb, OpenCV, built-in).
TEST_F(ImageIoFiles, ImageBombsAreRefusedBeforeDecoding) {
    auto le16 = [](std::vector<uint8_t>& v, uint32_t x) { v.insert(v.end(), {uint8_t(x), uint8_t(x >> 8)}); };
    auto le32 = [&](std::vector<uint8_t>& v, uint32_t x) { le16(v, x & 0xffff), le16(v, x >> 16); };
    // A 1,776-byte RLE8 BMP declaring 30000 x 30000 (stb cannot parse RLE
    // headers, so the size check used to be skipped and OpenCV decoded it:
    // 71 s, 23 GB).
    auto rle_bmp = [&](uint32_t side) {
        std::vector<uint8_t> bmp = {'B', 'M'};
        le32(bmp, 1776), le32(bmp, 0), le32(bmp, 54 + 1024);
        le32(bmp, 40), le32(bmp, side), le32(bmp, side), le16(bmp, 1), le16(bmp, 8), le32(bmp, 1 /* RLE8 */);
        le32(bmp, 0), le32(bmp, 2835), le32(bmp, 2835), le32(bmp, 256), le32(bmp, 0);
        bmp.resize(1776, 0);
        return bmp;
    };
    write_bytes(path("rle.bmp"), rle_bmp(30000));
    // 8000 x 8000 is within the limits, but RLE needs at least 2 bytes per 255
    // pixels: 1,776 bytes cannot hold it.
    write_bytes(path("rle8k.bmp"), rle_bmp(8000));
    // A 70-byte PNM whose width x height wraps a 64-bit product to 38 samples.
    std::string pnm = "P5\n2127102 8672242362477\n255\n";
    pnm += std::string(38, 'x');
    write_bytes(path("wrap.pgm"), std::vector<uint8_t>(pnm.begin(), pnm.end()));
    // A JPEG header declaring 28781 x 11888 (342 MP): over the default cap of
    // 2^28 pixels on any machine.
    std::vector<uint8_t> jpg = {0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8, 0x2E, 070, 0x70, 0x6D, 3};
    for (int c = 1; c <= 3; ++c) jpg.insert(jpg.end(), {uint8_t(c), 0x11, 0});
    jpg.insert(jpg.end(), {0xFF, 0xDA, 0, 12, 3, 1, 0, 2, 0, 3, 0, 0, 63, 0, 0x12, 0x34, 0xFF, 0xD9});
    jpg[7] = uint8_t(11888 >> 8), jpg[8] = uint8_t(11888 & 255), jpg[9] = uint8_t(28781 >> 8),
    jpg[10] = uint8_t(28781 & 255);
    write_bytes(path("bomb.jpg"), jpg);
    for (Codec codec : build_codecs()) {
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("rle.bmp"), codec); }, path("rle.bmp"), "too large"))
            << imr::codec_name(codec);
        EXPECT_TRUE(
            throws_error([&] { imr::read_image(path("rle8k.bmp"), codec); }, path("rle8k.bmp"), "corrupt BMP file"))
            << imr::codec_name(codec);
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("wrap.pgm"), codec); }, path("wrap.pgm"), "too large"))
            << imr::codec_name(codec);
        EXPECT_TRUE(throws_error([&] { imr::read_image(path("bomb.jpg"), codec); }, path("bomb.jpg"),
                                 "28781x11888 (342 MP) is over the limit"))
            << imr::codec_name(codec);
        // Refused from the header: milliseconds. The bound is loose enough for
        // a loaded machine under ASan; the decode it guards against took 71 s.
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
    }
    // A TIFF and a WebP whose headers are fine: the pixel limit applies to
    // them as well (OpenCV decodes them, so only our own parse sees the size).
    if (imr::opencv_available()) {
        const Image img = smooth_image(rng_, 40, 30, 3);
        for (const char* name : {"ok.tif", "ok.webp", "ok.png", "ok.jpg", "ok.bmp", "ok.tga", "ok.ppm"}) {
            imr::write_image(path(name), img);
            EXPECT_NO_THROW(imr::read_image(path(name), Codec::Auto, 1200)) << name << ": 40x30 = 1200 pixels";
            EXPECT_TRUE(throws_error([&] { imr::read_image(path(name), Codec::Auto, 1199); }, path(name),
                                     "40x30 (0 MP) is over the limit of 1199 pixels"))
                << name;
        }
    }
}

// JPEG Huffman tables that are not a valid code (stb_image 2.27 writes past
// its tables on them) are refused before any decoder runs.
TEST_F(ImageIoFiles, InvalidJpegHuffmanTablesAreRefused) {
    SCOPED_TRACE(seed_text());
    imr::write_image(path("ok.jpg"), smooth_image(rng_, 37, 23, 3));
    const std::vector<uint8_t> good = read_bytes(path("ok.jpg"));
    size_t dht = 0;
    for (size_t i = 2; i + 4 < good.size(); i += 2 + (size_t(good[i + 2]) << 8 | good[i + 3]))
        if (good[i] == 0xFF && good[i + 1] == 0xC4) {
            dht = i;
            break;
        }
    ASSERT_NE(dht, 0u) << "no DHT segment in our own JPEG";
    for (int variant = 0; variant < 2; ++variant) {
        std::vector<uint8_t> bad = good;
        // variant 0: 3 codes of length 1 (only 2 fit); variant 1: 255 codes of
        // length 16 on top of the table's own (more than 256 symbols).
        if (variant == 0) bad[dht + 5] = 3;
        if (variant == 1) bad[dht + 5 + 15] = 255;
        write_bytes(path("bad.jpg"), bad);
        for (Codec codec : build_codecs())
            EXPECT_TRUE(throws_error([&] { imr::read_image(path("bad.jpg"), codec); }, path("bad.jpg"),
                                     "corrupt JPEG Huffman table"))
                << "variant " << variant << ", " << imr::codec_name(codec);
    }
}

// Every input a fuzzer found a fault with (tests/data/fuzz/*.bin, in
// fuzz/image_decode_input.h's layout) is decoded as fuzz_image_decode does,
// with every codec of the build: an image or an imr::Error, and under the
// CI's sanitizers nothing else.
TEST(ImageIoFuzzCrashers, DecodeWithoutFault) {
    int files = 0;
    for (const auto& e : fs::directory_iterator(IMRESTORE_FUZZ_CRASHERS)) {
        if (e.path().filename().string().rfind("image_decode-", 0) != 0) continue;
        ++files;
        const std::vector<uint8_t> all = read_bytes(e.path().string());
        ASSERT_GE(all.size(), 2u);
        const std::vector<uint8_t> bytes(all.begin() + 1, all.end());
        for (Codec codec : build_codecs()) {
            SCOPED_TRACE(e.path().filename().string() + ", " + imr::codec_name(codec));
            try {
                (void)imr::decode_image(imr::fuzz::image_name(all[0]), bytes, codec, imr::fuzz::kImageMaxPixels);
            } catch (const imr::Error&) {
            }
        }
    }
    EXPECT_GT(files, 0) << "no crasher files in " << IMRESTORE_FUZZ_CRASHERS;
}

// Cut and flipped bytes of valid files of every format: an imr::Error naming
// the file or an image, never a crash or another exception.
TEST_F(ImageIoFiles, CorruptFilesNeverCrash) {
    SCOPED_TRACE(seed_text());
    std::vector<std::string> names = {"v.png", "v.jpg", "v.bmp", "v.tga", "v.ppm"};
    if (imr::opencv_available()) names.insert(names.end(), {"v.tif", "v.webp"});
    Image img = smooth_image(rng_, 37, 23, 3);
    for (const auto& name : names) imr::write_image(path(name), img);
    const uint8_t palette[4][3] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    write_bytes(path("v.gif"), make_gif(9, 7, std::vector<uint8_t>(63, 1), palette, -1));
    names.push_back("v.gif");
    std::uniform_real_distribution<double> where(0.0, 1.0);
    std::uniform_int_distribution<int> byte(0, 255);
    for (const auto& name : names) {
        const std::vector<uint8_t> good = read_bytes(path(name));
        for (int trial = 0; trial < 12; ++trial) {
            std::vector<uint8_t> bad = good;
            if (trial % 2 == 0) {
                bad.resize(size_t(where(rng_) * double(good.size())) + 1);
            } else {
                for (int k = 0; k < 8; ++k) bad[size_t(where(rng_) * double(bad.size() - 1))] = uint8_t(byte(rng_));
            }
            const std::string p = path("bad-" + name);
            write_bytes(p, bad);
            for (Codec codec : build_codecs()) {
                try {
                    Image out = imr::read_image(p, codec);
                    EXPECT_EQ(out.sample_count(), size_t(out.width) * out.height * out.channels);
                } catch (const imr::Error& e) {
                    EXPECT_EQ(std::string(e.what()).rfind(p, 0), 0u) << e.what();
                } catch (const std::exception& e) {
                    ADD_FAILURE() << name << " trial " << trial << ": not an imr::Error: " << e.what();
                }
            }
        }
    }
}

// ---------------------------------------------------------------- atomic writes

TEST_F(ImageIoFiles, UnknownExtensionCreatesNothing) {
    SCOPED_TRACE(seed_text());
    Image img = random_image(rng_, 7, 5, 3, 8);
    EXPECT_TRUE(
        throws_error([&] { imr::write_image(path("out.xyz"), img); }, path("out.xyz"), "unknown output format '.xyz'"));
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("out"), img); }, path("out"), "extension"));
    EXPECT_TRUE(list_dir(dir_).empty());
}

TEST_F(ImageIoFiles, FailedWritesLeaveNothing) {
    SCOPED_TRACE(seed_text());
    Image img = random_image(rng_, 7, 5, 3, 8);
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("missing/out.png"), img); }, path("missing/out.png"),
                             "does not exist"));
    write_bytes(path("file"), {1});
    EXPECT_TRUE(
        throws_error([&] { imr::write_image(path("file/out.png"), img); }, path("file/out.png"), "not a directory"));
    // The target is a directory: the temporary file is written, the rename
    // fails, the temporary file must be gone.
    fs::create_directories(dir_ / "taken.png");
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("taken.png"), img); }, path("taken.png"), "is a directory"));
    EXPECT_EQ(list_dir(dir_), (std::vector<std::string>{"file", "taken.png"}));
}

TEST_F(ImageIoFiles, ReadOnlyDirectory) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root: directory permissions do not stop writes";
    SCOPED_TRACE(seed_text());
    fs::create_directories(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    Image img = random_image(rng_, 7, 5, 3, 8);
    EXPECT_TRUE(throws_error([&] { imr::write_image(path("ro/out.png"), img); }, path("ro/out.png"), "denied"));
    fs::permissions(dir_ / "ro", fs::perms::owner_all);
    EXPECT_TRUE(list_dir(dir_ / "ro").empty());
}

TEST_F(ImageIoFiles, OverwriteReplacesAndLeavesNoTemporaries) {
    SCOPED_TRACE(seed_text());
    Image a = random_image(rng_, 37, 23, 3, 8), b = random_image(rng_, 23, 37, 1, 16);
    imr::write_image(path("o.png"), a);
    imr::write_image(path("o.png"), b);
    EXPECT_TRUE(same_image(imr::read_image(path("o.png")), b));
    EXPECT_EQ(list_dir(dir_), (std::vector<std::string>{"o.png"}));
}

// ---------------------------------------------------------------- image <-> planes

TEST(ImageBatch, ItemsPerImage) {
    auto img = [](int channels) {
        Image i;
        i.width = 3, i.height = 2, i.channels = channels;
        i.allocate();
        return i;
    };
    EXPECT_EQ(imr::items_per_image(img(3), 3), 1);
    EXPECT_EQ(imr::items_per_image(img(4), 3), 1);
    EXPECT_EQ(imr::items_per_image(img(1), 3), 1);
    EXPECT_EQ(imr::items_per_image(img(2), 3), 1);
    EXPECT_EQ(imr::items_per_image(img(1), 1), 1);
    EXPECT_EQ(imr::items_per_image(img(2), 1), 1);
    EXPECT_EQ(imr::items_per_image(img(3), 1), 3);
    EXPECT_EQ(imr::items_per_image(img(4), 1), 3);
    EXPECT_THROW(imr::items_per_image(img(3), 2), imr::Error);
    EXPECT_THROW(imr::items_per_image(img(1), 4), imr::Error);
    EXPECT_THROW(imr::items_per_image(img(3), 0), imr::Error);
}

TEST(ImageBatch, RoundTripIsExact) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int depth : {8, 16})
        for (int channels = 1; channels <= 4; ++channels)
            for (int model : {1, 3}) {
                SCOPED_TRACE(std::to_string(depth) + "-bit, " + std::to_string(channels) + " channels, model " +
                             std::to_string(model));
                Image img = random_image(rng, 37, 23, channels, depth);
                const int items = imr::items_per_image(img, model);
                std::vector<float> planes(size_t(items) * model * 37 * 23);
                imr::image_to_planes(img, model, planes.data());
                for (float v : planes) ASSERT_TRUE(v >= 0.f && v <= 1.f);
                EXPECT_TRUE(same_image(imr::planes_to_image(planes.data(), model, img), img));
            }
}

TEST(ImageBatch, LayoutAndValues) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const int w = 37, h = 23;
    const size_t n = size_t(w) * h;
    // RGBA, 3-channel model: planes R, G, B; alpha never appears.
    Image rgba = random_image(rng, w, h, 4, 16);
    std::vector<float> p3(3 * n);
    imr::image_to_planes(rgba, 3, p3.data());
    for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c)
            ASSERT_NEAR(p3[c * n + i], rgba.sample(i * 4 + c) / 65535.0, 1e-7) << "pixel " << i << " channel " << c;
    // RGB, 1-channel model: three items, one per channel.
    Image rgb = random_image(rng, w, h, 3, 8);
    std::vector<float> p1(3 * n);
    imr::image_to_planes(rgb, 1, p1.data());
    for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) ASSERT_NEAR(p1[c * n + i], rgb.sample(i * 3 + c) / 255.0, 1e-7);
    // Gray, 3-channel model: replicated; back as the mean of R, G, B.
    Image gray = random_image(rng, w, h, 1, 8);
    std::vector<float> g3(3 * n);
    imr::image_to_planes(gray, 3, g3.data());
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(g3[i], g3[n + i]);
        ASSERT_EQ(g3[i], g3[2 * n + i]);
        ASSERT_NEAR(g3[i], gray.sample(i) / 255.0, 1e-7);
    }
    for (size_t i = 0; i < n; ++i) g3[i] = 0.1f, g3[n + i] = 0.2f, g3[2 * n + i] = 0.36f;
    Image back = imr::planes_to_image(g3.data(), 3, gray);
    ASSERT_EQ(back.channels, 1);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back.sample(i), 56);  // 0.22 * 255 = 56.1
    // Each channel is clamped before the mean: (1 + 0 + 0.5) / 3, not (1.6 - 0.4 + 0.5) / 3.
    for (size_t i = 0; i < n; ++i) g3[i] = 1.6f, g3[n + i] = -0.4f, g3[2 * n + i] = 0.5f;
    back = imr::planes_to_image(g3.data(), 3, gray);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back.sample(i), 128);  // 0.5 * 255 = 127.5 -> 128
}

TEST(ImageBatch, RoundingClampingNaN) {
    Image src;
    src.width = 11, src.height = 1, src.channels = 1, src.bit_depth = 8;
    src.assign_samples(std::vector<uint16_t>(11, 7));
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const float in[11] = {100.49f / 255,      100.51f / 255,       -0.2f, 1.7f, nan, inf, -inf, 0.f, 1.f,
                          0.5f / 255 - 1e-6f, 254.5f / 255 + 1e-6f};
    const uint16_t want8[11] = {100, 101, 0, 255, 0, 255, 0, 0, 255, 0, 255};
    Image out = imr::planes_to_image(in, 1, src);
    for (int i = 0; i < 11; ++i) EXPECT_EQ(out.sample(size_t(i)), want8[i]) << "input " << in[i];
    Image out16 = imr::planes_to_image(in, 1, src, 16);
    ASSERT_EQ(out16.bit_depth, 16);
    const uint16_t want16[11] = {25826, 25831, 0, 65535, 0, 65535, 0, 0, 65535, 128, 65407};
    for (int i = 0; i < 11; ++i) EXPECT_EQ(out16.sample(size_t(i)), want16[i]) << "input " << in[i];
}

TEST(ImageBatch, AlphaCopiedUntouched) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int channels : {2, 4}) {
        Image img = random_image(rng, 37, 23, channels, 8);
        for (int model : {1, 3}) {
            const size_t count = size_t(imr::items_per_image(img, model)) * model * 37 * 23;
            std::vector<float> planes(count, 0.25f);  // whatever the model produced
            Image out = imr::planes_to_image(planes.data(), model, img);
            Image out16 = imr::planes_to_image(planes.data(), model, img, 16);
            for (size_t i = 0; i < size_t(37 * 23); ++i) {
                const size_t a = i * size_t(channels) + size_t(channels) - 1;
                ASSERT_EQ(out.sample(a), img.sample(a));
                ASSERT_EQ(out16.sample(a), img.sample(a) * 257);
                ASSERT_EQ(out.sample(i * size_t(channels)), 64);  // 0.25 * 255 + 0.5 = 64.25
            }
        }
    }
}

TEST(ImageBatch, InconsistentImageIsAnError) {
    Image img;
    img.width = 4, img.height = 4, img.channels = 3;
    img.assign_samples(std::vector<uint16_t>(10));
    std::vector<float> planes(48);
    EXPECT_THROW(imr::image_to_planes(img, 3, planes.data()), imr::Error);
    EXPECT_THROW(imr::planes_to_image(planes.data(), 3, img), imr::Error);
}

}  // namespace
