#include "jobs/plan_jobs.h"

#include "jobs/name_outputs.h"
#include "jobs/output_layout.h"

namespace imr {

JobStream::JobStream(const JobRequest& request, const Shard& shard)
    : request_(request),
      layout_(check_request(request_)),
      shard_(shard),
      walk_(request_, layout_),
      checks_(request_, layout_, walk_.folders()) {}

bool JobStream::next(FileJob& job) {
    for (InputFile file; !finished_;) {
        if (!walk_.next(file)) {
            finished_ = true;
            break;
        }
        job = name_output(file, walk_.folders(), request_, layout_);
        if (!checks_.check(job, file)) continue;  // the same input again
        ++listed_;
        if (!in_shard(job, shard_)) continue;
        ++selected_;
        return true;
    }
    return false;
}

PlannedJobs plan_jobs(const JobRequest& request, const Shard& shard) {
    JobStream stream(request, shard);
    PlannedJobs plan;
    for (FileJob job; stream.next(job);) plan.jobs.push_back(std::move(job));
    plan.listed = stream.listed();
    plan.shard = shard;
    return plan;
}

}  // namespace imr
