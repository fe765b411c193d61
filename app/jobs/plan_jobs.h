// The file loop's plan, shared by restore, degrade and eval: which output
// each input gets (the output-path policy of the tool: folders mirrored,
// derived names, formats) and which of them this process runs, decided
// before any image is read, so that what can never work fails at once.
// Its steps, one file each:
//   check_request     output_layout.h     the request's shape (usage errors)
//   enumerate_inputs  enumerate_inputs.h  files and folders listed
//   name_outputs      name_outputs.h      each input's output and shard key
//   check_outputs     check_outputs.h     no input overwritten, no output twice
//   select_shard      shard.h             this process's share (--shard K/N)
// The commands then run the jobs (pipeline/pipeline.h for restore,
// run_each_file.h for degrade and eval) and report them (file_report.h).
#pragma once

#include <string>
#include <vector>

#include "jobs/enumerate_inputs.h"
#include "jobs/file_job.h"
#include "jobs/job_request.h"
#include "jobs/shard.h"

namespace imr {

struct PlannedJobs {
    std::vector<FileJob> jobs;  // this shard's, in the order listed
    size_t listed = 0;          // jobs of every shard
    Shard shard;
};

// Throws UsageError (or imr::Error) for what can never work: several inputs
// into one file, an output format this build cannot write, folders of the
// same name, a suffix that is empty or holds a '/'. What fails one file (a
// missing input, an output that would overwrite an input, an output name
// longer than the file system allows) is that job's error.
PlannedJobs plan_jobs(const JobRequest& request, const Shard& shard = {});

}  // namespace imr
