// The file loop's run step for commands whose files are independent
// (degrade; eval's reading and degrading): each job on its own, files in
// parallel. Restore batches images of one size for the model and runs its
// own scheduler (pipeline/pipeline.h) on the same plan.
#pragma once

#include <functional>
#include <vector>

#include "jobs/file_job.h"
#include "jobs/file_result.h"

namespace imr {

// The work on one job that planning left without error (`job` is the
// element of the vector given to run_each_file, so &job - jobs.data() is
// its index): fills `result`
// (dimensions, warnings) and returns normally when done; throws
// (imr::Error, bad_alloc) when the file fails.
using FileWork = std::function<void(const FileJob& job, FileResult& result)>;

// Called once per finished job, one call at a time: (done, total, result).
using FileDone = std::function<void(size_t, size_t, const FileResult&)>;

// Runs `work` on every job, in parallel, and returns the results in the
// jobs' order. A job with a planning error fails with it; without `force`, a
// job whose output exists is skipped ("OUT: exists (--force replaces it)").
// A failure's message names the file once (the input, unless it is about the
// output).
std::vector<FileResult> run_each_file(const std::vector<FileJob>& jobs, bool force, const FileWork& work,
                                      const FileDone& done);

}  // namespace imr
