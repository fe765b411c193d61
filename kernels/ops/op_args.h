// What the argument struct of every op (kernels/ops/*.h) is made of: its
// tensors (kernels/tensor.h: data, shape, dtype, layout), the checks every
// check_args shares and, for an op with weights, the PreparedWeights a
// backend packed from them once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "tensor.h"

namespace imr {

// Checks shared by the ops' check_args; each calls fail(what) (which throws)
// when `t` is not as expected. `name` says which tensor ("input", "weight").
using ArgFail = std::function<void(const std::string&)>;
// t is present (non-null) and has this shape.
void expect_tensor(const Tensor& t, const char* name, const Shape& shape, const ArgFail& fail);
// t is float32 NCHW (weights and biases: what model files hold; a backend
// packs them into whatever its kernels read in prepare).
void expect_f32_nchw(const Tensor& t, const char* name, const ArgFail& fail);

// An op's weights made ready once for one backend's kernels (packed into the
// layout they read: the CPU's output-channel blocks), so a model pays for it
// once, not on every call and tile: Backend::prepare returns it, the op's
// args carry it in `prepared` (the weight tensors stay set as well). Ops
// without it pack per call; the result is the same.
class PreparedWeights {
public:
    virtual ~PreparedWeights() = default;
};

}  // namespace imr
