// The op interface of imrestore: every backend (CPU, CUDA) implements the
// same ops with the same arguments, so the pipeline, the tests and the
// benchmarks never care which one runs. The ops are listed in
// kernels/ops/op_list.h; each has its own file there (what it computes, its
// Args, check_args and float64 reference), and everything here that is per op
// is generated from the list.
//
// Conventions: the tensors in *Args (kernels/tensor.h: data, shape, dtype,
// layout) live in the backend's memory (host memory for the CPU backend,
// device memory for CUDA); get such memory from Backend::alloc, in bytes
// (Tensor::bytes()). Which dtypes and layouts an op takes is the backend's
// answer to supports(op, dtype, layout); every op checks it after its
// check_args (check_supported). Ops are asynchronous with respect to the host
// on backends that can be (CUDA); call synchronize() before reading results.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "error.h"
#include "ops/op_list.h"
#include "system_memory.h"
#include "tensor.h"

namespace imr {

// The ops of the interface (one value per op of the list), for asking a
// backend what it supports and which kernel variants it has.
enum class Op {
#define IMR_OP_ENUMERATOR(Enum, name, Args) Enum,
    IMR_FOR_EACH_OP(IMR_OP_ENUMERATOR)
#undef IMR_OP_ENUMERATOR
        Count  // the number of ops, not an op
};
constexpr size_t kOpCount = size_t(Op::Count);
const char* op_name(Op op);  // the op's name in the list: "residual_block", "conv2d", ...

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

    // Memory in the backend's space, in bytes (aligned for any element type).
    // alloc throws imr::OutOfMemory when there is not enough; release never
    // throws (it runs in destructors).
    virtual void* alloc(size_t bytes) = 0;
    virtual void release(void* p) noexcept = 0;
    virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
    virtual void download(void* host_dst, const void* src, size_t bytes) = 0;
    virtual void synchronize() = 0;
    // Bytes that could still be allocated (the CPU backend reports available RAM).
    virtual size_t free_memory() const = 0;

    // Host memory for what is uploaded and downloaded: page-locked (pinned)
    // on CUDA, where copies from it run at the bus's full speed instead of
    // being staged through a driver buffer; plain aligned memory elsewhere
    // (the default). Throws imr::OutOfMemory; release_host never throws.
    virtual void* alloc_host(size_t bytes);
    virtual void release_host(void* p) noexcept;

    // Threads the ops run on where they run on the host (the CPU backend's
    // -j); 0 for a device backend.
    virtual int host_threads() const { return 0; }
    // Whether conv2d has kernels that honour Conv2dArgs::tf32 (TF32 tensor
    // cores: CUDA, sm_80 and later); elsewhere the flag changes nothing.
    virtual bool has_tf32_conv2d() const { return false; }
    // Whether conv2d computes Conv2dArgs::gate in its kernel's epilogue for
    // these arguments (CUDA: tensor cores, 1x1, Cout a multiple of 16). Where
    // not, conv2d stores the Cout sums in a buffer of its own and gates them
    // after; a model layer then does that itself in its planned scratch.
    virtual bool conv2d_gates_in_epilogue(const Conv2dArgs&) const { return false; }
    // Another backend on the same device with its own queue (a CUDA stream),
    // memory and scratch, for running a second model pass beside this one's:
    // one thread may use each. `threads`: a host backend's thread count (0:
    // the same as this one's); a device backend ignores it.
    virtual std::unique_ptr<Backend> make_sibling(int threads) const = 0;

    // Whether this backend implements `op` on tensors of this dtype and
    // layout: a model with an op its backend lacks (at the type the runner
    // would run it in) is refused when it is prepared, before any image is
    // read. For an op with several tensors, each of its activations (input,
    // output, residual) must be of a supported type; weights are always f32
    // NCHW (packed by prepare).
    virtual bool supports(Op op, DType dtype, Layout layout = Layout::NCHW) const = 0;
    // The ops, one method each, named after the op: residual_block(const
    // ResidualBlockArgs&), conv2d(const Conv2dArgs&), ... (a backend declares
    // them all with IMR_BACKEND_OP_OVERRIDES, below).
#define IMR_BACKEND_OP_METHOD(Enum, name, Args) virtual void name(const Args& a) = 0;
    IMR_FOR_EACH_OP(IMR_BACKEND_OP_METHOD)
#undef IMR_BACKEND_OP_METHOD

    // Packs the weights (and biases) `a` points to for this backend's kernels;
    // null (the default, for every op) when it has nothing to prepare. Only
    // the channel counts, kernel size and tensor types of `a` matter, not its
    // image: it throws imr::NotApplicable when no kernel of the backend takes
    // a's input and output types with these channels (the conv2d layer asks
    // it which types it can run in: half, and f32 at the network's ends). The
    // result must outlive its calls, and the weights must not change while it
    // is used.
#define IMR_BACKEND_PREPARE(Enum, name, Args) virtual std::unique_ptr<PreparedWeights> prepare(const Args& a);
    IMR_FOR_EACH_OP(IMR_BACKEND_PREPARE)
#undef IMR_BACKEND_PREPARE

    // Kernel variants: the named configurations (tile shapes, pipelines,
    // kernels) this backend can run `op` with; its planner picks one per
    // shape. Empty: the op has one implementation.
    virtual std::vector<std::string> variants(Op op) const;
    // Runs `op` on the named variant instead of the planner's pick, so the op
    // tests and benchmarks can reach every variant ("" restores the planner).
    // Shapes the variant cannot run then throw imr::NotApplicable. Throws
    // imr::Error for a name variants(op) does not list. Backends read the
    // choice with forced_variant; the lookup is the same for all of them.
    void force_variant(Op op, const std::string& name);

    virtual std::unique_ptr<BackendTimer> make_timer() = 0;

protected:
    // The index in variants(op) of the variant force_variant chose, -1: the planner's pick.
    int forced_variant(Op op) const {
        return forced_[size_t(op)];
    }
    // Its name, "" for the planner's pick (for tables whose rows are found by name).
    const std::string& forced_variant_name(Op op) const {
        return forced_names_[size_t(op)];
    }

private:
    std::array<int, kOpCount> forced_ = make_unforced();
    std::array<std::string, kOpCount> forced_names_;
    static std::array<int, kOpCount> make_unforced() {
        std::array<int, kOpCount> a{};
        a.fill(-1);
        return a;
    }
};

// In a backend's class: the declaration of every op method, `void NAME(const
// Args& a) override;` for each op of the list, which the backend defines in
// its NAME file. A backend that lacks one does not link.
#define IMR_BACKEND_OP_OVERRIDE(Enum, name, Args) void name(const Args& a) override;
#define IMR_BACKEND_OP_OVERRIDES IMR_FOR_EACH_OP(IMR_BACKEND_OP_OVERRIDE)

// Throws imr::Error "<backend>: <op> does not take <dtype> <layout> tensors
// (<what>)" unless the backend supports each present tensor's type for `op`.
// Every backend's op calls it after check_args.
void check_supported(const Backend& backend, Op op, std::initializer_list<const Tensor*> tensors);

// Where a Buffer's memory lives: the backend's own (Backend::alloc: device
// memory on CUDA) or host memory for what is uploaded and downloaded
// (Backend::alloc_host: page-locked on CUDA).
enum class MemorySpace { Backend, Host };

// Bytes in a backend's memory space, released when it goes out of scope.
template <MemorySpace Space>
class Buffer {
public:
    Buffer() = default;
    Buffer(Backend& backend, size_t bytes) : backend_(&backend), data_(allocate(backend, bytes)), bytes_(bytes) {}
    Buffer(Buffer&& o) noexcept { *this = std::move(o); }
    Buffer& operator=(Buffer&& o) noexcept {
        reset();
        backend_ = o.backend_, data_ = o.data_, bytes_ = o.bytes_;
        o.backend_ = nullptr, o.data_ = nullptr, o.bytes_ = 0;
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(); }

    void reset() noexcept {
        if (backend_ && data_) {
            if constexpr (Space == MemorySpace::Backend)
                backend_->release(data_);
            else
                backend_->release_host(data_);
        }
        backend_ = nullptr, data_ = nullptr, bytes_ = 0;
    }
    void* data() const { return data_; }
    // The data as T (the caller knows what it stored).
    template <class T>
    T* as() const {
        return static_cast<T*>(data_);
    }
    size_t bytes() const { return bytes_; }
    // A tensor over the buffer's start (shape and type: the caller's, within bytes()).
    Tensor tensor(Shape shape, DType dtype = DType::F32, Layout layout = Layout::NCHW) const {
        return {data_, shape, dtype, layout};
    }

private:
    static void* allocate(Backend& backend, size_t bytes) {
        if constexpr (Space == MemorySpace::Backend)
            return backend.alloc(bytes);
        else
            return backend.alloc_host(bytes);
    }
    Backend* backend_ = nullptr;
    void* data_ = nullptr;
    size_t bytes_ = 0;
};
// Memory the ops read and write (device memory on CUDA).
using DeviceBuffer = Buffer<MemorySpace::Backend>;
// Host memory that is uploaded and downloaded (page-locked on CUDA).
using HostBuffer = Buffer<MemorySpace::Host>;

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

}  // namespace imr
