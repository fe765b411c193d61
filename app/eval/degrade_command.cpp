#include "eval/degrade_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "error.h"
#include "eval/noise_estimate.h"
#include "eval/photo_mix.h"
#include "image/formats.h"
#include "image/jpeg_quality.h"
#include "image/metadata.h"
#include "jobs/file_report.h"
#include "jobs/plan_jobs.h"
#include "jobs/run_each_file.h"
#include "shard_options.h"
#include "usage_error.h"
#include "util/atomic_file.h"

namespace imr {

namespace fs = std::filesystem;

void add_degradation_options(CLI::App* cmd, Degradation& d, uint64_t& seed) {
    cmd->add_option("--blur", d.blur, "Gaussian blur sigma in pixels (radius ceil(3 sigma))")
        ->check(CLI::Range(0.0, 50.0))
        ->type_name("SIGMA");
    cmd->add_option("--noise", d.noise, "Gaussian noise sigma on the 0-255 scale")
        ->check(CLI::Range(0.0, 255.0))
        ->type_name("SIGMA");
    cmd->add_option("--jpeg", d.jpeg, "JPEG quality of a round trip (4:2:0 unless --subsampling 444)")
        ->check(CLI::Range(1, 100))
        ->type_name("Q");
    cmd->add_option("--subsampling", d.subsampling,
                    "Chroma subsampling of the JPEG round trip: 420 (training's, libjpeg's default) or 444")
        ->check(CLI::IsMember({420, 444}))
        ->capture_default_str();
    cmd->add_option("--mix", d.mix,
                    "A realistic mix instead of --blur/--noise/--jpeg, drawn per file from --seed and its name: "
                    "photo (camera noise, blur, resampling, JPEG; weights/README.md)")
        ->check(CLI::IsMember(degradation_mix_names()))
        ->type_name("NAME");
    cmd->add_option("--seed", seed, "Noise seed (default 0); a file's noise depends only on it and the file's name")
        ->type_name("N");
}

CLI::App* add_degrade_command(CLI::App& app, DegradeOptions& o) {
    CLI::App* cmd = app.add_subcommand(
        "degrade", "Write degraded copies (blur, then noise, then JPEG; the training definitions) of images, seeded");
    cmd->add_option("inputs", o.inputs, "Image files and/or folders")->required()->type_name("INPUT...");
    cmd->add_option("-o,--output", o.output, "Output file (one input) or folder")->required()->type_name("PATH");
    add_degradation_options(cmd, o.degradation, o.seed);
    cmd->add_option("--format", o.format, "Format of outputs named after their input")->capture_default_str();
    cmd->add_flag("-r,--recursive", o.recursive, "Descend into subfolders of folder inputs");
    cmd->add_flag("-f,--force", o.force, "Overwrite outputs that already exist");
    add_shard_options(cmd, o.shard);
    cmd->add_flag("--estimate-noise", o.estimate_noise,
                  "Also estimate each written image's noise sigma, as restore does for models that take a noise "
                  "level (to measure the estimator: see weights/README.md)");
    cmd->add_flag("--estimate-jpeg-quality", o.estimate_jpeg_quality,
                  "Also estimate each written image's JPEG quality from its pixels, as restore does for models "
                  "that take a JPEG quality and an input that is no JPEG (to measure the estimator: "
                  "scripts/jpeg_quality_estimate_accuracy.sh)");
    cmd->add_flag("--json", o.json, "Print a machine-readable report on stdout (nothing else goes there)");
    cmd->add_flag("-q,--quiet", o.quiet, "Print only errors");
    cmd->footer(
        "Examples:\n"
        "  imrestore degrade photos/ -o noisy/ --noise 25          noisy/*.png\n"
        "  imrestore degrade a.jpg -o a_q20.png --jpeg 20          a JPEG round trip at quality 20, kept as PNG\n"
        "  imrestore degrade a.png -o a_q90.jpg --jpeg 90          the round trip's own JPEG file (not encoded again)\n"
        "  imrestore degrade photos/ -o soft/ --blur 1.5 --noise 2 --seed 7\n"
        "  imrestore degrade photos/ -o mixed/ --mix photo        each file its own draw of the photo mix");
    return cmd;
}

Json degradation_json(const Degradation& d, uint64_t seed) {
    return {{"blur", d.blur}, {"noise", d.noise},
            {"jpeg", d.jpeg}, {"subsampling", d.jpeg > 0 ? std::to_string(d.subsampling) : "none"},
            {"seed", seed},   {"jpeg_codec", jpeg_is_libjpeg() ? "libjpeg" : "stb"}};
}

int run_degrade(const DegradeOptions& o) {
    const Degradation& d = o.degradation;
    d.validate();
    if (!d.any() && !o.estimate_noise && !o.estimate_jpeg_quality)
        throw UsageError(
            "degrade: nothing to do: give --blur, --noise and/or --jpeg, or --mix (or --estimate-noise, "
            "--estimate-jpeg-quality)");
    std::string format = o.format;
    if (!format.empty() && format[0] == '.') format.erase(0, 1);
    JobRequest request;
    request.inputs = o.inputs, request.output = o.output, request.recursive = o.recursive, request.format = format;
    const PlannedJobs plan = plan_jobs(request, shard_from_options(o.shard));
    const bool chatty = !o.quiet && !o.json;
    if (chatty) {
        std::cerr << "degrade: " << d.describe() << (d.seeded() ? " (seed " + std::to_string(o.seed) + ")" : "")
                  << "\n";
        if (const std::string shard = shard_note(plan); !shard.empty()) std::cerr << shard << "\n";
        if (d.jpeg > 0 && !jpeg_is_libjpeg())
            std::cerr << "note: this build has no OpenCV, so the JPEG round trip uses stb's encoder and decoder, "
                         "not libjpeg: the same quality tables, but other rounding (and 4:4:4 above quality 90), "
                         "so the results differ slightly from training's and an OpenCV build's\n";
    }
    auto degrade_one = [&](const FileJob& job, FileResult& result) {
        Image image = read_image(job.input);
        if (image.color_channels() != 1 && image.color_channels() != 3)
            throw Error(job.input + ": " + std::to_string(image.channels) + " channels; expected gray or RGB");
        // A JPEG output of a degradation that ends in the JPEG round trip is
        // that JPEG's own bytes, with the photo's metadata as write_image
        // would embed it: encoded again it would be a JPEG of a JPEG, other
        // bytes than eval restores and projects onto, and further from the
        // photo than the quality asked. An image with alpha goes to
        // write_image, which refuses it for a JPEG.
        std::vector<uint8_t> jpeg_file;
        Image out = degrade(image, d, image_noise_seed(o.seed, job.input), &jpeg_file);
        const imageio::FormatInfo* written = imageio::format_from_extension(imageio::lower_extension(job.output), true);
        fs::path parent = fs::path(job.output).parent_path();
        std::error_code ec;
        if (!parent.empty()) fs::create_directories(parent, ec);
        if (ec) throw Error(job.output + ": cannot create folder " + parent.string() + ": " + ec.message());
        if (!jpeg_file.empty() && !out.has_alpha() && written && written->format == imageio::Format::Jpeg) {
            imageio::Dropped dropped;
            if (!out.metadata.empty())
                imageio::embed_metadata(imageio::Format::Jpeg, jpeg_file, out.metadata, out.color_channels(), dropped);
            for (const std::string& why : dropped) result.warnings.push_back(job.output + ": " + why);
            write_atomically(job.output, jpeg_file, true);
        } else {
            write_image(job.output, out);
        }
        if (o.estimate_noise) {
            const double sigma = estimate_noise_sigma(out);
            result.levels.push_back({"noise_level", sigma, "estimated", sigma});
        }
        if (o.estimate_jpeg_quality) {
            const std::optional<JpegQuality> q = estimate_jpeg_quality(out);
            if (!q) throw Error(job.input + ": under 8x8 pixels: no JPEG quality to estimate");
            result.levels.push_back({"jpeg_quality", double(q->quality), "estimated", double(q->quality)});
        }
        result.width = out.width, result.height = out.height, result.channels = out.channels;
        result.bit_depth = out.bit_depth;
    };
    const std::vector<FileResult> results =
        run_each_file(plan.jobs, o.force, degrade_one, [&](size_t, size_t, const FileResult& f) {
            const FileLines lines = file_lines(f, o.quiet);
            std::cerr << lines.log;
            if (chatty) std::cout << lines.done << std::flush;
        });
    const FileCounts n = count_files(results);
    if (o.json) {
        Json doc = json_document();
        doc["degradation"] = degradation_json(d, o.seed);
        doc["shard"] = shard_json(plan);
        Json& files = doc["files"] = Json::array();
        for (const FileResult& f : results) files.push_back(file_json(f));
        doc["summary"] = {{"degraded", n.done}, {"skipped", n.skipped}, {"failed", n.failed}};
        std::cout << json_text(doc);
    }
    if (chatty) std::fprintf(stderr, "%d degraded, %d skipped, %d failed\n", n.done, n.skipped, n.failed);
    return n.failed ? 1 : 0;
}

}  // namespace imr
