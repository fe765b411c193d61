// The shell completions (completions/imrestore.bash, completions/_imrestore)
// against the command line: for every command they offer exactly the options
// its --help lists, complete a value after exactly the options that take one
// (the choices --help shows, the formats the tool reads and writes, the
// bundled models, the devices and baselines), and leave out what readline
// keeps. Bash is driven through tests/bash_complete.sh; zsh, where it is
// installed, through tests/zsh_complete.zsh. The zsh script's option lists
// are also read as text, so that a machine without zsh notices drift too.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "cli_help.h"
#include "cli_run.h"
#include "eval/baselines.h"
#include "image/formats.h"
#include "option_tokens.h"

namespace imr {
namespace {

using test::CommandHelp;
using test::HelpOption;
using test::q;
using test::ScratchDir;
using test::slurp;

const std::string kBashScript = std::string(IMRESTORE_SOURCE_DIR) + "/completions/imrestore.bash";
const std::string kZshFolder = std::string(IMRESTORE_SOURCE_DIR) + "/completions";
const std::string kExe = IMRESTORE_EXE;

using Words = std::set<std::string>;

const std::vector<CommandHelp>& help() {
    return test::all_command_help();
}

// The command line that starts `command` ("" for the main command).
std::string start(const std::string& command) {
    return command.empty() ? kExe : kExe + " " + command;
}

// What the shell's completion offers for each of `lines` (the cursor at its
// end), run in folder `cwd`: tests/bash_complete.sh or tests/zsh_complete.zsh,
// which print "<line>LINE" and then "<match>CANDIDATE" lines.
enum class Shell { Bash, Zsh };
std::map<std::string, Words> complete(Shell shell, const std::vector<std::string>& lines, const std::string& cwd) {
    ScratchDir io("complete");
    const std::string tests = std::string(IMRESTORE_SOURCE_DIR) + "/tests/";
    std::string cmd = "cd " + q(cwd) + " && " +
                      (shell == Shell::Bash ? "bash " + q(tests + "bash_complete.sh") + " " + q(kBashScript)
                                            : "zsh " + q(tests + "zsh_complete.zsh") + " " + q(kZshFolder));
    for (const std::string& line : lines) cmd += " " + q(line);
    cmd += " >" + q(io / "out") + " 2>" + q(io / "err");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(io / "err");
    std::map<std::string, Words> out;
    std::string current;
    for (const std::string& line : test::split(slurp(io / "out"), '\n')) {
        if (line.rfind("<line>", 0) == 0) current = line.substr(6), out[current];
        if (line.rfind("<match>", 0) == 0) out[current].insert(line.substr(7));
    }
    for (const std::string& line : lines) EXPECT_TRUE(out.count(line)) << "nothing came back for: " << line;
    return out;
}

Words bash_complete(const std::string& line, const std::string& cwd) {
    return complete(Shell::Bash, {line}, cwd)[line];
}

bool zsh_installed() {
    return std::system("command -v zsh >/dev/null") == 0;
}

std::string extension_without_dot(const char* ext) {
    return std::string(ext).substr(1);
}

// Every format any build reads or writes (the table, not this build's
// readable_extensions(): the completions offer what any build reads).
Words extensions(bool write) {
    Words out;
    for (const imageio::FormatInfo& f : imageio::formats())
        for (const char* e : write ? f.write_ext : f.read_ext) out.insert(extension_without_dot(e));
    return out;
}

const Words& bundled_model_names() {
    static const Words names = [] {
        ScratchDir dir("models");
        const std::string json = test::imrestore("models --json", dir).out;
        Words found;
        const std::regex name("\"name\": \"([^\"]+)\"");
        for (auto it = std::sregex_iterator(json.begin(), json.end(), name); it != std::sregex_iterator(); ++it)
            found.insert((*it)[1]);
        EXPECT_FALSE(found.empty()) << json;
        return found;
    }();
    return names;
}

Words with_prefix(const Words& words, const std::string& prefix) {
    Words out;
    for (const std::string& w : words)
        if (w.rfind(prefix, 0) == 0) out.insert(w);
    return out;
}

// ---------------------------------------------------------------- bash

TEST(BashCompletion, ScriptParsesAndRegistersImrestore) {
    EXPECT_EQ(std::system(("bash -n " + q(kBashScript)).c_str()), 0);
    ScratchDir dir("bash");
    const std::string cmd = "bash -c 'source " + kBashScript + " && complete -p imrestore' >" + q(dir / "out");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_NE(slurp(dir / "out").find("-F _imrestore imrestore"), std::string::npos) << slurp(dir / "out");
}

TEST(BashCompletion, OffersTheOptionsEachCommandsHelpLists) {
    ScratchDir dir("bash");
    EXPECT_EQ(bash_complete("imrestore --de", dir.path()), Words{"--device"});
    for (const CommandHelp& command : help()) {
        SCOPED_TRACE("command '" + command.name + "'");
        EXPECT_EQ(bash_complete(start(command.name) + " -", dir.path()), command.option_names());
    }
}

TEST(BashCompletion, CompletesAValueAfterExactlyTheOptionsThatTakeOne) {
    ScratchDir dir("bash");  // empty: no file name starts with '-'
    // "imrestore", not the built binary: no model names to ask it for here.
    auto line_of = [](const CommandHelp& command, const std::string& option) {
        return "imrestore " + (command.name.empty() ? "" : command.name + " ") + option + " -";
    };
    std::vector<std::string> lines;
    for (const CommandHelp& command : help())
        for (const HelpOption& option : command.options)
            for (const std::string& name : option.names) lines.push_back(line_of(command, name));
    const std::map<std::string, Words> offered = complete(Shell::Bash, lines, dir.path());
    for (const CommandHelp& command : help())
        for (const HelpOption& option : command.options)
            for (const std::string& name : option.names) {
                const std::string line = line_of(command, name);
                if (option.takes_value)
                    EXPECT_EQ(offered.at(line), Words{}) << line << ": options offered where a value goes";
                else
                    EXPECT_EQ(offered.at(line), command.option_names()) << line << ": " << name << " takes no value";
            }
}

TEST(BashCompletion, OffersTheChoicesHelpShows) {
    ScratchDir dir("bash");
    int with_choices = 0;
    for (const CommandHelp& command : help())
        for (const HelpOption& option : command.options) {
            if (option.choices.empty()) continue;
            ++with_choices;
            const Words choices(option.choices.begin(), option.choices.end());
            EXPECT_EQ(bash_complete(start(command.name) + " " + option.names.back() + " ", dir.path()), choices)
                << option.names.back();
        }
    EXPECT_GE(with_choices, 2) << "--codec and --bit-depth show their choices in --help";
}

TEST(BashCompletion, OffersImageFilesFoldersAndCommands) {
    ScratchDir dir("bash");
    Words images;
    for (const std::string& ext : extensions(false)) images.insert("photo." + ext);
    images.insert("SHOUT.JPG");
    for (const std::string& name : images) std::ofstream(dir / name) << "";
    for (const char* other : {"notes.txt", "noext", "model.h5"}) std::ofstream(dir / other) << "";
    std::filesystem::create_directory(dir / "sub");

    Words inputs = images;
    inputs.insert("sub");
    Words first = inputs;
    for (const std::string& sub : help().front().subcommands) first.insert(sub);
    Words everything = inputs;
    everything.insert({"notes.txt", "noext", "model.h5"});
    Words models = bundled_model_names();
    models.insert({"model.h5", "sub"});
    const std::vector<std::pair<std::string, Words>> expected = {
        {kExe + " ", first},
        {kExe + " -q ", first},
        {kExe + " photo.png ", inputs},  // commands only come first
        {kExe + " degrade ", inputs},
        {kExe + " eval -m denoise ", inputs},
        {kExe + " eval --degraded ", Words{"sub"}},
        {kExe + " x.png -o ", everything},
        {kExe + " -m ", models},
        {kExe + " model ", models},
    };
    std::vector<std::string> lines;
    for (const auto& [line, words] : expected) lines.push_back(line);
    const std::map<std::string, Words> offered = complete(Shell::Bash, lines, dir.path());
    for (const auto& [line, words] : expected) EXPECT_EQ(offered.at(line), words) << line;
}

TEST(BashCompletion, OffersTheFormatsTheToolWrites) {
    ScratchDir dir("bash");
    EXPECT_EQ(bash_complete(kExe + " --format ", dir.path()), extensions(true));
    EXPECT_EQ(bash_complete(kExe + " degrade --format ", dir.path()), extensions(true));
}

TEST(BashCompletion, OffersDevicesAndBaselines) {
    ScratchDir dir("bash");
    const Words devices = bash_complete(kExe + " -d ", dir.path());
    for (const char* d : {"auto", "cpu", "cuda"}) EXPECT_TRUE(devices.count(d)) << d;
    for (const std::string& d : devices)
        EXPECT_TRUE(d == "auto" || d == "cpu" || std::regex_match(d, std::regex("cuda(:[0-9]+)?"))) << d;

    Words baselines(all_baseline_names().begin(), all_baseline_names().end());
    Words with_words = baselines;
    with_words.insert({"auto", "none", "all"});
    EXPECT_EQ(bash_complete(kExe + " eval x --baselines ", dir.path()), with_words);
    Words after_first;
    for (const std::string& b : baselines)
        if (b != "gaussian") after_first.insert("gaussian," + b);
    EXPECT_EQ(bash_complete(kExe + " eval x --baselines gaussian,", dir.path()), after_first);
}

// Readline replaces only what follows the last '=' or ':' of the word.
TEST(BashCompletion, LeavesOutWhatReadlineKeeps) {
    ScratchDir dir("bash");
    std::ofstream(dir / "x:y.png") << "";
    EXPECT_EQ(bash_complete(kExe + " x:", dir.path()), Words{"y.png"});
    EXPECT_EQ(bash_complete(kExe + " --model=de", dir.path()), with_prefix(bundled_model_names(), "de"));
    EXPECT_EQ(bash_complete(kExe + " --codec=o", dir.path()), Words{"opencv"});
}

// ---------------------------------------------------------------- zsh

// The option names in the specs ('...' lines) of _imrestore_command_NAME.
Words zsh_command_options(const std::string& script, const std::string& command) {
    const std::string head = "_imrestore_command_" + (command.empty() ? std::string("restore") : command) + "() {";
    const size_t begin = script.find(head);
    if (begin == std::string::npos) return {};
    const size_t end = script.find("\n}", begin);
    Words names;
    for (const std::string& line : test::split(script.substr(begin, end - begin), '\n')) {
        const size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && line[first] == '\'') {
            const std::set<std::string> found = test::option_tokens(line);
            names.insert(found.begin(), found.end());
        }
    }
    return names;
}

TEST(ZshCompletion, EachCommandsFunctionNamesTheOptionsHelpLists) {
    const std::string script = slurp(kZshFolder + "/_imrestore");
    for (const CommandHelp& command : help())
        EXPECT_EQ(zsh_command_options(script, command.name), command.option_names())
            << "the specs of _imrestore_command_" << (command.name.empty() ? "restore" : command.name);
}

TEST(ZshCompletion, ExtensionListsAreTheFormatsTheToolReadsAndWrites) {
    const std::string script = slurp(kZshFolder + "/_imrestore");
    std::smatch read, write;
    ASSERT_TRUE(std::regex_search(script, read, std::regex(R"(\(#i\)\(([a-z0-9|]+)\))")));
    ASSERT_TRUE(std::regex_search(script, write, std::regex(R"(formats=\(([a-z0-9 ]+)\))")));
    auto words = [](const std::string& list, char by) {
        const std::vector<std::string> split = test::split(list, by);
        return Words(split.begin(), split.end());
    };
    EXPECT_EQ(words(read[1], '|'), extensions(false));
    EXPECT_EQ(words(write[1], ' '), extensions(true));
}

TEST(ZshCompletion, CompletesOptionsAndValues) {
    if (!zsh_installed()) GTEST_SKIP() << "zsh is not installed";
    EXPECT_EQ(std::system(("zsh -n " + q(kZshFolder + "/_imrestore")).c_str()), 0);
    ScratchDir dir("zsh");
    std::vector<std::string> lines = {"imrestore --de", kExe + " -m ", kExe + " eval x --baselines "};
    for (const CommandHelp& command : help()) lines.push_back(start(command.name) + " -");
    for (const CommandHelp& command : help())
        for (const HelpOption& option : command.options)
            if (!option.choices.empty()) lines.push_back(start(command.name) + " " + option.names.back() + " ");
    const std::map<std::string, Words> offered = complete(Shell::Zsh, lines, dir.path());

    EXPECT_EQ(offered.at("imrestore --de"), Words{"--device"});
    EXPECT_EQ(offered.at(kExe + " -m "), bundled_model_names());
    Words baselines(all_baseline_names().begin(), all_baseline_names().end());
    baselines.insert({"auto", "none", "all"});
    EXPECT_EQ(offered.at(kExe + " eval x --baselines "), baselines);
    for (const CommandHelp& command : help())
        EXPECT_EQ(offered.at(start(command.name) + " -"), command.option_names()) << "command '" << command.name << "'";
    for (const CommandHelp& command : help())
        for (const HelpOption& option : command.options)
            if (!option.choices.empty())
                EXPECT_EQ(offered.at(start(command.name) + " " + option.names.back() + " "),
                          Words(option.choices.begin(), option.choices.end()))
                    << option.names.back();
}

}  // namespace
}  // namespace imr
