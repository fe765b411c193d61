// The op interface of imrestore: every backend (CPU, CUDA) implements the
// same ops with the same arguments, so the pipeline, the tests and the
// benchmarks never care which one runs.
//
// Conventions: fp32, NCHW, stride 1. Pointers in *Args live in the backend's
// memory (host memory for the CPU backend, device memory for CUDA); get such
// memory from Backend::alloc. Ops are asynchronous with respect to the host on
// backends that can be (CUDA); call synchronize() before reading results.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "error.h"
#include "system_memory.h"

namespace imr {

// Dimensions of an NCHW tensor.
struct Shape {
    int n = 0, c = 0, h = 0, w = 0;
    size_t count() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
    std::string str() const;  // "[n,c,h,w]"
    bool operator==(const Shape& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
};

// An op's weights made ready once for one backend's kernels (packed into the
// layout they read: the CPU's output-channel blocks), so a model pays for it
// once, not on every call and tile: Backend::prepare returns it, the op's
// args carry it in `prepared` (the weight pointers stay set as well). Ops
// without it pack per call; the result is the same.
class PreparedWeights {
public:
    virtual ~PreparedWeights() = default;
};

// residual_block: output = input + conv_out(conv_in(input)), both convolutions
// 3x3, zero padding 1, stride 1, with bias, no activation (SOL-ExecBench
// L1/040, NAFNet's intro/ending convs).
//   conv_in_weight  [hidden, C, 3, 3]   conv_in_bias  [hidden]
//   conv_out_weight [C, hidden, 3, 3]   conv_out_bias [C]
struct ResidualBlockArgs {
    Shape shape;  // input and output, [N, C, H, W]
    int hidden = 0;
    const float* input = nullptr;
    float* output = nullptr;  // must not alias input
    const float* conv_in_weight = nullptr;
    const float* conv_in_bias = nullptr;
    const float* conv_out_weight = nullptr;
    const float* conv_out_bias = nullptr;
    const PreparedWeights* prepared = nullptr;  // optional: Backend::prepare of these weights
};

// What a convolution applies to its output after the bias.
enum class Activation { None, ReLU };
const char* activation_name(Activation a);

// How the border is extended before a convolution. Zero: zeros; Reflect: mirror
// without repeating the edge (numpy/torch "reflect"); Replicate: repeat the edge.
enum class PadMode { Zero, Reflect, Replicate };
const char* pad_mode_name(PadMode mode);

// conv2d: the input [N, Cin, H, W] is padded by pad_before rows/columns at the
// top/left and pad_after at the bottom/right (in pad_mode), then convolved
// (cross-correlation, as torch) with weight [Cout, Cin, K, K], stride 1, plus
// bias [Cout] when bias is not null, then the activation, then `residual`
// (an output-shaped tensor) when it is not null:
//   output = activation(conv(input) + bias) + residual
// With no padding, bias, activation or residual this is GPU MODE's
// conv2d_v2: output [N, Cout, H-K+1, W-K+1]. pad_before + pad_after = K-1
// keeps the image size (what model files use). Fusing the activation and the
// residual add into the convolution saves a pass over the output per layer.
struct Conv2dArgs {
    Shape in;  // [N, Cin, H, W]
    int out_channels = 0;
    int kernel = 0;  // K
    int pad_before = 0, pad_after = 0;
    PadMode pad_mode = PadMode::Zero;
    const float* input = nullptr;
    float* output = nullptr;  // must not alias input
    const float* weight = nullptr;
    const float* bias = nullptr;  // optional
    Activation activation = Activation::None;
    const float* residual = nullptr;            // optional, out_shape(); must not alias output
    const PreparedWeights* prepared = nullptr;  // optional: Backend::prepare of these weights

    Shape out_shape() const {
        return {in.n, out_channels, in.h + pad_before + pad_after - kernel + 1,
                in.w + pad_before + pad_after - kernel + 1};
    }
};

// pixel_shuffle moves blocks of factor x factor pixels into channels and back
// (f = factor):
//   ToDepth (torch.nn.PixelUnshuffle): [N, C, H, W] -> [N, C*f*f, H/f, W/f],
//     out[n][c*f*f + dy*f + dx][y][x] = in[n][c][y*f + dy][x*f + dx]
//   ToSpace (torch.nn.PixelShuffle): the inverse.
// H and W must be multiples of f for ToDepth, C a multiple of f*f for ToSpace.
// `residual` (optional, output-shaped) is added to the output: a network that
// ends in ToSpace adds its input back in the same pass.
enum class ShuffleDirection { ToDepth, ToSpace };
struct PixelShuffleArgs {
    Shape in;
    int factor = 0;
    ShuffleDirection direction = ShuffleDirection::ToDepth;
    const float* input = nullptr;
    float* output = nullptr;          // must not alias input
    const float* residual = nullptr;  // optional, out_shape(); must not alias output

    Shape out_shape() const {
        const int ff = factor * factor;
        if (factor <= 0) return in;
        return direction == ShuffleDirection::ToDepth ? Shape{in.n, in.c * ff, in.h / factor, in.w / factor}
                                                      : Shape{in.n, in.c / ff, in.h * factor, in.w * factor};
    }
};

// Throws imr::Error naming the op and shapes if the arguments cannot run
// (non-positive sizes, kernel larger than the padded image, reflect padding
// wider than the image allows, null pointers). Every backend calls these first.
void check_args(const ResidualBlockArgs& a);
void check_args(const Conv2dArgs& a);
void check_args(const PixelShuffleArgs& a);

// The ops of the interface, for asking a backend what it supports and which
// kernel variants it has. A new op goes before Count, and its name in
// kOpNames (backend.cpp checks the two have the same length).
enum class Op { ResidualBlock, Conv2d, PixelShuffle, Count };
constexpr size_t kOpCount = size_t(Op::Count);
const char* op_name(Op op);  // "residual_block", "conv2d", "pixel_shuffle"

// Times work queued on a backend: host clock on the CPU, events on the CUDA
// stream. elapsed_ms() waits for the stop point to complete.
class BackendTimer {
public:
    virtual ~BackendTimer() = default;
    virtual void start() = 0;
    virtual void stop() = 0;
    virtual double elapsed_ms() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;         // "cpu", "cuda:0"
    virtual std::string description() const = 0;  // "CPU, 2 threads", "NVIDIA H200, 139.8 GiB"
    virtual bool is_host_memory() const = 0;      // true: alloc'd pointers are plain host memory

    // Memory in the backend's space, in floats. alloc throws imr::OutOfMemory
    // when there is not enough; release never throws (it runs in destructors).
    virtual float* alloc(size_t count) = 0;
    virtual void release(float* p) noexcept = 0;
    virtual void upload(float* dst, const float* host_src, size_t count) = 0;
    virtual void download(float* host_dst, const float* src, size_t count) = 0;
    virtual void synchronize() = 0;
    // Bytes that could still be allocated (the CPU backend reports available RAM).
    virtual size_t free_memory() const = 0;

    // Whether this backend implements `op`: a model with an op its backend
    // lacks is refused when it is prepared, before any image is read.
    virtual bool supports(Op op) const = 0;
    virtual void residual_block(const ResidualBlockArgs& a) = 0;
    virtual void conv2d(const Conv2dArgs& a) = 0;
    virtual void pixel_shuffle(const PixelShuffleArgs& a) = 0;

    // Packs the weights (and biases) `a` points to for this backend's kernels;
    // null when it has nothing to prepare. Only the channel counts and kernel
    // size of `a` matter, not its image. The result must outlive its calls,
    // and the weights must not change while it is used.
    virtual std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a);
    virtual std::unique_ptr<PreparedWeights> prepare(const ResidualBlockArgs& a);

    // Kernel variants: the named configurations (tile shapes, pipelines,
    // kernels) this backend can run `op` with; its planner picks one per
    // shape. Empty: the op has one implementation.
    virtual std::vector<std::string> variants(Op op) const;
    // Runs `op` on the named variant instead of the planner's pick, so the op
    // tests and benchmarks can reach every variant ("" restores the planner).
    // Shapes the variant cannot run then throw imr::NotApplicable. Throws
    // imr::Error for a name variants(op) does not list.
    virtual void force_variant(Op op, const std::string& name);

    virtual std::unique_ptr<BackendTimer> make_timer() = 0;
};

// A buffer in a backend's memory, released when it goes out of scope.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(Backend& backend, size_t count) : backend_(&backend), data_(backend.alloc(count)), count_(count) {}
    DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        reset();
        backend_ = o.backend_, data_ = o.data_, count_ = o.count_;
        o.backend_ = nullptr, o.data_ = nullptr, o.count_ = 0;
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }

    void reset() noexcept {
        if (backend_ && data_) backend_->release(data_);
        backend_ = nullptr, data_ = nullptr, count_ = 0;
    }
    float* data() const { return data_; }
    size_t count() const { return count_; }

private:
    Backend* backend_ = nullptr;
    float* data_ = nullptr;
    size_t count_ = 0;
};

// threads <= 0: one per hardware thread.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);
// host_memory_available(): what the CPU backend reports as free (system_memory.h).

// True when this binary was built with the CUDA backend.
bool cuda_compiled();
// Number of usable CUDA devices; 0 with *why set (no driver, no device, built
// without CUDA) when there are none. Never throws.
int cuda_device_count(std::string* why);
// Throws imr::Error with the CUDA message when the device cannot be used.
std::unique_ptr<Backend> make_cuda_backend(int device);

// "cpu", "cuda", "cuda:N" or "auto" (first GPU if usable, else CPU; *note says
// why the CPU was chosen). Throws imr::Error for an unknown or unusable device.
std::unique_ptr<Backend> make_backend(const std::string& spec, int cpu_threads = 0, std::string* note = nullptr);

}  // namespace imr
