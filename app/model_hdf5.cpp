// The HDF5 side of model files (model_hdf5.h): a reader that takes only
// plain attributes and float32 datasets through hard links, checking every
// declared size before it reads, and the writer. Runs in the child process
// of model_isolation.cpp when reading.
#include "model_hdf5.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "layers/layer.h"

namespace imr {

namespace fs = std::filesystem;

namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class H5Handle {
public:
    H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    ~H5Handle() { close(); }
    // Closes it now; false when the close failed (for a file: its last
    // writes did not reach it).
    bool close() {
        const hid_t id = id_;
        id_ = -1;
        return id < 0 || close_(id) >= 0;
    }
    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

// HDF5 prints its own error stack to stderr by default; we report our own.
void silence_hdf5() {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// ------------------------------------------------------------------ the in-memory driver

// A read-only HDF5 file driver over the bytes of a file already in memory.
// libhdf5 1.10.8's core driver with a file image still tries to open the
// name it is given (to refuse one that exists) and asks for the working
// folder (strace shows openat and getcwd); this one makes no system call at
// all, so the reader runs under a filter that forbids opening files, and
// there is no file to lock.
struct ImageFile {
    H5FD_t base;  // first: libhdf5 casts between the two
    const std::string* bytes;
    haddr_t eoa;
};

const std::string* g_image = nullptr;  // the bytes H5Fopen is opening (one file at a time, one thread)

H5FD_t* image_open(const char*, unsigned flags, hid_t, haddr_t) {
    if (!g_image || (flags & (H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC | H5F_ACC_EXCL))) return nullptr;
    auto* f = new (std::nothrow) ImageFile{};
    if (!f) return nullptr;
    f->bytes = g_image;
    return &f->base;
}

herr_t image_close(H5FD_t* file) {
    delete reinterpret_cast<ImageFile*>(file);
    return 0;
}

haddr_t image_get_eoa(const H5FD_t* file, H5FD_mem_t) {
    return reinterpret_cast<const ImageFile*>(file)->eoa;
}

herr_t image_set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
    reinterpret_cast<ImageFile*>(file)->eoa = addr;
    return 0;
}

haddr_t image_get_eof(const H5FD_t* file, H5FD_mem_t) {
    return reinterpret_cast<const ImageFile*>(file)->bytes->size();
}

// As libhdf5's own drivers: a read past the end of the file (but not of the
// allocated space) gives zeros; one past the allocated space is an error.
herr_t image_read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buffer) {
    const auto* f = reinterpret_cast<const ImageFile*>(file);
    if (addr == HADDR_UNDEF || addr > f->eoa || size > f->eoa - addr) return -1;
    const std::string& bytes = *f->bytes;
    const size_t have = addr < bytes.size() ? std::min(size, size_t(bytes.size() - addr)) : 0;
    if (have) std::memcpy(buffer, bytes.data() + addr, have);
    std::memset(static_cast<char*>(buffer) + have, 0, size - have);
    return 0;
}

herr_t image_write(H5FD_t*, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) {
    return -1;
}

hid_t image_driver_id() {
    static const H5FD_class_t driver = [] {
        H5FD_class_t c{};
        c.name = "imrestore-image";
        c.maxaddr = (haddr_t(1) << 62) - 1;
        c.fc_degree = H5F_CLOSE_WEAK;
        c.open = image_open;
        c.close = image_close;
        c.get_eoa = image_get_eoa;
        c.set_eoa = image_set_eoa;
        c.get_eof = image_get_eof;
        c.read = image_read;
        c.write = image_write;
        const H5FD_mem_t map[H5FD_MEM_NTYPES] = H5FD_FLMAP_DICHOTOMY;
        std::copy(map, map + H5FD_MEM_NTYPES, c.fl_map);
        return c;
    }();
    static const hid_t id = H5FDregister(&driver);
    return id;
}

// HDF5's signature, at 0 or after a user block of 512, 1024, 2048, ... bytes.
bool has_hdf5_signature(const std::string& bytes) {
    static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    for (size_t at = 0; at + sizeof signature <= bytes.size(); at = at ? 2 * at : 512)
        if (bytes.compare(at, sizeof signature, signature, sizeof signature) == 0) return true;
    return false;
}

// ------------------------------------------------------------------ reading

// Strings longer than this are not metadata (a description is a paragraph).
constexpr size_t kMaxStringBytes = 1 << 20;

RawEntry invalid(std::string why) {
    RawEntry e;
    e.kind = RawEntry::Kind::Invalid;
    e.text = std::move(why);
    return e;
}

// Why a link may not be followed, or "" for a hard link.
std::string link_problem(hid_t group, const char* name) {
    H5L_info_t info;
    if (H5Lget_info(group, name, &info, H5P_DEFAULT) < 0) return "cannot be read";
    switch (info.type) {
        case H5L_TYPE_HARD:
            return "";
        case H5L_TYPE_SOFT:
            return "is a soft link (refused: a model file must be self-contained)";
        case H5L_TYPE_EXTERNAL:
            return "is an external link to another file (refused: a model file must be self-contained)";
        default:
            return "is a link of an unknown kind (refused)";
    }
}

RawEntry read_attribute(hid_t obj, const char* name) {
    const std::string what = std::string("attribute '") + name + "'";
    H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) return invalid(what + " cannot be read");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    const H5T_class_t cls = H5Tget_class(type.get());
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    RawEntry e;
    if (cls == H5T_STRING) {
        if (points != 1) return invalid(what + " must be a single string");
        e.kind = RawEntry::Kind::String;
        if (H5Tis_variable_str(type.get()) > 0) {
            H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
            H5Tset_size(mem.get(), H5T_VARIABLE);
            H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
            char* value = nullptr;
            if (H5Aread(attr.get(), mem.get(), &value) < 0) return invalid("cannot read " + what);
            e.text = value ? std::string(value, strnlen(value, kMaxStringBytes + 1)) : "";
            H5free_memory(value);
        } else {
            const size_t size = H5Tget_size(type.get());
            if (size > kMaxStringBytes) return invalid(what + " is longer than 1 MiB");
            // One byte more than stored: a string that fills its width (h5py's
            // np.bytes_) keeps its last character next to the terminator.
            std::string value(size + 1, '\0');
            H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
            H5Tset_size(mem.get(), size + 1);
            H5Tset_strpad(mem.get(), H5T_STR_NULLTERM);
            if (H5Aread(attr.get(), mem.get(), value.data()) < 0) return invalid("cannot read " + what);
            value.resize(std::min(value.size(), value.find('\0')));
            e.text = value;
        }
        if (e.text.size() > kMaxStringBytes) return invalid(what + " is longer than 1 MiB");
    } else if (cls == H5T_INTEGER) {
        if (points != 1) return invalid(what + " must be a single integer");
        e.kind = RawEntry::Kind::Int;
        if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &e.integer) < 0) return invalid("cannot read " + what);
    } else if (cls == H5T_FLOAT) {
        if (points != 1) return invalid(what + " must be a single number");
        e.kind = RawEntry::Kind::Float;
        if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &e.real) < 0) return invalid("cannot read " + what);
    } else {
        e.kind = RawEntry::Kind::Other;
    }
    return e;
}

herr_t collect_attribute(hid_t obj, const char* name, const H5A_info_t*, void* out) {
    static_cast<RawGroup*>(out)->attributes[name] = read_attribute(obj, name);
    return 0;
}

void read_attributes(hid_t obj, RawGroup& group, const std::string& where) {
    hsize_t index = 0;
    if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute, &group) < 0)
        throw Error(where + ": cannot list the attributes");
}

// Checks done before a byte of a dataset is read; "" when it may be read.
std::string storage_problem(hid_t dset) {
    H5Handle dcpl(H5Dget_create_plist(dset), H5Pclose);
    if (!dcpl.valid()) return "its storage cannot be read";
    if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL) return "is a virtual dataset (refused: it reads other files)";
    if (H5Pget_external_count(dcpl.get()) != 0) return "uses external raw data storage (refused: it reads other files)";
    const int filters = H5Pget_nfilters(dcpl.get());
    if (filters < 0) return "its filters cannot be read";
    for (int i = 0; i < filters; ++i) {
        unsigned flags = 0, config = 0;
        size_t values = 0;
        const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), unsigned(i), &flags, &values, nullptr, 0, nullptr, &config);
        if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32)
            return "uses filter " + std::to_string(id) + " (refused: only deflate, shuffle and fletcher32)";
    }
    return "";
}

// IEEE 754 binary16 as h5py and imrestore write it (numpy's float16): 2
// bytes, sign bit 15, exponent bits 10-14 with bias 15, mantissa bits 0-9.
// HDF5 1.10 has no predefined type for it.
hid_t make_ieee_half() {
    const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, 15, 10, 5, 0, 10);
    H5Tset_size(t, 2);
    H5Tset_ebias(t, 15);
    return t;
}

bool is_ieee_half(hid_t type) {
    if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 2) return false;
    size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
    return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(type) == 15 &&
           H5Tget_order(type) == H5T_ORDER_LE && H5Tget_norm(type) == H5T_NORM_IMPLIED;
}

RawEntry read_dataset(hid_t group, const char* name, unsigned long long& file_floats, unsigned long long most,
                      const std::string& where) {
    const std::string what = std::string("dataset '") + name + "'";
    H5Handle dset(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) return invalid(std::string("'") + name + "' is not a dataset");
    H5Handle type(H5Dget_type(dset.get()), H5Tclose);
    const bool half = is_ieee_half(type.get());
    if (H5Tget_class(type.get()) != H5T_FLOAT || (H5Tget_size(type.get()) != 4 && !half)) {
        const size_t size = H5Tget_size(type.get());
        return invalid(what + ": expected float32 or IEEE float16, found " +
                       (H5Tget_class(type.get()) != H5T_FLOAT ? std::string("a non-float type")
                        : size == 2 ? std::string("a 16-bit float that is not IEEE binary16 (little-endian, "
                                                  "5 exponent bits with bias 15, 10 mantissa bits)")
                                    : "float" + std::to_string(8 * size)));
    }
    H5Handle space(H5Dget_space(dset.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 8) return invalid(what + ": unsupported dataspace (rank " + std::to_string(rank) + ")");
    RawEntry e;
    e.kind = RawEntry::Kind::Tensor;
    std::vector<hsize_t> dims(size_t(rank), 0);
    if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    e.shape.assign(dims.begin(), dims.end());
    // Overflow-safe: stop multiplying as soon as the product passes the limit.
    unsigned long long count = 1;
    for (hsize_t d : dims) {
        if (d != 0 && count > most / d) {
            count = most + 1;
            break;
        }
        count *= d;
    }
    if (count > most)
        return invalid(what + " is implausibly large " + dims_string(e.shape) + " (more values than a model may have)");
    const std::string problem = storage_problem(dset.get());
    if (!problem.empty()) return invalid(what + " " + problem);
    file_floats += count;
    if (file_floats > most)
        throw Error(where + ": the file's datasets hold more values than a model may have (IMRESTORE_MAX_PARAMETERS)");
    e.data.resize(size_t(count));
    // HDF5 widens float16 to float exactly (every half is a float).
    if (count && H5Dread(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.data.data()) < 0)
        return invalid("cannot read " + what);
    e.half = half;
    return e;
}

struct DatasetWalk {
    RawGroup* group;
    unsigned long long* file_floats;
    unsigned long long most;  // max_file_floats(), read once per file
    const std::string* where;
};

herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t* info, void* out) {
    auto* walk = static_cast<DatasetWalk*>(out);
    if (info->type != H5L_TYPE_HARD) {
        walk->group->datasets[name] = invalid(std::string("'") + name + "' " + link_problem(group, name));
        return 0;
    }
    walk->group->datasets[name] = read_dataset(group, name, *walk->file_floats, walk->most, *walk->where);
    return 0;
}

// Stage groups are named "0".."n-1"; returns how many there are.
size_t count_stages(hid_t stages, const std::string& where) {
    H5G_info_t info;
    if (H5Gget_info(stages, &info) < 0) throw Error(where + ": cannot list group 'stages'");
    if (info.nlinks > 4096) throw Error(where + ": group 'stages' holds " + std::to_string(info.nlinks) + " entries");
    std::vector<bool> seen(info.nlinks, false);
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        char name[64] = {0};
        H5Lget_name_by_idx(stages, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        std::string s = name;
        bool numeric =
            !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit) && (s == "0" || s[0] != '0');
        size_t index = numeric ? std::stoul(s) : info.nlinks;
        if (index >= info.nlinks || seen[index])
            throw Error(where + ": group 'stages' holds '" + s + "'; expected stages named 0.." +
                        std::to_string(info.nlinks - 1));
        seen[index] = true;
    }
    return info.nlinks;
}

}  // namespace

unsigned long long max_file_floats() {
    return (unsigned long long)max_model_parameters() + (1u << 20);
}

unsigned long long max_model_file_bytes() {
    return max_file_floats() * sizeof(float) + (64ull << 20);
}

std::string read_model_file_bytes(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot read: " + std::strerror(errno));
    const unsigned long long most = max_model_file_bytes();
    std::string bytes;
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (unsigned long long)st.st_size <= most)
        bytes.reserve(size_t(st.st_size));  // a hint only: the file may change while read
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            close(fd);
            throw Error(path + ": cannot read: " + std::strerror(err));
        }
        if (n == 0) break;
        if (bytes.size() + size_t(n) > most) {
            close(fd);
            throw Error(path + ": larger than any model file may be (" + std::to_string(most >> 20) +
                        " MiB; IMRESTORE_MAX_PARAMETERS raises it)");
        }
        bytes.append(buf, size_t(n));
    }
    close(fd);
    return bytes;
}

void prepare_model_hdf5_reader() {
    H5open();
    silence_hdf5();
    H5PLset_loading_state(0);
    image_driver_id();
}

RawModel read_model_hdf5(const std::string& path) {
    return read_model_hdf5_image(read_model_file_bytes(path), path);
}

RawModel read_model_hdf5_image(const std::string& bytes, const std::string& path) {
    prepare_model_hdf5_reader();
    if (!has_hdf5_signature(bytes))
        throw Error(path + ": not an HDF5 file (an imrestore model is HDF5; see weights/README.md)");
    H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (!fapl.valid() || H5Pset_driver(fapl.get(), image_driver_id(), nullptr) < 0)
        throw Error(path + ": cannot set up the HDF5 reader");
    g_image = &bytes;
    // An absolute name: libhdf5 keeps it for external links (refused anyway)
    // and would ask for the working folder to complete a relative one.
    H5Handle file(H5Fopen("/model-file-image.h5", H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    g_image = nullptr;
    if (!file.valid()) throw Error(path + ": cannot open the HDF5 file");
    RawModel raw;
    read_attributes(file.get(), raw.root, path);
    if (H5Lexists(file.get(), "stages", H5P_DEFAULT) <= 0) return raw;  // the caller says what is missing
    if (std::string problem = link_problem(file.get(), "stages"); !problem.empty())
        throw Error(path + ": 'stages' " + problem);
    H5Handle stages(H5Gopen2(file.get(), "stages", H5P_DEFAULT), H5Gclose);
    if (!stages.valid()) throw Error(path + ": 'stages' is not a group");
    raw.has_stages = true;
    const size_t n = count_stages(stages.get(), path);
    unsigned long long file_floats = 0;
    const unsigned long long most = max_file_floats();
    for (size_t i = 0; i < n; ++i) {
        const std::string name = std::to_string(i), at = path + ": stage " + name;
        if (std::string problem = link_problem(stages.get(), name.c_str()); !problem.empty())
            throw Error(at + ": " + problem);
        H5Handle g(H5Gopen2(stages.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
        if (!g.valid()) throw Error(at + ": is not a group");
        RawGroup group;
        read_attributes(g.get(), group, at);
        DatasetWalk walk{&group, &file_floats, most, &at};
        hsize_t index = 0;
        if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_dataset, &walk) < 0)
            throw Error(at + ": cannot list its datasets");
        raw.stages.push_back(std::move(group));
    }
    return raw;
}

// ------------------------------------------------------------------ writing

namespace {

void write_string_attribute(hid_t obj, const char* name, const std::string& value) {
    H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* data = value.c_str();
    if (!attr.valid() || H5Awrite(attr.get(), type.get(), &data) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_int_attribute(hid_t obj, const char* name, long long value) {
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

void write_float_attribute(hid_t obj, const char* name, double value) {
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attr(H5Acreate2(obj, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value) < 0)
        throw Error(std::string("cannot write attribute '") + name + "'");
}

// float32, or float16 for a model whose file stored every weight so
// (ModelFile::half_weights: the values are halves, so nothing is lost).
void write_tensor(hid_t group, const char* name, const std::vector<float>& data, const std::vector<int>& shape,
                  bool half) {
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    H5Handle file_type(half ? make_ieee_half() : H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
    H5Handle dset(H5Dcreate2(group, name, file_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose);
    if (!dset.valid() || H5Dwrite(dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
        throw Error(std::string("cannot write dataset '") + name + "'");
}

// LayerWriter over one HDF5 stage group.
class H5LayerWriter : public LayerWriter {
public:
    H5LayerWriter(hid_t group, bool half) : group_(group), half_(half) {}
    void tensor(const char* name, const std::vector<float>& data, std::vector<int> shape) override {
        write_tensor(group_, name, data, shape, half_);
    }
    void string_attribute(const char* name, const std::string& value) override {
        write_string_attribute(group_, name, value);
    }
    void int_attribute(const char* name, long long value) override { write_int_attribute(group_, name, value); }
    void float_attribute(const char* name, double value) override { write_float_attribute(group_, name, value); }

private:
    hid_t group_;
    bool half_;
};

void write_stage(hid_t group, const Stage& s, bool half) {
    write_string_attribute(group, "op", stage_op_name(s));
    H5LayerWriter writer(group, half);
    std::visit([&](const auto& st) { st.write(writer); }, s);
}

}  // namespace

void write_model_hdf5(const std::string& path, const ModelFile& model) {
    silence_hdf5();
    std::string tmp = path + ".tmp-" + std::to_string(getpid());
    try {
        H5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
        if (!file.valid()) throw Error("cannot create the file");
        hid_t root = file.get();
        write_string_attribute(root, "format", kModelFormatName);
        write_int_attribute(root, "format_version", model.format_version);
        write_string_attribute(root, "name", model.name);
        write_string_attribute(root, "task", model.task);
        write_string_attribute(root, "description", model.description);
        write_string_attribute(root, "provenance", model.provenance);
        if (!model.license.empty()) write_string_attribute(root, "license", model.license);
        if (!model.validated_precisions.empty()) {
            std::string list;
            for (const std::string& p : model.validated_precisions) list += (list.empty() ? "" : ",") + p;
            write_string_attribute(root, "validated_precisions", list);
        }
        if (!model.precision_validation.empty())
            write_string_attribute(root, "precision_validation", model.precision_validation);
        write_int_attribute(root, "channels", model.channels);
        if (!model.extra_inputs.empty()) {
            std::string list;
            for (const std::string& e : model.extra_inputs) list += (list.empty() ? "" : ",") + e;
            write_string_attribute(root, "extra_inputs", list);
        }
        if (model.uses_wiring() && !model.output.empty() && model.output != model.stage_name(model.stages.size() - 1))
            write_string_attribute(root, "output", model.output);
        H5Handle stages(H5Gcreate2(root, "stages", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        for (size_t i = 0; i < model.stages.size(); ++i) {
            H5Handle g(H5Gcreate2(stages.get(), std::to_string(i).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose);
            if (!g.valid()) throw Error("cannot create group 'stages/" + std::to_string(i) + "'");
            write_stage(g.get(), model.stages[i], model.half_weights);
            // Wiring only where it is not the chain's default, so a chain
            // is written as before (v1/v2 files byte for byte).
            if (model.uses_wiring()) {
                if (model.stage_name(i) != default_stage_name(i))
                    write_string_attribute(g.get(), "name", model.stage_name(i));
                const std::vector<std::string> in = model.stage_input_names(i);
                const std::string prev = i == 0 ? std::string("input") : model.stage_name(i - 1);
                if (in != std::vector<std::string>{prev}) {
                    std::string list;
                    for (const std::string& n : in) list += (list.empty() ? "" : ",") + n;
                    write_string_attribute(g.get(), "inputs", list);
                }
            }
        }
        // The file is complete only once libhdf5 has written its last bytes
        // (a full disk shows up here, not in the calls above) and they are on
        // the disk: only then may it take the name.
        stages.close();
        if (H5Fflush(root, H5F_SCOPE_GLOBAL) < 0 || !file.close()) throw Error("cannot finish writing the file");
        const int fd = open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
        const bool synced = fd >= 0 && fsync(fd) == 0;
        const int err = errno;
        if (fd >= 0) close(fd);
        if (!synced) throw Error(std::string("cannot write the file to disk: ") + std::strerror(err));
    } catch (const Error& e) {
        std::remove(tmp.c_str());
        throw Error(path + ": " + e.what());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(path + ": cannot write: " + ec.message());
    }
}
}  // namespace imr
