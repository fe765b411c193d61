// The command line as `imrestore --help` and `imrestore COMMAND --help` list
// it, parsed from their text (CLI11's layout), for the tests that hold the
// manual page and the shell completions to it (tests/test_man_page.cpp,
// tests/test_completions.cpp), so that an option added to the CLI and not to
// them fails a test.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

namespace imr::test {

struct HelpOption {
    std::vector<std::string> names;    // "-o", "--output"
    bool takes_value = false;          // a type after the names: "-o,--output PATH"
    std::string default_value;         // "4" of "INT:INT in [1 - 1024]=4"; empty when none is shown
    std::vector<std::string> choices;  // "auto", "opencv", "stb" of "TEXT:{auto,opencv,stb}"
};

struct CommandHelp {
    std::string name;  // "" for the main command (restoring), else "models", "degrade", ...
    std::vector<HelpOption> options;
    std::vector<std::string> subcommands;  // of the main command
    std::string text;                      // the whole --help

    std::set<std::string> option_names() const {
        std::set<std::string> out;
        for (const HelpOption& o : options) out.insert(o.names.begin(), o.names.end());
        return out;
    }
};

// "a,b" -> {"a", "b"}; also a text into its lines (by '\n').
inline std::vector<std::string> split(const std::string& s, char by) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, by);) out.push_back(part);
    return out;
}

namespace help_detail {

inline std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// CLI11 writes an option's names and type in a 30-column field (2 spaces of
// indent) and its description after it, or on the next line, indented by 30
// spaces, when the field is full.
constexpr size_t kFieldWidth = 30;

inline bool is_description_line(const std::string& line) {
    return line.size() > kFieldWidth && line.find_first_not_of(' ') == kFieldWidth;
}

// An option of the Options section: `line`, and `next` to tell whether
// `line` is all names and type.
inline HelpOption parse_option(const std::string& line, const std::string& next) {
    const std::string field = trim(is_description_line(next) ? line : line.substr(0, kFieldWidth));
    HelpOption o;
    const size_t space = field.find(' ');
    o.names = split(field.substr(0, space), ',');
    if (space == std::string::npos) return o;
    o.takes_value = true;
    std::string type = trim(field.substr(space + 1));  // TYPE[:CHECK][=DEFAULT][ REQUIRED]
    const std::string required = " REQUIRED";
    if (type.size() > required.size() && type.compare(type.size() - required.size(), required.size(), required) == 0)
        type.resize(type.size() - required.size());
    if (const size_t eq = type.rfind('='); eq != std::string::npos) {
        o.default_value = type.substr(eq + 1);
        type.resize(eq);
    }
    const size_t open = type.find(":{"), close = type.rfind('}');
    if (open != std::string::npos && close != std::string::npos && close > open)
        o.choices = split(type.substr(open + 2, close - open - 2), ',');
    return o;
}

}  // namespace help_detail

// Parses the text of `imrestore [name] --help`.
inline CommandHelp parse_help(const std::string& name, const std::string& text) {
    CommandHelp help;
    help.name = name;
    help.text = text;
    const std::vector<std::string> lines = split(text, '\n');
    std::string section;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        if (!line.empty() && line[0] != ' ') {
            section = line;  // "Options:", "Subcommands:", or text before and after them
            continue;
        }
        if (line.size() < 3 || line[2] == ' ') continue;  // a description on a line of its own
        const std::string& next = i + 1 < lines.size() ? lines[i + 1] : "";
        if (section == "Options:" && line[2] == '-') help.options.push_back(help_detail::parse_option(line, next));
        if (section == "Subcommands:") help.subcommands.push_back(help_detail::trim(line.substr(0, line.find(' ', 2))));
    }
    return help;
}

// --help of the main command and of each subcommand it lists, main first
// (run once per test program).
inline const std::vector<CommandHelp>& all_command_help() {
    static const std::vector<CommandHelp> commands = [] {
        ScratchDir dir("help");
        RunResult main_help = imrestore("--help", dir);
        EXPECT_EQ(main_help.code, 0) << main_help.err;
        std::vector<CommandHelp> out = {parse_help("", main_help.out)};
        for (const std::string& sub : std::vector<std::string>(out[0].subcommands)) {
            RunResult r = imrestore(sub + " --help", dir);
            EXPECT_EQ(r.code, 0) << sub << ": " << r.err;
            out.push_back(parse_help(sub, r.out));
        }
        EXPECT_GE(out[0].options.size(), 10u) << "the help text's layout changed: parse_help read\n" << main_help.out;
        EXPECT_GE(out[0].subcommands.size(), 4u) << "the help text's layout changed: parse_help read\n"
                                                 << main_help.out;
        return out;
    }();
    return commands;
}

}  // namespace imr::test
