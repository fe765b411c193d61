// The tensor view every op argument, prepared stage and the runner use: a
// pointer into a backend's memory, the logical NCHW shape, the element type
// and the memory layout. Sizes in bytes come from Tensor::bytes(),
// never from sizeof(float), so a half-precision tensor is one more DType, not
// a new interface (ggml's ggml_tensor, ncnn's Mat elemsize).
//
// Layout, not byte strides: every kernel is written for a dense layout, so
// a layout enum names exactly the forms a kernel can take and a backend can
// answer supports(op, dtype, layout) for; general strides would describe
// views (crops, channel slices, broadcasts) that no kernel handles, and every
// kernel would have to check for and refuse them. NHWC8 is NHWC with the
// channels padded with zeros to a multiple of 8 (16-byte rows of half
// values: what tensor-core tiles load); shape.c stays the logical count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace imr {

// Dimensions of an NCHW tensor (the logical order, whatever the layout).
struct Shape {
    int n = 0, c = 0, h = 0, w = 0;
    size_t count() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
    std::string str() const;  // "[n,c,h,w]"
    bool operator==(const Shape& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
    bool operator!=(const Shape& o) const { return !(*this == o); }
};

// True when every dimension is positive (what every check_args tests first).
bool positive(const Shape& s);

// Element types. F16: IEEE binary16; BF16: the top half of a float32.
enum class DType : uint8_t { F32, F16, BF16 };
constexpr DType kDTypes[] = {DType::F32, DType::F16, DType::BF16};
constexpr size_t dtype_size(DType t) {
    return t == DType::F32 ? 4 : 2;
}
// The unit roundoff u of rounding to nearest: |round(x) - x| <= u * |x| in the
// normal range (2^-24, 2^-11, 2^-8: half the gap between 1 and the next value).
constexpr double unit_roundoff(DType t) {
    return t == DType::F32 ? 1.0 / (1 << 24) : t == DType::F16 ? 1.0 / (1 << 11) : 1.0 / (1 << 8);
}
// Half the gap between 0 and the smallest subnormal: the absolute error of
// rounding a value below the normal range (f16: 2^-25; f32 and bf16: 2^-150).
double subnormal_roundoff(DType t);
const char* dtype_name(DType t);  // "f32", "f16", "bf16"

enum class Layout : uint8_t { NCHW, NHWC, NHWC8 };
constexpr Layout kLayouts[] = {Layout::NCHW, Layout::NHWC, Layout::NHWC8};
const char* layout_name(Layout l);  // "NCHW", "NHWC", "NHWC8"
// Channels a pixel holds in memory: c, or c rounded up to 8 for NHWC8.
inline int stored_channels(Layout l, int c) {
    return l == Layout::NHWC8 ? (c + 7) / 8 * 8 : c;
}

// The type of a tensor's elements and their order in memory.
struct TensorType {
    DType dtype = DType::F32;
    Layout layout = Layout::NCHW;
    bool operator==(const TensorType& o) const { return dtype == o.dtype && layout == o.layout; }
    bool operator!=(const TensorType& o) const { return !(*this == o); }
    std::string str() const;  // "f16 NHWC8"
};

// A view of a dense tensor in some backend's memory (host memory for the CPU
// backend and the references, device memory for CUDA). Ops never write the
// tensors they read (the op tests check it), so one type serves both sides;
// an optional tensor (a bias, a residual) has a null data pointer.
struct Tensor {
    void* data = nullptr;
    Shape shape;
    DType dtype = DType::F32;
    Layout layout = Layout::NCHW;

    explicit operator bool() const { return data != nullptr; }
    // Elements in memory (with NHWC8's padding channels) and their bytes.
    size_t stored_count() const {
        return size_t(shape.n) * size_t(shape.h) * size_t(shape.w) * size_t(stored_channels(layout, shape.c));
    }
    size_t bytes() const { return stored_count() * dtype_size(dtype); }
    // Offset in elements of (n, c, y, x).
    size_t offset(int n, int c, int y, int x) const {
        if (layout == Layout::NCHW) return ((size_t(n) * shape.c + c) * shape.h + y) * shape.w + x;
        return ((size_t(n) * shape.h + y) * shape.w + x) * size_t(stored_channels(layout, shape.c)) + c;
    }
    // The data as T (a kernel that has checked dtype, e.g. as<const float>()).
    template <class T>
    T* as() const {
        return static_cast<T*>(data);
    }
    TensorType type() const { return {dtype, layout}; }
    bool same_type(const Tensor& o) const { return type() == o.type(); }
    // "f32 NCHW [1,3,8,8]"
    std::string str() const;
};

// A float32 NCHW tensor over `p` (the op only reads it when it is an input).
inline Tensor f32_nchw(const float* p, Shape s) {
    return {const_cast<float*>(p), s, DType::F32, Layout::NCHW};
}
// A float32 vector of `len` values (a bias): shape [1, len, 1, 1].
inline Tensor f32_vector(const float* p, int len) {
    return f32_nchw(p, {1, len, 1, 1});
}

// True when the bytes of a and b overlap (both non-null).
bool overlaps(const Tensor& a, const Tensor& b);

// Host conversions, round to nearest even (overflow to infinity, NaN kept).
uint16_t float_to_f16(float v);
float f16_to_float(uint16_t h);
uint16_t float_to_bf16(float v);
float bf16_to_float(uint16_t h);

// Element i of memory (an offset(), not a logical index) of a host tensor,
// as a float; and the store of a float there, rounded to the tensor's type.
float load_float(const Tensor& t, size_t i);
void store_float(const Tensor& t, size_t i, float v);

}  // namespace imr
