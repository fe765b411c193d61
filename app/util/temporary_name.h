// The names of this tool's temporary files, where one must be named (no
// O_TMPFILE, as on many network file systems): ".NAME.tmp-HOST-PID-N.EXT",
// hidden, beside the file it becomes. HOST is this machine's short host name
// and PID this process's, so that a run removes only the stale temporaries
// of dead processes of its own host (jobs/output_folders.h), never those of
// another node writing into the same shared folder.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace imr {

// This machine's short host name (up to the first '.'), characters other
// than letters, digits, '-' and '_' as '_', at most 40 bytes; "localhost"
// where it has none.
const std::string& this_host();

// ".NAME.tmp-HOST-PID-N.EXT" for file name `name` and extension `ext` (".png"
// or empty), N told apart by the caller; NAME cut to 160 bytes, so the whole
// stays below NAME_MAX (255).
std::string temporary_name(std::string name, const std::string& ext, unsigned n);

struct TemporaryOwner {
    std::string host;  // empty: the name of older versions, ".NAME.tmp-PID-N.EXT", which had no host
    pid_t pid = 0;
};

// Who made temporary file `name` (a file name, no folder), or nothing when
// the name is not one of ours.
std::optional<TemporaryOwner> temporary_owner(const std::string& name);

}  // namespace imr
