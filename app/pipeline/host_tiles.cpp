#include "pipeline/host_tiles.h"

#include <vector>

#include "image/image_batch.h"

namespace imr {

Image restore_in_tiles(ModelRunner& runner, const Image& source, int bit_depth, float blend, size_t max_bytes,
                       StageTimer* timer) {
    const int channels = runner.model().channels;
    const int items = items_per_image(source, channels);  // throws for a model this image cannot go through
    Image out;
    out.width = source.width, out.height = source.height, out.channels = source.channels;
    out.bit_depth = bit_depth ? bit_depth : source.bit_depth;
    out.allocate();                     // in its own depth's type: an 8-bit output takes a byte a sample
    std::vector<float> input, blended;  // a tile's input again and its blended output, for --strength
    for (int item = 0; item < items; ++item) {
        auto read = [&](ModelRunner::PlaneRect r, float* planes) {
            image_rect_to_planes(source, channels, item, {r.y, r.x, r.h, r.w}, planes);
        };
        auto write = [&](ModelRunner::PlaneRect r, const float* planes) {
            const ImageRect rect{r.y, r.x, r.h, r.w};
            if (blend == 1) return planes_rect_to_image(planes, channels, item, rect, source, out);
            const size_t n = size_t(channels) * r.h * r.w;
            input.resize(n);
            image_rect_to_planes(source, channels, item, rect, input.data());
            blended.assign(planes, planes + n);
            blend_toward_input(input.data(), blended.data(), n, blend);  // as the planes path does
            planes_rect_to_image(blended.data(), channels, item, rect, source, out);
        };
        runner.run_tiles({1, channels, source.height, source.width}, read, write, timer, max_bytes);
    }
    return out;
}

}  // namespace imr
