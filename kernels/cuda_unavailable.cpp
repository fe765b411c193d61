// Built instead of kernels/cuda/ when CMake found no CUDA compiler: the CUDA
// entry points exist and say why they cannot run.
#include "backend.h"

namespace imr {

bool cuda_compiled() {
    return false;
}

int cuda_device_count(std::string* why) {
    if (why) *why = "this imrestore was built without CUDA";
    return 0;
}

std::unique_ptr<Backend> make_cuda_backend(int) {
    throw Error("this imrestore was built without CUDA");
}

}  // namespace imr
