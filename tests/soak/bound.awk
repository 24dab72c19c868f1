# soak's bound check (tests/soak/soak.sh explains the bound): reads the
# policy changes ("BEFORE AFTER POLICY SINCE_NS" per line) and then the
# samples, and prints "WORST_RATIO I J SOURCE COUNTER ADMITTED BOUND
# VIOLATIONS PRESS OUTSIDE"; each violation also goes to stderr.
# Variables: delta, off, eps (seconds), r0 r1 b0 b1 (the two policies),
# names (the known sources, space-separated).
function max(a, b) { return a > b ? a : b }
function min(a, b) { return a < b ? a : b }
# The segments, in time order and contiguous: stable [a_k, b_{k+1}] (policy
# p_k), changing [b_k, a_k] (the larger rate and burst of both). cum[k] is
# the integral of the rate from the first segment's start to seg_s[k].
# seg_of(x): the last segment that starts at or before x (binary search).
function seg_of(x,   lo, hi, mid) {
	lo = 0; hi = nseg - 1
	while (lo < hi) {
		mid = int((lo + hi + 1) / 2)
		if (seg_s[mid] <= x) lo = mid; else hi = mid - 1
	}
	return lo
}
function F(x,   k) { k = seg_of(x); return cum[k] + (x - seg_s[k]) * seg_r[k] }
function integral(x, y) { return F(y) - F(x) }
# The largest burst of the segments that overlap [x, y].
function burst_at(x, y,   k, e, b) {
	b = 0; e = seg_of(y)
	for (k = seg_of(x); k <= e; k++) b = max(b, seg_b[k])
	return b
}
BEGIN { nc = 0; ns = 0; R[0] = r0; R[1] = r1; B[0] = b0; B[1] = b1; split(names, who, " ") }
FNR == NR { cb[nc] = $1; ca[nc] = $2; cp[nc] = $3; cs[nc] = $4; nc++; next }
{ ns++; nb[ns] = $1; ta[ns] = $2; tb[ns] = $3; tt[ns] = $4
  for (i = 0; i < 4; i++) { nft[ns, i] = $(5 + i); sl[ns, i] = $(11 + i) } }
END {
	# Each change took effect at its stamp (CLOCK_MONOTONIC + offset),
	# within eps, and within the span of its command in any case.
	for (k = 0; k < nc; k++) {
		t = cs[k] / 1e9 + off
		lo = max(cb[k], t - eps); hi = min(ca[k], t + eps)
		if (lo > hi) { lo = cb[k]; hi = ca[k]; outside++ }
		cb[k] = lo; ca[k] = hi
	}
	# Before the first change the initial policy (set twice, the second
	# bracketed) was already in force: start its span well before.
	nseg = 0
	seg_s[nseg] = ca[0] - 1000; seg_e[nseg] = ca[0]; seg_r[nseg] = R[cp[0]]; seg_b[nseg] = B[cp[0]]; nseg++
	for (k = 0; k < nc; k++) {
		if (k > 0) {
			seg_s[nseg] = cb[k]; seg_e[nseg] = ca[k]
			seg_r[nseg] = max(R[cp[k - 1]], R[cp[k]]); seg_b[nseg] = max(B[cp[k - 1]], B[cp[k]]); nseg++
		}
		seg_s[nseg] = ca[k]; seg_e[nseg] = (k + 1 < nc) ? cb[k + 1] : ca[k] + 1e6
		seg_r[nseg] = R[cp[k]]; seg_b[nseg] = B[cp[k]]; nseg++
	}
	cum[0] = 0
	for (k = 1; k < nseg; k++) {
		if (seg_s[k] < seg_e[k - 1] - 1e-9) { printf "segments out of order at %d\n", k > "/dev/stderr"; exit 2 }
		cum[k] = cum[k - 1] + (seg_s[k] - seg_s[k - 1]) * seg_r[k - 1]
	}
	worst = 0; bad = 0
	for (i = 1; i < ns; i++) for (j = i + 1; j <= ns; j++) {
		# nftables: read inside [nb, ta] of each sample; sluice (top -j)
		# inside [tb, tt].
		for (src = 0; src < 4; src++) for (c = 0; c < 2; c++) {
			if (c == 0) { s0 = nb[i]; y = ta[j]; got = nft[j, src] - nft[i, src] }
			else { s0 = tb[i]; y = tt[j]; got = sl[j, src] - sl[i, src] }
			x = s0 - delta
			bound = burst_at(x, s0) + integral(x, y) + 1
			ratio = got / bound
			if (ratio > worst) { worst = ratio; wi = i; wj = j; ws = src; wc = c; wg = got; wb = bound }
			if (got > bound) {
				if (bad < 10) printf "FAIL-WINDOW %s %s samples %d..%d (%.3f s): admitted %d > bound %.1f\n",
					who[src + 1], c ? "sluice" : "nftables", i, j, y - x, got, bound > "/dev/stderr"
				bad++
			}
		}
	}
	# The whole run for the steady sources (nftables): how close to
	# the bound they pressed.
	x = nb[1] - delta; y = ta[ns]; bound = burst_at(x, nb[1]) + integral(x, y) + 1
	press = 1e9
	for (src = 0; src < 2; src++) { r = (nft[ns, src] - nft[1, src]) / bound; if (r < press) press = r }
	printf "%.4f %d %d %s %s %d %.1f %d %.4f %d\n", worst, wi, wj, who[ws + 1], wc ? "sluice" : "nftables", wg, wb, bad, press, outside + 0
}
