// `imrestore model NAME --validate-precision PHOTOS [--write OUT.h5]`: measures
// whether a model may run in half precision (issue 16's bound) and records
// the precisions that pass in the model file, where --precision auto finds
// them (ModelFile::validated_precisions).
//
// On the GPU, for each clean photo of the folder and each degradation of the
// model's task (task_standard_degradations), the model runs in fp32, fp16 and
// bf16. A half precision passes when, over all of them:
//   - >= 99.9% of the 8-bit channel values equal fp32's or are one level apart,
//   - none is more than 3 levels apart,
//   - the mean PSNR against the clean photos is within 0.02 dB of fp32's at
//     every degradation,
//   - no batch had to be computed again in fp32 (a non-finite output).
// The passing ones are recorded fastest first (model time over all runs;
// fp16 ahead of bf16 unless bf16 is more than 5% faster: timing noise must
// not pick the less accurate one). A precision no stage computes in is not
// run, and --write refuses to overwrite the model being validated.
#pragma once

#include <string>

namespace imr {

struct ValidatePrecisionOptions {
    std::string model;   // bundled name or .h5 path
    std::string photos;  // folder of clean photos
    std::string write;   // where to write the model with the result ("": nowhere)
    std::string device = "auto";
};

// Prints the figures on stdout; writes o.write only when some half precision
// passes. Returns 0 when one passes, 1 when none does (nothing written);
// throws imr::Error for what stops it (no GPU with half kernels, no photos,
// unreadable model).
int run_validate_precision(const ValidatePrecisionOptions& o);

}  // namespace imr
