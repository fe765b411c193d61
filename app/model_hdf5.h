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

// The largest model file the reader takes into memory: every float the
// reader allows, stored uncompressed, plus 64 MiB of HDF5 metadata.
unsigned long long max_model_file_bytes();

// The whole file, read into memory. Throws imr::Error("PATH: why") when it
// cannot be read or is larger than max_model_file_bytes().
std::string read_model_file_bytes(const std::string& path);

// Sets libhdf5 up to read file images in this process: initialized, plugin
// loading off (an unknown filter is refused, never loaded from
// HDF5_PLUGIN_PATH), the in-memory file driver registered. The reader child
// calls it before its sandbox goes on (model_sandbox.h): from then on,
// reading a file image needs no system call but memory management.
void prepare_model_hdf5_reader();

// Reads a model file from `bytes`, its whole contents, without interpreting
// it; opened through a read-only in-memory driver, so libhdf5 opens, locks
// and stats no file. `path` starts the messages. Throws imr::Error for what
// makes the whole file unreadable: not HDF5, no 'stages' group, stage groups
// not named 0..N-1, soft or external links, a dataset with external raw
// storage, a virtual layout or filters other than deflate, shuffle and
// fletcher32, sizes beyond the limits above.
RawModel read_model_hdf5_image(const std::string& bytes, const std::string& path);

// read_model_file_bytes + the above, in this process (tests).
RawModel read_model_hdf5(const std::string& path);

// Writes `model` (already validated) to `path`, as is; see write_model_file.
void write_model_hdf5(const std::string& path, const ModelFile& model);

}  // namespace imr
