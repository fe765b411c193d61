// ICC profiles and EXIF (app/image/metadata*.cpp, tiff_directory.cpp): found
// in files, carried through every format and codec this build writes, kept
// right after the orientation is applied, dropped with a warning when
// malformed, never written where they do not belong. Metadata is built and
// read back by hand (metadata_test_files.h), not with the code under test.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "image/image_io.h"
#include "image/metadata.h"
#include "metadata_test_files.h"
#include "test_util.h"

namespace imr {
namespace {

using test::app1_exif;
using test::app2_icc;
using test::build_codecs;
using test::Bytes;
using test::exif_block;
using test::exif_next_directory;
using test::exif_tag;
using test::ExifSpec;
using test::icc_profile;
using test::iccp;
using test::jpeg_markers;
using test::png_chunk;
using test::png_chunk_types;
using test::read_bytes;
using test::same_image;
using test::ScratchDir;
using test::webp_chunk_types;
using test::with_chunks;
using test::with_segments;
using test::write_bytes;
using test::zlib;

// The formats that hold metadata and this build writes, by extension.
std::vector<std::string> metadata_formats() {
    std::vector<std::string> out = {".jpg", ".png"};
    if (opencv_available()) out.insert(out.end(), {".webp", ".tif"});
    return out;
}

bool writes(const std::string& ext, Codec codec) {
    try {
        check_writable_format("x" + ext, codec);
        return true;
    } catch (const Error&) {
        return false;
    }
}

Image photo(int w, int h, int channels, uint32_t seed) {
    std::mt19937 rng(seed);
    return test::smooth_image(rng, w, h, channels);
}

ImageMetadata sample_metadata(const char* space = "RGB ", bool little_endian = false) {
    ExifSpec spec;
    spec.little_endian = little_endian;
    spec.orientation = 1;
    return {icc_profile(space, 3000), exif_block(spec)};
}

// The EXIF of a TIFF is rebuilt from its tags: compare what it says.
void expect_same_exif_tags(const Bytes& got, const Bytes& want) {
    for (uint32_t tag : {0x010Fu}) EXPECT_EQ(exif_tag(got, tag), exif_tag(want, tag)) << "IFD0 tag " << tag;
    EXPECT_EQ(exif_tag(got, 0x829A, 0x8769), exif_tag(want, 0x829A, 0x8769)) << "ExposureTime";
    EXPECT_EQ(exif_tag(got, 0x829A, 0x8769), "1/250");
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
}

// ---------------------------------------------------------------- carried

TEST(Metadata, EveryFormatAndCodecCarriesIt) {
    ScratchDir dir("metadata");
    const uint32_t seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (const std::string& ext : metadata_formats())
        for (int channels : {1, 3, 4})
            for (bool little_endian : {false, true}) {
                if (ext == ".jpg" && channels == 4) continue;  // JPEG has no alpha
                Image img = photo(41, 29, channels, seed);
                img.metadata = sample_metadata(channels == 1 && ext != ".webp" ? "GRAY" : "RGB ", little_endian);
                for (Codec write_codec : build_codecs()) {
                    if (!writes(ext, write_codec)) continue;
                    const std::string path = dir / ("m" + ext);
                    std::vector<std::string> warnings;
                    write_image(path, img, {}, write_codec, &warnings);
                    EXPECT_EQ(joined(warnings), "");
                    for (Codec read_codec : build_codecs()) {
                        SCOPED_TRACE(ext + " " + std::to_string(channels) + " channels, written by " +
                                     codec_name(write_codec) + ", read by " + codec_name(read_codec) +
                                     (little_endian ? ", little-endian EXIF" : ", big-endian EXIF"));
                        Image back;
                        try {
                            back = read_image(path, read_codec, 0, &warnings);
                        } catch (const Error&) {
                            continue;  // this codec does not read the format
                        }
                        EXPECT_EQ(joined(warnings), "");
                        EXPECT_EQ(back.metadata.icc, img.metadata.icc);
                        if (ext == ".tif")
                            expect_same_exif_tags(back.metadata.exif, img.metadata.exif);
                        else
                            EXPECT_EQ(back.metadata.exif, img.metadata.exif);
                    }
                }
            }
}

TEST(Metadata, SixteenBitPngAndTiffCarryIt) {
    ScratchDir dir("metadata");
    std::mt19937 rng(7);
    Image img = test::random_image(rng, 23, 17, 4, 16);
    img.metadata = sample_metadata();
    for (const std::string& ext : {std::string(".png"), std::string(".tif")}) {
        if (!writes(ext, Codec::Auto)) continue;
        write_image(dir / ("16" + ext), img);
        const Image back = read_image(dir / ("16" + ext));
        EXPECT_EQ(back.bit_depth, 16) << ext;
        EXPECT_EQ(back.metadata.icc, img.metadata.icc) << ext;
        EXPECT_EQ(exif_tag(back.metadata.exif, 0x010F), "TestMake") << ext;
    }
}

TEST(Metadata, CrossFormatChainKeepsIt) {
    ScratchDir dir("metadata");
    Image img = photo(48, 32, 3, 1);
    img.metadata = sample_metadata();
    std::vector<std::string> chain = {".jpg", ".png", ".jpg"};
    if (opencv_available()) chain = {".jpg", ".png", ".webp", ".jpg", ".tif", ".png", ".tif", ".webp", ".jpg"};
    std::string previous;
    for (size_t i = 0; i < chain.size(); ++i) {
        const std::string path = dir / ("step" + std::to_string(i) + chain[i]);
        SCOPED_TRACE((previous.empty() ? std::string("written") : previous + " ->") + " " + path);
        std::vector<std::string> warnings;
        const Image in = previous.empty() ? img : read_image(previous, Codec::Auto, 0, &warnings);
        write_image(path, in, {}, Codec::Auto, &warnings);
        EXPECT_EQ(joined(warnings), "");
        const Image back = read_image(path);
        EXPECT_EQ(back.metadata.icc, img.metadata.icc);
        expect_same_exif_tags(back.metadata.exif, img.metadata.exif);
        EXPECT_EQ(back.width, 48);
        previous = path;
    }
}

// ---------------------------------------------------------------- JPEG ICC chunks

TEST(Metadata, LargeIccProfileSpansJpegChunksInAnyOrder) {
    ScratchDir dir("metadata");
    Image img = photo(40, 30, 3, 2);
    img.metadata.icc = icc_profile("RGB ", 200000);  // 4 chunks: 3 x 65519 + 3443
    for (Codec codec : build_codecs()) {
        if (!writes(".jpg", codec)) continue;
        write_image(dir / "big.jpg", img, {}, codec);
        const Bytes file = read_bytes(dir / "big.jpg");
        EXPECT_EQ(jpeg_markers(file).substr(0, 17), "E0 E2 E2 E2 E2 DB") << codec_name(codec);
        EXPECT_EQ(read_image(dir / "big.jpg").metadata.icc, img.metadata.icc) << codec_name(codec);
    }
    // Chunks out of order, and of another size than the writer's, still make the profile.
    img.metadata = {};
    write_image(dir / "plain.jpg", img);
    std::vector<Bytes> chunks = app2_icc(icc_profile("RGB ", 200000), 60000);
    ASSERT_EQ(chunks.size(), 4u);
    write_bytes(dir / "shuffled.jpg",
                with_segments(read_bytes(dir / "plain.jpg"), {chunks[2], chunks[0], chunks[3], chunks[1]}));
    std::vector<std::string> warnings;
    EXPECT_EQ(read_image(dir / "shuffled.jpg", Codec::Auto, 0, &warnings).metadata.icc, icc_profile("RGB ", 200000));
    EXPECT_EQ(joined(warnings), "");
}

TEST(Metadata, InconsistentJpegIccChunksAreDroppedNotAnError) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.jpg", photo(40, 30, 3, 3));
    const Bytes plain = read_bytes(dir / "plain.jpg");
    const Image pixels = read_image(dir / "plain.jpg");
    const Bytes icc = icc_profile("RGB ", 5000);
    const std::vector<Bytes> c = app2_icc(icc, 2000);  // 3 chunks
    const Bytes exif = app1_exif(exif_block({}));
    Bytes short_chunk = test::jpeg_segment(0xE2, {'I', 'C', 'C', '_', 'P', 'R', 'O', 'F', 'I', 'L', 'E', 0, 1});
    Bytes renumbered = c[2];
    renumbered[4 + 12] = 0;  // sequence number 0
    Bytes recounted = c[2];
    recounted[4 + 13] = 4;                                       // count 4 where the others say 3
    const Bytes truncated_icc(icc.begin(), icc.begin() + 3000);  // its header still says 5000 bytes
    Bytes no_acsp = icc;
    no_acsp[36] = 'x';
    const struct {
        const char* name;
        std::vector<Bytes> segments;
        const char* why;
    } cases[] = {
        {"a chunk missing", {exif, c[0], c[2]}, "2 of its 3 APP2 chunks"},
        {"a chunk twice", {exif, c[0], c[1], c[1], c[2]}, "appears twice"},
        {"chunk number 0", {exif, c[0], c[1], renumbered}, "number 0 of 3"},
        {"counts disagree", {exif, c[0], c[1], recounted}, "disagree on their count"},
        {"a chunk header cut short", {exif, c[0], c[1], c[2], short_chunk}, "too short for its chunk header"},
        {"a truncated profile", {exif, app2_icc(truncated_icc)[0]}, "declares 5000 bytes and 3000 are there"},
        {"no 'acsp'", {exif, app2_icc(no_acsp)[0]}, "no 'acsp' signature"},
    };
    for (const auto& t : cases) {
        SCOPED_TRACE(t.name);
        const std::string path = dir / "bad.jpg";
        write_bytes(path, with_segments(plain, t.segments));
        std::vector<std::string> warnings;
        for (Codec codec : build_codecs()) {
            warnings.clear();
            const Image back = read_image(path, codec, 0, &warnings);
            EXPECT_TRUE(same_image(back, pixels)) << codec_name(codec);
            EXPECT_TRUE(back.metadata.icc.empty());
            EXPECT_EQ(exif_tag(back.metadata.exif, 0x010F), "TestMake") << "the EXIF survives";
            ASSERT_EQ(warnings.size(), 1u) << joined(warnings);
            EXPECT_EQ(warnings[0].rfind(path + ": ICC profile dropped: ", 0), 0u) << warnings[0];
            EXPECT_NE(warnings[0].find(t.why), std::string::npos) << warnings[0];
        }
    }
}

// ---------------------------------------------------------------- EXIF orientation

TEST(Metadata, ExifOrientationIsAppliedThenReset) {
    ScratchDir dir("metadata");
    const Image img = photo(37, 23, 3, 4);
    write_image(dir / "plain.png", img);
    write_image(dir / "plain.jpg", img);
    const Image jpeg_upright = read_image(dir / "plain.jpg");
    for (bool little_endian : {false, true})
        for (int o = 1; o <= 8; ++o)
            for (const std::string ext : {".png", ".jpg"}) {
                SCOPED_TRACE(ext + ", orientation " + std::to_string(o) + (little_endian ? ", II" : ", MM"));
                ExifSpec spec;
                spec.little_endian = little_endian, spec.orientation = o, spec.pixel_x = 37, spec.pixel_y = 23;
                spec.pixel_x_short = o == 6;  // SHORT and LONG dimensions
                const Bytes exif = exif_block(spec);
                const std::string path = dir / ("o" + ext);
                const Bytes plain = read_bytes(dir / ("plain" + ext));
                write_bytes(path, ext == ".png" ? with_chunks(plain, {png_chunk("eXIf", exif)})
                                                : with_segments(plain, {app1_exif(exif)}));
                const Image back = read_image(path);
                EXPECT_TRUE(same_image(back, test::oriented(ext == ".png" ? img : jpeg_upright, o)));
                const Bytes& e = back.metadata.exif;
                ASSERT_EQ(e.size(), exif.size());
                EXPECT_EQ(exif_tag(e, 0x0112), "1");
                EXPECT_EQ(exif_tag(e, 0x010F), "TestMake");
                EXPECT_EQ(exif_tag(e, 0xA002, 0x8769), o >= 5 ? "23" : "37");
                EXPECT_EQ(exif_tag(e, 0xA003, 0x8769), o >= 5 ? "37" : "23");
                // The thumbnail would show the photo the old way up.
                EXPECT_EQ(exif_next_directory(e) == 0, o != 1);

                // Written and read again: upright, not turned a second time.
                write_image(dir / ("again" + ext), back);
                const Image again = read_image(dir / ("again" + ext));
                EXPECT_EQ(again.width, back.width);
                EXPECT_EQ(exif_tag(again.metadata.exif, 0x0112), "1");
            }
}

TEST(Metadata, PixelDimensionsThatCannotSwapStayAsTheyWere) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.jpg", photo(20, 10, 3, 5));
    ExifSpec spec;
    spec.orientation = 8, spec.pixel_x = 70000, spec.pixel_y = 10;  // a LONG that PixelYDimension's SHORT cannot take
    write_bytes(dir / "o.jpg", with_segments(read_bytes(dir / "plain.jpg"), {app1_exif(exif_block(spec))}));
    const Image back = read_image(dir / "o.jpg");
    EXPECT_EQ(back.width, 10);
    EXPECT_EQ(exif_tag(back.metadata.exif, 0x0112), "1");
    EXPECT_EQ(exif_tag(back.metadata.exif, 0xA002, 0x8769), "70000");
    EXPECT_EQ(exif_tag(back.metadata.exif, 0xA003, 0x8769), "10");
}

// ---------------------------------------------------------------- what is not written

TEST(Metadata, IccProfileMustMatchTheImageColors) {
    ScratchDir dir("metadata");
    Image gray = photo(30, 20, 1, 6);
    Image rgb = photo(30, 20, 3, 6);
    struct Case {
        Image* image;
        const char* space;
        std::string ext;
        bool kept;
    };
    std::vector<Case> cases = {{&gray, "RGB ", ".png", false}, {&gray, "GRAY", ".png", true},
                               {&gray, "RGB ", ".jpg", false}, {&gray, "GRAY", ".jpg", true},
                               {&rgb, "GRAY", ".png", false},  {&rgb, "CMYK", ".jpg", false}};
    if (opencv_available())  // WebP has no gray: the image is written as RGB
        cases.push_back({&gray, "GRAY", ".webp", false});
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.space) + " profile, " + std::to_string(c.image->channels) + " channel(s), " + c.ext);
        c.image->metadata.icc = icc_profile(c.space, 500);
        std::vector<std::string> warnings;
        const std::string path = dir / ("p" + c.ext);
        write_image(path, *c.image, {}, Codec::Auto, &warnings);
        EXPECT_EQ(read_image(path).metadata.icc.empty(), !c.kept);
        if (c.kept) {
            EXPECT_EQ(joined(warnings), "");
        } else {
            ASSERT_EQ(warnings.size(), 1u);
            EXPECT_EQ(warnings[0].rfind(path + ": ICC profile not written: it is for '" + c.space + "'", 0), 0u)
                << warnings[0];
        }
    }
}

TEST(Metadata, StripWritesTheSameBytesAsAnImageWithout) {
    Image with = photo(30, 20, 3, 7), without = with;
    with.metadata = sample_metadata();
    WriteOptions strip;
    strip.metadata = false;
    for (const std::string& ext : metadata_formats()) {
        std::vector<std::string> warnings;
        EXPECT_EQ(encode_image("x" + ext, with, strip, Codec::Auto, &warnings), encode_image("x" + ext, without))
            << ext;
        EXPECT_EQ(joined(warnings), "");
        EXPECT_NE(encode_image("x" + ext, with), encode_image("x" + ext, without)) << ext;
    }
}

TEST(Metadata, FormatsWithoutMetadataDropItSilently) {
    Image with = photo(30, 20, 3, 8), without = with;
    with.metadata = sample_metadata();
    for (const char* ext : {".bmp", ".tga", ".ppm"}) {
        std::vector<std::string> warnings;
        EXPECT_EQ(encode_image(std::string("x") + ext, with, {}, Codec::Auto, &warnings),
                  encode_image(std::string("x") + ext, without))
            << ext;
        EXPECT_EQ(joined(warnings), "") << ext;
    }
}

TEST(Metadata, ExifOverTheJpegSegmentLimitIsLeftOutWithAWarning) {
    Image img = photo(30, 20, 3, 9);
    img.metadata.exif = exif_block({});
    img.metadata.exif.resize(70000, 0);  // maker notes can be this large; PNG and WebP hold it
    img.metadata.icc = icc_profile("RGB ", 1000);
    std::vector<std::string> warnings;
    const Bytes jpeg = encode_image("x.jpg", img, {}, Codec::Auto, &warnings);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("x.jpg: EXIF not written: 70000 bytes, over the 65527"), std::string::npos)
        << warnings[0];
    const Image back = decode_image("x.jpg", jpeg);
    EXPECT_TRUE(back.metadata.exif.empty());
    EXPECT_EQ(back.metadata.icc, img.metadata.icc);
    warnings.clear();
    EXPECT_EQ(decode_image("x.png", encode_image("x.png", img, {}, Codec::Auto, &warnings)).metadata.exif,
              img.metadata.exif);
    EXPECT_EQ(joined(warnings), "");
}

// ---------------------------------------------------------------- malformed input

TEST(Metadata, MalformedPngMetadataIsDroppedNotAnError) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.png", photo(30, 20, 3, 10));
    const Bytes plain = read_bytes(dir / "plain.png");
    const Image pixels = read_image(dir / "plain.png");
    const Bytes icc = icc_profile("RGB ", 800), packed = zlib(icc);
    Bytes corrupt = packed;
    corrupt[corrupt.size() / 2] ^= 0x55;
    corrupt[corrupt.size() / 2 + 1] ^= 0xAA;
    Bytes bad_crc = iccp(packed);
    bad_crc.back() ^= 1;
    ExifSpec spec;
    spec.orientation = 3;
    Bytes exif_far = exif_block(spec);
    exif_far[7] = 200;  // IFD0 past the block's end
    // EXIF whose EXIF directory pointer names IFD0 itself: a loop.
    Bytes exif_loop = exif_block(spec);
    for (size_t at = 10; at + 12 <= exif_loop.size(); at += 12)
        if (exif_loop[at] == 0x87 && exif_loop[at + 1] == 0x69) exif_loop[at + 11] = 8;
    const struct {
        const char* name;
        std::vector<Bytes> chunks;
        const char* warning;  // "" none
        bool icc_kept, exif_kept;
    } cases[] = {
        {"corrupt zlib", {iccp(corrupt)}, "ICC profile dropped: its zlib stream is corrupt", false, false},
        {"truncated zlib", {iccp(Bytes(packed.begin(), packed.begin() + 20))}, "corrupt or truncated", false, false},
        {"zip bomb", {iccp(zlib(Bytes(size_t(40) << 20, 0)))}, "inflates to over 16777216 bytes", false, false},
        {"bad CRC", {bad_crc}, "ICC profile dropped: its iCCP chunk's CRC is wrong", false, false},
        {"no keyword", {png_chunk("iCCP", {0, 0, 1, 2})}, "has no keyword", false, false},
        {"EXIF not TIFF",
         {iccp(packed), png_chunk("eXIf", {'n', 'o', 'p', 'e', 0, 0, 0, 0})},
         "EXIF dropped: it does not start with a TIFF header",
         true,
         false},
        {"EXIF directory outside",
         {png_chunk("eXIf", exif_far)},
         "EXIF dropped: its first directory lies outside",
         false,
         false},
        {"EXIF loop", {png_chunk("eXIf", exif_loop)}, "", false, true},
    };
    for (const auto& t : cases) {
        SCOPED_TRACE(t.name);
        write_bytes(dir / "bad.png", with_chunks(plain, t.chunks));
        std::vector<std::string> warnings;
        const Image back = read_image(dir / "bad.png", Codec::Auto, 0, &warnings);
        EXPECT_EQ(back.metadata.icc.empty(), !t.icc_kept);
        EXPECT_EQ(back.metadata.exif.empty(), !t.exif_kept);
        if (*t.warning) {
            ASSERT_EQ(warnings.size(), 1u) << joined(warnings);
            EXPECT_NE(warnings[0].find(t.warning), std::string::npos) << warnings[0];
        } else {
            EXPECT_EQ(joined(warnings), "");
        }
        if (t.exif_kept) {
            EXPECT_EQ(back.width, 30);  // orientation 3: turned, not transposed
            EXPECT_EQ(exif_tag(back.metadata.exif, 0x0112), "1");
        } else {
            EXPECT_TRUE(same_image(back, pixels));
        }
    }
}

// An EXIF directory of thousands of entries naming itself as its EXIF
// directory: the reader's entry and value budgets once wrapped below zero when
// a child used up what was left, after which such a 65 KB block expanded to
// ~10^10 entries (memory without limit). Now the tree stays within its
// budgets and the photo is read at once.
TEST(Metadata, SelfNamingExifDirectoryStaysBounded) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.png", photo(30, 20, 3, 11));
    const Image pixels = read_image(dir / "plain.png");
    const uint32_t pointers = 2700, shorts = 2700, count = pointers + shorts;
    Bytes exif = {'I', 'I', 42, 0, 8, 0, 0, 0};
    auto u16 = [&](uint32_t v) { exif.push_back(uint8_t(v)), exif.push_back(uint8_t(v >> 8)); };
    auto u32 = [&](uint32_t v) { u16(v & 0xFFFF), u16(v >> 16); };
    u16(count);
    for (uint32_t i = 0; i < pointers; ++i) u16(0x8769), u16(4), u32(1), u32(8);  // EXIF directory: IFD0 itself
    for (uint32_t i = 0; i < shorts; ++i) u16(0x0100), u16(3), u32(1), u32(1);
    u32(0);
    write_bytes(dir / "loop.png", with_chunks(read_bytes(dir / "plain.png"), {png_chunk("eXIf", exif)}));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> warnings;
    const Image back = read_image(dir / "loop.png", Codec::Auto, 0, &warnings);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(same_image(back, pixels));
    EXPECT_LT(seconds, 10.0) << "a bounded walk takes milliseconds";
    // Written back out, whatever was kept stays a valid file of its format.
    write_image(dir / "out.png", back);
    EXPECT_TRUE(same_image(read_image(dir / "out.png"), pixels));
}

// Orientation as a LONG (some writers) is applied like the standard SHORT,
// and every Orientation entry of IFD0 is reset, not only the first, so no
// viewer turns the restored photo a second time.
TEST(Metadata, EveryOrientationEntryIsAppliedAndReset) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.png", photo(30, 20, 3, 12));
    const Bytes plain = read_bytes(dir / "plain.png");
    // IFD0 of little-endian EXIF with the given (type, value) Orientation entries.
    auto exif_with = [](const std::vector<std::pair<uint16_t, uint32_t>>& orientations) {
        Bytes b = {'I', 'I', 42, 0, 8, 0, 0, 0};
        auto u16 = [&](uint32_t v) { b.push_back(uint8_t(v)), b.push_back(uint8_t(v >> 8)); };
        auto u32 = [&](uint32_t v) { u16(v & 0xFFFF), u16(v >> 16); };
        u16(uint32_t(orientations.size()));
        for (const auto& [type, value] : orientations) {
            u16(0x0112), u16(type), u32(1);
            if (type == 3)
                u16(value), u16(0);
            else
                u32(value);
        }
        u32(0);
        return b;
    };
    const struct {
        const char* name;
        std::vector<std::pair<uint16_t, uint32_t>> orientations;
    } cases[] = {{"LONG", {{4, 6}}}, {"two SHORTs", {{3, 6}, {3, 6}}}};
    for (const auto& t : cases) {
        SCOPED_TRACE(t.name);
        write_bytes(dir / "o.png", with_chunks(plain, {png_chunk("eXIf", exif_with(t.orientations))}));
        std::vector<std::string> warnings;
        const Image back = read_image(dir / "o.png", Codec::Auto, 0, &warnings);
        EXPECT_EQ(joined(warnings), "");
        EXPECT_EQ(back.width, 20);  // orientation 6: turned a quarter
        EXPECT_EQ(back.height, 30);
        const Bytes& e = back.metadata.exif;
        ASSERT_EQ(e.size(), 8 + 2 + 12 * t.orientations.size() + 4);
        for (size_t i = 0; i < t.orientations.size(); ++i)
            EXPECT_EQ(uint32_t(e[10 + 12 * i + 8]) | uint32_t(e[10 + 12 * i + 9]) << 8, 1u) << "entry " << i;
    }
}

TEST(Metadata, WebpVp8xThatLiesIsHarmless) {
    if (!opencv_available()) GTEST_SKIP() << "no WebP in a build without OpenCV";
    ScratchDir dir("metadata");
    Image img = photo(30, 20, 3, 11);
    img.metadata = sample_metadata();
    const Bytes good = encode_image("x.webp", img);
    ASSERT_EQ(webp_chunk_types(good), "VP8X ICCP VP8  EXIF");
    const Image pixels = decode_image("x.webp", good);
    // Flags that claim an ICC profile and EXIF, and no such chunks.
    img.metadata = {};
    Bytes lying = encode_image("x.webp", img);
    {
        Bytes vp8x = {'V', 'P', '8', 'X', 10, 0, 0, 0, 0x20 | 0x08, 0, 0, 0, 29, 0, 0, 19, 0, 0};
        lying.insert(lying.begin() + 12, vp8x.begin(), vp8x.end());
        const size_t riff = lying.size() - 8;
        for (int i = 0; i < 4; ++i) lying[4 + size_t(i)] = uint8_t(riff >> (8 * i));
    }
    // A profile without its 'acsp', and an EXIF chunk whose size runs past the file.
    Bytes garbled = good;
    garbled[12 + 18 + 8 + 36] = 'x';
    Bytes overlong = good;
    const size_t exif_size = sample_metadata().exif.size(), exif_at = good.size() - 8 - exif_size - (exif_size & 1);
    ASSERT_EQ(std::string(good.begin() + long(exif_at), good.begin() + long(exif_at + 4)), "EXIF");
    overlong[exif_at + 5] = 0xFF;  // its size 65280 bytes larger
    for (const auto& [name, bytes, icc_kept, exif_kept] :
         {std::make_tuple("flags without chunks", lying, false, false),
          std::make_tuple("profile without acsp", garbled, false, true),
          std::make_tuple("EXIF past the end", overlong, true, false)}) {
        SCOPED_TRACE(name);
        std::vector<std::string> warnings;
        const Image back = decode_image("x.webp", bytes, Codec::Auto, 0, &warnings);
        EXPECT_EQ(back.width, 30);
        EXPECT_EQ(back.metadata.icc.empty(), !icc_kept);
        EXPECT_EQ(back.metadata.exif.empty(), !exif_kept);
        if (std::string(name) != "flags without chunks") EXPECT_TRUE(same_image(back, pixels));
    }
}

// ---------------------------------------------------------------- the files written

TEST(Metadata, EmbeddedFilesAreWellFormed) {
    Image img = photo(30, 20, 3, 12);
    img.metadata = sample_metadata();
    EXPECT_EQ(jpeg_markers(encode_image("x.jpg", img)).substr(0, 11), "E0 E1 E2 DB") << "JFIF APP0 first";
    for (Codec codec : build_codecs())
        if (writes(".png", codec)) {
            const std::string types = png_chunk_types(encode_image("x.png", img, {}, codec));
            EXPECT_EQ(types.substr(0, 20), "IHDR iCCP eXIf IDAT ") << codec_name(codec);
            EXPECT_EQ(types.substr(types.size() - 5), " IEND") << types;
        }
    if (opencv_available()) {
        EXPECT_EQ(webp_chunk_types(encode_image("x.webp", img)), "VP8X ICCP VP8  EXIF");
        Image rgba = photo(30, 20, 4, 12);
        rgba.set_sample(3, 7);  // not opaque: the encoder keeps the alpha
        rgba.metadata.exif = img.metadata.exif;
        const Bytes webp = encode_image("x.webp", rgba);
        EXPECT_EQ(webp_chunk_types(webp), "VP8X ALPH VP8  EXIF");
        EXPECT_EQ(webp[20], 0x10 | 0x08) << "flags: alpha and EXIF";
        EXPECT_EQ(webp[24] | webp[25] << 8, 29) << "canvas width - 1";
        EXPECT_EQ(webp[27] | webp[28] << 8, 19) << "canvas height - 1";
        EXPECT_EQ(decode_image("x.webp", webp).channels, 4);
    }
}

// Embedding into bytes an encoder wrote with metadata of its own: replaced, not doubled.
TEST(Metadata, EmbeddingReplacesWhatTheEncoderWrote) {
    ScratchDir dir("metadata");
    write_image(dir / "plain.jpg", photo(30, 20, 3, 13));
    const Bytes old_exif = exif_block({});
    Bytes jpeg =
        with_segments(read_bytes(dir / "plain.jpg"), {app1_exif(old_exif), app2_icc(icc_profile("RGB ", 400))[0]});
    ExifSpec spec;
    spec.little_endian = true;
    const Bytes new_exif = exif_block(spec), new_icc = icc_profile("RGB ", 600);
    imageio::Dropped dropped;
    imageio::embed_jpeg_metadata(jpeg, new_icc, new_exif, dropped);
    EXPECT_EQ(jpeg_markers(jpeg).substr(0, 11), "E1 E2 E0 DB");
    Image back = decode_image("x.jpg", jpeg);
    EXPECT_EQ(back.metadata.icc, new_icc);
    EXPECT_EQ(back.metadata.exif, new_exif);

    write_image(dir / "plain.png", photo(30, 20, 3, 13));
    Bytes png =
        with_chunks(read_bytes(dir / "plain.png"),
                    {png_chunk("sRGB", {0}), png_chunk("gAMA", {0, 0, 0xB1, 0x8F}), png_chunk("eXIf", old_exif)});
    Bytes exif_only = png;
    imageio::embed_png_metadata(exif_only, {}, new_exif, dropped);
    EXPECT_EQ(png_chunk_types(exif_only).substr(0, 25), "IHDR eXIf sRGB gAMA IDAT ") << "color chunks stay";
    imageio::embed_png_metadata(png, new_icc, new_exif, dropped);
    EXPECT_EQ(png_chunk_types(png).substr(0, 20), "IHDR iCCP eXIf IDAT ") << "the profile replaces sRGB and gAMA";
    back = decode_image("x.png", png);
    EXPECT_EQ(back.metadata.icc, new_icc);
    EXPECT_EQ(back.metadata.exif, new_exif);
    EXPECT_EQ(joined(dropped), "");
}

TEST(Metadata, UnparsableEncodedBytesAreLeftAsTheyWere) {
    const Bytes icc = icc_profile("RGB ", 300), exif = exif_block({});
    for (imageio::Format f :
         {imageio::Format::Jpeg, imageio::Format::Png, imageio::Format::Webp, imageio::Format::Tiff}) {
        Bytes junk = {'j', 'u', 'n', 'k', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        const Bytes before = junk;
        imageio::Dropped dropped;
        imageio::embed_metadata(f, junk, {icc, exif}, 3, dropped);
        EXPECT_EQ(junk, before);
        ASSERT_EQ(dropped.size(), 1u);
        EXPECT_NE(dropped[0].find("could not be parsed"), std::string::npos) << dropped[0];
    }
}

}  // namespace
}  // namespace imr
