// The syscall sandbox of the model reader child (model_isolation.cpp): once
// the file's bytes are in memory and libhdf5 is set up, the child confines
// itself with PR_SET_NO_NEW_PRIVS and a seccomp-BPF filter that allows only
// what parsing needs (memory without executable mappings, writing to the
// result pipe, exiting); any other system call stops it by SIGSYS before the
// call runs, after it has written the call's number to the pipe ('S' + a
// 32-bit number) so the parent can name it. Threat model: weights/README.md.
#pragma once

#include <string>

namespace imr {

// Sanitizer builds (IMRESTORE_SANITIZE, IMRESTORE_FUZZ) also let the child
// open files read-only, read them and map them readable, keep its stderr and
// ask whether it is a terminal, make pipes and write to any descriptor: a
// sanitizer's report reads /proc/self/maps and (GCC's runtime, through
// libbacktrace) the binaries' symbols before it prints, and the runtime
// probes memory by writing it into a pipe of its own. They still may not write files, run programs (so clang's runtime,
// which would start llvm-symbolizer, is stopped mid-report unless run with
// symbolize=0), open sockets or start processes.
#ifdef IMRESTORE_SANITIZER_BUILD
constexpr bool kSandboxWidenedForSanitizers = true;
#else
constexpr bool kSandboxWidenedForSanitizers = false;
#endif

// In the reader child: moves result_fd above the standard streams (it is
// updated), closes every other file descriptor (stdin, stdout and, except in
// sanitizer builds, stderr become /dev/null), clears the environment, then
// installs the filter. Returns "" once confined, or
// why the kernel refused (an old kernel, a container that forbids seccomp):
// the child must then not read the file (model_isolation.cpp decides).
std::string confine_model_reader(int& result_fd);

// Whether this kernel lets a process install a seccomp filter: "" if so,
// otherwise why not. Asked once per process, of a throwaway child that reads
// no model file, so its answer can be trusted where a reader child's claim
// that the kernel refused its sandbox cannot.
std::string seccomp_refusal();

// The name of system call `number` on this architecture, from a child the
// filter stopped ("openat"); "" for a number out of range or unknown. The
// number comes from an untrusted process: it is only looked up.
std::string syscall_name(long number);

}  // namespace imr
