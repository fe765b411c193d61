// The fusion pass the runner applies at load time: an element-wise stage
// that a convolution's epilogue computes anyway is folded into that
// convolution, so its tensor is never written and read back (on a GPU a
// memory-bound pass each). In fp32 the fused stage computes the same float
// operations in the same order as the two stages did, so finite results are
// the same; two differences: a NaN the convolution makes may leave a fused
// ReLU as 0 (the kernels' max) where the separate stage keeps it, and in
// fp16/bf16 the fused stage rounds once where the two rounded twice (the
// gate: the product of the two float sums, where the stages multiplied
// their rounded values; a conv2d whose backend cannot gate in the kernel's
// epilogue runs as the two stages, Backend::conv2d_gates_in_epilogue).
//   conv2d (no activation, nothing added) -> activation relu
//       => conv2d with activation relu
//   conv2d / conv_transpose2d (nothing added) -> add (with any other tensor)
//       => the convolution with that tensor as its second input (its residual)
//   depthwise_conv2d -> simple_gate, conv2d (stride 1, no activation,
//   nothing added) -> simple_gate
//       => the convolution computing both halves and their product (its
//          C-channel output never stored: NAFNet's gates after each
//          depthwise and each second 1x1 expansion)
// where the convolution's output is read by that stage alone (and is not the
// model's output). Repeated until nothing changes, so conv -> relu -> add
// becomes one stage. `imrestore model` lists what was fused.
#pragma once

#include <string>
#include <vector>

#include "model_file.h"

namespace imr {

// The model as the runner runs it: every stage named explicitly (fusing
// removes stages, which would renumber the default names), the fusible
// stages folded in. `notes` (if given) gets one line per fusion.
ModelFile fuse_stages(const ModelFile& m, std::vector<std::string>* notes = nullptr);

}  // namespace imr
