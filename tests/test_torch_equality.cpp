// The C++ forward pass against PyTorch's, without torch: for every trained
// bundled model, tests/data/torch/NAME.f32 holds the
// fp32 output torch computed (TF32 off) for weights/check_input.png on the
// GPU host (for a model that takes a noise level or JPEG quality, at sigma 25
// or quality 50: weights/train.py's CHECK_LEVELS; a model with no training
// checkpoint, such as the averaged denoise-unet: weights/torch_expected_output.py,
// torch fp32 on the CPU). The CPU backend must
// agree within one 8-bit level on at least 99.99% of the values (the trained-models issue's rule), and every value
// within 0.01 of a level.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "image/image_batch.h"
#include "image/image_io.h"
#include "model_file.h"
#include "model_runner.h"

namespace imr {
namespace {

namespace fs = std::filesystem;

std::vector<float> read_f32(const fs::path& path, size_t count) {
    std::ifstream f(path, std::ios::binary);
    std::vector<float> v(count);
    f.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(float)));
    EXPECT_EQ(size_t(f.gcount()), count * sizeof(float)) << path << ": expected " << count << " floats";
    EXPECT_EQ(f.peek(), EOF) << path << ": longer than " << count << " floats";
    return v;
}

TEST(TorchEquality, TrainedModelsMatchPyTorchWithinOneLevel) {
    const fs::path weights = IMRESTORE_SOURCE_WEIGHTS, expected_dir = IMRESTORE_TORCH_EXPECTED;
    const Image image = read_image((weights / "check_input.png").string());
    ASSERT_EQ(image.channels, 3);
    const Shape shape{1, 3, image.height, image.width};
    std::vector<float> input(shape.count());
    image_to_planes(image, 3, input.data());
    auto cpu = make_cpu_backend();
    int checked = 0;
    // Every committed torch output belongs to a bundled model: a renamed or
    // removed model cannot silently skip its check.
    for (const auto& entry : fs::directory_iterator(expected_dir)) {
        if (entry.path().extension() != ".f32") continue;
        const std::string name = entry.path().stem().string();
        SCOPED_TRACE(name);
        const fs::path model_path = weights / (name + ".h5");
        ASSERT_TRUE(fs::exists(model_path)) << entry.path() << " has no bundled model " << model_path;
        const std::vector<float> expected = read_f32(entry.path(), shape.count());
        ModelFile model = load_model_file(model_path.string());
        // A model that takes a level gets the one train.py computed the
        // torch output with (its CHECK_LEVELS).
        RunnerOptions options;
        for (const std::string& level : model.extra_inputs)
            options.extra_inputs.emplace_back(level, extra_input_value(level, level == "noise_level" ? 25 : 50));
        ModelRunner runner(std::move(model), *cpu, options);
        std::vector<float> got(shape.count(), std::nanf(""));
        runner.run(f32_nchw(input.data(), shape), f32_nchw(got.data(), shape), nullptr);
        size_t within = 0;
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            const double d = std::abs(double(got[i]) - double(expected[i])) * 255.0;
            within += d <= 1.0;
            if (!(d <= worst)) worst = d;  // NaN is the worst
        }
        std::cout << "[          ] " << name << ": largest difference " << worst << " of an 8-bit level\n";
        // The rule, and a much tighter one: two fp32 implementations
        // of the same network differ by ~1e-3 of a level (measured 0.0006).
        EXPECT_GE(double(within), 0.9999 * double(got.size()))
            << got.size() - within << " of " << got.size() << " values differ by more than one 8-bit level";
        EXPECT_LT(worst, 0.01) << "largest difference in 8-bit levels";
        ++checked;
    }
    EXPECT_GE(checked, 4) << "expected the torch outputs of the bundled trained models in " << expected_dir;
}

}  // namespace
}  // namespace imr
