// Planning, first step: the request's shape. Everything that can never work
// (several inputs into one file, an output format this build cannot write,
// folders of the same name, a bad suffix, standard input with others) is a
// UsageError here, before any file is listed.
#pragma once

#include "jobs/job_request.h"

namespace imr {

OutputLayout check_request(const JobRequest& request);

// check_writable_format for an output the command line names, as a usage
// error. `option` ("--format xyz") stands for `path` in the message when the
// path was made up from it.
void check_output_format(const std::string& path, Codec codec, const std::string& option = "");

}  // namespace imr
