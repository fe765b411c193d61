// Shared pieces of the op interface: the op names and what a Backend does by
// default. Each op's argument check is in its own file (kernels/ops/); the
// choice of backend from a --device string is the app's (app/runner_options.cpp).
#include "backend.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace imr {

namespace {
constexpr const char* kOpNames[] = {
#define IMR_OP_NAME(Enum, name, Args) #name,
    IMR_FOR_EACH_OP(IMR_OP_NAME)
#undef IMR_OP_NAME
};
}  // namespace

const char* op_name(Op op) {
    return size_t(op) < kOpCount ? kOpNames[size_t(op)] : "?";
}

#define IMR_PREPARE_NOTHING(Enum, name, Args)                        \
    std::unique_ptr<PreparedWeights> Backend::prepare(const Args&) { \
        return nullptr;                                              \
    }
IMR_FOR_EACH_OP(IMR_PREPARE_NOTHING)
#undef IMR_PREPARE_NOTHING

void* Backend::alloc_host(size_t bytes) {
    // 64-byte aligned (a cache line, an AVX-512 vector), the size rounded up
    // to it as aligned_alloc wants.
    constexpr size_t kAlign = 64;
    const size_t rounded = std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (rounded < bytes) throw Error(name() + ": host buffer of " + std::to_string(bytes) + " bytes: size overflows");
    void* p = std::aligned_alloc(kAlign, rounded);
    if (!p) throw OutOfMemory(name() + ": host buffer of " + std::to_string(rounded >> 20) + " MiB: out of memory");
    return p;
}

void Backend::release_host(void* p) noexcept {
    std::free(p);
}

void check_supported(const Backend& backend, Op op, std::initializer_list<const Tensor*> tensors) {
    for (const Tensor* t : tensors)
        if (*t && !backend.supports(op, t->dtype, t->layout))
            throw Error(backend.name() + ": " + op_name(op) + " does not take " + dtype_name(t->dtype) + " " +
                        layout_name(t->layout) + " tensors (" + t->str() + ")");
}

std::vector<std::string> Backend::variants(Op) const {
    return {};
}

void Backend::force_variant(Op op, const std::string& name) {
    if (name.empty()) {
        forced_[size_t(op)] = -1;
        forced_names_[size_t(op)].clear();
        return;
    }
    const std::vector<std::string> names = variants(op);
    if (names.empty())
        throw Error(this->name() + ": " + op_name(op) + " has no kernel variant '" + name + "' (it has one kernel)");
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        throw Error(this->name() + ": " + op_name(op) + " has no kernel variant '" + name + "' (its variants: " + list +
                    ")");
    }
    forced_[size_t(op)] = int(it - names.begin());
    forced_names_[size_t(op)] = name;
}

}  // namespace imr
