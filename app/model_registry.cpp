#include "model_registry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "error.h"

namespace imr {

namespace fs = std::filesystem;

namespace {
std::string exe_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}
}  // namespace

std::vector<std::string> model_search_dirs() {
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("IMRESTORE_MODEL_PATH")) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(':', start);
            if (end == std::string::npos) end = list.size();
            if (end > start) dirs.push_back(list.substr(start, end - start));
            start = end + 1;
        }
    }
    std::string exe = exe_dir();
    if (!exe.empty()) dirs.push_back(exe + "/../share/imrestore/models");
    dirs.push_back(IMRESTORE_INSTALL_WEIGHTS);
    dirs.push_back(IMRESTORE_SOURCE_WEIGHTS);
    return dirs;
}

std::vector<BundledModel> list_bundled_models() {
    std::vector<BundledModel> models;
    std::set<std::string> seen;
    for (const std::string& dir : model_search_dirs()) {
        std::error_code ec;
        std::vector<BundledModel> here;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            if (entry.path().extension() != ".h5") continue;
            std::string name = entry.path().stem().string();
            if (seen.insert(name).second) here.push_back({name, entry.path().lexically_normal().string()});
        }
        std::sort(here.begin(), here.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
        models.insert(models.end(), here.begin(), here.end());
    }
    return models;
}

std::string resolve_model(const std::string& name_or_path) {
    bool is_path = name_or_path.find('/') != std::string::npos ||
                   (name_or_path.size() > 3 && name_or_path.compare(name_or_path.size() - 3, 3, ".h5") == 0);
    if (is_path) return name_or_path;
    std::string known;
    for (const BundledModel& m : list_bundled_models()) {
        if (m.name == name_or_path) return m.path;
        known += (known.empty() ? "" : ", ") + m.name;
    }
    throw Error("model '" + name_or_path + "': no such bundled model (bundled: " +
                (known.empty() ? "none found" : known) + "; or give a path to an .h5 file)");
}

std::string model_option_help() {
    return std::string("Bundled model name or path to a model .h5 file (default: ") + kDefaultModel + " on a GPU, " +
           kDefaultCpuModel + " on the CPU)";
}

ModelChoice choose_model(const std::string& given, bool on_cpu) {
    if (!given.empty()) return {given, "-m", ""};
    if (!on_cpu) return {kDefaultModel, "default", ""};
    return {
        kDefaultCpuModel, "cpu default",
        std::string("no -m: on the CPU the default model is ") + kDefaultCpuModel + " (" + kDefaultModel +
            ", a GPU's default, takes about 20 times as long here, or twice as long in one pass given --max-memory 9G "
            "and 13 GB free; -m " +
            kDefaultModel + " runs it anyway)"};
}

}  // namespace imr
