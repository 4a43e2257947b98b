#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks the C files that follow .clang-format already, and names the rest.
#
#   scripts/check-format.sh        check the files in scripts/format-clean.txt
#   scripts/check-format.sh -v     also list every C file not checked yet
#   scripts/check-format.sh -a     add to the list every file that now follows
#                                  .clang-format (after a file was reformatted)
#
# The tree was written by hand before .clang-format existed; reformatting it
# at once would rewrite files others are editing. So the files that already
# follow it are listed in scripts/format-clean.txt and must keep following it
# (a file there that clang-format would change fails); the others are
# counted, and listed with -v, until each is reformatted on its own and
# added with -a. The last line is "format: ok ..." or "format: FAIL ...".
set -u
cd "$(dirname "$0")/.."
LIST=scripts/format-clean.txt
CF=${CLANG_FORMAT:-clang-format}
if ! command -v "$CF" >/dev/null 2>&1; then
    echo "format: skipped (no $CF; Debian: apt-get install clang-format)"
    exit 0
fi
mode=${1:-}
clean() { "$CF" --dry-run -Werror "$1" >/dev/null 2>&1; }
mapfile -t all < <(git ls-files 'src/*.[ch]' 'tests/*.[ch]' 'bench/*.[ch]' | sort)
mapfile -t listed < <(grep -v '^#' "$LIST" | grep . | sort)
if [ "$mode" = -a ]; then
    for f in "${all[@]}"; do
        if ! grep -qxF "$f" "$LIST" && clean "$f"; then
            echo "$f" >>"$LIST"
            echo "added $f"
        fi
    done
    exit 0
fi
bad=0
for f in "${listed[@]}"; do
    if [ ! -e "$f" ]; then
        echo "$f: in $LIST but gone (remove the line)"
        bad=$((bad + 1))
    elif ! clean "$f"; then
        echo "$f: not as .clang-format says (see: $CF $f | diff $f -)"
        bad=$((bad + 1))
    fi
done
rest=0
for f in "${all[@]}"; do
    if ! printf '%s\n' "${listed[@]}" | grep -qxF "$f"; then
        rest=$((rest + 1))
        [ "$mode" = -v ] && echo "not checked yet: $f"
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "format: FAIL $bad of ${#listed[@]} checked files; $rest not checked yet"
    exit 1
fi
echo "format: ok ${#listed[@]} files; $rest not checked yet (-v lists them)"
