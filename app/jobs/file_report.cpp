#include "jobs/file_report.h"

#include <cstdio>

#include "util/printable.h"

namespace imr {

const char* status_name(FileResult::Status s) {
    switch (s) {
        case FileResult::Status::Restored:
            return "restored";
        case FileResult::Status::Skipped:
            return "skipped";
        case FileResult::Status::Failed:
            return "failed";
        case FileResult::Status::NotRun:
            return "not run";
    }
    return "?";
}

FileCounts count_files(const std::vector<FileResult>& results) {
    FileCounts c;
    for (const FileResult& f : results) switch (f.status) {
            case FileResult::Status::Restored:
                ++c.done;
                break;
            case FileResult::Status::Skipped:
                ++c.skipped;
                break;
            case FileResult::Status::Failed:
                ++c.failed;
                break;
            case FileResult::Status::NotRun:
                ++c.not_run;
                break;
        }
    return c;
}

FileLines file_lines(const FileResult& f, bool quiet) {
    FileLines lines;
    if (!quiet)
        for (const std::string& w : f.warnings) lines.log += "warning: " + printable(w) + "\n";
    if (f.status == FileResult::Status::Failed)
        lines.log += "imrestore: " + printable(f.message) + "\n";
    else if (f.status == FileResult::Status::Skipped && !quiet)
        lines.log += "skipped: " + printable(f.message) + "\n";
    else if (f.status == FileResult::Status::Restored) {
        lines.done = printable(f.input) + " -> " + printable(f.output);
        for (const FileResult::Level& l : f.levels) lines.done += " (" + level_text(l) + ")";
        lines.done += "\n";
    }
    return lines;
}

Json file_json(const FileResult& f) {
    Json j = {{"input", f.input},       {"output", f.output},       {"status", status_name(f.status)},
              {"message", f.message},   {"width", f.width},         {"height", f.height},
              {"channels", f.channels}, {"bit_depth", f.bit_depth}, {"fp32_rerun", f.fp32_rerun},
              {"warnings", f.warnings}};
    if (!f.precision.empty()) j["precision"] = f.precision;
    if (f.jpeg_projected) j["jpeg_projected"] = true;
    if (f.kept_gray) j["kept_gray"] = true;
    if (!f.levels.empty()) {
        Json& levels = j["levels"] = Json::array();
        for (const FileResult::Level& l : f.levels)
            levels.push_back({{"name", l.name}, {"value", l.value}, {"source", l.source}, {"used", l.used}});
    }
    return j;
}

std::string level_text(const FileResult::Level& l) {
    char text[160];
    const bool noise = l.name == "noise_level";
    std::snprintf(text, sizeof text, "%s %.*f (%s)", noise ? "noise sigma" : "JPEG quality", noise ? 1 : 0, l.value,
                  l.source.c_str());
    std::string s = text;
    if (l.used != l.value) {
        std::snprintf(text, sizeof text, ", %.*f with the strength", noise ? 1 : 0, l.used);
        s += text;
    }
    return s;
}

Json shard_json(const Shard& shard, size_t files, size_t listed, bool counted) {
    Json j = {{"index", shard.index}, {"count", shard.count}, {"source", shard.source}, {"hash", "fnv1a-64"}};
    if (counted) j["files"] = files, j["listed"] = listed;
    return j;
}

Json shard_json(const PlannedJobs& plan) {
    return shard_json(plan.shard, plan.jobs.size(), plan.listed);
}

std::string shard_note(const Shard& shard, size_t files, size_t listed, bool counted) {
    if (!shard.sharded()) return "";
    const std::string note =
        "shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + " (" + shard.source + ")";
    return counted ? note + ": " + std::to_string(files) + " of " + std::to_string(listed) + " files" : note;
}

std::string shard_note(const PlannedJobs& plan) {
    return shard_note(plan.shard, plan.jobs.size(), plan.listed);
}

}  // namespace imr
