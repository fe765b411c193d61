// The LayerReader that layers read a model file through: one group (the root
// or a stage) as the isolated reader delivered it (model_raw.h). Every
// failure names `where` ("FILE: stage N (op)"), the attribute or dataset,
// and what was expected.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "layers/layer.h"
#include "model_raw.h"

namespace imr {

class RawLayerReader : public LayerReader {
public:
    RawLayerReader(const RawGroup& group, std::string where, int format_version)
        : group_(group), where_(std::move(where)), version_(format_version) {}
    const std::string& where() const override { return where_; }
    Tensor tensor(const char* name, int rank) override {
        auto it = group_.datasets.find(name);
        if (it == group_.datasets.end()) throw Error(where_ + ": dataset '" + name + "' is missing");
        const RawEntry& e = it->second;
        if (e.kind != RawEntry::Kind::Tensor) throw Error(where_ + ": " + e.text);
        if (e.shape.size() != size_t(rank))
            throw Error(where_ + ": dataset '" + name + "': expected rank " + std::to_string(rank) + ", found rank " +
                        std::to_string(e.shape.size()) + " " + dims_string(e.shape));
        return {e.shape, e.data};
    }
    bool has_tensor(const char* name) override { return group_.datasets.count(name) > 0; }
    bool has_attribute(const char* name) override { return group_.attributes.count(name) > 0; }
    std::string string_attribute(const char* name) override {
        const RawEntry& e = attribute(name);
        if (e.kind != RawEntry::Kind::String) throw Error(where_ + ": attribute '" + name + "' must be a string");
        return e.text;
    }
    long long int_attribute(const char* name) override {
        const RawEntry& e = attribute(name);
        if (e.kind != RawEntry::Kind::Int) throw Error(where_ + ": attribute '" + name + "' must be an integer");
        return e.integer;
    }
    double float_attribute(const char* name) override {
        const RawEntry& e = attribute(name);
        if (e.kind != RawEntry::Kind::Int && e.kind != RawEntry::Kind::Float)
            throw Error(where_ + ": attribute '" + name + "' must be a number");
        const double v = e.kind == RawEntry::Kind::Int ? double(e.integer) : e.real;
        // The ops compute in float32: a value it cannot hold would become an
        // infinity there, so it is refused here, for every layer alike.
        if (!std::isfinite(v) || std::abs(v) > double(std::numeric_limits<float>::max())) {
            std::ostringstream found;
            found << v;
            throw Error(where_ + ": attribute '" + name + "': expected a finite number within float32's range, found " +
                        found.str());
        }
        return v;
    }
    int format_version() const override { return version_; }

private:
    const RawEntry& attribute(const char* name) const {
        auto it = group_.attributes.find(name);
        if (it == group_.attributes.end()) throw Error(where_ + ": attribute '" + name + "' is missing");
        if (it->second.kind == RawEntry::Kind::Invalid) throw Error(where_ + ": " + it->second.text);
        return it->second;
    }

    const RawGroup& group_;
    std::string where_;
    int version_;
};

}  // namespace imr
