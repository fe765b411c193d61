// HDF5 model files (weights/README.md is the spec). Uses the HDF5 C API with a
// small RAII handle; every failure becomes an imr::Error naming the file, the
// stage and the dataset.
#include "model_file.h"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace imr {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ stages

const char* stage_op_name(const Stage& stage) {
    return std::holds_alternative<ResidualBlockStage>(stage) ? "residual_block" : "conv2d";
}

int stage_in_channels(const Stage& stage) {
    if (auto* rb = std::get_if<ResidualBlockStage>(&stage)) return rb->channels;
    return std::get<Conv2dStage>(stage).in_channels;
}

int stage_out_channels(const Stage& stage) {
    if (auto* rb = std::get_if<ResidualBlockStage>(&stage)) return rb->channels;
    return std::get<Conv2dStage>(stage).out_channels;
}

int stage_radius(const Stage& stage) {
    if (std::holds_alternative<ResidualBlockStage>(stage)) return 2;  // two 3x3 convolutions
    const auto& conv = std::get<Conv2dStage>(stage);
    return std::max(conv.pad_before(), conv.pad_after());
}

size_t ModelFile::parameter_count() const {
    size_t count = 0;
    for (const Stage& s : stages) {
        if (auto* rb = std::get_if<ResidualBlockStage>(&s))
            count += rb->conv_in_weight.size() + rb->conv_in_bias.size() + rb->conv_out_weight.size() +
                     rb->conv_out_bias.size();
        else
            count += std::get<Conv2dStage>(s).weight.size() + std::get<Conv2dStage>(s).bias.size();
    }
    return count;
}

int ModelFile::radius() const {
    int r = 0;
    for (const Stage& s : stages) r += stage_radius(s);
    return r;
}

int ModelFile::receptive_field() const {
    int field = 1;
    for (const Stage& s : stages) {
        if (std::holds_alternative<ResidualBlockStage>(s))
            field += 4;
        else
            field += std::get<Conv2dStage>(s).kernel - 1;
    }
    return field;
}

int ModelFile::max_channels() const {
    int c = channels;
    for (const Stage& s : stages) c = std::max(c, stage_out_channels(s));
    return c;
}

// ------------------------------------------------------------------ validation

namespace {

std::string stage_where(const std::string& where, size_t i, const Stage& s) {
    return where + ": stage " + std::to_string(i) + " (" + stage_op_name(s) + ")";
}

void check_tensor(const std::string& where, const char* dataset, const std::vector<float>& data, size_t expected,
                  const std::string& shape) {
    if (data.size() != expected)
        throw Error(where + ": dataset '" + dataset + "': expected " + shape + " (" + std::to_string(expected) +
                    " values), found " + std::to_string(data.size()));
    for (size_t i = 0; i < data.size(); ++i)
        if (!std::isfinite(data[i]))
            throw Error(where + ": dataset '" + dataset + "': value " + std::to_string(i) + " is not finite");
}

std::string dims(std::initializer_list<int> d) {
    std::string s = "[";
    for (int v : d) s += (s.size() > 1 ? "," : "") + std::to_string(v);
    return s + "]";
}

}  // namespace

void validate_model(const ModelFile& m, const std::string& where) {
    if (m.format_version < 1 || m.format_version > kModelFormatVersion)
        throw Error(where + ": format_version " + std::to_string(m.format_version) +
                    " is not supported (this build reads 1.." + std::to_string(kModelFormatVersion) +
                    "; a newer imrestore may read it)");
    if (m.name.empty()) throw Error(where + ": attribute 'name' is empty");
    if (m.channels != 1 && m.channels != 3)
        throw Error(where + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(m.channels));
    if (m.stages.empty()) throw Error(where + ": the model has no stages");
    int channels = m.channels;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& s = m.stages[i];
        std::string at = stage_where(where, i, s);
        if (stage_in_channels(s) != channels)
            throw Error(at + ": takes " + std::to_string(stage_in_channels(s)) + " channels but receives " +
                        std::to_string(channels) + (i == 0 ? " (the model's 'channels')" : " from the stage before"));
        if (auto* rb = std::get_if<ResidualBlockStage>(&s)) {
            int c = rb->channels, h = rb->hidden;
            if (c < 1 || h < 1) throw Error(at + ": channels and hidden must be positive");
            check_tensor(at, "conv_in_weight", rb->conv_in_weight, size_t(h) * c * 9, dims({h, c, 3, 3}));
            check_tensor(at, "conv_in_bias", rb->conv_in_bias, size_t(h), dims({h}));
            check_tensor(at, "conv_out_weight", rb->conv_out_weight, size_t(c) * h * 9, dims({c, h, 3, 3}));
            check_tensor(at, "conv_out_bias", rb->conv_out_bias, size_t(c), dims({c}));
        } else {
            const auto& conv = std::get<Conv2dStage>(s);
            int co = conv.out_channels, ci = conv.in_channels, k = conv.kernel;
            if (co < 1 || ci < 1 || k < 1) throw Error(at + ": channels and kernel size must be positive");
            check_tensor(at, "weight", conv.weight, size_t(co) * ci * k * k, dims({co, ci, k, k}));
            if (!conv.bias.empty()) check_tensor(at, "bias", conv.bias, size_t(co), dims({co}));
        }
        channels = stage_out_channels(s);
    }
    if (channels != m.channels)
        throw Error(where + ": the last stage gives " + std::to_string(channels) +
                    " channels but the model's 'channels' is " + std::to_string(m.channels));
}

// ------------------------------------------------------------------ HDF5 reading

namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Handle {
public:
    H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    ~H5Handle() {
        if (id_ >= 0) close_(id_);
    }
    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

// HDF5 prints its own error stack to stderr by default; we report our own.
void silence_hdf5() {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

bool has_attribute(hid_t obj, const char* name) {
    return H5Aexists(obj, name) > 0;
}

std::string read_string_attribute(hid_t obj, const char* name, const std::string& where) {
    H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) throw Error(where + ": attribute '" + name + "' is missing");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) throw Error(where + ": attribute '" + name + "' must be a string");
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        throw Error(where + ": attribute '" + name + "' must be a single string");
    if (H5Tis_variable_str(type.get()) > 0) {
        H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(mem.get(), H5T_VARIABLE);
        H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
        char* value = nullptr;
        if (H5Aread(attr.get(), mem.get(), &value) < 0) throw Error(where + ": cannot read attribute '" + name + "'");
        std::string result = value ? value : "";
        H5free_memory(value);
        return result;
    }
    size_t size = H5Tget_size(type.get());
    std::string value(size, '\0');
    H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), size);
    if (H5Aread(attr.get(), mem.get(), value.data()) < 0) throw Error(where + ": cannot read attribute '" + name + "'");
    value.resize(std::min(value.size(), value.find('\0')));
    return value;
}

std::string read_optional_string(hid_t obj, const char* name, const std::string& where) {
    return has_attribute(obj, name) ? read_string_attribute(obj, name, where) : std::string();
}

long long read_int_attribute(hid_t obj, const char* name, const std::string& where) {
    H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) throw Error(where + ": attribute '" + name + "' is missing");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_INTEGER) throw Error(where + ": attribute '" + name + "' must be an integer");
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        throw Error(where + ": attribute '" + name + "' must be a single integer");
    long long value = 0;
    if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
        throw Error(where + ": cannot read attribute '" + name + "'");
    return value;
}

struct Tensor {
    std::vector<hsize_t> shape;
    std::vector<float> data;
};

std::string shape_str(const std::vector<hsize_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

// Reads a float32 dataset of the given rank; the caller checks the dimensions.
Tensor read_tensor(hid_t group, const char* name, int rank, const std::string& where) {
    if (H5Lexists(group, name, H5P_DEFAULT) <= 0) throw Error(where + ": dataset '" + name + "' is missing");
    H5Handle dset(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) throw Error(where + ": '" + name + "' is not a dataset");
    H5Handle type(H5Dget_type(dset.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != 4)
        throw Error(where + ": dataset '" + name + "': expected float32, found " +
                    (H5Tget_class(type.get()) == H5T_FLOAT ? "float" + std::to_string(8 * H5Tget_size(type.get()))
                                                           : std::string("a non-float type")));
    H5Handle space(H5Dget_space(dset.get()), H5Sclose);
    int found_rank = H5Sget_simple_extent_ndims(space.get());
    Tensor t;
    if (found_rank >= 0) {
        t.shape.resize(found_rank);
        H5Sget_simple_extent_dims(space.get(), t.shape.data(), nullptr);
    }
    if (found_rank != rank)
        throw Error(where + ": dataset '" + name + "': expected rank " + std::to_string(rank) + ", found rank " +
                    std::to_string(found_rank) + " " + shape_str(t.shape));
    hsize_t count = 1;
    for (hsize_t d : t.shape) count *= d;
    if (count > (hsize_t(1) << 30))
        throw Error(where + ": dataset '" + name + "' is implausibly large " + shape_str(t.shape));
    t.data.resize(count);
    if (count && H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data.data()) < 0)
        throw Error(where + ": cannot read dataset '" + name + "'");
    return t;
}

void expect_shape(const Tensor& t, const char* name, std::initializer_list<long long> expected,
                  const std::string& where) {
    std::vector<hsize_t> e;
    for (long long v : expected) e.push_back(hsize_t(v));
    if (t.shape != e)
        throw Error(where + ": dataset '" + name + "': expected shape " + shape_str(e) + ", found " +
                    shape_str(t.shape));
}

ResidualBlockStage read_residual_block(hid_t g, int channels, const std::string& at) {
    ResidualBlockStage rb;
    Tensor w_in = read_tensor(g, "conv_in_weight", 4, at);
    if (w_in.shape[2] != 3 || w_in.shape[3] != 3)
        throw Error(at + ": dataset 'conv_in_weight': expected a 3x3 kernel [hidden," + std::to_string(channels) +
                    ",3,3], found " + shape_str(w_in.shape));
    rb.hidden = int(w_in.shape[0]);
    rb.channels = int(w_in.shape[1]);
    if (rb.channels != channels)
        throw Error(at + ": dataset 'conv_in_weight': expected " + std::to_string(channels) +
                    " input channels (from the stage before), found " + shape_str(w_in.shape));
    Tensor b_in = read_tensor(g, "conv_in_bias", 1, at);
    expect_shape(b_in, "conv_in_bias", {rb.hidden}, at);
    Tensor w_out = read_tensor(g, "conv_out_weight", 4, at);
    expect_shape(w_out, "conv_out_weight", {rb.channels, rb.hidden, 3, 3}, at);
    Tensor b_out = read_tensor(g, "conv_out_bias", 1, at);
    expect_shape(b_out, "conv_out_bias", {rb.channels}, at);
    rb.conv_in_weight = std::move(w_in.data);
    rb.conv_in_bias = std::move(b_in.data);
    rb.conv_out_weight = std::move(w_out.data);
    rb.conv_out_bias = std::move(b_out.data);
    return rb;
}

PadMode parse_padding(const std::string& s, const std::string& at) {
    if (s == "reflect") return PadMode::Reflect;
    if (s == "replicate") return PadMode::Replicate;
    if (s == "zero") return PadMode::Zero;
    throw Error(at + ": attribute 'padding': expected reflect, replicate or zero, found '" + s + "'");
}

Conv2dStage read_conv2d(hid_t g, int channels, const std::string& at) {
    Conv2dStage conv;
    Tensor w = read_tensor(g, "weight", 4, at);
    if (w.shape[2] != w.shape[3] || w.shape[2] == 0)
        throw Error(at + ": dataset 'weight': expected a square kernel [out,in,K,K], found " + shape_str(w.shape));
    conv.out_channels = int(w.shape[0]);
    conv.in_channels = int(w.shape[1]);
    conv.kernel = int(w.shape[2]);
    if (conv.in_channels != channels)
        throw Error(at + ": dataset 'weight': expected " + std::to_string(channels) +
                    " input channels (from the stage before), found " + shape_str(w.shape));
    conv.weight = std::move(w.data);
    if (H5Lexists(g, "bias", H5P_DEFAULT) > 0) {
        Tensor b = read_tensor(g, "bias", 1, at);
        expect_shape(b, "bias", {conv.out_channels}, at);
        conv.bias = std::move(b.data);
    }
    if (has_attribute(g, "padding")) conv.padding = parse_padding(read_string_attribute(g, "padding", at), at);
    return conv;
}

// Stage groups are named "0".."n-1"; returns them in numeric order.
std::vector<std::string> stage_names(hid_t stages, const std::string& where) {
    H5G_info_t info;
    if (H5Gget_info(stages, &info) < 0) throw Error(where + ": cannot list group 'stages'");
    std::vector<bool> seen(info.nlinks, false);
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        char name[64] = {0};
        H5Lget_name_by_idx(stages, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        std::string s = name;
        bool numeric =
            !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit) && (s == "0" || s[0] != '0');
        size_t index = numeric ? std::stoul(s) : info.nlinks;
        if (index >= info.nlinks || seen[index])
            throw Error(where + ": group 'stages' holds '" + s + "'; expected stages named 0.." +
                        std::to_string(info.nlinks - 1));
        seen[index] = true;
    }
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) names.push_back(std::to_string(i));
    return names;
}

}  // namespace

ModelFile load_model_file(const std::string& path) {
    silence_hdf5();
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error(path + ": no such model file");
    if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, not a model file");
    if (H5Fis_hdf5(path.c_str()) <= 0)
        throw Error(path + ": not an HDF5 file (an imrestore model is HDF5; see weights/README.md)");
    H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) throw Error(path + ": cannot open the HDF5 file");

    ModelFile m;
    m.path = path;
    hid_t root = file.get();
    if (!has_attribute(root, "format"))
        throw Error(path + ": attribute 'format' is missing: not an imrestore model (expected format = '" +
                    kModelFormatName + "')");
    std::string format = read_string_attribute(root, "format", path);
    if (format != kModelFormatName)
        throw Error(path + ": attribute 'format' is '" + format + "', expected '" + kModelFormatName + "'");
    long long version = read_int_attribute(root, "format_version", path);
    if (version < 1 || version > kModelFormatVersion)
        throw Error(path + ": format_version " + std::to_string(version) + " is not supported (this build reads 1.." +
                    std::to_string(kModelFormatVersion) + "; a newer imrestore may read it)");
    m.format_version = int(version);
    m.name = read_string_attribute(root, "name", path);
    m.task = read_string_attribute(root, "task", path);
    m.description = read_string_attribute(root, "description", path);
    m.provenance = read_string_attribute(root, "provenance", path);
    m.license = read_optional_string(root, "license", path);
    long long channels = read_int_attribute(root, "channels", path);
    if (channels != 1 && channels != 3)
        throw Error(path + ": attribute 'channels' must be 1 (gray) or 3 (RGB), found " + std::to_string(channels));
    m.channels = int(channels);

    if (H5Lexists(root, "stages", H5P_DEFAULT) <= 0) throw Error(path + ": group 'stages' is missing");
    H5Handle stages(H5Gopen2(root, "stages", H5P_DEFAULT), H5Gclose);
    if (!stages.valid()) throw Error(path + ": 'stages' is not a group");
    int current = m.channels;
    for (const std::string& name : stage_names(stages.get(), path)) {
        H5Handle g(H5Gopen2(stages.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
        std::string at = path + ": stage " + name;
        if (!g.valid()) throw Error(at + ": is not a group");
        std::string op = read_string_attribute(g.get(), "op", at);
        at += " (" + op + ")";
        if (op == "residual_block")
            m.stages.emplace_back(read_residual_block(g.get(), current, at));
        else if (op == "conv2d")
            m.stages.emplace_back(read_conv2d(g.get(), current, at));
        else
            throw Error(at + ": unknown op '" + op +
                        "' (this build knows residual_block, conv2d; a newer imrestore may)");
        current = stage_out_channels(m.stages.back());
    }
    validate_model(m, path);
    return m;
}

// ------------------------------------------------------------------ writing

namespace {

void write_string_attribute(hid_t obj, const char* name, const std::string& value) {
    H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* data = value.c_str();
    if (!attr.valid() || H5Awrite(attr.get(), type.get(), &data) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_int_attribute(hid_t obj, const char* name, long long value) {
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_tensor(hid_t group, const char* name, const std::vector<float>& data, std::initializer_list<int> shape) {
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    H5Handle dset(H5Dcreate2(group, name, H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose);
    if (!dset.valid() || H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
        throw Error(std::string("cannot write dataset '") + name + "'");
}

void write_stage(hid_t group, const Stage& s) {
    write_string_attribute(group, "op", stage_op_name(s));
    if (auto* rb = std::get_if<ResidualBlockStage>(&s)) {
        write_tensor(group, "conv_in_weight", rb->conv_in_weight, {rb->hidden, rb->channels, 3, 3});
        write_tensor(group, "conv_in_bias", rb->conv_in_bias, {rb->hidden});
        write_tensor(group, "conv_out_weight", rb->conv_out_weight, {rb->channels, rb->hidden, 3, 3});
        write_tensor(group, "conv_out_bias", rb->conv_out_bias, {rb->channels});
    } else {
        const auto& conv = std::get<Conv2dStage>(s);
        write_tensor(group, "weight", conv.weight, {conv.out_channels, conv.in_channels, conv.kernel, conv.kernel});
        if (!conv.bias.empty()) write_tensor(group, "bias", conv.bias, {conv.out_channels});
        write_string_attribute(group, "padding", pad_mode_name(conv.padding));
    }
}

}  // namespace

void write_model_file(const std::string& path, const ModelFile& model) {
    validate_model(model, path);
    silence_hdf5();
    std::string tmp = path + ".tmp-" + std::to_string(getpid());
    try {
        H5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
        if (!file.valid()) throw Error("cannot create the file");
        hid_t root = file.get();
        write_string_attribute(root, "format", kModelFormatName);
        write_int_attribute(root, "format_version", model.format_version);
        write_string_attribute(root, "name", model.name);
        write_string_attribute(root, "task", model.task);
        write_string_attribute(root, "description", model.description);
        write_string_attribute(root, "provenance", model.provenance);
        if (!model.license.empty()) write_string_attribute(root, "license", model.license);
        write_int_attribute(root, "channels", model.channels);
        H5Handle stages(H5Gcreate2(root, "stages", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        for (size_t i = 0; i < model.stages.size(); ++i) {
            H5Handle g(H5Gcreate2(stages.get(), std::to_string(i).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose);
            if (!g.valid()) throw Error("cannot create group 'stages/" + std::to_string(i) + "'");
            write_stage(g.get(), model.stages[i]);
        }
    } catch (const Error& e) {
        std::remove(tmp.c_str());
        throw Error(path + ": " + e.what());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(path + ": cannot write: " + ec.message());
    }
}

// ------------------------------------------------------------------ describe

std::string describe_model(const ModelFile& m) {
    std::ostringstream s;
    s << "model        " << m.name << (m.path.empty() ? "" : "  (" + m.path + ")") << "\n"
      << "task         " << m.task << "\n"
      << "format       " << kModelFormatName << " v" << m.format_version << "\n"
      << "channels     " << m.channels << "\n"
      << "parameters   " << m.parameter_count() << "\n"
      << "receptive    " << m.receptive_field() << "x" << m.receptive_field() << " pixels\n";
    if (!m.license.empty()) s << "license      " << m.license << "\n";
    s << "description  " << m.description << "\n"
      << "provenance   " << m.provenance << "\n"
      << "stages\n";
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const Stage& st = m.stages[i];
        s << "  " << i << "  ";
        if (auto* rb = std::get_if<ResidualBlockStage>(&st)) {
            s << "residual_block  " << rb->channels << " -> " << rb->hidden << " -> " << rb->channels
              << " channels, 3x3 + 3x3, zero padding, out = x + conv_out(conv_in(x))";
        } else {
            const auto& c = std::get<Conv2dStage>(st);
            s << "conv2d          " << c.in_channels << " -> " << c.out_channels << " channels, " << c.kernel << "x"
              << c.kernel << ", " << pad_mode_name(c.padding) << " padding " << c.pad_before() << "/" << c.pad_after()
              << (c.bias.empty() ? ", no bias" : ", bias");
        }
        s << "\n";
    }
    return s.str();
}

}  // namespace imr
