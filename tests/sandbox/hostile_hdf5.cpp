// A stand-in for a libhdf5 that a hostile model file has taken over
// (tests/test_model_sandbox.cpp): preloaded into imrestore (LD_PRELOAD), its
// H5Fopen, which only the reader child calls and only once its sandbox is
// on, first tries what IMRESTORE_TEST_HOSTILE_ACTION names, then opens the
// file as the real one does. The environment is read when the library is
// loaded, in the parent: the child's own is cleared before the sandbox. Its
// pipe() notes the result pipe the parent makes for the child.
#include <dlfcn.h>
#include <errno.h>  // program_invocation_name
#include <fcntl.h>
#include <hdf5.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

using H5FopenFn = hid_t (*)(const char*, unsigned, hid_t);
H5FopenFn g_real_open = nullptr;
// Plain arrays: this library's constructor may run before its C++ globals
// are constructed.
char g_action[64], g_argument[4096];

// The write end of the last pipe imrestore's own code made: the reader's
// result pipe. (A sanitizer runtime makes pipes of its own, to probe memory.)
int g_result_pipe = -1;
char* volatile g_kept = nullptr;

__attribute__((constructor)) void load() {
    g_real_open = reinterpret_cast<H5FopenFn>(dlsym(RTLD_NEXT, "H5Fopen"));
    if (const char* a = std::getenv("IMRESTORE_TEST_HOSTILE_ACTION")) std::strncpy(g_action, a, sizeof g_action - 1);
    if (const char* a = std::getenv("IMRESTORE_TEST_HOSTILE_ARGUMENT"))
        std::strncpy(g_argument, a, sizeof g_argument - 1);
}

void attempt(const char* name) {
    const std::string_view action = name;
    if (action == "read-file") {
        (void)!open(g_argument, O_RDONLY);
    } else if (action == "write-file") {
        (void)!open(g_argument, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    } else if (action == "exec") {
        execl("/bin/true", "true", static_cast<char*>(nullptr));
    } else if (action == "connect") {
        const int s = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(9);
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void)!connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to);
    } else if (action == "map-exec") {
        (void)!mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    } else if (action == "protect-exec") {
        void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        (void)!mprotect(page, 4096, PROT_READ | PROT_EXEC);
    } else if (action == "fork") {
        if (fork() == 0) _exit(0);
    } else if (action == "ptrace") {
        (void)!ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    } else if (action == "kill") {
        (void)!kill(1, 0);
    } else if (action == "write-stdout") {
        (void)!write(1, "x", 1);
    } else if (action == "change-sigsys-handler") {
        signal(SIGSYS, SIG_IGN);  // stopped here: the handler stays the filter's
    } else if (action == "i386-abi") {
        // getpid through the 32-bit entry point: its number (20) means
        // another call there; the filter's architecture check stops it.
        long result = 20;
        asm volatile("int $0x80" : "+a"(result) : : "memory");
    } else if (action == "abort") {
        abort();
    } else if (action == "double-free") {
        // glibc notices, prints its complaint to stderr (/dev/null here), aborts.
        char* volatile p = static_cast<char*>(std::malloc(64));
        std::free(p);
        std::free(p);
    } else if (action == "claim-refused") {
        // Claims, as a reader on a kernel without seccomp does, that its
        // sandbox was refused, with a terminal escape in the reason.
        static const char claim[] = "U\x1b]0;owned\x07seccomp: refused";
        (void)!write(g_result_pipe, claim, sizeof claim - 1);
        _exit(5);
    } else if (action == "heap-overflow") {
        // What fuzzing found libhdf5 doing; a sanitizer build reports it.
        char* p = static_cast<char*>(std::malloc(16));
        volatile size_t n = 17;
        std::memset(p, 1, n);
        g_kept = p;  // kept, so the compiler cannot drop the writes
    } else if (action == "x32-abi") {
        syscall(0x40000000 | SYS_getpid);
    }
}

}  // namespace

extern "C" int pipe(int fds[2]) {
    const int rc = static_cast<int>(syscall(SYS_pipe2, fds, 0));
    Dl_info caller{};
    if (rc == 0 && dladdr(__builtin_return_address(0), &caller) && caller.dli_fname &&
        std::strcmp(caller.dli_fname, program_invocation_name) == 0)  // the main program's, not a library's
        g_result_pipe = fds[1];
    return rc;
}

extern "C" hid_t H5Fopen(const char* name, unsigned flags, hid_t fapl) {
    attempt(g_action);
    return g_real_open(name, flags, fapl);
}
