// Planning, second step: the input files, one at a time. Folders are
// listed one folder at a time as the walk reaches them (sorted, hidden files
// and earlier outputs left out; -r descends), so the first file of a folder
// of millions comes after one folder's listing, not the whole tree's; a
// missing input, a folder that cannot be listed or one that holds no image
// becomes an error of its own, never skipped silently.
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
    std::filesystem::path skip;         // weakly canonical destination: a subfolder -r does not descend into
};

struct InputFile {
    std::string shown;               // as the user named it; a folder's file: FOLDER/relative
    int folder = -1;                 // its folder input (InputWalk::folders), -1 for a file input
    std::filesystem::path relative;  // its path below that folder
    std::string error;               // a missing input, a folder that cannot be listed or has no images
};

// Whether a folder's walk lists a file of this name (not hidden, an image
// extension, not an earlier output NAME<suffix>.EXT).
bool listed_name(const std::string& name, const std::string& suffix);

// The inputs in the order of the command line; each folder's files depth
// first, a folder's files and subfolders together in name order (the order
// of sorting the folder's whole list by path). One folder is held at a
// time (its sorted names, and those of the folders above it still to be
// walked), never the tree. A folder that cannot be listed is an error at
// its place in that order.
class InputWalk {
public:
    InputWalk(const JobRequest& request, const OutputLayout& layout);
    // The next input; false when every input has been given.
    bool next(InputFile& file);
    // Every folder input of the command line, known before the walk
    // (InputFile::folder indexes them).
    const std::vector<FolderInput>& folders() const { return folders_; }
    // Directories read so far: how far the walk has gone (for the tests).
    size_t folders_listed() const { return folders_listed_; }

private:
    struct Entry {
        std::string name;
        bool folder;
    };
    struct Frame {
        std::filesystem::path relative;  // below the folder input
        std::vector<Entry> entries;      // sorted by name
        size_t next = 0;
    };
    // Lists folder `relative` of the current folder input onto the stack;
    // false (and `error` set) when it cannot be listed.
    bool push_folder(const std::filesystem::path& relative, InputFile& error);

    const JobRequest& request_;
    std::vector<FolderInput> folders_;
    std::vector<int> folder_of_input_;  // per command-line input: its folder input, or -1
    bool one_image_ = false;            // standard input or output: one image, not looked for
    size_t next_input_ = 0;
    int current_ = -1;          // the folder input being walked
    std::vector<Frame> stack_;  // the folder being walked and those above it
    bool gave_any_ = false;     // the current folder input has given a file or an error
    size_t folders_listed_ = 0;
};

// Every input at once (InputWalk drained).
struct InputListing {
    std::vector<FolderInput> folders;
    std::vector<InputFile> files;
};
InputListing enumerate_inputs(const JobRequest& request, const OutputLayout& layout);

// Subfolders of `folder` that a run without -r leaves out (not hidden, not
// the folder's own output folder).
int subfolders_skipped(const std::string& folder, const std::string& suffix = ".restored");

}  // namespace imr
