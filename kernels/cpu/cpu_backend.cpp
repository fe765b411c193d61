// The CPU backend's memory, timer and factory; its ops are in their own
// files (cpu_backend.h).
#include "cpu_backend.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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

}  // namespace

namespace cpu {

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {}

std::vector<std::string> CpuBackend::variants(Op op) const {
    return op == Op::Conv2d ? conv2d_variants() : std::vector<std::string>{};
}

std::string CpuBackend::description() const {
    return "CPU, " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
}

float* CpuBackend::alloc(size_t count) {
    const size_t bytes =
        std::max<size_t>(kAlignment, (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment);
    if (count > bytes / sizeof(float)) throw Error("cpu alloc of " + std::to_string(count) + " floats: size overflows");
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (!p)
        throw OutOfMemory("cpu alloc of " + std::to_string(count) + " floats (" + std::to_string(bytes >> 20) +
                          " MiB): out of memory");
    return static_cast<float*>(p);
}

void CpuBackend::release(float* p) noexcept {
    std::free(p);
}

void CpuBackend::upload(float* dst, const float* host_src, size_t count) {
    if (count) std::memcpy(dst, host_src, count * sizeof(float));
}

void CpuBackend::download(float* host_dst, const float* src, size_t count) {
    if (count) std::memcpy(host_dst, src, count * sizeof(float));
}

size_t CpuBackend::free_memory() const {
    return host_memory_available();
}

std::unique_ptr<BackendTimer> CpuBackend::make_timer() {
    return std::make_unique<CpuTimer>();
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(int threads) {
    return std::make_unique<cpu::CpuBackend>(threads);
}

}  // namespace imr
