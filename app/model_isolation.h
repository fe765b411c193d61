// Model files are untrusted input, and libhdf5 is not safe on malformed files
// (heap overflows, aborts and endless loops were found by fuzzing it). So the
// HDF5 reader runs in a child process with CPU-time and memory limits and a
// wall-clock timeout; it hands back only the raw attributes and float tensors
// (model_raw.h) through a pipe, which this process checks as it decodes them.
// A crash, hang or memory blow-up of libhdf5 becomes an imr::Error naming the
// file, and never touches this process's memory.
#pragma once

#include <string>

#include "model_raw.h"

namespace imr {

// read_model_hdf5(path) in a child process. Throws imr::Error starting with
// the path: the reader's own errors as they are, or what happened to the
// child (killed by a signal, over its CPU or memory limit, timed out).
RawModel read_model_isolated(const std::string& path);

// The wire format between child and parent (exposed for tests): encode never
// fails; decode throws imr::Error(where + ...) on anything malformed or
// beyond the reader's limits.
std::string encode_raw_model(const RawModel& model);
RawModel decode_raw_model(const std::string& bytes, const std::string& where);

}  // namespace imr
