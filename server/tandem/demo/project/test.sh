# The tests for math.sh. Run them with: sh test.sh
cd "$(dirname "$0")" || exit 1
. ./math.sh

failed=0
# check NAME ACTUAL EXPECTED
check() {
    if [ "$2" = "$3" ]; then
        echo "ok    $1"
    else
        echo "FAIL  $1: expected $3, got $2"
        failed=$((failed + 1))
    fi
}

check "sum 1 2 3" "$(sum 1 2 3)" 6
check "min 3 9 4" "$(min 3 9 4)" 3
check "max 3 9 4" "$(max 3 9 4)" 9
check "max 7" "$(max 7)" 7

if [ "$failed" -ne 0 ]; then
    echo "$failed of 4 failed"
    exit 1
fi
echo "all 4 passed"
