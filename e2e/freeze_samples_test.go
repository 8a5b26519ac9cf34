//go:build !js

package e2e

import (
	"os"
	"testing"
)

// TestFreezeSamples runs make measure's short freezes alone (FullPlan's
// count, at the stratified phases of freezeSamples) for the stages in
// WSREADY_STAGES and logs their table, writing nothing: the freeze
// detection figures without the 34 minutes of the whole matrix. About a
// minute a stage at stages 2-4, two from stage 5 (whose reconnects back
// off):
//
//	make build && cd e2e && WSREADY_MEASURE=1 WSREADY_STAGES=6,7 go test -count=1 -run TestFreezeSamples -v .
func TestFreezeSamples(t *testing.T) {
	if os.Getenv("WSREADY_MEASURE") == "" {
		t.Skip("set WSREADY_MEASURE=1 to measure freeze detection")
	}
	var rows []Row
	for _, stage := range stagesFromEnv() {
		row, err := RunStage(stage, Plan{FreezeSamples: FullPlan.FreezeSamples}, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
		t.Log("\n" + FreezeSamplesTable([]Row{row})) // each stage's as it ends: a later failure keeps them
	}
	t.Log("\n" + FreezeSamplesTable(rows))
}
