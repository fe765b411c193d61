// The CUDA backend: one device, one stream per backend; ops are queued on
// that stream (asynchronous to the host), memory is plain cudaMalloc.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "backend.h"
#include "common.cuh"
#include "conv2d.cuh"
#include "pixel_shuffle.cuh"
#include "residual_block.cuh"

namespace imr {
namespace {

using cuda::check_cuda;

class CudaTimer : public BackendTimer {
public:
    CudaTimer(cudaStream_t stream, const std::string& ctx) : stream_(stream), ctx_(ctx) {
        check_cuda(cudaEventCreate(&start_), ctx_, "cudaEventCreate");
        cudaError_t err = cudaEventCreate(&stop_);
        if (err != cudaSuccess) {
            cudaEventDestroy(start_);
            cuda::throw_cuda(ctx_, "cudaEventCreate", err);
        }
    }
    ~CudaTimer() override {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    void start() override { check_cuda(cudaEventRecord(start_, stream_), ctx_, "cudaEventRecord(start)"); }
    void stop() override { check_cuda(cudaEventRecord(stop_, stream_), ctx_, "cudaEventRecord(stop)"); }
    double elapsed_ms() override {
        check_cuda(cudaEventSynchronize(stop_), ctx_, "cudaEventSynchronize");
        float ms = 0.f;
        check_cuda(cudaEventElapsedTime(&ms, start_, stop_), ctx_, "cudaEventElapsedTime");
        return ms;
    }

private:
    cudaStream_t stream_;
    std::string ctx_;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

__global__ void usability_probe() {}

class CudaBackend : public Backend {
public:
    explicit CudaBackend(int device) : device_(device) {
        const std::string ctx = "cuda:" + std::to_string(device);
        check_cuda(cudaSetDevice(device), ctx, "cudaSetDevice");
        cudaDeviceProp prop{};
        check_cuda(cudaGetDeviceProperties(&prop, device), ctx, "cudaGetDeviceProperties");
        sm_count_ = prop.multiProcessorCount;
        char mem[32];
        std::snprintf(mem, sizeof mem, "%.1f GiB", double(prop.totalGlobalMem) / double(1ull << 30));
        description_ = std::string(prop.name) + ", " + mem;
        check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), ctx, "cudaStreamCreate");
        // Proves this binary has code the GPU and driver can run (sm_90 code or
        // PTX the driver compiles): otherwise --device auto falls back to the
        // CPU here instead of every image failing later.
        usability_probe<<<1, 1, 0, stream_>>>();
        cudaError_t err = cudaGetLastError();
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
        if (err != cudaSuccess) {
            cudaStreamDestroy(stream_);
            cuda::throw_cuda(ctx + " (" + description_ + ")", "launching a kernel", err);
        }
    }
    ~CudaBackend() override {
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
    }

    std::string name() const override { return "cuda:" + std::to_string(device_); }
    std::string description() const override { return description_; }
    bool is_host_memory() const override { return false; }

    float* alloc(size_t count) override {
        use_device();
        void* p = nullptr;
        const size_t bytes = count * sizeof(float);
        cudaError_t err = cudaMalloc(&p, bytes);
        if (err != cudaSuccess) {
            cudaGetLastError();  // clear the (non-sticky) allocation error
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            std::string what = name() + ": cudaMalloc of " + std::to_string(bytes) + " bytes failed (" +
                               cudaGetErrorString(err) + "); " + std::to_string(free_b) + " of " +
                               std::to_string(total_b) + " bytes free";
            if (err == cudaErrorMemoryAllocation) throw OutOfMemory(what);
            throw Error(what);
        }
        return static_cast<float*>(p);
    }
    void release(float* p) noexcept override {
        if (!p) return;
        // Never throws: it runs in destructors, also while an earlier CUDA
        // error unwinds the stack; that error has been reported already.
        // The stream may still use p: free only after the queued work ends.
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        cudaFree(p);
    }
    void upload(float* dst, const float* host_src, size_t count) override {
        use_device();
        check_cuda(cudaMemcpyAsync(dst, host_src, count * sizeof(float), cudaMemcpyHostToDevice, stream_),
                   name() + ": upload of " + std::to_string(count) + " floats", "cudaMemcpyAsync");
        // Pageable host memory: the copy is staged before the call returns, but
        // the caller may reuse host_src at once only after the stream is done.
        check_cuda(cudaStreamSynchronize(stream_), name() + ": upload", "cudaStreamSynchronize");
    }
    void download(float* host_dst, const float* src, size_t count) override {
        use_device();
        check_cuda(cudaMemcpyAsync(host_dst, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                   name() + ": download of " + std::to_string(count) + " floats", "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(stream_), name() + ": download", "cudaStreamSynchronize");
    }
    void synchronize() override {
        use_device();
        check_cuda(cudaStreamSynchronize(stream_), name(), "cudaStreamSynchronize");
    }
    size_t free_memory() const override {
        cudaSetDevice(device_);
        size_t free_b = 0, total_b = 0;
        check_cuda(cudaMemGetInfo(&free_b, &total_b), name(), "cudaMemGetInfo");
        return free_b;
    }

    std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a) override {
        use_device();
        return cuda::prepare_conv2d(a, stream_);
    }

    bool supports(Op) const override { return true; }
    void residual_block(const ResidualBlockArgs& a) override {
        use_device();
        cuda::residual_block(a, stream_, forced_[int(Op::ResidualBlock)]);
    }
    void conv2d(const Conv2dArgs& a) override {
        use_device();
        cuda::conv2d(a, stream_, sm_count_, forced_[int(Op::Conv2d)]);
    }
    void pixel_shuffle(const PixelShuffleArgs& a) override {
        use_device();
        cuda::pixel_shuffle(a, stream_);
    }

    std::vector<std::string> variants(Op op) const override {
        switch (op) {
            case Op::Conv2d:
                return cuda::conv2d_variants();
            case Op::ResidualBlock:
                return cuda::residual_block_variants();
            default:
                return {};
        }
    }
    void force_variant(Op op, const std::string& name) override {
        const std::vector<std::string> names = variants(op);
        if (name.empty() || names.empty()) {
            Backend::force_variant(op, name);
            forced_[int(op)] = -1;
            return;
        }
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) throw Error(this->name() + ": " + op_name(op) + " has no kernel variant '" + name + "'");
        forced_[int(op)] = int(it - names.begin());
    }

    std::unique_ptr<BackendTimer> make_timer() override {
        use_device();
        return std::make_unique<CudaTimer>(stream_, name() + " timer");
    }

private:
    void use_device() const { check_cuda(cudaSetDevice(device_), name(), "cudaSetDevice"); }

    int device_;
    int sm_count_ = 0;
    int forced_[std::size(kAllOps)] = {-1, -1, -1};  // per Op: a forced variant's index, -1: the planner
    std::string description_;
    cudaStream_t stream_ = nullptr;
};

}  // namespace

bool cuda_compiled() {
    return true;
}

int cuda_device_count(std::string* why) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError();
        // Without an NVIDIA driver the runtime says "driver version is
        // insufficient", which reads like "upgrade the driver": say what it means.
        const bool no_gpu = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice;
        if (why)
            *why = std::string(no_gpu ? "no NVIDIA GPU or driver found; " : "") + "CUDA: " + cudaGetErrorString(err) +
                   " (" + cudaGetErrorName(err) + ")";
        return 0;
    }
    if (count == 0 && why) *why = "no CUDA device found";
    return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
    std::string why;
    const int count = cuda_device_count(&why);
    if (count == 0) throw Error("cuda:" + std::to_string(device) + ": no usable CUDA device (" + why + ")");
    if (device < 0 || device >= count)
        throw Error("cuda:" + std::to_string(device) + ": only " + std::to_string(count) + " CUDA device(s) present");
    return std::make_unique<CudaBackend>(device);
}

}  // namespace imr
