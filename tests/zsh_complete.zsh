#!/usr/bin/env zsh
# Prints what zsh's completion offers for command lines, as a Tab at the end
# of each would: zsh_complete.zsh FOLDER LINE... loads the completion
# functions in FOLDER (_imrestore) into an interactive zsh on a pseudo
# terminal (zsh/zpty) and prints, for each LINE, "<line>LINE" and then one
# "<match>CANDIDATE" a candidate (tests/test_completions.cpp reads them).
# Candidates are caught where completion functions add them (compadd).
zmodload zsh/zpty || exit 2
folder=$1
shift
zpty -b completion zsh -f -i || exit 2

# Reads the terminal until MARKER has been printed, or for SECONDS (5).
# Markers are printed as "<na""me>", so that the echo of the typed command is
# not taken for them.
read_until() {
  local marker=$1 chunk
  integer tries=0 most=$(( ${2:-5} * 20 ))
  got=
  while (( tries++ < most )); do
    if zpty -r -t completion chunk; then
      got+=$chunk
      [[ $got == *$marker* ]] && return 0
    else
      sleep 0.05
    fi
  done
  return 1
}

# What is typed before zle's first prompt can be dropped: probe until zsh
# answers, then set up completion in one line and wait for it to finish.
integer probes=0
until zpty -w completion 'print "<al""ive>"' && read_until '<alive>' 1; do
  (( probes++ < 20 )) || { print -u2 "zsh_complete.zsh: zsh does not answer: $got"; exit 3; }
done
# Each compadd call also prints the candidates that match the word so far.
zpty -w completion "PS1=''; fpath=(${(q)folder} \$fpath); autoload -Uz compinit; compinit -u -D;"\
' zstyle ":completion:*" list-prompt ""; zstyle ":completion:*" menu no;'\
' compadd() { local -a m; builtin compadd -O m "$@"; (( $#m )) && print -rl -- "<match>"${^m}; builtin compadd "$@"; };'\
' print "<rea""dy>"'
read_until '<ready>' || { print -u2 "zsh_complete.zsh: completion did not load: $got"; exit 3; }
integer n=0
for line in "$@"; do
  (( n++ ))
  zpty -w -n completion "$line"$'\t'
  zpty -w completion $'\C-u'"print '<done' $n'>'"
  read_until "<done $n>" || { print -u2 "zsh_complete.zsh: no answer to: $line: $got"; exit 3; }
  print -r -- "<line>$line"
  print -rl -- ${(M)${(f)${got//$'\r'/}//<match>/$'\n'<match>}:#<match>*}
done
zpty -d completion
