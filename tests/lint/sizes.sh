#!/usr/bin/env bash
# lint/sizes: no C file (.c or .h) under bpf/, user/, include/, tools/ or
# tests/ is over 900 lines, and no function in one is over 80: a function
# counted from a line that starts with '{' to the next line that starts
# with '}', both included. Names each file and function over; exits 1 if
# any is not in the exceptions below.
#
# usage: tests/lint/sizes.sh [FILE...]   (default: every C file of the tree)
set -uo pipefail

MAX_FILE_LINES=900
MAX_FUNC_LINES=80

# Known exceptions, one a line: FILE or FILE:FUNCTION, then why. Remove a
# line when its file has been split.
EXCEPTIONS='
'

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || exit 2
cd "$ROOT" || exit 2

if (($#)); then
	files=("$@")
else
	mapfile -t files < <(find bpf user include tools tests -type f \( -name '*.c' -o -name '*.h' \) | sort)
fi
((${#files[@]})) || { echo "lint/sizes: no C files found"; exit 2; }

# "FILE" or "FILE:FUNCTION" is excepted (a FILE:* line covers its functions).
excepted() {
	local what=$1 pat rest
	while read -r pat rest; do
		[[ -z $pat ]] && continue
		# shellcheck disable=SC2053 # the exception is a glob on purpose
		[[ $what == $pat ]] && return 0
	done <<<"$EXCEPTIONS"
	return 1
}

# One line per finding: "FILE<TAB>FUNCTION<TAB>LINES<TAB>FIRST_LINE"
# (FUNCTION "-" for the file's own length).
findings=$(awk -v maxf="$MAX_FILE_LINES" -v maxfn="$MAX_FUNC_LINES" '
	function file_end() { if (last != "" && lastn > maxf) printf "%s\t-\t%d\t1\n", last, lastn }
	FNR == 1 { file_end(); start = 0; sig = ""; head = "" }
	/^\{/ && !start { start = FNR; head = sig }
	/^\}/ && start {
		n = FNR - start + 1
		if (n > maxfn) {
			name = head
			sub(/\(.*/, "", name)
			sub(/.*[ *]/, "", name)
			if (name == "")
				name = "line " start
			printf "%s\t%s\t%d\t%d\n", FILENAME, name, n, start
		}
		start = 0
	}
	/^[A-Za-z_]/ { sig = $0 }
	{ last = FILENAME; lastn = FNR }
	END { file_end() }
' "${files[@]}")

bad=0
known=0
while IFS=$'\t' read -r file func lines first; do
	[[ -z $file ]] && continue
	if [[ $func == - ]]; then
		what=$file
		msg="$file: $lines lines, over $MAX_FILE_LINES"
	else
		what=$file:$func
		msg="$file:$first: $func() is $lines lines, over $MAX_FUNC_LINES"
	fi
	if excepted "$what"; then
		echo "known: $msg"
		known=$((known + 1))
	else
		echo "FAIL: $msg"
		bad=$((bad + 1))
	fi
done <<<"$findings"

echo "# ${#files[@]} files: $bad over the limits, $known known exceptions"
((bad == 0))
