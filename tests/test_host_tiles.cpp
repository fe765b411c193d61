// An image restored in tiles straight from its samples (app/pipeline/
// host_tiles.h, the pipeline's path for images too large for whole float
// planes) equals the planes path bit for bit: image_to_planes, run(),
// --strength's blend, planes_to_image. For every channel mapping of
// image_batch.h (gray and RGB through a 3-channel model, RGB through a
// 1-channel one, alpha copied and converted), 8 and 16 bits, a change of
// bit depth, odd sides (padded to the size multiple) and tiles smaller than
// the image. Also the rectangle conversions themselves against
// image_to_planes, with the rows and columns past the image repeating.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/cpu_backend.h"
#include "image/image_batch.h"
#include "image_test_files.h"
#include "model_runner.h"
#include "pipeline/host_tiles.h"
#include "pipeline/pipeline.h"
#include "test_util.h"

namespace imr {
namespace {

using test::random_image;

// A 1-channel graph: conv 1->4 relu, conv 4->1 plus the model input.
ModelFile gray_model(std::mt19937& rng) {
    Conv2dStage a = test::random_conv2d(rng, 1, 4, 3, PadMode::Zero, true);
    a.activation = Activation::ReLU;
    Conv2dStage b = test::random_conv2d(rng, 4, 1, 3, PadMode::Replicate, true);
    b.add_model_input = true;
    ModelFile m = test::model_of("test-gray", {a, b});
    m.channels = 1;
    m.format_version = m.min_format_version();
    return m;
}

// What the pipeline's planes path makes of `image`.
Image restore_by_planes(ModelRunner& runner, const Image& image, int bit_depth, float blend) {
    const int c = runner.model().channels;
    const Shape shape{items_per_image(image, c), c, image.height, image.width};
    std::vector<float> in(shape.count()), out(shape.count(), std::nanf(""));
    image_to_planes(image, c, in.data());
    runner.run(f32_nchw(in.data(), shape), f32_nchw(out.data(), shape), nullptr);
    if (blend != 1)
        for (size_t i = 0; i < out.size(); ++i) out[i] = blend == 0 ? in[i] : in[i] + blend * (out[i] - in[i]);
    return planes_to_image(out.data(), c, image, bit_depth);
}

TEST(HostTiles, RectanglesConvertAsTheWholeImageDoes) {
    unsigned seed;
    auto rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (int channels : {1, 2, 3, 4})
        for (int model : {1, 3}) {
            const Image image = random_image(rng, 13, 9, channels, channels == 3 ? 16 : 8);
            const int items = items_per_image(image, model);
            std::vector<float> whole(size_t(items) * model * 9 * 13);
            image_to_planes(image, model, whole.data());
            // A rectangle reaching 2 rows and 3 columns past the image.
            const ImageRect rect{5, 7, 6, 9};
            for (int item = 0; item < items; ++item) {
                std::vector<float> got(size_t(model) * rect.h * rect.w, std::nanf(""));
                image_rect_to_planes(image, model, item, rect, got.data());
                for (int c = 0; c < model; ++c)
                    for (int y = 0; y < rect.h; ++y)
                        for (int x = 0; x < rect.w; ++x) {
                            const int sy = std::min(rect.y + y, 8), sx = std::min(rect.x + x, 12);
                            const float want = whole[((size_t(item) * model + c) * 9 + sy) * 13 + sx];
                            ASSERT_EQ(want, got[(size_t(c) * rect.h + y) * rect.w + x])
                                << channels << " channels, model " << model << ", item " << item << ", plane " << c
                                << " at " << y << "," << x;
                        }
            }
        }
}

TEST(HostTiles, TiledFromSamplesEqualsThePlanesPath) {
    unsigned seed;
    auto rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ModelFile rgb = test::unet_model(rng);  // size multiple 2: the odd sides are padded
    const ModelFile gray = gray_model(rng);
    auto cpu = make_cpu_backend(2);
    struct Case {
        int channels, depth, out_depth;
        const ModelFile* model;
        float blend;
    };
    const Case cases[] = {
        {3, 8, 0, &rgb, 1},
        {4, 8, 0, &rgb, 1},
        {1, 8, 0, &rgb, 1},
        {2, 16, 0, &rgb, 1},
        {3, 16, 8, &rgb, 1},
        {4, 8, 16, &rgb, 0.5f},
        {3, 8, 0, &rgb, 0},
        {2, 8, 16, &rgb, 1},
        {3, 8, 0, &gray, 1},
        {4, 16, 8, &gray, 1},
        {1, 8, 0, &gray, 1},
        {3, 8, 0, &gray, 0.7f},
        // RGBA through the 1-channel model at its own depth (alpha copied by
        // the first item: the items write only their color); gray + alpha.
        {4, 8, 0, &gray, 1},
        {2, 8, 0, &gray, 1},
        {2, 16, 8, &gray, 1},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(std::to_string(k.channels) + " channels, " + std::to_string(k.depth) + " bits -> " +
                     std::to_string(k.out_depth) + ", model " + k.model->name + ", blend " + std::to_string(k.blend));
        const Image image = random_image(rng, 41, 29, k.channels, k.depth);
        ModelRunner whole(*k.model, *cpu);
        const Image want = restore_by_planes(whole, image, k.out_depth, k.blend);
        for (int tile : {0, 8}) {  // one tile, then tiles of 8 (of a 42x30 padded image)
            ModelRunner runner(*k.model, *cpu, test::tiled(tile));
            StageTimer timer;
            const Image got = restore_in_tiles(runner, image, k.out_depth, k.blend, 0, &timer);
            ASSERT_EQ(got.width, want.width);
            ASSERT_EQ(got.height, want.height);
            ASSERT_EQ(got.channels, want.channels);
            ASSERT_EQ(got.bit_depth, want.bit_depth);
            size_t differ = 0;
            for (size_t i = 0; i < got.sample_count(); ++i) differ += got.sample(i) != want.sample(i);
            EXPECT_EQ(differ, 0u) << "tile " << tile << ": samples differing from the planes path";
        }
    }
}

// A budget of a few kilobytes makes tiles of the smallest side: still the same image.
TEST(HostTiles, AMemoryBudgetMakesSmallTilesWithTheSameResult) {
    unsigned seed;
    auto rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ModelFile m = test::unet_model(rng);
    auto cpu = make_cpu_backend(2);
    const Image image = random_image(rng, 70, 45, 3, 8);
    ModelRunner runner(m, *cpu);
    const Image want = restore_by_planes(runner, image, 0, 1);
    StageTimer timer;
    const Image got = restore_in_tiles(runner, image, 0, 1, runner.bytes_per_pixel() * 40 * 40, &timer);
    EXPECT_EQ(got.samples_u16(), want.samples_u16());
    EXPECT_GT(timer.rows().size(), 0u);
    bool tiled = false;
    for (const StageTimer::Row& row : timer.rows()) tiled |= row.name == "tile copies" && row.samples_ms.size() > 2;
    EXPECT_TRUE(tiled) << "the budget did not split the image";
}

// Through the pipeline: a folder where every image goes the tiled way (one
// of them among batched ones too), or as its samples (ModelRunner::
// run_samples: batches gathered, in place; with --bench repeats, into
// another buffer), writes the same files as the planes path.
TEST(HostTiles, ThePipelineWritesTheSameFilesEitherWay) {
    unsigned seed;
    auto rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ModelFile m = test::unet_model(rng);
    auto cpu = make_cpu_backend(2);
    const test::ScratchDir dir("host-tiles");
    const std::vector<Image> images = {random_image(rng, 33, 21, 3, 8), random_image(rng, 33, 21, 3, 8),
                                       random_image(rng, 47, 31, 4, 16), random_image(rng, 33, 21, 3, 8),
                                       random_image(rng, 19, 40, 1, 8)};
    std::vector<std::string> inputs;
    for (size_t i = 0; i < images.size(); ++i) {
        inputs.push_back((dir / ("in" + std::to_string(i) + ".png")));
        write_image(inputs.back(), images[i]);
    }
    // Planes everywhere; every image tiled; only the 47x31 one (1457 px)
    // tiled, amid a batch; samples everywhere, with and without --bench;
    // samples but the 47x31 one tiled.
    struct Way {
        size_t threshold;
        PipelineOptions::Samples samples;
        int bench;
    };
    const size_t none = size_t(1) << 40;
    const Way ways[] = {{none, PipelineOptions::Samples::Off, 0}, {0, PipelineOptions::Samples::Off, 0},
                        {1000, PipelineOptions::Samples::Off, 0}, {none, PipelineOptions::Samples::On, 0},
                        {none, PipelineOptions::Samples::On, 1},  {1000, PipelineOptions::Samples::On, 0}};
    std::vector<std::vector<Image>> results;
    for (const Way& way : ways) {
        const size_t threshold = way.threshold;
        ModelRunner runner(m, *cpu, test::tiled(threshold == 0 ? 16 : 0));
        PipelineOptions options;
        options.tiled_above_pixels = threshold;
        options.samples = way.samples;
        options.bench_repeats = way.bench;
        options.blend = 0.75f;
        size_t next = 0;
        const std::string tag = std::to_string(results.size());
        JobSource source = [&](FileJob& job) {
            if (next == inputs.size()) return false;
            job = {};
            job.input = inputs[next];
            job.output = (dir / ("out" + tag + "-" + std::to_string(next) + ".png"));
            job.shard_key = job.output;
            ++next;
            return true;
        };
        std::vector<std::string> failures;
        const PipelineReport report = run_pipeline(source, runner, options, [&](size_t, const FileResult& r) {
            if (r.status != FileResult::Status::Restored) failures.push_back(r.input + ": " + r.message);
        });
        EXPECT_TRUE(failures.empty()) << failures.front();
        EXPECT_EQ(report.count(FileResult::Status::Restored), int(images.size()));
        size_t tile_passes = 0;  // run_tiles times its reads and writes as "tile copies"
        for (const StageTimer::Row& row : report.timer.rows())
            if (row.name == "tile copies") tile_passes = row.samples_ms.size();
        EXPECT_EQ(tile_passes > 0, threshold < images.size() * 2000) << "the tiled path ran, or did not";
        bool sample_path = false;  // run_samples times its conversions as "to-NCHW on ..."
        for (const StageTimer::Row& row : report.timer.rows()) sample_path |= row.name.rfind("to-NCHW on ", 0) == 0;
        EXPECT_EQ(sample_path, way.samples == PipelineOptions::Samples::On) << "the sample path ran, or did not";
        results.emplace_back();
        for (size_t i = 0; i < images.size(); ++i)
            results.back().push_back(read_image((dir / ("out" + tag + "-" + std::to_string(i) + ".png"))));
    }
    for (size_t t = 1; t < results.size(); ++t)
        for (size_t i = 0; i < images.size(); ++i)
            EXPECT_EQ(results[t][i].samples_u16(), results[0][i].samples_u16())
                << "image " << i << " with tiled_above_pixels " << ways[t].threshold << ", samples "
                << int(ways[t].samples) << ", bench " << ways[t].bench;
}

}  // namespace
}  // namespace imr
