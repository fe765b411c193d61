#include "jobs/plan_jobs.h"

#include "jobs/check_outputs.h"
#include "jobs/name_outputs.h"
#include "jobs/output_layout.h"

namespace imr {

PlannedJobs plan_jobs(const JobRequest& request, const Shard& shard) {
    const OutputLayout layout = check_request(request);
    std::vector<FileJob> jobs =
        check_outputs(name_outputs(enumerate_inputs(request, layout), request, layout), request, layout);
    PlannedJobs plan;
    plan.listed = jobs.size();
    plan.jobs = select_shard(std::move(jobs), shard);
    plan.shard = shard;
    return plan;
}

}  // namespace imr
