#include "eval/baselines.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <sstream>

#include "error.h"
#include "eval/metrics.h"

#ifdef IMRESTORE_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/photo.hpp>
#endif

namespace imr {

const std::vector<std::string>& all_baseline_names() {
    static const std::vector<std::string> names = {"gaussian", "bilateral", "nlmeans", "unsharp"};
    return names;
}

std::vector<std::string> default_baselines(const Degradation& known) {
    if (!known.any() || !known.mix.empty()) return all_baseline_names();  // unknown, or a different one per image
    std::vector<std::string> out;
    if (known.noise > 0 || known.jpeg > 0) out = {"gaussian", "bilateral"};
    if (known.noise > 0) out.push_back("nlmeans");
    if (known.blur > 0) out.push_back("unsharp");
    return out;
}

#ifndef IMRESTORE_WITH_OPENCV

bool baselines_available() {
    return false;
}
std::string baselines_unavailable_reason() {
    return "this build has no OpenCV (-DIMRESTORE_WITH_OPENCV=OFF), whose filters the classical baselines are";
}
BaselineResult run_baseline(const std::string& name, const std::vector<Image>&, const std::vector<Image>&,
                            const Degradation&, int) {
    throw Error("baseline " + name + ": " + baselines_unavailable_reason());
}

#else

bool baselines_available() {
    return true;
}
std::string baselines_unavailable_reason() {
    return "";
}

namespace {

// One point of a sweep: its label and the filter with that setting. Filters
// take and return 8-bit RGB (or gray) cv::Mats in RGB order.
struct Setting {
    std::string label;
    std::function<cv::Mat(const cv::Mat&)> apply;
};

constexpr int kSweepCrop = 256;  // side of the centre crops nlmeans is swept on

std::string num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

cv::Mat to_mat(const Image& im) {
    cv::Mat m(im.height, im.width, im.channels == 1 ? CV_8UC1 : CV_8UC3);
    std::copy_n(im.data<uint8_t>(), im.sample_count(), m.data);  // 8-bit, as the filters take it
    return m;
}

Image to_image(const cv::Mat& m) {
    Image im;
    im.width = m.cols, im.height = m.rows, im.channels = m.channels(), im.bit_depth = 8;
    cv::Mat c = m.isContinuous() ? m : m.clone();
    im.allocate();
    std::copy_n(c.data, im.sample_count(), im.data<uint8_t>());
    return im;
}

// The grids: a handful of points each, spaced to cover the training range of
// each degradation (noise sigma 0-55, JPEG q 8-60, blur 0.4-2.2). Small on
// purpose: nlmeans costs about a second per megapixel and setting.
std::vector<Setting> settings_for(const std::string& name, const Degradation& known, std::string& method) {
    std::vector<Setting> s;
    if (name == "gaussian") {
        method = "cv::GaussianBlur, border reflect-101";
        for (double sigma : {0.5, 0.75, 1.0, 1.5, 2.0, 3.0})
            s.push_back({"sigma " + num(sigma), [sigma](const cv::Mat& in) {
                             cv::Mat out;
                             cv::GaussianBlur(in, out, cv::Size(0, 0), sigma, sigma, cv::BORDER_REFLECT_101);
                             return out;
                         }});
    } else if (name == "bilateral") {
        // The color sigma decides what counts as an edge; the neighbourhood
        // (9 pixels, spatial sigma 3) is OpenCV's suggestion for heavy noise.
        method = "cv::bilateralFilter, d 9, sigmaSpace 3";
        for (double sc : {20.0, 40.0, 60.0, 80.0, 110.0, 150.0, 200.0})
            s.push_back({"sigmaColor " + num(sc), [sc](const cv::Mat& in) {
                             cv::Mat out;
                             cv::bilateralFilter(in, out, 9, sc, 3.0);
                             return out;
                         }});
    } else if (name == "nlmeans") {
        // h relative to the noise sigma when it is known (its best lies near
        // 0.5-1 sigma), else a grid over the training range.
        method = "cv::fastNlMeansDenoisingColored (gray: fastNlMeansDenoising), h = hColor, windows 7/21";
        std::vector<double> hs;
        if (known.noise > 0)
            for (double f : {0.5, 0.65, 0.8, 1.0}) hs.push_back(std::max(1.0, std::round(known.noise * f)));
        else
            hs = {5, 10, 15, 20, 30};
        for (double h : hs)
            s.push_back({"h " + num(h), [h](const cv::Mat& in) {
                             cv::Mat out;
                             if (in.channels() == 1) {
                                 cv::fastNlMeansDenoising(in, out, float(h), 7, 21);
                                 return out;
                             }
                             cv::Mat bgr;  // its Lab conversion expects BGR
                             cv::cvtColor(in, bgr, cv::COLOR_RGB2BGR);
                             cv::fastNlMeansDenoisingColored(bgr, out, float(h), float(h), 7, 21);
                             cv::cvtColor(out, out, cv::COLOR_BGR2RGB);
                             return out;
                         }});
    } else if (name == "unsharp") {
        method = "x + amount * (x - GaussianBlur(x, sigma)), float, rounded once";
        for (double sigma : {1.0, 2.0})
            for (double amount : {0.5, 1.0, 2.0, 3.0, 5.0})
                s.push_back({"sigma " + num(sigma) + " amount " + num(amount), [sigma, amount](const cv::Mat& in) {
                                 cv::Mat f, blurred, out;
                                 in.convertTo(f, CV_32F);
                                 cv::GaussianBlur(f, blurred, cv::Size(0, 0), sigma, sigma, cv::BORDER_REFLECT_101);
                                 cv::addWeighted(f, 1.0 + amount, blurred, -amount, 0.0, f);
                                 f.convertTo(out, CV_8U);  // rounds and saturates
                                 return out;
                             }});
    } else {
        std::string known_names;
        for (const std::string& n : all_baseline_names()) known_names += " " + n;
        throw Error("baseline '" + name + "': unknown (known:" + known_names + ")");
    }
    return s;
}

// OpenCV's threads off while we run images in parallel ourselves (nested
// pools would oversubscribe the cores); restored afterwards.
class OpenCvSingleThreaded {
public:
    OpenCvSingleThreaded() : saved_(cv::getNumThreads()) { cv::setNumThreads(1); }
    ~OpenCvSingleThreaded() { cv::setNumThreads(saved_); }

private:
    int saved_;
};

}  // namespace

BaselineResult run_baseline(const std::string& name, const std::vector<Image>& clean,
                            const std::vector<Image>& degraded, const Degradation& known, int threads) {
    auto start = std::chrono::steady_clock::now();
    BaselineResult r;
    r.name = name;
    const std::vector<Setting> settings = settings_for(name, known, r.method);
    if (clean.size() != degraded.size()) throw Error("baseline " + name + ": clean and degraded counts differ");
    const int n = int(clean.size()), m = int(settings.size());
    if (n == 0) throw Error("baseline " + name + ": no images");
    std::vector<cv::Mat> in(n);
    for (int i = 0; i < n; ++i) {
        check_comparable(clean[i], degraded[i], "baseline " + name);
        in[i] = to_mat(degraded[i]);
    }
    // Non-local means costs ~2 s per megapixel and setting on one core (the
    // other filters ~0.05 s): its sweep runs on centre crops, and only the
    // chosen h on the whole images, so 14 photos of 1 MP take ~20 s on 2 cores
    // instead of a minute.
    const bool crop_sweep = name == "nlmeans";
    r.swept_on =
        crop_sweep ? std::to_string(kSweepCrop) + "x" + std::to_string(kSweepCrop) + " centre crops" : "whole images";
    std::vector<cv::Mat> sweep_in(n);
    std::vector<Image> sweep_clean(crop_sweep ? n : 0);
    for (int i = 0; i < n; ++i) {
        if (!crop_sweep) {
            sweep_in[i] = in[i];
            continue;
        }
        const int w = std::min(kSweepCrop, in[i].cols), h = std::min(kSweepCrop, in[i].rows);
        const cv::Rect roi((in[i].cols - w) / 2, (in[i].rows - h) / 2, w, h);
        sweep_in[i] = in[i](roi).clone();
        sweep_clean[i] = to_image(to_mat(clean[i])(roi));
    }
    // The team size first: with OpenCV's OpenMP backend, cv::setNumThreads(1)
    // also sets OpenMP's default for this thread to 1.
    const int team = threads > 0 ? threads : omp_get_max_threads();
    OpenCvSingleThreaded single;

    // The sweep: PSNR only (SSIM costs as much as a cheap filter), every
    // (setting, image) pair a task, largest images spread by dynamic scheduling.
    std::vector<double> psnr(size_t(n) * m);
    std::vector<std::string> errors(size_t(n) * m);
#pragma omp parallel for schedule(dynamic) num_threads(team)
    for (int t = 0; t < n * m; ++t) {
        const int s = t / n, i = t % n;
        try {
            psnr[t] = psnr_8bit(crop_sweep ? sweep_clean[i] : clean[i], to_image(settings[s].apply(sweep_in[i])));
        } catch (const std::exception& e) {  // no exception may leave an OpenMP region
            errors[t] = e.what();
        }
    }
    for (const std::string& e : errors)
        if (!e.empty()) throw Error("baseline " + name + ": " + e);

    int best = 0;
    double best_mean = -1;
    for (int s = 0; s < m; ++s) {
        double sum = 0;
        for (int i = 0; i < n; ++i) sum += psnr[size_t(s) * n + i];
        r.sweep.push_back({settings[s].label, sum / n});
        if (sum / n > best_mean) best_mean = sum / n, best = s;
    }
    r.chosen = settings[best].label;
    r.at_grid_edge = m > 1 && (best == 0 || best == m - 1);

    // The chosen setting once more on the whole images, now with SSIM
    // (cheaper than keeping every setting's output of every image).
    r.psnr.assign(psnr.begin() + size_t(best) * n, psnr.begin() + size_t(best + 1) * n);
    r.ssim.assign(n, 0);
#pragma omp parallel for schedule(dynamic) num_threads(team)
    for (int i = 0; i < n; ++i) {
        try {
            const Image out = to_image(settings[best].apply(in[i]));
            if (crop_sweep) r.psnr[i] = psnr_8bit(clean[i], out);
            r.ssim[i] = ssim_8bit(clean[i], out);
        } catch (const std::exception& e) {
            errors[i] = e.what();
        }
    }
    for (const std::string& e : errors)
        if (!e.empty()) throw Error("baseline " + name + ": " + e);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

#endif

}  // namespace imr
