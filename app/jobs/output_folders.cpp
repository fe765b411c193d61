#include "jobs/output_folders.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

#include "util/temporary_name.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

// How long a temporary file of a dead PID must have been left alone before
// it is removed.
constexpr long kStaleSeconds = 600;

bool process_gone(pid_t pid) {
    return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// "" when a file can be created (and removed) in `folder`, else why not.
std::string probe_writable(const std::string& folder) {
    int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
        // Writable; a full disk shows up when a block is written.
        const char byte = 0;
        const bool ok = ::write(fd, &byte, 1) == 1;
        const int err = errno;
        ::close(fd);
        return ok ? "" : std::generic_category().message(err);
    }
    if (errno == EACCES || errno == EROFS || errno == ENOENT || errno == ENOTDIR)
        return std::generic_category().message(errno);
    // No O_TMPFILE here: a named probe.
    const std::string probe = folder + "/" + temporary_name("imrestore-probe", "", 0);
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return std::generic_category().message(errno);
    const char byte = 0;
    const bool ok = ::write(fd, &byte, 1) == 1;
    const int err = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    return ok ? "" : std::generic_category().message(err);
}

// The temporary files of dead imrestore processes of this host in `folder`
// (util/temporary_name.h): regular files of this user, named by this host
// and a PID that is not running here, untouched for kStaleSeconds (a PID
// namespace of its own, a container with host networking, can share the host
// name: the age keeps a live write of it safe). Another host's are never
// removed: whether its process lives cannot be seen from here. Names of
// older versions, without a host, go by the PID and the age alone, as then.
std::vector<std::string> stale_temporary_files(const std::string& folder) {
    std::vector<std::string> stale;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::optional<TemporaryOwner> owner = temporary_owner(it->path().filename().string());
        if (!owner || (!owner->host.empty() && owner->host != this_host())) continue;
        if (owner->pid == ::getpid() || !process_gone(owner->pid)) continue;
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) continue;
        if (std::time(nullptr) - st.st_mtime < kStaleSeconds) continue;
        stale.push_back(it->path().string());
    }
    return stale;
}

}  // namespace

void OutputFolders::check(FileJob& job) {
    std::error_code ec;
    if (!job.error.empty() || job.output.empty() || job.output == kStdio) return;
    if (!force_ && fs::exists(job.output, ec)) return;  // skipped later, nothing to write
    std::string folder = fs::path(job.output).parent_path().string();
    if (folder.empty()) folder = ".";
    auto it = folder_error_.find(folder);
    if (it == folder_error_.end()) {
        // A folder that does not exist yet is created when its first file is
        // written; until then its nearest existing ancestor is probed (same
        // permissions to create in, same file system).
        // (absolute: "restored" has no parent to fall back to; its absolute form does)
        const fs::path target = fs::absolute(folder, ec).lexically_normal();
        fs::path probe_at = target;
        while (!fs::exists(probe_at, ec) && probe_at.has_parent_path() && probe_at.parent_path() != probe_at)
            probe_at = probe_at.parent_path();
        std::string why;
        if (fs::exists(probe_at, ec) && !fs::is_directory(probe_at, ec)) {
            why = "cannot create folder " + folder + ": " + probe_at.string() + " is a file";
        } else {
            if (probe_at == target)
                for (const std::string& f : stale_temporary_files(folder)) ::unlink(f.c_str());
            const std::string problem = probe_writable(probe_at.string());
            if (!problem.empty())
                why = (probe_at == target ? "" : "cannot create folder " + folder + ": ") + "cannot create a file in " +
                      probe_at.string() + ": " + problem;
        }
        // Folders come one after another as the listing walks: a few are
        // remembered, not every folder of the tree.
        if (folder_error_.size() >= kFoldersRemembered) folder_error_.clear();
        it = folder_error_.emplace(folder, why).first;
    }
    if (!it->second.empty()) job.error = job.output + ": " + it->second;
}

void prepare_output_folders(std::vector<FileJob>& jobs, bool force) {
    OutputFolders folders(force);
    for (FileJob& job : jobs) folders.check(job);
}

}  // namespace imr
