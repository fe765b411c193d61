// Model files: round trip, the bundled models, a table of bad files (each with
// the message a user must see), and the model runner (tiled == untiled ==
// float64 reference of the stage chain).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "model_registry.h"
#include "model_runner.h"
#include "reference.h"
#include "test_util.h"

namespace imr {
namespace {

using test::RawH5;
using test::ScratchDir;

std::mt19937 fresh_rng(unsigned* seed_out) {
    unsigned seed = std::random_device{}();
    *seed_out = seed;
    return std::mt19937(seed);
}

TEST(ModelFile, WriteThenLoadGivesTheSameModel) {
    unsigned seed;
    auto rng = fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ScratchDir dir("model");
    ModelFile m = test::small_model(rng);
    m.license = "CC0-1.0";
    write_model_file(dir / "m.h5", m);
    ModelFile back = load_model_file(dir / "m.h5");
    EXPECT_EQ(back.name, m.name);
    EXPECT_EQ(back.task, m.task);
    EXPECT_EQ(back.description, m.description);
    EXPECT_EQ(back.provenance, m.provenance);
    EXPECT_EQ(back.license, m.license);
    EXPECT_EQ(back.channels, 3);
    ASSERT_EQ(back.stages.size(), m.stages.size());
    auto rb0 = std::get<ResidualBlockStage>(back.stages[0]);
    EXPECT_EQ(rb0.conv_in_weight, std::get<ResidualBlockStage>(m.stages[0]).conv_in_weight);
    auto c1 = std::get<Conv2dStage>(back.stages[1]);
    EXPECT_EQ(c1.weight, std::get<Conv2dStage>(m.stages[1]).weight);
    EXPECT_EQ(c1.bias, std::get<Conv2dStage>(m.stages[1]).bias);
    EXPECT_EQ(c1.padding, PadMode::Reflect);
    auto c2 = std::get<Conv2dStage>(back.stages[2]);
    EXPECT_TRUE(c2.bias.empty());
    EXPECT_EQ(c2.padding, PadMode::Replicate);
    EXPECT_EQ(back.parameter_count(), m.parameter_count());
    // 1 + 4 (block) + 3 (4x4) + 2 (3x3) + 4 (block)
    EXPECT_EQ(back.receptive_field(), 14);
    std::string text = describe_model(back);
    EXPECT_NE(text.find("receptive    14x14"), std::string::npos) << text;
    EXPECT_NE(text.find(std::to_string(m.parameter_count())), std::string::npos) << text;
}

TEST(ModelFile, EveryBundledModelLoads) {
    std::vector<BundledModel> models = list_bundled_models();
    ASSERT_FALSE(models.empty()) << "no bundled models in " << IMRESTORE_SOURCE_WEIGHTS;
    bool has_default = false;
    for (const BundledModel& b : models) {
        SCOPED_TRACE(b.path);
        ModelFile m = load_model_file(b.path);
        EXPECT_FALSE(m.description.empty());
        EXPECT_FALSE(m.provenance.empty());
        has_default |= b.name == kDefaultModel;
    }
    EXPECT_TRUE(has_default);
    EXPECT_EQ(resolve_model("denoise"), resolve_model(kDefaultModel));
    EXPECT_THROW(resolve_model("no-such-model"), Error);
}

// ------------------------------------------------------------------ bad files

struct BadModelCase {
    const char* name;
    std::function<void(const std::string& path)> make;
    const char* expected;  // a substring of the error message
};

void standard_file(const std::string& path, const std::function<void(RawH5&, hid_t stages)>& body, int channels = 3,
                   long long version = 1) {
    RawH5 f(path);
    f.header(channels, version);
    body(f, f.group(f.root(), "stages"));
}

std::vector<BadModelCase> bad_model_cases() {
    return {
        {"missing file", [](const std::string&) {}, "no such model file"},
        {"not hdf5", [](const std::string& p) { std::ofstream(p) << "this is not HDF5"; }, "not an HDF5 file"},
        {"no format attribute",
         [](const std::string& p) {
             RawH5 f(p);
             RawH5::str_attr(f.root(), "name", "x");
         },
         "attribute 'format' is missing"},
        {"other format",
         [](const std::string& p) {
             RawH5 f(p);
             RawH5::str_attr(f.root(), "format", "keras");
         },
         "expected 'imrestore-model'"},
        {"newer version",
         [](const std::string& p) {
             standard_file(
                 p, [](RawH5& f, hid_t s) { f.residual_block(s, "0", 3, 4); }, 3, 2);
         },
         "format_version 2 is not supported"},
        {"version is a string",
         [](const std::string& p) {
             RawH5 f(p);
             RawH5::str_attr(f.root(), "format", "imrestore-model");
             RawH5::str_attr(f.root(), "format_version", "1");
         },
         "attribute 'format_version' must be an integer"},
        {"missing name",
         [](const std::string& p) {
             RawH5 f(p);
             RawH5::str_attr(f.root(), "format", "imrestore-model");
             RawH5::int_attr(f.root(), "format_version", 1);
         },
         "attribute 'name' is missing"},
        {"no stages group",
         [](const std::string& p) {
             RawH5 f(p);
             f.header();
         },
         "group 'stages' is missing"},
        {"empty stages", [](const std::string& p) { standard_file(p, [](RawH5&, hid_t) {}); }, "has no stages"},
        {"unknown op",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) { RawH5::str_attr(f.group(s, "0"), "op", "upsample"); });
         },
         "stage 0 (upsample): unknown op 'upsample'"},
        {"stage names with a gap",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 f.residual_block(s, "0", 3, 4);
                 f.residual_block(s, "2", 3, 4);
             });
         },
         "expected stages named 0..1"},
        {"missing dataset",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "residual_block");
                 RawH5::dataset(g, "conv_in_weight", {32, 3, 3, 3});
                 RawH5::dataset(g, "conv_out_weight", {3, 32, 3, 3});
                 RawH5::dataset(g, "conv_out_bias", {3});
             });
         },
         "stage 0 (residual_block): dataset 'conv_in_bias' is missing"},
        {"float64 weights",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 3, 3}, H5T_IEEE_F64LE);
             });
         },
         "dataset 'weight': expected float32, found float64"},
        {"wrong rank",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 9});
             });
         },
         "dataset 'weight': expected rank 4, found rank 3 [3,3,9]"},
        {"wrong conv_out shape",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "residual_block");
                 RawH5::dataset(g, "conv_in_weight", {32, 3, 3, 3});
                 RawH5::dataset(g, "conv_in_bias", {32});
                 RawH5::dataset(g, "conv_out_weight", {3, 16, 3, 3});
                 RawH5::dataset(g, "conv_out_bias", {3});
             });
         },
         "stage 0 (residual_block): dataset 'conv_out_weight': expected shape [3,32,3,3], found [3,16,3,3]"},
        {"channels do not chain",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 3, 3});
                 f.residual_block(s, "1", 4, 8);
             });
         },
         "stage 1 (residual_block): dataset 'conv_in_weight': expected 3 input channels"},
        {"last stage gives other channels",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {5, 3, 3, 3});
             });
         },
         "the last stage gives 5 channels but the model's 'channels' is 3"},
        {"non-square kernel",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 3, 5});
             });
         },
         "expected a square kernel"},
        {"bias of the wrong length",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 3, 3});
                 RawH5::dataset(g, "bias", {4});
             });
         },
         "dataset 'bias': expected shape [3], found [4]"},
        {"unknown padding",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::str_attr(g, "padding", "mirror");
                 RawH5::dataset(g, "weight", {3, 3, 3, 3});
             });
         },
         "attribute 'padding': expected reflect, replicate or zero, found 'mirror'"},
        {"NaN weight",
         [](const std::string& p) {
             standard_file(p, [](RawH5& f, hid_t s) {
                 hid_t g = f.group(s, "0");
                 RawH5::str_attr(g, "op", "conv2d");
                 RawH5::dataset(g, "weight", {3, 3, 3, 3}, H5T_IEEE_F32LE, std::nan(""));
             });
         },
         "dataset 'weight': value 0 is not finite"},
        {"channels out of range",
         [](const std::string& p) {
             standard_file(
                 p, [](RawH5& f, hid_t s) { f.residual_block(s, "0", 3, 4); }, 7);
         },
         "attribute 'channels' must be 1 (gray) or 3 (RGB), found 7"},
    };
}

TEST(ModelFile, BadFilesAreRefusedWithAClearMessage) {
    ScratchDir dir("badmodel");
    int i = 0;
    for (const BadModelCase& c : bad_model_cases()) {
        SCOPED_TRACE(c.name);
        std::string path = dir / ("bad" + std::to_string(i++) + ".h5");
        c.make(path);
        try {
            load_model_file(path);
            ADD_FAILURE() << "loaded without error";
        } catch (const Error& e) {
            std::string msg = e.what();
            EXPECT_EQ(msg.rfind(path, 0), 0u) << "message does not start with the file: " << msg;
            EXPECT_NE(msg.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << msg;
        }
    }
}

TEST(ModelFile, WriterRefusesInvalidModels) {
    std::mt19937 rng(1);
    ScratchDir dir("writer");
    ModelFile m = test::small_model(rng);
    std::get<Conv2dStage>(m.stages[1]).weight.pop_back();
    EXPECT_THROW(write_model_file(dir / "m.h5", m), Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "m.h5"));
}

// ------------------------------------------------------------------ runner

// The model as a chain of float64 reference ops.
std::vector<double> reference_model(const ModelFile& m, const std::vector<float>& input, Shape shape) {
    std::vector<float> x = input;
    int channels = m.channels;
    std::vector<double> y;
    for (const Stage& s : m.stages) {
        if (auto* rb = std::get_if<ResidualBlockStage>(&s)) {
            ResidualBlockArgs a;
            a.shape = {shape.n, channels, shape.h, shape.w};
            a.hidden = rb->hidden;
            std::vector<float> out(a.shape.count());
            a.input = x.data(), a.output = out.data();
            a.conv_in_weight = rb->conv_in_weight.data(), a.conv_in_bias = rb->conv_in_bias.data();
            a.conv_out_weight = rb->conv_out_weight.data(), a.conv_out_bias = rb->conv_out_bias.data();
            y = reference_residual_block(a);
        } else {
            const auto& c = std::get<Conv2dStage>(s);
            Conv2dArgs a;
            a.in = {shape.n, channels, shape.h, shape.w};
            a.out_channels = c.out_channels, a.kernel = c.kernel;
            a.pad_before = c.pad_before(), a.pad_after = c.pad_after(), a.pad_mode = c.padding;
            std::vector<float> out(a.out_shape().count());
            a.input = x.data(), a.output = out.data(), a.weight = c.weight.data();
            a.bias = c.bias.empty() ? nullptr : c.bias.data();
            y = reference_conv2d(a);
        }
        channels = stage_out_channels(s);
        x.assign(y.begin(), y.end());  // the next stage sees fp32, as the backends do
    }
    return y;
}

// Every element of `out` against the float64 chain. fp32 through the 4 stages
// of test::small_model, reductions of at most 8*9=72 terms: 1e-5 of the
// output scale is far above the rounding and far below any indexing error.
void expect_matches_reference(const std::vector<float>& out, const std::vector<double>& ref, const char* what) {
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    ASSERT_EQ(out.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5 * scale) << what << ", element " << i;
}

TEST(ModelRunner, MatchesReferenceTiledOrNot) {
    unsigned seed;
    auto rng = fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ModelFile m = test::small_model(rng);
    auto cpu = make_cpu_backend();
    Shape shape{2, 3, 45, 67};
    std::vector<float> input = test::random_vector(rng, shape.count(), 0.3f);
    std::vector<double> ref = reference_model(m, input, shape);

    ModelRunner runner(m, *cpu);
    std::vector<float> whole(shape.count(), std::nanf("")), tiled(shape.count(), std::nanf(""));
    StageTimer timer;
    runner.run(input.data(), whole.data(), shape, &timer);
    runner.set_max_tile(16);  // 16 < radius-padded size: many tiles, edges and corners
    runner.run(input.data(), tiled.data(), shape, nullptr);

    expect_matches_reference(whole, ref, "untiled");
    expect_matches_reference(tiled, ref, "tiled");
    // 4 stages; no upload/download rows: the CPU works on the caller's buffers
    ASSERT_EQ(timer.rows().size(), 4u);
    EXPECT_EQ(timer.rows()[0].name, "stage 0 residual_block");
    EXPECT_EQ(timer.rows()[1].name, "stage 1 conv2d");
}

// The CPU backend, claiming to have only `free_bytes` of memory left.
class LowMemoryBackend : public Backend {
public:
    explicit LowMemoryBackend(size_t free_bytes) : cpu_(make_cpu_backend()), free_(free_bytes) {}
    std::string name() const override { return "low-memory " + cpu_->name(); }
    std::string description() const override { return cpu_->description(); }
    bool is_host_memory() const override { return true; }
    float* alloc(size_t count) override { return cpu_->alloc(count); }
    void release(float* p) noexcept override { cpu_->release(p); }
    void upload(float* dst, const float* src, size_t n) override { cpu_->upload(dst, src, n); }
    void download(float* dst, const float* src, size_t n) override { cpu_->download(dst, src, n); }
    void synchronize() override { cpu_->synchronize(); }
    size_t free_memory() const override { return free_; }
    void residual_block(const ResidualBlockArgs& a) override { cpu_->residual_block(a); }
    void conv2d(const Conv2dArgs& a) override { cpu_->conv2d(a); }
    std::unique_ptr<BackendTimer> make_timer() override { return cpu_->make_timer(); }

private:
    std::unique_ptr<Backend> cpu_;
    size_t free_;
};

TEST(ModelRunner, TilesOnItsOwnWhenMemoryIsShort) {
    unsigned seed;
    auto rng = fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ModelFile m = test::small_model(rng);
    Shape shape{2, 3, 45, 67};
    std::vector<float> input = test::random_vector(rng, shape.count(), 0.3f);
    std::vector<double> ref = reference_model(m, input, shape);
    // 200 KB: room for ~3500 pixels of activations (5 channels, two buffers),
    // so neither the batch nor one 45x67 image fits, but a 32-pixel tile with
    // its 7-pixel halo does.
    LowMemoryBackend small(200 * 1024);
    ModelRunner runner(m, small);
    std::vector<float> out(shape.count(), std::nanf(""));
    StageTimer timer;
    runner.run(input.data(), out.data(), shape, &timer);
    auto stage0 = std::find_if(timer.rows().begin(), timer.rows().end(),
                               [](const StageTimer::Row& r) { return r.name == "stage 0 residual_block"; });
    ASSERT_NE(stage0, timer.rows().end());
    EXPECT_GT(stage0->samples_ms.size(), 2u) << "expected several tiles";
    expect_matches_reference(out, ref, "tiled for memory");

    LowMemoryBackend tiny(1024);  // not even a 16-pixel tile
    ModelRunner hopeless(m, tiny);
    EXPECT_THROW(hopeless.run(input.data(), out.data(), shape, nullptr), Error);
}

TEST(ModelRunner, RefusesWrongChannelCount) {
    std::mt19937 rng(2);
    ModelFile m = test::small_model(rng);
    auto cpu = make_cpu_backend();
    ModelRunner runner(m, *cpu);
    std::vector<float> x(1 * 1 * 8 * 8), y(x.size());
    EXPECT_THROW(runner.run(x.data(), y.data(), {1, 1, 8, 8}, nullptr), Error);
}

}  // namespace
}  // namespace imr
