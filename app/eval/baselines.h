// Classical restorations for `imrestore eval` to stand next to the model, so
// its numbers mean something: OpenCV's Gaussian blur, bilateral filter and
// non-local means (noise, JPEG), and unsharp masking (blur). Each filter's
// parameter is swept over a small grid and ONE setting is chosen for the
// whole set, the one with the best mean PSNR. That choice is made on the
// images being evaluated (an oracle, which flatters the baselines); the
// report says so and which setting won.
//
// They need OpenCV's imgproc and photo modules: in a build without OpenCV
// baselines_available() is false and eval runs without them.
#pragma once

#include <string>
#include <vector>

#include "eval/degradations.h"
#include "image/image_io.h"

namespace imr {

bool baselines_available();
// Why there are none in this build (empty when there are).
std::string baselines_unavailable_reason();

// "gaussian", "bilateral", "nlmeans", "unsharp", in that order.
const std::vector<std::string>& all_baseline_names();
// The ones that fit a degradation: noise -> gaussian, bilateral, nlmeans;
// jpeg -> gaussian, bilateral; blur -> unsharp. Nothing known (given
// degraded files): all four.
std::vector<std::string> default_baselines(const Degradation& known);

struct BaselineResult {
    std::string name;           // "gaussian"
    std::string method;         // how it is computed, for the report
    std::string chosen;         // the winning setting, "sigma 1.5"
    bool at_grid_edge = false;  // the winner is the first or last setting: a wider grid might do better
    struct Point {
        std::string setting;
        double mean_psnr = 0;
    };
    std::vector<Point> sweep;        // every setting tried, in order
    std::string swept_on;            // "whole images", or crops where a whole sweep would be slow
    std::vector<double> psnr, ssim;  // per image, with the chosen setting
    double seconds = 0;              // wall time of the sweep and the final run
};

// clean[i] and degraded[i]: 8-bit, color channels only (gray or RGB), the
// same size and channels. `known` shapes the nlmeans grid (relative to the
// noise sigma when known). Runs the images in parallel on `threads` threads
// (0: all cores), OpenCV's own threading off meanwhile. Throws imr::Error for
// an unknown name or a build without OpenCV.
BaselineResult run_baseline(const std::string& name, const std::vector<Image>& clean,
                            const std::vector<Image>& degraded, const Degradation& known, int threads = 0);

}  // namespace imr
