_kconfigs_completion() {
    local IFS=$'\n'
    local response

    response=$(env KCONFIGS_COMP_LINE="${COMP_LINE:0:$COMP_POINT}" KCONFIGS_COMP_WORDBREAKS="$COMP_WORDBREAKS" \
COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD _KCONFIGS_COMPLETE=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=($value)
            [[ $value == *= ]] && compopt -o nospace  # KEY= waits for its value
        fi
    done

    return 0
}

_kconfigs_completion_setup() {
    complete -o nosort -F _kconfigs_completion kconfigs
}

_kconfigs_completion_setup;
