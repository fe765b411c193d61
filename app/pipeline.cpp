#include "pipeline.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include "image/image_batch.h"

namespace imr {

namespace fs = std::filesystem;

int PipelineReport::count(FileResult::Status s) const {
    return int(std::count_if(files.begin(), files.end(), [s](const FileResult& f) { return f.status == s; }));
}

// ------------------------------------------------------------------ planning

namespace {

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

// The output for a derived name: the requested format, else the input's
// when this build can write it, else PNG ("photo.gif" -> "photo.png").
fs::path output_with_format(fs::path out, const std::string& format, Codec codec) {
    if (!format.empty()) return out.replace_extension("." + format);
    try {
        check_writable_format(out.string(), codec);
    } catch (const Error&) {
        out.replace_extension(".png");
    }
    return out;
}

// Shown to the user: relative paths stay relative to where they ran it.
fs::path as_given(const fs::path& p, bool relative) {
    if (!relative) return p;
    std::error_code ec;
    fs::path rel = p.lexically_relative(fs::current_path(ec));
    return rel.empty() ? p : rel;
}

// Image files of a folder, sorted, skipping hidden files (our own temporaries
// among them), earlier outputs written beside their inputs (NAME.restored.EXT)
// and, with -r, the output folder when it lies inside the input. Symbolic
// links to folders are not followed (no cycles). A folder that cannot be
// listed is reported in `unreadable`, not skipped silently.
void scan_folder(const fs::path& dir, bool recursive, const fs::path& skip_dir, std::vector<fs::path>& files,
                 std::vector<std::pair<fs::path, std::string>>& unreadable) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    std::vector<fs::path> subfolders;
    for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::directory_entry& e = *it;
        std::error_code type_ec;
        if (e.is_directory(type_ec)) {
            if (recursive && !e.is_symlink(type_ec) && fs::weakly_canonical(e.path(), type_ec) != skip_dir)
                subfolders.push_back(e.path());
            continue;
        }
        const std::string name = e.path().filename().string();
        if (!name.empty() && name[0] != '.' && e.is_regular_file(type_ec) && is_readable_extension(name) &&
            e.path().stem().extension() != ".restored")
            files.push_back(e.path());
    }
    if (ec) unreadable.push_back({dir, ec.message()});
    std::sort(subfolders.begin(), subfolders.end());
    for (const fs::path& sub : subfolders) scan_folder(sub, recursive, skip_dir, files, unreadable);
}

}  // namespace

std::vector<FileJob> plan_jobs(const std::vector<std::string>& inputs, const std::string& output, bool recursive,
                               Codec codec, const std::string& format) {
    std::vector<FileJob> jobs;
    std::error_code ec;
    if (!format.empty()) check_writable_format("output." + format, codec);            // "--format xyz" fails here
    const bool one_file_in = inputs.size() == 1 && !fs::is_directory(inputs[0], ec);  // or a missing one
    const bool single_file_out =
        one_file_in && !output.empty() && output.back() != '/' && !fs::is_directory(output, ec);
    const fs::path out_root = output.empty() ? fs::path() : fs::path(strip_trailing_slashes(output));
    // Several inputs need an output folder: refuse a file (existing, or named
    // like an image) before any work, rather than failing every file later.
    if (!output.empty() && !one_file_in && !fs::is_directory(out_root, ec)) {
        if (fs::exists(out_root, ec))
            throw Error("-o " + output + ": is a file, but several inputs (or a folder) need an output folder");
        if (is_readable_extension(out_root.string()) && output.back() != '/')
            throw Error("-o " + output +
                        ": looks like an image file, but several inputs (or a folder) need an "
                        "output folder (end it with '/' if a folder of that name is meant)");
    }
    if (single_file_out) check_writable_format(output, codec);  // "-o out.xyz" fails here, not per file
    // Several folders into one -o each keep their own subfolder, named after
    // the folder: two folders of one name would collide.
    int folder_inputs = 0;
    std::map<std::string, std::pair<fs::path, std::string>> folder_names;  // name -> (canonical, as given)
    for (const std::string& raw : inputs) {
        if (!fs::is_directory(raw, ec)) continue;
        ++folder_inputs;
        fs::path canonical = fs::weakly_canonical(raw, ec);
        std::string name = canonical.filename().string();
        auto it = folder_names.find(name);
        if (!output.empty() && it != folder_names.end() && it->second.first != canonical)
            throw Error("folders " + it->second.second + " and " + raw + " have the same name '" + name +
                        "', so their files would collide in " + output + "; restore them in separate runs");
        folder_names[name] = {canonical, raw};
    }

    for (const std::string& raw : inputs) {
        // "." or "photos/" -> an absolute, normalized path, so that its name
        // (for FOLDER.restored and out/FOLDER) is a real name.
        fs::path in = fs::absolute(strip_trailing_slashes(raw), ec).lexically_normal();
        if (in.has_parent_path() && in.filename().empty()) in = in.parent_path();
        if (!fs::exists(in, ec)) {
            jobs.push_back({raw, "", raw + ": no such file or directory"});
        } else if (fs::is_directory(in, ec)) {
            fs::path dest = output.empty()      ? as_given(in.parent_path() / (in.filename().string() + ".restored"),
                                                           fs::path(raw).is_relative())
                            : folder_inputs > 1 ? out_root / in.filename()
                                                : out_root;
            std::vector<fs::path> files;
            std::vector<std::pair<fs::path, std::string>> unreadable;
            scan_folder(in, recursive, fs::weakly_canonical(dest, ec), files, unreadable);
            std::sort(files.begin(), files.end());
            for (const auto& [folder, why] : unreadable) {
                std::string shown = (fs::path(raw) / folder.lexically_relative(in)).lexically_normal().string();
                jobs.push_back({shown, "", shown + ": cannot list the folder: " + why});
            }
            if (files.empty() && unreadable.empty())
                jobs.push_back({raw, "",
                                raw + ": no image files in this folder" +
                                    std::string(recursive ? "" : " (-r descends into subfolders)")});
            for (const fs::path& f : files) {
                fs::path shown = fs::path(raw) / f.lexically_relative(in);  // as the user named it
                jobs.push_back({shown.lexically_normal().string(),
                                output_with_format(dest / f.lexically_relative(in), format, codec).string(), ""});
            }
        } else if (single_file_out) {
            jobs.push_back({raw, output, ""});
        } else if (output.empty()) {
            // NAME.restored.EXT; an input without extension gets NAME.restored.png.
            std::string ext = in.extension().empty() ? ".png" : in.extension().string();
            fs::path out = fs::path(raw).parent_path() / (in.stem().string() + ".restored" + ext);
            jobs.push_back({raw, output_with_format(out, format, codec).string(), ""});
        } else {
            fs::path out = out_root / in.filename();
            if (in.extension().empty()) out += ".png";
            jobs.push_back({raw, output_with_format(out, format, codec).string(), ""});
        }
    }

    // Never overwrite an input, and never let two inputs write one output;
    // the same input given twice (a.png ./a.png) is restored once.
    std::set<fs::path> input_paths;
    for (const FileJob& j : jobs)
        if (j.error.empty()) input_paths.insert(fs::weakly_canonical(j.input, ec));
    std::map<fs::path, std::pair<fs::path, std::string>> claimed;  // output -> (canonical input, as given)
    std::vector<FileJob> planned;
    for (FileJob& j : jobs) {
        if (j.error.empty()) {
            fs::path out = fs::weakly_canonical(j.output, ec), in = fs::weakly_canonical(j.input, ec);
            auto it = claimed.find(out);
            if (it != claimed.end() && it->second.first == in) continue;  // a duplicate
            if (input_paths.count(out))
                j.error = j.input + ": refusing to write " + j.output + " because it is an input";
            else if (it != claimed.end())
                j.error = j.input + ": output " + j.output + " is also the output of " + it->second.second;
            else
                claimed[out] = {in, j.input};
        }
        planned.push_back(std::move(j));
    }
    return planned;
}

// ------------------------------------------------------------------ running

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// What reading one job gave: an image, or why there is none.
struct Decoded {
    Image image;
    FileResult::Status status = FileResult::Status::Restored;  // Restored = go on
    std::string message;
    double ms = 0;
};

struct Pending {
    size_t job;
    Image image;
};

// Without --force an output that appears while its image is being restored
// is not overwritten either (the skip check ran before the read).
WriteOptions with_overwrite(WriteOptions w, bool force) {
    w.overwrite = force;
    return w;
}

struct Written {
    size_t job;
    Image source;                    // dimensions only (no samples), for the report
    std::future<std::string> error;  // empty string: written
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
// A batch holds --batch images, but no more pixels than this (one image
// always fits): batching helps small images fill the GPU (the anchor suite's
// 8x512x512 = 2 MP already does), while 4 photos of 48 MP would take 4.6 GB
// of float planes for nothing.
constexpr size_t kMaxBatchPixels = size_t(16) << 20;
size_t in_flight(int batch) {
    size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return std::clamp(std::max(2 * size_t(batch), 2 * cores), kMinInFlight, kMaxInFlight);
}

// read -> batch -> model -> write. Reading runs ahead on worker threads and
// writing runs behind on others (each bounded, so memory stays flat on a
// folder of any size); the model runs on this thread, one batch at a time.
class PipelineRun {
public:
    PipelineRun(const std::vector<FileJob>& jobs, ModelRunner& runner, const PipelineOptions& options,
                const ProgressFn& progress)
        : jobs_(jobs),
          runner_(runner),
          options_(options),
          progress_(progress),
          lookahead_(in_flight(options.batch)),
          in_flight_budget_(size_t(kInFlightMemoryShare * double(host_memory_available()))),
          write_options_(with_overwrite(options.write, options.force)) {}

    PipelineReport run() {
        auto start = std::chrono::steady_clock::now();
        report_.files.resize(jobs_.size());  // in the order given, whatever order they finish in
        size_t next_read = 0;
        std::deque<std::future<Decoded>> reading;
        for (size_t i = 0; i < jobs_.size(); ++i) {
            if (options_.cancel && options_.cancel->load()) {
                report_.interrupted = true;  // the pending batch is dropped; reads in flight just end
                pending_.clear();
                break;
            }
            while (next_read < jobs_.size() && reading.size() < in_flight_now()) {
                reading.push_back(std::async(std::launch::async, [this, j = next_read] { return decode(j); }));
                ++next_read;
            }
            Decoded d = reading.front().get();
            reading.pop_front();
            take(i, std::move(d));
        }
        if (!report_.interrupted) flush();
        while (!writing_.empty()) collect_write();
        report_.wall_ms = ms_since(start);
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

    // On a worker thread: everything about job j that needs no shared state.
    Decoded decode(size_t j) const {
        const FileJob& job = jobs_[j];
        Decoded d;
        if (!job.error.empty()) {
            d.status = FileResult::Status::Failed, d.message = job.error;
            return d;
        }
        std::error_code ec;
        if (fs::is_directory(job.output, ec)) {
            d.status = FileResult::Status::Failed,
            d.message = job.output + ": is a folder; cannot write the image there";
            return d;
        }
        if (fs::exists(job.output, ec) && !options_.force) {
            d.status = FileResult::Status::Skipped, d.message = job.output + ": exists (--force overwrites it)";
            return d;
        }
        auto t = std::chrono::steady_clock::now();
        try {
            d.image = read_image(job.input, options_.codec);
            items_per_image(d.image, runner_.model().channels);  // throws if the channels cannot map
            // Refuse what cannot be written (16-bit or alpha to JPEG, ...) before any compute.
            check_can_write(job.output, d.image.channels, d.image.bit_depth, write_options_, options_.codec);
        } catch (const std::exception& e) {  // imr::Error, or bad_alloc from a huge image
            d.status = FileResult::Status::Failed;
            d.message = e.what();
            // Name the file the message is about once: the input, unless it is about the output.
            if (d.message.rfind(job.input, 0) != 0 && d.message.rfind(job.output, 0) != 0)
                d.message = job.input + ": " + d.message;
        }
        d.ms = ms_since(t);
        return d;
    }

    void finish(size_t job, FileResult::Status status, const std::string& message, const Image* image = nullptr) {
        FileResult& r = report_.files[job];
        r.input = jobs_[job].input;
        r.output = jobs_[job].output;
        r.status = status;
        r.message = message;
        if (image)
            r.width = image->width, r.height = image->height, r.channels = image->channels,
            r.bit_depth = image->bit_depth;
        ++finished_;
        if (progress_) progress_(finished_, jobs_.size(), r);
    }

    void take(size_t i, Decoded d) {
        if (d.ms > 0) report_.timer.add("read+decode", d.ms);
        largest_image_bytes_ = std::max(largest_image_bytes_, d.image.samples.size() * sizeof(uint16_t));
        if (d.status != FileResult::Status::Restored) return finish(i, d.status, d.message);
        if (!pending_.empty()) {
            int channels = runner_.model().channels;
            const Image& first = pending_.front().image;
            bool same = first.width == d.image.width && first.height == d.image.height &&
                        items_per_image(first, channels) == items_per_image(d.image, channels);
            const size_t batch_pixels = size_t(first.width) * first.height * (pending_.size() + 1);
            if (!same || int(pending_.size()) >= options_.batch || batch_pixels > kMaxBatchPixels) flush();
        }
        pending_.push_back({i, std::move(d.image)});
    }

    // Runs the model on the pending images (all of one size) and queues their writes.
    void flush() {
        if (pending_.empty()) return;
        const int channels = runner_.model().channels;
        const Image& first = pending_.front().image;
        int items = 0;
        for (const Pending& p : pending_) items += items_per_image(p.image, channels);
        Shape shape{items, channels, first.height, first.width};
        size_t item_size = size_t(channels) * first.height * first.width;
        std::vector<float> output;
        try {
            std::vector<float> input;
            {
                ScopedStage t(&report_.timer, "to-NCHW");  // the buffers' first touch included
                input.resize(shape.count());
                output.resize(shape.count());
                size_t offset = 0;
                for (const Pending& p : pending_) {
                    image_to_planes(p.image, channels, input.data() + offset);
                    offset += items_per_image(p.image, channels) * item_size;
                }
            }
            runner_.run(input.data(), output.data(), shape, &report_.timer);
            // --bench: the run above was the warm-up; rows per batch shape, since
            // min/median over different sizes would mean nothing.
            double mp = double(shape.n) * shape.h * shape.w / 1e6;
            for (int r = 0; r < options_.bench_repeats; ++r) {
                StageTimer once;
                runner_.run(input.data(), output.data(), shape, &once);
                for (const StageTimer::Row& row : once.rows())  // a tiled pass has a sample per tile
                    report_.bench_timer.add(row.name + " " + shape.str(), row.total_ms(), mp);
            }
        } catch (const std::exception& e) {
            std::string why = dynamic_cast<const std::bad_alloc*>(&e)
                                  ? "out of host memory for a batch of " + shape.str() + " floats"
                                  : e.what();
            for (const Pending& p : pending_)
                finish(p.job, FileResult::Status::Failed, jobs_[p.job].input + ": " + why, &p.image);
            pending_.clear();
            return;
        }
        size_t offset = 0;
        for (Pending& p : pending_) {
            const size_t job = p.job;
            Image dims = std::move(p.image);
            const size_t at = offset;
            offset += items_per_image(dims, channels) * item_size;
            Image restored;
            try {
                ScopedStage t(&report_.timer, "from-NCHW");
                restored = planes_to_image(output.data() + at, channels, dims, options_.write.bit_depth);
            } catch (const std::exception& e) {
                finish(job, FileResult::Status::Failed, jobs_[job].input + ": " + e.what(), &dims);
                continue;
            }
            dims.samples = {};  // the report needs only the dimensions
            while (writing_.size() >= in_flight_now()) collect_write();
            report_.megapixels += double(dims.width) * dims.height / 1e6;
            const std::string& path = jobs_[job].output;
            writing_.push_back(
                {job, std::move(dims), std::async(std::launch::async, [this, path, img = std::move(restored)] {
                     return encode_and_write(path, img);
                 })});
        }
        pending_.clear();
    }

    // On a worker thread: "" when written, else the message.
    std::string encode_and_write(const std::string& path, const Image& image) {
        auto t = std::chrono::steady_clock::now();
        std::string error;
        try {
            fs::path parent = fs::path(path).parent_path();
            std::error_code ec;
            if (!parent.empty()) fs::create_directories(parent, ec);
            if (ec) throw Error(path + ": cannot create folder " + parent.string() + ": " + ec.message());
            write_image(path, image, write_options_, options_.codec);
        } catch (const std::exception& e) {
            error = e.what();
            if (error.rfind(path, 0) != 0) error = path + ": " + error;
        }
        std::lock_guard<std::mutex> lock(timer_mutex_);
        write_ms_.push_back(ms_since(t));
        return error;
    }

    void collect_write() {
        Written w = std::move(writing_.front());
        writing_.pop_front();
        std::string error = w.error.get();
        {
            std::lock_guard<std::mutex> lock(timer_mutex_);
            for (double ms : write_ms_) report_.timer.add("encode+write", ms);
            write_ms_.clear();
        }
        if (!error.empty()) report_.megapixels -= double(w.source.width) * w.source.height / 1e6;
        finish(w.job, error.empty() ? FileResult::Status::Restored : FileResult::Status::Failed, error, &w.source);
    }

    const std::vector<FileJob>& jobs_;
    ModelRunner& runner_;
    const PipelineOptions& options_;
    const ProgressFn& progress_;
    const size_t lookahead_;         // images in flight by count
    const size_t in_flight_budget_;  // bytes the images in flight may take
    size_t largest_image_bytes_ = 0;
    const WriteOptions write_options_;
    std::vector<Pending> pending_;
    std::mutex timer_mutex_;
    std::vector<double> write_ms_;  // from writer threads, moved into the timer on this thread
    size_t finished_ = 0;
    PipelineReport report_;
    // Last, so that it is destroyed first: its futures join writer threads
    // that still use the members above, also when an exception unwinds.
    std::deque<Written> writing_;
};

}  // namespace

PipelineReport run_pipeline(const std::vector<FileJob>& jobs, ModelRunner& runner, const PipelineOptions& options,
                            const ProgressFn& progress) {
    return PipelineRun(jobs, runner, options, progress).run();
}

}  // namespace imr
