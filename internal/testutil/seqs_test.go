package testutil

import "testing"

func TestExactRun(t *testing.T) {
	for _, c := range []struct {
		seqs     []int64
		from, to int64
		want     string
	}{
		{[]int64{3, 4, 5}, 3, 5, ""},
		{nil, 1, 0, ""},
		{[]int64{3, 5}, 3, 5, "update 1 has seq 5, want 4"},
		{[]int64{3, 4, 4}, 3, 5, "update 2 has seq 4, want 5"},
		{[]int64{3, 4}, 3, 5, "delivered up to 4, want 5"},
		{[]int64{3, 4, 5, 6}, 3, 5, "delivered up to 6, want 5"},
	} {
		if got := ExactRun(c.seqs, c.from, c.to); got != c.want {
			t.Errorf("ExactRun(%v, %d, %d) = %q, want %q", c.seqs, c.from, c.to, got, c.want)
		}
	}
}
