// The CPU backend (make_cpu_backend): host memory, a steady-clock timer, and
// one file per op of the list (kernels/ops/op_list.h), NAME.cpp, that defines
// its member CpuBackend::NAME, in parallel over OpenMP threads. conv2d.cpp and
// residual_block.cpp also define prepare() for their Args (the weights packed
// for direct_conv.cpp, and for winograd_conv.cpp where conv2d can use it).
// conv2d has kernel variants (its table in conv2d.cpp). A new op: its file. Public (not in an anonymous
// namespace) so tests can wrap it, e.g. to pretend memory is short.
#pragma once

#include <array>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend.h"

namespace imr::cpu {

// Grow-only scratch memory an op keeps between calls (the conv2d's per-thread
// padded input bands, ~8 MB each for a 48-channel 4000-pixel-wide layer), so
// no call pays for a fresh allocation. Not thread-safe: one per backend, ops
// run one at a time.
class Scratch {
public:
    float* get(size_t count) {
        if (count > size_) {
            data_.reset();  // free the old block before taking the larger one
            size_ = 0;
            data_.reset(new (std::nothrow) float[count]);
            if (!data_) throw OutOfMemory("cpu scratch of " + std::to_string(count >> 18) + " MiB: out of memory");
            size_ = count;
        }
        return data_.get();
    }

private:
    std::unique_ptr<float[]> data_;
    size_t size_ = 0;
};

// conv2d's kernel variants, in its table's order (conv2d.cpp).
std::vector<std::string> conv2d_variants();

class CpuBackend : public Backend {
public:
    explicit CpuBackend(int threads);  // threads <= 0: one per hardware thread

    std::string name() const override { return "cpu"; }
    std::string description() const override;
    bool is_host_memory() const override { return true; }
    void* alloc(size_t bytes) override;
    void release(void* p) noexcept override;
    void upload(void* dst, const void* host_src, size_t bytes) override;
    void download(void* host_dst, const void* src, size_t bytes) override;
    void synchronize() override {}
    // What the machine has available, or less where a container (cgroup v1/v2)
    // limits this process: a container on a large host would otherwise be
    // killed instead of tiling.
    size_t free_memory() const override;
    std::unique_ptr<BackendTimer> make_timer() override;
    // The computing ops in f32 NCHW only: no half-precision path has been
    // measured faster on the CPU (AVX2 has no half arithmetic); convert
    // between every dtype and layout.
    bool supports(Op op, DType dtype, Layout layout) const override {
        return op == Op::Convert || (dtype == DType::F32 && layout == Layout::NCHW);
    }
    int host_threads() const override { return threads_; }
    std::unique_ptr<Backend> make_sibling(int threads) const override;

    // The ops, each defined in its own file (see the top of this header).
    IMR_BACKEND_OP_OVERRIDES
    using Backend::prepare;  // the other ops: nothing to prepare
    std::unique_ptr<PreparedWeights> prepare(const ResidualBlockArgs& a) override;
    std::unique_ptr<PreparedWeights> prepare(const Conv2dArgs& a) override;

    // Kernel variants: conv2d's table (conv2d.cpp); the other ops have one kernel.
    std::vector<std::string> variants(Op op) const override;

protected:
    int threads_;
    Scratch conv_scratch_;  // conv2d's padded bands
};

}  // namespace imr::cpu
