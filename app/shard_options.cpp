#include "shard_options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

namespace imr {

void add_shard_options(CLI::App* cmd, ShardOptions& o) {
    cmd->add_option("--shard", o.shard,
                    "Run only shard K (from 0) of N: the files whose output path below the output folder hashes "
                    "to K, so N processes (K = 0..N-1) cover every file once; default: from a Slurm, Kubernetes, "
                    "AWS Batch or Google Batch array's variables")
        ->type_name("K/N");
    cmd->add_option("--shard-count", o.shard_count,
                    "How many shards, where the scheduler gives only this task's index (Kubernetes "
                    "JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX)")
        ->check(CLI::Range(1, 1 << 30))
        ->type_name("N");
}

Shard shard_from_options(const ShardOptions& o) {
    return resolve_shard(o, [](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

}  // namespace imr
