// Where the pipeline runs its batches. Lane 0 is the model runner the
// pipeline was given (every CPU thread, or the GPU's stream); where it pays,
// sibling lanes run other batches at the same time, each with its own
// backend (Backend::make_sibling) and runner, used by one thread at a time:
//  - a device backend (CUDA): one sibling on the same GPU, so one batch's
//    upload and download overlap the other's compute, and the GPU does not
//    wait for the host between batches;
//  - several GPUs (--device cuda:all, cuda:0,2): one worker per GPU listed,
//    each with its own backend and runner (the weights uploaded once per
//    worker) and its own sibling lane; every worker's first lane is used before any
//    second one, so a batch goes to an idle GPU first. All are fed from the
//    pipeline's one read-ahead;
//  - the CPU with several threads, on a folder of images small enough that
//    one copy of the activations per thread fits in memory: one one-thread
//    lane per thread, as many one-thread processes would run (no barrier per
//    layer, no thread waiting for another that a codec thread displaced),
//    while a large image still gets every thread on lane 0. Lane 0 and the
//    one-thread lanes never run at the same time.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "model_runner.h"

namespace imr {

class ComputeLanes {
public:
    // jobs: files in the run (one-thread lanes only for a folder with at
    // least two images per thread); single: lane 0 only (--bench, whose
    // timings must not share the device).
    ComputeLanes(ModelRunner& main, size_t jobs, bool single);
    // Lanes go in the reverse of the order they were made: a sibling's
    // runner uses the weights of the runner it was made from.
    ~ComputeLanes();
    ComputeLanes(const ComputeLanes&) = delete;
    ComputeLanes& operator=(const ComputeLanes&) = delete;
    // The files known so far, as the listing streams (it only grows).
    void set_jobs(size_t jobs) { jobs_ = jobs; }

    // The lane a batch of `shape` runs on (made here, the first time it is
    // needed). It may be busy, when every lane of its kind is: then finish
    // the oldest batch and pick again, until idle(pick(shape)).
    size_t pick(const Shape& shape);
    // Whether `lane` may start now: it and every lane it excludes are idle.
    bool idle(size_t lane) const;
    void set_busy(size_t lane, bool busy) {
        lanes_[lane].busy = busy;
        lanes_[lane].used |= busy;
    }
    // Lanes that have run a batch (for the report).
    int used() const {
        return int(std::count_if(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.used; }));
    }
    // Workers (--device cuda:0,2: one per GPU listed) that have run a batch,
    // and why any that was needed could not start (for the report).
    int workers_used() const;
    const std::vector<std::string>& workers_unused() const { return unused_; }
    ModelRunner& runner(size_t lane) { return lane == 0 ? main_ : *lanes_[lane].runner; }

private:
    static constexpr size_t kNone = size_t(-1);
    struct Lane {
        std::unique_ptr<Backend> backend;  // null for lane 0 (the caller's)
        std::unique_ptr<ModelRunner> runner;
        size_t worker = 0;  // index into workers_
        bool busy = false;
        bool used = false;    // has run a batch
        bool narrow = false;  // a one-thread CPU lane (excludes lane 0 and is excluded by it)
    };
    size_t pick_lane(const Shape& shape);
    // The next lane of `worker` on a device: its first (a backend and runner
    // of its own; lane 0 for worker 0) or a sibling of that first. kNone, and
    // no more lanes for that worker, when one cannot be made.
    size_t add_device_lane(size_t worker);
    size_t add_narrow_lane();  // kNone (and no more) when one cannot be made

    ModelRunner& main_;
    const bool device_;  // main_'s backend is a device (not host memory)
    const int threads_;  // main_'s CPU threads (0 on a device)
    bool multiple_;      // siblings allowed (until one fails to start)
    size_t jobs_;
    std::vector<Lane> lanes_;
    std::vector<std::string> workers_;  // each worker's device (device_workers; the first only when single)
    std::vector<std::vector<size_t>> worker_lanes_;  // per worker, its lanes in the order made
    std::vector<bool> worker_full_;                  // per worker: no more lanes can be made
    std::vector<std::string> unused_;                // "cuda:1 not used: why", per worker that did not start
};

}  // namespace imr
