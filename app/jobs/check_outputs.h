// Planning, fourth step: the outputs checked against each other and the
// inputs, before any image is read, one job at a time as the listing
// streams. Never overwrite an input (known by path and by file identity: an
// output reached through a bind mount or a hard link of an input is that
// input), never let two inputs write one output (the same input given
// twice, a.png ./a.png, is restored once), keep every output inside -o's
// folder (a symbolic link in the tree must not lead a write elsewhere), and
// refuse an output name longer than file systems allow (255 bytes). Each
// refusal is that job's error; the run goes on.
//
// Nothing here holds the whole list (a folder of millions of files):
//  - an output is an input only if it exists; whether an existing file is
//    an input is decided from the file itself: a command-line input (path or
//    device and inode), or a file that a folder input's walk lists (below
//    that folder by its real path or by a folder's device and inode, as a
//    bind mount shows it; a listed name, not hidden nor an earlier output).
//    A hard link of an input is caught when that input is a command-line
//    file or lies in the same folder as the input being written for; one in
//    another folder is replaced by --force as a new file (atomic_file.h
//    renames over the name), which leaves the input's bytes as they were.
//  - two inputs write one output only from one input folder: a folder
//    input's files go to its destination mirrored (name_outputs.h), so the
//    files of input folder D/R go to the output folder DEST/R and nowhere
//    else, and folder inputs with one destination are refused up front
//    (output_layout.h) or are the same folder given twice (walked once). So
//    the outputs claimed are kept only for the folders on the walk's path
//    (the folder being listed and those above it, whose outputs could meet
//    through a symbolic link inside the output tree), plus the outputs of the
//    command-line files, which any folder's file may also write. The limit:
//    two output folders made one by a symbolic link planted inside the
//    output tree (out/a -> out/b) are checked against each other only while
//    both are on the walk's path; otherwise the later file finds the earlier
//    one's output existing and is skipped (with --force it replaces it).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "jobs/enumerate_inputs.h"
#include "jobs/file_job.h"
#include "jobs/job_request.h"

namespace imr {

class OutputChecks {
public:
    OutputChecks(const JobRequest& request, const OutputLayout& layout, const std::vector<FolderInput>& folders);
    ~OutputChecks();
    // Checks `job`, named from `file` (name_outputs.h), setting its error;
    // false when it repeats an earlier job (the same input to the same
    // output): drop it.
    bool check(FileJob& job, const InputFile& file);

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace imr
