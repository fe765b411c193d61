#include "jobs/output_folders.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <map>
#include <system_error>

namespace imr {

namespace fs = std::filesystem;

namespace {

// ".NAME.tmp-PID-N[.EXT]" -> PID; 0 when the name is not one of ours.
pid_t temporary_file_pid(const std::string& name) {
    if (name.size() < 8 || name[0] != '.') return 0;
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || at == 0) return 0;
    size_t i = at + 5, digits = 0;
    long long pid = 0;
    while (i < name.size() && std::isdigit((unsigned char)name[i]) && digits < 10)
        pid = pid * 10 + (name[i++] - '0'), ++digits;
    if (digits == 0 || i >= name.size() || name[i] != '-') return 0;
    size_t n = ++i;
    while (i < name.size() && std::isdigit((unsigned char)name[i])) ++i;
    if (i == n || (i < name.size() && name[i] != '.')) return 0;
    return pid > 0 && pid <= 0x7fffffff ? pid_t(pid) : 0;
}

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
    const std::string probe = folder + "/.imrestore-probe.tmp-" + std::to_string(::getpid()) + "-0";
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return std::generic_category().message(errno);
    const char byte = 0;
    const bool ok = ::write(fd, &byte, 1) == 1;
    const int err = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    return ok ? "" : std::generic_category().message(err);
}

// The temporary files of dead imrestore processes in `folder`: names
// matching ".*.tmp-PID-N*" whose PID is not running on this host, regular
// files of this user, untouched for kStaleSeconds.
std::vector<std::string> stale_temporary_files(const std::string& folder) {
    std::vector<std::string> stale;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const pid_t pid = temporary_file_pid(name);
        if (pid == 0 || pid == ::getpid() || !process_gone(pid)) continue;
        struct stat st {};
        // Only regular files of this user (never follow a link), untouched for
        // kStaleSeconds: the PID test sees this host only, and a run on another
        // host writing into the same shared folder keeps its file fresh.
        if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) continue;
        if (std::time(nullptr) - st.st_mtime < kStaleSeconds) continue;
        stale.push_back(it->path().string());
    }
    return stale;
}

}  // namespace

void prepare_output_folders(std::vector<FileJob>& jobs, bool force) {
    std::map<std::string, std::string> folder_error;  // folder -> "" (ready) or why not
    for (FileJob& job : jobs) {
        std::error_code ec;
        if (!job.error.empty() || job.output.empty() || job.output == kStdio) continue;
        if (!force && fs::exists(job.output, ec)) continue;  // skipped later, nothing to write
        std::string folder = fs::path(job.output).parent_path().string();
        if (folder.empty()) folder = ".";
        auto it = folder_error.find(folder);
        if (it == folder_error.end()) {
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
                    why = (probe_at == target ? "" : "cannot create folder " + folder + ": ") +
                          "cannot create a file in " + probe_at.string() + ": " + problem;
            }
            it = folder_error.emplace(folder, why).first;
        }
        if (!it->second.empty()) job.error = job.output + ": " + it->second;
    }
}

}  // namespace imr
