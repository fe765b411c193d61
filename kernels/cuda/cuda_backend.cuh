// The CUDA backend (make_cuda_backend): one device, one stream per backend;
// ops are queued on that stream (asynchronous to the host), memory is plain
// cudaMalloc. One file per op of the list (kernels/ops/op_list.h), NAME.cu,
// defines its member CudaBackend::NAME with its kernels; conv2d has a folder,
// conv2d/ (one file per kernel family, the table and CudaBackend::conv2d and
// prepare(Conv2dArgs) in conv2d_variants.cu). A new op: its .cu file (and, if
// it has kernel variants, a case in variants()).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "common.cuh"

namespace imr::cuda {

class CudaBackend : public Backend {
public:
    explicit CudaBackend(int device);
    ~CudaBackend() override {
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
        for (const Spare& s : spare_) cudaFreeHost(s.p);
        if (scratch_) cudaFree(scratch_);
    }

    std::string name() const override { return "cuda:" + std::to_string(device_); }
    std::string description() const override { return description_; }
    bool is_host_memory() const override { return false; }
    bool has_tf32_conv2d() const override { return arch_ >= 80; }  // the igemm_tf32_* rows
    bool conv2d_gates_in_epilogue(const Conv2dArgs& a) const override;

    void* alloc(size_t bytes) override {
        use_device();
        void* p = nullptr;
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
        return p;
    }
    void release(void* p) noexcept override {
        if (!p) return;
        // Never throws: it runs in destructors, also while an earlier CUDA
        // error unwinds the stack; that error has been reported already.
        // The stream may still use p: free only after the queued work ends.
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        cudaFree(p);
    }
    void upload(void* dst, const void* host_src, size_t bytes) override {
        use_device();
        check_cuda(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
                   name() + ": upload of " + std::to_string(bytes) + " bytes", "cudaMemcpyAsync");
        // From pinned memory (alloc_host) the copy is asynchronous: wait for it,
        // so the caller may reuse host_src at once (from pageable memory the
        // driver stages it, and the wait is the same).
        check_cuda(cudaStreamSynchronize(stream_), name() + ": upload", "cudaStreamSynchronize");
    }
    void download(void* host_dst, const void* src, size_t bytes) override {
        use_device();
        check_cuda(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
                   name() + ": download of " + std::to_string(bytes) + " bytes", "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(stream_), name() + ": download", "cudaStreamSynchronize");
    }
    void synchronize() override {
        use_device();
        check_cuda(cudaStreamSynchronize(stream_), name(), "cudaStreamSynchronize");
    }
    // Page-locked up to kPinnedMaxBytes, so uploads and downloads run at the
    // bus's speed without a staging copy (portable: usable from every stream
    // and sibling). Larger buffers, and any the driver refuses to lock, are
    // plain memory (slower copies, same results). Thread-safe (the decoder
    // threads allocate).
    //
    // Why the limit: on the H200 host, locking a 12 MP photo's 144 MB of
    // planes took ~15 ms, serialized in the driver across the decoder threads
    // (to-NCHW 123 -> 363 ms per photo on a folder of 16), more than the 19
    // ms of copies it saves, and those copies overlap the other compute
    // lane's work anyway. Small buffers lock in about a millisecond and a
    // folder reuses them.
    //
    // A released page-locked buffer is kept as a spare (up to
    // kSpareMaxBytes) for the next alloc_host of about its size, not freed:
    // cudaFreeHost waits until the whole GPU is idle (measured: 1 s behind
    // another stream's 1 s kernel), which would stall the thread that
    // releases it and the overlap of the two lanes with it.
    static constexpr size_t kPinnedMaxBytes = size_t(32) << 20;
    static constexpr size_t kSpareMaxBytes = size_t(256) << 20;
    void* alloc_host(size_t bytes) override;
    void release_host(void* p) noexcept override;
    std::unique_ptr<Backend> make_sibling(int) const override { return std::make_unique<CudaBackend>(device_); }

    size_t free_memory() const override {
        cudaSetDevice(device_);
        size_t free_b = 0, total_b = 0;
        check_cuda(cudaMemGetInfo(&free_b, &total_b), name(), "cudaMemGetInfo");
        return free_b;
    }

    // conv2d and residual_block in f32 NCHW (the fp32 kernels; the residual
    // block, a benchmark anchor, stays fp32); conv2d also in f16 and bf16
    // NHWC8 on sm_80 and later (the tensor-core kernels, which may read the
    // f32 NCHW batch as a first layer and write f32 NCHW as a last);
    // pixel_shuffle, pure data movement, in every dtype, NCHW, and in f16
    // and bf16 NHWC8; elementwise, activation, simple_gate and concat
    // (memory-bound, computing in float) in every dtype, NCHW and NHWC8;
    // layer_norm, depthwise_conv2d and window_mean in f32 NCHW and f16/bf16
    // NHWC8 (a few KB of static shared memory at most, no tensor cores: any
    // architecture the build targets, sm_70 and later for __grid_constant__
    // parameters); convert
    // between every dtype and layout.
    // The tensor-core rows are sized for the 164-227 KB of shared memory a
    // block may opt into on the A100/H100/H200: with the ~99 KB of sm_86/89
    // parts some shapes (Cout > 64, or a 3-channel last layer of many inputs)
    // have no configuration that fits, and a row that may not launch must
    // not be promised, so half precision needs >= 160 KB (else fp32 runs).
    static constexpr int kTensorCoreSharedMemory = 160 * 1024;
    bool supports(Op op, DType dtype, Layout layout) const override {
        if (op == Op::Convert) return true;
        if (op == Op::Elementwise || op == Op::Activation || op == Op::SimpleGate || op == Op::Concat)
            return layout == Layout::NCHW || layout == Layout::NHWC8;
        if (op == Op::PixelShuffle) return layout == Layout::NCHW || (layout == Layout::NHWC8 && dtype != DType::F32);
        if (op == Op::LayerNorm || op == Op::DepthwiseConv2d || op == Op::WindowMean)
            return dtype == DType::F32 ? layout == Layout::NCHW : layout == Layout::NHWC8;
        if (op == Op::Conv2d && dtype != DType::F32)
            return arch_ >= 80 && smem_optin_ >= kTensorCoreSharedMemory && layout == Layout::NHWC8;
        return dtype == DType::F32 && layout == Layout::NCHW;
    }
    // The ops, each defined in its own file (see the top of this header).
    IMR_BACKEND_OP_OVERRIDES
    using Backend::prepare;  // the other ops: nothing to prepare
    std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a) override;

    // Kernel variants: conv2d's, residual_block's and pixel_shuffle's tables.
    std::vector<std::string> variants(Op op) const override;

    std::unique_ptr<BackendTimer> make_timer() override;

    // Grow-only device memory an op keeps between calls (window_mean's
    // float row sums: 4 bytes per stored element of its input; conv2d's sums
    // where a gate is not in its kernel's epilogue, for direct callers: a
    // model layer gates in its own planned scratch then), at least
    // `bytes`. One per backend: ops run one at a time on its stream, and a
    // larger request frees the old block only after the queued work ends.
    void* scratch(size_t bytes);

private:
    void use_device() const { check_cuda(cudaSetDevice(device_), name(), "cudaSetDevice"); }

    int device_;
    struct Spare {
        void* p;
        size_t bytes;
    };
    std::mutex host_mutex_;                     // guards the two below
    std::unordered_map<void*, size_t> pinned_;  // page-locked buffers handed out, and their bytes
    std::vector<Spare> spare_;                  // released page-locked buffers, oldest first
    size_t spare_bytes_ = 0;
    int sm_count_ = 0;
    int arch_ = 0;        // compute capability, major * 10 + minor
    int smem_optin_ = 0;  // shared memory per block with opt-in (bytes), queried once
    std::string description_;
    cudaStream_t stream_ = nullptr;
    void* scratch_ = nullptr;  // scratch(): its block and size
    size_t scratch_bytes_ = 0;
};

}  // namespace imr::cuda
