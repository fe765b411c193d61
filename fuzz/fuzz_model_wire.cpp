// libFuzzer target: the bytes the model-reader child sends back
// (decode_raw_model), then their interpretation (every layer's load and
// validate_model). The parent must turn anything into a model or an
// imr::Error: never crash, over-read or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model_file.h"
#include "model_isolation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const imr::RawModel raw =
            imr::decode_raw_model(std::string(reinterpret_cast<const char*>(data), size), "fuzz.h5");
        imr::interpret_raw_model(raw, "fuzz.h5");
    } catch (const imr::Error&) {
    }
    return 0;
}
