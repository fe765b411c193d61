// Helpers shared by the app tests: a scratch folder, random models, a
// model's float64 reference output, and a raw HDF5 writer that can write what
// imr::write_model_file refuses to (for the bad-model tests).
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model_file.h"
#include "runner_options.h"

namespace imr::test {

// A fresh folder under the system temp dir, removed with the object.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& tag) {
        static int counter = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("imrestore-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

inline std::vector<float> random_vector(std::mt19937& rng, size_t n, float scale) {
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// A generator seeded from std::random_device, or from IMRESTORE_TEST_SEED
// when set (as the op tests take it); the seed goes to *seed_out (print it,
// so a failure can be reproduced).
inline std::mt19937 fresh_rng(unsigned* seed_out) {
    const char* env = std::getenv("IMRESTORE_TEST_SEED");
    const unsigned seed = env ? unsigned(std::strtoul(env, nullptr, 10)) : std::random_device{}();
    *seed_out = seed;
    return std::mt19937(seed);
}

inline ResidualBlockStage random_residual_block(std::mt19937& rng, int channels, int hidden, float scale = 0.05f) {
    ResidualBlockStage rb;
    rb.channels = channels, rb.hidden = hidden;
    rb.conv_in_weight = random_vector(rng, size_t(hidden) * channels * 9, scale);
    rb.conv_in_bias = random_vector(rng, hidden, scale);
    rb.conv_out_weight = random_vector(rng, size_t(channels) * hidden * 9, scale);
    rb.conv_out_bias = random_vector(rng, channels, scale);
    return rb;
}

inline Conv2dStage random_conv2d(std::mt19937& rng, int in, int out, int k, PadMode pad, bool bias) {
    Conv2dStage c;
    c.in_channels = in, c.out_channels = out, c.kernel = k, c.padding = pad;
    c.weight = random_vector(rng, size_t(out) * in * k * k, 1.0f / float(k * k * in));
    if (bias) c.bias = random_vector(rng, out, 0.05f);
    return c;
}

// A 3-channel test model of these stages, in the oldest format that holds them.
inline ModelFile model_of(const std::string& name, std::vector<Stage> stages) {
    ModelFile m;
    m.name = name;
    m.task = "test";
    m.description = "random weights for tests";
    m.provenance = "tests/test_util.h";
    m.channels = 3;
    m.stages = std::move(stages);
    m.format_version = m.min_format_version();
    return m;
}

// The unshuffle CNN of the trained models, small: space_to_depth(2) -> conv
// 12->c relu -> conv c->c relu -> conv c->12 -> depth_to_space(2) + input.
inline ModelFile unshuffle_model(std::mt19937& rng, int c = 8) {
    SpaceToDepthStage s2d;
    s2d.in_channels = 3, s2d.factor = 2;
    Conv2dStage first = random_conv2d(rng, 12, c, 3, PadMode::Zero, true);
    first.activation = Activation::ReLU;
    Conv2dStage mid = random_conv2d(rng, c, c, 3, PadMode::Zero, true);
    mid.activation = Activation::ReLU;
    Conv2dStage last = random_conv2d(rng, c, 12, 3, PadMode::Zero, true);
    DepthToSpaceStage d2s;
    d2s.in_channels = 12, d2s.factor = 2, d2s.add_model_input = true;
    return model_of("test-unshuffle", {s2d, first, mid, last, d2s});  // format v2
}

// A small U-Net (format v3): conv 3->5 relu "a"; a 2x2 stride-2 conv down;
// a 2x2 transposed conv back up plus "a"; a 3x3 conv plus "a" again; a
// 4x4 conv to 3 channels plus the model input. Every stage reads something
// other than the stage before or adds a second input.
inline ModelFile unet_model(std::mt19937& rng) {
    Conv2dStage a = random_conv2d(rng, 3, 5, 3, PadMode::Zero, true);
    a.activation = Activation::ReLU;
    Conv2dStage down = random_conv2d(rng, 5, 8, 2, PadMode::Zero, true);
    down.stride = 2;
    down.activation = Activation::ReLU;
    ConvTranspose2dStage up;
    up.in_channels = 8, up.out_channels = 5, up.factor = 2, up.adds_input = true;
    up.weight = random_vector(rng, size_t(8) * 5 * 4, 1.0f / 8.0f);
    up.bias = random_vector(rng, 5, 0.05f);
    Conv2dStage res = random_conv2d(rng, 5, 5, 3, PadMode::Zero, false);
    res.adds_input = true;
    Conv2dStage last = random_conv2d(rng, 5, 3, 4, PadMode::Replicate, true);
    last.add_model_input = true;
    ModelFile m = model_of("test-unet", {a, down, up, res, last});
    m.links = {{"a", {"input"}}, {"down", {"a"}}, {"up", {"down", "a"}}, {"", {"up", "a"}}, {"out", {"3"}}};
    m.output = "out";
    m.format_version = m.min_format_version();
    return m;
}

// A graph (format v3) of the element-wise kinds: two activations of one
// conv multiplied, gated, joined with the image, mixed by a 1x1 conv, added
// to the first conv, silu, and a conv back to the image plus the input.
inline ModelFile elementwise_model(std::mt19937& rng) {
    Conv2dStage a = random_conv2d(rng, 3, 8, 3, PadMode::Zero, true);
    ActivationStage gelu, leaky, silu;
    gelu.channels = leaky.channels = silu.channels = 8;
    gelu.function = UnaryFunction::GELU, leaky.function = UnaryFunction::LeakyReLU, silu.function = UnaryFunction::SiLU;
    leaky.slope = 0.2f;
    MulStage mul;
    mul.channels = 8;
    SimpleGateStage gate;
    gate.channels = 8;
    ConcatStage cat;
    cat.channels = {4, 3};
    Conv2dStage mix = random_conv2d(rng, 7, 8, 1, PadMode::Zero, true);
    AddStage add;
    add.channels = 8;
    Conv2dStage last = random_conv2d(rng, 8, 3, 3, PadMode::Replicate, true);
    last.add_model_input = true;
    ModelFile m = model_of("test-elementwise", {a, gelu, leaky, mul, gate, cat, mix, add, silu, last});
    m.links = {{"a", {}},    {"g", {"a"}},        {"l", {"a"}},  {"m", {"g", "l"}}, {"s", {"m"}}, {"c", {"s", "input"}},
               {"b", {"c"}}, {"sum", {"b", "a"}}, {"", {"sum"}}, {"", {}}};
    m.format_version = m.min_format_version();
    return m;
}

// A NAFNet block (format v3), small: layer norm, 1x1 conv to 2c, depthwise
// 3x3, simple gate, channel attention over a local window, 1x1 conv, plus
// the block's input; then a conv back to the image plus the model input.
inline ModelFile nafnet_block_model(std::mt19937& rng, int c = 6) {
    Conv2dStage intro = random_conv2d(rng, 3, c, 3, PadMode::Zero, true);
    LayerNormStage norm;
    norm.channels = c, norm.eps = 1e-5f;
    norm.weight = random_vector(rng, size_t(c), 1.0f), norm.bias = random_vector(rng, size_t(c), 0.1f);
    Conv2dStage expand = random_conv2d(rng, c, 2 * c, 1, PadMode::Zero, true);
    DepthwiseConv2dStage dw;
    dw.channels = 2 * c, dw.kernel = 3, dw.padding = PadMode::Zero;
    dw.weight = random_vector(rng, size_t(2 * c) * 9, 1.0f / 3.0f), dw.bias = random_vector(rng, size_t(2 * c), 0.05f);
    SimpleGateStage gate;
    gate.channels = 2 * c;
    ChannelAttentionStage att;
    att.channels = c, att.window = 6;  // even: 2 above/left, 3 below/right
    att.weight = random_vector(rng, size_t(c) * c, 1.0f / float(c)), att.bias = random_vector(rng, size_t(c), 0.5f);
    Conv2dStage project = random_conv2d(rng, c, c, 1, PadMode::Zero, false);
    project.adds_input = true;
    Conv2dStage last = random_conv2d(rng, c, 3, 3, PadMode::Replicate, true);
    last.add_model_input = true;
    ModelFile m = model_of("test-nafnet", {intro, norm, expand, dw, gate, att, project, last});
    m.links = {{"intro", {}}, {}, {}, {}, {}, {}, {"", {"5", "intro"}}, {}};
    m.format_version = m.min_format_version();
    return m;
}

inline ModelFile small_model(std::mt19937& rng) {
    // Braced lists are evaluated left to right: the weights are drawn in this order.
    return model_of("test-model",
                    {random_residual_block(rng, 3, 8), random_conv2d(rng, 3, 5, 4, PadMode::Reflect, true),
                     random_conv2d(rng, 5, 3, 3, PadMode::Replicate, false), random_residual_block(rng, 3, 32)});
}

// The model as a chain of float64 reference ops (each layer's own reference,
// on its op's in kernels/ops/), with the replicate padding to the size multiple done
// here independently of the runner.
// Runner settings that tile every image into pieces of at most `side` pixels a side.
inline RunnerOptions tiled(int side) {
    RunnerOptions o;
    o.max_tile = side;
    return o;
}

// The value the tests give each extra input a model may take (give the
// runners the same through RunnerOptions::extra_inputs).
inline float extra_input_value(const std::string& name) {
    return name == "noise_level" ? 25.0f / 255.0f : 0.4f;
}

// `input` of `shape` padded to `padded` (as large or larger), repeating the
// last row and column: the padding to a model's size multiple.
inline std::vector<float> replicate_padded(const std::vector<float>& input, Shape shape, Shape padded) {
    std::vector<float> image(padded.count());
    for (int p = 0; p < shape.n * shape.c; ++p)
        for (int y = 0; y < padded.h; ++y)
            for (int x = 0; x < padded.w; ++x)
                image[(size_t(p) * padded.h + y) * padded.w + x] =
                    input[(size_t(p) * shape.h + std::min(y, shape.h - 1)) * shape.w + std::min(x, shape.w - 1)];
    return image;
}

inline std::vector<double> reference_model(const ModelFile& m, const std::vector<float>& input, Shape shape) {
    const int mult = m.size_multiple();
    Shape padded = shape;
    padded.h = (shape.h + mult - 1) / mult * mult, padded.w = (shape.w + mult - 1) / mult * mult;
    const std::vector<float> image = replicate_padded(input, shape, padded);
    // The graph's tensors in float (what the backends hold between stages),
    // each stage's float64 reference on its inputs.
    const ModelGraph g = resolve_graph(m, "reference");
    std::vector<std::vector<float>> values(g.tensors.size());
    std::vector<Shape> shapes(g.tensors.size());
    values[0] = image, shapes[0] = padded;
    const size_t plane = size_t(padded.n) * padded.h * padded.w;
    for (int e = 1; e < g.first_stage_tensor; ++e) {
        shapes[size_t(e)] = {padded.n, 1, padded.h, padded.w};
        values[size_t(e)].assign(plane, extra_input_value(m.extra_inputs[size_t(e - 1)]));
    }
    std::vector<double> y;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& s = m.stages[i];
        ReferenceIO io;
        for (int t : g.stage_inputs[i]) io.inputs.push_back(f32_nchw(values[size_t(t)].data(), shapes[size_t(t)]));
        io.model_input = f32_nchw(image.data(), padded);
        y = std::visit([&](const auto& st) { return st.reference(io); }, s);
        const int t = g.stage_tensor(i), scale = g.tensors[size_t(t)].scale;
        shapes[size_t(t)] = {padded.n, stage_out_channels(s), padded.h / scale, padded.w / scale};
        values[size_t(t)].assign(y.begin(), y.end());  // the next stage sees fp32, as the backends do
    }
    y.assign(values[size_t(g.output)].begin(), values[size_t(g.output)].end());
    std::vector<double> out(shape.count());
    for (int p = 0; p < shape.n * shape.c; ++p)
        for (int yy = 0; yy < shape.h; ++yy)
            for (int xx = 0; xx < shape.w; ++xx)
                out[(size_t(p) * shape.h + yy) * shape.w + xx] = y[(size_t(p) * padded.h + yy) * padded.w + xx];
    return out;
}

// Every element of `out` against the float64 chain. fp32 through the 4 stages
// of test::small_model, reductions of at most 8*9=72 terms: 1e-5 of the
// output scale is far above the rounding and far below any indexing error.
inline void expect_matches_reference(const std::vector<float>& out, const std::vector<double>& ref, const char* what) {
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    ASSERT_EQ(out.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5 * scale) << what << ", element " << i;
}

// Raw HDF5 writing, no validation.
class RawH5 {
public:
    explicit RawH5(const std::string& path) {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    }
    ~RawH5() {
        for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) H5Gclose(*it);
        H5Fclose(file_);
    }
    hid_t root() const { return file_; }
    hid_t group(hid_t parent, const std::string& name) {
        hid_t g = H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        groups_.push_back(g);
        return g;
    }
    static void str_attr(hid_t obj, const char* name, const std::string& value) {
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, H5T_VARIABLE);
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
        const char* data = value.c_str();
        H5Awrite(attr, type, &data);
        H5Aclose(attr), H5Sclose(space), H5Tclose(type);
    }
    static void int_attr(hid_t obj, const char* name, long long value) {
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t attr = H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, H5T_NATIVE_LLONG, &value);
        H5Aclose(attr), H5Sclose(space);
    }
    static void float_attr(hid_t obj, const char* name, double value, hid_t file_type = H5T_IEEE_F64LE) {
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, H5T_NATIVE_DOUBLE, &value);
        H5Aclose(attr), H5Sclose(space);
    }
    // Writes `dims` of the given file type, filled with `fill` (NaN works).
    static void dataset(hid_t obj, const char* name, std::vector<hsize_t> dims, hid_t file_type = H5T_IEEE_F32LE,
                        double fill = 0.01) {
        size_t n = 1;
        for (hsize_t d : dims) n *= d;
        std::vector<double> data(n, fill);
        hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
        hid_t dset = H5Dcreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        H5Dclose(dset), H5Sclose(space);
    }
    // The root attributes of a valid model.
    void header(int channels = 3, long long version = 1) {
        str_attr(file_, "format", "imrestore-model");
        int_attr(file_, "format_version", version);
        str_attr(file_, "name", "raw");
        str_attr(file_, "task", "test");
        str_attr(file_, "description", "written by RawH5");
        str_attr(file_, "provenance", "tests");
        int_attr(file_, "channels", channels);
    }
    // A valid residual_block stage group under `stages`.
    void residual_block(hid_t stages, const std::string& name, int c, int h) {
        hid_t g = group(stages, name);
        str_attr(g, "op", "residual_block");
        dataset(g, "conv_in_weight", {hsize_t(h), hsize_t(c), 3, 3});
        dataset(g, "conv_in_bias", {hsize_t(h)});
        dataset(g, "conv_out_weight", {hsize_t(c), hsize_t(h), 3, 3});
        dataset(g, "conv_out_bias", {hsize_t(c)});
    }

    // A valid 3x3 conv2d stage (zero padding, bias); returns its group.
    hid_t conv2d(hid_t stages, const std::string& name, int in, int out) {
        hid_t g = group(stages, name);
        str_attr(g, "op", "conv2d");
        str_attr(g, "padding", "zero");
        dataset(g, "weight", {hsize_t(out), hsize_t(in), 3, 3});
        dataset(g, "bias", {hsize_t(out)});
        return g;
    }
    // A space_to_depth / depth_to_space stage; returns its group.
    hid_t shuffle(hid_t stages, const std::string& name, const char* op, long long factor) {
        hid_t g = group(stages, name);
        str_attr(g, "op", op);
        int_attr(g, "factor", factor);
        return g;
    }

private:
    hid_t file_;
    std::vector<hid_t> groups_;
};

}  // namespace imr::test
