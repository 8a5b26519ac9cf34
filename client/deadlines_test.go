package client

import "testing"

// Every deadline is a whole row of the table: a scope and what fires it.
func TestEveryDeadlineHasARow(t *testing.T) {
	for d := range numDeadlines {
		if r := deadlines[d]; r.scope == 0 || r.fire == nil {
			t.Fatalf("deadline %d has no row: %+v", d, r)
		}
	}
}
