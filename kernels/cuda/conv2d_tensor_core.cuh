// Tensor-core convolution (issue 16, part 2): 3x3 and 1x1, stride 1, fp16 or
// bf16 operands, fp32 accumulation, bias + ReLU + residual add fused into the
// epilogue. A standalone interface with no engine types, so that the backend
// can adopt it on top of its typed tensors.
//
// Layouts:
//   - Activations between layers: NHWC in the storage type T (fp16 or bf16),
//     the channel dimension padded to a multiple of 8 (the "channel stride"
//     tc_channel_stride(C)): element (n, y, x, c) at ((n*H + y)*W + x)*Cs + c.
//     Padded channels (C <= c < Cs) must hold finite values on input (the
//     weights there are zero; the kernel's own NHWC outputs write zeros there).
//   - The first layer may read the fp32 NCHW batch directly (input_layout
//     NchwF32) and the last may write fp32 NCHW (output_layout NchwF32), its
//     residual then fp32 NCHW as well: no conversion pass at the network's ends.
//   - Weights: tc_conv_prepare_weights packs fp32 [Cout, Cin, K, K] into
//     T [Cout8][Cin16/16][K*K][16] (Cout padded to 8, Cin to 16, zeros in the
//     padding: 16-channel slices, tap after tap, so any chunk of whole slices
//     is one contiguous run per output channel); tc_conv_weights_bytes says
//     how many bytes that takes.
//   - fp32 NCHW input (meant for C = 3): only as many channels as one chunk
//     of the picked configuration holds (at least 16); tc_conv2d throws beyond.
//   - Stride 1 only (stride 2 is not implemented yet).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace imr::cuda::tc {

enum class TcDType { F16, BF16 };               // storage type of activations and packed weights
enum class TcPad { Zero, Reflect, Replicate };  // as imr::PadMode (kernels/ops/conv2d.h)
enum class TcLayout { NhwcHalf, NchwF32 };      // NhwcHalf: T, channel stride tc_channel_stride(C)

// The channel stride of an NHWC activation of C channels (C rounded up to 8).
constexpr int tc_channel_stride(int channels) {
    return (channels + 7) / 8 * 8;
}

struct TcConvParams {
    int n = 0, h = 0, w = 0;                // input batch and image size
    int in_channels = 0, out_channels = 0;  // 1..1024 each
    int kernel = 3;                         // 1 or 3
    int pad_before = 0, pad_after = 0;      // as Conv2dArgs: output (h + pb + pa - K + 1) x (w + pb + pa - K + 1)
    TcPad pad = TcPad::Zero;
    TcDType dtype = TcDType::F16;
    TcLayout input_layout = TcLayout::NhwcHalf;
    TcLayout output_layout = TcLayout::NhwcHalf;  // the residual has the output's layout and type
    const void* input = nullptr;
    void* output = nullptr;            // must not alias input or residual
    const void* weights = nullptr;     // tc_conv_prepare_weights of the same shape and dtype
    const float* bias = nullptr;       // optional, [out_channels]
    bool relu = false;                 // max(0, .) after the bias
    const void* residual = nullptr;    // optional, output-shaped, added after the activation
    bool residual_multiplies = false;  // the residual multiplies instead (channel attention's x * scale)
    // NAFNet's simple gate in the epilogue: the out_channels sums (after the
    // bias) are paired, and out_channels / 2 channels written, channel c =
    // sum c * sum c + out_channels / 2. out_channels a multiple of 16, NHWC
    // output, no ReLU or residual; the weights packed with gate = true.
    bool gate = false;
    const char* force_config = nullptr;  // tests and benchmarks: a configuration by name (null: picked by shape)
    // The current device's multiprocessors and opt-in shared memory per block
    // (cudaDevAttrMultiProcessorCount, ...MaxSharedMemoryPerBlockOptin): a
    // backend passes the values it queried once; 0 queries them per call.
    int sm_count = 0, smem_optin = 0;
    int arch = 0;  // its compute capability x 10 (90: H100, H200); 0 queries it per call
    int out_h() const { return h + pad_before + pad_after - kernel + 1; }
    int out_w() const { return w + pad_before + pad_after - kernel + 1; }
};

// Whether the warpgroup-MMA (wgmma) configurations run on a GPU of compute
// capability arch (x 10): sm_90 with the build's sm_90a code; and whether
// tc_conv2d picks them there (3x3 of Cout > 32): the environment variable
// IMRESTORE_WGMMA (1 or 0; an A/B switch for benchmarks), else the build's
// default, on (tc_wgmma_picked).
bool tc_wgmma_runs(int arch);
bool tc_wgmma_picked(int arch);

// Bytes of the packed weights of a [cout, cin, k, k] convolution.
size_t tc_conv_weights_bytes(int out_channels, int in_channels, int kernel);

// Packs fp32 weights [cout, cin, k, k] (device memory) into `packed` (device
// memory of tc_conv_weights_bytes), rounded to dtype, on `stream`. With
// `gate`, for TcConvParams::gate: output column n holds channel
// tc_gate_channel(n, cout), so that each lane's pair of accumulator columns
// in two neighbouring n8 tiles is (channel g, g + cout/2) and (g + 1, g + 1
// + cout/2): two gated channels side by side, stored as one pair.
void tc_conv_prepare_weights(const float* weights_f32, int out_channels, int in_channels, int kernel, TcDType dtype,
                             void* packed, cudaStream_t stream, bool gate = false);

// The channel a gate-packed output column n holds (cout a multiple of 16):
// in each 16 columns (two n8 tiles) the lane pair 2l, 2l + 1 of tile 2t + s
// is gated channel 8t + 2l + s and its partner cout/2 later.
__host__ __device__ constexpr int tc_gate_channel(int n, int cout) {
    const int tile = n / 8, l = (n % 8) / 2, second = n % 2;
    const int g = 8 * (tile / 2) + 2 * l + tile % 2;
    return second ? g + cout / 2 : g;
}

// Runs the convolution on `stream`:
//   output = relu?(conv(pad(input), weights) + bias) + residual
// (* residual with residual_multiplies; in fp32, rounded once to the output)
// Throws std::invalid_argument naming the problem when the parameters cannot
// run (sizes, kernel, reflect padding not smaller than the image, nulls,
// aliasing), std::runtime_error when the launch fails.
void tc_conv2d(const TcConvParams& p, cudaStream_t stream);

// The name of the tile configuration tc_conv2d picks for these parameters
// (for benchmarks and test logs).
const char* tc_conv2d_config_name(const TcConvParams& p);

// The configuration table, for tests and benchmarks that run every row
// (force_config): its size, row i's name and kernel size.
int tc_conv2d_config_count();
const char* tc_conv2d_config_name_at(int i);
int tc_conv2d_config_kernel_at(int i);

}  // namespace imr::cuda::tc
