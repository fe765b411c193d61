// Which output each input gets: the output-path policy of the tool (folders
// mirrored, derived names, formats), decided before any image is read, so
// that what can never work fails at once. The scheduler (pipeline.h) only
// runs the jobs.
#pragma once

#include <string>
#include <vector>

#include "image/image_io.h"

namespace imr {

// "-": standard input as an input, standard output as the output.
constexpr const char* kStdio = "-";

struct FileJob {
    std::string input;
    std::string output;
    std::string error;  // set when planning already failed (missing input, would overwrite an input)
};

// Maps inputs to outputs. "-" alone reads one image from standard input (an
// output file or "-" needed); -o - writes the one input's result to standard
// output in the --format given.
//   output empty: each file F.ext -> F<suffix>.ext beside it; a folder D -> D<suffix>/
//   (suffix ".restored" by default; files already named *<suffix>.ext are not inputs).
//   one input file and output not an existing folder nor ending in '/': output is the file.
//   otherwise output is a folder: files go to output/<name>, a folder's files to
//   output/<path relative to that folder> (the tree mirrors the input; -r descends).
// Formats that cannot be written (GIF, PSD, ...) get a .png output;
// `format` (an extension such as "png", or empty) sets every derived output's
// format. Throws imr::Error for what can never work (several inputs into one
// file, an output format this build cannot write, folders of the same name,
// a suffix that is empty or holds a '/'). An output name longer than the file
// system allows (255 bytes) is that job's error, found before any work.
// The same input given twice is restored once.
std::vector<FileJob> plan_jobs(const std::vector<std::string>& inputs, const std::string& output, bool recursive,
                               Codec codec, const std::string& format = "", const std::string& suffix = ".restored");

// Subfolders of `folder` that a run without -r leaves out (not hidden, not
// the folder's own output folder).
int subfolders_skipped(const std::string& folder, const std::string& suffix = ".restored");

}  // namespace imr
