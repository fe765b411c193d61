// HDF5 model files: the reader that turns a file into a RawModel (run it in a
// child process: model_isolation.h) and the writer of validated models. The
// only place that calls libhdf5.
#pragma once

#include <string>

#include "model_file.h"
#include "model_raw.h"

namespace imr {

// What the reader reads at all, before any layer sees it: a dataset of more
// floats than this, or a file whose datasets hold more in all, is refused.
// It follows the model's parameter limit (model_file.h, 64 M by default and
// overridable), plus room for the biases, so a small file that declares
// huge datasets costs no more memory than the largest model allowed.
unsigned long long max_file_floats();

// Reads `path` without interpreting it. Throws imr::Error starting with the
// path for what makes the whole file unreadable: not HDF5, no 'stages' group,
// stage groups not named 0..N-1, soft or external links, a dataset with
// external raw storage, a virtual layout or filters other than deflate,
// shuffle and fletcher32, sizes beyond the limits above.
RawModel read_model_hdf5(const std::string& path);

// Writes `model` (already validated) to `path`, as is; see write_model_file.
void write_model_hdf5(const std::string& path, const ModelFile& model);

}  // namespace imr
