// The atomic write (see atomic_file.h).
#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "error.h"
#include "util/temporary_name.h"

namespace imr {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) {
    return std::generic_category().message(err);
}

// Writes all of `bytes` to fd; errno-style code on failure, 0 on success.
int write_all(int fd, const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        done += size_t(w);
    }
    return 0;
}

}  // namespace

void write_atomically(const std::string& path, const std::vector<uint8_t>& bytes, bool overwrite) {
    static std::atomic<unsigned> counter{0};
    const fs::path target(path);
    const fs::path dir = target.parent_path();
    const std::string dir_text = dir.empty() ? "." : dir.string();
    const std::string tmp =
        (dir / temporary_name(target.filename().string(), target.extension().string(), counter.fetch_add(1))).string();
    auto open_error = [&](int err) {
        if (err == ENOENT) return Error(path + ": cannot write: directory '" + dir_text + "' does not exist");
        if (err == ENOTDIR) return Error(path + ": cannot write: '" + dir_text + "' is not a directory");
        return Error(path + ": cannot create a file in '" + dir_text + "': " + errno_text(err));
    };
    auto place_error = [&](int err) {
        if (err == EISDIR) return Error(path + ": is a directory");
        if (err == EEXIST && !overwrite)
            return Error(path + ": appeared while it was being restored; not overwritten (--force overwrites)");
        return Error(path + ": cannot replace the file: " + errno_text(err));
    };

    int fd = ::open(dir_text.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) {
        if (int err = write_all(fd, bytes)) {
            ::close(fd);
            throw Error(path + ": cannot write: " + errno_text(err));
        }
        const std::string self = "/proc/self/fd/" + std::to_string(fd);
        // Without overwrite the link is the final name (fails if it exists);
        // with it, a complete file gets a temporary name, then replaces path.
        const std::string& link_to = overwrite ? tmp : path;
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, link_to.c_str(), AT_SYMLINK_FOLLOW) == 0) {
            ::close(fd);
            if (overwrite && std::rename(tmp.c_str(), path.c_str()) != 0) {
                int err = errno;
                ::unlink(tmp.c_str());
                throw place_error(err);
            }
            return;
        }
        int err = errno;
        ::close(fd);
        if (err == EEXIST || err == EISDIR) throw place_error(err);
        // No /proc to link through: fall back to a named temporary file.
    } else if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS) {
        throw open_error(errno);
    }

    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) throw open_error(errno);
    int err = write_all(fd, bytes);
    if (::close(fd) != 0 && !err) err = errno;
    if (err) {
        ::unlink(tmp.c_str());
        throw Error(path + ": cannot write: " + errno_text(err));
    }
    int placed = overwrite ? std::rename(tmp.c_str(), path.c_str())
                           : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (placed != 0) {
        err = errno;
        ::unlink(tmp.c_str());
        throw place_error(err);
    }
}

}  // namespace imr
