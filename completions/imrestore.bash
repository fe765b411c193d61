# bash completion for imrestore(1). Installed as
# share/bash-completion/completions/imrestore, which bash-completion loads the
# first time imrestore is completed; `source` this file to use it without.
# Needs bash 4.3 or later and nothing else.
#
# tests/test_completions.cpp holds it to `imrestore --help`: each command's
# options below must be the ones its --help lists, those that take a value
# must be the ones shown with one, and the extension lists must match the
# formats the tool reads and writes (app/image/formats.cpp).

# The options of each command (restore: the main command) that take a value,
# and those that do not. -g: bash-completion sources this file in a function.
declare -gA _imrestore_valued=(
    [restore]='-o --output -m --model -d --device --precision -b --batch --format --suffix --codec --bit-depth --quality
        --strength --noise-level --jpeg-quality --jpeg-projection --keep-gray --png-compression -j --threads --tile --max-memory --max-pixels
        --bench --kernel --shard --shard-count'
    [models]=''
    [model]='--validate-precision --write -d --device'
    [degrade]='-o --output --blur --noise --jpeg --subsampling --mix --seed --format --shard --shard-count'
    [eval]='-m --model -d --device -j --threads --blur --noise --jpeg --subsampling --mix --seed --degraded
        --baselines --jpeg-projection --keep-gray --shard --shard-count'
)
declare -gA _imrestore_flags=(
    [restore]='-h --help --version -r --recursive -f --force --strip --tta --timing --json --json-lines -q --quiet'
    [models]='-h --help --json'
    [model]='-h --help'
    [degrade]='-h --help -r --recursive -f --force --estimate-noise --estimate-jpeg-quality --json -q --quiet'
    [eval]='-h --help --tta -r --recursive --json -q --quiet'
)

_imrestore_commands='models model degrade eval'
# Image files the tool reads (any capitalisation), and the formats it writes.
_imrestore_input_extensions='png jpg jpeg bmp tif tiff webp pbm pgm ppm pnm gif tga psd'
_imrestore_output_formats='png jpg jpeg bmp tif tiff webp pgm ppm pnm tga'

# Whether option $2 of command $1 takes a value.
_imrestore_takes_value() {
    local valued=${_imrestore_valued[$1]}
    [[ " ${valued//[[:space:]]/ } " == *" $2 "* ]]
}

# Adds the files and folders whose names start with $1 to `candidates`;
# only files with one of the extensions $2 when it is given.
_imrestore_add_files() {
    local path ext folder
    while IFS= read -r path; do
        folder=$path
        [[ $folder == \~/* ]] && folder=$HOME/${folder:2}  # compgen keeps the tilde
        if [[ -d $folder || -z ${2-} ]]; then
            candidates+=("$path")
        elif [[ $path == *.* ]]; then
            ext=${path##*.}
            [[ " ${2-} " == *" ${ext,,} "* ]] && candidates+=("$path")
        fi
    done < <(compgen -f -- "$1")
    compopt -o filenames 2>/dev/null  # quotes the names, and marks folders with '/'
}

# Adds the bundled models' names that start with $2 to `candidates`, as the
# imrestore binary $1 lists them.
_imrestore_add_models() {
    local program=$1 line
    [[ $program == \~/* ]] && program=$HOME/${program:2}
    while IFS= read -r line; do
        [[ $line =~ \"name\":\ \"([^\"]*)\" && ${BASH_REMATCH[1]} == "$2"* ]] && candidates+=("${BASH_REMATCH[1]}")
    done < <("$program" models --json 2>/dev/null)
}

# Adds the values of option $2 that start with $3 to `candidates` ($1: the
# program, for the model names).
_imrestore_add_values() {
    local value=$3 name
    case $2 in
    -o | --output) _imrestore_add_files "$value" ;;
    --write) _imrestore_add_files "$value" h5 ;;
    -m | --model)
        [[ $value == */* ]] || _imrestore_add_models "$1" "$value"
        _imrestore_add_files "$value" h5
        ;;
    -d | --device)
        # auto, cpu, cuda, cuda:N for each NVIDIA GPU the driver shows, and cuda:all for two or more.
        local -a devices=(auto cpu cuda) gpus=(/proc/driver/nvidia/gpus/*)
        local i
        [[ -e ${gpus[0]} ]] && for ((i = 0; i < ${#gpus[@]}; i++)); do devices+=("cuda:$i"); done
        [[ ${#gpus[@]} -gt 1 ]] && devices+=(cuda:all)
        for name in "${devices[@]}"; do [[ $name == "$value"* ]] && candidates+=("$name"); done
        ;;
    --format) for name in $_imrestore_output_formats; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --precision) for name in fp32 tf32 bf16 fp16 auto; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --jpeg-projection | --keep-gray) for name in auto on off; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --codec) for name in auto opencv stb; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --bit-depth) for name in 0 8 16; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --subsampling) for name in 420 444; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --mix) for name in photo; do [[ $name == "$value"* ]] && candidates+=("$name"); done ;;
    --degraded | --validate-precision)
        local folder
        while IFS= read -r folder; do candidates+=("$folder"); done < <(compgen -d -- "$value")
        compopt -o filenames 2>/dev/null
        ;;
    --baselines)
        # One word, or a comma-separated list of baseline names.
        local listed=${value%"${value##*,}"}
        if [[ -z $listed ]]; then
            for name in auto none all; do [[ $name == "$value"* ]] && candidates+=("$name"); done
        fi
        for name in gaussian bilateral nlmeans unsharp; do
            [[ $listed$name == "$value"* && ,$listed != *,$name,* ]] && candidates+=("$listed$name")
        done
        ;;
    esac  # the others take numbers or free text: nothing to offer
}

_imrestore() {
    # The words up to the cursor, split at blanks only: COMP_WORDS also splits
    # at '=' and ':' (--model=NAME, cuda:1). `read` without -r removes the
    # backslashes that quote blanks in file names.
    local line=${COMP_LINE:0:COMP_POINT}
    local -a words
    # shellcheck disable=SC2162
    read -a words <<<"$line"
    [[ ${#words[@]} -eq 0 || ($line == *[[:space:]] && $line != *\\[[:space:]]) ]] && words+=('')
    local n=${#words[@]} cur=${words[-1]}

    # The command (the first word that is neither an option nor an option's
    # value, when it names one), and whether no positional word has been
    # given to it before the one being completed.
    local command=restore first_positional=1 i word
    for ((i = 1; i < n - 1; i++)); do
        word=${words[i]}
        if [[ $word == -*=* ]]; then
            continue
        elif [[ $word == -* ]]; then
            _imrestore_takes_value "$command" "$word" && ((i++))
        elif ((first_positional)) && [[ $command == restore && " $_imrestore_commands " == *" $word "* ]]; then
            command=$word
        else
            first_positional=0
        fi
    done

    # The option whose value is being completed, if any.
    local option='' value=''
    if [[ $cur == --*=* ]] && _imrestore_takes_value "$command" "${cur%%=*}"; then
        option=${cur%%=*} value=${cur#*=}
    elif ((n > 2)) && _imrestore_takes_value "$command" "${words[n - 2]}"; then
        option=${words[n - 2]} value=$cur
    fi

    local -a candidates=()
    if [[ -n $option ]]; then
        _imrestore_add_values "${words[0]}" "$option" "$value"
        [[ $cur == --*=* ]] && candidates=("${candidates[@]/#/$option=}")
    elif [[ $cur == -* ]]; then
        local name
        for name in ${_imrestore_valued[$command]} ${_imrestore_flags[$command]}; do
            [[ $name == "$cur"* ]] && candidates+=("$name")
        done
    else
        case $command in
        restore)
            if ((first_positional)); then
                for word in $_imrestore_commands; do [[ $word == "$cur"* ]] && candidates+=("$word"); done
            fi
            _imrestore_add_files "$cur" "$_imrestore_input_extensions"
            ;;
        model) if ((first_positional)); then
            _imrestore_add_models "${words[0]}" "$cur"
            _imrestore_add_files "$cur" h5
        fi ;;
        degrade | eval) _imrestore_add_files "$cur" "$_imrestore_input_extensions" ;;
        esac
    fi

    # Readline replaces only the part of the word after its last '=' or ':'
    # (when COMP_WORDBREAKS has them), so the candidates lose what is before.
    local breaks=''
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+='='
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=':'
    if [[ -n $breaks && $cur == *["$breaks"]* ]]; then
        local kept=${cur##*["$breaks"]}
        local cut=$((${#cur} - ${#kept})) k
        for k in "${!candidates[@]}"; do candidates[k]=${candidates[k]:cut}; done
    fi
    COMPREPLY=("${candidates[@]}")
}

complete -F _imrestore imrestore
