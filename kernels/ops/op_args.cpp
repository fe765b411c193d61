// The checks every op's check_args shares (op_args.h).
#include "op_args.h"

namespace imr {

void expect_tensor(const Tensor& t, const char* name, const Shape& shape, const ArgFail& fail) {
    if (!t) fail(std::string("null ") + name + " tensor");
    if (t.shape != shape) fail(std::string(name) + " is " + t.shape.str() + ", expected " + shape.str());
}

void expect_f32_nchw(const Tensor& t, const char* name, const ArgFail& fail) {
    if (t.dtype != DType::F32 || t.layout != Layout::NCHW)
        fail(std::string(name) + " is " + t.str() + ", expected f32 NCHW");
}

}  // namespace imr
