// Planning, last step: this process's share of the files, so that N
// independent processes (the tasks of a Slurm job array, a Kubernetes
// Indexed Job, an AWS or Google Batch array) cover every input exactly once
// without talking to each other.
//
// A job belongs to shard FNV-1a-64(shard_key) mod N, shard_key being the
// output's path relative to the output root (FileJob::shard_key): it does
// not depend on the order a process lists the tree in, and two inputs that
// would write the same output land in the same shard, where the planner
// refuses the second as it would in one process. FNV-1a 64 (offset basis
// 14695981039346656037, prime 1099511628211, over the key's bytes) is fixed
// here, unlike std::hash, so every build and every machine splits alike.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "jobs/file_job.h"

namespace imr {

struct Shard {
    int index = 0;  // K, counted from 0
    int count = 1;  // N; 1: every file
    // Where K/N came from: "--shard", or the scheduler's variables
    // ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", ...); empty: not sharded.
    std::string source;
    bool sharded() const { return count > 1 || !source.empty(); }
};

// What the command line says: --shard K/N (empty: not given) and
// --shard-count N (0: not given).
struct ShardOptions {
    std::string shard;
    int shard_count = 0;
};

uint64_t fnv1a_64(const std::string& bytes);

// K of --shard K/N; throws UsageError for anything but 0 <= K < N.
Shard parse_shard(const std::string& spec);

// The environment variable lookup: getenv, or a table in the tests.
using EnvLookup = std::function<const char*(const char*)>;

// --shard K/N if given; else the first scheduler whose variables are set:
//   Slurm job array: K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP,
//     N = SLURM_ARRAY_TASK_COUNT; refused unless the array is an arithmetic
//     range (MIN + STEP * (COUNT - 1) == MAX: --array=1-4 or 0-30:10, not 1,2,7);
//   Kubernetes Indexed Job: K = JOB_COMPLETION_INDEX, N = --shard-count;
//   AWS Batch array: K = AWS_BATCH_JOB_ARRAY_INDEX, N = --shard-count;
//   Google Batch: K = BATCH_TASK_INDEX, N = BATCH_TASK_COUNT;
// else not sharded (0/1). --shard-count is needed where the scheduler gives
// no count and must agree where it does. Throws UsageError naming the
// variables for what does not fit.
Shard resolve_shard(const ShardOptions& options, const EnvLookup& env);

// Whether `job` is one of `shard`'s.
bool in_shard(const FileJob& job, const Shard& shard);

// The jobs of `shard`, in their order.
std::vector<FileJob> select_shard(std::vector<FileJob> jobs, const Shard& shard);

}  // namespace imr
