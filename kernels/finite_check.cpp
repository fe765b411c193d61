// all_finite (finite_check.h): the host scan, and the dispatch to the CUDA
// reduction (kernels/cuda/finite_check.cu) for device memory.
#include "finite_check.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace imr {

#ifdef IMRESTORE_WITH_CUDA
namespace cuda {
// Defined in kernels/cuda/finite_check.cu; false in *handled when `backend`
// is not a CUDA backend.
bool device_all_finite(Backend& backend, const Tensor& t, bool* handled);
}  // namespace cuda
#endif

namespace {

// A value is not finite when its exponent bits are all ones.
bool host_all_finite(const void* data, size_t count, DType dtype) {
    if (dtype == DType::F32) {
        const auto* p = static_cast<const uint32_t*>(data);
        uint32_t bad = 0;
        for (size_t i = 0; i < count; ++i) bad |= uint32_t((p[i] & 0x7f800000u) == 0x7f800000u);
        return bad == 0;
    }
    const uint16_t mask = dtype == DType::F16 ? 0x7c00 : 0x7f80;
    const auto* p = static_cast<const uint16_t*>(data);
    uint32_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad |= uint32_t((p[i] & mask) == mask);
    return bad == 0;
}

}  // namespace

bool all_finite(Backend& backend, const Tensor& t) {
    if (!t || t.stored_count() == 0) return true;
#ifdef IMRESTORE_WITH_CUDA
    bool handled = false;
    const bool finite = cuda::device_all_finite(backend, t, &handled);
    if (handled) return finite;
#endif
    backend.synchronize();
    if (backend.is_host_memory()) return host_all_finite(t.data, t.stored_count(), t.dtype);
    std::vector<unsigned char> copy(t.bytes());
    backend.download(copy.data(), t.data, copy.size());
    return host_all_finite(copy.data(), t.stored_count(), t.dtype);
}

}  // namespace imr
