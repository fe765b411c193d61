// The option names in a piece of documentation: "-o" and "--output" in
// "-o, --output PATH" (a manual page's tag) or in
// "'(-o --output)'{-o+,--output=}'[...]'" (a zsh completion spec). A name
// starts at a '-' that does not continue a word, so "0-255" and
// "machine-readable" name none.
#pragma once

#include <cctype>
#include <set>
#include <string>

namespace imr::test {

inline std::set<std::string> option_tokens(const std::string& text) {
    auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    auto at = [&](size_t i) { return i < text.size() ? text[i] : '\0'; };
    std::set<std::string> names;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '-' || (i > 0 && (alnum(text[i - 1]) || text[i - 1] == '-'))) continue;
        if (at(i + 1) == '-' && std::isalpha(static_cast<unsigned char>(at(i + 2)))) {  // --long-name
            size_t end = i + 2;
            while (alnum(at(end)) || at(end) == '-') ++end;
            names.insert(text.substr(i, end - i));
            i = end;
        } else if (std::isalpha(static_cast<unsigned char>(at(i + 1))) && !alnum(at(i + 2)) && at(i + 2) != '-') {
            names.insert(text.substr(i, 2));  // -x
            i += 1;
        }
    }
    return names;
}

}  // namespace imr::test
