// Planning, fourth step: the outputs checked against each other and the
// inputs, before any image is read. Never overwrite an input (known by path
// and by file identity: an output reached through a bind mount or a hard
// link of an input is that input), never let two inputs write one output
// (the same input given twice, a.png ./a.png, is restored once), keep every
// output inside -o's folder (a symbolic link in the tree must not lead a
// write elsewhere), and refuse an output name longer than file systems
// allow (255 bytes). Each refusal is that job's error; the run goes on.
#pragma once

#include <vector>

#include "jobs/file_job.h"
#include "jobs/job_request.h"

namespace imr {

std::vector<FileJob> check_outputs(std::vector<FileJob> jobs, const JobRequest& request, const OutputLayout& layout);

}  // namespace imr
