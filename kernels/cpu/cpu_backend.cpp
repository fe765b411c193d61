// make_cpu_backend: host memory, a steady-clock timer and the OpenMP ops of
// conv2d.cpp and residual_block.cpp.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cpu_ops.h"
#include "system_memory.h"

namespace imr {

namespace {

// Allocation alignment: one cache line (also a whole AVX-512 vector).
constexpr size_t kAlignment = 64;

class CpuTimer : public BackendTimer {
public:
    void start() override { start_ = std::chrono::steady_clock::now(); }
    void stop() override { stop_ = std::chrono::steady_clock::now(); }
    double elapsed_ms() override { return std::chrono::duration<double, std::milli>(stop_ - start_).count(); }

private:
    std::chrono::steady_clock::time_point start_, stop_;
};

class CpuBackend : public Backend {
public:
    explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {}

    std::string name() const override { return "cpu"; }
    std::string description() const override {
        return "CPU, " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
    }
    bool is_host_memory() const override { return true; }

    float* alloc(size_t count) override {
        const size_t bytes =
            std::max<size_t>(kAlignment, (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment);
        if (count > bytes / sizeof(float))
            throw Error("cpu alloc of " + std::to_string(count) + " floats: size overflows");
        void* p = std::aligned_alloc(kAlignment, bytes);
        if (!p)
            throw OutOfMemory("cpu alloc of " + std::to_string(count) + " floats (" + std::to_string(bytes >> 20) +
                              " MiB): out of memory");
        return static_cast<float*>(p);
    }
    void release(float* p) noexcept override { std::free(p); }
    void upload(float* dst, const float* host_src, size_t count) override {
        if (count) std::memcpy(dst, host_src, count * sizeof(float));
    }
    void download(float* host_dst, const float* src, size_t count) override {
        if (count) std::memcpy(host_dst, src, count * sizeof(float));
    }
    void synchronize() override {}

    // What the machine has available, or less where a container (cgroup v2
    // memory.max) limits this process: a container on a large host would
    // otherwise be killed instead of tiling.
    size_t free_memory() const override { return host_memory_available(); }

    std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a) override {
        if (!a.weight || a.out_channels < 1 || a.in.c < 1 || a.kernel < 1)
            throw Error("cpu: conv2d weights to prepare: null weight or non-positive sizes");
        return std::make_unique<cpu::PackedConv>(cpu::pack_conv(a.weight, a.bias, a.out_channels, a.in.c, a.kernel));
    }
    std::unique_ptr<PreparedWeights> prepare(const ResidualBlockArgs& a) override {
        if (!a.conv_in_weight || !a.conv_out_weight || a.hidden < 1 || a.shape.c < 1)
            throw Error("cpu: residual_block weights to prepare: null weight or non-positive sizes");
        return std::make_unique<cpu::PackedResidualBlock>(cpu::pack_residual_block(a));
    }

    bool supports(Op) const override { return true; }
    void residual_block(const ResidualBlockArgs& a) override { cpu::residual_block(a, threads_); }
    void conv2d(const Conv2dArgs& a) override { cpu::conv2d(a, threads_, conv_scratch_); }
    void pixel_shuffle(const PixelShuffleArgs& a) override { cpu::pixel_shuffle(a, threads_); }

    std::unique_ptr<BackendTimer> make_timer() override { return std::make_unique<CpuTimer>(); }

private:
    int threads_;
    cpu::Scratch conv_scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
    return std::make_unique<CpuBackend>(threads);
}

}  // namespace imr
