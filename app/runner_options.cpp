// Parsing and resolving the runner's settings (runner_options.h).
#include "runner_options.h"

#include "model_file.h"

namespace imr {

namespace {
constexpr Precision kPrecisions[] = {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp16,
                                     Precision::Auto};
}  // namespace

const char* precision_name(Precision p) {
    switch (p) {
        case Precision::Fp32:
            return "fp32";
        case Precision::Tf32:
            return "tf32";
        case Precision::Bf16:
            return "bf16";
        case Precision::Fp16:
            return "fp16";
        case Precision::Auto:
            return "auto";
    }
    return "?";
}

const char* precision_choices() {
    return "fp32|tf32|bf16|fp16|auto";
}

Precision parse_precision(const std::string& s) {
    for (Precision p : kPrecisions)
        if (s == precision_name(p)) return p;
    throw Error("--precision " + s + ": expected one of " + precision_choices());
}

float extra_input_value(const std::string& name, double level) {
    return float(name == "noise_level" ? level / 255.0 : level / 100.0);
}

std::pair<Op, std::string> parse_forced_variant(const std::string& s) {
    const size_t eq = s.find('=');
    std::string ops;
    for (size_t i = 0; i < kOpCount; ++i) ops += std::string(i ? ", " : "") + op_name(Op(i));
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw Error("--kernel " + s + ": expected OP=VARIANT (OP one of " + ops + ")");
    const std::string op = s.substr(0, eq);
    for (size_t i = 0; i < kOpCount; ++i)
        if (op == op_name(Op(i))) return {Op(i), s.substr(eq + 1)};
    throw Error("--kernel " + s + ": no op '" + op + "' (the ops: " + ops + ")");
}

namespace {

// "N" of "cuda:N" (at most 4 digits); throws naming `spec` otherwise.
int parse_device_number(const std::string& digits, const std::string& spec) {
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw Error("--device " + spec +
                    ": expected cuda:N, cuda:N,M,... or cuda:all with N a device number (0, 1, ...)");
    return std::stoi(digits);
}

// The most workers a --device list may name (a GPU may be listed twice; a
// node has at most 8-16 GPUs).
constexpr size_t kMaxWorkers = 64;

// How many CUDA devices this process sees; throws naming `spec` when none.
int cuda_devices_for(const std::string& spec) {
    std::string why;
    const int count = cuda_device_count(&why);
    if (count == 0) throw Error("--device " + spec + ": no usable CUDA device (" + why + ")");
    return count;
}

}  // namespace

std::vector<std::string> device_workers(const std::string& spec) {
    if (spec.rfind("cuda:", 0) != 0) return {spec};  // auto, cpu, cuda: one worker, made by make_backend
    // The list's devices (cuda:N: a list of one), parsed before the GPUs are
    // counted, so a typo is named as such.
    std::vector<int> devices;
    if (spec != "cuda:all") {
        const std::string list = spec.substr(5);
        for (size_t at = 0;;) {
            // Each worker holds a copy of the weights and two streams.
            if (devices.size() == kMaxWorkers)
                throw Error("--device " + spec + ": more than " + std::to_string(kMaxWorkers) + " workers listed");
            const size_t comma = list.find(',', at);
            devices.push_back(
                parse_device_number(list.substr(at, comma == std::string::npos ? comma : comma - at), spec));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    }
    const int count = cuda_devices_for(spec);
    if (spec == "cuda:all")
        for (int d = 0; d < count; ++d) devices.push_back(d);
    std::vector<std::string> workers;
    for (int d : devices) {
        if (d >= count)
            throw Error("--device " + spec + ": cuda:" + std::to_string(d) + " is not present (only " +
                        std::to_string(count) + " CUDA device(s))");
        workers.push_back("cuda:" + std::to_string(d));
    }
    return workers;
}

void require_one_device(const std::string& device, const std::string& command) {
    if (device_workers(device).size() > 1)
        throw Error("--device " + device + ": " + command + " measures on one device; give cuda:N");
}

std::unique_ptr<Backend> make_backend(const RunnerOptions& options, std::string* note) {
    const std::string& spec = options.device;
    if (spec == "cpu") return make_cpu_backend(options.threads);
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
        return make_cpu_backend(options.threads);
    }
    if (spec == "cuda") {
        cuda_devices_for(spec);
        return make_cuda_backend(0);
    }
    if (spec.rfind("cuda:", 0) == 0)  // cuda:N, or a list's first worker (device_workers checks them all)
        return make_cuda_backend(std::stoi(device_workers(spec)[0].substr(5)));
    throw Error("--device " + spec + ": expected auto, cpu, cuda, cuda:N, cuda:N,M,... or cuda:all");
}

Precision resolve_precision(Precision requested, const ModelFile& model, const Backend& backend) {
    // auto: the first half precision the model file records as validated
    // that this backend has kernels for; fp32 when it records none, and
    // always on the CPU (no half kernels there).
    if (requested == Precision::Auto) {
        for (const std::string& name : model.validated_precisions) {
            const Precision p = parse_precision(name);  // "fp16" or "bf16": the loader checked
            const DType half = p == Precision::Bf16 ? DType::BF16 : DType::F16;
            for (Layout layout : kLayouts)
                if (backend.supports(Op::Conv2d, half, layout)) return p;
        }
        return Precision::Fp32;
    }
    if (requested == Precision::Fp32) return Precision::Fp32;
    // bf16, fp16: where the backend has conv2d kernels in that type (the
    // layers then choose their types: activation_type in app/layers/).
    if (requested == Precision::Bf16 || requested == Precision::Fp16) {
        const DType half = requested == Precision::Bf16 ? DType::BF16 : DType::F16;
        for (Layout layout : kLayouts)
            if (backend.supports(Op::Conv2d, half, layout)) return requested;
    }
    // tf32: the convolutions on TF32 tensor cores, activations in fp32.
    if (requested == Precision::Tf32 && backend.has_tf32_conv2d()) return requested;
    // Else refused, never run as fp32 under another name.
    throw Error(std::string("--precision ") + precision_name(requested) + ": " + backend.name() + " has no " +
                precision_name(requested) + " kernels (" +
                (backend.is_host_memory() ? "the CPU computes in fp32 only"
                                          : "the tensor-core kernels need compute capability 8.0 or later") +
                "); use --precision fp32 or auto");
}

}  // namespace imr
