#include "jobs/check_outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

namespace imr {

namespace fs = std::filesystem;

namespace {

// NAME_MAX of Linux file systems (ext4, xfs, btrfs, tmpfs): bytes per name.
constexpr size_t kMaxNameBytes = 255;

// Why `output` cannot be created for that reason, else "".
std::string name_too_long(const FileJob& j) {
    for (const fs::path& part : fs::path(j.output))  // the file and any folder still to be made
        if (part.string().size() > kMaxNameBytes)
            return j.input + ": its output path has a name of " + std::to_string(part.string().size()) + " bytes (" +
                   part.string().substr(0, 40) + "...), more than file systems allow (" +
                   std::to_string(kMaxNameBytes) + "); name the output with -o or use a shorter --suffix";
    return "";
}

// fs::weakly_canonical with each folder resolved once: the checks resolve
// two or three paths per file, and resolving one walks its every component
// (20,000 files in 200 folders took 460,000 readlink calls, 1.2 s, before
// this cache). A path whose last component is a symbolic link, "." or ".."
// is resolved whole.
class CanonicalPaths {
public:
    fs::path of(const fs::path& p) {
        const fs::path name = p.filename();
        struct stat st {};
        if (name.empty() || name == "." || name == ".." || (::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode)))
            return fs::weakly_canonical(p, ec_);
        return folder(p.parent_path()) / name;
    }
    const fs::path& folder(const fs::path& dir) {
        auto it = folders_.find(dir.native());
        if (it == folders_.end())
            it = folders_.emplace(dir.native(), fs::weakly_canonical(dir.empty() ? fs::path(".") : dir, ec_)).first;
        return it->second;
    }

private:
    std::unordered_map<std::string, fs::path> folders_;
    std::error_code ec_;
};

}  // namespace

std::vector<FileJob> check_outputs(std::vector<FileJob> jobs, const JobRequest& request, const OutputLayout& layout) {
    if (!request.names_outputs || layout.to_stdout || layout.from_stdin) return jobs;
    std::error_code ec;
    CanonicalPaths canonical;
    std::set<fs::path> input_paths;
    std::set<std::pair<dev_t, ino_t>> input_files;
    for (const FileJob& j : jobs) {
        if (!j.error.empty()) continue;
        input_paths.insert(canonical.of(j.input));
        struct stat st {};
        if (::stat(j.input.c_str(), &st) == 0) input_files.insert({st.st_dev, st.st_ino});
    }
    const fs::path root = layout.root.empty() ? fs::path() : fs::weakly_canonical(layout.root, ec);
    auto escapes_root = [&](const fs::path& out) {
        if (root.empty()) return false;
        const fs::path& folder = canonical.folder(out.parent_path());
        const auto [r, f] = std::mismatch(root.begin(), root.end(), folder.begin(), folder.end());
        return r != root.end();
    };
    std::map<fs::path, std::pair<fs::path, std::string>> claimed;  // output -> (canonical input, as given)
    std::vector<FileJob> checked;
    checked.reserve(jobs.size());
    for (FileJob& j : jobs) {
        if (j.error.empty()) j.error = name_too_long(j);
        if (j.error.empty()) {
            const fs::path out = canonical.of(j.output), in = canonical.of(j.input);
            auto it = claimed.find(out);
            if (it != claimed.end() && it->second.first == in) continue;  // a duplicate
            struct stat st {};
            const bool same_file = ::stat(j.output.c_str(), &st) == 0 && input_files.count({st.st_dev, st.st_ino});
            if (input_paths.count(out) || same_file)
                j.error = j.input + ": refusing to write " + j.output + " because it is an input" +
                          (input_paths.count(out) ? "" : " (the same file under another name)");
            else if (escapes_root(fs::path(j.output)))
                j.error = j.output + ": not written: its folder leads out of " + request.output +
                          " through a symbolic link (to " +
                          canonical.folder(fs::path(j.output).parent_path()).string() + ")";
            else if (it != claimed.end())
                j.error = j.input + ": output " + j.output + " is also the output of " + it->second.second;
            else
                claimed[out] = {in, j.input};
        }
        checked.push_back(std::move(j));
    }
    return checked;
}

}  // namespace imr
