#pragma once

namespace imr {
// Parses the command line, runs it, returns the process exit code.
int cli_main(int argc, char** argv);
}  // namespace imr
