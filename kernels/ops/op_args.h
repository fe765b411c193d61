// What the argument struct of every op (kernels/ops/*.h) is made of: the
// NCHW Shape of its tensors and, for an op with weights, the PreparedWeights
// a backend packed from them once.
#pragma once

#include <cstddef>
#include <string>

namespace imr {

// Dimensions of an NCHW tensor.
struct Shape {
    int n = 0, c = 0, h = 0, w = 0;
    size_t count() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
    std::string str() const;  // "[n,c,h,w]"
    bool operator==(const Shape& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
};

// True when every dimension is positive (what every check_args tests first).
bool positive(const Shape& s);

// An op's weights made ready once for one backend's kernels (packed into the
// layout they read: the CPU's output-channel blocks), so a model pays for it
// once, not on every call and tile: Backend::prepare returns it, the op's
// args carry it in `prepared` (the weight pointers stay set as well). Ops
// without it pack per call; the result is the same.
class PreparedWeights {
public:
    virtual ~PreparedWeights() = default;
};

}  // namespace imr
