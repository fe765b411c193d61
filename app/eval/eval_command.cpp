#include "eval/eval_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "backend.h"
#include "eval/baselines.h"
#include "eval/degrade_command.h"
#include "eval/metrics.h"
#include "eval/photo_mix.h"
#include "image/image_batch.h"
#include "image/jpeg_projection.h"
#include "image/jpeg_quality.h"
#include "image/neutral_gray.h"
#include "jobs/file_report.h"
#include "jobs/plan_jobs.h"
#include "jobs/run_each_file.h"
#include "model_registry.h"
#include "model_runner.h"
#include "report/json_document.h"
#include "shard_options.h"
#include "usage_error.h"
#include "util/printable.h"

namespace imr {

namespace fs = std::filesystem;

CLI::App* add_eval_command(CLI::App& app, EvalOptions& o) {
    CLI::App* cmd = app.add_subcommand(
        "eval", "Degrade clean images (or take given degraded ones), restore them, print PSNR/SSIM vs baselines");
    cmd->add_option("clean", o.inputs, "Clean images: folders and/or files")->required()->type_name("CLEAN...");
    cmd->add_option("-m,--model", o.model, model_option_help());
    cmd->add_option("-d,--device", o.device, "auto (GPU if usable, else CPU), cpu, cuda or cuda:N")
        ->capture_default_str();
    cmd->add_option("-j,--threads", o.threads, "Threads of the CPU backend's compute (0 = one per core)")
        ->check(CLI::Range(0, 1024));
    add_degradation_options(cmd, o.degradation, o.seed);  // the degradation applied to the clean images
    cmd->add_option("--degraded", o.degraded_dir,
                    "Folder of degraded images to use instead, matched to the clean ones by file name "
                    "(relative path; any image extension)")
        ->type_name("DIR");
    cmd->add_option("--baselines", o.baselines,
                    "auto (those that fit the degradation), none, all, or a list of gaussian,bilateral,nlmeans,unsharp")
        ->capture_default_str();
    cmd->add_flag("--tta", o.tta, "Average the model over the 8 flips and rotations of each image, as for restoring");
    cmd->add_option("--jpeg-projection", o.jpeg_projection,
                    "Project the model's output for a JPEG-degraded image (--jpeg, or a JPEG in --degraded) onto "
                    "that JPEG's quantization cells, as for restoring (auto: for models whose task is deblock)")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_option("--keep-gray", o.keep_gray,
                    "Keep the model's output for a gray RGB image (R = G = B at every pixel, as a JPEG whose chroma "
                    "was rounded to neutral is) gray, as for restoring (auto: for the tasks that restore an image's "
                    "own colors)")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_flag("-r,--recursive", o.recursive, "Descend into subfolders of folder inputs");
    add_shard_options(cmd, o.shard);
    cmd->add_flag("--json", o.json, "Print a machine-readable report on stdout (nothing else goes there)");
    cmd->add_flag("-q,--quiet", o.quiet, "Print only errors and the results");
    cmd->footer(
        "Examples:\n"
        "  imrestore eval photos/ --noise 25                    the default model vs baselines on noise sigma 25\n"
        "  imrestore eval photos/ -m sharpen --blur 1.5 --json\n"
        "  imrestore degrade photos/ -o q20/ --jpeg 20 && imrestore eval photos/ --degraded q20/\n"
        "PSNR and SSIM on 8-bit RGB (SSIM: 11x11 Gaussian window, sigma 1.5, as BasicSR/MATLAB).\n"
        "Each baseline's parameter is the one with the best mean PSNR on these same images (said in the report).");
    return cmd;
}

namespace {

constexpr int kExitOk = 0, kExitSomeFailed = 1;

// One clean image and everything measured on it.
struct Entry {
    std::string path;  // as the user named it
    std::string name;  // relative to its folder input (what pairs are matched by)
    std::string error;
    std::string drawn;          // --mix: the steps this image's draw ran (PhotoMixParams::describe)
    Image clean, degraded;      // 8-bit, color channels only, the same channels
    std::vector<uint8_t> jpeg;  // the degraded image's JPEG file, for --jpeg-projection (empty: none)
    std::string jpeg_name;      // what messages call it
    bool jpeg_projected = false;
    bool kept_gray = false;  // the degraded image was neutral RGB, so the output was made so (neutral_gray.h)
    std::map<std::string, double> psnr, ssim;
};

std::vector<std::string> parse_baselines(const std::string& spec, const Degradation& known) {
    if (spec == "auto") return default_baselines(known);
    if (spec == "none") return {};
    if (spec == "all") return all_baseline_names();
    std::vector<std::string> out;
    std::stringstream s(spec);
    for (std::string name; std::getline(s, name, ',');) {
        const auto& names = all_baseline_names();
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            std::string list;
            for (const auto& n : names) list += " " + n;
            throw UsageError("--baselines " + spec + ": unknown '" + name + "' (use auto, none, all or of:" + list +
                             ")");
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

// The clean images: folder contents (sorted; hidden files and NAME.restored.*
// skipped, as the main command reads folders) and files, this shard's
// (--shard). A missing input is an error for the whole run: there is nothing
// to measure it against.
PlannedJobs list_clean(const EvalOptions& o) {
    for (const std::string& raw : o.inputs) {
        std::error_code ec;
        if (!fs::exists(raw, ec)) throw Error(raw + ": no such file or folder (the clean images)");
    }
    JobRequest request;
    request.inputs = o.inputs;
    request.recursive = o.recursive;
    request.names_outputs = false;  // eval writes nothing
    return plan_jobs(request, shard_from_options(o.shard));
}

// The degraded partner of clean file `name` in dir: the same relative path,
// or the same path with another image extension (degrade writes .png).
std::string find_pair(const std::string& dir, const std::string& name) {
    std::error_code ec;
    const fs::path same = fs::path(dir) / name;
    if (fs::is_regular_file(same, ec)) return same.string();
    const fs::path folder = same.parent_path();
    const std::string stem = same.stem().string();
    std::vector<std::string> found;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path p = it->path();
        if (p.stem().string() == stem && is_readable_extension(p.string()) && it->is_regular_file(ec))
            found.push_back(p.string());
    }
    std::sort(found.begin(), found.end());
    if (found.empty())
        throw Error("no degraded partner in " + dir + " (looked for " + same.string() + " and " +
                    (folder / stem).string() + ".*)");
    if (found.size() > 1) throw Error("ambiguous degraded partner: " + found[0] + " and " + found[1]);
    return found[0];
}

// Clean and degraded as the metrics compare them: 8-bit, alpha dropped, a
// gray one replicated to RGB when the other is RGB.
void prepare(Entry& e, const EvalOptions& o, bool jpeg_projection) {
    Image clean = to_8bit(read_image(e.path));
    if (clean.color_channels() != 1 && clean.color_channels() != 3)
        throw Error(std::to_string(clean.channels) + " channels; expected gray or RGB");
    Image degraded;
    if (o.degraded_dir.empty()) {
        const uint64_t seed = image_noise_seed(o.seed, e.path);
        degraded = degrade(clean, o.degradation, seed, jpeg_projection ? &e.jpeg : nullptr);
        if (!e.jpeg.empty()) e.jpeg_name = e.path + " (as --jpeg saved it)";
        if (!o.degradation.mix.empty()) e.drawn = draw_photo_mix_for_eval(seed).describe();
    } else {
        const std::string pair = find_pair(o.degraded_dir, e.name);
        std::vector<uint8_t> bytes = read_image_file(pair);
        degraded = to_8bit(decode_image(pair, bytes));
        if (jpeg_projection && is_jpeg(bytes)) e.jpeg = std::move(bytes), e.jpeg_name = pair;
        if (degraded.color_channels() != 1 && degraded.color_channels() != 3)
            throw Error(pair + ": " + std::to_string(degraded.channels) + " channels; expected gray or RGB");
        if (degraded.width != clean.width || degraded.height != clean.height)
            throw Error("the degraded " + pair + " is " + std::to_string(degraded.width) + "x" +
                        std::to_string(degraded.height) + ", the clean image " + std::to_string(clean.width) + "x" +
                        std::to_string(clean.height));
    }
    const int colors = std::max(clean.color_channels(), degraded.color_channels());
    e.clean = color_channels_as(clean, colors);
    e.degraded = color_channels_as(degraded, colors);
    if (e.clean.width < kSsimWindow || e.clean.height < kSsimWindow)
        throw Error(std::to_string(e.clean.width) + "x" + std::to_string(e.clean.height) +
                    " is smaller than SSIM's 11x11 window");
}

std::string fmt(const char* f, double v) {
    if (std::isinf(v)) return "inf";
    if (std::isnan(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

struct ModelTime {
    double total_ms = 0, first_ms = 0, megapixels = 0;
    int images = 0;
};

struct Report {
    std::string title;                 // what was degraded, how
    std::vector<std::string> methods;  // column keys: "input", "model", baselines
    std::string model_label;           // the model's column header (its name)
    std::vector<Entry> entries;
    std::vector<BaselineResult> baselines;
    std::vector<std::string> notes;
    ModelTime time;
    bool jpeg_projection = false;  // the model's outputs for JPEG-degraded images projected (--jpeg-projection)
    bool keep_gray = false;        // gray RGB images' outputs kept gray (--keep-gray)
    std::map<std::string, double> mean_psnr, mean_ssim;
    int measured = 0, failed = 0;
};

void compute_means(Report& r) {
    for (const std::string& m : r.methods) {
        double sp = 0, ss = 0;
        int n = 0;
        for (const Entry& e : r.entries) {
            if (!e.error.empty() || !e.psnr.count(m)) continue;
            sp += e.psnr.at(m), ss += e.ssim.at(m), ++n;
        }
        r.mean_psnr[m] = n ? sp / n : NAN;
        r.mean_ssim[m] = n ? ss / n : NAN;
    }
}

std::string table(const Report& r) {
    std::ostringstream s;
    size_t name_w = 12;
    for (const Entry& e : r.entries) name_w = std::max(name_w, printable(e.name).size());
    auto header = [&](const std::string& m) { return m == "model" ? r.model_label : m; };
    char line[256];
    s << r.title << "\n\n";
    s << std::string(name_w, ' ') << "  " << std::string(9, ' ');
    for (const std::string& m : r.methods) {
        std::snprintf(line, sizeof line, "  %-14s", header(m).substr(0, 14).c_str());
        s << line;
    }
    s << "\n" << std::string(name_w, ' ') << "  " << std::string(9, ' ');
    for (size_t i = 0; i < r.methods.size(); ++i) s << "  PSNR   SSIM  ";
    s << "\n";
    auto row = [&](const std::string& name, const std::string& size, const std::map<std::string, double>& p,
                   const std::map<std::string, double>& q) {
        std::snprintf(line, sizeof line, "%-*s  %-9s", int(name_w), printable(name).c_str(), size.c_str());
        s << line;
        for (const std::string& m : r.methods) {
            std::snprintf(line, sizeof line, "  %-6s %-6s", fmt("%.2f", p.count(m) ? p.at(m) : NAN).c_str(),
                          fmt("%.4f", q.count(m) ? q.at(m) : NAN).c_str());
            s << line;
        }
        s << "\n";
    };
    for (const Entry& e : r.entries) {
        if (!e.error.empty()) {
            s << e.name << "  failed: " << e.error << "\n";
            continue;
        }
        row(e.name, std::to_string(e.clean.width) + "x" + std::to_string(e.clean.height), e.psnr, e.ssim);
    }
    row("mean", "(" + std::to_string(r.measured) + ")", r.mean_psnr, r.mean_ssim);
    s << "\n";
    for (const BaselineResult& b : r.baselines) {
        s << b.name << ": " << b.chosen << " (best mean PSNR on " << b.swept_on << " of";
        for (const auto& p : b.sweep)
            s << (&p == &b.sweep.front() ? " " : ", ") << p.setting << " " << fmt("%.2f", p.mean_psnr);
        s << ")" << (b.at_grid_edge ? " [at the edge of the grid]" : "") << "; " << b.method << "; "
          << fmt("%.1f", b.seconds) << " s\n";
    }
    if (r.time.images)
        s << r.model_label << ": " << fmt("%.1f", r.time.total_ms) << " ms for " << r.time.images << " images, "
          << fmt("%.2f", r.time.megapixels) << " MP ("
          << fmt("%.2f", r.time.total_ms > 0 ? r.time.megapixels / (r.time.total_ms / 1e3) : 0)
          << " MP/s; the first call, " << fmt("%.1f", r.time.first_ms) << " ms, includes warm-up)\n";
    for (const std::string& n : r.notes) s << "note: " << n << "\n";
    return s.str();
}

std::string json(const Report& r, const EvalOptions& o, const PlannedJobs& plan, const ModelFile& model,
                 const ModelChoice& choice, const Backend& backend) {
    auto scores = [&](const std::map<std::string, double>& m) {
        Json out = Json::object();
        for (const std::string& k : r.methods)
            if (m.count(k)) out[k] = m.at(k);
        return out;
    };
    Json doc = json_document();
    doc["clean"] = o.inputs;
    doc["shard"] = shard_json(plan);
    if (o.degraded_dir.empty())
        doc["degradation"] = degradation_json(o.degradation, o.seed);
    else
        doc["degradation"] = {{"degraded_dir", o.degraded_dir}};
    const double seconds = r.time.total_ms / 1e3;
    doc["model"] = {{"name", model.name},
                    {"path", model.path},
                    {"selected_by", choice.selected_by},
                    {"device", backend.name()},
                    {"device_description", backend.description()},
                    {"tta", o.tta},
                    {"jpeg_projection", r.jpeg_projection},
                    {"keep_gray", r.keep_gray},
                    {"time_ms", r.time.total_ms},
                    {"first_call_ms", r.time.first_ms},
                    {"images", r.time.images},
                    {"megapixels", r.time.megapixels},
                    {"megapixels_per_s", seconds > 0 ? r.time.megapixels / seconds : 0}};
    if (!choice.note.empty()) doc["model"]["note"] = choice.note;
    if (!o.degradation.mix.empty()) doc["degradation"]["mix"] = o.degradation.mix;  // each file's own draw
    doc["methods"] = r.methods;
    Json& baselines = doc["baselines"] = Json::array();
    for (const BaselineResult& b : r.baselines) {
        Json sweep = Json::array();
        for (const auto& p : b.sweep) sweep.push_back({{"setting", p.setting}, {"mean_psnr", p.mean_psnr}});
        baselines.push_back({{"name", b.name},
                             {"method", b.method},
                             {"chosen", b.chosen},
                             {"at_grid_edge", b.at_grid_edge},
                             {"swept_on", b.swept_on},
                             {"seconds", b.seconds},
                             {"sweep", std::move(sweep)}});
    }
    doc["notes"] = r.notes;
    Json& images = doc["images"] = Json::array();
    for (const Entry& e : r.entries) {
        Json image = {{"file", e.path}, {"name", e.name}};
        if (!e.error.empty()) {
            image["error"] = e.error;
        } else {
            image["width"] = e.clean.width;
            image["height"] = e.clean.height;
            image["channels"] = e.clean.channels;
            if (!e.drawn.empty()) image["degradation"] = e.drawn;
            if (e.jpeg_projected) image["jpeg_projected"] = true;
            if (e.kept_gray) image["kept_gray"] = true;
            image["psnr"] = scores(e.psnr);
            image["ssim"] = scores(e.ssim);
        }
        images.push_back(std::move(image));
    }
    doc["mean"] = {{"images", r.measured}, {"psnr", scores(r.mean_psnr)}, {"ssim", scores(r.mean_ssim)}};
    doc["failed"] = r.failed;
    return json_text(doc);
}

}  // namespace

int run_eval(const EvalOptions& o) {
    // Everything that can be refused is refused before any compute.
    o.degradation.validate();
    const bool given = !o.degraded_dir.empty();
    if (given && o.degradation.any())
        throw UsageError(
            "eval: --degraded " + o.degraded_dir +
            " gives the degraded images; --blur/--noise/--jpeg would degrade the clean ones instead: use one "
            "or the other");
    if (!given && !o.degradation.any())
        throw UsageError("eval: nothing to measure: give --noise, --jpeg and/or --blur, --mix, or --degraded DIR");
    std::error_code ec;
    if (given && !fs::is_directory(o.degraded_dir, ec))
        throw Error("--degraded " + o.degraded_dir + ": no such folder");
    std::vector<std::string> baseline_names = parse_baselines(o.baselines, o.degradation);
    Report r;
    const PlannedJobs plan = list_clean(o);
    for (const FileJob& job : plan.jobs) {
        Entry e;
        e.path = job.input;
        e.error = job.error;
        e.name = job.shard_key;  // its path below its folder input: what a degraded partner is matched by
        if (e.name.empty() || e.name == ".") e.name = job.input;
        r.entries.push_back(std::move(e));
    }
    std::string device_note;
    RunnerOptions settings;  // the restore command's defaults (precision auto: the model's validated one, or fp32)
    settings.device = o.device, settings.threads = o.threads, settings.tta = o.tta;
    require_one_device(settings.device, "eval");
    std::unique_ptr<Backend> backend = make_backend(settings, &device_note);
    // Without -m, the device's default model, as the restore command picks it.
    const ModelChoice choice = choose_model(o.model, backend->is_host_memory());
    ModelFile model = load_model_file(resolve_model(choice.name));
    // A model that takes a noise level or JPEG quality is given the
    // degradation's own (as the non-blind models of the literature are
    // measured); with none to give (a mix, given degraded images, another
    // degradation) it cannot be measured here.
    try {
        settings.extra_inputs = degradation_levels(model.name, model.extra_inputs, o.degradation, "eval");
    } catch (const Error& e) {  // the command line's degradation: a usage error
        std::string hint;       // eval degrades the photos itself: the option that gives the level
        if (o.degraded_dir.empty())
            for (const std::string& name : model.extra_inputs)
                hint += std::string(hint.empty() ? " (give " : " and ") +
                        (name == "noise_level" ? "--noise SIGMA" : "--jpeg Q");
        throw UsageError(e.what() + hint + (hint.empty() ? "" : ")"));
    }
    if (!o.quiet) {
        if (!device_note.empty()) std::cerr << "note: " << device_note << "\n";
        if (!choice.note.empty()) std::cerr << "note: " << choice.note << "\n";
        std::cerr << "model " << printable(model.name) << " (" << printable(model.path) << "), device "
                  << backend->name() << ": " << backend->description() << "\n";
    }
    ModelRunner runner(model, *backend, settings);
    const bool jpeg_projection = r.jpeg_projection = jpeg_projection_wanted(o.jpeg_projection, model.task);
    r.keep_gray = keep_gray_wanted(o.keep_gray, model.task);

    if (!o.quiet)
        if (const std::string shard = shard_note(plan); !shard.empty()) std::cerr << shard << "\n";

    // Read and degrade every image, in parallel (independent per file; the
    // noise depends only on the seed and the file name).
    const std::vector<FileResult> read = run_each_file(
        plan.jobs, true,
        [&](const FileJob& job, FileResult&) { prepare(r.entries[&job - plan.jobs.data()], o, jpeg_projection); },
        nullptr);
    for (size_t i = 0; i < read.size(); ++i)
        if (read[i].status == FileResult::Status::Failed) r.entries[i].error = read[i].message;

    // The model, one image per call (so every image's time is its own), on
    // the backend the main command would use.
    for (Entry& e : r.entries) {
        if (!e.error.empty()) continue;
        try {
            const int channels = model.channels;
            const int items = items_per_image(e.degraded, channels);
            const Shape shape{items, channels, e.degraded.height, e.degraded.width};
            std::vector<float> in(shape.count()), out(shape.count());
            image_to_planes(e.degraded, channels, in.data());
            auto start = std::chrono::steady_clock::now();
            runner.run(f32_nchw(in.data(), shape), f32_nchw(out.data(), shape), nullptr);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            if (r.time.images == 0) r.time.first_ms = ms;
            r.time.total_ms += ms, ++r.time.images;
            r.time.megapixels += double(e.degraded.width) * e.degraded.height / 1e6;
            Image restored = planes_to_image(out.data(), channels, e.degraded, 8);
            if (r.keep_gray && is_neutral_rgb(e.degraded)) {  // as restoring does (neutral_gray.h), before projecting
                make_neutral_rgb(restored);
                e.kept_gray = true;
            }
            if (!e.jpeg.empty()) {
                try {
                    project_onto_jpeg(restored, read_jpeg_coefficients(e.jpeg_name, e.jpeg));
                    e.jpeg_projected = true;
                } catch (const Error& ex) {
                    std::string why = ex.what();  // the reader's errors name the file already
                    if (why.rfind(e.jpeg_name, 0) != 0) why = e.jpeg_name + ": " + why;
                    r.notes.push_back(why + " (the model's output was not projected onto it)");
                }
                e.jpeg = {};
            }
            e.psnr["input"] = psnr_8bit(e.clean, e.degraded);
            e.ssim["input"] = ssim_8bit(e.clean, e.degraded);
            e.psnr["model"] = psnr_8bit(e.clean, restored);
            e.ssim["model"] = ssim_8bit(e.clean, restored);
        } catch (const std::exception& ex) {
            e.error = e.path + ": " + ex.what();
        }
    }

    // Baselines on the images every column can be measured on.
    std::vector<Image> clean, degraded;
    std::vector<Entry*> measured;
    for (Entry& e : r.entries)
        if (e.error.empty()) {
            clean.push_back(e.clean), degraded.push_back(e.degraded), measured.push_back(&e);
        } else {
            ++r.failed;
            std::cerr << "imrestore: " << printable(e.error) << "\n";
        }
    r.measured = int(measured.size());
    r.methods = {"input", "model"};
    r.model_label = model.name;
    if (!baseline_names.empty() && !baselines_available()) {
        r.notes.push_back("no classical baselines: " + baselines_unavailable_reason());
        baseline_names.clear();
    }
    for (const std::string& name : baseline_names) {
        if (measured.empty()) break;
        if (!o.quiet && !o.json) std::cerr << "baseline " << name << " ...\n";
        try {
            BaselineResult b = run_baseline(name, clean, degraded, given ? Degradation{} : o.degradation);
            for (size_t i = 0; i < measured.size(); ++i) {
                measured[i]->psnr[name] = b.psnr[i];
                measured[i]->ssim[name] = b.ssim[i];
            }
            r.methods.push_back(name);
            r.baselines.push_back(std::move(b));
        } catch (const Error& ex) {
            r.notes.push_back(std::string("baseline failed: ") + ex.what());
        }
    }
    if (!r.baselines.empty())
        r.notes.push_back(
            "each baseline's setting is the best for these images (chosen on the test set itself, which favours "
            "the baselines)");
    if (const auto n =
            std::count_if(measured.begin(), measured.end(), [](const Entry* e) { return e->jpeg_projected; }))
        r.notes.push_back(std::string("the model's output for ") + (n == r.measured ? "every image" : "each JPEG") +
                          " projected onto its JPEG's quantization cells, as restoring does (--jpeg-projection off: "
                          "the model's output alone)");
    if (!given && o.degradation.jpeg > 0 && !jpeg_is_libjpeg())
        r.notes.push_back(
            "JPEG by stb (this build has no OpenCV), not libjpeg: numbers differ slightly from training's");

    compute_means(r);
    std::ostringstream title;
    title << "eval: " << (given ? "degraded images from " + o.degraded_dir : o.degradation.describe())
          << (!given && o.degradation.seeded() ? " (seed " + std::to_string(o.seed) + ")" : "") << ", " << r.measured
          << " image" << (r.measured == 1 ? "" : "s") << ", model " << model.name << " on " << backend->name()
          << "; PSNR in dB and SSIM on 8-bit RGB";
    r.title = title.str();
    std::cout << (o.json ? json(r, o, plan, model, choice, *backend) : table(r)) << std::flush;
    return r.failed ? kExitSomeFailed : kExitOk;
}

}  // namespace imr
