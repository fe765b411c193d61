// What running one FileJob gave, for every command's report
// (file_report.h): restored/written, skipped, failed, or not run.
#pragma once

#include <string>
#include <vector>

namespace imr {

struct FileResult {
    // Restored: the command's work on the file is done (degrade: written);
    // NotRun: the run was interrupted first.
    enum class Status { Restored, Skipped, Failed, NotRun };
    std::string input, output;
    Status status = Status::NotRun;
    std::string message;                // why it failed or was skipped
    std::vector<std::string> warnings;  // metadata dropped on reading or writing ("FILE: ICC profile dropped: why")
    int width = 0, height = 0, channels = 0, bit_depth = 0;
    // Restore: its batch's half-precision output was not finite (fp16
    // overflow) and the batch was run again in fp32 (also a warning).
    bool fp32_rerun = false;
    // Restore, a restored file: what the model computed it in ("fp32",
    // "fp16", "bf16"; a 16-bit image under --precision auto: fp32). Empty
    // otherwise.
    std::string precision;
    // Restore with PipelineOptions::jpeg_projection: the output was projected
    // onto its JPEG's quantization cells (image/jpeg_projection.h).
    bool jpeg_projected = false;
    // Restore, a restored file: the input was RGB with R = G = B at every
    // pixel, and the output was made so too (image/neutral_gray.h).
    bool kept_gray = false;
    // A level a model took as an extra input (restore with a model that
    // takes noise_level / jpeg_quality), or that degrade --estimate-noise
    // measured: on the user's scale (noise_level: sigma 0..255;
    // jpeg_quality: Q 1..100).
    struct Level {
        std::string name;    // "noise_level" | "jpeg_quality"
        double value = 0;    // as given, or as estimated
        std::string source;  // "given" | "estimated" (the image's noise) | "jpeg tables" (the file's DQT)
        double used = 0;     // what the model took: value scaled by --strength
    };
    std::vector<Level> levels;
};

}  // namespace imr
