# Arithmetic helpers for shell scripts. test.sh checks them: sh test.sh

# sum N...: prints the sum of its arguments.
sum() {
    total=0
    for n in "$@"; do
        total=$((total + n))
    done
    echo "$total"
}

# min N...: prints the smallest of its arguments.
min() {
    best=$1
    for n in "$@"; do
        if [ "$n" -lt "$best" ]; then best=$n; fi
    done
    echo "$best"
}

# max N...: prints the largest of its arguments.
max() {
    best=$1
    for n in "$@"; do
        if [ "$n" -lt "$best" ]; then best=$n; fi
    done
    echo "$best"
}
