// Every setting of a model run, in one immutable value: the CLI fills it once,
// the ModelRunner keeps it, and each compute lane's runner (on a sibling
// backend, app/pipeline/compute_lanes.cpp) is made with a copy of the whole,
// so no setting can differ between lanes. The device string is parsed here
// (app/), not in kernels/, which only makes the backend it names.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"

namespace imr {

struct ModelFile;

// What the convolutions compute in. fp32: the CUDA-core and CPU kernels
// (bit-identical to every earlier version). tf32, bf16, fp16: tensor cores
// (activations stored in the 16-bit types between layers). auto: the
// fastest precision the model file records as validated for this kind of
// input, else fp32.
enum class Precision { Fp32, Tf32, Bf16, Fp16, Auto };
const char* precision_name(Precision p);  // "fp32", ..., "auto"
// "fp32" | "tf32" | "bf16" | "fp16" | "auto"; throws imr::Error naming the value otherwise.
Precision parse_precision(const std::string& s);
// "fp32|tf32|bf16|fp16|auto", for help texts.
const char* precision_choices();

// --kernel OP=VARIANT: the op by its name (op_name) and the variant's name,
// which the backend checks when it is forced (Backend::force_variant lists
// an op's variants when the name is not one of them). Throws imr::Error
// naming the value, and listing the ops when OP is none of them.
std::pair<Op, std::string> parse_forced_variant(const std::string& s);

struct RunnerOptions {
    std::string device = "auto";  // "auto" | "cpu" | "cuda" | "cuda:N" | "cuda:N,M,..." | "cuda:all"
    int threads = 0;              // the CPU backend's threads (0: one per core); a device ignores it
    Precision precision = Precision::Auto;
    int max_tile = 0;  // largest tile side in pixels (0: as large as memory allows)
    int batch = 4;     // images of one size the pipeline hands the runner at once
    // Kernel variants to run instead of the planner's picks (Backend::force_variant).
    std::vector<std::pair<Op, std::string>> forced_variants;
    // The most backend memory one pass may hold, in bytes (0: 70% of what
    // is free on a device; on the host 256 MiB, or ModelRunner::
    // efficient_pass_bytes for a wide receptive field); larger images are tiled.
    size_t max_memory = 0;
    // --tta: every pass averaged over the model's outputs on the 8 flips and
    // transposes of its input, each turned back (test-time augmentation, as
    // waifu2x's and Real-ESRGAN's -x): 8x the compute, for the accuracy a
    // model gains from seeing each image 8 ways.
    bool tta = false;
    // The value of each extra input a model may take (ModelFile::extra_inputs:
    // extra_input_value's), by name.
    std::vector<std::pair<std::string, float>> extra_inputs;
};

// An extra input's value as the model takes it, from the level as users give
// it: "noise_level" the sigma on the 0-255 scale / 255, "jpeg_quality" the
// quality 1..100 / 100 (weights/README.md, format v3's extra_inputs).
float extra_input_value(const std::string& name, double level);

// The backend `options.device` names: "cpu", "cuda", "cuda:N" or "auto" (the
// first GPU if usable, else the CPU; *note then says why the CPU was chosen);
// for a list of GPUs ("cuda:0,2", "cuda:all"), the first one's: the others'
// are made by the pipeline's compute lanes (device_workers). Throws
// imr::Error for an unknown or unusable device.
std::unique_ptr<Backend> make_backend(const RunnerOptions& options, std::string* note = nullptr);

// The devices `device` names, one per compute worker: "cuda:0,2" gives
// {"cuda:0", "cuda:2"} (a device may appear twice: two workers on one GPU),
// "cuda:all" every GPU the process sees ("cuda:0" ... "cuda:N-1", as
// CUDA_VISIBLE_DEVICES numbers them), "cuda:N" itself; "auto", "cpu" and
// "cuda" are one worker, themselves. Throws imr::Error for a malformed list,
// or one naming a device that is not present.
std::vector<std::string> device_workers(const std::string& device);
// Throws imr::Error where `device` names several workers: `command` (eval,
// --validate-precision) measures on one device.
void require_one_device(const std::string& device, const std::string& command);

// The precision a run of `model` on `backend` computes in, for the requested
// one: auto resolves to the first of the model file's validated_precisions
// the backend has conv2d kernels in, else fp32 (always on the CPU); bf16 and
// fp16 where the backend has conv2d in that dtype (Backend::supports: the
// tensor cores of sm_80 and later). Throws imr::Error for one it cannot run
// (bf16, fp16 on the CPU; tf32, which has no kernels yet), never falling
// back silently.
Precision resolve_precision(Precision requested, const ModelFile& model, const Backend& backend);

}  // namespace imr
