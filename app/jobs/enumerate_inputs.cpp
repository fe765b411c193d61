#include "jobs/enumerate_inputs.h"

#include <algorithm>

#include "jobs/name_outputs.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

// Image files of a folder, sorted, skipping hidden files (our own temporaries
// among them), earlier outputs written beside their inputs (NAME<suffix>.EXT)
// and, with -r, the output folder when it lies inside the input. Symbolic
// links to folders are not followed (no cycles). A folder that cannot be
// listed is reported in `unreadable`, not skipped silently.
void scan_folder(const fs::path& dir, bool recursive, const fs::path& skip_dir, const std::string& suffix,
                 std::vector<fs::path>& files, std::vector<std::pair<fs::path, std::string>>& unreadable) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    std::vector<fs::path> subfolders;
    for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::directory_entry& e = *it;
        std::error_code type_ec;
        if (e.is_directory(type_ec)) {
            if (recursive && !e.is_symlink(type_ec) && fs::weakly_canonical(e.path(), type_ec) != skip_dir)
                subfolders.push_back(e.path());
            continue;
        }
        const std::string name = e.path().filename().string();
        if (!name.empty() && name[0] != '.' && e.is_regular_file(type_ec) && is_readable_extension(name) &&
            !ends_with(e.path().stem().string(), suffix))
            files.push_back(e.path());
    }
    if (ec) unreadable.push_back({dir, ec.message()});
    std::sort(subfolders.begin(), subfolders.end());
    for (const fs::path& sub : subfolders) scan_folder(sub, recursive, skip_dir, suffix, files, unreadable);
}

}  // namespace

InputListing enumerate_inputs(const JobRequest& r, const OutputLayout& layout) {
    InputListing listing;
    if (layout.to_stdout || layout.from_stdin) {  // one image; reading it says what is wrong with it
        listing.files.push_back({r.inputs.at(0), -1, {}, ""});
        return listing;
    }
    std::error_code ec;
    for (const std::string& raw : r.inputs) {
        // "." or "photos/" -> an absolute, normalized path, so that its name
        // (for FOLDER.restored and out/FOLDER) is a real name.
        fs::path in = fs::absolute(strip_trailing_slashes(raw), ec).lexically_normal();
        if (in.has_parent_path() && in.filename().empty()) in = in.parent_path();
        if (!fs::exists(in, ec)) {
            const bool pattern = raw.find_first_of("*?[") != std::string::npos;
            listing.files.push_back({raw,
                                     -1,
                                     {},
                                     raw + ": no such file or directory" +
                                         std::string(pattern ? " (a quoted pattern? the shell expands *, ? and "
                                                               "[...]; imrestore takes names and folders)"
                                                             : "")});
            continue;
        }
        if (!fs::is_directory(in, ec)) {
            listing.files.push_back({raw, -1, fs::path(raw).filename(), ""});
            continue;
        }
        const int folder = int(listing.folders.size());
        listing.folders.push_back({raw, in, folder_destination(r, layout, in, raw)});
        std::vector<fs::path> files;
        std::vector<std::pair<fs::path, std::string>> unreadable;
        scan_folder(in, r.recursive, fs::weakly_canonical(listing.folders.back().destination, ec), r.suffix, files,
                    unreadable);
        std::sort(files.begin(), files.end());
        for (const auto& [sub, why] : unreadable) {
            std::string shown = (fs::path(raw) / sub.lexically_relative(in)).lexically_normal().string();
            listing.files.push_back({shown, -1, {}, shown + ": cannot list the folder: " + why});
        }
        if (files.empty() && unreadable.empty())
            listing.files.push_back({raw,
                                     -1,
                                     {},
                                     raw + ": no image files in this folder" +
                                         std::string(r.recursive ? "" : " (-r descends into subfolders)")});
        for (const fs::path& f : files) {
            const fs::path relative = f.lexically_relative(in);
            listing.files.push_back({(fs::path(raw) / relative).lexically_normal().string(), folder, relative, ""});
        }
    }
    return listing;
}

int subfolders_skipped(const std::string& folder, const std::string& suffix) {
    std::error_code ec;
    int n = 0;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::error_code type_ec;  // hidden folders and earlier outputs (SUB<suffix>) are not left out
        if (!name.empty() && name[0] != '.' && !ends_with(name, suffix) && it->is_directory(type_ec)) ++n;
    }
    return n;
}

}  // namespace imr
