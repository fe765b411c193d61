// Checking the output folders before any image is computed: each one cleared
// of this tool's stale temporary files and proved writable by one probe, so that a read-only, unwritable or full
// destination fails its files up front instead of after all the compute.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "jobs/file_job.h"

namespace imr {

// For every folder that a job will write into (no error yet; its output
// missing, or `force`): removes this tool's temporary files there whose
// process on this host is gone (util/temporary_name.h names them
// ".NAME.tmp-HOST-PID-N.EXT"; a killed run can leave one behind when the file
// system has no O_TMPFILE; another host's are left alone), and
// writes one byte to an unnamed probe file there (or in its nearest existing
// ancestor, for a folder still to be created). A folder that fails sets the
// error of each of its jobs. Nothing is created.
void prepare_output_folders(std::vector<FileJob>& jobs, bool force);

// The same, one job at a time as they stream: each folder is prepared when
// its first job comes (and again if it comes back after many others).
class OutputFolders {
public:
    explicit OutputFolders(bool force) : force_(force) {}
    void check(FileJob& job);

private:
    static constexpr size_t kFoldersRemembered = 1024;
    bool force_;
    std::map<std::string, std::string> folder_error_;  // folder -> "" (ready) or why not
};

}  // namespace imr
