# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Turns the usage lines of `sluice help` into the SYNOPSIS of sluice(8): a
# literal block, each command wrapped before an option group ("[") so that
# no line passes 78 columns.
BEGIN { print "::"; print "" }
/^Usage: sluice / || /^       sluice / {
	sub(/^(Usage:|      ) /, "")
	n = split($0, part, / \[/)
	line = "    " part[1]
	for (i = 2; i <= n; i++) {
		word = "[" part[i]
		if (length(line) + 1 + length(word) > 78) {
			print line
			line = "        " word
		} else {
			line = line " " word
		}
	}
	print line
}
