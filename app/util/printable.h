// Text from files (names, model descriptions) made safe for a terminal or a
// JSON report. For the terminal:
// control characters (C0, DEL and the UTF-8-encoded C1 range) would let a
// hostile file name or model description move the cursor, clear the screen
// or forge output lines, so they are printed as escapes instead.
#pragma once

#include <string>

namespace imr {

// Returns s with every control character as an escape: "\n", "\t", "\r", "\\"
// for those, "\xNN" for the others (C1 characters by their UTF-8 bytes),
// bytes that are not valid UTF-8 as "\xNN" too. Printable UTF-8 is kept.
std::string printable(const std::string& s);

// Returns s as the inside of a JSON string literal: quotes, backslashes and
// control characters escaped; bytes that are not valid UTF-8 (file names are
// bytes) as lone surrogates \udc80..\udcff, Python's surrogateescape, so a
// reader gets the original bytes back.
std::string json_escape(const std::string& s);

}  // namespace imr
