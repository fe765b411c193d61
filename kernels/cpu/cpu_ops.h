// The CPU ops behind make_cpu_backend (private to kernels/cpu/). Each calls
// check_args first and run on `threads` OpenMP threads.
#pragma once

#include <memory>
#include <new>
#include <string>

#include "backend.h"
#include "direct_conv.h"

namespace imr::cpu {

// Grow-only scratch memory an op keeps between calls (the conv2d's per-thread
// padded input bands, ~8 MB each for a 48-channel 4000-pixel-wide layer), so
// no call pays for a fresh allocation. Not thread-safe: one per backend, ops
// run one at a time.
class Scratch {
public:
    float* get(size_t count) {
        if (count > size_) {
            data_.reset();  // free the old block before taking the larger one
            size_ = 0;
            data_.reset(new (std::nothrow) float[count]);
            if (!data_) throw OutOfMemory("cpu scratch of " + std::to_string(count >> 18) + " MiB: out of memory");
            size_ = count;
        }
        return data_.get();
    }

private:
    std::unique_ptr<float[]> data_;
    size_t size_ = 0;
};

// The residual block's two convolutions packed for direct_conv.
struct PackedResidualBlock : PreparedWeights {
    PackedConv conv_in, conv_out;
};
PackedResidualBlock pack_residual_block(const ResidualBlockArgs& a);

void residual_block(const ResidualBlockArgs& a, int threads);
void conv2d(const Conv2dArgs& a, int threads, Scratch& scratch);
void pixel_shuffle(const PixelShuffleArgs& a, int threads);

}  // namespace imr::cpu
