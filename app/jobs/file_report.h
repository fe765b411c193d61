// The file loop's report step, the same for every command: each file's
// result as a line on the terminal and as JSON (report/json_document.h),
// the counts, and which shard of how many files this process ran.
#pragma once

#include <string>
#include <vector>

#include "jobs/file_result.h"
#include "jobs/plan_jobs.h"
#include "report/json_document.h"

namespace imr {

// "restored", "skipped", "failed", "not run".
const char* status_name(FileResult::Status s);

struct FileCounts {
    int done = 0, skipped = 0, failed = 0, not_run = 0;
};
FileCounts count_files(const std::vector<FileResult>& results);

// What a finished file prints on the terminal: `log` for stderr (each
// warning, "imrestore: ERROR", and unless `quiet` "skipped: WHY"; warnings
// only unless `quiet`) and `done` ("IN -> OUT", and each level as
// level_text says it in parentheses, for stdout) when it was
// written; names escaped (util/printable.h), each line ending in '\n'.
struct FileLines {
    std::string log, done;
};
FileLines file_lines(const FileResult& f, bool quiet);

// {"input", "output", "status", "message", "width", "height", "channels",
// "bit_depth", "fp32_rerun", "warnings"}, "precision" when restored (what
// the model computed it in), and "levels" ([{"name", "value", "source",
// "used"}]) when it has levels: an element of a report's "files".
Json file_json(const FileResult& f);

// "noise sigma 12.3 (estimated)", "JPEG quality 40 (jpeg tables), 20 with
// the strength": a level for the terminal.
std::string level_text(const FileResult::Level& l);

// {"index", "count", "source", "hash", "files", "listed"}: this process's
// shard (index 0, count 1 when not sharded), how many files it ran of how
// many the plan listed, and the hash that split them ("fnv1a-64"). Without
// the counts (`counted` false): {"index", "count", "source", "hash"}, what
// is known before the listing is over (restore --json-lines' start record).
Json shard_json(const Shard& shard, size_t files, size_t listed, bool counted = true);
Json shard_json(const PlannedJobs& plan);

// "shard 1/4 (SLURM_ARRAY_TASK_ID): 25 of 100 files", for the terminal;
// empty when the run is not sharded. Without the counts (`counted` false):
// "shard 1/4 (SLURM_ARRAY_TASK_ID)".
std::string shard_note(const Shard& shard, size_t files, size_t listed, bool counted = true);
std::string shard_note(const PlannedJobs& plan);

}  // namespace imr
