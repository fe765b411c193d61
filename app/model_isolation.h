// Model files are untrusted input, and libhdf5 is not safe on malformed files
// (heap overflows, aborts and endless loops were found by fuzzing it). So the
// HDF5 reader runs in a child process with CPU-time and memory limits and a
// wall-clock timeout; it hands back only the raw attributes and float tensors
// (model_raw.h) through a pipe, which this process checks as it decodes them.
// A crash, hang or memory blow-up of libhdf5 becomes an imr::Error naming the
// file, and never touches this process's memory. The child reads the file
// into memory and confines itself (model_sandbox.h) before libhdf5 parses a
// byte, so a reader taken over by a hostile file can do nothing but answer.
#pragma once

#include <string>

#include "model_raw.h"

namespace imr {

// read_model_hdf5(path) in a sandboxed child process. Throws imr::Error
// starting with the path: the reader's own errors as they are, or what
// happened to the child (stopped by the sandbox, killed by a signal, over its
// CPU or memory limit, timed out). Where the kernel refuses the sandbox, says
// so once on stderr and reads only the bundled models (by SHA-256), unless
// IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1.
RawModel read_model_isolated(const std::string& path);

// The wire format between child and parent (exposed for tests): encode never
// fails; decode throws imr::Error(where + ...) on anything malformed or
// beyond the reader's limits.
std::string encode_raw_model(const RawModel& model);
RawModel decode_raw_model(const std::string& bytes, const std::string& where);

}  // namespace imr
