// The reader child's seccomp filter (model_sandbox.h).
//
// libseccomp rather than a hand-written BPF program: it checks the
// architecture in the filter (a call made through another ABI, i386's int
// 0x80 or x32 numbers on x86-64, is stopped, not misread as a native call),
// compares arguments of 64-bit width correctly, and names system calls for
// the parent's message; it is Debian's libseccomp2, which systemd and
// container runtimes use.
//
// The allow-list was measured: strace -f of `imrestore model NAME` on every
// bundled model and of the test suite's model files (weights/README.md lists
// what the reader child does after the filter goes on).
#include "model_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace imr {

namespace {

int g_result_fd = -1;  // where the SIGSYS handler reports

// A call the filter stopped (SECCOMP_RET_TRAP: the call did not run). Writes
// 'S' and the call's number, then ends the process by SIGSYS: the signal is
// blocked while its handler runs, and SA_RESETHAND has put back the default
// action, so the self-sent SIGSYS kills the process as soon as the handler
// returns. Only async-signal-safe calls, all of them allowed by the filter.
extern "C" void on_stopped_syscall(int, siginfo_t* info, void*) {
    const int32_t number = info->si_syscall;
    char record[1 + sizeof number] = {'S'};
    std::memcpy(record + 1, &number, sizeof number);
    (void)!write(g_result_fd, record, sizeof record);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGSYS);
}

// Every descriptor but result_fd closed; 0, 1 (and 2 unless keep_stderr) on
// /dev/null, so that a message glibc writes before it aborts goes nowhere.
// Returns the result pipe's new number, or -1.
int close_other_descriptors(int result_fd, bool keep_stderr) {
    const int fd = result_fd > 2 ? result_fd : fcntl(result_fd, F_DUPFD, 3);
    if (fd < 0) return -1;
    const int null = open("/dev/null", O_RDWR);
    if (null < 0) return -1;
    for (int stdio = 0; stdio < (keep_stderr ? 2 : 3); ++stdio)
        if (null != stdio && dup2(null, stdio) < 0) return -1;
    if ((fd > 3 && syscall(SYS_close_range, 3u, unsigned(fd - 1), 0u) != 0) ||
        syscall(SYS_close_range, unsigned(fd + 1), ~0u, 0u) != 0) {
        // Kernels before 5.9: one close per possible descriptor.
        rlimit files{};
        getrlimit(RLIMIT_NOFILE, &files);
        for (rlim_t i = 3; i < files.rlim_cur && i < (1u << 20); ++i)
            if (int(i) != fd) close(int(i));
    }
    return fd;
}

// Argument comparisons for a rule (libseccomp's SCMP_A0.. macros are C
// compound literals): argument `arg` equals `value`; or, masked, equals it.
scmp_arg_cmp arg_equals(unsigned arg, scmp_datum_t value) {
    return {arg, SCMP_CMP_EQ, value, 0};
}
scmp_arg_cmp arg_masked_equals(unsigned arg, scmp_datum_t mask, scmp_datum_t value) {
    return {arg, SCMP_CMP_MASKED_EQ, mask, value};
}

// The filter. Default: SECCOMP_RET_TRAP (on_stopped_syscall). Each rule says
// why reading a model needs the call.
std::string install_filter(int result_fd) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
    if (!ctx) return "seccomp_init failed";
    // A call through another ABI ends the process at once, unnamed (its
    // number would mean another call); the kernel's own error code if it
    // refuses the filter, for the message.
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
    auto allow = [&](int call, std::initializer_list<scmp_arg_cmp> args = {}) {
        if (rc == 0) rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, call, unsigned(args.size()), args.begin());
    };
    // Memory (malloc, libhdf5's buffers, std::vector): anonymous mappings
    // only, never executable, so no new code can appear in the process.
    const scmp_arg_cmp no_exec_prot = arg_masked_equals(2, PROT_EXEC, 0);
    allow(SCMP_SYS(brk));
    allow(SCMP_SYS(mmap), {no_exec_prot, arg_masked_equals(3, MAP_ANONYMOUS, MAP_ANONYMOUS)});
    allow(SCMP_SYS(mprotect), {no_exec_prot});
    allow(SCMP_SYS(munmap));
    allow(SCMP_SYS(mremap));
    allow(SCMP_SYS(madvise));
    // The answer, to the pipe; fd 2 is /dev/null (glibc's last words before
    // it aborts) or, in sanitizer builds, the real stderr for their reports.
    for (int fd : {result_fd, 2}) {
        allow(SCMP_SYS(write), {arg_equals(0, unsigned(fd))});
        allow(SCMP_SYS(writev), {arg_equals(0, unsigned(fd))});
    }
    // abort() (libhdf5's assertions, glibc's heap checks) ends the process
    // by SIGABRT sent to itself, as on_stopped_syscall does with SIGSYS; and
    // the handler's return.
    allow(SCMP_SYS(rt_sigprocmask));
    allow(SCMP_SYS(rt_sigreturn));
    allow(SCMP_SYS(getpid));
    allow(SCMP_SYS(gettid));
    allow(SCMP_SYS(tgkill), {arg_equals(0, unsigned(getpid()))});
    // Waits and clocks a C++ runtime may use (uncontended locks never wait;
    // the clocks are normally answered by the vDSO without a system call).
    allow(SCMP_SYS(futex));
    allow(SCMP_SYS(clock_gettime));
    // glibc's qsort asks how much memory the machine has before sorting a
    // large array (glibc 2.36: 1 KiB and more), as libhdf5 1.10 sorts the
    // links of a group written in the v1.8 format with 61 or more stages
    // (what HDF5 2.0's writers make by default). It only reports memory,
    // load and uptime.
    allow(SCMP_SYS(sysinfo));
    allow(SCMP_SYS(exit));
    allow(SCMP_SYS(exit_group));
    if (kSandboxWidenedForSanitizers) {
        // What a sanitizer report needs (measured: strace of a heap overflow
        // in the reader). /proc/self/maps and, in GCC's runtime
        // (libbacktrace), the binaries' symbols: opened read-only, read or
        // mapped readable, never created or written.
        allow(SCMP_SYS(openat), {arg_masked_equals(2, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY)});
        allow(SCMP_SYS(open), {arg_masked_equals(1, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY)});
        allow(SCMP_SYS(mmap), {no_exec_prot, arg_masked_equals(3, MAP_SHARED, 0)});
        allow(SCMP_SYS(fcntl), {arg_equals(1, F_SETFD)});  // libbacktrace marks what it opens close-on-exec
        allow(SCMP_SYS(ioctl), {arg_equals(1, TCGETS)});   // isatty(2): whether to print in color
        for (int call : {SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(lseek), SCMP_SYS(close), SCMP_SYS(fstat),
                         SCMP_SYS(newfstatat), SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(sched_yield)})
            allow(call);
        // The runtime probes whether memory is readable by writing it into
        // a pipe of its own (IsAccessibleMemoryRange; clang's did on the
        // fuzzer's first C++ exception in a reader): new pipes, and writes
        // to any descriptor (the others are /dev/null, stderr, the result
        // pipe and files opened read-only).
        allow(SCMP_SYS(pipe2));
        allow(SCMP_SYS(write));
        allow(SCMP_SYS(sigaltstack));  // the runtime's exit takes down its signal stack
    }
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc == 0 ? "" : std::string("seccomp: ") + std::strerror(-rc);
}

}  // namespace

std::string confine_model_reader(int& result_fd) {
    result_fd = close_other_descriptors(result_fd, kSandboxWidenedForSanitizers);
    if (result_fd < 0) return std::string("cannot close the other file descriptors: ") + std::strerror(errno);
    g_result_fd = result_fd;
    clearenv();
    // No set-uid program could gain privileges from here on; also what lets
    // an unprivileged process install a filter.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs: ") + std::strerror(errno);
    struct sigaction action {};
    action.sa_sigaction = on_stopped_syscall;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSYS, &action, nullptr) != 0) return std::string("sigaction: ") + std::strerror(errno);
    return install_filter(result_fd);
}

std::string seccomp_refusal() {
    static const std::string refusal = [] {
        const pid_t pid = fork();
        if (pid < 0) return std::string("cannot start a process to ask the kernel: ") + std::strerror(errno);
        if (pid == 0) {
            // An empty filter (everything allowed), installed as the reader's is.
            scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
            int rc = ctx ? seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1) : -ENOMEM;
            if (rc == 0) rc = seccomp_load(ctx);
            _exit(rc == 0 ? 0 : std::min(-rc, 255));
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::string();
        return std::string("seccomp: ") +
               (WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the test process died");
    }();
    return refusal;
}

std::string syscall_name(long number) {
    if (number < 0 || number > 4095) return "";  // x86-64 has ~460; x32 numbers (bit 30) are not native
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, int(number));
    if (!name) return "";
    std::string s = name;
    std::free(name);
    return s;
}

}  // namespace imr
