#include "pipeline/output_plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "usage_error.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

// NAME_MAX of Linux file systems (ext4, xfs, btrfs, tmpfs): bytes per name.
constexpr size_t kMaxNameBytes = 255;

// check_writable_format for an output the command line names, as a usage
// error. `option` ("--format xyz") stands for `path` in the message when the
// path was made up from it.
void check_output_format(const std::string& path, Codec codec, const std::string& option = "") {
    try {
        check_writable_format(path, codec);
    } catch (const Error& e) {
        const std::string why = e.what();  // "PATH: what is wrong"
        const bool about_path = why.compare(0, path.size(), path) == 0;
        throw UsageError(option.empty() || !about_path ? why : option + why.substr(path.size()));
    }
}

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

// The output for a derived name: the requested format, else the input's
// when this build can write it, else PNG ("photo.gif" -> "photo.png").
fs::path output_with_format(fs::path out, const std::string& format, Codec codec) {
    if (!format.empty()) return out.replace_extension("." + format);
    try {
        check_writable_format(out.string(), codec);
    } catch (const Error&) {
        out.replace_extension(".png");
    }
    return out;
}

// Shown to the user: relative paths stay relative to where they ran it.
fs::path as_given(const fs::path& p, bool relative) {
    if (!relative) return p;
    std::error_code ec;
    fs::path rel = p.lexically_relative(fs::current_path(ec));
    return rel.empty() ? p : rel;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
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

std::vector<FileJob> plan_jobs(const std::vector<std::string>& inputs, const std::string& output, bool recursive,
                               Codec codec, const std::string& format, const std::string& suffix) {
    std::vector<FileJob> jobs;
    std::error_code ec;
    if (suffix.empty() || suffix.find('/') != std::string::npos || suffix == "." || suffix == "..")
        throw UsageError("--suffix '" + suffix + "': expected a non-empty name part without '/', e.g. .restored");
    if (!format.empty())
        check_output_format("output." + format, codec, "--format " + format);  // "--format xyz" fails here
    // Pipes: "-" reads one image from stdin (format from its bytes); "-o -"
    // writes one image to stdout (format from --format).
    const bool stdin_in = std::find(inputs.begin(), inputs.end(), kStdio) != inputs.end();
    if (stdin_in && inputs.size() > 1) throw UsageError("-: standard input is one image; give it alone");
    if (output == kStdio) {
        if (inputs.size() != 1 || fs::is_directory(inputs[0], ec))
            throw UsageError("-o -: standard output takes one image; give one input file");
        if (format.empty())
            throw UsageError("-o -: say the format of the image on standard output with --format (png, jpg, ...)");
        return {{inputs[0], kStdio, ""}};
    }
    if (stdin_in) {
        if (output.empty() || output.back() == '/' || fs::is_directory(output, ec))
            throw UsageError("-: the image from standard input needs an output file: -o FILE.EXT or -o -");
        check_output_format(output, codec);
        return {{kStdio, output, ""}};
    }
    const bool one_file_in = inputs.size() == 1 && !fs::is_directory(inputs[0], ec);  // or a missing one
    const bool single_file_out =
        one_file_in && !output.empty() && output.back() != '/' && !fs::is_directory(output, ec);
    const fs::path out_root = output.empty() ? fs::path() : fs::path(strip_trailing_slashes(output));
    // Several inputs need an output folder: refuse a file (existing, or named
    // like an image) before any work, rather than failing every file later.
    if (!output.empty() && !one_file_in && !fs::is_directory(out_root, ec)) {
        if (fs::exists(out_root, ec))
            throw UsageError("-o " + output + ": is a file, but several inputs (or a folder) need an output folder");
        if (is_readable_extension(out_root.string()) && output.back() != '/')
            throw UsageError("-o " + output +
                             ": looks like an image file, but several inputs (or a folder) need an "
                             "output folder (end it with '/' if a folder of that name is meant)");
    }
    if (single_file_out) check_output_format(output, codec);  // "-o out.xyz" fails here, not per file
    // Several folders into one -o each keep their own subfolder, named after
    // the folder: two folders of one name would collide.
    int folder_inputs = 0;
    std::map<std::string, std::pair<fs::path, std::string>> folder_names;  // name -> (canonical, as given)
    for (const std::string& raw : inputs) {
        if (!fs::is_directory(raw, ec)) continue;
        ++folder_inputs;
        fs::path canonical = fs::weakly_canonical(raw, ec);
        std::string name = canonical.filename().string();
        auto it = folder_names.find(name);
        if (!output.empty() && it != folder_names.end() && it->second.first != canonical)
            throw UsageError("folders " + it->second.second + " and " + raw + " have the same name '" + name +
                             "', so their files would collide in " + output + "; restore them in separate runs");
        folder_names[name] = {canonical, raw};
    }

    for (const std::string& raw : inputs) {
        // "." or "photos/" -> an absolute, normalized path, so that its name
        // (for FOLDER.restored and out/FOLDER) is a real name.
        fs::path in = fs::absolute(strip_trailing_slashes(raw), ec).lexically_normal();
        if (in.has_parent_path() && in.filename().empty()) in = in.parent_path();
        if (!fs::exists(in, ec)) {
            const bool pattern = raw.find_first_of("*?[") != std::string::npos;
            jobs.push_back({raw, "",
                            raw + ": no such file or directory" +
                                std::string(pattern ? " (a quoted pattern? the shell expands *, ? and [...]; "
                                                      "imrestore takes names and folders)"
                                                    : "")});
        } else if (fs::is_directory(in, ec)) {
            fs::path dest = output.empty()      ? as_given(in.parent_path() / (in.filename().string() + suffix),
                                                           fs::path(raw).is_relative())
                            : folder_inputs > 1 ? out_root / in.filename()
                                                : out_root;
            std::vector<fs::path> files;
            std::vector<std::pair<fs::path, std::string>> unreadable;
            scan_folder(in, recursive, fs::weakly_canonical(dest, ec), suffix, files, unreadable);
            std::sort(files.begin(), files.end());
            for (const auto& [folder, why] : unreadable) {
                std::string shown = (fs::path(raw) / folder.lexically_relative(in)).lexically_normal().string();
                jobs.push_back({shown, "", shown + ": cannot list the folder: " + why});
            }
            if (files.empty() && unreadable.empty())
                jobs.push_back({raw, "",
                                raw + ": no image files in this folder" +
                                    std::string(recursive ? "" : " (-r descends into subfolders)")});
            for (const fs::path& f : files) {
                fs::path shown = fs::path(raw) / f.lexically_relative(in);  // as the user named it
                jobs.push_back({shown.lexically_normal().string(),
                                output_with_format(dest / f.lexically_relative(in), format, codec).string(), ""});
            }
        } else if (single_file_out) {
            jobs.push_back({raw, output, ""});
        } else if (output.empty()) {
            // NAME<suffix>.EXT; an input without extension gets NAME<suffix>.png.
            std::string ext = in.extension().empty() ? ".png" : in.extension().string();
            fs::path out = fs::path(raw).parent_path() / (in.stem().string() + suffix + ext);
            jobs.push_back({raw, output_with_format(out, format, codec).string(), ""});
        } else {
            fs::path out = out_root / in.filename();
            if (in.extension().empty()) out += ".png";
            jobs.push_back({raw, output_with_format(out, format, codec).string(), ""});
        }
    }

    // Never overwrite an input, and never let two inputs write one output;
    // the same input given twice (a.png ./a.png) is restored once. Inputs are
    // known by path and by file identity (device, inode): an output reached
    // through a bind mount or a hard link of an input is that input.
    std::set<fs::path> input_paths;
    std::set<std::pair<dev_t, ino_t>> input_files;
    for (const FileJob& j : jobs) {
        if (!j.error.empty()) continue;
        input_paths.insert(fs::weakly_canonical(j.input, ec));
        struct stat st {};
        if (::stat(j.input.c_str(), &st) == 0) input_files.insert({st.st_dev, st.st_ino});
    }
    // With an output folder, every output stays inside it: a symbolic link
    // already in the tree must not lead a write elsewhere.
    const fs::path root = single_file_out || output.empty() ? fs::path() : fs::weakly_canonical(out_root, ec);
    auto escapes_root = [&](const fs::path& out) {
        if (root.empty()) return false;
        const fs::path folder = fs::weakly_canonical(out.parent_path(), ec);
        const auto [r, f] = std::mismatch(root.begin(), root.end(), folder.begin(), folder.end());
        return r != root.end();
    };
    std::map<fs::path, std::pair<fs::path, std::string>> claimed;  // output -> (canonical input, as given)
    std::vector<FileJob> planned;
    for (FileJob& j : jobs) {
        if (j.error.empty())
            for (const fs::path& part : fs::path(j.output))  // the file and any folder still to be made
                if (part.string().size() > kMaxNameBytes) {
                    j.error = j.input + ": its output path has a name of " + std::to_string(part.string().size()) +
                              " bytes (" + part.string().substr(0, 40) + "...), more than file systems allow (" +
                              std::to_string(kMaxNameBytes) + "); name the output with -o or use a shorter --suffix";
                    break;
                }
        if (j.error.empty()) {
            fs::path out = fs::weakly_canonical(j.output, ec), in = fs::weakly_canonical(j.input, ec);
            auto it = claimed.find(out);
            if (it != claimed.end() && it->second.first == in) continue;  // a duplicate
            struct stat st {};
            const bool same_file = ::stat(j.output.c_str(), &st) == 0 && input_files.count({st.st_dev, st.st_ino});
            if (input_paths.count(out) || same_file)
                j.error = j.input + ": refusing to write " + j.output + " because it is an input" +
                          (input_paths.count(out) ? "" : " (the same file under another name)");
            else if (escapes_root(fs::path(j.output)))
                j.error = j.output + ": not written: its folder leads out of " + output +
                          " through a symbolic link (to " +
                          fs::weakly_canonical(fs::path(j.output).parent_path(), ec).string() + ")";
            else if (it != claimed.end())
                j.error = j.input + ": output " + j.output + " is also the output of " + it->second.second;
            else
                claimed[out] = {in, j.input};
        }
        planned.push_back(std::move(j));
    }
    return planned;
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
