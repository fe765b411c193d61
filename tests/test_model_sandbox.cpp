// The model reader's syscall sandbox (app/model_sandbox.h): a reader that a
// hostile file has taken over can do nothing but answer through its pipe.
// A stand-in for such a reader (tests/sandbox/hostile_hdf5.cpp, preloaded
// into the built imrestore) tries each forbidden action after the sandbox
// went on; the tool must stop it and say so, exit 2. Kernels that refuse
// seccomp are imitated by running imrestore under a filter that refuses it.
#include <errno.h>
#include <gtest/gtest.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "bundled_model_digests.h"
#include "cli_run.h"
#include "model_file.h"
#include "model_sandbox.h"
#include "test_util.h"
#include "util/sha256.h"

namespace imr {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::ScratchDir;
using test::slurp;

// ------------------------------------------------------------------ SHA-256

TEST(Sha256, FipsTestVectors) {
    // FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA256_2.pdf") and the
    // million-'a' vector.
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // Lengths around the padding boundary (55, 56, 64, 119 bytes: one or
    // two final blocks), from Python's hashlib.
    EXPECT_EQ(sha256_hex(std::string(55, 'x')), "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
    EXPECT_EQ(sha256_hex(std::string(56, 'x')), "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
    EXPECT_EQ(sha256_hex(std::string(64, 'x')), "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
    EXPECT_EQ(sha256_hex(std::string(119, 'x')), "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c");
}

TEST(Sha256, PiecesGiveTheSameDigestAsTheWhole) {
    std::mt19937 rng(std::random_device{}());
    std::string data(5000, '\0');
    for (char& c : data) c = char(rng());
    const std::string whole = sha256_hex(data);
    for (int trial = 0; trial < 20; ++trial) {
        Sha256 s;
        size_t at = 0;
        while (at < data.size()) {
            const size_t n = std::min(data.size() - at, size_t(rng() % 130));
            s.update(data.data() + at, n);
            at += n;
        }
        EXPECT_EQ(s.hex_digest(), whole) << "trial " << trial;
    }
    data[4321] ^= 1;
    EXPECT_NE(sha256_hex(data), whole);
}

TEST(Sha256, BundledModelDigestsAreTheFiles) {
    // The table is CMake's file(SHA256) at configure time: an independent
    // implementation of the same function.
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(IMRESTORE_SOURCE_WEIGHTS))
        if (e.path().extension() == ".h5") ++files;
    ASSERT_EQ(std::size(kBundledModelDigests), files);
    for (const BundledModelDigest& m : kBundledModelDigests) {
        const std::string path = std::string(IMRESTORE_SOURCE_WEIGHTS) + "/" + m.name + ".h5";
        EXPECT_EQ(sha256_hex(slurp(path)), m.sha256) << path;
    }
}

// ------------------------------------------------------------------ the reader, taken over

TEST(Sandbox, SyscallNumbersFromTheChildAreOnlyLookedUp) {
    EXPECT_EQ(syscall_name(SYS_execve), "execve");
    EXPECT_EQ(syscall_name(SYS_openat), "openat");
    for (long bad : {-1L, 4096L, 0x40000000L | SYS_getpid, 1L << 40}) EXPECT_EQ(syscall_name(bad), "") << bad;
}

struct ToolRun {
    int code = -1;
    std::string err;
};

// `imrestore ARGS` with environment assignments `env`, through /bin/sh;
// `refuse_seccomp`: in a process where seccomp is refused as on a kernel
// built without it (filters stack, so imrestore cannot install its own);
// where the system itself already refuses it, the run is left as it is.
ToolRun run_imrestore(const std::string& env, const std::string& args, const ScratchDir& dir,
                      bool refuse_seccomp = false) {
    const std::string err = dir / "stderr.txt";
    const std::string command = env + " " + q(IMRESTORE_EXE) + " " + args + " >/dev/null 2>" + q(err);
    refuse_seccomp = refuse_seccomp && seccomp_refusal().empty();
    const pid_t pid = fork();
    if (pid == 0) {
        if (refuse_seccomp) {
            scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
            if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(seccomp), 0) != 0 ||
                seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1,
                                 SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP)) != 0 ||
                seccomp_load(ctx) != 0)
                _exit(126);
        }
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
}

// The environment that preloads the stand-in for a taken-over libhdf5.
std::string hostile(const std::string& action, const std::string& argument = "") {
    std::string env = "LD_PRELOAD=" + q(IMRESTORE_HOSTILE_HDF5) + " IMRESTORE_TEST_HOSTILE_ACTION=" + action +
                      " IMRESTORE_TEST_HOSTILE_ARGUMENT=" + q(argument);
#ifdef IMRESTORE_SANITIZER_BUILD
    // The preloaded library comes before the sanitizer runtime.
    env += " ASAN_OPTIONS=\"${ASAN_OPTIONS}:verify_asan_link_order=0\"";
#endif
    return env;
}

std::string stopped_message(const std::string& path, const std::string& call) {
    return "imrestore: " + path + ": the model file tried something a model file never needs" +
           (call.empty() ? "" : " (system call '" + call + "')") +
           ", and the sandbox stopped the HDF5 reader: a hostile or damaged model file\n";
}

// Whether this kernel runs 32-bit system calls (int 0x80) at all: without
// IA32 emulation the instruction faults before any filter sees it.
bool kernel_runs_i386_calls() {
    const pid_t pid = fork();
    if (pid == 0) {
        long result = 20;  // i386 getpid
        asm volatile("int $0x80" : "+a"(result) : : "memory");
        _exit(result == getpid() ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(Sandbox, EveryForbiddenActionStopsTheReaderAndTheToolSaysWhich) {
    if (const std::string refusal = seccomp_refusal(); !refusal.empty())
        GTEST_SKIP() << "this kernel refuses seccomp (" << refusal << "): there is no sandbox to test";
    ScratchDir dir("sandbox-actions");
    const std::string model = dir / "user-model.h5";  // a copy outside the bundled folders: a user's model
    fs::copy_file(std::string(IMRESTORE_SOURCE_WEIGHTS) + "/sharpen.h5", model);
    const std::string written = dir / "written.txt", secret = dir / "secret.txt";
    std::ofstream(secret) << "not for a model file";
    struct Case {
        std::string action, argument;
        std::set<std::string> calls;  // the call it is stopped at ({""}: unnamed)
    };
    std::vector<Case> cases = {
        {"write-file", written, {"openat"}},
        {"exec", "", {"execve"}},
        {"connect", "", {"socket"}},
        {"map-exec", "", {"mmap"}},
        {"protect-exec", "", {"mprotect"}},
        {"fork", "", {"clone", "clone3"}},
        {"ptrace", "", {"ptrace"}},
        {"kill", "", {"kill"}},
        {"change-sigsys-handler", "", {"rt_sigaction"}},
        {"x32-abi", "", {""}},
    };
    if (!kSandboxWidenedForSanitizers) {
        cases.push_back({"read-file", secret, {"openat"}});
        cases.push_back({"write-stdout", "", {"write"}});
    }
    if (kernel_runs_i386_calls()) cases.push_back({"i386-abi", "", {""}});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.action);
        const ToolRun r = run_imrestore(hostile(c.action, c.argument), "model " + q(model), dir);
        EXPECT_EQ(r.code, 2) << r.err;
        bool named = false;
        for (const std::string& call : c.calls) named |= r.err == stopped_message(model, call);
        EXPECT_TRUE(named) << r.err;
    }
    EXPECT_FALSE(fs::exists(written)) << "the stopped reader created a file";
    // A reader that aborts (libhdf5's assertions, glibc's heap checks) is
    // reported as the crash it is: the filter lets abort() end the process.
    // (A sanitizer build reports the double free itself and exits 1.)
    for (const std::string action : {"abort", "double-free"}) {
        if (kSandboxWidenedForSanitizers && action == "double-free") continue;
        const ToolRun r = run_imrestore(hostile(action), "model " + q(model), dir);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(r.err,
                  "imrestore: " + model +
                      ": the HDF5 library crashed (Aborted) reading this file: a damaged or hostile model file\n")
            << action;
    }
    // A reader that claims the kernel refused its sandbox (as one on such a
    // kernel does) is not believed: the kernel is asked again, and nothing
    // is read without the sandbox, even where the user allows that.
    for (const std::string env : {"", "IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1 "}) {
        const ToolRun r = run_imrestore(env + hostile("claim-refused"), "model " + q(model), dir);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(r.err,
                  "imrestore: " + model + ": the model reader could not confine itself (]0;ownedseccomp: refused)\n");
    }
    // The stand-in itself works: without an action, the model loads.
    EXPECT_EQ(run_imrestore(hostile("none"), "model " + q(model), dir).code, 0);
    if (kSandboxWidenedForSanitizers) {
        // Sanitizer builds let a report read files (model_sandbox.h), and
        // report a heap overflow in the confined reader.
        EXPECT_EQ(run_imrestore(hostile("read-file", secret), "model " + q(model), dir).code, 0);
        const ToolRun r = run_imrestore(hostile("heap-overflow"), "model " + q(model), dir);
        EXPECT_EQ(r.code, 2);
        EXPECT_NE(r.err.find("ERROR: AddressSanitizer: heap-buffer-overflow"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("imrestore: " + model + ": the model reader stopped without an answer"), std::string::npos)
            << r.err;
    }
}

// ------------------------------------------------------------------ kernels that refuse seccomp

TEST(Sandbox, WhereSeccompIsRefusedOnlyBundledModelsAreRead) {
    ScratchDir dir("sandbox-refused");
    // A bundled model, by name and as a copy elsewhere (known by its digest).
    ToolRun r = run_imrestore("", "models", dir, true);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string warning = "imrestore: warning: this system refuses the model reader's sandbox";
    EXPECT_EQ(r.err.find(warning), 0u) << r.err;
    EXPECT_EQ(r.err.find(warning, 1), std::string::npos) << "said more than once: " << r.err;
    const std::string copy = dir / "copy.h5";
    fs::copy_file(std::string(IMRESTORE_SOURCE_WEIGHTS) + "/denoise.h5", copy);
    EXPECT_EQ(run_imrestore("", "model " + q(copy), dir, true).code, 0);
    // A model of the user's own, and a bundled one with a byte appended: not
    // read, unless the user allows it.
    std::mt19937 rng(7);
    const std::string own = dir / "own.h5";
    write_model_file(own, test::small_model(rng));
    const std::string changed = dir / "changed.h5";
    fs::copy_file(copy, changed);
    std::ofstream(changed, std::ios::app) << '\0';
    for (const std::string& path : {own, changed}) {
        SCOPED_TRACE(path);
        r = run_imrestore("", "model " + q(path), dir, true);
        EXPECT_EQ(r.code, 2);
        EXPECT_NE(r.err.find("imrestore: " + path +
                             ": not read: this system refuses the sandbox that model files are read in ("),
                  std::string::npos)
            << r.err;
        EXPECT_NE(r.err.find("IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1"), std::string::npos) << r.err;
        r = run_imrestore("IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1", "model " + q(path), dir, true);
        EXPECT_EQ(r.code, 0) << r.err;
        EXPECT_EQ(run_imrestore("IMRESTORE_ALLOW_UNSANDBOXED_MODELS=yes", "model " + q(path), dir, true).code, 2);
    }
    // Where seccomp works, the same files load, without a warning.
    if (!seccomp_refusal().empty()) return;
    r = run_imrestore("", "model " + q(own), dir);
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace imr
