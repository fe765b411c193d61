#include "jobs/output_layout.h"

#include <algorithm>
#include <map>

#include "jobs/file_job.h"
#include "usage_error.h"

namespace imr {

namespace fs = std::filesystem;

void check_output_format(const std::string& path, Codec codec, const std::string& option) {
    try {
        check_writable_format(path, codec);
    } catch (const Error& e) {
        const std::string why = e.what();  // "PATH: what is wrong"
        const bool about_path = why.compare(0, path.size(), path) == 0;
        throw UsageError(option.empty() || !about_path ? why : option + why.substr(path.size()));
    }
}

namespace {

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

}  // namespace

OutputLayout check_request(const JobRequest& r) {
    const std::vector<std::string>& inputs = r.inputs;
    const std::string& output = r.output;
    OutputLayout layout;
    std::error_code ec;
    if (r.suffix.empty() || r.suffix.find('/') != std::string::npos || r.suffix == "." || r.suffix == "..")
        throw UsageError("--suffix '" + r.suffix + "': expected a non-empty name part without '/', e.g. .restored");
    if (!r.format.empty())
        check_output_format("output." + r.format, r.codec, "--format " + r.format);  // "--format xyz" fails here
    // Pipes: "-" reads one image from stdin (format from its bytes); "-o -"
    // writes one image to stdout (format from --format).
    const bool stdin_in = std::find(inputs.begin(), inputs.end(), kStdio) != inputs.end();
    if (stdin_in && inputs.size() > 1) throw UsageError("-: standard input is one image; give it alone");
    if (output == kStdio) {
        if (inputs.size() != 1 || fs::is_directory(inputs[0], ec))
            throw UsageError("-o -: standard output takes one image; give one input file");
        if (r.format.empty())
            throw UsageError("-o -: say the format of the image on standard output with --format (png, jpg, ...)");
        layout.to_stdout = true;
        layout.from_stdin = stdin_in;
        return layout;
    }
    if (stdin_in) {
        if (output.empty() || output.back() == '/' || fs::is_directory(output, ec))
            throw UsageError("-: the image from standard input needs an output file: -o FILE.EXT or -o -");
        check_output_format(output, r.codec);
        layout.from_stdin = layout.one_file = true;
        return layout;
    }
    const bool one_file_in = inputs.size() == 1 && !fs::is_directory(inputs[0], ec);  // or a missing one
    layout.one_file = one_file_in && !output.empty() && output.back() != '/' && !fs::is_directory(output, ec);
    layout.beside = output.empty();
    if (!layout.beside && !layout.one_file) layout.root = strip_trailing_slashes(output);
    // Several inputs need an output folder: refuse a file (existing, or named
    // like an image) before any work, rather than failing every file later.
    if (!output.empty() && !one_file_in && !fs::is_directory(layout.root, ec)) {
        if (fs::exists(layout.root, ec))
            throw UsageError("-o " + output + ": is a file, but several inputs (or a folder) need an output folder");
        if (is_readable_extension(layout.root.string()) && output.back() != '/')
            throw UsageError("-o " + output +
                             ": looks like an image file, but several inputs (or a folder) need an "
                             "output folder (end it with '/' if a folder of that name is meant)");
    }
    if (layout.one_file) check_output_format(output, r.codec);  // "-o out.xyz" fails here, not per file
    // Several folders into one -o each keep their own subfolder, named after
    // the folder: two folders of one name would collide.
    std::map<std::string, std::pair<fs::path, std::string>> folder_names;  // name -> (canonical, as given)
    for (const std::string& raw : inputs) {
        if (!fs::is_directory(raw, ec)) continue;
        ++layout.folder_inputs;
        fs::path canonical = fs::weakly_canonical(raw, ec);
        std::string name = canonical.filename().string();
        auto it = folder_names.find(name);
        if (!output.empty() && it != folder_names.end() && it->second.first != canonical)
            throw UsageError("folders " + it->second.second + " and " + raw + " have the same name '" + name +
                             "', so their files would collide in " + output + "; restore them in separate runs");
        folder_names[name] = {canonical, raw};
    }
    return layout;
}

}  // namespace imr
