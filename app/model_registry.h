// Where bundled models live and how a -m argument becomes a file path.
#pragma once

#include <string>
#include <vector>

namespace imr {

constexpr const char* kDefaultModel = "denoise";

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
