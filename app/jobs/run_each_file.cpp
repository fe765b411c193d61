#include "jobs/run_each_file.h"

#include <filesystem>
#include <new>

namespace imr {

namespace fs = std::filesystem;

namespace {

FileResult run_one(const FileJob& job, bool force, const FileWork& work) {
    FileResult r;
    r.input = job.input, r.output = job.output;
    r.status = FileResult::Status::Failed;
    try {
        if (!job.error.empty()) {
            r.message = job.error;
            return r;
        }
        std::error_code ec;
        if (!force && !job.output.empty() && job.output != kStdio && fs::exists(job.output, ec)) {
            r.status = FileResult::Status::Skipped;
            r.message = job.output + ": exists (--force replaces it)";
            return r;
        }
        work(job, r);
        r.status = FileResult::Status::Restored;
    } catch (const std::exception& e) {
        const std::string m = dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory" : e.what();
        const bool named = m.rfind(job.input, 0) == 0 || (!job.output.empty() && m.rfind(job.output, 0) == 0);
        r.message = named ? m : job.input + ": " + m;
    }
    return r;
}

}  // namespace

std::vector<FileResult> run_each_file(const std::vector<FileJob>& jobs, bool force, const FileWork& work,
                                      const FileDone& done) {
    std::vector<FileResult> results(jobs.size());
    size_t finished = 0;
    // Files in parallel: decoding, the work and encoding are independent per
    // file (degrade's noise depends only on the seed and the file's name).
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < jobs.size(); ++i) {
        results[i] = run_one(jobs[i], force, work);
#pragma omp critical(run_each_file_done)
        {
            ++finished;
            if (done) done(finished, jobs.size(), results[i]);
        }
    }
    return results;
}

}  // namespace imr
