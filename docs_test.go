package wsready_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// The figures of a run quoted in docs/stages.md's prose are each followed
// in the source by a marker naming where they come from:
//
//	1.9-2.0 s<!-- m freezeDetectedMs 2-5 -->
//
// a field of docs/measured/measurements.json's rows (a dotted path into a row) and
// the stages it covers ("2-5", "6,7" or "5"). The text before the marker
// must read as the file has it: one value, or min-max over the stages;
// seconds with one decimal for a field in ms, a whole number otherwise
// ("one" and "none" stand for 1 and 0). make measure rewrites the file, and
// this test then names every sentence that lags it.
var figureMarker = regexp.MustCompile(`([0-9.]+(?:-[0-9.]+)?(?: s)?|one|none)<!-- m ([A-Za-z.]+) ([0-9,-]+) -->`)

func TestStagesProseQuotesMeasurementsJSON(t *testing.T) {
	prose, err := os.ReadFile("docs/stages.md")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("docs/measured/measurements.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("docs/measured/measurements.json: %v", err)
	}
	byStage := map[int]map[string]any{}
	for _, r := range m.Rows {
		if st, ok := r["stage"].(float64); ok {
			byStage[int(st)] = r
		}
	}
	found := figureMarker.FindAllStringSubmatch(string(prose), -1)
	// The prose quotes a figure for every column it explains; far fewer
	// markers means they were dropped, not checked.
	if len(found) < 25 {
		t.Fatalf("docs/stages.md has %d figure markers; the measurements prose should quote its figures with them", len(found))
	}
	if n := strings.Count(string(prose), "<!-- m "); n != len(found) {
		t.Errorf("docs/stages.md has %d figure markers but only %d read as VALUE<!-- m FIELD STAGES -->", n, len(found))
	}
	for _, f := range found {
		text, field, stages := f[1], f[2], f[3]
		want, err := quoteFigure(byStage, field, stages)
		if err != nil {
			t.Errorf("%s: %v", f[0], err)
			continue
		}
		if got := normalizeFigure(text); got != want {
			t.Errorf("docs/stages.md says %q for %s at stages %s; docs/measured/measurements.json has %q", text, field, stages, want)
		}
	}
}

func normalizeFigure(s string) string {
	switch s {
	case "one":
		return "1"
	case "none":
		return "0"
	}
	return s
}

// quoteFigure formats field over stages as the prose should quote it.
func quoteFigure(rows map[int]map[string]any, field, stages string) (string, error) {
	var list []int
	for _, part := range strings.Split(stages, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return "", fmt.Errorf("bad stages %q", stages)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return "", fmt.Errorf("bad stages %q", stages)
			}
		}
		for st := a; st <= b; st++ {
			list = append(list, st)
		}
	}
	ms := strings.HasSuffix(field, "Ms")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range list {
		row, ok := rows[st]
		if !ok {
			return "", fmt.Errorf("no row for stage %d", st)
		}
		var v any = row
		for _, key := range strings.Split(field, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("stage %d has no %s", st, field)
			}
			v = obj[key]
		}
		x, ok := v.(float64)
		if !ok {
			return "", fmt.Errorf("stage %d's %s is %v, not a number", st, field, v)
		}
		if ms {
			x = math.Round(x/100) / 10 // seconds, one decimal, as measurements.md prints them
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	format := func(x float64) string {
		if ms {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	out := format(lo)
	if hi != lo {
		out += "-" + format(hi)
	}
	if ms {
		out += " s"
	}
	return out, nil
}

// The README's web snippet and the demo's docs say what wsready serve and
// the page do: the snippet subscribes to the topic the server publishes
// and keeps its updates coming (no close at the top level, right after
// the echo); docs/demo.md's stage range is the page's; the nginx block
// keeps the port in Host.
func TestDocsMatchWhatTheServerDoes(t *testing.T) {
	ts, err := os.ReadFile("examples/vite/src/readme.ts")
	if err != nil {
		t.Fatal(err)
	}
	web, err := region(string(ts), "web")
	if err != nil {
		t.Fatal(err)
	}
	if want := "subscribe<{ ts: number; value: number }>('" + protocol.DefaultTopic + "'"; !strings.Contains(web, want) {
		t.Errorf("the README's web snippet should subscribe to %q, the topic wsready serve publishes (with its data's shape)", protocol.DefaultTopic)
	}
	for _, line := range strings.Split(web, "\n") {
		if strings.HasPrefix(line, "await client.close()") || strings.HasPrefix(line, "client.close()") {
			t.Errorf("the README's web snippet closes the client at the top level, so no update is ever shown: %q", line)
		}
	}
	if !strings.Contains(web, "url: default /ws") {
		t.Error("the README's web snippet should leave url at its default, /ws, where wsready serve has it")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "-origins localhost:5173") {
		t.Error("the README should say, beside the web snippet, that a page on another port needs -origins with the port")
	}

	demoDoc, err := os.ReadFile("docs/demo.md")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("web/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	pageRange := regexp.MustCompile(`/\^\[0-([0-9])\]\$/`).FindStringSubmatch(string(page))
	if pageRange == nil {
		t.Fatal("web/static/app.js: no stage pattern /^[0-N]$/")
	}
	if pageRange[1] != strconv.Itoa(stages.Max) {
		t.Errorf("the page takes stages 0-%s, the client has 0-%d", pageRange[1], stages.Max)
	}
	if want := "stage (0 to " + pageRange[1] + ";"; !strings.Contains(string(demoDoc), want) {
		t.Errorf("docs/demo.md should give the page's stages as %q", want)
	}

	deploy, err := os.ReadFile("docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(deploy), "Host $host;") {
		t.Error("docs/deploy.md's nginx block sets Host $host, which drops the port: a page on a non-default port is refused (use $http_host)")
	}
}
