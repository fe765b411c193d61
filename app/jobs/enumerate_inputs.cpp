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

// "." or "photos/" -> an absolute, normalized path, so that its name (for
// FOLDER.restored and out/FOLDER) is a real name.
fs::path absolute_input(const std::string& raw) {
    std::error_code ec;
    fs::path in = fs::absolute(strip_trailing_slashes(raw), ec).lexically_normal();
    if (in.has_parent_path() && in.filename().empty()) in = in.parent_path();
    return in;
}

constexpr int kWalkedAlready = -2;

}  // namespace

bool listed_name(const std::string& name, const std::string& suffix) {
    return !name.empty() && name[0] != '.' && is_readable_extension(name) &&
           !ends_with(fs::path(name).stem().string(), suffix);
}

InputWalk::InputWalk(const JobRequest& r, const OutputLayout& layout) : request_(r) {
    if (layout.to_stdout || layout.from_stdin) {  // one image; reading it says what is wrong with it
        folder_of_input_.push_back(-1);
        one_image_ = true;
        return;
    }
    std::error_code ec;
    for (const std::string& raw : r.inputs) {
        const fs::path in = absolute_input(raw);
        if (!fs::is_directory(in, ec)) {
            folder_of_input_.push_back(-1);
            continue;
        }
        FolderInput f{raw, in, folder_destination(r, layout, in, raw), {}};
        f.skip = fs::weakly_canonical(f.destination, ec);
        // The same folder given twice (in ./in/) is walked once: the second
        // walk would only repeat the first's jobs.
        const fs::path canonical = fs::weakly_canonical(in, ec);
        const bool again = std::any_of(folders_.begin(), folders_.end(), [&](const FolderInput& g) {
            return g.destination == f.destination && fs::weakly_canonical(g.path, ec) == canonical;
        });
        folder_of_input_.push_back(again ? kWalkedAlready : int(folders_.size()));
        if (!again) folders_.push_back(std::move(f));
    }
}

bool InputWalk::push_folder(const fs::path& relative, InputFile& error) {
    const FolderInput& input = folders_[current_];
    const fs::path dir = relative.empty() ? input.path : input.path / relative;
    ++folders_listed_;
    Frame frame;
    frame.relative = relative;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::directory_entry& e = *it;
        std::error_code type_ec;
        std::string name = e.path().filename().string();
        if (e.is_directory(type_ec)) {
            // Symbolic links to folders are not followed (no cycles); with -r
            // the output folder is left out when it lies inside the input.
            if (request_.recursive && !e.is_symlink(type_ec) && fs::weakly_canonical(e.path(), type_ec) != input.skip)
                frame.entries.push_back({std::move(name), true});
            continue;
        }
        if (listed_name(name, request_.suffix) && e.is_regular_file(type_ec))
            frame.entries.push_back({std::move(name), false});
    }
    // What was listed before an error is walked, and the error said (as its own input).
    std::sort(frame.entries.begin(), frame.entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    if (!frame.entries.empty()) stack_.push_back(std::move(frame));
    if (!ec) return true;
    const std::string shown = (fs::path(input.raw) / relative).lexically_normal().string();
    error = {shown, -1, {}, shown + ": cannot list the folder: " + ec.message()};
    return false;
}

bool InputWalk::next(InputFile& file) {
    for (;;) {
        // Within a folder input: the next entry of the deepest folder.
        while (!stack_.empty()) {
            Frame& top = stack_.back();
            if (top.next == top.entries.size()) {
                stack_.pop_back();
                continue;
            }
            const Entry& e = top.entries[top.next++];
            const fs::path relative = top.relative / e.name;
            if (e.folder) {
                if (!push_folder(relative, file)) return gave_any_ = true;
                continue;
            }
            file = {(fs::path(folders_[current_].raw) / relative).lexically_normal().string(), current_, relative, ""};
            return gave_any_ = true;
        }
        if (current_ >= 0) {  // a folder input walked to its end
            const FolderInput& done = folders_[current_];
            current_ = -1;
            if (!gave_any_) {
                file = {done.raw,
                        -1,
                        {},
                        done.raw + ": no image files in this folder" +
                            std::string(request_.recursive ? "" : " (-r descends into subfolders)")};
                return true;
            }
        }
        if (next_input_ >= folder_of_input_.size()) return false;
        const size_t i = next_input_++;
        const std::string& raw = request_.inputs.at(i);
        if (folder_of_input_[i] == kWalkedAlready) continue;
        if (folder_of_input_[i] >= 0) {
            current_ = folder_of_input_[i];
            gave_any_ = false;
            if (!push_folder({}, file)) return gave_any_ = true;
            continue;
        }
        if (one_image_) {
            file = {raw, -1, {}, ""};
            return true;
        }
        std::error_code ec;
        if (!fs::exists(absolute_input(raw), ec)) {
            const bool pattern = raw.find_first_of("*?[") != std::string::npos;
            file = {raw,
                    -1,
                    {},
                    raw + ": no such file or directory" +
                        std::string(pattern ? " (a quoted pattern? the shell expands *, ? and "
                                              "[...]; imrestore takes names and folders)"
                                            : "")};
            return true;
        }
        file = {raw, -1, fs::path(raw).filename(), ""};
        return true;
    }
}

InputListing enumerate_inputs(const JobRequest& request, const OutputLayout& layout) {
    InputWalk walk(request, layout);
    InputListing listing;
    for (InputFile f; walk.next(f);) listing.files.push_back(std::move(f));
    listing.folders = walk.folders();
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
