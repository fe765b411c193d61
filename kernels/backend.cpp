// Shared pieces of the op interface: argument checks every backend runs
// first, and the choice of backend from a --device string.
#include "backend.h"

#include <iterator>
#include <sstream>

namespace imr {

std::string Shape::str() const {
    std::ostringstream s;
    s << '[' << n << ',' << c << ',' << h << ',' << w << ']';
    return s.str();
}

const char* pad_mode_name(PadMode mode) {
    switch (mode) {
        case PadMode::Zero:
            return "zero";
        case PadMode::Reflect:
            return "reflect";
        case PadMode::Replicate:
            return "replicate";
    }
    return "?";
}

const char* activation_name(Activation a) {
    switch (a) {
        case Activation::None:
            return "none";
        case Activation::ReLU:
            return "relu";
    }
    return "?";
}

namespace {
constexpr const char* kOpNames[] = {"residual_block", "conv2d", "pixel_shuffle"};
static_assert(std::size(kOpNames) == kOpCount, "one name per Op");
}  // namespace

const char* op_name(Op op) {
    return size_t(op) < kOpCount ? kOpNames[size_t(op)] : "?";
}

std::unique_ptr<PreparedWeights> Backend::prepare(const Conv2dArgs&) {
    return nullptr;
}
std::unique_ptr<PreparedWeights> Backend::prepare(const ResidualBlockArgs&) {
    return nullptr;
}

std::vector<std::string> Backend::variants(Op) const {
    return {};
}

void Backend::force_variant(Op op, const std::string& name) {
    if (!name.empty())
        throw Error(this->name() + ": " + op_name(op) + " has no kernel variant '" + name + "' (it has one kernel)");
}

namespace {
bool positive(const Shape& s) {
    return s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0;
}
}  // namespace

void check_args(const ResidualBlockArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error("residual_block " + a.shape.str() + " hidden " + std::to_string(a.hidden) + ": " + what);
    };
    if (!positive(a.shape) || a.hidden <= 0) fail("sizes must be positive");
    if (!a.input || !a.output || !a.conv_in_weight || !a.conv_in_bias || !a.conv_out_weight || !a.conv_out_bias)
        fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
}

void check_args(const Conv2dArgs& a) {
    auto fail = [&](const std::string& what) {
        throw Error("conv2d " + a.in.str() + " -> " + std::to_string(a.out_channels) + " channels, kernel " +
                    std::to_string(a.kernel) + ", padding " + std::to_string(a.pad_before) + "/" +
                    std::to_string(a.pad_after) + " " + pad_mode_name(a.pad_mode) + ": " + what);
    };
    if (!positive(a.in) || a.out_channels <= 0 || a.kernel <= 0) fail("sizes must be positive");
    if (a.pad_before < 0 || a.pad_after < 0) fail("padding must not be negative");
    Shape out = a.out_shape();
    if (out.h <= 0 || out.w <= 0) fail("kernel is larger than the padded image");
    // Reflect mirrors without repeating the edge, so it can extend by at most size-1.
    if (a.pad_mode == PadMode::Reflect && (a.pad_before > a.in.h - 1 || a.pad_after > a.in.h - 1 ||
                                           a.pad_before > a.in.w - 1 || a.pad_after > a.in.w - 1))
        fail("reflect padding needs the image to be larger than the padding");
    if (!a.input || !a.output || !a.weight) fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
    if (a.residual == a.output) fail("output must not alias the residual");
    if (a.activation != Activation::None && a.activation != Activation::ReLU) fail("unknown activation");
}

void check_args(const PixelShuffleArgs& a) {
    const bool to_depth = a.direction == ShuffleDirection::ToDepth;
    auto fail = [&](const std::string& what) {
        throw Error(std::string("pixel_shuffle ") + (to_depth ? "to depth " : "to space ") + a.in.str() + ", factor " +
                    std::to_string(a.factor) + ": " + what);
    };
    if (!positive(a.in) || a.factor <= 0) fail("sizes must be positive");
    if (a.factor > 64) fail("factor must be at most 64");
    if (to_depth && (a.in.h % a.factor || a.in.w % a.factor)) fail("height and width must be multiples of the factor");
    if (!to_depth && a.in.c % (a.factor * a.factor)) fail("channels must be a multiple of factor * factor");
    if (!to_depth && (size_t(a.in.h) * a.factor > size_t(1) << 30 || size_t(a.in.w) * a.factor > size_t(1) << 30))
        fail("output is too large");
    if (!a.input || !a.output) fail("null tensor pointer");
    if (a.input == a.output) fail("output must not alias input");
    if (a.residual == a.output) fail("output must not alias the residual");
}

std::unique_ptr<Backend> make_backend(const std::string& spec, int cpu_threads, std::string* note) {
    if (spec == "cpu") return make_cpu_backend(cpu_threads);
    if (spec == "auto") {
        std::string why;
        if (cuda_device_count(&why) > 0) {
            try {
                return make_cuda_backend(0);
            } catch (const Error& e) {
                why = e.what();
            }
        }
        if (note) *note = "no usable GPU (" + why + "), running on the CPU";
        return make_cpu_backend(cpu_threads);
    }
    if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
        int device = 0;
        if (spec != "cuda") {
            std::string digits = spec.substr(5);
            if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
                throw Error("--device " + spec + ": expected cuda:N with N a device number (0, 1, ...)");
            device = std::stoi(digits);
        }
        std::string why;
        int count = cuda_device_count(&why);
        if (count == 0) throw Error("--device " + spec + ": no usable CUDA device (" + why + ")");
        if (device >= count)
            throw Error("--device " + spec + ": only " + std::to_string(count) + " CUDA device(s) present");
        return make_cuda_backend(device);
    }
    throw Error("--device " + spec + ": expected auto, cpu, cuda or cuda:N");
}

}  // namespace imr
