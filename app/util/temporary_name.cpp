#include "util/temporary_name.h"

#include <unistd.h>

#include <cctype>

namespace imr {

const std::string& this_host() {
    static const std::string host = [] {
        char buf[256] = {};
        std::string h = ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
        h = h.substr(0, h.find('.'));
        if (h.size() > 40) h.resize(40);
        for (char& c : h)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
        return h.empty() ? std::string("localhost") : h;
    }();
    return host;
}

std::string temporary_name(std::string name, const std::string& ext, unsigned n) {
    if (name.size() > 160) name.resize(160);
    return "." + name + ".tmp-" + this_host() + "-" + std::to_string(::getpid()) + "-" + std::to_string(n) + ext;
}

namespace {

// The digits of s ending just before `end` (s[start, end)): their value, or -1.
long long trailing_number(const std::string& s, size_t start, size_t end) {
    if (end <= start || end - start > 10) return -1;
    long long v = 0;
    for (size_t i = start; i < end; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

}  // namespace

std::optional<TemporaryOwner> temporary_owner(const std::string& name) {
    if (name.size() < 8 || name[0] != '.') return std::nullopt;
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || at == 0) return std::nullopt;
    // "HOST-PID-N" or "PID-N", up to the extension's dot (host names here have none).
    const size_t start = at + 5;
    const size_t end = std::min(name.find('.', start), name.size());
    const std::string tag = name.substr(start, end - start);
    const size_t last = tag.rfind('-');
    if (last == std::string::npos || trailing_number(tag, last + 1, tag.size()) < 0) return std::nullopt;
    const size_t before = last == 0 ? std::string::npos : tag.rfind('-', last - 1);
    const size_t pid_start = before == std::string::npos ? 0 : before + 1;
    const long long pid = trailing_number(tag, pid_start, last);
    if (pid <= 0 || pid > 0x7fffffff) return std::nullopt;
    TemporaryOwner owner;
    owner.pid = pid_t(pid);
    if (before != std::string::npos) {
        owner.host = tag.substr(0, before);
        if (owner.host.empty()) return std::nullopt;
    }
    return owner;
}

}  // namespace imr
