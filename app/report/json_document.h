// Every JSON document imrestore prints (restore --json, models --json, eval
// --json, the error report) is built here and printed by json_text, so that
// each carries the same header and the same layout. Values are held in
// nlohmann-json's ordered_json (keys keep the order they were set in).
//
// Schema versions (the "schema_version" key of every document; a reader
// checks it before anything else; the version grows when a key is removed,
// renamed or changes its meaning, not when one is added):
//   1  the first versioned documents; restore reports carry "shard";
//      restore --json-lines writes records of "type" start, file, summary
//      (or error), each a document of its own.
//   2  restore --json-lines streams the listing too: its start record's
//      "shard" has no "files" and "listed" (the listing has only begun);
//      its summary record has the whole "shard". A summary has
//      "jobs_held_peak". Nothing else changed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace imr {

using Json = nlohmann::ordered_json;

constexpr int kJsonSchemaVersion = 2;

// {"imrestore": VERSION, "schema_version": kJsonSchemaVersion}: the start of
// every document; the caller adds its own keys after these.
Json json_document();

// The document as text, ending in a newline: the top-level keys one per
// line, each element of a top-level array of objects on its own line
// (a file per line in a report), everything else on one line, so a report
// reads well and greps well. Strings go through json_escape
// (util/printable.h): bytes that are not UTF-8 (file names are bytes) become
// \udcXX escapes, as Python's surrogateescape, where nlohmann's own dump
// would throw. Numbers that are not finite are null (JSON has no infinity).
std::string json_text(const Json& document);

// The document on one line, ending in a newline: a record of a JSON Lines
// stream (restore --json-lines), escaped as json_text.
std::string json_line(const Json& document);

}  // namespace imr
