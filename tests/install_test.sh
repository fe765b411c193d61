#!/usr/bin/env bash
# `cmake --install` puts the manual page and the shell completions where man,
# bash-completion and Debian's zsh look for them, and they work from there:
#   install_test.sh BUILD_DIR [CMAKE]
# installs BUILD_DIR into a temporary prefix, reads the page with man (where
# man is installed), completes `imrestore --de` with the installed bash (and
# zsh, where installed) completion, and lists the installed models with the
# installed binary.
set -euo pipefail
build=$1
cmake=${2:-cmake}
tests=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() {
    echo "install_test: $*" >&2
    exit 1
}

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
bash_completion=$prefix/share/bash-completion/completions/imrestore
for file in bin/imrestore share/man/man1/imrestore.1 share/bash-completion/completions/imrestore \
    share/zsh/vendor-completions/_imrestore; do
    [[ -f $prefix/$file ]] || fail "$file was not installed"
done

if command -v man >/dev/null; then
    page=$(MANPATH=$prefix/share/man MANWIDTH=80 man -P cat imrestore 2>&1) || fail "man imrestore: $page"
    [[ $page == *"imrestore degrade"* && $page == *"EXIT STATUS"* ]] || fail "man imrestore shows: $page"
else
    echo "install_test: man is not installed; not reading the page with it"
fi

bash -n "$bash_completion" || fail "$bash_completion does not parse"
offered=$(bash "$tests/bash_complete.sh" "$bash_completion" "imrestore --de")
[[ $offered == "<line>imrestore --de"$'\n'"<match>--device" ]] || fail "bash completes 'imrestore --de' to: $offered"

if command -v zsh >/dev/null; then
    offered=$(zsh "$tests/zsh_complete.zsh" "$prefix/share/zsh/vendor-completions" "imrestore --de")
    [[ $offered == "<line>imrestore --de"$'\n'"<match>--device"* ]] || fail "zsh completes 'imrestore --de' to: $offered"
else
    echo "install_test: zsh is not installed; not trying its completion"
fi

models=$(env -u IMRESTORE_MODEL_PATH "$prefix/bin/imrestore" models) || fail "imrestore models: $models"
[[ $models == *"found in: $prefix/share/imrestore/models"* ]] || fail "the installed imrestore lists: $models"
echo "install_test: $prefix: manual page, completions and models installed and working"
