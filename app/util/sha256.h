// SHA-256 (FIPS 180-4), to recognize the bundled model files by their
// contents wherever they are installed (app/model_isolation.cpp). Written
// here rather than linked: it is ~80 lines, and no crypto library is
// otherwise a dependency; tests/test_model_file.cpp checks it against the
// FIPS test vectors and against CMake's own file(SHA256) of the models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace imr {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t size);
    // The digest as 64 lowercase hex digits; the object is spent afterwards.
    std::string hex_digest();

private:
    void block(const uint8_t* p);
    uint32_t h_[8];
    uint8_t buffer_[64];
    size_t buffered_ = 0;
    uint64_t total_bytes_ = 0;
};

inline std::string sha256_hex(const std::string& bytes) {
    Sha256 s;
    s.update(bytes.data(), bytes.size());
    return s.hex_digest();
}

}  // namespace imr
