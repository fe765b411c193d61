#include "jobs/name_outputs.h"

#include "error.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

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

// A file input as an absolute, normal path ("./a.png" -> "/cwd/a.png").
fs::path absolute_input(const std::string& raw) {
    std::error_code ec;
    return fs::absolute(raw, ec).lexically_normal();
}

// Shown to the user: relative paths stay relative to where they ran it.
fs::path as_given(const fs::path& p, bool relative) {
    if (!relative) return p;
    std::error_code ec;
    fs::path rel = p.lexically_relative(fs::current_path(ec));
    return rel.empty() ? p : rel;
}

// The shard key of an output: its path below the output folder; outputs
// beside their inputs and a single named output file have no common root
// and are known by their path as named (the same command line names them
// the same in every task).
std::string shard_key(const fs::path& output, const OutputLayout& layout) {
    if (layout.root.empty()) return output.lexically_normal().string();
    return output.lexically_normal().lexically_relative(layout.root.lexically_normal()).string();
}

}  // namespace

fs::path folder_destination(const JobRequest& r, const OutputLayout& layout, const fs::path& folder,
                            const std::string& raw) {
    if (layout.beside)
        return as_given(folder.parent_path() / (folder.filename().string() + r.suffix), fs::path(raw).is_relative());
    return layout.folder_inputs > 1 ? layout.root / folder.filename() : layout.root;
}

FileJob name_output(InputFile f, const std::vector<FolderInput>& folders, const JobRequest& r,
                    const OutputLayout& layout) {
    FileJob job{f.shown, "", std::move(f.error), f.shown};  // an error's key: the input as named
    if (!job.error.empty()) return job;
    if (!r.names_outputs) {
        job.shard_key = f.relative.string();
    } else if (layout.to_stdout) {
        job.output = kStdio;
    } else if (layout.one_file) {
        job.output = r.output;
    } else if (f.folder >= 0) {
        job.output = output_with_format(folders[f.folder].destination / f.relative, r.format, r.codec).string();
    } else if (layout.beside) {
        // NAME<suffix>.EXT; an input without extension gets NAME<suffix>.png.
        const fs::path in = absolute_input(f.shown);
        const std::string ext = in.extension().empty() ? ".png" : in.extension().string();
        const fs::path out = fs::path(f.shown).parent_path() / (in.stem().string() + r.suffix + ext);
        job.output = output_with_format(out, r.format, r.codec).string();
    } else {
        const fs::path in = absolute_input(f.shown);
        fs::path out = layout.root / in.filename();
        if (in.extension().empty()) out += ".png";
        job.output = output_with_format(out, r.format, r.codec).string();
    }
    if (!job.output.empty()) job.shard_key = shard_key(job.output, layout);
    return job;
}

}  // namespace imr
