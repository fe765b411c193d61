#!/usr/bin/env bash
# Prints what a bash completion script offers for command lines, as a Tab at
# the end of each would: bash_complete.sh SCRIPT LINE... prints, for each
# LINE, "<line>LINE" and then one "<match>CANDIDATE" a candidate
# (tests/test_completions.cpp and tests/install_test.sh read them). It fails
# when SCRIPT does not load or registers no completion function for a line's
# first word.
set -uo pipefail
script=$1
shift
# shellcheck source=/dev/null
source "$script" || exit 2
declare -A functions  # command name -> its completion function
for line in "$@"; do
    read -ra words <<<"$line"
    command_name=${words[0]}
    [[ $line == *' ' ]] && words+=('')
    if [[ -z ${functions[$command_name]-} ]]; then
        spec=$(complete -p "$command_name" 2>/dev/null || complete -p "${command_name##*/}" 2>/dev/null) || {
            echo "bash_complete.sh: $script registers no completion for $command_name" >&2
            exit 2
        }
        [[ $spec =~ \ -F\ ([^ ]+) ]] || {
            echo "bash_complete.sh: no -F function in: $spec" >&2
            exit 2
        }
        functions[$command_name]=${BASH_REMATCH[1]}
    fi
    function=${functions[$command_name]}
    # What bash sets before calling the function (COMP_WORDS split at blanks
    # only; the script reads COMP_LINE).
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMP_WORDS=("${words[@]}")
    COMP_CWORD=$((${#words[@]} - 1))
    COMP_TYPE=9
    COMPREPLY=()
    "$function" "$command_name" "${words[COMP_CWORD]}" "${words[COMP_CWORD - 1]:-}"
    printf '<line>%s\n' "$line"
    ((${#COMPREPLY[@]})) && printf '<match>%s\n' "${COMPREPLY[@]}"
done
exit 0
