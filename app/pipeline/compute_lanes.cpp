#include "pipeline/compute_lanes.h"

#include <algorithm>

#include "runner_options.h"

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
    // --bench (single) times one device: the first of a list.
    workers_ = device_ ? device_workers(main.options().device) : std::vector<std::string>{main.options().device};
    if (single) workers_.resize(1);
    worker_lanes_.assign(workers_.size(), {});
    worker_lanes_[0].push_back(0);
    worker_full_.assign(workers_.size(), false);
}

ComputeLanes::~ComputeLanes() {
    while (!lanes_.empty()) lanes_.pop_back();
}

int ComputeLanes::workers_used() const {
    std::vector<bool> used(workers_.size(), false);
    for (const Lane& l : lanes_) used[l.worker] = used[l.worker] || l.used;
    return int(std::count(used.begin(), used.end(), true));
}

size_t ComputeLanes::add_device_lane(size_t worker) {
    Lane lane;
    lane.worker = worker;
    const bool first_lane = worker_lanes_[worker].empty();
    try {
        if (first_lane) {
            // A GPU of its own: its backend, and a runner that uploads the
            // weights there, with lane 0's settings but the device.
            RunnerOptions on = main_.options();
            on.device = workers_[worker];
            lane.backend = make_backend(on);
            lane.runner = std::make_unique<ModelRunner>(main_.model(), *lane.backend, on);
            // Every worker computes the same result: one that would run in
            // another precision (a GPU without half kernels) is not used.
            if (lane.runner->precision() != main_.precision())
                throw Error(std::string("it would compute in ") + precision_name(lane.runner->precision()) +
                            ", where " + workers_[0] + " computes in " + precision_name(main_.precision()));
        } else {
            // Another stream on the worker's GPU, computing with the weights
            // already there.
            ModelRunner& first = runner(worker_lanes_[worker][0]);
            lane.backend = first.backend().make_sibling(0);
            lane.runner = std::make_unique<ModelRunner>(first, *lane.backend);
        }
    } catch (const std::exception& e) {
        // No lane (out of device memory, no stream, a GPU that will not
        // start, ...): the worker's lanes so far run its share, or the other
        // workers do; that costs speed, not results. A worker that never
        // started is reported, and so are the other workers on its GPU,
        // which are not tried again.
        worker_full_[worker] = true;
        if (first_lane) {
            unused_.push_back(workers_[worker] + " not used: " + e.what());
            for (size_t w = 0; w < workers_.size(); ++w)
                if (workers_[w] == workers_[worker] && worker_lanes_[w].empty()) worker_full_[w] = true;
        }
        return kNone;
    }
    lanes_.push_back(std::move(lane));
    worker_lanes_[worker].push_back(lanes_.size() - 1);
    return lanes_.size() - 1;
}

size_t ComputeLanes::add_narrow_lane() {
    Lane lane;
    try {
        lane.backend = main_.backend().make_sibling(1);
        lane.runner = std::make_unique<ModelRunner>(main_, *lane.backend);  // lane 0's weights and settings
    } catch (const std::exception&) {
        multiple_ = false;  // lane 0 runs everything from now on
        return kNone;
    }
    lane.narrow = true;
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
    if (device_) {
        // Each worker's first lane before any worker's second; a second
        // where the worker's GPU has room for both.
        size_t any = 0;  // a lane that may run this batch, busy or not
        for (size_t slot = 0; slot < kDeviceLanes; ++slot)
            for (size_t w = 0; w < workers_.size(); ++w) {
                std::vector<size_t>& mine = worker_lanes_[w];
                if (slot > 0 && !mine.empty() &&
                    pass_bytes * kDeviceLanes > kLanesMemoryShare * double(runner(mine[0]).backend().free_memory()))
                    continue;
                const size_t lane = slot < mine.size()                        ? mine[slot]
                                    : slot == mine.size() && !worker_full_[w] ? add_device_lane(w)
                                                                              : kNone;
                if (lane == kNone) continue;
                if (!lanes_[lane].busy) return lane;
                any = lane;
            }
        return any;  // all busy: any of them (the caller finishes a batch and picks again)
    }
    // CPU: one-thread lanes for a folder of images that fit once per thread.
    const double free_bytes = kLanesMemoryShare * double(main_.backend().free_memory());
    const bool narrow = jobs_ >= 2 * size_t(threads_) && pass_bytes * threads_ <= free_bytes;
    if (!narrow) return 0;
    size_t made = 0;
    for (size_t i = 1; i < lanes_.size(); ++i) {
        if (!lanes_[i].narrow) continue;
        ++made;
        if (!lanes_[i].busy) return i;
    }
    if (made < size_t(threads_)) {
        const size_t lane = add_narrow_lane();
        return lane == kNone ? 0 : lane;
    }
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
