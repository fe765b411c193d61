// The manual page (docs/imrestore.1.in, configured into the build folder)
// against the command line it documents: every command and option that
// --help lists is described, nothing else is, defaults and choices are the
// ones --help shows, the exit codes are --help's, every environment variable
// the code reads is listed, and the page renders without warnings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "cli_help.h"
#include "cli_run.h"
#include "option_tokens.h"

namespace imr {
namespace {

namespace fs = std::filesystem;
using test::CommandHelp;
using test::HelpOption;
using test::option_tokens;

// The escapes this page uses, as the characters they show.
std::string plain(std::string s) {
    static const std::vector<std::pair<std::string, std::string>> escapes = {
        {"\\-", "-"}, {"\\fB", ""}, {"\\fI", ""},    {"\\fR", ""},    {"\\fP", ""},   {"\\|", ""},
        {"\\&", ""},  {"\\ ", " "}, {"\\(lq", "\""}, {"\\(rq", "\""}, {"\\(en", "-"},
    };
    for (const auto& [from, to] : escapes)
        for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
            s.replace(at, from.size(), to);
    return s;
}

// A macro line's text: `.B "EXIT STATUS"` -> `EXIT STATUS`.
std::string macro_text(const std::string& line) {
    const size_t space = line.find(' ');
    std::string text = space == std::string::npos ? "" : line.substr(space + 1);
    text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
    return plain(text);
}

// A .TP paragraph: its tag line and the text under it.
struct Entry {
    std::string tag, body;
};

// A .SH section or an .SS subsection, with its text and .TP entries.
struct Section {
    std::string heading, parent;  // parent: the .SH of an .SS
    std::string text;
    std::vector<Entry> entries;
};

std::vector<Section> parse_man_page(const std::string& roff) {
    std::vector<Section> sections;
    std::string current_sh;
    bool tag_next = false, in_entry = false;
    std::istringstream in(roff);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(".\\\"", 0) == 0) continue;  // a comment
        if (line.rfind(".SH ", 0) == 0 || line.rfind(".SS ", 0) == 0) {
            const bool sh = line[2] == 'H';
            if (sh) current_sh = macro_text(line);
            sections.push_back({macro_text(line), sh ? "" : current_sh, "", {}});
            tag_next = in_entry = false;
            continue;
        }
        if (sections.empty()) continue;
        Section& s = sections.back();
        if (line == ".TP") {
            tag_next = true;
            continue;
        }
        if (line == ".PP" || line == ".RS" || line == ".RE") {
            in_entry = false;
            continue;
        }
        const std::string text = line.rfind('.', 0) == 0 ? macro_text(line) : plain(line);
        if (tag_next) {
            s.entries.push_back({text, ""});
            tag_next = false, in_entry = true;
        } else if (in_entry) {
            s.entries.back().body += text + "\n";
        }
        s.text += text + "\n";
    }
    return sections;
}

const std::string& page() {
    static const std::string roff = test::slurp(IMRESTORE_MAN_PAGE);
    return roff;
}

const std::vector<Section>& sections() {
    static const std::vector<Section> parsed = parse_man_page(page());
    return parsed;
}

const std::vector<CommandHelp>& help() {
    return test::all_command_help();
}

const Section* find(const std::string& heading) {
    for (const Section& s : sections())
        if (s.heading == heading) return &s;
    return nullptr;
}

// The tags of a section's .TP entries ("0", "IMRESTORE_MODEL_PATH", ...).
std::set<std::string> tags_of(const std::string& heading) {
    const Section* s = find(heading);
    EXPECT_NE(s, nullptr) << "no section " << heading;
    std::set<std::string> tags;
    if (s)
        for (const Entry& e : s->entries) tags.insert(e.tag);
    return tags;
}

// The section documenting a command's options: OPTIONS for the main command,
// the .SS "imrestore NAME ..." of COMMANDS for the others.
const Section* command_section(const std::string& command) {
    if (command.empty()) return find("OPTIONS");
    for (const Section& s : sections())
        if (s.parent == "COMMANDS" &&
            (s.heading == "imrestore " + command || s.heading.rfind("imrestore " + command + " ", 0) == 0))
            return &s;
    return nullptr;
}

const Entry* option_entry(const Section& s, const HelpOption& o) {
    for (const Entry& e : s.entries)
        if (option_tokens(e.tag).count(o.names.back())) return &e;
    return nullptr;
}

std::string label(const std::string& command) {
    return command.empty() ? "imrestore" : command;
}

TEST(ManPage, ConfiguredValuesAreFilledIn) {
    std::smatch left;
    EXPECT_FALSE(std::regex_search(page(), left, std::regex("@[A-Z_]+@"))) << left.str() << " was not configured";
    test::ScratchDir dir("man");
    const std::string version = test::imrestore("--version", dir).out;  // "imrestore 0.1.0 (...)"
    const std::string number = version.substr(10, version.find(' ', 10) - 10);
    EXPECT_NE(page().find(".TH IMRESTORE 1 "), std::string::npos);
    EXPECT_NE(page().find("\"imrestore " + number + "\""), std::string::npos) << "the .TH line names " << version;
}

TEST(ManPage, DescribesEveryCommand) {
    std::set<std::string> documented;
    for (const Section& s : sections())
        if (s.parent == "COMMANDS") {
            std::istringstream words(s.heading);
            std::string program, command;
            words >> program >> command;
            EXPECT_EQ(program, "imrestore") << "COMMANDS has a subsection " << s.heading;
            documented.insert(command);
        }
    const std::set<std::string> listed(help().front().subcommands.begin(), help().front().subcommands.end());
    EXPECT_EQ(documented, listed) << "the .SS subsections of COMMANDS and the Subcommands of --help";
    const Section* synopsis = find("SYNOPSIS");
    ASSERT_NE(synopsis, nullptr);
    for (const std::string& command : listed)
        EXPECT_NE(synopsis->text.find("imrestore " + command), std::string::npos) << command << " not in SYNOPSIS";
}

TEST(ManPage, DescribesEveryOptionOfEveryCommandAndNoOther) {
    for (const CommandHelp& command : help()) {
        SCOPED_TRACE(label(command.name));
        const Section* s = command_section(command.name);
        ASSERT_NE(s, nullptr) << "no section documents the options of " << label(command.name);
        std::set<std::string> documented;
        for (const Entry& e : s->entries) {
            const std::set<std::string> names = option_tokens(e.tag);
            EXPECT_FALSE(names.empty()) << "an entry of " << s->heading << " names no option: " << e.tag;
            documented.insert(names.begin(), names.end());
        }
        EXPECT_EQ(documented, command.option_names())
            << "the option entries (.TP) of " << s->heading << " and what --help lists";
    }
}

TEST(ManPage, DefaultsAndChoicesAreTheOnesHelpShows) {
    for (const CommandHelp& command : help()) {
        const Section* s = command_section(command.name);
        ASSERT_NE(s, nullptr);
        for (const HelpOption& o : command.options) {
            SCOPED_TRACE(label(command.name) + " " + o.names.back());
            const Entry* e = option_entry(*s, o);
            if (!e) continue;  // DescribesEveryOptionOfEveryCommandAndNoOther says so
            const std::string body = std::regex_replace(e->body, std::regex("\\s+"), " ");
            const size_t at = body.find("Default: ");
            if (o.default_value.empty()) {
                EXPECT_EQ(at, std::string::npos) << "--help shows no default, the page does: " << body;
            } else {
                const std::string said = at == std::string::npos ? "" : body.substr(at + 9);
                const std::string after = said.substr(std::min(said.size(), o.default_value.size()));
                EXPECT_TRUE(said.rfind(o.default_value, 0) == 0 && (after.empty() || !std::isalnum(after[0])))
                    << "--help shows the default " << o.default_value << "; the page says: " << body;
            }
            for (const std::string& choice : o.choices)
                EXPECT_TRUE(std::regex_search(body, std::regex("(^|[^\\w-])" + choice + "($|[^\\w-])")))
                    << "the choice " << choice << " is not described: " << body;
        }
    }
}

TEST(ManPage, ExitStatusIsTheOneHelpGives) {
    // "Exit codes: 0 all restored (or skipped), 1 some file failed, ..."
    const std::string& text = help().front().text;
    const size_t at = text.find("Exit codes:");
    ASSERT_NE(at, std::string::npos) << "--help gives no exit codes";
    const std::string line = text.substr(at, text.find('\n', at) - at);
    std::set<std::string> from_help;
    const std::regex code("(?::|,) (\\d+) ");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), code); it != std::sregex_iterator(); ++it)
        from_help.insert((*it)[1]);
    EXPECT_EQ(tags_of("EXIT STATUS"), from_help) << line;
}

// Every getenv("NAME") in app/ and kernels/, and every "IMRESTORE_..." string
// there (names handed to a helper that reads the variable).
std::set<std::string> environment_variables_read() {
    std::set<std::string> names;
    const std::regex read(R"re(getenv\("(\w+)"\)|"(IMRESTORE_[A-Z0-9_]+)")re");
    for (const char* folder : {"app", "kernels"})
        for (const auto& f : fs::recursive_directory_iterator(fs::path(IMRESTORE_SOURCE_DIR) / folder)) {
            const std::string ext = f.path().extension().string();
            if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
            const std::string code = test::slurp(f.path().string());
            for (auto it = std::sregex_iterator(code.begin(), code.end(), read); it != std::sregex_iterator(); ++it)
                names.insert((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
        }
    return names;
}

TEST(ManPage, EnvironmentListsEveryVariableTheCodeReads) {
    const std::set<std::string> read = environment_variables_read();
    EXPECT_GE(read.size(), 4u) << "the source scan found too little: " << IMRESTORE_SOURCE_DIR;
    const std::set<std::string> documented = tags_of("ENVIRONMENT");
    for (const std::string& name : read) EXPECT_TRUE(documented.count(name)) << name << " is not in ENVIRONMENT";
}

// groff's own warnings (-ww) and, where mandoc is installed, its lint.
TEST(ManPage, RendersWithoutWarnings) {
    test::ScratchDir dir("man");
    const std::string err = dir / "stderr.txt";
    bool checked = false;
    if (std::system("command -v groff >/dev/null") == 0) {
        const std::string groff = "groff -man -Tutf8 -ww -z " + test::q(IMRESTORE_MAN_PAGE) + " 2>" + test::q(err);
        EXPECT_EQ(std::system(groff.c_str()), 0);
        EXPECT_EQ(test::slurp(err), "") << "groff warns";
        checked = true;
    }
    if (std::system("command -v mandoc >/dev/null") == 0) {
        const std::string lint =
            "mandoc -T lint -W warning " + test::q(IMRESTORE_MAN_PAGE) + " >" + test::q(err) + " 2>&1";
        EXPECT_EQ(std::system(lint.c_str()), 0) << test::slurp(err);
        checked = true;
    }
    if (!checked) GTEST_SKIP() << "neither groff nor mandoc is installed (scripts/setup.sh installs groff-base)";
}

}  // namespace
}  // namespace imr
