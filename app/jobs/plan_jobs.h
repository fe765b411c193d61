// The file loop's plan, shared by restore, degrade and eval: which output
// each input gets (the output-path policy of the tool: folders mirrored,
// derived names, formats) and which of them this process runs, decided
// before an image is read, so that what can never work fails at once.
// Its steps, one file at a time as the listing streams (JobStream):
//   check_request     output_layout.h     the request's shape (usage errors, up front)
//   InputWalk         enumerate_inputs.h  files and folders listed, one folder at a time
//   name_output       name_outputs.h      each input's output and shard key
//   OutputChecks      check_outputs.h     no input overwritten, no output twice (per folder)
//   in_shard          shard.h             this process's share (--shard K/N)
// The commands then run the jobs (pipeline/pipeline.h for restore, as they
// stream; run_each_file.h for degrade and eval, on the whole plan) and
// report them (file_report.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jobs/check_outputs.h"
#include "jobs/enumerate_inputs.h"
#include "jobs/file_job.h"
#include "jobs/job_request.h"
#include "jobs/shard.h"

namespace imr {

// The plan as a stream: this shard's jobs one at a time, in listing order,
// each checked before it is given; nothing is kept per job given (a folder
// of millions costs one folder's listing).
class JobStream {
public:
    // Throws UsageError (or imr::Error) for what can never work: several
    // inputs into one file, an output format this build cannot write,
    // folders of the same name, a suffix that is empty or holds a '/'.
    JobStream(const JobRequest& request, const Shard& shard = {});
    // The next job of this shard; false when the listing is over. What
    // fails one file (a missing input, an output that would overwrite an
    // input, an output name longer than the file system allows) is that
    // job's error.
    bool next(FileJob& job);
    size_t listed() const { return listed_; }      // jobs of every shard so far
    size_t selected() const { return selected_; }  // this shard's so far (given by next)
    bool finished() const { return finished_; }    // listed() and selected() are the totals
    const Shard& shard() const { return shard_; }
    const InputWalk& walk() const { return walk_; }

private:
    JobRequest request_;
    OutputLayout layout_;
    Shard shard_;
    InputWalk walk_;
    OutputChecks checks_;
    size_t listed_ = 0, selected_ = 0;
    bool finished_ = false;
};

struct PlannedJobs {
    std::vector<FileJob> jobs;  // this shard's, in the order listed
    size_t listed = 0;          // jobs of every shard
    Shard shard;
};

// The whole plan at once (JobStream drained): for commands that need every
// file's result together (degrade's and eval's reports).
PlannedJobs plan_jobs(const JobRequest& request, const Shard& shard = {});

}  // namespace imr
