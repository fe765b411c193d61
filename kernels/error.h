// The errors of imrestore: every error below the CLI is an imr::Error
// carrying its context ("file or op: what went wrong"); only the CLI decides
// what to print and which exit code. Its own header, so code that only needs
// the error types (image I/O, model files) does not include the op interface.
#pragma once

#include <stdexcept>

namespace imr {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An allocation found too little memory: the caller may retry with less
// (the model runner then splits the image into smaller tiles).
struct OutOfMemory : Error {
    using Error::Error;
};

// A kernel variant forced by a test or benchmark (Backend::force_variant)
// cannot run this shape; the planner would have picked another.
struct NotApplicable : Error {
    using Error::Error;
};

}  // namespace imr
