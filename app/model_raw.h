// A model file's contents as read, before any of it is interpreted: the
// attributes and float32 datasets of the root and of every stage group. The
// HDF5 reader (model_hdf5.h) fills it in a child process (model_isolation.h);
// load_model_file interprets it, in this process, through the layers' own
// load functions. Everything the reader could not take (a float64 dataset, an
// attribute of another type, a link to another file) is kept as an Invalid
// entry with the reason, so a layer that asks for it gets a precise error and
// one that does not ask is not bothered.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace imr {

struct RawEntry {
    enum class Kind : unsigned char { String, Int, Tensor, Other, Float, Invalid };  // Invalid last (the wire check)
    Kind kind = Kind::Invalid;
    std::string text;  // String: the value; Invalid: why it could not be read ("expected float32, found float64")
    long long integer = 0;
    std::vector<unsigned long long> shape;  // Tensor
    std::vector<float> data;                // Tensor
    bool half = false;                      // Tensor: stored as IEEE float16 (format v4), widened exactly
    double real = 0;                        // Float
};

struct RawGroup {
    std::map<std::string, RawEntry> attributes, datasets;
};

struct RawModel {
    RawGroup root;
    bool has_stages = false;       // the root holds a group 'stages'
    std::vector<RawGroup> stages;  // stages/0 .. stages/N-1, in order
};

}  // namespace imr
