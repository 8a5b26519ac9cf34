package testutil

import "strconv"

// ExactRun reports the first way seqs differs from from, from+1, ..., to
// (each exactly once, in order), or "" when it does not.
func ExactRun(seqs []int64, from, to int64) string {
	want := from
	for i, s := range seqs {
		if s != want {
			return "update " + strconv.Itoa(i) + " has seq " + strconv.FormatInt(s, 10) + ", want " + strconv.FormatInt(want, 10)
		}
		want++
	}
	if want != to+1 {
		return "delivered up to " + strconv.FormatInt(want-1, 10) + ", want " + strconv.FormatInt(to, 10)
	}
	return ""
}
