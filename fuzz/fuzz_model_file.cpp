// libFuzzer target: a whole model file, through load_model_file (the HDF5
// reader in its child process, then the interpretation). Whatever libhdf5
// does with the bytes (crash, loop, run out of memory), this process must
// end with a model or an imr::Error. Each input forks a reader: expect
// ~100-200 executions per second.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/tmp/imrestore-fuzz-model-" + std::to_string(getpid()) + ".h5";
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    }
    try {
        imr::load_model_file(path);
    } catch (const imr::Error&) {
    }
    return 0;
}
