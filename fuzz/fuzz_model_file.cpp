// libFuzzer target: a whole model file, through load_model_file (the HDF5
// reader in its sandboxed child process, then the interpretation). Whatever
// libhdf5 does with the bytes (crash, loop, run out of memory, try a system
// call the sandbox forbids), this process must end with a model or an
// imr::Error. Each input forks a reader: expect ~100-200 executions per
// second.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "model_file.h"
#include "model_sandbox.h"

// The reader must run as users get it, sandboxed: where the kernel refuses
// seccomp, every input would only be refused as "not read", so say so and stop.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const std::string refusal = imr::seccomp_refusal();
    if (!refusal.empty()) {
        std::fprintf(stderr, "fuzz_model_file: this kernel refuses the model reader's sandbox (%s)\n", refusal.c_str());
        std::exit(1);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/tmp/imrestore-fuzz-model-" + std::to_string(getpid()) + ".h5";
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    }
    try {
        imr::load_model_file(path);
    } catch (const imr::Error& e) {
        // Worth a look (scripts/fuzz.sh counts them): a system call libhdf5
        // makes on some file that the allow-list lacks, or an attack.
        if (std::strstr(e.what(), "tried something a model file never needs"))
            std::fprintf(stderr, "sandbox stop: %s\n", e.what());
    }
    return 0;
}
