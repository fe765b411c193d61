// How much host memory this process may still use: the machine's available
// memory, or less where a control group (v2 memory.max, or v1
// memory.limit_in_bytes, of the process's group or any group above it)
// limits it. Under a limit the kernel OOM-kills a process that passes it, so
// the model runner and the pipeline plan within this number instead.
#pragma once

#include <cstddef>
#include <string>

namespace imr {

size_t host_memory_available();

// The control-group part, from the text of /proc/self/cgroup and the folder
// where the cgroup file systems are mounted (/sys/fs/cgroup); SIZE_MAX when
// no limit applies. Exposed for tests, which give it a fake tree.
size_t cgroup_memory_available(const std::string& proc_self_cgroup, const std::string& cgroup_root);

}  // namespace imr
