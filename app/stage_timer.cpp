#include "stage_timer.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

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

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one.
size_t utf8_length(const std::string& s, size_t i) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
    return n;
}
}  // namespace

// File names are bytes, JSON is UTF-8: bytes that are not valid UTF-8 become
// \udcXX escapes (below), so the report always parses and the names round-trip.
std::string json_escape(const std::string& in) {
    std::string out;
    for (size_t i = 0; i < in.size();) {
        unsigned char c = in[i];
        size_t n = utf8_length(in, i);
        if (n == 0) {
            // A byte that is not UTF-8 (file names are bytes): a lone surrogate
            // U+DC80..U+DCFF, as Python's surrogateescape writes it, so a reader
            // gets the original bytes back (os.fsencode(json.loads(...)["input"])).
            static const char* hex = "0123456789abcdef";
            out += "\\udc";
            out += hex[c >> 4];
            out += hex[c & 15];
            ++i;
            continue;
        }
        if (n > 1) {
            out.append(in, i, n);
            i += n;
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += char(c);
                }
        }
        ++i;
    }
    return out;
}

std::string StageTimer::json() const {
    std::ostringstream s;
    s << "{";
    for (size_t i = 0; i < rows_.size(); ++i) {
        const Row& r = rows_[i];
        s << (i ? ", " : "") << "\"" << json_escape(r.name) << "\": {\"total_ms\": " << r.total_ms()
          << ", \"count\": " << r.samples_ms.size() << ", \"min_ms\": " << r.min_ms()
          << ", \"median_ms\": " << r.median_ms() << "}";
    }
    s << "}";
    return s.str();
}

}  // namespace imr
