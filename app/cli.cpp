// The command line, in one place: options struct, setup (CLI11), and the
// run functions. This is the only code that prints for the user and decides
// exit codes: 0 all good, 1 some file failed, 2 bad usage/model/device,
// 3 an unexpected internal error.
#include "cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "eval/degrade_command.h"
#include "eval/eval_command.h"
#include "eval/noise_estimate.h"
#include "eval/validate_precision.h"
#include "image/jpeg_projection.h"
#include "image/jpeg_quality.h"
#include "image/neutral_gray.h"
#include "jobs/file_report.h"
#include "jobs/plan_jobs.h"
#include "model_registry.h"
#include "pipeline/pipeline.h"
#include "report/json_document.h"
#include "shard_options.h"
#include "usage_error.h"
#include "util/printable.h"

namespace imr {

namespace {
// printable() for each line of a multi-line text, keeping its line breaks.
std::string printable_lines(const std::string& text) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out += printable(text.substr(start, end - start));
        if (end < text.size()) out += '\n';
        start = end + 1;
    }
    return out;
}
}  // namespace

namespace {

constexpr int kExitOk = 0, kExitFileFailed = 1, kExitUsage = 2, kExitInternal = 3, kExitInterrupted = 130;

// Ctrl-C / SIGTERM: the first asks the pipeline to stop cleanly (no new
// files, the ones being written finished); a second one ends the process.
std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int signal) {
    g_cancel.store(true);
    std::signal(signal, SIG_DFL);
}

// Where the passes over an image compute this many times its pixels or more
// (a wide receptive field's halos under the CPU's pass bound: the GPU
// default's 572-pixel field in 512 MiB passes computes 11.6 times a 12 MP
// photo's pixels, 677 s against 59 s whole on 2 cores), a note says so and
// what --max-memory would run it whole. Below it the halos cost less than
// the note would be worth (passes at least 32 radii wide cost 13% more:
// ModelRunner's kMinTileRadii).
constexpr double kTilingNoteWork = 2.0;

// The note for the largest image restored on the CPU (h x w), or empty. On
// a GPU an image of over 16 MP is tiled by the pipeline's own bound
// (tiled_pass_budget), which pass_plan() does not model: no note there.
std::string tiling_note(const ModelRunner& runner, int h, int w) {
    if (h <= 0 || w <= 0 || !runner.backend().is_host_memory()) return "";
    ModelRunner::PassPlan plan;
    try {
        plan = runner.pass_plan(h, w);
    } catch (const std::exception&) {
        return "";  // memory too short now for even a small tile: the run is over, and the note only advice
    }
    if (plan.work < kTilingNoteWork) return "";
    char work[32];
    std::snprintf(work, sizeof work, "%.1f", plan.work);
    const int whole_gib = int(std::ceil(double(plan.whole_bytes) / double(size_t(1) << 30)));
    const std::string note = "model " + printable(runner.model().name) + "'s receptive field (" +
                             std::to_string(runner.model().receptive_field()) + " pixels) made its passes over the " +
                             std::to_string(w) + "x" + std::to_string(h) + " image compute " + work +
                             " times the image's pixels (tiles of " + std::to_string(plan.tile) +
                             " pixels under the memory bound of one pass); ";
    char whole[32];
    std::snprintf(whole, sizeof whole, "%.1f GiB", double(plan.whole_bytes) / double(size_t(1) << 30));
    if (plan.one_pass_possible)
        return note + "one pass takes " + whole + ": --max-memory " + std::to_string(whole_gib) +
               "G runs it in one pass";
    return note + "one pass would take " + whole +
           ", more than this machine has free (or more pixels than one pass may hold)";
}

struct Options {
    std::vector<std::string> inputs;
    std::string output;
    std::string model;  // empty: the device's default (choose_model)
    std::string device = "auto";
    std::string precision = "auto";
    std::string codec = "auto";
    std::string format;                // output format for derived names ("png"), empty: the input's
    std::string suffix = ".restored";  // derived names: NAME<suffix>.EXT, FOLDER<suffix>/
    int batch = 4;
    int threads = 0;
    int tile = 0;
    bool tta = false;         // --tta: RunnerOptions::tta
    uint64_t max_pixels = 0;  // 0: the default (image_io.h)
    uint64_t max_memory = 0;  // bytes; 0: what is free (RunnerOptions::max_memory)
    bool recursive = false, force = false, quiet = false, json = false, timing = false;
    bool json_lines = false;  // --json-lines: one JSON record per line as files finish
    bool strip = false;       // write no ICC profile or EXIF
    int bench = 0;
    std::vector<std::string> kernels;  // --kernel OP=VARIANT: forced kernel variants (for timing them)
    int bit_depth = 0;
    int quality = 95;
    int png_compression = 1;               // see WriteOptions
    double strength = 1;                   // --strength: scales the level, or blends input + S * (restored - input)
    double noise_level = 0;                // --noise-level SIGMA (0..255), when noise_level_given
    bool noise_level_given = false;        // else it is estimated per image
    int jpeg_quality = 0;                  // --jpeg-quality Q (1..100); 0: not given (read from each JPEG)
    std::string jpeg_projection = "auto";  // --jpeg-projection auto|on|off (jpeg_projection_wanted)
    std::string keep_gray = "auto";        // --keep-gray auto|on|off (keep_gray_wanted)
    std::string model_to_show;             // `imrestore model X`
    ValidatePrecisionOptions validate;     // `imrestore model X --validate-precision DIR [--write OUT.h5]`
    bool models_json = false;              // `imrestore models --json`
    DegradeOptions degrade;                // `imrestore degrade ...`
    EvalOptions eval;                      // `imrestore eval ...`
    ShardOptions shard;                    // --shard K/N, --shard-count N
};

std::string first_sentence(const std::string& s) {
    size_t dot = s.find(". ");
    return dot == std::string::npos ? s : s.substr(0, dot + 1);
}

// ---------------------------------------------------------------- models / model

// Where a bundled model is the default: "gpu", "cpu" or "" (choose_model).
std::string default_on(const std::string& name) {
    return name == kDefaultModel ? "gpu" : name == kDefaultCpuModel ? "cpu" : "";
}

// `imrestore models [--json]`: every bundled model and where it was found.
int run_models(bool json) {
    std::vector<BundledModel> models = list_bundled_models();
    if (models.empty()) {
        std::cerr << "imrestore: no bundled models found; searched:";
        for (const auto& d : model_search_dirs()) std::cerr << " " << printable(d);
        std::cerr << "\n";
        if (json) {
            Json doc = json_document();
            doc["models"] = Json::array();
            std::cout << json_text(doc);
        }
        return kExitUsage;
    }
    if (json) {
        Json doc = json_document();
        Json& list = doc["models"] = Json::array();
        for (const BundledModel& m : models) {
            Json entry = {{"name", m.name}, {"path", m.path}, {"default", !default_on(m.name).empty()}};
            if (!default_on(m.name).empty()) entry["default_on"] = default_on(m.name);
            try {
                const ModelFile f = load_model_file(m.path);
                entry["task"] = f.task;
                entry["parameters"] = f.parameter_count();
                entry["flops_per_pixel"] = f.flops_per_pixel();
                entry["receptive_field"] = f.receptive_field();
                entry["description"] = f.description;
            } catch (const Error& e) {
                entry["error"] = e.what();
            }
            list.push_back(std::move(entry));
        }
        std::cout << json_text(doc);
        return kExitOk;
    }
    std::printf("%-16s %-10s %10s  %s\n", "name", "task", "parameters", "description");
    for (const BundledModel& m : models) {
        try {
            ModelFile f = load_model_file(m.path);
            std::printf("%-16s %-10s %10zu  %s%s\n", printable(m.name).c_str(), printable(f.task).c_str(),
                        f.parameter_count(), first_sentence(f.description).c_str(),
                        default_on(m.name) == "gpu"   ? " (default on a GPU)"
                        : default_on(m.name) == "cpu" ? " (default on the CPU)"
                                                      : "");
        } catch (const Error& e) {
            std::printf("%-16s %-10s %10s  unusable: %s\n", printable(m.name).c_str(), "?", "?",
                        printable(e.what()).c_str());
        }
    }
    std::vector<std::string> folders;  // where they were found, in search order
    for (const BundledModel& m : models) {
        const std::string folder = std::filesystem::path(m.path).parent_path().string();
        if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
    }
    std::printf("\nfound in:");
    for (const std::string& f : folders) std::printf(" %s", printable(f).c_str());
    std::printf(" (IMRESTORE_MODEL_PATH adds folders)\n");
    std::printf("use one with -m NAME; `imrestore model NAME` shows its stages\n");
    return kExitOk;
}

int run_model_info(const std::string& name_or_path) {
    ModelFile m = load_model_file(resolve_model(name_or_path));
    std::cout << printable_lines(describe_model(m));
    return kExitOk;
}

// ---------------------------------------------------------------- restore

// done/total, images/s and ETA on one self-overwriting stderr line; while
// the listing goes on, the total is the files listed so far ("[10/500+]")
// and the ETA waits for the listing's end.
class Progress {
public:
    explicit Progress(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
    void update(size_t done, size_t total, bool total_known) {
        if (!enabled_) return;
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        double rate = s > 0 ? done / s : 0;
        double eta = rate > 0 ? (total - done) / rate : 0;
        if (total_known)
            std::fprintf(stderr, "\r[%zu/%zu] %.1f images/s, ETA %.0f s   ", done, total, rate, eta);
        else
            std::fprintf(stderr, "\r[%zu/%zu+] %.1f images/s, listing   ", done, total, rate);
        std::fflush(stderr);
    }
    void clear() {
        if (enabled_) std::fprintf(stderr, "\r%60s\r", "");
    }

private:
    bool enabled_;
    std::chrono::steady_clock::time_point start_;
};

// What a restore report says before its files: model, device, precision,
// batch, shard (with --json-lines before the listing is over: without its counts).
void add_run_header(Json& doc, const JobStream& jobs, const ModelRunner& runner, const ModelChoice& choice,
                    double strength, bool jpeg_projection, bool keep_gray) {
    const ModelFile& model = runner.model();
    const Backend& backend = runner.backend();
    doc["model"] = {{"name", model.name}, {"path", model.path}, {"selected_by", choice.selected_by}};
    if (!choice.note.empty()) doc["model"]["note"] = choice.note;
    doc["device"] = {{"name", backend.name()}, {"description", backend.description()}};
    // --device cuda:0,2, cuda:all: the devices of the compute workers (backend is the first's).
    if (const std::vector<std::string> workers = device_workers(runner.options().device); workers.size() > 1)
        doc["device"]["workers"] = workers;
    doc["precision"] = {{"requested", precision_name(runner.options().precision)},
                        {"used", precision_name(runner.precision())}};
    doc["batch"] = runner.options().batch;
    doc["tta"] = runner.options().tta;
    // --kernel: the variants that ran instead of the planner's picks, so
    // timings made with them are never read as the default's.
    if (!runner.options().forced_variants.empty()) {
        doc["kernels_forced"] = Json::object();
        for (const auto& [op, variant] : runner.options().forced_variants) doc["kernels_forced"][op_name(op)] = variant;
    }
    // How --strength acts: "level" (it scales the model's noise level or
    // JPEG quality; each file's "levels" say the values) or "blend".
    doc["strength"] = {{"value", strength}, {"applies_to", model.extra_inputs.empty() ? "blend" : "level"}};
    // --jpeg-projection: whether JPEG inputs' outputs are projected (each file's "jpeg_projected" says where it was).
    doc["jpeg_projection"] = jpeg_projection;
    // --keep-gray: whether gray RGB inputs' outputs are kept gray (each file's "kept_gray" says where it was).
    doc["keep_gray"] = keep_gray;
    doc["shard"] = shard_json(jobs.shard(), jobs.selected(), jobs.listed(), jobs.finished());
}

// What it says after them: the summary and the time per stage; `halo_note`
// (tiling_note(), said on stderr without --json) where there is one.
void add_run_summary(Json& doc, const PipelineReport& r, const std::string& halo_note) {
    const double seconds = r.wall_ms / 1e3;
    doc["summary"] = {{"restored", r.count(FileResult::Status::Restored)},
                      {"skipped", r.count(FileResult::Status::Skipped)},
                      {"failed", r.count(FileResult::Status::Failed)},
                      {"not_run", r.count(FileResult::Status::NotRun)},
                      {"interrupted", r.interrupted},
                      {"wall_ms", r.wall_ms},
                      {"megapixels", r.megapixels},
                      {"megapixels_per_s", seconds > 0 ? r.megapixels / seconds : 0},
                      {"jobs_held_peak", r.peak_jobs_held},
                      {"compute_lanes", r.compute_lanes},
                      {"compute_workers", r.compute_workers}};
    if (!r.workers_unused.empty()) doc["summary"]["workers_not_used"] = r.workers_unused;
    if (!halo_note.empty()) doc["summary"]["tiling_note"] = halo_note;
    doc["timing_ms"] = r.timer.json();
    if (!r.bench_timer.empty()) doc["bench_ms"] = r.bench_timer.json();
}

// --json: the whole report, once the run is over (every file's entry held until then).
std::string report_json(const JobStream& jobs, const ModelRunner& runner, const ModelChoice& choice, double strength,
                        bool jpeg_projection, bool keep_gray, const PipelineReport& r,
                        const std::vector<FileResult>& results, const std::string& halo_note) {
    Json doc = json_document();
    add_run_header(doc, jobs, runner, choice, strength, jpeg_projection, keep_gray);
    Json& files = doc["files"] = Json::array();
    for (const FileResult& f : results) files.push_back(file_json(f));
    add_run_summary(doc, r, halo_note);
    return json_text(doc);
}

// --json-lines: one record per line as the run goes (report/json_document.h).
Json json_record(const char* type) {
    Json doc = json_document();
    doc["type"] = type;
    return doc;
}

bool takes(const ModelFile& model, const std::string& input) {
    return std::find(model.extra_inputs.begin(), model.extra_inputs.end(), input) != model.extra_inputs.end();
}

// "takes only the image" / "takes the image and noise_level (--noise-level)".
std::string inputs_text(const ModelFile& model) {
    if (model.extra_inputs.empty()) return "takes only the image";
    std::string s = "takes the image";
    for (size_t i = 0; i < model.extra_inputs.size(); ++i) {
        const std::string& e = model.extra_inputs[i];
        s += (i + 1 == model.extra_inputs.size() ? " and " : ", ") + e +
             (e == "noise_level"    ? " (--noise-level)"
              : e == "jpeg_quality" ? " (--jpeg-quality)"
                                    : "");
    }
    return s;
}

// The noise level (sigma) and JPEG quality a model takes, scaled by the
// strength: sigma * S; the quality's distance from 100 times S (S 0: 100,
// no artifacts; 2: twice as far from 100), within 1..100.
double scaled_level(const std::string& name, double value, double strength) {
    if (name == "noise_level") return value * strength;
    return std::clamp(100.0 - strength * (100.0 - value), 1.0, 100.0);
}

// How --strength, --noise-level and --jpeg-quality apply to the model.
struct LevelPlan {
    float blend = 1;                                   // PipelineOptions::blend
    std::vector<std::pair<std::string, float>> fixed;  // RunnerOptions::extra_inputs
    LevelsFn per_image;                                // PipelineOptions::levels
};

LevelPlan plan_levels(const Options& o, const ModelFile& model) {
    if (!(o.strength >= 0 && o.strength <= 2))
        throw UsageError("--strength " + CLI::detail::to_string(o.strength) +
                         ": must be within 0..2 (1: the model as trained; below: weaker; above: stronger)");
    if (o.noise_level_given && !(o.noise_level >= 0 && o.noise_level <= 255))
        throw UsageError("--noise-level " + CLI::detail::to_string(o.noise_level) +
                         ": must be within 0..255 (sigma on the 8-bit scale)");
    if (o.noise_level_given && !takes(model, "noise_level"))
        throw UsageError("--noise-level: model '" + model.name + "' takes no noise level; it " + inputs_text(model));
    if (o.jpeg_quality && !takes(model, "jpeg_quality"))
        throw UsageError("--jpeg-quality: model '" + model.name + "' takes no JPEG quality; it " + inputs_text(model));
    LevelPlan out;
    if (model.extra_inputs.empty()) {
        out.blend = float(o.strength);
        return out;
    }
    // Without --jpeg-quality, each file's quality comes from its JPEG tables
    // as it is read, or for a file that is no JPEG (any more) is estimated
    // from its pixels (estimate_jpeg_quality).
    const double strength = o.strength, sigma = o.noise_level_given ? o.noise_level : -1;
    const int quality = o.jpeg_quality;
    const std::vector<std::string> names = model.extra_inputs;
    const std::string model_name = model.name;
    // Given levels are the same for every image; the runner's options hold
    // them (and a placeholder for those set per image).
    auto level = [=](const std::string& name, const Image* image, const std::string& input,
                     const std::vector<uint8_t>* bytes) {
        FileResult::Level l;
        l.name = name;
        if (name == "noise_level" && sigma >= 0) {
            l.value = sigma, l.source = "given";
        } else if (name == "noise_level") {
            l.value = estimate_noise_sigma(*image), l.source = "estimated";
        } else if (quality) {
            l.value = quality, l.source = "given";
        } else {
            std::optional<JpegQuality> q = bytes ? jpeg_quality(*bytes) : jpeg_quality_of_file(input);
            l.source = "jpeg tables";
            if (!q) q = estimate_jpeg_quality(*image), l.source = "estimated";
            if (!q)
                throw Error(input + ": too small to estimate the JPEG quality model '" + model_name +
                            "' takes from its pixels, and not a JPEG: give --jpeg-quality Q");
            l.value = q->quality;
        }
        l.used = scaled_level(name, l.value, strength);
        return l;
    };
    for (const std::string& name : names) {
        const bool given = name == "noise_level" ? sigma >= 0 : quality > 0;
        const double used = given ? level(name, nullptr, "", nullptr).used : 0;
        out.fixed.emplace_back(name, extra_input_value(name, used));
    }
    out.per_image = [=](const Image& image, const std::string& input, const std::vector<uint8_t>* bytes) {
        ImageLevels r;
        for (const std::string& name : names) {
            FileResult::Level l = level(name, &image, input, bytes);
            r.values.push_back(extra_input_value(name, l.used));
            r.levels.push_back(std::move(l));
        }
        return r;
    };
    return out;
}

int run_restore(const Options& o) {
    if (o.inputs.empty()) throw CLI::RequiredError("INPUT (an image file or folder)");
    Codec codec = parse_codec(o.codec);
    std::string format = o.format;  // "PNG" or ".png" -> "png"
    if (!format.empty() && format[0] == '.') format.erase(0, 1);
    for (char& c : format) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (o.tile > 0 && o.tile < 16)
        throw UsageError("--tile " + std::to_string(o.tile) +
                         ": tiles under 16 pixels would be mostly halo; use 16 or more");
    JobRequest request;
    request.inputs = o.inputs, request.output = o.output, request.recursive = o.recursive;
    request.codec = codec, request.format = format, request.suffix = o.suffix;
    // The files are listed as the run goes (usage errors first, here).
    JobStream jobs(request, shard_from_options(o.shard));
    if (o.output == kStdio && (o.json || o.json_lines || o.timing || o.bench))
        throw UsageError(
            "-o -: standard output carries the image; --json, --json-lines, --timing and --bench would mix into it");
    if (o.json && o.json_lines) throw UsageError("--json and --json-lines: give one");
    RunnerOptions settings;
    settings.device = o.device;
    settings.threads = o.threads;
    settings.precision = parse_precision(o.precision);
    settings.max_tile = o.tile;
    settings.tta = o.tta;
    settings.max_memory = size_t(o.max_memory);
    settings.batch = o.batch;
    for (const std::string& k : o.kernels) {
        const auto forced = parse_forced_variant(k);
        for (const auto& [op, variant] : settings.forced_variants)
            if (op == forced.first)
                throw UsageError("--kernel " + k + ": " + op_name(op) + " is forced twice (" + variant + " before)");
        settings.forced_variants.push_back(forced);
    }
    std::string note;
    std::unique_ptr<Backend> backend = make_backend(settings, &note);
    // The device first: without -m, the default model is the device's.
    const ModelChoice choice = choose_model(o.model, backend->is_host_memory());
    ModelFile model = load_model_file(resolve_model(choice.name));
    const LevelPlan levels = plan_levels(o, model);
    const bool jpeg_projection = jpeg_projection_wanted(o.jpeg_projection, model.task);
    const bool keep_gray = keep_gray_wanted(o.keep_gray, model.task);
    settings.extra_inputs = levels.fixed;
    ModelRunner runner(model, *backend, settings);
    bool chatty = !o.quiet && !o.json && !o.json_lines;
    if (!o.quiet) {
        if (!note.empty()) std::cerr << "note: " << note << "\n";
        if (!choice.note.empty() && !o.json && !o.json_lines) std::cerr << "note: " << choice.note << "\n";
        if (!o.recursive)
            for (const std::string& in : o.inputs)
                if (std::filesystem::is_directory(in))
                    if (int n = subfolders_skipped(in, o.suffix))
                        std::cerr << "note: " << printable(in) << ": " << n << " subfolder" << (n == 1 ? "" : "s")
                                  << " not restored; -r descends into them\n";
        if (const std::string shard = shard_note(jobs.shard(), 0, 0, false); !shard.empty()) std::cerr << shard << "\n";
        std::cerr << "model " << printable(model.name) << " (" << printable(model.path) << "), device "
                  << backend->name() << ": " << backend->description() << ", precision "
                  << precision_name(runner.precision())
                  << (jpeg_projection ? ", JPEG inputs projected onto their files" : "") << "\n";
        for (const auto& [op, variant] : runner.options().forced_variants)
            std::cerr << "note: every " << op_name(op) << " runs kernel variant " << variant
                      << " (--kernel), not the planner's pick\n";
    }

    PipelineOptions p;
    p.batch = runner.options().batch;
    p.force = o.force;
    p.codec = codec;
    p.max_pixels = o.max_pixels;
    if (!format.empty()) p.stdout_format = format;
    p.write.bit_depth = o.bit_depth;
    p.write.jpeg_quality = p.write.webp_quality = o.quality;
    p.write.png_compression = o.png_compression;
    p.write.metadata = !o.strip;
    p.bench_repeats = o.bench;
    p.blend = levels.blend;
    p.levels = levels.per_image;
    p.jpeg_projection = jpeg_projection;
    p.keep_gray = keep_gray;
    p.cancel = &g_cancel;
    std::signal(SIGPIPE, SIG_IGN);  // a closed output pipe is an error of that write (EPIPE), not death
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);

    if (o.json_lines) {
        Json start = json_record("start");
        add_run_header(start, jobs, runner, choice, o.strength, jpeg_projection, keep_gray);
        std::cout << json_line(start) << std::flush;
    }
    Progress progress(!o.quiet && isatty(STDERR_FILENO));
    std::vector<FileResult> results;   // --json only: its one document holds every file
    int largest_h = 0, largest_w = 0;  // of the images restored, for tiling_note()
    const JobSource source = [&](FileJob& job) { return jobs.next(job); };
    PipelineReport report = run_pipeline(source, runner, p, [&](size_t done, const FileResult& f) {
        progress.clear();
        if (f.status == FileResult::Status::Restored &&
            size_t(f.width) * size_t(f.height) > size_t(largest_w) * size_t(largest_h))
            largest_w = f.width, largest_h = f.height;
        const FileLines lines = file_lines(f, o.quiet);
        std::cerr << lines.log;
        if (chatty && !lines.done.empty())  // stdout is the image with -o -
            (o.output == kStdio ? std::cerr : std::cout) << lines.done << std::flush;
        if (o.json_lines) {
            Json record = json_record("file");
            record.update(file_json(f));
            std::cout << json_line(record) << std::flush;
        }
        if (o.json) results.push_back(f);
        progress.update(done, jobs.selected(), jobs.finished());
    });
    progress.clear();
    const std::string halo_note = o.tile ? "" : tiling_note(runner, largest_h, largest_w);  // --tile: as asked

    int restored = report.count(FileResult::Status::Restored), failed = report.count(FileResult::Status::Failed);
    if (o.json) {
        std::cout << report_json(jobs, runner, choice, o.strength, jpeg_projection, keep_gray, report, results,
                                 halo_note);
    } else if (o.json_lines) {
        Json end = json_record("summary");
        end["shard"] = shard_json(jobs.shard(), jobs.selected(), jobs.listed(), jobs.finished());
        add_run_summary(end, report, halo_note);
        std::cout << json_line(end);
    } else {
        char title[128];
        std::snprintf(title, sizeof title, "timing (%s, %s, %d images, %.2f MP)", backend->name().c_str(),
                      precision_name(runner.precision()), restored, report.megapixels);
        if (o.timing || o.bench)
            std::cout
                << report.timer.table(title, report.megapixels, restored)
                << "  (read+decode with to-NCHW, and from-NCHW with encode+write, run on worker threads beside\n"
                   "   the compute; on a GPU an image usually crosses as its samples and is converted there, \"on\n"
                   "   device\"), and batches may run on several compute lanes at once, so the stage total\n"
                   "   can exceed the wall time: "
                << std::to_string(int(report.wall_ms + 0.5)) << " ms)\n";
        if (o.bench && report.bench_timer.empty())
            std::cout << "bench: nothing was computed (every file was skipped or failed; existing outputs are "
                         "skipped unless --force, or use another -o)\n";
        else if (o.bench)
            std::cout << report.bench_timer.table("bench: compute repeated " + std::to_string(o.bench) +
                                                      "x per batch after the real run (warm-up); per-call min/median",
                                                  0, restored, true);
    }
    // A worker of --device cuda:0,2 that could not start (its share ran on the others).
    if (!o.quiet && !o.json && !o.json_lines)
        for (const std::string& why : report.workers_unused) std::cerr << "note: " << why << "\n";
    if (!o.quiet && !o.json && !o.json_lines && !halo_note.empty()) std::cerr << "note: " << halo_note << "\n";
    if (report.interrupted)
        std::cerr << "interrupted: " << report.count(FileResult::Status::NotRun) << " file(s) not restored"
                  << (report.listing_done ? "" : ", nor those not listed yet") << "; nothing partial was left behind\n";
    if (!o.quiet) {
        if (const std::string shard = shard_note(jobs.shard(), jobs.selected(), jobs.listed(), jobs.finished());
            !shard.empty())
            std::cerr << shard << "\n";
        double s = report.wall_ms / 1e3;
        std::fprintf(stderr, "%d restored, %d skipped, %d failed in %.2f s (%.2f MP/s) on %s\n", restored,
                     report.count(FileResult::Status::Skipped), failed, s, s > 0 ? report.megapixels / s : 0.0,
                     backend->name().c_str());
    }
    if (report.interrupted) return kExitInterrupted;
    return failed ? kExitFileFailed : kExitOk;
}

// The last line of a usage error: where the options are documented (as GNU
// tools say it), for the command that was given: "imrestore eval --help".
std::string usage_hint(const CLI::App& app) {
    std::string command = "imrestore";
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    return "Try '" + command + " --help' or 'man imrestore' for more information.";
}

// The --json report of a run that stopped: {"imrestore", "schema_version", "error"};
// with --json-lines, that record on one line with "type": "error".
std::string error_json(const std::string& message, bool lines = false) {
    Json doc = json_document();
    if (lines) doc["type"] = "error";
    doc["error"] = message;
    return lines ? json_line(doc) : json_text(doc);
}

// An error that stops the whole run: on stderr, and with --json as the report.
void report_error(const Options& o, const std::string& message) {
    std::cerr << "imrestore: " << printable(message) << "\n";
    if (o.json || o.json_lines) std::cout << error_json(message, o.json_lines && !o.json);
}

void setup(CLI::App& app, Options& o) {
    app.description(
        "imrestore - restore photographs (denoise, sharpen, ...) with small convolutional networks, on an NVIDIA GPU "
        "or the CPU.\n\n"
        "  imrestore photo.jpg                    writes photo.restored.jpg beside it\n"
        "  imrestore photo.jpg -o clean.png       writes clean.png\n"
        "  imrestore holiday/ -r -o restored/     a whole folder tree, mirrored into restored/\n"
        "  imrestore *.png -o out/ -m sharpen     another bundled model (see: imrestore models)\n"
        "  imrestore photo.jpg --timing           how long each stage took\n");
    app.set_version_flag("--version", std::string("imrestore ") + IMRESTORE_VERSION +
                                          (cuda_compiled() ? " (CUDA backend built in)" : " (CPU only)") +
                                          (opencv_available() ? ", codecs: OpenCV + stb" : ", codecs: stb"));
    app.add_option("inputs", o.inputs, "Image files and/or folders to restore")->type_name("INPUT...");
    app.add_option("-o,--output", o.output,
                   "Output file (one input) or folder; default: NAME.restored.EXT beside each input, "
                   "FOLDER.restored/ for a folder")
        ->type_name("PATH");
    app.add_option("-m,--model", o.model, model_option_help());
    app.add_option("-d,--device", o.device,
                   "auto (GPU if usable, else CPU), cpu, cuda, cuda:N, or several GPUs: cuda:N,M,... or cuda:all (one "
                   "worker each)")
        ->capture_default_str();
    app.add_option("--precision", o.precision,
                   "What the convolutions compute in: fp32 (CUDA cores, CPU), tf32 (GPU tensor cores, sm_80 and "
                   "later: operands rounded to TF32, activations and sums in fp32), bf16 or fp16 (tensor cores, "
                   "activations in that type; a batch whose half-precision output is not finite is computed "
                   "again in fp32, with a warning), or auto (the fastest the model file records as validated, "
                   "else fp32; fp32 on the CPU)")
        ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16", "auto"}))
        ->capture_default_str();
    app.add_option("-b,--batch", o.batch, "Images of the same size run together, up to this many")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_flag("-r,--recursive", o.recursive, "Descend into subfolders of folder inputs");
    app.add_flag("-f,--force", o.force, "Overwrite outputs that already exist (inputs are never overwritten)");
    app.add_option("--format", o.format,
                   "Format of outputs named after their input (png, jpg, tif, webp, ...); default: the input's "
                   "(an -o FILE.EXT keeps its own)")
        ->type_name("EXT");
    app.add_option("--suffix", o.suffix,
                   "Added to the names of outputs written beside their inputs: NAME<SUFFIX>.EXT, FOLDER<SUFFIX>/ "
                   "(e.g. --suffix .denoised to keep the results of several models)")
        ->capture_default_str();
    app.add_option("--codec", o.codec, "Image codec: auto (best per format), opencv, stb")
        ->check(CLI::IsMember({"auto", "opencv", "stb"}))
        ->capture_default_str();
    app.add_option("--bit-depth", o.bit_depth, "Output bits per sample: 0 = same as the input, 8 or 16")
        ->check(CLI::IsMember({0, 8, 16}))
        ->capture_default_str();
    app.add_option("--quality", o.quality, "JPEG/WebP quality")->check(CLI::Range(1, 100))->capture_default_str();
    app.add_flag("--strip", o.strip,
                 "Write no metadata. Without it the ICC profile and EXIF (orientation reset to normal once "
                 "applied) are carried into JPEG, PNG, WebP and TIFF outputs; BMP, TGA and PNM hold none");
    app.add_option("--strength", o.strength,
                   "How strongly to restore, 0..2: for a model that takes a noise level or JPEG quality it scales "
                   "the level (given or estimated: sigma x S; quality 100 - S x (100 - Q)), for any other the "
                   "output is input + S x (restored - input); 0 gives the input, 1 the model as trained")
        ->type_name("S")
        ->capture_default_str();
    app.add_option("--noise-level", o.noise_level,
                   "For models that take a noise level: the noise sigma on the 0-255 scale (default: estimated "
                   "from each image, reported with --json and --timing)")
        ->type_name("SIGMA");
    app.add_option("--jpeg-quality", o.jpeg_quality,
                   "For models that take a JPEG quality: the quality 1..100 the input was saved at (default: read "
                   "from each JPEG's quantization tables)")
        ->check(CLI::Range(1, 100))
        ->type_name("Q");
    app.add_option("--jpeg-projection", o.jpeg_projection,
                   "Project each JPEG input's output onto the images its file could have come from (every DCT "
                   "coefficient within its quantization step of the file's), which the original photo is one of: "
                   "no farther from it than the model's output; auto: for models whose task is deblock, off for the "
                   "others (noise or blur besides the artifacts would be kept)")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    app.add_option("--keep-gray", o.keep_gray,
                   "Keep a gray photo gray: an RGB input with R = G = B at every pixel gets each output pixel's R, G "
                   "and B set to their mean (where the model would leave specks of color); auto: for the tasks that "
                   "restore an image's own colors (denoise, deblock, deblur, photo, sharpen)")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    app.add_option("--png-compression", o.png_compression,
                   "PNG compression level (1: fastest; 6: ~4% smaller files, ~3x slower to encode)")
        ->check(CLI::Range(0, 9))
        ->capture_default_str();
    app.add_option("-j,--threads", o.threads,
                   "Threads of the CPU backend's compute (0 = one per core); decoding/encoding use their own")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    app.add_option("--tile", o.tile,
                   "Process in tiles of at most this many pixels a side (0 = only when memory is short; smaller tiles "
                   "are used when memory requires)")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    app.add_flag("--tta", o.tta,
                 "Test-time augmentation: average the model over the 8 flips and rotations of each image (8x the "
                 "compute, a little more accuracy)");
    app.add_option("--max-memory", o.max_memory,
                   "The most memory of the compute device (GPU, or RAM on the CPU) one pass may hold, e.g. 8G or "
                   "512M; larger images run in tiles, with the same result (default: 70% of what is free on a GPU; on "
                   "the CPU 256M, or more where a model's receptive field would make such tiles waste work)")
        ->transform(CLI::AsSizeValue(false).description(""))
        ->type_name("SIZE");
    app.add_option("--max-pixels", o.max_pixels,
                   "Refuse images with more pixels than this, before decoding them (default: what this machine's "
                   "memory allows, at most 268435456; images that cannot fit in memory are refused anyway)")
        ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
    app.add_flag("--timing", o.timing, "Print the time per stage (decode, convert, upload, each model stage, ...)");
    app.add_option("--bench", o.bench, "After each batch, repeat the compute N times; print min/median per stage")
        ->check(CLI::Range(0, 100000))
        ->type_name("N");
    app.add_option("--kernel", o.kernels,
                   "KERNEL is OP=VARIANT: run kernel variant VARIANT for every OP of the model instead of the "
                   "planner's pick, to time it with --bench (repeatable; an unknown name lists the backend's "
                   "variants; a variant that does not apply to a layer fails that file); --json records it as "
                   "kernels_forced")
        ->type_name("KERNEL")  // not OP=VARIANT: help's TYPE=DEFAULT would read VARIANT as a default
        ->expected(1)
        ->allow_extra_args(false)  // one a time: `--kernel A=B photo.jpg` leaves photo.jpg an input
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    add_shard_options(&app, o.shard);
    app.add_flag("--json", o.json,
                 "Print a machine-readable report on stdout (nothing else goes there), once the run is over: it "
                 "holds every file's entry until then (for folders of millions, --json-lines)");
    app.add_flag("--json-lines", o.json_lines,
                 "Print the report as JSON Lines on stdout as the run goes: a start record, one per file as it "
                 "finishes, a summary (for folders of millions of files: nothing is kept per file once written)");
    app.add_flag("-q,--quiet", o.quiet, "Print only errors");

    app.footer(
        "Inputs named 'models', 'model', 'degrade' or 'eval' are read as those commands; write ./models for a "
        "folder.\n"
        "Exit codes: 0 all restored (or skipped), 1 some file failed, 2 bad usage, model or device, "
        "3 internal error, 130 interrupted (Ctrl-C: the files being written are finished first).");
    auto* models = app.add_subcommand("models", "List the bundled models and where they were found");
    models->add_flag("--json", o.models_json, "Print the list as JSON on stdout");
    auto* model = app.add_subcommand("model", "Show a model's metadata, stages, parameters and receptive field");
    model->add_option("model", o.model_to_show, "Bundled model name or .h5 path")->required();
    model
        ->add_option("--validate-precision", o.validate.photos,
                     "Run the model in fp32, fp16 and bf16 (GPU) on these clean photos at its task's degradations "
                     "and print whether each half precision keeps the output within the bound of fp32")
        ->type_name("DIR");
    model
        ->add_option("--write", o.validate.write,
                     "With --validate-precision: write the model with the precisions that hold the bound "
                     "(validated_precisions, which --precision auto uses) to this file, only if one does")
        ->type_name("OUT.h5");
    model->add_option("-d,--device", o.validate.device, "With --validate-precision: auto, cuda or cuda:N")
        ->capture_default_str();
    add_degrade_command(app, o.degrade);
    add_eval_command(app, o.eval);
}

}  // namespace

int cli_main(int argc, char** argv) {
    CLI::App app;
    Options o;
    setup(app, o);
    // CLI11's own usage errors (unknown option, bad value), as ours are printed.
    app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
        return "imrestore: " + printable(e.what()) + "\n" + usage_hint(*failed) + "\n";
    });
    try {
        app.parse(argc, argv);
        o.noise_level_given = app.count("--noise-level") > 0;
        bool subcommand = !app.get_subcommands().empty();
        if (subcommand && !o.inputs.empty())
            throw UsageError("'" + o.inputs.front() + "' given before the command '" +
                             app.get_subcommands().front()->get_name() +
                             "': to restore a folder of that name, write it as ./models or ./model");
        if (app.got_subcommand("models")) return run_models(o.models_json);
        if (app.got_subcommand("model")) {
            if (o.validate.photos.empty()) {
                if (!o.validate.write.empty()) throw UsageError("model: --write needs --validate-precision DIR");
                return run_model_info(o.model_to_show);
            }
            o.validate.model = o.model_to_show;
            return run_validate_precision(o.validate);
        }
        if (app.got_subcommand("degrade")) return o.json = o.degrade.json, run_degrade(o.degrade);
        if (app.got_subcommand("eval")) return o.json = o.eval.json, run_eval(o.eval);
        return run_restore(o);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        if (code != 0) {  // --json promises a report on stdout, also for a bad command line
            for (int i = 1; i < argc; ++i) {
                if (std::string(argv[i]) == "--json") o.json = true;
                if (std::string(argv[i]) == "--json-lines") o.json_lines = true;
            }
            if (o.json || o.json_lines) std::cout << error_json(e.what(), o.json_lines && !o.json);
        }
        return code == 0 ? kExitOk : kExitUsage;
    } catch (const UsageError& e) {
        report_error(o, e.what());
        std::cerr << usage_hint(app) << "\n";
        return kExitUsage;
    } catch (const Error& e) {
        report_error(o, e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        report_error(o, std::string("internal error: ") + e.what());
        return kExitInternal;
    }
}

}  // namespace imr
