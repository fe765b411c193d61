// Per-stage timing, the one utility every part of the run reports through:
// named stages in the order first seen, each a list of samples in ms.
// The pipeline adds host steady-clock times (read, convert, write); the model
// runner adds backend times (CUDA events on its lane's stream); batches timed
// on compute lanes are merged in.
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace imr {

class StageTimer {
public:
    struct Row {
        std::string name;
        std::vector<double> samples_ms;
        double megapixels = 0;  // pixels processed over all samples, for MP/s
        double total_ms() const;
        double min_ms() const;
        double median_ms() const;
    };

    void add(const std::string& stage, double ms, double megapixels = 0);
    // Every sample of `other` (a batch timed on another thread) added here.
    void merge(const StageTimer& other);
    const std::vector<Row>& rows() const { return rows_; }
    double total_ms() const;
    bool empty() const { return rows_.empty(); }

    // A table: stage, total ms, share, per image ms, MP/s of `megapixels`
    // (what the run processed); or, with per_sample (--bench), min and median
    // per call and MP/s from each row's own megapixels.
    std::string table(const std::string& title, double megapixels, int images, bool per_sample = false) const;
    // {"stage": {"total_ms":..,"count":..,"min_ms":..,"median_ms":..}, ...}
    // (for a report/json_document.h document)
    nlohmann::ordered_json json() const;

private:
    std::vector<Row> rows_;
};

// Adds the time from construction to destruction (or stop()) to a timer.
class ScopedStage {
public:
    ScopedStage(StageTimer* timer, std::string stage)
        : timer_(timer), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
    ~ScopedStage() { stop(); }
    void stop() {
        if (!timer_) return;
        timer_->add(stage_,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
        timer_ = nullptr;
    }

private:
    StageTimer* timer_;
    std::string stage_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace imr
