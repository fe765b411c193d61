// One file's job, as the planner (plan_jobs.h) makes it and every command
// (restore, degrade, eval) runs it.
#pragma once

#include <string>

namespace imr {

// "-": standard input as an input, standard output as the output.
constexpr const char* kStdio = "-";

struct FileJob {
    std::string input;
    std::string output;  // empty for eval, which writes no files
    std::string error;   // set when planning already failed (missing input, would overwrite an input)
    // What the job's shard is chosen by (shard.h): the output's path relative
    // to the output root, the same in every process of an array whatever
    // order it lists the tree in, and the same for two inputs that would
    // write one output. Also what eval matches a degraded partner by.
    std::string shard_key;
};

}  // namespace imr
