# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Turns the usage lines of `sluice help` into the SYNOPSIS of sluice(8): a
# literal block, each command wrapped before an option, an option group
# ("[...]") or a choice ("(... | ...)"), never inside brackets, so that no
# line passes 78 columns.
BEGIN { print "::"; print "" }
/^Usage: sluice / || /^       sluice / {
	sub(/^(Usage:|      ) /, "")
	# The words outside brackets, and each bracketed group whole.
	n = 0; depth = 0; word = ""
	for (i = 1; i <= length($0); i++) {
		c = substr($0, i, 1)
		if (c == "[" || c == "(")
			depth++
		if (c == "]" || c == ")")
			depth--
		if (c == " " && depth == 0) {
			part[++n] = word
			word = ""
			continue
		}
		word = word c
	}
	part[++n] = word
	line = "    " part[1]
	for (i = 2; i <= n; i++) {
		if (part[i] ~ /^[-[(]/ && length(line) + 1 + length(part[i]) > 78) {
			print line
			line = "        " part[i]
		} else {
			line = line " " part[i]
		}
	}
	print line
}
