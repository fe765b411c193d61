// Planning, third step: each input's output path, and the key its shard is
// chosen by (FileJob::shard_key).
//   -o -: the one input to standard output; "-": standard input to -o FILE.
//   no -o: each file F.ext -> F<suffix>.ext beside it; a folder D -> D<suffix>/
//   one input file and -o not an existing folder nor ending in '/': -o is the file.
//   otherwise -o is a folder: files go to OUT/<name>, a folder's files to
//   OUT/<path relative to that folder> (the tree mirrors the input), each
//   folder in OUT/<folder name>/ when several folders are given.
// Formats that cannot be written (GIF, PSD, ...) get a .png output; --format
// sets every derived output's format. Without outputs (eval) the job's
// output is empty and its key the input's path below its folder input.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "jobs/enumerate_inputs.h"
#include "jobs/file_job.h"
#include "jobs/job_request.h"

namespace imr {

// Where the outputs of folder input `folder` (absolute) go, `raw` as the
// user named it.
std::filesystem::path folder_destination(const JobRequest& request, const OutputLayout& layout,
                                         const std::filesystem::path& folder, const std::string& raw);

// The job of one input (its error, if it has one, becomes the job's).
FileJob name_output(InputFile file, const std::vector<FolderInput>& folders, const JobRequest& request,
                    const OutputLayout& layout);

}  // namespace imr
