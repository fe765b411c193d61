// Helpers every layer file uses (app/layers/layer.h).
#include "layer.h"

#include <cmath>

namespace imr {

std::string dims_string(const std::vector<unsigned long long>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

void expect_shape(const LayerReader& r, const LayerReader::Tensor& t, const char* name,
                  std::initializer_list<long long> expected) {
    std::vector<unsigned long long> e;
    for (long long v : expected) e.push_back((unsigned long long)v);
    if (t.shape != e)
        throw Error(r.where() + ": dataset '" + name + "': expected shape " + dims_string(e) + ", found " +
                    dims_string(t.shape));
}

std::vector<float> read_tensor(LayerReader& r, const char* name, std::initializer_list<long long> shape) {
    LayerReader::Tensor t = r.tensor(name, int(shape.size()));
    expect_shape(r, t, name, shape);
    return std::move(t.data);
}

void check_tensor(const std::string& at, const char* name, const std::vector<float>& data, size_t expected,
                  std::initializer_list<int> shape) {
    std::vector<unsigned long long> dims;
    for (int d : shape) dims.push_back((unsigned long long)d);
    if (data.size() != expected)
        throw Error(at + ": dataset '" + name + "': expected " + dims_string(dims) + " (" + std::to_string(expected) +
                    " values), found " + std::to_string(data.size()));
    for (size_t i = 0; i < data.size(); ++i)
        if (!std::isfinite(data[i]))
            throw Error(at + ": dataset '" + name + "': value " + std::to_string(i) + " is not finite");
}

bool read_add_model_input(LayerReader& r) {
    if (!r.has_attribute("add_model_input")) return false;
    if (r.format_version() < 2)
        throw Error(r.where() + ": attribute 'add_model_input' needs format_version 2 (the file says " +
                    std::to_string(r.format_version()) + ")");
    const long long v = r.int_attribute("add_model_input");
    if (v != 0 && v != 1)
        throw Error(r.where() + ": attribute 'add_model_input': expected 0 or 1, found " + std::to_string(v));
    return v == 1;
}

void require_format_v3(const LayerReader& r, const char* op) {
    if (r.format_version() < 3)
        throw Error(r.where() + ": op '" + op + "' needs format_version 3 (the file says " +
                    std::to_string(r.format_version()) + ")");
}

PadMode read_padding(LayerReader& r) {
    const std::string s = r.string_attribute("padding");
    for (PadMode m : {PadMode::Reflect, PadMode::Replicate, PadMode::Zero})
        if (s == pad_mode_name(m)) return m;
    throw Error(r.where() + ": attribute 'padding': expected reflect, replicate or zero, found '" + s + "'");
}

void require(const Backend& backend, Op op) {
    if (!backend.supports(op, DType::F32, Layout::NCHW))
        throw Error(std::string("this model uses the op ") + op_name(op) + ", which the " + backend.name() +
                    " backend does not have (in f32 NCHW)");
}

TensorType activation_type(const Backend& backend, Op op, Precision precision) {
    const DType half = precision == Precision::Bf16 ? DType::BF16 : DType::F16;
    if (precision == Precision::Bf16 || precision == Precision::Fp16)
        for (Layout layout : {Layout::NHWC8, Layout::NHWC, Layout::NCHW})
            if (backend.supports(op, half, layout)) return {half, layout};
    return {DType::F32, Layout::NCHW};
}

DeviceBuffer upload(Backend& backend, const std::vector<float>& v) {
    if (v.empty()) return {};
    DeviceBuffer buf(backend, v.size() * sizeof(float));
    backend.upload(buf.data(), v.data(), buf.bytes());
    return buf;
}

}  // namespace imr
