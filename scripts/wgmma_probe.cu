// A check of the two facts the wgmma convolution rows rest on, run on the
// GPU host before its build (scripts/device_session.sh), so that a wrong
// reading of the PTX ISA shows up as one clear line instead of as failing
// op tests:
//   1. the A fragment of wgmma.m64nNk16 with A in registers is, per warp,
//      the mma.sync.m16n8k16 A fragment of rows 16 * warp .. + 15, and the
//      accumulators per n8 tile are the mma.sync C fragment;
//   2. for a K-major, unswizzled B in shared memory, the descriptor's leading
//      byte offset is the distance between core matrices along K and its
//      stride byte offset the distance along N (conv2d_tensor_core.cu,
//      wgmma_desc: LBO 128, SBO 256 for the layout load_weights writes).
// Runs one m64n16k16 (fp16 in, fp32 out) with both assignments of the two
// offsets against a float64 product and prints which one matches.
//
//   nvcc -arch=sm_90a -o wgmma_probe scripts/wgmma_probe.cu && ./wgmma_probe
//   exit 0: LBO = K distance (as written); 3: swapped; 1: neither; 2: no GPU
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

__global__ void probe(const __half* a, const __half* b, float* d, int k_offset, int n_offset) {
    // B: 16 output channels x 16 k, staged as [n / 8][k / 8][8 rows][8 halves].
    __shared__ __align__(128) __half sb[16 * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 256; i += 128) {
        const int n = i / 16, k = i % 16;
        sb[((n / 8 * 2 + k / 8) * 8 + n % 8) * 8 + k % 8] = b[i];
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int warp = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
    const int row = warp * 16 + g;
    auto pair = [&](int r, int k) {
        const __half2 h = __halves2half2(a[r * 16 + k], a[r * 16 + k + 1]);
        return *reinterpret_cast<const uint32_t*>(&h);
    };
    const uint32_t a0 = pair(row, 2 * q), a1 = pair(row + 8, 2 * q), a2 = pair(row, 2 * q + 8),
                   a3 = pair(row + 8, 2 * q + 8);
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(sb));
    const uint64_t desc =
        uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(k_offset >> 4) << 16) | (uint64_t(n_offset >> 4) << 32);
    float c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, "
        "%12, 1, 1, 1, 0;\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
    for (int j = 0; j < 2; ++j)
        for (int e = 0; e < 4; ++e) d[(row + (e / 2) * 8) * 16 + j * 8 + 2 * q + e % 2] = c[j * 4 + e];
}

int main() {
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<__half> a(64 * 16), b(16 * 16);
    for (auto& v : a) v = __float2half(u(rng));
    for (auto& v : b) v = __float2half(u(rng));
    std::vector<double> ref(64 * 16, 0.0);
    for (int m = 0; m < 64; ++m)
        for (int n = 0; n < 16; ++n)
            for (int k = 0; k < 16; ++k)
                ref[m * 16 + n] += double(__half2float(a[m * 16 + k])) * double(__half2float(b[n * 16 + k]));
    __half *da, *db;
    float* dd;
    if (cudaMalloc(&da, a.size() * 2) != cudaSuccess) return std::puts("wgmma probe: no GPU"), 2;
    cudaMalloc(&db, b.size() * 2), cudaMalloc(&dd, 64 * 16 * 4);
    cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
    double err[2];
    for (int swap = 0; swap < 2; ++swap) {
        cudaMemset(dd, 0xff, 64 * 16 * 4);  // NaN: an element never written fails
        probe<<<1, 128>>>(da, db, dd, swap ? 256 : 128, swap ? 128 : 256);
        std::vector<float> d(64 * 16);
        if (cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
            return std::printf("wgmma probe: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
        err[swap] = 0;
        for (int i = 0; i < 64 * 16; ++i) {
            const double e = std::fabs(d[i] - ref[i]);
            err[swap] = std::isnan(e) || e > err[swap] ? (std::isnan(e) ? INFINITY : e) : err[swap];
        }
        std::printf("wgmma probe: LBO %d (K), SBO %d (N): max |error| %.3g\n", swap ? 256 : 128, swap ? 128 : 256,
                    err[swap]);
    }
    const double tol = 1e-4;  // 16 fp16 products summed in fp32
    if (err[0] <= tol) return std::puts("wgmma probe: as conv2d_tensor_core.cu has it"), 0;
    if (err[1] <= tol) return std::puts("wgmma probe: LBO and SBO swapped"), 3;
    return std::puts("wgmma probe: neither matches (the fragment layouts?)"), 1;
}
