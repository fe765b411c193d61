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

// The CPU's own memory is host memory: the same aligned allocation.
void* CpuBackend::alloc(size_t bytes) {
    return alloc_host(bytes);
}

void CpuBackend::release(void* p) noexcept {
    release_host(p);
}

void CpuBackend::upload(void* dst, const void* host_src, size_t bytes) {
    if (bytes) std::memcpy(dst, host_src, bytes);
}

void CpuBackend::download(void* host_dst, const void* src, size_t bytes) {
    if (bytes) std::memcpy(host_dst, src, bytes);
}

size_t CpuBackend::free_memory() const {
    return host_memory_available();
}

std::unique_ptr<Backend> CpuBackend::make_sibling(int threads) const {
    return std::make_unique<CpuBackend>(threads > 0 ? threads : threads_);
}

std::unique_ptr<BackendTimer> CpuBackend::make_timer() {
    return std::make_unique<CpuTimer>();
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(int threads) {
    return std::make_unique<cpu::CpuBackend>(threads);
}

}  // namespace imr
