// What a command asks of the file loop (plan_jobs.h): its inputs and where
// their outputs go, and the output layout decided from them once.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "image/image_io.h"

namespace imr {

struct JobRequest {
    std::vector<std::string> inputs;  // files, folders, or "-" (kStdio) alone
    std::string output;               // -o: a file, a folder, "-", or empty (beside the inputs)
    bool recursive = false;
    Codec codec = Codec::Auto;
    std::string format;                // of outputs named after their input ("png"), empty: the input's
    std::string suffix = ".restored";  // outputs beside their inputs: NAME<suffix>.EXT, FOLDER<suffix>/
    bool names_outputs = true;         // false (eval): the inputs only; no output is named or checked
};

// Where the outputs go, decided once by output_layout.h's check_request.
struct OutputLayout {
    bool to_stdout = false;      // -o -: one image to standard output
    bool from_stdin = false;     // "-": one image from standard input
    bool one_file = false;       // -o names the one output file
    bool beside = false;         // no -o: each output beside its input
    std::filesystem::path root;  // the output folder of -o DIR, else empty
    int folder_inputs = 0;       // several: each keeps a subfolder of its name in root
};

}  // namespace imr
