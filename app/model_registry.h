// Where bundled models live and how a -m argument becomes a file path.
#pragma once

#include <string>
#include <vector>

namespace imr {

// The model a run without -m uses: the best bundled denoiser within the
// device's budget (issue 18: 100 ms of GPU compute, 60 s on 2 CPU cores per
// 12 MP photo). On a GPU the large U-Net; on the CPU, where it would take
// 59 s in one pass of 8.6 GiB (10.3 GB resident), and 677 s in the passes
// of the 1 GB bound (its 572-pixel field makes them compute 11.6 times the
// photo's pixels), the small one (34.5 s, 0.3-0.5 dB below it).
constexpr const char* kDefaultModel = "denoise-unet";
constexpr const char* kDefaultCpuModel = "denoise-unet-s";

// How the model of a run was chosen, for its report.
struct ModelChoice {
    std::string name;         // a bundled name or a path
    std::string selected_by;  // "-m", "default" (a GPU's), "cpu default"
    std::string note;         // said once where the CPU's default differs from a GPU's; else empty
};
// `given` (empty: -m was not given) on a backend of host memory or not.
ModelChoice choose_model(const std::string& given, bool on_cpu);
// The help text of -m, wherever a command takes one (the defaults above).
std::string model_option_help();

// Folders searched for bundled models, in order: each entry of
// $IMRESTORE_MODEL_PATH (colon-separated), <exe>/../share/imrestore/models
// (installed), the install prefix's models, and the source tree's weights/.
std::vector<std::string> model_search_dirs();

struct BundledModel {
    std::string name;  // file stem: "denoise" for denoise.h5
    std::string path;
};
// Every *.h5 in the search folders; a name found twice is listed once (first wins).
std::vector<BundledModel> list_bundled_models();

// A path (anything with a '/' or ending in .h5) is returned as is; a bare name
// is looked up as NAME.h5 in the search folders. Throws imr::Error listing the
// bundled names when nothing matches.
std::string resolve_model(const std::string& name_or_path);

}  // namespace imr
