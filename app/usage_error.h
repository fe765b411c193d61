// A command line that cannot work: a bad option value, or options and inputs
// that do not go together. The CLI (app/cli.cpp) prints it as every error
// that stops a run, then where the options are documented. Here rather than
// in error.h, which holds the errors of the kernels as well.
#pragma once

#include "error.h"

namespace imr {

struct UsageError : Error {
    using Error::Error;
};

}  // namespace imr
