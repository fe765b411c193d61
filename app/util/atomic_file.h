// Atomic file writes (write_image in app/image/image_io.cpp goes through
// them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace imr {

// Writes `bytes` to `path` so that no reader, and no crash, ever sees a
// partial file. Preferred: an unnamed file in the target's folder
// (O_TMPFILE) that gets a name only once complete: a process killed at any
// point leaves nothing behind. Where the file system has no O_TMPFILE: a
// hidden temporary file beside `path` (util/temporary_name.h: it names this
// host and process), renamed over it, removed on every failure.
// overwrite false: `path` must still not exist, checked atomically by the
// link/rename itself.
// Not fsync'ed: the link/rename keeps readers from seeing a partial file if
// the process dies, not if the machine loses power.
// Throws imr::Error("PATH: what"), the message saying which step failed.
void write_atomically(const std::string& path, const std::vector<uint8_t>& bytes, bool overwrite);

}  // namespace imr
