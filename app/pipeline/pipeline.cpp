#include "pipeline/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include "image/image_batch.h"
#include "image/jpeg_projection.h"
#include "image/jpeg_quality.h"
#include "image/neutral_gray.h"
#include "jobs/output_folders.h"
#include "pipeline/compute_lanes.h"
#include "pipeline/host_tiles.h"

namespace imr {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ running

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// A JPEG input's bytes, kept for the projection at write time.
using JpegBytes = std::shared_ptr<const std::vector<uint8_t>>;

// What reading one job gave: an image, or why there is none.
struct Decoded {
    Image image;
    HostBuffer planes;     // the image as the model's NCHW input (image_to_planes), made by the decoder
    size_t floats = 0;     // of planes (a pooled buffer may be larger)
    bool tiled = false;    // too large for planes: restored in tiles from its samples (host_tiles.h), no planes
    bool samples = false;  // goes to the model as its samples (PipelineOptions::samples), no planes
    FileResult::Status status = FileResult::Status::Restored;  // Restored = go on
    std::string message;
    std::vector<std::string> warnings;  // of reading (metadata dropped)
    ImageLevels levels;                 // the model's extra inputs for it (PipelineOptions::levels)
    JpegBytes jpeg;                     // the JPEG file itself (PipelineOptions::jpeg_projection), else null
    bool neutral = false;               // RGB with R = G = B everywhere: the output is made so too (neutral_gray.h)
    double ms = 0, to_nchw_ms = 0, levels_ms = 0;
};

struct Pending {
    size_t job;
    Image image;  // its metadata goes on to the writer with it
    HostBuffer planes;
    size_t floats;  // of planes used (Decoded::floats)
    bool tiled;     // Decoded::tiled: a batch of its own
    bool samples;   // Decoded::samples: restored in its own samples, in batches of such images
    std::vector<std::string> warnings;
    ImageLevels levels;
    JpegBytes jpeg;
    bool neutral;  // Decoded::neutral
};

// Standard input, whole (one image; "-" in messages).
std::vector<uint8_t> read_stdin() {
    std::vector<uint8_t> data;
    uint8_t chunk[1 << 16];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        if (data.size() + got > size_t(INT32_MAX)) throw Error("-: standard input is over 2 GiB");
        data.insert(data.end(), chunk, chunk + got);
    }
    if (std::ferror(stdin)) throw Error("-: cannot read standard input: " + std::string(std::strerror(errno)));
    return data;
}

// The encoded image to standard output. A closed pipe (EPIPE: `| head`) is
// that file's error, not a crash: SIGPIPE is ignored while imrestore runs.
void write_stdout(const std::vector<uint8_t>& bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
        throw Error(std::string("-: cannot write standard output: ") + std::strerror(errno));
}

// Float buffers for the images' planes and the model's output, kept for
// reuse instead of being freed: a fresh 144 MB buffer (a 12 MP photo) costs
// tens of milliseconds of page faults and zero-filling on first touch, and
// on a GPU the small ones are page-locked (Backend::alloc_host), which costs
// more to make but makes the copies to and from the device run at the bus's
// speed. A buffer handed out may be larger than asked for (at most twice;
// its bytes() are not the batch's: callers keep their own count). The pool
// holds at most `max_bytes` of idle buffers. Thread-safe.
class PlanesPool {
public:
    PlanesPool(Backend& backend, size_t max_bytes) : backend_(backend), max_bytes_(max_bytes) {}
    HostBuffer take(size_t n) {  // n floats
        const size_t want = n * sizeof(float);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto best = free_.end();
            for (auto it = free_.begin(); it != free_.end(); ++it)  // the smallest that fits, at most twice n
                if (it->bytes() >= want && it->bytes() <= 2 * want &&
                    (best == free_.end() || it->bytes() < best->bytes()))
                    best = it;
            if (best != free_.end()) {
                HostBuffer b = std::move(*best);
                free_.erase(best);
                idle_bytes_ -= b.bytes();
                return b;
            }
        }
        return HostBuffer(backend_, want);
    }
    void give(HostBuffer b) {
        const size_t bytes = b.bytes();
        std::lock_guard<std::mutex> lock(mutex_);
        if (bytes == 0 || idle_bytes_ + bytes > max_bytes_) return;  // freed
        idle_bytes_ += bytes;
        free_.push_back(std::move(b));
    }

private:
    Backend& backend_;
    std::mutex mutex_;
    std::vector<HostBuffer> free_;
    size_t idle_bytes_ = 0;
    const size_t max_bytes_;
};

// Without --force an output that appears while its image is being restored
// is not overwritten either (the skip check ran before the read).
WriteOptions with_overwrite(WriteOptions w, bool force) {
    w.overwrite = force;
    return w;
}

// What a writer thread reports.
struct WriteOutcome {
    std::string error;                  // empty: written
    std::vector<std::string> warnings;  // metadata that could not be written
    bool jpeg_projected = false;        // FileResult::jpeg_projected
    bool kept_gray = false;             // FileResult::kept_gray
};

struct Written {
    size_t job;
    Image source;                       // dimensions only (no samples), for the report
    std::vector<std::string> warnings;  // of reading
    std::future<WriteOutcome> outcome;
};

// What a compute lane's thread reports for one batch.
struct BatchResult {
    HostBuffer output;        // the model's output planes (pooled: may be larger than the batch)
    Image image;              // or, for a tiled image, the restored image itself
    std::string error;        // empty: output (a tiled image: image) holds the batch
    StageTimer timer;         // upload, stages, download of the real run
    StageTimer bench;         // the --bench repeats
    bool fp32_rerun = false;  // the half-precision output was not finite: run again in fp32 (ModelRunner)
    bool fp32 = false;        // computed in fp32 at the pipeline's request (compute_in_fp32)
};

struct Computing {
    std::vector<Pending> batch;
    size_t lane;
    std::future<BatchResult> done;
};

// Images decoded ahead, and encoded behind, at most: enough to fill the next
// batch while this one runs and to give every core a codec to run (encoding
// dominates a GPU run: with 8 in flight a 16-core H200 host restored 127
// images/s, with 32 275 images/s), few enough that threads and memory stay
// small whatever --batch is. Large photos lower it further (in_flight_now).
constexpr size_t kMinInFlight = 4, kMaxInFlight = 32;
// Share of the host's available memory the images in flight may take (read
// ahead + written behind): the rest is for the batch's float planes, the
// model and everything else on the machine.
constexpr double kInFlightMemoryShare = 0.25;
// Host memory a GPU's tiles of a huge image may take at once (the host's
// copies of a tile's input and output planes), so such an image costs its
// samples twice (in and out) plus about this (issue 19: at most 1 GB besides
// the images). On the CPU the runner's own pass budget applies
// (ModelRunner::pass_pixels_fit: 256 MiB, up to 512 MiB for a wide
// receptive field), which is the same bound for the tile planes there.
constexpr size_t kTiledHostBytes = size_t(256) << 20;
// GPU memory a pass over a tile of a huge image may take (activations and
// the tile's input), so that the device, too, holds a fixed amount besides
// the CUDA context (~0.5 GB): the four-level U-Net's 11 MP passes took 2.7
// GB of an H200 for a 100 MP photo; its 2 MP passes do ~40% more work there,
// where the codecs take ~10 times as long as the model. The five-level
// default of 2026-12-04 (radius 288) does several times the work in such
// passes: a ~1400-pixel pass around a ~800-pixel core, about 3x (not
// measured on a GPU).
constexpr size_t kTiledDeviceBytes = size_t(768) << 20;

// The most backend memory a pass over a tile of a huge image may take
// besides the runner's own budget (0: none; on the CPU, or with
// --max-memory, the runner's is the bound): on a GPU as much as keeps the
// host's tile planes (in and out, f32) within kTiledHostBytes (~10 MP passes
// for an RGB model, whole-photo sized, so the GPU stays as busy as on a
// photo) and the pass within kTiledDeviceBytes.
size_t tiled_pass_budget(const ModelRunner& runner) {
    if (runner.options().max_memory || runner.backend().is_host_memory()) return 0;
    const size_t pass_pixels = kTiledHostBytes / (2 * sizeof(float) * size_t(runner.model().channels));
    return std::min(pass_pixels * runner.bytes_per_pixel(), kTiledDeviceBytes);
}
size_t in_flight(int batch) {
    size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return std::clamp(std::max(2 * size_t(batch), 2 * cores), kMinInFlight, kMaxInFlight);
}

// read -> batch -> model -> write. Reading runs ahead on worker threads and
// writing runs behind on others (each bounded, so memory stays flat on a
// folder of any size); this thread gathers batches and hands each to a
// compute lane (compute_lanes.h), whose own thread runs the model.
class PipelineRun {
public:
    PipelineRun(const JobSource& source, ModelRunner& runner, const PipelineOptions& options,
                const ProgressFn& progress)
        : source_(source),
          runner_(runner),
          options_(options),
          progress_(progress),
          lookahead_(in_flight(options.batch)),
          in_flight_budget_(size_t(kInFlightMemoryShare * double(host_memory_available()))),
          write_options_(with_overwrite(options.write, options.force)) {}

    PipelineReport run() {
        auto start = std::chrono::steady_clock::now();
        // Enough jobs ahead to know whether the folder is one for one-thread
        // lanes (compute_lanes.h); then one more each time a read starts.
        const size_t ahead = std::max(lookahead_, 2 * size_t(std::max(1, runner_.backend().host_threads())));
        while (taken_ < ahead && pull()) {
        }
        size_t next_read = 0;
        std::deque<std::future<Decoded>> reading;
        for (size_t i = 0;; ++i) {
            if (options_.cancel && options_.cancel->load()) {
                report_.interrupted = true;  // the pending batch is dropped; reads in flight just end
                pending_.clear();
                break;
            }
            while (reading.size() < in_flight_now() && (next_read < taken_ || pull())) {
                FileJob job = slot(next_read).job;  // a copy for the reader's thread
                reading.push_back(std::async(std::launch::async, [this, job = std::move(job)] { return decode(job); }));
                ++next_read;
            }
            if (reading.empty()) break;  // every job read
            collect_finished_batches();  // their writes start while this thread waits for a decode
            Decoded d = reading.front().get();
            reading.pop_front();
            take(i, std::move(d));
        }
        if (!report_.interrupted) flush();
        while (!computing_.empty()) collect_batch();  // also when interrupted: they are written, not dropped
        while (!writing_.empty()) collect_write();
        // Interrupted: what was taken from the source and not finished was not run.
        while (!window_.empty()) finish(base_, FileResult::Status::NotRun, "");  // the front is never done
        report_.listing_done = source_done_;
        report_.wall_ms = ms_since(start);
        report_.compute_lanes = lanes_.used();
        report_.compute_workers = lanes_.workers_used();
        report_.workers_unused = lanes_.workers_unused();
        return std::move(report_);
    }

private:
    // How many images may be decoding (and, separately, encoding) now: by
    // count, and by bytes once the largest image so far is known; until then
    // only 2, so a folder of huge photos cannot start 32 decodes at once.
    size_t in_flight_now() const {
        if (largest_image_bytes_ == 0) return std::min<size_t>(2, lookahead_);
        return std::clamp(in_flight_budget_ / largest_image_bytes_, size_t(1), lookahead_);
    }

    // The next job from the source into the window, its output folder
    // checked; false when the source has no more.
    bool pull() {
        FileJob job;
        if (source_done_ || !source_(job)) {
            source_done_ = true;
            return false;
        }
        folders_.check(job);  // an unwritable folder fails its files before any compute
        window_.emplace_back();
        window_.back().job = std::move(job);
        ++taken_;
        lanes_.set_jobs(taken_);
        report_.peak_jobs_held = std::max(report_.peak_jobs_held, window_.size());
        return true;
    }

    // Job `seq` (counted from the first taken), while it is in the window.
    struct Slot {
        FileJob job;
        bool fp32_rerun = false;
        Precision precision = Precision::Fp32;  // what its batch was computed in
        std::vector<FileResult::Level> levels;  // the levels its model was given (--noise-level, estimated)
        bool jpeg_projected = false;
        bool kept_gray = false;
        bool done = false;
    };
    Slot& slot(size_t seq) { return window_[seq - base_]; }

    // Whether `image` goes to the model as its samples (PipelineOptions::samples).
    bool as_samples(const Image& image) const {
        if (options_.samples == PipelineOptions::Samples::Off) return false;
        if (options_.samples == PipelineOptions::Samples::Auto &&
            (runner_.backend().is_host_memory() || runner_.options().tta))  // run_samples would decline
            return false;
        return options_.write.bit_depth == 0 || options_.write.bit_depth == image.bit_depth;
    }

    // On a worker thread: everything about a job that needs no shared state.
    Decoded decode(const FileJob& job) const {
        Decoded d;
        if (!job.error.empty()) {
            d.status = FileResult::Status::Failed, d.message = job.error;
            return d;
        }
        std::error_code ec;
        const bool to_stdout = job.output == kStdio;
        if (!to_stdout && fs::is_directory(job.output, ec)) {
            d.status = FileResult::Status::Failed,
            d.message = job.output + ": is a folder; cannot write the image there";
            return d;
        }
        if (!to_stdout && fs::exists(job.output, ec) && !options_.force) {
            d.status = FileResult::Status::Skipped, d.message = job.output + ": exists (--force overwrites it)";
            return d;
        }
        auto t = std::chrono::steady_clock::now();
        try {
            const bool from_stdin = job.input == kStdio;
            std::vector<uint8_t> bytes = from_stdin ? read_stdin() : read_image_file(job.input);
            d.image =
                decode_image(from_stdin ? "-" : job.input, bytes, options_.codec, options_.max_pixels, &d.warnings);
            if (options_.levels) {
                const auto start = std::chrono::steady_clock::now();
                d.levels = options_.levels(d.image, job.input, &bytes);
                d.levels_ms = ms_since(start);
            }
            if (options_.jpeg_projection && is_jpeg(bytes))
                d.jpeg = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
            d.neutral =
                options_.keep_gray && is_neutral_rgb(d.image);   // before a restore in its samples overwrites them
            items_per_image(d.image, runner_.model().channels);  // throws if the channels cannot map
            // Refuse what cannot be written (16-bit or alpha to JPEG, ...) before any compute.
            check_can_write(to_stdout ? "-." + options_.stdout_format : job.output, d.image.channels, d.image.bit_depth,
                            write_options_, options_.codec);
        } catch (const std::exception& e) {  // imr::Error, or bad_alloc from a huge image
            d.status = FileResult::Status::Failed;
            d.message = e.what();
            // Name the file the message is about once: the input, unless it is about the output.
            if (d.message.rfind(job.input, 0) != 0 && d.message.rfind(job.output, 0) != 0)
                d.message = job.input + ": " + d.message;
        }
        d.ms = ms_since(t);
        if (d.status == FileResult::Status::Restored &&
            size_t(items_per_image(d.image, runner_.model().channels)) * d.image.width * d.image.height >
                options_.tiled_above_pixels) {
            d.tiled = true;  // no planes: made tile by tile as the model runs
        } else if (d.status == FileResult::Status::Restored && as_samples(d.image)) {
            d.samples = true;  // no planes: the backend converts its samples
        } else if (d.status == FileResult::Status::Restored) {
            // The conversion to the model's planes runs here, on the decoder's
            // thread, so no per-image work is left to the thread that feeds the
            // model (it only gathers a batch of several images).
            t = std::chrono::steady_clock::now();
            try {
                const int channels = runner_.model().channels;
                d.floats = size_t(items_per_image(d.image, channels)) * channels * d.image.width * d.image.height;
                d.planes = pool_.take(d.floats);
                image_to_planes(d.image, channels, d.planes.as<float>());
            } catch (const std::exception& e) {  // bad_alloc: no room for the planes
                d.status = FileResult::Status::Failed;
                d.message = job.input + ": " +
                            (dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory for its planes" : e.what());
                d.planes.reset(), d.floats = 0;
            }
            d.to_nchw_ms = ms_since(t);
        }
        return d;
    }

    // Job `seq`'s result to the caller; the window then lets go of every
    // job at its front that is finished (results go out in the order they
    // finish; the window is kept in the order taken).
    void finish(size_t seq, FileResult::Status status, const std::string& message, const Image* image = nullptr,
                std::vector<std::string> warnings = {}) {
        Slot& s = slot(seq);
        FileResult r;
        r.warnings = std::move(warnings);
        r.input = std::move(s.job.input);
        r.output = std::move(s.job.output);
        r.status = status;
        r.message = message;
        r.fp32_rerun = s.fp32_rerun;
        if (status == FileResult::Status::Restored) r.precision = precision_name(s.precision);
        r.levels = std::move(s.levels);
        r.jpeg_projected = s.jpeg_projected;
        r.kept_gray = s.kept_gray;
        if (image)
            r.width = image->width, r.height = image->height, r.channels = image->channels,
            r.bit_depth = image->bit_depth;
        s.done = true;
        ++report_.counts[int(status)];
        ++finished_;
        if (progress_) progress_(finished_, r);
        while (!window_.empty() && window_.front().done) {
            window_.pop_front();
            ++base_;
        }
    }

    void take(size_t i, Decoded d) {
        if (d.ms > 0) report_.timer.add("read+decode", d.ms);
        if (d.to_nchw_ms > 0) report_.timer.add("to-NCHW", d.to_nchw_ms);
        if (d.levels_ms > 0) report_.timer.add("levels (estimate)", d.levels_ms);
        // A tiled image holds no planes but an output image of its size, in
        // the output's depth (one byte a sample at 8 bits, two at 16).
        const int out_depth = options_.write.bit_depth ? options_.write.bit_depth : d.image.bit_depth;
        const size_t out_bytes = d.tiled ? d.image.sample_count() * size_t(out_depth / 8) : 0;
        // The JPEG projection holds the file and, while it runs, libjpeg's
        // coefficients: 2 bytes a sample of each component (at most 3 a pixel).
        const size_t jpeg_bytes = d.jpeg ? d.jpeg->size() + size_t(d.image.width) * d.image.height * 6 : 0;
        largest_image_bytes_ =
            std::max(largest_image_bytes_, d.image.byte_size() + out_bytes + d.floats * sizeof(float) + jpeg_bytes);
        if (d.status != FileResult::Status::Restored)
            return finish(i, d.status, d.message, nullptr, std::move(d.warnings));
        if (d.tiled) flush();  // alone: it is restored from its samples, not from planes
        if (!pending_.empty()) {
            int channels = runner_.model().channels;
            const Image& first = pending_.front().image;
            bool same = first.width == d.image.width && first.height == d.image.height &&
                        items_per_image(first, channels) == items_per_image(d.image, channels) &&
                        pending_.front().levels.values == d.levels.values &&  // one value per extra input a batch
                        first.bit_depth == d.image.bit_depth &&  // 16-bit images may compute in fp32 (compute_in_fp32)
                        pending_.front().samples == d.samples &&
                        (!d.samples || first.channels == d.image.channels);  // samples: one layout a batch
            const size_t batch_pixels = size_t(first.width) * first.height * (pending_.size() + 1);
            if (!same || int(pending_.size()) >= options_.batch || batch_pixels > kLargestBatchPixels) flush();
        }
        const bool tiled = d.tiled;
        pending_.push_back({i, std::move(d.image), std::move(d.planes), d.floats, tiled, d.samples,
                            std::move(d.warnings), std::move(d.levels), std::move(d.jpeg), d.neutral});
        if (tiled) flush();
    }

    // Starts the model on the pending images (all of one size) on a compute
    // lane's thread, once that lane may run (collecting earlier batches
    // until it may); collect_batch queues their writes.
    void flush() {
        if (pending_.empty()) return;
        const int channels = runner_.model().channels;
        const Image& first = pending_.front().image;
        int items = 0;
        for (const Pending& p : pending_) items += items_per_image(p.image, channels);
        const Shape shape{items, channels, first.height, first.width};
        // Every lane of its kind busy: wait for the oldest batch, then pick
        // again (the lane that frees first is not always the one picked).
        size_t lane;
        while (!lanes_.idle(lane = lanes_.pick(shape))) collect_batch();
        if (pending_.front().tiled) return flush_tiled(lane);
        if (pending_.front().samples) return flush_samples(lane, shape);
        HostBuffer input, output;
        try {
            if (pending_.size() == 1) {
                input = std::move(pending_.front().planes);  // one image (every large photo): no copy
            } else {
                ScopedStage t(&report_.timer, "batch");  // gathering the images' planes
                input = pool_.take(shape.count());
                size_t at = 0;
                for (Pending& p : pending_) {
                    std::copy(p.planes.as<float>(), p.planes.as<float>() + p.floats, input.as<float>() + at);
                    at += p.floats;
                    pool_.give(std::move(p.planes));
                }
            }
            output = pool_.take(shape.count());
        } catch (const std::exception& e) {  // bad_alloc, imr::OutOfMemory
            fail_batch(pending_, batch_error(e, shape));
            pending_.clear();
            return;
        }
        // The runner is looked up here: lanes_ may grow (reallocate) while the
        // batch runs; the runner itself stays where it is.
        ModelRunner& runner = lanes_.runner(lane);
        std::vector<float> extra = pending_.front().levels.values;
        const bool fp32 = compute_in_fp32(runner, pending_);
        computing_.push_back(
            {std::move(pending_), lane,
             std::async(std::launch::async, [this, &runner, shape, input = std::move(input), output = std::move(output),
                                             extra = std::move(extra), fp32]() mutable {
                 return compute(runner, shape, std::move(input), std::move(output), extra, fp32);
             })});
        lanes_.set_busy(lane, true);
        pending_.clear();
    }

    // A huge image (alone in pending_) on a compute lane's thread, in tiles
    // from its samples into the output image's.
    void flush_tiled(size_t lane) {
        ModelRunner& runner = lanes_.runner(lane);
        std::vector<float> extra = pending_.front().levels.values;
        // The image stays where it is: the vector's buffer moves with it into
        // computing_, and nothing touches the batch until collect_batch has
        // the result.
        const Image* source = &pending_.front().image;
        const bool fp32 = compute_in_fp32(runner, pending_);
        computing_.push_back({std::move(pending_), lane,
                              std::async(std::launch::async, [this, &runner, source, extra = std::move(extra), fp32] {
                                  return compute_tiled(runner, *source, extra, fp32);
                              })});
        lanes_.set_busy(lane, true);
        pending_.clear();
    }

    // Images that go as their samples (alone in pending_, of one size and
    // layout) on a compute lane's thread, restored in their own samples.
    void flush_samples(size_t lane, Shape shape) {
        ModelRunner& runner = lanes_.runner(lane);
        std::vector<float> extra = pending_.front().levels.values;
        // The images stay where they are (as in flush_tiled).
        std::vector<Image*> images;
        for (Pending& p : pending_) images.push_back(&p.image);
        const bool fp32 = compute_in_fp32(runner, pending_);
        computing_.push_back(
            {std::move(pending_), lane,
             std::async(std::launch::async, [this, &runner, images = std::move(images), shape, extra = std::move(extra),
                                             fp32] { return compute_samples(runner, images, shape, extra, fp32); })});
        lanes_.set_busy(lane, true);
        pending_.clear();
    }

    // --precision auto computes 16-bit images in fp32: a model's half
    // precision is validated on 8-bit photos (within one level of 256), and
    // a level of 65,536 is 256 times finer. A batch with one such image runs
    // in fp32 (batches are of one bit depth). An explicit --precision
    // fp16/bf16 is taken as asked.
    bool compute_in_fp32(const ModelRunner& runner, const std::vector<Pending>& batch) const {
        if (runner.options().precision != Precision::Auto || runner.precision() == Precision::Fp32) return false;
        return std::any_of(batch.begin(), batch.end(), [](const Pending& p) { return p.image.bit_depth == 16; });
    }

    BatchResult compute_tiled(ModelRunner& runner, const Image& source, const std::vector<float>& extra, bool fp32) {
        BatchResult r;
        const size_t budget = tiled_pass_budget(runner);
        try {
            runner.set_compute_in_fp32(r.fp32 = fp32);
            if (options_.levels) runner.set_extra_values(extra);
            const size_t reruns = runner.fp32_reruns();
            r.image = restore_in_tiles(runner, source, options_.write.bit_depth, options_.blend, budget, &r.timer);
            r.fp32_rerun = runner.fp32_reruns() != reruns;
            const double mp = double(source.width) * source.height / 1e6;
            const std::string shape = std::to_string(source.height) + "x" + std::to_string(source.width) + " tiled";
            for (int i = 0; i < options_.bench_repeats; ++i) {
                StageTimer once;
                restore_in_tiles(runner, source, options_.write.bit_depth, options_.blend, budget, &once);
                for (const StageTimer::Row& row : once.rows()) r.bench.add(row.name + " " + shape, row.total_ms(), mp);
            }
        } catch (const std::exception& e) {
            r.error = dynamic_cast<const std::bad_alloc*>(&e) ? "out of host memory for its restored image" : e.what();
        }
        return r;
    }

    // On a compute lane's thread: images of one size and layout restored in
    // their own samples (ModelRunner::run_samples), and the --bench repeats.
    // One image is run in place; several are gathered into one buffer and
    // run in place there (with --bench into another, so every repeat reads
    // the input). Where the runner declines (the batch would need tiles),
    // the planes are made here and run() tiles them.
    BatchResult compute_samples(ModelRunner& runner, const std::vector<Image*>& images, Shape shape,
                                const std::vector<float>& extra, bool fp32) {
        BatchResult r;
        const Image& first = *images.front();
        ImageSamples s;
        s.n = int(images.size()), s.h = first.height, s.w = first.width, s.channels = first.channels,
        s.bit_depth = first.bit_depth;
        auto samples_of = [](Image& image) {
            return with_samples(image, [](auto* p) { return static_cast<void*>(p); });
        };
        const size_t one = first.byte_size(), floats = (s.bytes() + sizeof(float) - 1) / sizeof(float);
        HostBuffer gathered, scratch;
        try {
            runner.set_compute_in_fp32(r.fp32 = fp32);
            if (options_.levels) runner.set_extra_values(extra);
            const size_t reruns = runner.fp32_reruns();
            if (images.size() == 1) {
                s.data = samples_of(*images.front());
            } else {
                ScopedStage t(&r.timer, "batch");
                gathered = pool_.take(floats);
                for (size_t i = 0; i < images.size(); ++i)
                    std::memcpy(gathered.as<char>() + i * one, samples_of(*images[i]), one);
                s.data = gathered.data();
            }
            void* out = s.data;
            if (options_.bench_repeats > 0) out = (scratch = pool_.take(floats)).data();
            if (runner.run_samples(s, out, options_.blend, &r.timer)) {
                r.fp32_rerun = runner.fp32_reruns() != reruns;
                const double mp = double(shape.n) * shape.h * shape.w / 1e6;
                for (int i = 0; i < options_.bench_repeats; ++i) {
                    StageTimer once;
                    if (!runner.run_samples(s, out, options_.blend, &once))
                        throw Error("a --bench repeat no longer fit the device's memory");
                    for (const StageTimer::Row& row : once.rows())
                        r.bench.add(row.name + " " + shape.str(), row.total_ms(), mp);
                }
                if (out != samples_of(*images.front())) {  // gathered, or --bench
                    ScopedStage t(&r.timer, "batch");
                    for (size_t i = 0; i < images.size(); ++i)
                        std::memcpy(samples_of(*images[i]), static_cast<char*>(out) + i * one, one);
                }
            } else {
                // Too large for one pass of the device: planes on this thread, run() tiles them.
                HostBuffer input, output;
                {
                    ScopedStage t(&r.timer, "to-NCHW");
                    input = pool_.take(shape.count()), output = pool_.take(shape.count());
                    const size_t per_image = shape.count() / images.size();
                    for (size_t i = 0; i < images.size(); ++i)
                        image_to_planes(*images[i], shape.c, input.as<float>() + i * per_image);
                }
                BatchResult planes = compute(runner, shape, std::move(input), std::move(output), extra, fp32);
                if (!planes.error.empty()) throw Error(planes.error);
                r.timer.merge(planes.timer), r.bench.merge(planes.bench);
                r.fp32_rerun = planes.fp32_rerun;
                ScopedStage t(&r.timer, "from-NCHW");
                const size_t per_image = shape.count() / images.size();
                for (size_t i = 0; i < images.size(); ++i)
                    planes_into_image(planes.output.as<float>() + i * per_image, shape.c, *images[i]);
                pool_.give(std::move(planes.output));
            }
        } catch (const std::exception& e) {
            r.error = batch_error(e, shape);
        }
        pool_.give(std::move(gathered)), pool_.give(std::move(scratch));
        return r;
    }

    // On a compute lane's thread: the model on one batch (and the --bench
    // repeats), timed into the batch's own timers.
    BatchResult compute(ModelRunner& runner, Shape shape, HostBuffer input, HostBuffer output,
                        const std::vector<float>& extra, bool fp32) {
        BatchResult r;
        try {
            runner.set_compute_in_fp32(r.fp32 = fp32);
            if (options_.levels) runner.set_extra_values(extra);
            const size_t reruns = runner.fp32_reruns();
            runner.run(input.tensor(shape), output.tensor(shape), &r.timer);
            r.fp32_rerun = runner.fp32_reruns() != reruns;
            // --bench: the run above was the warm-up; rows per batch shape, since
            // min/median over different sizes would mean nothing.
            double mp = double(shape.n) * shape.h * shape.w / 1e6;
            for (int i = 0; i < options_.bench_repeats; ++i) {
                StageTimer once;
                runner.run(input.tensor(shape), output.tensor(shape), &once);
                for (const StageTimer::Row& row : once.rows())  // a tiled pass has a sample per tile
                    r.bench.add(row.name + " " + shape.str(), row.total_ms(), mp);
            }
            if (options_.blend != 1) blend(input.as<const float>(), output.as<float>(), shape.count(), &r.timer);
            r.output = std::move(output);
        } catch (const std::exception& e) {
            r.error = batch_error(e, shape);
        }
        pool_.give(std::move(input));
        return r;
    }

    // --strength: out = in + blend * (out - in) (0: the input itself, also
    // where the model's output is not finite).
    void blend(const float* in, float* out, size_t n, StageTimer* timer) const {
        ScopedStage t(timer, "strength");
        blend_toward_input(in, out, n, options_.blend);
    }

    static std::string batch_error(const std::exception& e, const Shape& shape) {
        return dynamic_cast<const std::bad_alloc*>(&e) ? "out of host memory for a batch of " + shape.str() + " floats"
                                                       : e.what();
    }

    void fail_batch(std::vector<Pending>& batch, const std::string& why) {
        for (Pending& p : batch)
            finish(p.job, FileResult::Status::Failed, slot(p.job).job.input + ": " + why, &p.image,
                   std::move(p.warnings));
    }

    void collect_finished_batches() {
        while (!computing_.empty() &&
               computing_.front().done.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
            collect_batch();
    }

    // The oldest batch: waits for its model run, then queues each image's
    // write; the conversion back from planes runs on the writer threads.
    void collect_batch() {
        Computing c = std::move(computing_.front());
        computing_.pop_front();
        BatchResult r = c.done.get();
        lanes_.set_busy(c.lane, false);
        report_.timer.merge(r.timer);
        report_.bench_timer.merge(r.bench);
        std::vector<Pending>& batch = c.batch;
        if (!r.error.empty()) return fail_batch(batch, r.error);
        // Each image's slice of the output goes to its writer thread (the
        // whole buffer when it is the only one).
        size_t offset = 0;
        for (Pending& p : batch) {
            const size_t n = p.floats;
            slot(p.job).levels = std::move(p.levels.levels);
            slot(p.job).precision = r.fp32 || r.fp32_rerun ? Precision::Fp32 : runner_.precision();
            if (r.fp32_rerun) {
                slot(p.job).fp32_rerun = true;
                p.warnings.push_back(slot(p.job).job.input + ": the " + precision_name(runner_.precision()) +
                                     " result was not finite (half-precision overflow); computed again in fp32");
            }
            HostBuffer planes;
            if (p.tiled || p.samples) {
                // r.image is the restored image already (collect_batch's batch of one), or
                // p.image is, restored in its samples
            } else if (batch.size() == 1) {
                planes = std::move(r.output);
            } else {
                try {
                    planes = pool_.take(n);
                } catch (const std::exception& e) {  // bad_alloc, imr::OutOfMemory
                    finish(p.job, FileResult::Status::Failed,
                           slot(p.job).job.input + ": out of memory for its output planes", &p.image,
                           std::move(p.warnings));
                    offset += n;
                    continue;
                }
                std::copy(r.output.as<float>() + offset, r.output.as<float>() + offset + n, planes.as<float>());
            }
            offset += n;
            while (writing_.size() >= in_flight_now()) collect_write();
            report_.megapixels += double(p.image.width) * p.image.height / 1e6;
            Image dims;  // the report needs only the dimensions
            dims.width = p.image.width, dims.height = p.image.height, dims.channels = p.image.channels,
            dims.bit_depth = p.image.bit_depth;
            const std::string path = slot(p.job).job.output, input = slot(p.job).job.input;
            const bool restored = p.samples;
            writing_.push_back(
                {p.job, dims, std::move(p.warnings),
                 std::async(std::launch::async, [this, path, input, source = std::move(p.image),
                                                 planes = std::move(planes), made = std::move(r.image), restored,
                                                 jpeg = std::move(p.jpeg), neutral = p.neutral]() mutable {
                     return convert_and_write(path, std::move(source), std::move(planes), std::move(made), restored,
                                              input, jpeg, neutral);
                 })});
        }
        if (batch.size() > 1) pool_.give(std::move(r.output));
    }

    // On a worker thread: the model's output planes back to an image (or
    // the image a tiled run made, or the source itself where it was
    // `restored` in its samples) with the source's metadata (moved, not
    // copied), made neutral again where the input was (`neutral`), projected
    // onto its JPEG's cells where `jpeg` holds the input file, then encoded
    // and written. Neutral first: where the file's chroma coefficients are
    // zero (what a neutral JPEG almost always has; at high quality a small
    // one can still decode to neutral), the projection moves R, G and B
    // alike, so the output stays neutral.
    WriteOutcome convert_and_write(const std::string& path, Image source, HostBuffer planes, Image made, bool restored,
                                   const std::string& input, const JpegBytes& jpeg, bool neutral) {
        auto t = std::chrono::steady_clock::now();
        Image image;
        WriteOutcome outcome;
        try {
            const int depth = options_.write.bit_depth, channels = runner_.model().channels;
            if (restored) {
                image = std::move(source);
            } else if (made.has_samples()) {
                image = std::move(made);
                image.metadata = std::move(source.metadata);
            } else if (depth == 0 || depth == source.bit_depth) {
                // The output keeps the input's depth: into its samples, no new image.
                planes_into_image(planes.as<float>(), channels, source);
                image = std::move(source);
            } else {
                image = planes_to_image(planes.as<float>(), channels, source, depth);
                image.metadata = std::move(source.metadata);
            }
            source.release_samples();  // not needed to encode: a huge photo's input goes now
            if (neutral) {
                make_neutral_rgb(image);
                outcome.kept_gray = true;
            }
        } catch (const std::exception& e) {
            outcome.error = path + ": " + e.what();
            return outcome;
        }
        pool_.give(std::move(planes));
        const double from_nchw_ms = restored ? -1 : ms_since(t);  // none to time
        t = std::chrono::steady_clock::now();
        if (jpeg) {
            try {
                project_onto_jpeg(image, read_jpeg_coefficients(input, *jpeg));
                outcome.jpeg_projected = true;
            } catch (const std::exception& e) {  // a JPEG it does not take; bad_alloc
                std::string why = e.what();
                if (why.rfind(input, 0) != 0) why = input + ": " + why;
                outcome.warnings.push_back(why + " (written without the JPEG projection)");
            }
        }
        const double projection_ms = jpeg ? ms_since(t) : -1;
        t = std::chrono::steady_clock::now();
        std::string& error = outcome.error;
        try {
            if (path == kStdio) {
                write_stdout(encode_image("-." + options_.stdout_format, image, write_options_, options_.codec,
                                          &outcome.warnings));
            } else {
                fs::path parent = fs::path(path).parent_path();
                std::error_code ec;
                if (!parent.empty()) fs::create_directories(parent, ec);
                if (ec) throw Error(path + ": cannot create folder " + parent.string() + ": " + ec.message());
                write_image(path, image, write_options_, options_.codec, &outcome.warnings);
            }
        } catch (const std::exception& e) {
            error = e.what();
            if (error.rfind(path, 0) != 0) error = path + ": " + error;
        }
        std::lock_guard<std::mutex> lock(timer_mutex_);
        from_nchw_ms_.push_back(from_nchw_ms);
        projection_ms_.push_back(projection_ms);
        write_ms_.push_back(ms_since(t));
        return outcome;
    }

    void collect_write() {
        Written w = std::move(writing_.front());
        writing_.pop_front();
        WriteOutcome outcome = w.outcome.get();
        const std::string& error = outcome.error;
        {
            std::lock_guard<std::mutex> lock(timer_mutex_);
            for (double ms : from_nchw_ms_)
                if (ms >= 0) report_.timer.add("from-NCHW", ms);
            for (double ms : projection_ms_)
                if (ms >= 0) report_.timer.add("JPEG projection", ms);
            for (double ms : write_ms_) report_.timer.add("encode+write", ms);
            from_nchw_ms_.clear(), projection_ms_.clear(), write_ms_.clear();
        }
        if (!error.empty()) report_.megapixels -= double(w.source.width) * w.source.height / 1e6;
        w.warnings.insert(w.warnings.end(), outcome.warnings.begin(), outcome.warnings.end());
        slot(w.job).jpeg_projected = outcome.jpeg_projected && error.empty();
        slot(w.job).kept_gray = outcome.kept_gray && error.empty();
        finish(w.job, error.empty() ? FileResult::Status::Restored : FileResult::Status::Failed, error, &w.source,
               std::move(w.warnings));
    }

    const JobSource& source_;
    ModelRunner& runner_;
    const PipelineOptions& options_;
    const ProgressFn& progress_;
    const size_t lookahead_;         // images in flight by count
    const size_t in_flight_budget_;  // bytes the images in flight may take
    // Idle float buffers, reused (decoders take from it); on a GPU the small
    // ones are page-locked.
    mutable PlanesPool pool_{runner_.backend(), in_flight_budget_ / 2};
    ComputeLanes lanes_{runner_, 0, options_.bench_repeats > 0};
    OutputFolders folders_{options_.force};
    // The jobs taken from the source and not yet reported, from job base_ on.
    std::deque<Slot> window_;
    size_t base_ = 0, taken_ = 0;
    bool source_done_ = false;
    size_t largest_image_bytes_ = 0;
    const WriteOptions write_options_;
    std::vector<Pending> pending_;
    std::mutex timer_mutex_;
    std::vector<double> write_ms_, from_nchw_ms_,
        projection_ms_;  // from writer threads, moved into the timer on this thread
    size_t finished_ = 0;
    PipelineReport report_;
    // Last, so that they are destroyed first: their futures join the writer
    // and compute threads that still use the members above, also when an
    // exception unwinds (the compute threads first: they use no writer).
    std::deque<Written> writing_;
    std::deque<Computing> computing_;
};

}  // namespace

PipelineReport run_pipeline(const JobSource& jobs, ModelRunner& runner, const PipelineOptions& options,
                            const ProgressFn& progress) {
    return PipelineRun(jobs, runner, options, progress).run();
}

}  // namespace imr
