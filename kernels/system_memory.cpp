#include "system_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

namespace imr {

namespace {

constexpr size_t kNoLimit = SIZE_MAX;

size_t machine_available() {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line)) {
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream fields(line.substr(13));
            size_t kib = 0;
            if (fields >> kib) return kib * 1024;
        }
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 0;
}

// A number from a one-line control file; false for "max", garbage or no file.
bool read_bytes(const std::string& file, size_t* value) {
    std::ifstream f(file);
    std::string text;
    if (!(f >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
    try {
        *value = size_t(std::stoull(text));
    } catch (...) {
        return false;
    }
    return true;
}

// limit - usage in `dir` and every folder above it up to `root`, the least.
size_t available_up_the_tree(const std::string& root, std::string dir, const char* limit_name, const char* usage_name) {
    size_t best = kNoLimit;
    for (;;) {
        size_t limit = 0, usage = 0;
        if (read_bytes(dir + "/" + limit_name, &limit) && read_bytes(dir + "/" + usage_name, &usage))
            best = std::min(best, limit > usage ? limit - usage : 0);
        if (dir.size() <= root.size()) break;
        const size_t slash = dir.find_last_of('/');
        if (slash == std::string::npos || slash < root.size()) break;
        dir.resize(slash);
    }
    return best;
}

}  // namespace

size_t cgroup_memory_available(const std::string& proc_self_cgroup, const std::string& cgroup_root) {
    std::istringstream lines(proc_self_cgroup);
    std::string line;
    size_t best = kNoLimit;
    while (std::getline(lines, line)) {
        // "hierarchy-id:controllers:path"; v2 is "0::path", v1 names its controllers.
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        const std::string rel = path == "/" ? std::string() : path;
        if (line.rfind("0::", 0) == 0) {
            best =
                std::min(best, available_up_the_tree(cgroup_root, cgroup_root + rel, "memory.max", "memory.current"));
            continue;
        }
        std::istringstream names(controllers);
        std::string name;
        bool memory = false;
        while (std::getline(names, name, ',')) memory |= name == "memory";
        if (!memory) continue;
        // v1: the memory hierarchy is mounted at ROOT/memory; inside a
        // container the group's own folder is often the mount itself.
        const std::string mount = cgroup_root + "/memory";
        const std::string dir = std::ifstream(mount + rel + "/memory.limit_in_bytes") ? mount + rel : mount;
        best = std::min(best, available_up_the_tree(mount, dir, "memory.limit_in_bytes", "memory.usage_in_bytes"));
    }
    return best;
}

size_t host_memory_available() {
    std::ifstream cgroup("/proc/self/cgroup");
    std::stringstream text;
    text << cgroup.rdbuf();
    return std::min(machine_available(), cgroup_memory_available(text.str(), "/sys/fs/cgroup"));
}

}  // namespace imr
