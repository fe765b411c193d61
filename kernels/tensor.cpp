// The tensor view's helpers and the host's conversions between float32 and
// the 16-bit types (tensor.h).
#include "tensor.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace imr {

std::string Shape::str() const {
    std::ostringstream s;
    s << '[' << n << ',' << c << ',' << h << ',' << w << ']';
    return s.str();
}

bool positive(const Shape& s) {
    return s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0;
}

double subnormal_roundoff(DType t) {
    return t == DType::F16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -150);
}

const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32:
            return "f32";
        case DType::F16:
            return "f16";
        case DType::BF16:
            return "bf16";
    }
    return "?";
}

const char* layout_name(Layout l) {
    switch (l) {
        case Layout::NCHW:
            return "NCHW";
        case Layout::NHWC:
            return "NHWC";
        case Layout::NHWC8:
            return "NHWC8";
    }
    return "?";
}

std::string TensorType::str() const {
    return std::string(dtype_name(dtype)) + " " + layout_name(layout);
}

std::string Tensor::str() const {
    return std::string(dtype_name(dtype)) + " " + layout_name(layout) + " " + shape.str();
}

bool overlaps(const Tensor& a, const Tensor& b) {
    if (!a.data || !b.data) return false;
    const auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
    const uintptr_t a1 = a0 + std::max<size_t>(a.bytes(), 1), b1 = b0 + std::max<size_t>(b.bytes(), 1);
    return a0 < b1 && b0 < a1;
}

namespace {
uint32_t bits_of(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}
float float_of(uint32_t u) {
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
}
}  // namespace

uint16_t float_to_f16(float v) {
    const uint32_t u = bits_of(v);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN (quiet), infinity
    if (a >= 0x477ff000u) return sign | 0x7c00u;                                // >= 65520: rounds to infinity
    if (a < 0x38800000u) {  // below 2^-14: a subnormal (or zero) half
        // The value in units of 2^-24, rounded to nearest even: add it as a
        // float to 0.5 (whose ulp is 2^-24) and read the mantissa.
        const float scaled = std::fabs(v) + 0.5f;
        return sign | uint16_t(bits_of(scaled) - bits_of(0.5f));
    }
    // Normal: rebias the exponent (127 -> 15), round the 13 dropped bits to nearest even.
    const uint32_t mant_odd = (a >> 13) & 1u;
    const uint32_t r = a + 0xfffu + mant_odd;
    return sign | uint16_t((r - (uint32_t(112) << 23)) >> 13);
}

float f16_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));  // infinity, NaN
    if (exp == 0) {                                                       // zero, subnormal: mant * 2^-24
        const float v = std::ldexp(float(mant), -24);
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_bf16(float v) {
    const uint32_t u = bits_of(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // NaN stays NaN (quiet)
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float bf16_to_float(uint16_t h) {
    return float_of(uint32_t(h) << 16);
}

float load_float(const Tensor& t, size_t i) {
    switch (t.dtype) {
        case DType::F32:
            return t.as<const float>()[i];
        case DType::F16:
            return f16_to_float(t.as<const uint16_t>()[i]);
        case DType::BF16:
            return bf16_to_float(t.as<const uint16_t>()[i]);
    }
    return NAN;
}

void store_float(const Tensor& t, size_t i, float v) {
    switch (t.dtype) {
        case DType::F32:
            t.as<float>()[i] = v;
            break;
        case DType::F16:
            t.as<uint16_t>()[i] = float_to_f16(v);
            break;
        case DType::BF16:
            t.as<uint16_t>()[i] = float_to_bf16(v);
            break;
    }
}

}  // namespace imr
