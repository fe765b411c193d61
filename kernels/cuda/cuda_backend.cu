// The CUDA backend's constructor, device choice and factory; the class is in
// cuda_backend.cuh, its ops in their own files.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "backend.h"
#include "common.cuh"
#include "conv2d.cuh"
#include "cuda_backend.cuh"
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

}  // namespace

namespace cuda {

cudaError_t raise_smem_limit(const void* kernel, size_t bytes) {
    static std::mutex mutex;
    static std::map<std::pair<const void*, int>, size_t> raised;  // (kernel, device) -> limit set
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    std::lock_guard<std::mutex> lock(mutex);
    size_t& limit = raised[{kernel, device}];
    if (limit >= bytes) return cudaSuccess;
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
    if (err == cudaSuccess) limit = bytes;
    return err;
}

CudaBackend::CudaBackend(int device) : device_(device) {
    const std::string ctx = "cuda:" + std::to_string(device);
    check_cuda(cudaSetDevice(device), ctx, "cudaSetDevice");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device), ctx, "cudaGetDeviceProperties");
    sm_count_ = prop.multiProcessorCount;
    arch_ = prop.major * 10 + prop.minor;
    smem_optin_ = int(prop.sharedMemPerBlockOptin);
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

void* CudaBackend::alloc_host(size_t bytes) {
    if (bytes > kPinnedMaxBytes) return Backend::alloc_host(bytes);
    {
        std::lock_guard<std::mutex> lock(host_mutex_);
        for (auto it = spare_.begin(); it != spare_.end(); ++it)
            if (it->bytes >= bytes && it->bytes <= 2 * bytes) {
                const Spare s = *it;
                spare_.erase(it);
                spare_bytes_ -= s.bytes;
                pinned_[s.p] = s.bytes;
                return s.p;
            }
    }
    cudaSetDevice(device_);
    void* p = nullptr;
    if (cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();  // not sticky: clear it, and use plain memory
        return Backend::alloc_host(bytes);
    }
    std::lock_guard<std::mutex> lock(host_mutex_);
    pinned_[p] = std::max<size_t>(bytes, 1);
    return p;
}

void CudaBackend::release_host(void* p) noexcept {
    if (!p) return;
    std::vector<void*> to_free;  // the oldest spares beyond kSpareMaxBytes
    {
        std::lock_guard<std::mutex> lock(host_mutex_);
        const auto it = pinned_.find(p);
        if (it == pinned_.end()) {
            Backend::release_host(p);  // plain memory
            return;
        }
        spare_.push_back({p, it->second});
        spare_bytes_ += it->second;
        pinned_.erase(it);
        while (spare_bytes_ > kSpareMaxBytes) {
            to_free.push_back(spare_.front().p);
            spare_bytes_ -= spare_.front().bytes;
            spare_.erase(spare_.begin());
        }
    }
    cudaSetDevice(device_);
    for (void* f : to_free) cudaFreeHost(f);
}

std::vector<std::string> CudaBackend::variants(Op op) const {
    switch (op) {
        case Op::Conv2d:
            return cuda::conv2d_variants(arch_);
        case Op::ResidualBlock:
            return cuda::residual_block_variants();
        case Op::PixelShuffle:
            return cuda::pixel_shuffle_variants();
        default:
            return {};
    }
}

void* CudaBackend::scratch(size_t bytes) {
    if (bytes > scratch_bytes_) {
        void* old = scratch_;
        scratch_ = nullptr, scratch_bytes_ = 0;
        release(old);  // waits for the stream: queued kernels may still read it
        scratch_ = alloc(bytes);
        scratch_bytes_ = bytes;
    }
    return scratch_;
}

std::unique_ptr<BackendTimer> CudaBackend::make_timer() {
    use_device();
    return std::make_unique<CudaTimer>(stream_, name() + " timer");
}

}  // namespace cuda

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
    return std::make_unique<cuda::CudaBackend>(device);
}

}  // namespace imr
