// Runs the built imrestore binary from a test (tests/test_cli.cpp,
// tests/test_eval.cpp): the target defines IMRESTORE_EXE, its path.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"

namespace imr::test {

struct RunResult {
    int code = -1;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs imrestore with `args` (already shell-quoted where needed), in folder
// `cwd` if given, with the environment assignments `env` ("A=1 B=2") if
// given; stdout and stderr go through files in `dir`.
inline RunResult imrestore(const std::string& args, const ScratchDir& dir, const std::string& cwd = "",
                           const std::string& env = "") {
    std::string out = dir / "stdout.txt", err = dir / "stderr.txt";
    std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + (env.empty() ? "" : "env " + env + " ") + "'" +
                      IMRESTORE_EXE + "' " + args + " >'" + out + "' 2>'" + err + "'";
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// Single-quotes a path for the shell.
inline std::string q(const std::string& s) {
    return "'" + s + "'";
}

}  // namespace imr::test
