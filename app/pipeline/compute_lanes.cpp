#include "pipeline/compute_lanes.h"

#include <algorithm>

namespace imr {

namespace {

// Device lanes: two (one computes while the other copies); more would only
// share the same SMs and copy engines.
constexpr size_t kDeviceLanes = 2;
// Share of the backend's free memory that every lane's activations together
// may take before a sibling is refused (a refused sibling costs speed, not
// results: lane 0 then runs everything, tiled where it must).
constexpr double kLanesMemoryShare = 0.5;

}  // namespace

ComputeLanes::ComputeLanes(ModelRunner& main, size_t jobs, bool single)
    : main_(main),
      device_(!main.backend().is_host_memory()),
      threads_(main.backend().host_threads()),
      multiple_(!single && (device_ || threads_ > 1)),
      jobs_(jobs) {
    lanes_.push_back({});
}

size_t ComputeLanes::add_lane(int threads, bool narrow) {
    Lane lane;
    try {
        lane.backend = main_.backend().make_sibling(threads);
        // The whole of lane 0's settings (tile, precision, forced variants):
        // every lane computes the same result.
        lane.runner = std::make_unique<ModelRunner>(main_.model(), *lane.backend, main_.options());
    } catch (const std::exception&) {
        // No sibling (out of device memory for its weights, no stream, ...):
        // lane 0 runs everything from now on, which costs speed, not results.
        multiple_ = false;
        return 0;
    }
    lane.narrow = narrow;
    lanes_.push_back(std::move(lane));
    return lanes_.size() - 1;
}

size_t ComputeLanes::pick(const Shape& shape) {
    if (!multiple_) return 0;
    try {
        return pick_lane(shape);
    } catch (const std::exception&) {  // free_memory() failing (a CUDA error): as a missing sibling
        multiple_ = false;
        return 0;
    }
}

size_t ComputeLanes::pick_lane(const Shape& shape) {
    // Memory every lane of this kind would hold for the batch, against what
    // the backend has free now (lanes already made hold theirs).
    const double pass_bytes = double(main_.bytes_per_pixel()) * shape.n * shape.h * shape.w;
    const double free_bytes = kLanesMemoryShare * double(main_.backend().free_memory());
    if (device_) {
        const size_t want = pass_bytes * kDeviceLanes <= free_bytes ? kDeviceLanes : 1;
        for (size_t i = 0; i < lanes_.size() && i < want; ++i)
            if (!lanes_[i].busy) return i;
        if (lanes_.size() < want) return add_lane(0, false);
        return 0;  // all busy: any of them (the caller finishes a batch and picks again)
    }
    // CPU: one-thread lanes for a folder of images that fit once per thread.
    const bool narrow = jobs_ >= 2 * size_t(threads_) && pass_bytes * threads_ <= free_bytes;
    if (!narrow) return 0;
    size_t made = 0;
    for (size_t i = 1; i < lanes_.size(); ++i) {
        if (!lanes_[i].narrow) continue;
        ++made;
        if (!lanes_[i].busy) return i;
    }
    if (made < size_t(threads_)) return add_lane(1, true);
    // All busy: any of them (the caller finishes a batch and picks again).
    for (size_t i = 1; i < lanes_.size(); ++i)
        if (lanes_[i].narrow) return i;
    return 0;
}

bool ComputeLanes::idle(size_t lane) const {
    if (lanes_[lane].busy) return false;
    // Lane 0 (every CPU thread) and the one-thread lanes exclude each other.
    const bool narrow = lanes_[lane].narrow;
    return std::none_of(lanes_.begin(), lanes_.end(),
                        [&](const Lane& l) { return l.busy && (narrow ? &l == &lanes_[0] : l.narrow && lane == 0); });
}

}  // namespace imr
