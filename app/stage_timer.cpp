#include "stage_timer.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "report/json_document.h"

namespace imr {

double StageTimer::Row::total_ms() const {
    return std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0);
}

double StageTimer::Row::min_ms() const {
    return samples_ms.empty() ? 0.0 : *std::min_element(samples_ms.begin(), samples_ms.end());
}

double StageTimer::Row::median_ms() const {
    if (samples_ms.empty()) return 0.0;
    std::vector<double> s = samples_ms;
    std::sort(s.begin(), s.end());
    size_t mid = s.size() / 2;
    return s.size() % 2 ? s[mid] : 0.5 * (s[mid - 1] + s[mid]);
}

void StageTimer::add(const std::string& stage, double ms, double megapixels) {
    for (Row& r : rows_)
        if (r.name == stage) {
            r.samples_ms.push_back(ms);
            r.megapixels += megapixels;
            return;
        }
    rows_.push_back({stage, {ms}, megapixels});
}

void StageTimer::merge(const StageTimer& other) {
    for (const Row& o : other.rows_) {
        auto it = std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.name == o.name; });
        if (it == rows_.end()) {
            rows_.push_back(o);
            continue;
        }
        it->samples_ms.insert(it->samples_ms.end(), o.samples_ms.begin(), o.samples_ms.end());
        it->megapixels += o.megapixels;
    }
}

double StageTimer::total_ms() const {
    double t = 0;
    for (const Row& r : rows_) t += r.total_ms();
    return t;
}

std::string StageTimer::table(const std::string& title, double megapixels, int images, bool per_sample) const {
    std::ostringstream s;
    char line[256];
    s << title << "\n";
    if (per_sample)
        std::snprintf(line, sizeof line, "  %-44s %10s %10s %6s %10s\n", "stage", "min ms", "median ms", "runs",
                      "MP/s");
    else
        std::snprintf(line, sizeof line, "  %-32s %10s %7s %10s %10s\n", "stage", "total ms", "share", "ms/image",
                      "MP/s");
    s << line;
    double total = total_ms();
    for (const Row& r : rows_) {
        double ms = per_sample ? r.median_ms() : r.total_ms();
        double mp = per_sample ? r.megapixels / double(r.samples_ms.size()) : megapixels;
        double mps = ms > 0 ? mp / (ms / 1e3) : 0.0;
        if (per_sample)
            std::snprintf(line, sizeof line, "  %-44s %10.3f %10.3f %6zu %10.1f\n", r.name.c_str(), r.min_ms(), ms,
                          r.samples_ms.size(), mps);
        else
            std::snprintf(line, sizeof line, "  %-32s %10.2f %6.1f%% %10.2f %10.1f\n", r.name.c_str(), ms,
                          total > 0 ? 100.0 * ms / total : 0.0, images ? ms / images : 0.0, mps);
        s << line;
    }
    if (!per_sample) {
        std::snprintf(line, sizeof line, "  %-32s %10.2f %7s %10.2f %10.1f\n", "total", total, "",
                      images ? total / images : 0.0, total > 0 ? megapixels / (total / 1e3) : 0.0);
        s << line;
    }
    return s.str();
}

nlohmann::ordered_json StageTimer::json() const {
    Json stages = Json::object();
    for (const Row& r : rows_)
        stages[r.name] = {{"total_ms", r.total_ms()},
                          {"count", r.samples_ms.size()},
                          {"min_ms", r.min_ms()},
                          {"median_ms", r.median_ms()}};
    return stages;
}

}  // namespace imr
