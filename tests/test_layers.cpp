// Every layer kind (app/layers/, the Stage variant in app/layers/stage.h)
// through the same tests, from one example model per kind (the table below):
// the model written and loaded back, its stages described, their output
// shape and reach checked against their float64 reference, the model run by
// the CPU ModelRunner (tiled and not) against the reference chain; every
// attribute and dataset of the kind's stages removed, retyped or made
// non-finite in turn, which must be refused naming it (or, for an optional
// one, change the stage); and the ops a kind needs: refused on a backend
// without them, never called there once prepared, and every op of the list
// needed by some kind.
//
// The tests are typed over the Stage variant's alternatives, so a layer kind
// without an example does not compile. Checks particular to one kind (its
// value ranges, its messages) are in test_model_file.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model_hdf5.h"
#include "model_runner.h"
#include "test_util.h"

namespace imr {
namespace {

using test::ScratchDir;

// ------------------------------------------------------------------ one example per layer kind

template <class T>
struct Kind {};

// A 3-channel model named "example" of these stages (test::model_of).
ModelFile model_of(std::vector<Stage> stages) {
    return test::model_of("example", std::move(stages));
}

// example(Kind<T>{}, rng): a small valid model with at least one stage of
// kind T (and others where T cannot stand alone), random weights, and every
// optional attribute or dataset of T set to something other than its default
// (so that removing it shows).
ModelFile example(Kind<ResidualBlockStage>, std::mt19937& rng) {
    return model_of({test::random_residual_block(rng, 3, 8)});
}
ModelFile example(Kind<Conv2dStage>, std::mt19937& rng) {
    // relu, zero/reflect/replicate padding, an even kernel, no bias, the
    // model input added, a stride-2 convolution and one adding a 2nd input.
    return test::unet_model(rng);
}
ModelFile example(Kind<ConvTranspose2dStage>, std::mt19937& rng) {
    return test::unet_model(rng);  // its transposed conv adds its second input
}
ModelFile example(Kind<AddStage>, std::mt19937& rng) {
    return test::elementwise_model(rng);
}
ModelFile example(Kind<MulStage>, std::mt19937& rng) {
    return test::elementwise_model(rng);
}
ModelFile example(Kind<ConcatStage>, std::mt19937& rng) {
    return test::elementwise_model(rng);
}
ModelFile example(Kind<ActivationStage>, std::mt19937& rng) {
    return test::elementwise_model(rng);  // gelu, leaky_relu (slope 0.2), silu
}
ModelFile example(Kind<SimpleGateStage>, std::mt19937& rng) {
    return test::elementwise_model(rng);
}
ModelFile example(Kind<LayerNormStage>, std::mt19937& rng) {
    return test::nafnet_block_model(rng);
}
ModelFile example(Kind<DepthwiseConv2dStage>, std::mt19937& rng) {
    return test::nafnet_block_model(rng);
}
ModelFile example(Kind<ChannelAttentionStage>, std::mt19937& rng) {
    return test::nafnet_block_model(rng);
}
ModelFile example(Kind<SpaceToDepthStage>, std::mt19937& rng) {
    return test::unshuffle_model(rng, 4);
}
ModelFile example(Kind<DepthToSpaceStage>, std::mt19937& rng) {
    return test::unshuffle_model(rng, 4);  // its depth_to_space adds the model input
}

// ------------------------------------------------------------------ helpers

std::string describe(const Stage& s) {
    return std::visit([](const auto& st) { return st.describe(); }, s);
}

std::vector<double> stage_reference(const Stage& s, const ReferenceIO& io) {
    return std::visit([&](const auto& st) { return st.reference(io); }, s);
}

// The shape a stage gives for input `in`.
Shape output_shape(const Stage& s, Shape in) {
    const Geometry g = stage_geometry(s);
    return {in.n, stage_out_channels(s), in.h / g.down * g.up, in.w / g.down * g.up};
}

// Expects `raw` to be refused with a message that names `name` in quotes.
void expect_refused_naming(const RawModel& raw, const std::string& path, const std::string& name,
                           const std::string& change) {
    try {
        interpret_raw_model(raw, path);
        ADD_FAILURE() << change << ": loaded without error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos)
            << change << ": the message does not name it: " << e.what();
    }
}

// The CPU backend without one op: supports() says so, and a call of that op
// (a layer whose prepare() does not require() it) is counted.
class BackendWithout : public cpu::CpuBackend {
public:
    explicit BackendWithout(Op lacks) : CpuBackend(1), lacks_(lacks) {}
    bool supports(Op op, DType dtype, Layout layout) const override {
        return op != lacks_ && CpuBackend::supports(op, dtype, layout);
    }
#define IMR_COUNTING_OP(Enum, name, Args)          \
    void name(const Args& a) override {            \
        if (lacks_ == Op::Enum) ++calls_it_lacks_; \
        CpuBackend::name(a);                       \
    }
    IMR_FOR_EACH_OP(IMR_COUNTING_OP)
#undef IMR_COUNTING_OP
    int calls_it_lacks() const {
        return calls_it_lacks_;
    }

private:
    Op lacks_;
    int calls_it_lacks_ = 0;
};

// Prepares `stage` on the CPU backend without `op`; if that is not refused,
// runs it once on random input, which must not call `op`. Returns whether it
// was refused (with a message naming the op).
bool refused_without(const Stage& stage, Op op, std::mt19937& rng) {
    SCOPED_TRACE(std::string("a backend without ") + op_name(op));
    BackendWithout backend(op);
    std::unique_ptr<PreparedStage> prepared;
    try {
        prepared = std::visit([&](const auto& st) { return st.prepare(backend, Precision::Fp32); }, stage);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(op_name(op)), std::string::npos) << e.what();
        return true;
    }
    const Geometry g = stage_geometry(stage);
    const Shape in{1, stage_in_channels(stage), 4 * g.down, 5 * g.down};
    const Shape out = output_shape(stage, in);
    const std::vector<float> input = test::random_vector(rng, in.count(), 1.0f);
    const std::vector<float> model_input = test::random_vector(rng, out.count(), 1.0f);  // the image, if it adds it
    std::vector<float> output(out.count());
    StageIO io;
    io.inputs = {f32_nchw(input.data(), in)};
    std::vector<std::vector<float>> others;  // its other inputs, at the output's scale
    for (int k = 1; k < stage_input_range(stage).first; ++k) {
        const Shape o{out.n, stage_in_channels(stage, k), out.h, out.w};
        others.push_back(test::random_vector(rng, o.count(), 1.0f));
        io.inputs.push_back(f32_nchw(others.back().data(), o));
    }
    io.output = f32_nchw(output.data(), out), io.model_input = f32_nchw(model_input.data(), out);
    std::vector<char> scratch(prepared->scratch_bytes(in, TensorType{}));
    io.scratch = scratch.data();
    prepared->run(backend, io);
    EXPECT_EQ(backend.calls_it_lacks(), 0)
        << "prepared on a backend without " << op_name(op) << ", then called it: does its prepare() require() it?";
    return false;
}

// ------------------------------------------------------------------ the tests, for every kind

template <class T>
class LayerKind : public ::testing::Test {
protected:
    // The stages of kind T in the example.
    std::vector<size_t> of_kind() const {
        std::vector<size_t> at;
        for (size_t i = 0; i < model_.stages.size(); ++i)
            if (std::holds_alternative<T>(model_.stages[i])) at.push_back(i);
        return at;
    }
    std::string where(size_t i) const { return "stage " + std::to_string(i) + " (" + T::kOp + ")"; }
    ModelGraph graph() const { return resolve_graph(model_, "example"); }
    // The example written to path_ and read back as the layers see it.
    RawModel written() const {
        write_model_file(path_, model_);
        return read_model_hdf5(path_);
    }

    unsigned seed_ = 0;
    std::mt19937 rng_ = test::fresh_rng(&seed_);
    const ::testing::ScopedTrace trace_{__FILE__, __LINE__, "seed " + std::to_string(seed_)};
    const ModelFile model_ = example(Kind<T>{}, rng_);
    const ScratchDir dir_{"layer"};
    const std::string path_ = dir_ / "m.h5";
};

template <class V>
struct AlternativesOf;
template <class... T>
struct AlternativesOf<std::variant<T...>> {
    using Types = ::testing::Types<T...>;
};
struct KindName {
    template <class T>
    static std::string GetName(int) {
        return T::kOp;
    }
};
TYPED_TEST_SUITE(LayerKind, AlternativesOf<Stage>::Types, KindName);

TYPED_TEST(LayerKind, ExampleIsAValidModelWithTheKind) {
    EXPECT_NO_THROW(validate_model(this->model_, "example"));
    EXPECT_FALSE(this->of_kind().empty()) << "the example has no " << TypeParam::kOp << " stage";
}

TYPED_TEST(LayerKind, WritesAndLoadsBackTheSameStages) {
    const ModelFile& m = this->model_;
    write_model_file(this->path_, m);
    const ModelFile back = load_model_file(this->path_);
    EXPECT_EQ(back.format_version, m.min_format_version()) << "written in the oldest format that holds it";
    ASSERT_EQ(back.stages.size(), m.stages.size());
    for (size_t i = 0; i < m.stages.size(); ++i) {
        SCOPED_TRACE(this->where(i));
        EXPECT_EQ(back.stages[i].index(), m.stages[i].index());
        EXPECT_EQ(describe(back.stages[i]), describe(m.stages[i]));
    }
    EXPECT_EQ(back.parameter_count(), m.parameter_count());
    EXPECT_EQ(back.receptive_field(), m.receptive_field());
    EXPECT_EQ(back.radius(), m.radius());
    // And computes the same, to the last bit of the float64 reference.
    const Shape shape{1, 3, 12, 10};
    const std::vector<float> input = test::random_vector(this->rng_, shape.count(), 0.3f);
    EXPECT_EQ(test::reference_model(back, input, shape), test::reference_model(m, input, shape));
}

TYPED_TEST(LayerKind, DescribesEachStageInOneLineThatStartsWithItsOp) {
    const std::string text = describe_model(this->model_);
    for (size_t i : this->of_kind()) {
        const std::string line = describe(this->model_.stages[i]);
        EXPECT_EQ(line.rfind(TypeParam::kOp, 0), 0u) << line;
        EXPECT_EQ(line.find('\n'), std::string::npos) << line;
        EXPECT_NE(text.find(line), std::string::npos) << text;
    }
}

// The reference's output has the shape channels_out() and geometry() say, and
// changing one input pixel changes only output pixels within geometry()'s
// radius and window of it (what the runner's tiling relies on).
TYPED_TEST(LayerKind, OutputShapeAndReachAreWhatItsGeometrySays) {
    for (size_t i : this->of_kind()) {
        SCOPED_TRACE(this->where(i));
        const Stage& s = this->model_.stages[i];
        const Geometry g = stage_geometry(s);
        const int side = 4 * g.down * g.window;  // room for the whole window around the middle
        const Shape in{2, stage_in_channels(s), side, side + g.down};
        const Shape out = output_shape(s, in);
        std::vector<float> x = test::random_vector(this->rng_, in.count(), 1.0f);
        const std::vector<float> image = test::random_vector(this->rng_, out.count(), 1.0f);
        ReferenceIO io;
        io.inputs = {f32_nchw(x.data(), in)}, io.model_input = f32_nchw(image.data(), out);
        // Its other inputs (at the output's scale), as many as it reads in the example.
        std::vector<std::vector<float>> others;
        for (size_t k = 1; k < this->graph().stage_inputs[i].size(); ++k) {
            const Shape o{out.n, stage_in_channels(s, int(k)), out.h, out.w};
            others.push_back(test::random_vector(this->rng_, o.count(), 1.0f));
            io.inputs.push_back(f32_nchw(others.back().data(), o));
        }
        const std::vector<double> before = stage_reference(s, io);
        ASSERT_EQ(before.size(), out.count()) << "expected " << out.str();

        const int y0 = in.h / 2, x0 = in.w / 2;
        x[((size_t(1) * in.c + in.c - 1) * in.h + y0) * in.w + x0] += 1.0f;  // image 1, last channel
        const std::vector<double> after = stage_reference(s, io);
        int first_row = out.h, last_row = -1, first_col = out.w, last_col = -1;
        for (int n = 0; n < out.n; ++n)
            for (int c = 0; c < out.c; ++c)
                for (int y = 0; y < out.h; ++y)
                    for (int xx = 0; xx < out.w; ++xx) {
                        const size_t e = ((size_t(n) * out.c + c) * out.h + y) * out.w + xx;
                        if (before[e] == after[e]) continue;
                        ASSERT_EQ(n, 1) << "another image changed";
                        first_row = std::min(first_row, y), last_row = std::max(last_row, y);
                        first_col = std::min(first_col, xx), last_col = std::max(last_col, xx);
                    }
        ASSERT_GE(last_row, 0) << "no output depends on the input";
        // In input pixels, output pixel Y covers [Y * down / up, (Y + 1) * down / up);
        // a block of `down` that holds p may start or end down - 1 beyond it.
        auto near = [&](int first, int last, int p) {
            const int lo = first * g.down / g.up, hi = ((last + 1) * g.down + g.up - 1) / g.up - 1;
            return lo >= p - g.radius - (g.down - 1) && hi <= p + g.radius + (g.down - 1);
        };
        EXPECT_TRUE(near(first_row, last_row, y0)) << "rows " << first_row << ".." << last_row << " changed";
        EXPECT_TRUE(near(first_col, last_col, x0)) << "columns " << first_col << ".." << last_col << " changed";
        EXPECT_LE((last_row - first_row + 1) * g.down, g.window * g.up) << "rows beyond the window changed";
        EXPECT_LE((last_col - first_col + 1) * g.down, g.window * g.up) << "columns beyond the window changed";
    }
}

TYPED_TEST(LayerKind, RunsOnTheCpuAsItsReferenceSaysTiledOrNot) {
    auto cpu = make_cpu_backend();
    ModelRunner runner(this->model_, *cpu), tiles(this->model_, *cpu, test::tiled(16));  // many tiles, their edges
    for (Shape shape : {Shape{2, 3, 45, 67}, Shape{1, 3, 1, 1}}) {
        SCOPED_TRACE(shape.str());
        const std::vector<float> input = test::random_vector(this->rng_, shape.count(), 0.3f);
        const std::vector<double> ref = test::reference_model(this->model_, input, shape);
        std::vector<float> whole(shape.count(), std::nanf("")), tiled(shape.count(), std::nanf(""));
        runner.run(f32_nchw(input.data(), shape), f32_nchw(whole.data(), shape), nullptr);
        tiles.run(f32_nchw(input.data(), shape), f32_nchw(tiled.data(), shape), nullptr);
        test::expect_matches_reference(whole, ref, "untiled");
        test::expect_matches_reference(tiled, ref, "tiled");
    }
}

// Every attribute and dataset of the kind's stages (as written), taken away in
// turn: refused with a message naming it, or, where it is optional, loaded as a
// different stage (the example sets every optional one off its default, so an
// entry that is written but never read fails here).
TYPED_TEST(LayerKind, RefusesEachOfItsEntriesMissingOrReadsItAsOptional) {
    const std::string& path = this->path_;
    const RawModel raw = this->written();
    for (size_t i : this->of_kind()) {
        SCOPED_TRACE(this->where(i));
        for (const bool dataset : {false, true}) {
            const auto& entries = dataset ? raw.stages[i].datasets : raw.stages[i].attributes;
            for (const auto& entry : entries) {
                const std::string& name = entry.first;
                // The wiring is the model's, not the kind's (test_model_file.cpp's graph tests).
                if (!dataset && (name == "name" || name == "inputs")) continue;
                const std::string change = (dataset ? "without dataset '" : "without attribute '") + name + "'";
                RawModel broken = raw;
                (dataset ? broken.stages[i].datasets : broken.stages[i].attributes).erase(name);
                try {
                    const ModelFile m = interpret_raw_model(broken, path);
                    EXPECT_NE(describe(m.stages[i]), describe(this->model_.stages[i]))
                        << change << ": loaded as the same stage; is it read at all?";
                } catch (const Error& e) {
                    // Without its stride a convolution keeps the scale, and
                    // the model is refused where the scales then disagree.
                    const bool scale =
                        name == "stride" && std::string(e.what()).find("resolution") != std::string::npos;
                    EXPECT_TRUE(scale || std::string(e.what()).find("'" + name + "'") != std::string::npos)
                        << change << ": the message does not name it: " << e.what();
                }
            }
        }
    }
}

// Every attribute of another type (a string for a number, a number for a
// string), every float attribute not finite, every dataset of another rank or
// holding a NaN: refused with a message naming it.
TYPED_TEST(LayerKind, RefusesEachOfItsEntriesMistypedOrNotFinite) {
    const std::string& path = this->path_;
    const RawModel raw = this->written();
    for (size_t i : this->of_kind()) {
        SCOPED_TRACE(this->where(i));
        for (const auto& [name, entry] : raw.stages[i].attributes) {
            RawModel broken = raw;
            RawEntry& e = broken.stages[i].attributes[name];
            if (e.kind == RawEntry::Kind::String) {
                e.kind = RawEntry::Kind::Int, e.integer = 1;
                expect_refused_naming(broken, path, name, "attribute '" + name + "' an integer");
            } else {
                const RawEntry::Kind was = e.kind;
                e.kind = RawEntry::Kind::String, e.text = "1";
                expect_refused_naming(broken, path, name, "attribute '" + name + "' a string");
                if (was == RawEntry::Kind::Float) {
                    e.kind = RawEntry::Kind::Float, e.real = std::nan("");
                    expect_refused_naming(broken, path, name, "attribute '" + name + "' NaN");
                }
            }
        }
        for (const auto& [name, entry] : raw.stages[i].datasets) {
            RawModel broken = raw;
            RawEntry& e = broken.stages[i].datasets[name];
            e.shape.push_back(1);
            expect_refused_naming(broken, path, name, "dataset '" + name + "' of one more dimension");
            e.shape.pop_back();
            e.data.back() = std::nanf("");
            expect_refused_naming(broken, path, name, "dataset '" + name + "' with a NaN");
        }
    }
}

TYPED_TEST(LayerKind, IsRefusedInAFileOfAnOlderFormatThanItNeeds) {
    int needs = 1;
    for (size_t i : this->of_kind())
        needs = std::max(needs, std::get<TypeParam>(this->model_.stages[i]).min_format_version());
    if (needs == 1) GTEST_SKIP() << TypeParam::kOp << " is in every format";
    RawModel raw = this->written();
    raw.root.attributes["format_version"].integer = needs - 1;
    try {
        interpret_raw_model(raw, this->path_);
        ADD_FAILURE() << "loaded from a file that says format_version " << needs - 1;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("format_version " + std::to_string(needs)), std::string::npos) << e.what();
    }
}

TYPED_TEST(LayerKind, IsRefusedOnABackendWithoutItsOpsAndNeverCallsThem) {
    for (size_t i : this->of_kind()) {
        SCOPED_TRACE(this->where(i));
        for (size_t op = 0; op < kOpCount; ++op) refused_without(this->model_.stages[i], Op(op), this->rng_);
    }
}

// ------------------------------------------------------------------ across the kinds

// (kind's index in Stage, its example) for every kind.
template <size_t... I>
std::vector<std::pair<size_t, ModelFile>> every_example(std::mt19937& rng, std::index_sequence<I...>) {
    return {{I, example(Kind<std::variant_alternative_t<I, Stage>>{}, rng)}...};
}

// An op no layer kind needs is dead code, or a layer's prepare() that does not
// require() it (the test above then fails for that kind too).
TEST(LayerKinds, EveryOpIsNeededBySomeKind) {
    unsigned seed;
    std::mt19937 rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::array<bool, kOpCount> needed{};
    for (const auto& [kind, model] : every_example(rng, std::make_index_sequence<std::variant_size_v<Stage>>{}))
        for (const Stage& s : model.stages)
            if (s.index() == kind)
                for (size_t op = 0; op < kOpCount; ++op)
                    if (refused_without(s, Op(op), rng)) needed[op] = true;
    // convert is placed by the runner between stages of different types, and
    // image_planes at a pass's ends when it is handed samples
    // (ModelRunner::run_samples), not by a layer.
    needed[size_t(Op::Convert)] = needed[size_t(Op::ImagePlanes)] = true;
    for (size_t op = 0; op < kOpCount; ++op) EXPECT_TRUE(needed[op]) << "no layer kind needs op " << op_name(Op(op));
}

}  // namespace
}  // namespace imr
