// HDF5 model files: the reader that turns a file into a RawModel (run it in a
// child process: model_isolation.h) and the writer of validated models. The
// only place that calls libhdf5.
#pragma once

#include <string>

#include "model_file.h"
#include "model_raw.h"

namespace imr {

// Limits of what the reader reads at all, before any layer sees it: a dataset
// of more floats than this, or a file whose datasets hold more in all, is
// refused (model_file.h has the finer, overridable model limits).
constexpr unsigned long long kMaxDatasetFloats = 1ull << 27;  // 512 MB
constexpr unsigned long long kMaxFileFloats = 1ull << 28;     // 1 GB

// Reads `path` without interpreting it. Throws imr::Error starting with the
// path for what makes the whole file unreadable: not HDF5, no 'stages' group,
// stage groups not named 0..N-1, soft or external links, a dataset with
// external raw storage, a virtual layout or filters other than deflate,
// shuffle and fletcher32, sizes beyond the limits above.
RawModel read_model_hdf5(const std::string& path);

// Writes `model` (already validated) to `path`, as is; see write_model_file.
void write_model_hdf5(const std::string& path, const ModelFile& model);

}  // namespace imr
