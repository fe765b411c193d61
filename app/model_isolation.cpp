// The child process that reads model files (model_isolation.h).
//
// Wire format (host byte order: child and parent are the same binary): a tag
// byte, 'M' + the model or 'E' + an error message. A model: the root group,
// a flag for 'stages', the stage count and the stage groups. A group: its
// attribute count and attributes, its dataset count and datasets. An entry:
// its name, kind byte and payload (string: length + bytes; int: 8 bytes;
// float: a float64; tensor: rank, dims, floats, a byte 1 if stored as
// float16 else 0; invalid: the reason). Every length is checked
// against what is left and against the reader's limits while decoding.
#include "model_isolation.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>

#include "bundled_model_digests.h"
#include "error.h"
#include "model_hdf5.h"
#include "model_sandbox.h"
#include "util/sha256.h"

// Defined only when a sanitizer runtime is linked (fuzzing, sanitizer builds).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace imr {

namespace {

// The child's limits. A bundled model loads in milliseconds; a hostile file
// that makes libhdf5 loop or allocate without end is stopped by these.
constexpr int kTimeoutSeconds = 60;  // wall clock, then SIGKILL; IMRESTORE_MODEL_READ_TIMEOUT overrides it
constexpr rlim_t kCpuSeconds = 60;   // RLIMIT_CPU
constexpr unsigned long long kChildHeapBytes = 3ull << 30;  // RLIMIT_DATA beyond what the child inherits
constexpr size_t kMaxEntries = 1 << 16;                     // per group
// Over the whole answer: a reader a hostile file took over could otherwise
// send millions of tiny entries (12 wire bytes each become a ~170-byte map
// node here) within the wire limit and make this process hold gigabytes.
constexpr unsigned long long kMaxTotalEntries = 1 << 20;
constexpr size_t kMaxNameBytes = 1 << 16;
constexpr int kExitSandboxRefused = 5;  // the child's exit status when the kernel refused its sandbox

// ------------------------------------------------------------------ encoding

void put_u64(std::string& out, unsigned long long v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_bytes(std::string& out, const std::string& s) {
    put_u64(out, s.size());
    out += s;
}
void put_group(std::string& out, const RawGroup& g) {
    for (const auto* entries : {&g.attributes, &g.datasets}) {
        put_u64(out, entries->size());
        for (const auto& [name, e] : *entries) {
            put_bytes(out, name);
            out += char(e.kind);
            switch (e.kind) {
                case RawEntry::Kind::String:
                case RawEntry::Kind::Invalid:
                    put_bytes(out, e.text);
                    break;
                case RawEntry::Kind::Int:
                    put_u64(out, (unsigned long long)e.integer);
                    break;
                case RawEntry::Kind::Float:
                    out.append(reinterpret_cast<const char*>(&e.real), sizeof e.real);
                    break;
                case RawEntry::Kind::Tensor:
                    put_u64(out, e.shape.size());
                    for (unsigned long long d : e.shape) put_u64(out, d);
                    put_u64(out, e.data.size());
                    out.append(reinterpret_cast<const char*>(e.data.data()), e.data.size() * sizeof(float));
                    out += char(e.half ? 1 : 0);
                    break;
                case RawEntry::Kind::Other:
                    break;
            }
        }
    }
}

// ------------------------------------------------------------------ decoding

class WireReader {
public:
    WireReader(const std::string& bytes, const std::string& where) : bytes_(bytes), where_(where) {}
    unsigned long long u64() {
        unsigned long long v;
        std::memcpy(&v, take(sizeof v), sizeof v);
        return v;
    }
    std::string text(size_t limit) {
        const unsigned long long n = u64();
        if (n > limit) fail("a string of " + std::to_string(n) + " bytes");
        return std::string(take(size_t(n)), size_t(n));
    }
    const char* take(size_t n) {
        if (n > bytes_.size() - pos_) fail("truncated");
        const char* p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }
    bool done() const { return pos_ == bytes_.size(); }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(where_ + ": the model reader's answer is malformed (" + what + ")");
    }

private:
    const std::string& bytes_;
    const std::string& where_;
    size_t pos_ = 0;
};

RawGroup get_group(WireReader& r, unsigned long long& floats, unsigned long long most,
                   unsigned long long& entries_left) {
    RawGroup g;
    for (auto* entries : {&g.attributes, &g.datasets}) {
        const unsigned long long n = r.u64();
        if (n > kMaxEntries) r.fail(std::to_string(n) + " entries in a group");
        if (n > entries_left) r.fail("more entries than any model has");
        entries_left -= n;
        for (unsigned long long i = 0; i < n; ++i) {
            std::string name = r.text(kMaxNameBytes);
            RawEntry e;
            const unsigned char kind = static_cast<unsigned char>(*r.take(1));
            if (kind > static_cast<unsigned char>(RawEntry::Kind::Invalid)) r.fail("an unknown entry kind");
            e.kind = static_cast<RawEntry::Kind>(kind);
            switch (e.kind) {
                case RawEntry::Kind::String:
                case RawEntry::Kind::Invalid:
                    e.text = r.text(size_t(1) << 21);
                    break;
                case RawEntry::Kind::Int:
                    e.integer = (long long)r.u64();
                    break;
                case RawEntry::Kind::Float:
                    std::memcpy(&e.real, r.take(sizeof e.real), sizeof e.real);
                    break;
                case RawEntry::Kind::Tensor: {
                    const unsigned long long rank = r.u64();
                    if (rank > 8) r.fail("a tensor of rank " + std::to_string(rank));
                    unsigned long long count = 1;
                    for (unsigned long long d = 0; d < rank; ++d) {
                        e.shape.push_back(r.u64());
                        if (e.shape.back() != 0 && count > most / e.shape.back()) r.fail("a huge tensor");
                        count *= e.shape.back();
                    }
                    if (r.u64() != count) r.fail("a tensor whose size does not match its shape");
                    floats += count;
                    if (floats > most) r.fail("more tensor data than the reader's limit");
                    e.data.resize(size_t(count));
                    const char* src = r.take(size_t(count) * sizeof(float));
                    if (count)
                        std::memcpy(e.data.data(), src, size_t(count) * sizeof(float));  // empty: data() may be null
                    const unsigned char half = static_cast<unsigned char>(*r.take(1));
                    if (half > 1) r.fail("a tensor storage byte of " + std::to_string(half));
                    e.half = half == 1;
                    break;
                }
                case RawEntry::Kind::Other:
                    break;
            }
            (*entries)[std::move(name)] = std::move(e);
        }
    }
    return g;
}

// ------------------------------------------------------------------ the child

bool write_all(int fd, const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += size_t(n);
    }
    return true;
}

// Private writable memory the process has now (VmData): the child's limit is
// this plus kChildHeapBytes, so a parent that already holds large buffers
// does not starve it.
unsigned long long data_segment_bytes() {
    std::ifstream status("/proc/self/status");
    std::string key;
    unsigned long long kb = 0;
    while (status >> key) {
        if (key == "VmData:") {
            status >> kb;
            return kb * 1024;
        }
        status.ignore(1 << 12, '\n');
    }
    return 0;
}

}  // namespace

std::string encode_raw_model(const RawModel& raw) {
    std::string out;
    put_group(out, raw.root);
    out += char(raw.has_stages);
    put_u64(out, raw.stages.size());
    for (const RawGroup& g : raw.stages) put_group(out, g);
    return out;
}

RawModel decode_raw_model(const std::string& bytes, const std::string& where) {
    WireReader r(bytes, where);
    const unsigned long long most = max_file_floats();  // reads the environment once
    unsigned long long floats = 0;
    RawModel raw;
    unsigned long long entries_left = kMaxTotalEntries;
    raw.root = get_group(r, floats, most, entries_left);
    raw.has_stages = *r.take(1) != 0;
    const unsigned long long n = r.u64();
    if (n > 4096) r.fail(std::to_string(n) + " stages");
    for (unsigned long long i = 0; i < n; ++i) raw.stages.push_back(get_group(r, floats, most, entries_left));
    if (!r.done()) r.fail("trailing bytes");
    return raw;
}

namespace {
// A crash of libhdf5 must end the child with its signal, as it would in any
// build: undo the handlers it inherited (the CLI's Ctrl-C handler, a
// sanitizer's or fuzzer's crash reporting, which would otherwise report the
// child's crash as the parent's).
void default_signal_handling() {
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM}) signal(sig, SIG_DFL);
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
}

// The reader child. `image`: the file's bytes, already read by the parent
// (the unsandboxed fallback: the child parses exactly what was recognized as
// a bundled model); null: the child reads the file itself, then confines
// itself before parsing a byte of it.
[[noreturn]] void child_main(const std::string& path, int fd, unsigned long long data_limit, const std::string* image) {
    default_signal_handling();
    rlimit cpu{kCpuSeconds, kCpuSeconds};
    setrlimit(RLIMIT_CPU, &cpu);
    rlimit data{data_limit, data_limit};
    setrlimit(RLIMIT_DATA, &data);
    rlimit core{0, 0};  // a crash of libhdf5 is reported, not dumped
    setrlimit(RLIMIT_CORE, &core);
    std::string out;
    try {
        std::string own;
        if (!image) own = read_model_file_bytes(path);  // inside the memory limit
        prepare_model_hdf5_reader();
        if (!image) {
            const std::string refused = confine_model_reader(fd);
            if (!refused.empty()) _exit(write_all(fd, "U" + refused) ? kExitSandboxRefused : 4);
        }
        out = "M" + encode_raw_model(read_model_hdf5_image(image ? *image : own, path));
    } catch (const Error& e) {
        out = std::string("E") + e.what();
    } catch (const std::bad_alloc&) {
        out = "E" + path + ": reading it needs more memory than a model file may take (" +
              std::to_string(kChildHeapBytes >> 30) + " GiB)";
    } catch (...) {
        _exit(3);
    }
    _exit(write_all(fd, out) ? 0 : 4);
}

// What a reader child left: its wait status and everything it wrote.
struct ReaderExit {
    int status = 0;
    std::string answer;
};

// Starts a reader child (child_main) and collects its answer, up to the
// deadline and the size limit; throws imr::Error for what ends it early.
ReaderExit run_reader(const std::string& path, int timeout_s, const std::string* image) {
    int fds[2];
    if (pipe(fds) != 0) throw Error(path + ": cannot start the model reader: " + std::strerror(errno));
    const unsigned long long data_limit = data_segment_bytes() + kChildHeapBytes;
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        throw Error(path + ": cannot start the model reader: " + std::strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(path, fds[1], data_limit, image);
    }
    close(fds[1]);
    const size_t max_wire_bytes = size_t(max_file_floats()) * sizeof(float) + (64u << 20);  // + metadata
    ReaderExit r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool timed_out = false, too_long = false;
    char buf[1 << 16];
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = poll(&p, 1, int(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;  // re-check the deadline
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EOF: the child is done (or died)
        r.answer.append(buf, size_t(n));
        if (r.answer.size() > max_wire_bytes) {
            too_long = true;
            break;
        }
    }
    close(fds[0]);
    if (timed_out || too_long) kill(pid, SIGKILL);
    // A reader that closed the pipe without exiting (asleep on a futex, which
    // RLIMIT_CPU never stops) is still bound by the deadline.
    for (;;) {
        const pid_t done = waitpid(pid, &r.status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR)) break;
        if (!timed_out && !too_long && std::chrono::steady_clock::now() >= deadline) {
            timed_out = true;
            kill(pid, SIGKILL);
        }
        usleep(500);
    }
    if (timed_out)
        throw Error(path + ": reading the HDF5 file took longer than " + std::to_string(timeout_s) +
                    " s and was stopped: a damaged or hostile model file (IMRESTORE_MODEL_READ_TIMEOUT raises the "
                    "limit)");
    if (too_long) throw Error(path + ": the model reader's answer is larger than any model may be");
    return r;
}

// The child could not confine itself: is the file a bundled model (by
// content, wherever it is installed), or did the user allow unsandboxed
// reading? Says once per process that the sandbox is missing.
void check_unsandboxed_reading(const std::string& path, const std::string& bytes, const std::string& why) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
        std::cerr << "imrestore: warning: this system refuses the model reader's sandbox (" << why
                  << "): only the bundled models are read, unless IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1\n";
    });
    const char* allow = std::getenv("IMRESTORE_ALLOW_UNSANDBOXED_MODELS");
    if (allow && std::string(allow) == "1") return;
    const std::string digest = sha256_hex(bytes);
    for (const BundledModelDigest& bundled : kBundledModelDigests)
        if (digest == bundled.sha256) return;
    throw Error(path + ": not read: this system refuses the sandbox that model files are read in (" + why +
                "), and this file is not one of imrestore's bundled models (IMRESTORE_ALLOW_UNSANDBOXED_MODELS=1 "
                "reads it without the sandbox: only for a file you trust)");
}

// A child that wrote 'U' + the reason and exited with kExitSandboxRefused
// before reading the file.
bool sandbox_refused(const ReaderExit& r) {
    return WIFEXITED(r.status) && WEXITSTATUS(r.status) == kExitSandboxRefused && !r.answer.empty() &&
           r.answer[0] == 'U';
}

}  // namespace

RawModel read_model_isolated(const std::string& path) {
    int timeout_s = kTimeoutSeconds;
    if (const char* v = std::getenv("IMRESTORE_MODEL_READ_TIMEOUT"); v && *v) {
        char* end = nullptr;
        const long t = std::strtol(v, &end, 10);
        if (*end || t < 1 || t > 86400)
            throw Error(std::string("IMRESTORE_MODEL_READ_TIMEOUT=") + v + ": expected seconds, 1..86400");
        timeout_s = int(t);
    }
    ReaderExit r = run_reader(path, timeout_s, nullptr);
    if (sandbox_refused(r)) {
        // The reader says so; a reader a hostile file took over could say
        // it too, so the kernel is asked again, by a process that reads no
        // model file.
        const std::string why = seccomp_refusal();
        if (why.empty()) {
            std::string claim;
            for (char c : r.answer.substr(1, 200))
                if (c >= ' ' && c <= '~') claim += c;
            throw Error(path + ": the model reader could not confine itself (" + claim + ")");
        }
        // Read here, so the unsandboxed child parses the very bytes checked.
        const std::string bytes = read_model_file_bytes(path);
        check_unsandboxed_reading(path, bytes, why);
        r = run_reader(path, timeout_s, &bytes);
    }
    std::string& bytes = r.answer;
    const int status = r.status;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
        // Stopped by the filter. The number comes from the child's SIGSYS
        // handler ('S' + 4 bytes, the last thing it wrote, after whatever
        // else): untrusted, so only looked up.
        int32_t number = -1;
        const size_t record = 1 + sizeof number;
        if (bytes.size() >= record && bytes[bytes.size() - record] == 'S')
            std::memcpy(&number, bytes.data() + bytes.size() - sizeof number, sizeof number);
        const std::string name = syscall_name(number);
        throw Error(path + ": the model file tried something a model file never needs" +
                    (name.empty() ? std::string() : " (system call '" + name + "')") +
                    ", and the sandbox stopped the HDF5 reader: a hostile or damaged model file");
    }
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        throw Error(path + ": the HDF5 library " +
                    (sig == SIGXCPU   ? std::string("used more than ") + std::to_string(kCpuSeconds) + " s of CPU"
                     : sig == SIGKILL ? std::string("was killed (out of memory?)")
                                      : std::string("crashed (") + strsignal(sig) + ")") +
                    " reading this file: a damaged or hostile model file");
    }
    if (bytes.empty())
        throw Error(path + ": the model reader stopped without an answer (exit status " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    if (bytes[0] == 'E') {
        // The reader's own message starts with the path; one that does not
        // (a reader a hostile file took over) is not passed off as the tool's.
        std::string message = bytes.substr(1, size_t(1) << 12);
        if (message.compare(0, path.size() + 1, path + ":") != 0) message = path + ": " + message;
        throw Error(message);
    }
    if (bytes[0] != 'M') throw Error(path + ": the model reader's answer is malformed");
    bytes.erase(0, 1);  // the tag; in place, the answer can be hundreds of MB
    return decode_raw_model(bytes, path);
}

}  // namespace imr
