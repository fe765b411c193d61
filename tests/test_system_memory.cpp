// host_memory_available's control-group part on fake /proc/self/cgroup texts
// and cgroup trees (v2 unified, v1 memory controller, limits set on a parent
// group, no limit).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

#include "system_memory.h"
#include "test_util.h"

namespace imr {
namespace {

void put(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
}

TEST(SystemMemory, CgroupV2LimitOnTheGroupOrAnyParent) {
    test::ScratchDir root("cgroup2");
    put(root.path() / "app/job/memory.max", "max");
    put(root.path() / "app/job/memory.current", "100");
    put(root.path() / "app/memory.max", "1000");
    put(root.path() / "app/memory.current", "400");
    EXPECT_EQ(cgroup_memory_available("0::/app/job\n", root.path().string()), 600u);
    put(root.path() / "app/job/memory.max", "300");  // the tighter one wins
    EXPECT_EQ(cgroup_memory_available("0::/app/job\n", root.path().string()), 200u);
    put(root.path() / "app/job/memory.current", "500");  // over the limit: nothing left
    EXPECT_EQ(cgroup_memory_available("0::/app/job\n", root.path().string()), 0u);
}

TEST(SystemMemory, CgroupV1MemoryController) {
    test::ScratchDir root("cgroup1");
    put(root.path() / "memory/docker/abc/memory.limit_in_bytes", "5000");
    put(root.path() / "memory/docker/abc/memory.usage_in_bytes", "1000");
    const std::string proc = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n";
    EXPECT_EQ(cgroup_memory_available(proc, root.path().string()), 4000u);
    // Inside the container the group is the mount itself.
    test::ScratchDir inside("cgroup1-inside");
    put(inside.path() / "memory/memory.limit_in_bytes", "2048");
    put(inside.path() / "memory/memory.usage_in_bytes", "48");
    EXPECT_EQ(cgroup_memory_available("4:memory:/docker/abc\n", inside.path().string()), 2000u);
}

TEST(SystemMemory, NoLimit) {
    test::ScratchDir root("cgroup-none");
    put(root.path() / "memory.max", "max");
    put(root.path() / "memory.current", "100");
    EXPECT_EQ(cgroup_memory_available("0::/\n", root.path().string()), SIZE_MAX);
    EXPECT_EQ(cgroup_memory_available("", root.path().string()), SIZE_MAX);
    EXPECT_EQ(cgroup_memory_available("garbage\n3:cpu:/x\n", root.path().string()), SIZE_MAX);
    EXPECT_GT(host_memory_available(), 0u);
}

}  // namespace
}  // namespace imr
