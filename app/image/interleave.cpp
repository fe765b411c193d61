// Interleaved samples <-> float planes (see interleave.h). Built with
// -march=x86-64-v3 like the kernels, and with -ffp-contract=off so that both
// the blocks and the scalar loops compute exactly the operations written
// (CMakeLists.txt sets both for this file). A fused x * max + 0.5 would in
// fact quantize every float the same (checked over all floats in [-0.5,
// 1.008]; beyond, both clamp), but nothing here gains from fusing.
//
// Plain loops over RGB (stride 3) stayed scalar in the SSE2 build; with
// AVX2 GCC vectorizes them, but slower than the blocks below (12 MP, from
// planes: RGB 13 vs 11.5 ms, RGBA 22 vs 16 ms). The blocks load whole
// vectors of interleaved samples and sort them into planes with blends and
// permutes (or the reverse). Every arithmetic step is the scalar one applied
// lane by lane, so the results are the same bits; the scalar loops are the
// definition, the fallback, and the tail after the last whole block.
//
// Every loop is a template on the sample type T (uint8_t or uint16_t): an
// 8-bit image is read and written in its bytes, widened to 32-bit lanes (or
// packed back) by the loads and stores alone (load8, load16, store8,
// store16), so its arithmetic, and thus its values, are those of the same
// values held as uint16. The largest sample, and the scale 1 / max, follow
// from T (sample_max), never from the caller.
#include "image/interleave.h"

#include <string>

#include "error.h"
#include "ops/sample_rounding.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace imr {
namespace {

template <class T>
constexpr float sample_max = sizeof(T) == 1 ? 255.f : 65535.f;

using sample_rounding::clamp_unit;
using sample_rounding::quantize;

const float kThird = 1.0f / 3.0f;

// ---------------------------------------------------------------- scalar, pixels [begin, pixels)
template <int CH, int P, class T>
void to_planes_scalar(const T* in, size_t begin, size_t pixels, float scale, float* dst) {
    for (size_t i = begin; i < pixels; ++i)
        for (int c = 0; c < P; ++c) dst[c * pixels + i] = float(in[i * CH + c]) * scale;
}

template <int CH, int P, class T>
void from_planes_scalar(const float* src, size_t begin, size_t pixels, float max, const T* alpha_src, T* out) {
    for (size_t i = begin; i < pixels; ++i) {
        for (int c = 0; c < P; ++c) out[i * CH + c] = T(quantize(src[c * pixels + i], max));
        if (CH > P) out[i * CH + CH - 1] = alpha_src ? alpha_src[i * CH + CH - 1] : 0;
    }
}

template <int CH, class T>
void gray_scalar(const float* src, size_t begin, size_t pixels, float max, const T* alpha_src, T* out) {
    const float *r = src, *g = src + pixels, *b = src + 2 * pixels;
    for (size_t i = begin; i < pixels; ++i) {
        out[i * CH] = T(quantize((clamp_unit(r[i]) + clamp_unit(g[i]) + clamp_unit(b[i])) * kThird, max));
        if (CH == 2) out[i * 2 + 1] = alpha_src ? alpha_src[i * 2 + 1] : 0;
    }
}

#if defined(__AVX2__)
// ---------------------------------------------------------------- AVX2, 8 pixels a block
// Each returns the first pixel it left to the scalar tail.

// 8 samples widened to 8 32-bit lanes.
inline __m256i widen8(const uint16_t* p) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i widen8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// 8 samples as float(v) * scale.
template <class T>
inline __m256 load8(const T* p, __m256 scale) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(widen8(p)), scale);
}

// 16 samples as 16 16-bit lanes.
inline __m256i load16(const uint16_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline __m256i load16(const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// quantize on 8 lanes: maxps/minps return their second operand when a lane
// is NaN, as `v > 0 ? v : 0` does.
inline __m256i quantize8(__m256 x, __m256 max) {
    __m256 v = _mm256_add_ps(_mm256_mul_ps(x, max), _mm256_set1_ps(0.5f));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), max);
    return _mm256_cvttps_epi32(v);
}

inline __m256 clamp01_8(__m256 v) {
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(1.f));
}

// 8 values 0..max (32-bit lanes) as 8 samples. The packs saturate, but the
// values already fit: quantize clamped them to the sample type's max.
inline void store8(uint16_t* p, __m256i q) {
    const __m128i v = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}
inline void store8(uint8_t* p, __m256i q) {
    const __m128i v = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(v, v));
}

// 16 values 0..max (16-bit lanes) as 16 samples.
inline void store16(uint16_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
inline void store16(uint8_t* p, __m256i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

inline __m256i idx8(int a, int b, int c, int d, int e, int f, int g, int h) {
    return _mm256_setr_epi32(a, b, c, d, e, f, g, h);
}

template <class T>
size_t to_planes_1(const T* in, size_t pixels, float scale, float* dst) {
    const __m256 s = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) _mm256_storeu_ps(dst + i, load8(in + i, s));
    return i;
}

// Gray + alpha: each pixel is one 32-bit lane, gray in its low half.
template <class T>
size_t to_planes_2(const T* in, size_t pixels, float scale, float* dst) {
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i low = _mm256_set1_epi32(0xffff);
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const __m256i gray = _mm256_and_si256(load16(in + 2 * i), low);
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(gray), s));
    }
    return i;
}

// RGB: lanes k of the three loaded vectors a, b, c hold samples k, 8 + k and
// 16 + k, so each plane's 8 values sit in distinct lanes of a, b, c (R in
// lanes 0,3,6 of a, 1,4,7 of b, 2,5 of c): two blends gather them, a
// permute orders them.
template <class T>
size_t to_planes_3(const T* in, size_t pixels, float scale, float* dst) {
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i r_order = idx8(0, 3, 6, 1, 4, 7, 2, 5);
    const __m256i g_order = idx8(1, 4, 7, 2, 5, 0, 3, 6);
    const __m256i b_order = idx8(2, 5, 0, 3, 6, 1, 4, 7);
    float *r = dst, *g = dst + pixels, *b = dst + 2 * pixels;
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const T* p = in + 3 * i;
        const __m256 va = load8(p, s), vb = load8(p + 8, s), vc = load8(p + 16, s);
        const __m256 rs = _mm256_blend_ps(_mm256_blend_ps(va, vb, 0x92), vc, 0x24);
        const __m256 gs = _mm256_blend_ps(_mm256_blend_ps(va, vb, 0x24), vc, 0x49);
        const __m256 bs = _mm256_blend_ps(_mm256_blend_ps(va, vb, 0x49), vc, 0x92);
        _mm256_storeu_ps(r + i, _mm256_permutevar8x32_ps(rs, r_order));
        _mm256_storeu_ps(g + i, _mm256_permutevar8x32_ps(gs, g_order));
        _mm256_storeu_ps(b + i, _mm256_permutevar8x32_ps(bs, b_order));
    }
    return i;
}

// RGBA: a 4x4 transpose per 128-bit lane (unpack ps, then pd) leaves each
// plane as pixels 0,2,4,6 | 1,3,5,7; a permute orders them. Alpha is dropped.
template <class T>
size_t to_planes_4(const T* in, size_t pixels, float scale, float* dst) {
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i order = idx8(0, 4, 1, 5, 2, 6, 3, 7);
    float *r = dst, *g = dst + pixels, *b = dst + 2 * pixels;
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const T* p = in + 4 * i;
        const __m256 p01 = load8(p, s), p23 = load8(p + 8, s), p45 = load8(p + 16, s), p67 = load8(p + 24, s);
        const __m256d rg0 = _mm256_castps_pd(_mm256_unpacklo_ps(p01, p23));
        const __m256d rg1 = _mm256_castps_pd(_mm256_unpacklo_ps(p45, p67));
        const __m256d ba0 = _mm256_castps_pd(_mm256_unpackhi_ps(p01, p23));
        const __m256d ba1 = _mm256_castps_pd(_mm256_unpackhi_ps(p45, p67));
        _mm256_storeu_ps(r + i, _mm256_permutevar8x32_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(rg0, rg1)), order));
        _mm256_storeu_ps(g + i, _mm256_permutevar8x32_ps(_mm256_castpd_ps(_mm256_unpackhi_pd(rg0, rg1)), order));
        _mm256_storeu_ps(b + i, _mm256_permutevar8x32_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(ba0, ba1)), order));
    }
    return i;
}

// One gray value per pixel (channels 1 or 2) into out; with 2 channels the
// alpha half of each 32-bit pixel comes from alpha_src, or is 0.
template <class T>
inline void store_gray8(T* out, int channels, __m256i q, const T* alpha_src, size_t i) {
    if (channels == 1) return store8(out + i, q);
    if (alpha_src) q = _mm256_or_si256(q, _mm256_and_si256(load16(alpha_src + 2 * i), _mm256_set1_epi32(-65536)));
    store16(out + 2 * i, q);
}

template <class T>
size_t from_planes_1(const float* src, size_t pixels, float max, int channels, const T* alpha_src, T* out) {
    const __m256 m = _mm256_set1_ps(max);
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) store_gray8(out, channels, quantize8(_mm256_loadu_ps(src + i), m), alpha_src, i);
    return i;
}

template <class T>
size_t gray_from_rgb(const float* src, size_t pixels, float max, int channels, const T* alpha_src, T* out) {
    const __m256 m = _mm256_set1_ps(max), third = _mm256_set1_ps(kThird);
    const float *r = src, *g = src + pixels, *b = src + 2 * pixels;
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const __m256 sum =
            _mm256_add_ps(_mm256_add_ps(clamp01_8(_mm256_loadu_ps(r + i)), clamp01_8(_mm256_loadu_ps(g + i))),
                          clamp01_8(_mm256_loadu_ps(b + i)));
        store_gray8(out, channels, quantize8(_mm256_mul_ps(sum, third), m), alpha_src, i);
    }
    return i;
}

// RGB: the inverse of to_planes_3. Each plane is permuted so that its values
// for output vector a (samples 0-7), b (8-15) and c (16-23) sit in the lanes
// they take there; blends then assemble a, b, c.
template <class T>
size_t from_planes_3(const float* src, size_t pixels, float max, T* out) {
    const __m256 m = _mm256_set1_ps(max);
    const __m256i r_order = idx8(0, 3, 6, 1, 4, 7, 2, 5);
    const __m256i g_order = idx8(5, 0, 3, 6, 1, 4, 7, 2);
    const __m256i b_order = idx8(2, 5, 0, 3, 6, 1, 4, 7);
    const float *r = src, *g = src + pixels, *b = src + 2 * pixels;
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const __m256 rs = _mm256_permutevar8x32_ps(_mm256_loadu_ps(r + i), r_order);
        const __m256 gs = _mm256_permutevar8x32_ps(_mm256_loadu_ps(g + i), g_order);
        const __m256 bs = _mm256_permutevar8x32_ps(_mm256_loadu_ps(b + i), b_order);
        const __m256i qa = quantize8(_mm256_blend_ps(_mm256_blend_ps(rs, gs, 0x92), bs, 0x24), m);
        const __m256i qb = quantize8(_mm256_blend_ps(_mm256_blend_ps(rs, gs, 0x24), bs, 0x49), m);
        const __m256i qc = quantize8(_mm256_blend_ps(_mm256_blend_ps(rs, gs, 0x49), bs, 0x92), m);
        // packus works per 128-bit lane: a0-3 b0-3 | a4-7 b4-7, reordered to a, b.
        store16(out + 3 * i, _mm256_permute4x64_epi64(_mm256_packus_epi32(qa, qb), 0xd8));
        store8(out + 3 * i + 16, qc);
    }
    return i;
}

// RGBA: r | g << 16 and b (alpha 0) as the two 32-bit halves of each 64-bit
// pixel, interleaved per 128-bit lane (pixels 0,1 | 4,5 and 2,3 | 6,7) and
// put in order by a lane swap; alpha is or'ed in from alpha_src.
template <class T>
size_t from_planes_4(const float* src, size_t pixels, float max, const T* alpha_src, T* out) {
    const __m256 m = _mm256_set1_ps(max);
    const __m256i alpha_mask = _mm256_set1_epi64x(int64_t(0xffff000000000000ull));
    const float *r = src, *g = src + pixels, *b = src + 2 * pixels;
    size_t i = 0;
    for (; i + 8 <= pixels; i += 8) {
        const __m256i rg = _mm256_or_si256(quantize8(_mm256_loadu_ps(r + i), m),
                                           _mm256_slli_epi32(quantize8(_mm256_loadu_ps(g + i), m), 16));
        const __m256i qb = quantize8(_mm256_loadu_ps(b + i), m);
        const __m256i p0145 = _mm256_unpacklo_epi32(rg, qb), p2367 = _mm256_unpackhi_epi32(rg, qb);
        __m256i p0123 = _mm256_permute2x128_si256(p0145, p2367, 0x20);
        __m256i p4567 = _mm256_permute2x128_si256(p0145, p2367, 0x31);
        if (alpha_src) {
            p0123 = _mm256_or_si256(p0123, _mm256_and_si256(load16(alpha_src + 4 * i), alpha_mask));
            p4567 = _mm256_or_si256(p4567, _mm256_and_si256(load16(alpha_src + 4 * i + 16), alpha_mask));
        }
        store16(out + 4 * i, p0123);
        store16(out + 4 * i + 16, p4567);
    }
    return i;
}
#else
// No AVX2: every pixel goes through the scalar loops.
template <class T>
size_t to_planes_1(const T*, size_t, float, float*) {
    return 0;
}
template <class T>
size_t to_planes_2(const T*, size_t, float, float*) {
    return 0;
}
template <class T>
size_t to_planes_3(const T*, size_t, float, float*) {
    return 0;
}
template <class T>
size_t to_planes_4(const T*, size_t, float, float*) {
    return 0;
}
template <class T>
size_t from_planes_1(const float*, size_t, float, int, const T*, T*) {
    return 0;
}
template <class T>
size_t gray_from_rgb(const float*, size_t, float, int, const T*, T*) {
    return 0;
}
template <class T>
size_t from_planes_3(const float*, size_t, float, T*) {
    return 0;
}
template <class T>
size_t from_planes_4(const float*, size_t, float, const T*, T*) {
    return 0;
}
#endif

// ---------------------------------------------------------------- per layout, T chosen by the caller's overload
template <class T>
void to_planes(const T* in, int channels, int planes, size_t pixels, float* dst) {
    const float scale = 1.0f / sample_max<T>;
    switch (channels * 8 + planes) {
        case 1 * 8 + 1:
            return to_planes_scalar<1, 1>(in, to_planes_1(in, pixels, scale, dst), pixels, scale, dst);
        case 2 * 8 + 1:
            return to_planes_scalar<2, 1>(in, to_planes_2(in, pixels, scale, dst), pixels, scale, dst);
        case 3 * 8 + 3:
            return to_planes_scalar<3, 3>(in, to_planes_3(in, pixels, scale, dst), pixels, scale, dst);
        case 4 * 8 + 3:
            return to_planes_scalar<4, 3>(in, to_planes_4(in, pixels, scale, dst), pixels, scale, dst);
    }
    throw Error("samples_to_planes: no layout for " + std::to_string(channels) + " channels to " +
                std::to_string(planes) + " planes");
}

template <class T>
void from_planes(const float* src, int planes, size_t pixels, int channels, const T* alpha_src, T* out) {
    const float max = sample_max<T>;
    switch (channels * 8 + planes) {
        case 1 * 8 + 1:
            return from_planes_scalar<1, 1, T>(src, from_planes_1<T>(src, pixels, max, 1, nullptr, out), pixels, max,
                                               nullptr, out);
        case 2 * 8 + 1:
            return from_planes_scalar<2, 1>(src, from_planes_1(src, pixels, max, 2, alpha_src, out), pixels, max,
                                            alpha_src, out);
        case 3 * 8 + 3:
            return from_planes_scalar<3, 3, T>(src, from_planes_3(src, pixels, max, out), pixels, max, nullptr, out);
        case 4 * 8 + 3:
            return from_planes_scalar<4, 3>(src, from_planes_4(src, pixels, max, alpha_src, out), pixels, max,
                                            alpha_src, out);
    }
    throw Error("planes_to_samples: no layout for " + std::to_string(planes) + " planes to " +
                std::to_string(channels) + " channels");
}

template <class T>
void gray_from_planes(const float* src, size_t pixels, int channels, const T* alpha_src, T* out) {
    const float max = sample_max<T>;
    const size_t done = gray_from_rgb(src, pixels, max, channels, alpha_src, out);
    if (channels == 1)
        gray_scalar<1, T>(src, done, pixels, max, nullptr, out);
    else
        gray_scalar<2>(src, done, pixels, max, alpha_src, out);
}

template <class T>
void to_channel(const float* src, size_t pixels, int channels, int channel, T* out) {
    const float max = sample_max<T>;
    for (size_t i = 0; i < pixels; ++i) out[i * channels + channel] = T(quantize(src[i], max));
}

}  // namespace

void samples_to_planes(const uint8_t* in, int channels, int planes, size_t pixels, float* dst) {
    to_planes(in, channels, planes, pixels, dst);
}
void samples_to_planes(const uint16_t* in, int channels, int planes, size_t pixels, float* dst) {
    to_planes(in, channels, planes, pixels, dst);
}

void planes_to_samples(const float* src, int planes, size_t pixels, int channels, const uint8_t* alpha_src,
                       uint8_t* out) {
    from_planes(src, planes, pixels, channels, alpha_src, out);
}
void planes_to_samples(const float* src, int planes, size_t pixels, int channels, const uint16_t* alpha_src,
                       uint16_t* out) {
    from_planes(src, planes, pixels, channels, alpha_src, out);
}

void rgb_planes_to_gray(const float* src, size_t pixels, int channels, const uint8_t* alpha_src, uint8_t* out) {
    gray_from_planes(src, pixels, channels, alpha_src, out);
}
void rgb_planes_to_gray(const float* src, size_t pixels, int channels, const uint16_t* alpha_src, uint16_t* out) {
    gray_from_planes(src, pixels, channels, alpha_src, out);
}

void plane_to_channel(const float* src, size_t pixels, int channels, int channel, uint8_t* out) {
    to_channel(src, pixels, channels, channel, out);
}
void plane_to_channel(const float* src, size_t pixels, int channels, int channel, uint16_t* out) {
    to_channel(src, pixels, channels, channel, out);
}

}  // namespace imr
