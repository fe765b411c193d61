// One image restored tile by tile straight from its samples into the
// output image's (ModelRunner::run_tiles), for images too large to hold as
// whole float planes: a 100 MP RGB photo is 1.2 GB of planes each way, its
// samples 0.6 GB. Each tile's planes are made as the tile runs and its
// result quantized into the output at once, so memory is the two images
// plus one pass (at most `max_bytes` of backend memory where given, else the
// runner's own pass budget). The output equals
// planes_to_image(run(image_to_planes(...))), --strength included, bit for
// bit: the same conversions, a row at a time, and run_tiles equals run().
#pragma once

#include <cstddef>

#include "image/image_io.h"
#include "model_runner.h"
#include "stage_timer.h"

namespace imr {

// The restored image: source's size, channels and alpha, bit depth
// `bit_depth` (0: source's), no metadata. blend as PipelineOptions::blend
// (out = in + blend * (restored - in), in fp32, before the rounding).
// The runner's extra inputs are whatever set_extra_values set last.
Image restore_in_tiles(ModelRunner& runner, const Image& source, int bit_depth, float blend, size_t max_bytes,
                       StageTimer* timer);

}  // namespace imr
