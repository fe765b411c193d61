// The file loop's plan (app/jobs/): the shard a file belongs to, the
// scheduler variables that say which shard a process is, and that N shards
// cover every input exactly once; the names of temporary files; the JSON
// writer every report goes through (app/report/). Planning reads no image,
// so the trees here are files with image names and no image in them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "jobs/plan_jobs.h"
#include "report/json_document.h"
#include "test_util.h"
#include "usage_error.h"
#include "util/temporary_name.h"

namespace imr {
namespace {

using test::ScratchDir;

// The environment as a table.
EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

Shard shard_for(std::map<std::string, std::string> vars, ShardOptions o = {}) {
    return resolve_shard(o, env_of(std::move(vars)));
}

// The UsageError's message of resolve_shard, or "" when it succeeds.
std::string refusal(std::map<std::string, std::string> vars, ShardOptions o = {}) {
    try {
        resolve_shard(o, env_of(std::move(vars)));
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

std::map<std::string, std::string> slurm(int id, int min, int max, int step, int count) {
    return {{"SLURM_ARRAY_TASK_ID", std::to_string(id)},
            {"SLURM_ARRAY_TASK_MIN", std::to_string(min)},
            {"SLURM_ARRAY_TASK_MAX", std::to_string(max)},
            {"SLURM_ARRAY_TASK_STEP", std::to_string(step)},
            {"SLURM_ARRAY_TASK_COUNT", std::to_string(count)}};
}

TEST(Shard, Fnv1a64IsTheFixedPublishedFunction) {
    // The reference values of FNV-1a 64 (Fowler, Noll, Vo; draft-eastlake-fnv).
    EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

TEST(Shard, ParsesKOverN) {
    const Shard s = parse_shard("2/5");
    EXPECT_EQ(s.index, 2);
    EXPECT_EQ(s.count, 5);
    EXPECT_EQ(s.source, "--shard");
    for (const char* bad : {"5/5", "1/0", "-1/4", "1", "a/4", "1/4/2", "", "/4", "1/", "99999999999/4"})
        EXPECT_THROW(parse_shard(bad), UsageError) << bad;
}

TEST(Shard, NoSchedulerMeansEveryFile) {
    const Shard s = shard_for({});
    EXPECT_EQ(s.index, 0);
    EXPECT_EQ(s.count, 1);
    EXPECT_FALSE(s.sharded());
    EXPECT_NE(refusal({}, {"", 4}).find("no task index found"), std::string::npos);
}

TEST(Shard, SlurmArrays) {
    // --array=1-4: ids 1..4 are shards 0..3 of 4.
    for (int id = 1; id <= 4; ++id) {
        const Shard s = shard_for(slurm(id, 1, 4, 1, 4));
        EXPECT_EQ(s.index, id - 1);
        EXPECT_EQ(s.count, 4);
        EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
    }
    // --array=0-30:10: ids 0, 10, 20, 30.
    EXPECT_EQ(shard_for(slurm(20, 0, 30, 10, 4)).index, 2);
    // --array=5-9%2 (at most two at once): the limit changes nothing.
    EXPECT_EQ(shard_for(slurm(9, 5, 9, 1, 5)).index, 4);
    // No STEP variable (older Slurm): step 1.
    auto no_step = slurm(3, 1, 4, 1, 4);
    no_step.erase("SLURM_ARRAY_TASK_STEP");
    EXPECT_EQ(shard_for(no_step).index, 2);
    // --array=1,2,7 is refused by every task: Slurm 22.05 says step 1 for it
    // (tests/slurm_array_test.sh sees it), and no step makes it a range of 3
    // with task 2 in it (step 3 would be 1,4,7: tasks 1 and 7 cannot tell).
    for (int id : {1, 2, 7})
        for (int step : {1, 3, 6}) {
            const std::string why = refusal(slurm(id, 1, 7, step, 3));
            if (step == 3 && id != 2) continue;
            EXPECT_NE(why.find("not an arithmetic range"), std::string::npos) << id << " " << step << ": " << why;
            EXPECT_NE(why.find("--array=A-B"), std::string::npos) << why;
        }
    // A missing or garbled variable is named.
    auto no_count = slurm(1, 1, 4, 1, 4);
    no_count.erase("SLURM_ARRAY_TASK_COUNT");
    EXPECT_NE(refusal(no_count).find("SLURM_ARRAY_TASK_COUNT is not set"), std::string::npos);
    auto garbled = slurm(1, 1, 4, 1, 4);
    garbled["SLURM_ARRAY_TASK_ID"] = "1a";
    EXPECT_NE(refusal(garbled).find("SLURM_ARRAY_TASK_ID=1a: expected a whole number"), std::string::npos);
    // --shard-count must agree with the array; --shard wins over it.
    EXPECT_NE(refusal(slurm(1, 1, 4, 1, 4), {"", 3}).find("SLURM_ARRAY_TASK_COUNT=4"), std::string::npos);
    EXPECT_EQ(shard_for(slurm(1, 1, 4, 1, 4), {"", 4}).count, 4);
    const Shard given = shard_for(slurm(1, 1, 4, 1, 4), {"1/2", 0});
    EXPECT_EQ(given.index, 1);
    EXPECT_EQ(given.count, 2);
    EXPECT_EQ(given.source, "--shard");
}

TEST(Shard, KubernetesAndAwsNeedTheCount) {
    for (const char* var : {"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"}) {
        const Shard s = shard_for({{var, "3"}}, {"", 5});
        EXPECT_EQ(s.index, 3) << var;
        EXPECT_EQ(s.count, 5) << var;
        EXPECT_EQ(s.source, var);
        const std::string why = refusal({{var, "3"}});
        EXPECT_NE(why.find(std::string(var) + "=3"), std::string::npos) << why;
        EXPECT_NE(why.find("--shard-count"), std::string::npos) << why;
        EXPECT_NE(refusal({{var, "5"}}, {"", 5}).find("does not exist"), std::string::npos) << var;
    }
}

TEST(Shard, GoogleBatch) {
    const Shard s = shard_for({{"BATCH_TASK_INDEX", "6"}, {"BATCH_TASK_COUNT", "7"}});
    EXPECT_EQ(s.index, 6);
    EXPECT_EQ(s.count, 7);
    EXPECT_EQ(s.source, "BATCH_TASK_INDEX");
    EXPECT_NE(refusal({{"BATCH_TASK_INDEX", "7"}, {"BATCH_TASK_COUNT", "7"}}).find("does not exist"),
              std::string::npos);
    EXPECT_NE(refusal({{"BATCH_TASK_INDEX", "1"}}).find("BATCH_TASK_COUNT is not set"), std::string::npos);
}

void touch(const std::filesystem::path& p) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p).put('x');
}

// A nested tree of `n` image names in random folders, with random names.
void random_tree(const std::filesystem::path& root, std::mt19937& rng, int n) {
    // Formats every build reads (TIFF and WebP need OpenCV, absent from the GPU host's build).
    const char* exts[] = {".png", ".jpg", ".bmp", ".ppm"};
    std::uniform_int_distribution<int> depth(0, 3), letter('a', 'z'), ext(0, 3);
    for (int i = 0; i < n; ++i) {
        std::filesystem::path p = root;
        for (int d = depth(rng); d > 0; --d) p /= std::string(1, char(letter(rng)));
        std::string name;
        for (int k = 0; k < 6; ++k) name += char(letter(rng));
        touch(p / (name + std::to_string(i) + exts[ext(rng)]));
    }
}

JobRequest request_for(const std::string& in, const std::string& out) {
    JobRequest r;
    r.inputs = {in};
    r.output = out;
    r.recursive = true;
    return r;
}

TEST(Shard, NShardsCoverEveryInputExactlyOnce) {
    unsigned seed;
    std::mt19937 rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ScratchDir dir("shards");
    random_tree(dir.path() / "in", rng, 157);
    const JobRequest request = request_for(dir / "in", dir / "out");
    const PlannedJobs all = plan_jobs(request);
    ASSERT_EQ(all.jobs.size(), 157u);
    for (int n : {1, 2, 3, 4, 7, 31}) {
        std::map<std::string, int> seen;  // input -> times planned over all shards
        size_t largest = 0;
        for (int k = 0; k < n; ++k) {
            const PlannedJobs part = plan_jobs(request, {k, n, "--shard"});
            EXPECT_EQ(part.listed, all.jobs.size());
            largest = std::max(largest, part.jobs.size());
            for (const FileJob& j : part.jobs) {
                EXPECT_TRUE(j.error.empty()) << j.error;
                ++seen[j.input];
            }
        }
        EXPECT_EQ(seen.size(), all.jobs.size()) << n << " shards";
        for (const auto& [input, times] : seen) EXPECT_EQ(times, 1) << input << " in " << n << " shards";
        // The hash spreads them: no shard of a few takes more than twice its share.
        if (n <= 7) EXPECT_LE(largest, 2 * all.jobs.size() / n + 5) << n << " shards";
    }
}

TEST(Shard, TheListingOrderDoesNotMatter) {
    unsigned seed;
    std::mt19937 rng = test::fresh_rng(&seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ScratchDir dir("shard-order");
    random_tree(dir.path() / "in", rng, 60);
    std::vector<FileJob> jobs = plan_jobs(request_for(dir / "in", dir / "out")).jobs;
    for (int k = 0; k < 3; ++k) {
        std::set<std::string> first;
        for (const FileJob& j : select_shard(jobs, {k, 3, "--shard"})) first.insert(j.input);
        std::shuffle(jobs.begin(), jobs.end(), rng);  // another process lists the tree in another order
        std::set<std::string> again;
        for (const FileJob& j : select_shard(jobs, {k, 3, "--shard"})) again.insert(j.input);
        EXPECT_EQ(first, again) << "shard " << k;
    }
    // The key is the output below the output root: the same tree restored
    // from another place, or into another root, splits alike.
    ScratchDir other("shard-order-copy");
    std::filesystem::copy(dir.path() / "in", other.path() / "elsewhere", std::filesystem::copy_options::recursive);
    const std::vector<FileJob> a = plan_jobs(request_for(dir / "in", dir / "out"), {1, 3, "--shard"}).jobs;
    const std::vector<FileJob> b =
        plan_jobs(request_for(other / "elsewhere", other / "results/"), {1, 3, "--shard"}).jobs;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].shard_key, b[i].shard_key);
}

TEST(Shard, CollidingOutputsLandInOneShardAndAreRefusedThere) {
    ScratchDir dir("shard-collide");
    touch(dir.path() / "in/x/photo.png");
    touch(dir.path() / "in/x/photo.jpg");  // both -> out/x/photo.png with --format png
    touch(dir.path() / "in/other.png");
    JobRequest request = request_for(dir / "in", dir / "out");
    request.format = "png";
    for (int n : {2, 3, 5}) {
        int shards_with_photo = 0;
        for (int k = 0; k < n; ++k) {
            int photos = 0, refused = 0;
            for (const FileJob& j : plan_jobs(request, {k, n, "--shard"}).jobs)
                if (j.input.find("photo.") != std::string::npos) {
                    ++photos;
                    refused += j.error.find("is also the output of") != std::string::npos;
                }
            if (photos) {
                ++shards_with_photo;
                EXPECT_EQ(photos, 2) << "shard " << k << "/" << n;
                EXPECT_EQ(refused, 1) << "shard " << k << "/" << n;
            }
        }
        EXPECT_EQ(shards_with_photo, 1) << n << " shards";
    }
}

TEST(Shard, ErrorsOfMissingInputsAreReportedByOneShard) {
    ScratchDir dir("shard-missing");
    touch(dir.path() / "in/a.png");
    JobRequest request;
    request.inputs = {dir / "in/a.png", dir / "in/missing.png"};
    request.output = dir / "out";
    int reported = 0;
    for (int k = 0; k < 4; ++k)
        for (const FileJob& j : plan_jobs(request, {k, 4, "--shard"}).jobs)
            reported += j.error.find("no such file") != std::string::npos;
    EXPECT_EQ(reported, 1);
}

// The listing streams: the first job of a tree of many folders comes after
// one folder's listing, not the whole tree's, and the jobs come in the order
// a sort of the whole list by path gives (files and subfolders together).
TEST(JobStream, GivesTheFirstFileBeforeListingTheRest) {
    ScratchDir dir("stream-lazy");
    constexpr int kFolders = 40, kPerFolder = 5;
    std::vector<std::string> want;
    touch(dir.path() / "in/a.png");   // before the subfolders in name order
    touch(dir.path() / "in/zz.png");  // after them
    for (int d = 0; d < kFolders; ++d)
        for (int f = 0; f < kPerFolder; ++f)
            touch(dir.path() / "in" / ("d" + std::to_string(d)) / (std::to_string(f) + ".png"));
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() / "in"))
        if (e.is_regular_file()) want.push_back(e.path());
    std::sort(want.begin(), want.end(), [](const std::string& a, const std::string& b) {
        return std::filesystem::path(a) < std::filesystem::path(b);
    });
    JobStream stream(request_for(dir / "in", dir / "out"));
    FileJob job;
    ASSERT_TRUE(stream.next(job));
    EXPECT_EQ(job.input, want.front());
    EXPECT_EQ(stream.walk().folders_listed(), 1u) << "the first file waited for more than its folder";
    EXPECT_EQ(stream.listed(), 1u);
    EXPECT_FALSE(stream.finished());
    ASSERT_TRUE(stream.next(job));  // d0/0.png: one more folder listed
    EXPECT_EQ(stream.walk().folders_listed(), 2u);
    std::vector<std::string> got = {want[0], job.input};
    while (stream.next(job)) {
        EXPECT_TRUE(job.error.empty()) << job.error;
        EXPECT_LE(stream.walk().folders_listed(), 2 + (got.size() - 1) / kPerFolder) << job.input;
        got.push_back(job.input);
    }
    EXPECT_TRUE(stream.finished());
    EXPECT_EQ(stream.listed(), want.size());
    EXPECT_EQ(stream.walk().folders_listed(), size_t(kFolders + 1));
    EXPECT_EQ(got, want) << "not the order of the sorted list";
}

// What the checks need from other folders, without holding the list: the
// outputs of one folder input that are the inputs of another (listed later),
// a command-line file whose output a folder's file took first (the same
// input: run once; another input: refused), and the same folder given twice
// (walked once).
TEST(JobStream, ChecksAcrossFoldersWithoutTheWholeList) {
    ScratchDir dir("stream-checks");
    touch(dir.path() / "photos/a.png");
    touch(dir.path() / "photos/b.png");
    touch(dir.path() / "photos.restored/a.png");  // photos' output folder is given as an input too
    JobRequest beside;
    beside.inputs = {dir / "photos", dir / "photos.restored"};
    std::map<std::string, std::string> error;
    for (const FileJob& j : plan_jobs(beside).jobs) error[j.input] = j.error;
    EXPECT_NE(error[dir / "photos/a.png"].find("because it is an input"), std::string::npos)
        << error[dir / "photos/a.png"];
    EXPECT_EQ(error[dir / "photos/b.png"], "");
    EXPECT_EQ(error.size(), 3u);

    touch(dir.path() / "x.png");
    JobRequest mixed = request_for(dir / "photos", dir / "out");
    mixed.inputs.push_back(dir / "x.png");
    mixed.inputs.push_back(dir / "photos/a.png");  // out/a.png, which photos/a.png took first: the same input
    const PlannedJobs plan = plan_jobs(mixed);
    std::vector<std::string> inputs;
    for (const FileJob& j : plan.jobs) {
        inputs.push_back(j.input);
        EXPECT_EQ(j.error, "") << j.input;
    }
    EXPECT_EQ(inputs, (std::vector<std::string>{dir / "photos/a.png", dir / "photos/b.png", dir / "x.png"}));

    JobRequest twice = request_for(dir / "photos", dir / "out");
    twice.inputs.push_back(dir / "photos/");  // the same folder again: walked once
    EXPECT_EQ(plan_jobs(twice).jobs.size(), 2u);

    touch(dir.path() / "other/a.png");  // another file to out/a.png, after the folder's took it
    JobRequest collide = request_for(dir / "photos", dir / "out");
    collide.inputs.push_back(dir / "other/a.png");
    const PlannedJobs c = plan_jobs(collide);
    ASSERT_EQ(c.jobs.size(), 3u);
    EXPECT_NE(c.jobs[2].error.find("is also the output of " + dir / "photos/a.png"), std::string::npos)
        << c.jobs[2].error;
}

TEST(TemporaryName, NamesThisHostAndProcessAndReadsBack) {
    char buf[256] = {};
    ASSERT_EQ(gethostname(buf, sizeof buf - 1), 0);
    std::string host = buf;
    host = host.substr(0, host.find('.'));
    if (host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") ==
            std::string::npos &&
        !host.empty() && host.size() <= 40)
        EXPECT_EQ(this_host(), host);
    const std::string name = temporary_name("photo.png", ".png", 7);
    EXPECT_EQ(name, ".photo.png.tmp-" + this_host() + "-" + std::to_string(getpid()) + "-7.png");
    const auto owner = temporary_owner(name);
    ASSERT_TRUE(owner);
    EXPECT_EQ(owner->host, this_host());
    EXPECT_EQ(owner->pid, getpid());
    // Long names stay below NAME_MAX with the longest host and PID.
    EXPECT_LE(temporary_name(std::string(250, 'x'), ".tiff", 4294967295u).size() - this_host().size() + 40, 255u);

    const auto other = temporary_owner(".a.jpg.tmp-node-b-12-3.jpg");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->host, "node-b");
    EXPECT_EQ(other->pid, 12);
    const auto legacy = temporary_owner(".a.jpg.tmp-12-3.jpg");  // older versions: no host
    ASSERT_TRUE(legacy);
    EXPECT_EQ(legacy->host, "");
    EXPECT_EQ(legacy->pid, 12);
    EXPECT_TRUE(temporary_owner(".imrestore-probe.tmp-h-5-0"));
    for (const char* not_ours : {".notes.tmp", "a.png.tmp-h-1-2", ".a.tmp-", ".a.tmp-h-x-2.png", ".a.tmp-h-1-.png",
                                 ".a.tmp--1-2", ".a.tmp-h-0-2", ".a.tmp-h-99999999999-2", ".tmp-h-1-2"})
        EXPECT_FALSE(temporary_owner(not_ours)) << not_ours;
}

TEST(JsonDocument, VersionedLaidOutAndEscaped) {
    Json doc = json_document();
    doc["files"] = Json::array();
    doc["files"].push_back({{"input", "caf\xe9.png"}, {"psnr", std::numeric_limits<double>::infinity()}});
    doc["files"].push_back({{"input", "a\"b\n"}, {"psnr", 31.25}});
    doc["empty"] = Json::array();
    doc["names"] = {"x", "y"};
    doc["nested"] = {{"k", {{"n", 1}, {"ok", true}, {"none", nullptr}}}};
    const std::string expected = std::string("{\n  \"imrestore\": \"") + IMRESTORE_VERSION +
                                 "\",\n"
                                 "  \"schema_version\": " +
                                 std::to_string(kJsonSchemaVersion) +
                                 ",\n"
                                 "  \"files\": [\n"
                                 "    {\"input\": \"caf\\udce9.png\", \"psnr\": null},\n"
                                 "    {\"input\": \"a\\\"b\\n\", \"psnr\": 31.25}\n"
                                 "  ],\n"
                                 "  \"empty\": [],\n"
                                 "  \"names\": [\"x\", \"y\"],\n"
                                 "  \"nested\": {\"k\": {\"n\": 1, \"ok\": true, \"none\": null}}\n"
                                 "}\n";
    EXPECT_EQ(json_text(doc), expected);
    // One line; valid JSON where the text is UTF-8 (nlohmann reads it back).
    Json line = json_document();
    line["type"] = "file";
    line["value"] = 0.1;
    const std::string text = json_line(line);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
    EXPECT_EQ(Json::parse(text), line);
}

}  // namespace
}  // namespace imr
