// Half precision in the runner, tested on the CPU: where the runner places
// converts (on a backend that has conv2d in f16 NHWC8, emulated here through
// the CPU's fp32 kernel), which precision --precision auto takes from the
// model file's validated_precisions, the refusal of half precisions on the
// CPU, and the strict parsing of that attribute. The tensor-core kernels
// themselves are tested on the GPU (test_ops, Gpu.* in test_cli).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model_file.h"
#include "model_runner.h"
#include "runner_options.h"
#include "test_util.h"

namespace imr {
namespace {

// The CPU backend with conv2d in f16 NHWC8 as well: computed by converting
// its tensors to f32 NCHW, the CPU's fp32 kernel and a convert back (so the
// values are those of an f16 network). Like the CUDA tensor-core rows it may
// also read the f32 NCHW batch and write f32 NCHW (`ends`); prepare says
// NotApplicable where it does not. Counts the converts the runner queues.
class HalfConvBackend : public cpu::CpuBackend {
public:
    explicit HalfConvBackend(bool ends) : CpuBackend(1), ends_(ends) {}
    bool supports(Op op, DType dtype, Layout layout) const override {
        if (op == Op::Conv2d && dtype == DType::F16) return layout == Layout::NHWC8;
        return CpuBackend::supports(op, dtype, layout);
    }
    using CpuBackend::prepare;
    std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a) override {
        const TensorType f32{};
        if (a.input.type() == f32 && a.output.type() == f32) return CpuBackend::prepare(a);
        if (!ends_ && (a.input.type() == f32 || a.output.type() == f32))
            throw NotApplicable("no half-precision kernel takes f32 at its ends here");
        return nullptr;
    }
    void conv2d(const Conv2dArgs& a) override {
        const TensorType f32{};
        if (a.input.type() == f32 && a.output.type() == f32) return CpuBackend::conv2d(a);
        check_args(a);
        if (!ends_ && (a.input.type() == f32 || a.output.type() == f32)) throw Error("f32 at an end: not supported");
        std::vector<float> in, out(a.out_shape().count()), res;
        Conv2dArgs f = a;
        f.prepared = nullptr;
        f.input = as_f32(a.input, in), f.output = f32_nchw(out.data(), a.out_shape());
        if (a.residual) f.residual = as_f32(a.residual, res);
        CpuBackend::conv2d(f);
        ConvertArgs c;
        c.input = f.output, c.output = a.output;
        CpuBackend::convert(c);
    }
    void convert(const ConvertArgs& a) override {
        ++runner_converts;
        CpuBackend::convert(a);
    }
    int runner_converts = 0;

private:
    Tensor as_f32(const Tensor& t, std::vector<float>& buf) {
        buf.resize(t.shape.count());
        ConvertArgs c;
        c.input = t, c.output = f32_nchw(buf.data(), t.shape);
        CpuBackend::convert(c);
        return c.output;
    }
    bool ends_;
};

// conv 3->8 relu, conv 8->8 relu, conv 8->3 + the model input.
ModelFile three_convs(std::mt19937& rng) {
    Conv2dStage a = test::random_conv2d(rng, 3, 8, 3, PadMode::Replicate, true);
    Conv2dStage b = test::random_conv2d(rng, 8, 8, 3, PadMode::Zero, true);
    Conv2dStage c = test::random_conv2d(rng, 8, 3, 1, PadMode::Zero, true);
    a.activation = b.activation = Activation::ReLU;
    c.add_model_input = true;
    return test::model_of("three-convs", {a, b, c});
}

std::vector<float> run_model(const ModelFile& m, Backend& backend, Precision p, const std::vector<float>& input,
                             Shape shape) {
    RunnerOptions options;
    options.precision = p;
    ModelRunner runner(m, backend, options);
    EXPECT_EQ(runner.precision(), p);
    std::vector<float> out(shape.count(), std::nanf(""));
    runner.run(f32_nchw(input.data(), shape), f32_nchw(out.data(), shape), nullptr);
    return out;
}

// Where the first conv reads the f32 batch and the last writes f32 (and adds
// the f32 model input), an f16 run needs no convert at all; where they do
// not, two: the input (converted once, for the first stage and for the last,
// which adds it) and the output.
// Either way the result is the f16 network's (within f16's rounding of fp32).
TEST(HalfPrecisionRunner, PlacesConvertsOnlyWhereNoStageTakesTheType) {
    std::mt19937 rng(7);
    const ModelFile m = three_convs(rng);
    const Shape shape{2, 3, 13, 17};
    const std::vector<float> input = test::random_vector(rng, shape.count(), 1.0f);
    auto cpu = make_cpu_backend(1);
    const std::vector<float> fp32 = run_model(m, *cpu, Precision::Fp32, input, shape);
    for (bool ends : {true, false}) {
        SCOPED_TRACE(ends ? "f32 at the ends" : "half only");
        HalfConvBackend half(ends);
        const std::vector<float> out = run_model(m, half, Precision::Fp16, input, shape);
        EXPECT_EQ(half.runner_converts, ends ? 0 : 2);
        double scale = 0, err = 0;
        for (size_t i = 0; i < out.size(); ++i)
            scale = std::max(scale, double(std::abs(fp32[i]))), err = std::max(err, double(std::abs(out[i] - fp32[i])));
        EXPECT_GT(err, 0) << "computed in fp32 after all";
        EXPECT_LE(err, 8 * unit_roundoff(DType::F16) * scale);
    }
}

// A half precision no stage computes in is reported as fp32, what runs: a
// model of residual blocks only (f32-only op), and one conv whose f32 ends
// both neighbours take (it reads and writes f32, so it runs the fp32 kernel).
TEST(HalfPrecisionRunner, APrecisionNoStageComputesInIsReportedAsFp32) {
    std::mt19937 rng(9);
    HalfConvBackend half(true);
    RunnerOptions options;
    options.precision = Precision::Fp16;
    const ModelFile blocks = test::model_of("blocks", {test::random_residual_block(rng, 3, 4)});
    EXPECT_EQ(ModelRunner(blocks, half, options).precision(), Precision::Fp32);
    Conv2dStage lone = test::random_conv2d(rng, 3, 3, 3, PadMode::Zero, true);
    const ModelFile one_conv = test::model_of("one-conv", {lone});
    EXPECT_EQ(ModelRunner(one_conv, half, options).precision(), Precision::Fp32);
    std::mt19937 rng3(7);
    EXPECT_EQ(ModelRunner(three_convs(rng3), half, options).precision(), Precision::Fp16);
}

TEST(HalfPrecisionRunner, AutoTakesTheFirstValidatedPrecisionTheBackendHas) {
    std::mt19937 rng(8);
    ModelFile m = three_convs(rng);
    HalfConvBackend half(true);  // f16 only
    auto cpu = make_cpu_backend(1);
    EXPECT_EQ(resolve_precision(Precision::Auto, m, half), Precision::Fp32) << "none recorded";
    m.validated_precisions = {"fp16"};
    EXPECT_EQ(resolve_precision(Precision::Auto, m, half), Precision::Fp16);
    EXPECT_EQ(resolve_precision(Precision::Auto, m, *cpu), Precision::Fp32) << "the CPU has no half kernels";
    m.validated_precisions = {"bf16", "fp16"};
    EXPECT_EQ(resolve_precision(Precision::Auto, m, half), Precision::Fp16) << "bf16 first, but no bf16 kernels";
    m.validated_precisions = {"bf16"};
    EXPECT_EQ(resolve_precision(Precision::Auto, m, half), Precision::Fp32);
}

TEST(HalfPrecisionRunner, HalfPrecisionsAreRefusedOnTheCpu) {
    std::mt19937 rng(9);
    const ModelFile m = three_convs(rng);
    auto cpu = make_cpu_backend(1);
    for (Precision p : {Precision::Fp16, Precision::Bf16}) {
        try {
            resolve_precision(p, m, *cpu);
            ADD_FAILURE() << precision_name(p) << " accepted on the CPU";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("--precision ") + precision_name(p) + ": "),
                      std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("the CPU computes in fp32 only"), std::string::npos) << e.what();
        }
    }
}

TEST(ValidatedPrecisions, ParsesTheListStrictly) {
    EXPECT_EQ(parse_validated_precisions("fp16", "m.h5"), std::vector<std::string>{"fp16"});
    EXPECT_EQ(parse_validated_precisions("bf16,fp16", "m.h5"), (std::vector<std::string>{"bf16", "fp16"}));
    for (const char* bad :
         {"", "fp32", "FP16", "fp16,", ",fp16", "fp16, bf16", " fp16", "fp16,fp16", "tf32,fp16", "fp16;bf16"}) {
        SCOPED_TRACE(std::string("'") + bad + "'");
        try {
            parse_validated_precisions(bad, "m.h5");
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).rfind("m.h5: attribute 'validated_precisions'", 0), 0u) << e.what();
        }
    }
}

// Through a file: written and read back; a bad value is refused at load with
// the file's name (the attribute arrives from the sandboxed reader as a
// plain string).
TEST(ValidatedPrecisions, AreReadFromTheModelFileAndBadOnesRefused) {
    test::ScratchDir dir("precision");
    std::mt19937 rng(10);
    ModelFile m = three_convs(rng);
    m.validated_precisions = {"fp16", "bf16"};
    m.precision_validation = "measured on 4 photos";
    const std::string good = dir / "good.h5";
    write_model_file(good, m);
    const ModelFile back = load_model_file(good);
    EXPECT_EQ(back.validated_precisions, m.validated_precisions);
    EXPECT_EQ(back.precision_validation, m.precision_validation);

    const std::string bad = dir / "bad.h5";
    {
        test::RawH5 f(bad);
        f.header();
        f.str_attr(f.root(), "validated_precisions", "fp16,fp64");
        hid_t stages = f.group(f.root(), "stages");
        f.conv2d(stages, "0", 3, 3);
    }
    try {
        load_model_file(bad);
        ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(bad + ": attribute 'validated_precisions'"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("fp16,fp64"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace imr
