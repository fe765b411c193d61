#include "jobs/check_outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "jobs/name_outputs.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

// NAME_MAX of Linux file systems (ext4, xfs, btrfs, tmpfs): bytes per name.
constexpr size_t kMaxNameBytes = 255;
// Folders whose resolved form is remembered (then forgotten all at once):
// enough for the folders a walk visits near each other, flat in the tree's size.
constexpr size_t kFolderCache = 4096;

using FileId = std::pair<dev_t, ino_t>;

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
        if (it == folders_.end()) {
            if (folders_.size() >= kFolderCache) folders_.clear();
            it = folders_.emplace(dir.native(), fs::weakly_canonical(dir.empty() ? fs::path(".") : dir, ec_)).first;
        }
        return it->second;
    }

private:
    std::unordered_map<std::string, fs::path> folders_;
    std::error_code ec_;
};

struct Claim {
    fs::path input;     // canonical
    std::string shown;  // as given
};

}  // namespace

struct OutputChecks::State {
    const JobRequest& request;
    const OutputLayout& layout;
    bool on = true;
    CanonicalPaths canonical;
    fs::path root;  // -o's folder, canonical
    // The command-line files: their paths, identities and outputs (canonical).
    std::set<fs::path> argv_inputs, argv_outputs;
    std::set<FileId> argv_ids;
    // Each folder input's folder: canonical, and its identity.
    struct Root {
        fs::path canonical;
        FileId id{};
        bool ok = false;
    };
    std::vector<Root> roots;
    const std::vector<FolderInput>& folders;
    // Canonical folder -> the folder inputs it lies in by identity (a bind
    // mount too): (folder input, path below it), for those whose walk enters it.
    std::unordered_map<std::string, std::vector<std::pair<int, fs::path>>> walked_by;
    // Outputs claimed by command-line files, and by any file for an output
    // that a command-line file has too: kept for the whole run.
    std::map<fs::path, Claim> kept;
    // Outputs claimed by the files of each folder on the walk's path.
    struct Level {
        int folder;
        fs::path dir;  // below the folder input
        std::map<fs::path, Claim> claims;
    };
    std::vector<Level> path;
    // The identities of the listed files of one input folder (hard links).
    std::string ids_of;
    std::set<FileId> ids;

    State(const JobRequest& r, const OutputLayout& l, const std::vector<FolderInput>& f)
        : request(r), layout(l), folders(f) {}

    const std::vector<std::pair<int, fs::path>>& walks_into(const fs::path& dir) {
        auto it = walked_by.find(dir.native());
        if (it != walked_by.end()) return it->second;
        if (walked_by.size() >= kFolderCache) walked_by.clear();
        std::vector<std::pair<int, fs::path>> found;
        for (fs::path a = dir;; a = a.parent_path()) {
            struct stat st {};
            if (::stat(a.c_str(), &st) == 0)
                for (size_t k = 0; k < roots.size(); ++k) {
                    if (!roots[k].ok || roots[k].id != FileId{st.st_dev, st.st_ino}) continue;
                    const fs::path below = dir.lexically_relative(a);
                    const bool top = below.empty() || below == ".";
                    if (!top && !request.recursive) continue;
                    // Each folder on the way is one the walk enters (not the
                    // output folder it leaves out; real folders: dir is canonical).
                    bool enters = true;
                    fs::path at = roots[k].canonical;
                    if (!top)
                        for (const fs::path& part : below)
                            if ((at /= part) == folders[k].skip) enters = false;
                    if (enters) found.push_back({int(k), top ? fs::path() : below});
                }
            if (!a.has_relative_path()) break;
        }
        return walked_by.emplace(dir.native(), std::move(found)).first->second;
    }

    // Whether existing file `out` (canonical, its stat `st`) is an input:
    // "" no, "same" by its path, "other" under another name.
    std::string input_kind(const fs::path& out, const struct stat& st, const InputFile& file) {
        if (argv_inputs.count(out)) return "same";
        if (argv_ids.count({st.st_dev, st.st_ino})) return "other";
        if (S_ISREG(st.st_mode) && listed_name(out.filename().string(), request.suffix))
            for (const auto& [k, below] : walks_into(out.parent_path()))
                return roots[k].canonical / below / out.filename() == out ? "same" : "other";
        if (st.st_nlink > 1 && file.folder >= 0) {  // a hard link of a file in the input's folder
            const fs::path dir = folders[file.folder].path / file.relative.parent_path();
            if (ids_of != dir.native()) {
                ids.clear();
                ids_of = dir.native();
                std::error_code ec;
                for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
                    struct stat s {};
                    if (listed_name(it->path().filename().string(), request.suffix) &&
                        ::stat(it->path().c_str(), &s) == 0 && S_ISREG(s.st_mode))
                        ids.insert({s.st_dev, s.st_ino});
                }
            }
            if (ids.count({st.st_dev, st.st_ino})) return "other";
        }
        return "";
    }

    // The claims of the folder `file` is in, after forgetting those of the
    // folders the walk has left (depth first: every folder not above it).
    std::map<fs::path, Claim>& claims_for(const InputFile& file) {
        if (file.folder < 0) return kept;
        const fs::path dir = file.relative.parent_path();
        auto above = [&](const Level& l) {
            if (l.folder != file.folder) return false;
            const auto [a, b] = std::mismatch(l.dir.begin(), l.dir.end(), dir.begin(), dir.end());
            return a == l.dir.end();
        };
        while (!path.empty() && !above(path.back())) path.pop_back();
        if (path.empty() || path.back().dir != dir) path.push_back({file.folder, dir, {}});
        return path.back().claims;
    }

    const Claim* claimed(const fs::path& out) {
        if (auto it = kept.find(out); it != kept.end()) return &it->second;
        for (Level& l : path)
            if (auto it = l.claims.find(out); it != l.claims.end()) return &it->second;
        return nullptr;
    }
};

OutputChecks::OutputChecks(const JobRequest& request, const OutputLayout& layout,
                           const std::vector<FolderInput>& folders)
    : s_(std::make_unique<State>(request, layout, folders)) {
    State& s = *s_;
    s.on = request.names_outputs && !layout.to_stdout && !layout.from_stdin;
    if (!s.on) return;
    std::error_code ec;
    s.root = layout.root.empty() ? fs::path() : fs::weakly_canonical(layout.root, ec);
    for (const FolderInput& f : folders) {
        State::Root r;
        r.canonical = fs::weakly_canonical(f.path, ec);
        struct stat st {};
        if (::stat(f.path.c_str(), &st) == 0) r.id = {st.st_dev, st.st_ino}, r.ok = true;
        s.roots.push_back(r);
    }
    // The command-line files (a handful: what a shell passes).
    for (const std::string& raw : request.inputs) {
        struct stat st {};
        if (::stat(raw.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
        s.argv_inputs.insert(s.canonical.of(raw));
        s.argv_ids.insert({st.st_dev, st.st_ino});
        const FileJob job = name_output({raw, -1, fs::path(raw).filename(), ""}, folders, request, layout);
        if (!job.output.empty()) s.argv_outputs.insert(s.canonical.of(job.output));
    }
}

OutputChecks::~OutputChecks() = default;

bool OutputChecks::check(FileJob& j, const InputFile& file) {
    State& s = *s_;
    if (!s.on || !j.error.empty()) return true;
    j.error = name_too_long(j);
    if (!j.error.empty()) return true;
    const fs::path out = s.canonical.of(j.output), in = s.canonical.of(j.input);
    std::map<fs::path, Claim>& folder_claims = s.claims_for(file);
    std::map<fs::path, Claim>& mine = s.argv_outputs.count(out) ? s.kept : folder_claims;
    const Claim* earlier = s.claimed(out);
    if (earlier && earlier->input == in) return false;  // a duplicate
    struct stat st {};
    const std::string input = ::stat(j.output.c_str(), &st) == 0 ? s.input_kind(out, st, file) : "";
    const fs::path& folder = s.canonical.folder(fs::path(j.output).parent_path());
    const auto escapes_root = [&] {
        if (s.root.empty()) return false;
        const auto [r, f] = std::mismatch(s.root.begin(), s.root.end(), folder.begin(), folder.end());
        return r != s.root.end();
    };
    if (!input.empty())
        j.error = j.input + ": refusing to write " + j.output + " because it is an input" +
                  (input == "same" ? "" : " (the same file under another name)");
    else if (escapes_root())
        j.error = j.output + ": not written: its folder leads out of " + s.request.output +
                  " through a symbolic link (to " + folder.string() + ")";
    else if (earlier)
        j.error = j.input + ": output " + j.output + " is also the output of " + earlier->shown;
    else
        mine[out] = {in, j.input};
    return true;
}

}  // namespace imr
