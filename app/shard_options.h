// --shard K/N and --shard-count N, the same for restore, degrade and eval
// (they share the file loop, jobs/plan_jobs.h; jobs/shard.h says how a file's
// shard is chosen and where K/N come from without the options).
#pragma once

#include "jobs/shard.h"

namespace CLI {
class App;
}

namespace imr {

void add_shard_options(CLI::App* cmd, ShardOptions& o);

// resolve_shard on this process's environment.
Shard shard_from_options(const ShardOptions& o);

}  // namespace imr
