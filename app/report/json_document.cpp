#include "report/json_document.h"

#include <cmath>

#include "util/printable.h"

namespace imr {

Json json_document() {
    Json doc = Json::object();
    doc["imrestore"] = IMRESTORE_VERSION;
    doc["schema_version"] = kJsonSchemaVersion;
    return doc;
}

namespace {

// One value on one line ("{"a": 1, "b": [2, 3]}"), with a space after ':'
// and ',' as the reports have always had.
void write_inline(const Json& v, std::string& out) {
    switch (v.type()) {
        case Json::value_t::object: {
            out += '{';
            bool first = true;
            for (const auto& [key, value] : v.items()) {
                if (!first) out += ", ";
                first = false;
                out += '"' + json_escape(key) + "\": ";
                write_inline(value, out);
            }
            out += '}';
            return;
        }
        case Json::value_t::array: {
            out += '[';
            for (size_t i = 0; i < v.size(); ++i) {
                if (i) out += ", ";
                write_inline(v[i], out);
            }
            out += ']';
            return;
        }
        case Json::value_t::string:
            out += '"' + json_escape(v.get_ref<const std::string&>()) + '"';
            return;
        case Json::value_t::number_float:
            out += std::isfinite(v.get<double>()) ? v.dump() : "null";
            return;
        default:  // integers, booleans, null
            out += v.dump();
            return;
    }
}

bool is_array_of_objects(const Json& v) {
    if (!v.is_array() || v.empty()) return false;
    for (const Json& e : v)
        if (!e.is_object()) return false;
    return true;
}

}  // namespace

std::string json_line(const Json& document) {
    std::string out;
    write_inline(document, out);
    return out + "\n";
}

std::string json_text(const Json& document) {
    if (!document.is_object()) {
        std::string out;
        write_inline(document, out);
        return out + "\n";
    }
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : document.items()) {
        out += first ? "\n  " : ",\n  ";
        first = false;
        out += '"' + json_escape(key) + "\": ";
        if (is_array_of_objects(value)) {
            out += '[';
            for (size_t i = 0; i < value.size(); ++i) {
                out += i ? ",\n    " : "\n    ";
                write_inline(value[i], out);
            }
            out += "\n  ]";
        } else {
            write_inline(value, out);
        }
    }
    return out + (first ? "}\n" : "\n}\n");
}

}  // namespace imr
