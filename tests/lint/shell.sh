#!/usr/bin/env bash
# lint/shell: shellcheck at severity warning over every tracked shell
# script: the *.sh files and every other tracked file whose first line
# runs sh or bash (tests/run, .ci/run, the Debian maintainer scripts).
# Sourced files are followed (-x) where a `# shellcheck source=` says
# where they are. Exits 1 on any finding, 77 without shellcheck or git.
#
# usage: tests/lint/shell.sh [FILE...]   (default: every tracked script)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || exit 2
cd "$ROOT" || exit 2

command -v shellcheck >/dev/null || { echo "lint/shell: shellcheck not installed (tools/install-deps.sh)"; exit 77; }

# Every tracked file that is a shell script, by name or by its #! line.
scripts() {
	local f line
	git ls-files -z | while IFS= read -r -d '' f; do
		[[ -f $f && ! -L $f ]] || continue
		if [[ $f == *.sh ]]; then
			printf '%s\n' "$f"
			continue
		fi
		IFS= read -r line <"$f" 2>/dev/null || continue
		[[ $line =~ ^#!.*(/|[[:space:]])(ba)?sh([[:space:]]|$) ]] && printf '%s\n' "$f"
	done
}

if (($#)); then
	files=("$@")
else
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "lint/shell: not a git checkout"; exit 77; }
	mapfile -t files < <(scripts)
fi
((${#files[@]})) || { echo "lint/shell: no scripts found"; exit 2; }

# In batches, one per CPU at a time (shellcheck takes about a minute of
# CPU over the tree); one line per finding, so batches' lines never mix.
if printf '%s\0' "${files[@]}" |
	xargs -0 -P "$(nproc 2>/dev/null || echo 1)" -n 16 shellcheck -S warning -x -f gcc; then
	echo "lint/shell: ${#files[@]} scripts, no findings at severity warning"
	exit 0
fi
echo "lint/shell: findings above (shellcheck -S warning -x; run it on a file for the details)"
exit 1
