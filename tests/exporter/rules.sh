#!/usr/bin/env bash
# exporter/rules: the alerting rules of contrib/prometheus/ through the real
# promtool. `promtool check rules` accepts sluice-rules.yml and `promtool
# test rules` passes sluice-rules.test.yml; every alert has for:, a
# severity, a summary and a description; every alert has a test case in
# which it fires and one in which it stays quiet; and every sluice_ metric
# the rules use is a family doc/metrics.md documents.
# Usage: rules.sh [DIR] (default contrib/prometheus: DIR holds both files).
# Shown to fail: with SluiceSourceTableChurning's 0.9 made 9, promtool test
# rules reports that alert's firing case; with a quiet case deleted, the
# coverage check names the alert.
set -euo pipefail
# shellcheck source=tests/exporter/lib.sh
. "$(dirname "$0")/lib.sh"

dir=${1:-$SLUICE_ROOT/contrib/prometheus}
rules=$dir/sluice-rules.yml
cases=$dir/sluice-rules.test.yml
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
[[ -r $rules && -r $cases ]] || fail "$rules or $cases missing"

out=$(promtool check rules "$rules" 2>&1) || fail "promtool check rules $rules: $out"
ok "promtool check rules: $(grep -o '[0-9]* rules found' <<<"$out")"
out=$(cd "$dir" && promtool test rules "$(basename "$cases")" 2>&1) ||
	fail "promtool test rules $cases:"$'\n'"$out"
ok "promtool test rules $(basename "$cases")"

# Each alert's block, from its "- alert:" to the next rule or group.
missing=$(awk '
	function check() {
		if (name == "") return
		if (!f) print name ": no for:"
		if (!s) print name ": no severity label"
		if (!u) print name ": no summary annotation"
		if (!d) print name ": no description annotation"
	}
	/^[[:space:]]*- (alert|record|name):/ { check(); name = ""; f = s = u = d = 0 }
	/^[[:space:]]*- alert:/ { name = $3 }
	/^[[:space:]]+for:/ { f = 1 }
	/^[[:space:]]+severity: (critical|warning|info)$/ { s = 1 }
	/^[[:space:]]+summary:/ { u = 1 }
	/^[[:space:]]+description:/ { d = 1 }
	END { check() }' "$rules")
[[ -z $missing ]] || fail "alerts incomplete in $rules:"$'\n'"$missing"
alerts=$(awk '/^[[:space:]]*- alert:/ { print $3 }' "$rules" | sort)
dups=$(uniq -d <<<"$alerts")
[[ -z $dups ]] || fail "alerts named twice: $dups"
n=$(grep -c . <<<"$alerts" || true)
assert_ge "$n" 10 "alerts, each with for:, severity, summary and description"

# The cases: after "alertname: X", an "- exp_labels:" is a firing case and
# "exp_alerts: []" a quiet one.
covered=$(awk '
	/^[[:space:]]*alertname:/ { name = $2 }
	/^[[:space:]]*- exp_labels:/ { fire[name] = 1 }
	/^[[:space:]]*exp_alerts:[[:space:]]*\[\][[:space:]]*$/ { quiet[name] = 1 }
	END { for (a in fire) if (a in quiet) print a }' "$cases" | sort)
uncovered=$(comm -23 <(echo "$alerts") <(echo "$covered"))
[[ -z $uncovered ]] ||
	fail "alerts without both a firing and a quiet case in $cases:"$'\n'"$uncovered"
ok "every alert has a firing and a quiet case"

# No metric the documentation does not explain.
used=$(grep -v '^[[:space:]]*#' "$rules" | grep -oE '\bsluice_[a-z_]+' | sort -u)
unknown=$(comm -23 <(echo "$used") <(doc_families | sort -u))
[[ -z $unknown ]] || fail "metrics the rules use that doc/metrics.md does not list: $unknown"
ok "the rules use $(wc -l <<<"$used") families, each in doc/metrics.md"
