#include "jobs/shard.h"

#include <cerrno>
#include <cstdlib>

#include "usage_error.h"

namespace imr {

uint64_t fnv1a_64(const std::string& bytes) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

namespace {

// A whole decimal number in [0, 2^31), else -1.
long long parse_count(const std::string& s) {
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    return v <= 0x7fffffff ? v : -1;
}

// A scheduler variable as a number; throws naming it when it is not one.
long long env_number(const EnvLookup& env, const char* name) {
    const char* v = env(name);
    if (!v) throw UsageError(std::string(name) + " is not set, but the other variables of its scheduler are");
    const long long n = parse_count(v);
    if (n < 0) throw UsageError(std::string(name) + "=" + v + ": expected a whole number");
    return n;
}

Shard make_shard(long long index, long long count, const std::string& source, const std::string& what) {
    if (count < 1) throw UsageError(what + ": a shard count of " + std::to_string(count) + "; expected 1 or more");
    if (index >= count)
        throw UsageError(what + ": shard " + std::to_string(index) + " of " + std::to_string(count) +
                         " does not exist (shards count from 0 to " + std::to_string(count - 1) + ")");
    return {int(index), int(count), source};
}

// Slurm job arrays: the task's place in an arithmetic range of ids.
Shard slurm_shard(const EnvLookup& env, const char* id_text) {
    const long long id = env_number(env, "SLURM_ARRAY_TASK_ID");
    const long long min = env_number(env, "SLURM_ARRAY_TASK_MIN"), max = env_number(env, "SLURM_ARRAY_TASK_MAX");
    const long long count = env_number(env, "SLURM_ARRAY_TASK_COUNT");
    const long long step = env("SLURM_ARRAY_TASK_STEP") ? env_number(env, "SLURM_ARRAY_TASK_STEP") : 1;
    const std::string array = "SLURM_ARRAY_TASK_ID=" + std::string(id_text) + " (an array of " + std::to_string(count) +
                              " tasks from " + std::to_string(min) + " to " + std::to_string(max) + ", step " +
                              std::to_string(step) + ")";
    if (step < 1 || count < 1 || min + step * (count - 1) != max || id < min || (id - min) % step != 0)
        throw UsageError(array +
                         ": the array is not an arithmetic range, so its tasks cannot be numbered as shards; "
                         "submit it as --array=A-B or --array=A-B:STEP, or give --shard K/N");
    return make_shard((id - min) / step, count, "SLURM_ARRAY_TASK_ID", array);
}

}  // namespace

Shard parse_shard(const std::string& spec) {
    const size_t slash = spec.find('/');
    const long long k = slash == std::string::npos ? -1 : parse_count(spec.substr(0, slash));
    const long long n = slash == std::string::npos ? -1 : parse_count(spec.substr(slash + 1));
    if (k < 0 || n < 1) throw UsageError("--shard " + spec + ": expected K/N, shard K (from 0) of N, e.g. --shard 0/4");
    return make_shard(k, n, "--shard", "--shard " + spec);
}

Shard resolve_shard(const ShardOptions& o, const EnvLookup& env) {
    if (o.shard_count < 0) throw UsageError("--shard-count " + std::to_string(o.shard_count) + ": expected 1 or more");
    if (!o.shard.empty()) {
        Shard s = parse_shard(o.shard);
        if (o.shard_count && o.shard_count != s.count)
            throw UsageError("--shard " + o.shard + " and --shard-count " + std::to_string(o.shard_count) +
                             " disagree; give one");
        return s;
    }
    // The scheduler's own count must agree with --shard-count, if both are given.
    auto with_count = [&](Shard s, const std::string& count_var) {
        if (o.shard_count && o.shard_count != s.count)
            throw UsageError("--shard-count " + std::to_string(o.shard_count) + " but " + count_var + "=" +
                             std::to_string(s.count));
        return s;
    };
    // Where the scheduler gives only an index, --shard-count says N.
    auto needs_count = [&](const char* var, const std::string& scheduler, const std::string& count_name) {
        const long long index = env_number(env, var);
        const std::string what = std::string(var) + "=" + env(var);
        if (!o.shard_count)
            throw UsageError(what + " (" + scheduler +
                             ") gives this task's index but not how many tasks there "
                             "are: add --shard-count N (" +
                             count_name + ")");
        return make_shard(index, o.shard_count, var, what + " with --shard-count " + std::to_string(o.shard_count));
    };
    if (const char* id = env("SLURM_ARRAY_TASK_ID")) return with_count(slurm_shard(env, id), "SLURM_ARRAY_TASK_COUNT");
    if (env("JOB_COMPLETION_INDEX"))
        return needs_count("JOB_COMPLETION_INDEX", "a Kubernetes Indexed Job", "the Job's completions");
    if (env("AWS_BATCH_JOB_ARRAY_INDEX"))
        return needs_count("AWS_BATCH_JOB_ARRAY_INDEX", "an AWS Batch array job", "the array size");
    if (const char* index = env("BATCH_TASK_INDEX")) {
        const long long k = env_number(env, "BATCH_TASK_INDEX"), n = env_number(env, "BATCH_TASK_COUNT");
        return with_count(make_shard(k, n, "BATCH_TASK_INDEX",
                                     "BATCH_TASK_INDEX=" + std::string(index) +
                                         " of BATCH_TASK_COUNT=" + std::to_string(n) + " (Google Batch)"),
                          "BATCH_TASK_COUNT");
    }
    if (o.shard_count)
        throw UsageError("--shard-count " + std::to_string(o.shard_count) +
                         ": no task index found (JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, ... are not "
                         "set); give --shard K/N");
    return {};
}

bool in_shard(const FileJob& job, const Shard& shard) {
    return shard.count <= 1 || fnv1a_64(job.shard_key) % uint64_t(shard.count) == uint64_t(shard.index);
}

std::vector<FileJob> select_shard(std::vector<FileJob> jobs, const Shard& shard) {
    if (shard.count <= 1) return jobs;
    std::vector<FileJob> mine;
    for (FileJob& j : jobs)
        if (in_shard(j, shard)) mine.push_back(std::move(j));
    return mine;
}

}  // namespace imr
