#include "printable.h"

#include <cstdio>

namespace imr {

namespace {

void hex(std::string& out, unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
}

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t utf8_length(const std::string& s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    if (n == 2 && c < 0xC2) return 0;  // overlong
    return n;
}

// Appends the two-character C escape of newline, tab, carriage return and
// backslash (the same in printable text and in JSON); false for other bytes.
bool append_short_escape(std::string& out, unsigned char c) {
    switch (c) {
        case '\n':
            out += "\\n";
            return true;
        case '\t':
            out += "\\t";
            return true;
        case '\r':
            out += "\\r";
            return true;
        case '\\':
            out += "\\\\";
            return true;
    }
    return false;
}

}  // namespace

std::string printable(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = utf8_length(s, i);
        if (n == 0) {  // not UTF-8: show the byte
            hex(out, c);
            ++i;
        } else if (n == 1 && (c < 0x20 || c == 0x7F || c == '\\')) {
            if (!append_short_escape(out, c)) hex(out, c);
            ++i;
        } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {  // C1: U+0080..U+009F
            hex(out, c);
            hex(out, static_cast<unsigned char>(s[i + 1]));
            i += 2;
        } else {
            out.append(s, i, n);
            i += n;
        }
    }
    return out;
}

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
        if (c == '"') {
            out += "\\\"";
        } else if (!append_short_escape(out, c)) {
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

}  // namespace imr
