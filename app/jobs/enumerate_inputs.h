// Planning, second step: the input files. Folders are listed (sorted,
// hidden files and earlier outputs left out; -r descends), missing inputs
// and folders that cannot be listed or hold no image become errors of their
// own, never skipped silently.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "jobs/job_request.h"

namespace imr {

struct FolderInput {
    std::string raw;                    // as the user named it
    std::filesystem::path path;         // absolute, normal
    std::filesystem::path destination;  // where its files' outputs go (name_outputs.h folder_destination)
};

struct InputFile {
    std::string shown;               // as the user named it; a folder's file: FOLDER/relative
    int folder = -1;                 // its folder input (InputListing::folders), -1 for a file input
    std::filesystem::path relative;  // its path below that folder
    std::string error;               // a missing input, a folder that cannot be listed or has no images
};

struct InputListing {
    std::vector<FolderInput> folders;
    std::vector<InputFile> files;  // in the order of the command line, each folder's sorted
};

InputListing enumerate_inputs(const JobRequest& request, const OutputLayout& layout);

// Subfolders of `folder` that a run without -r leaves out (not hidden, not
// the folder's own output folder).
int subfolders_skipped(const std::string& folder, const std::string& suffix = ".restored");

}  // namespace imr
