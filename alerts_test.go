package wsready_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The alert rules docs/deploy/prometheus ships are valid (promtool check
// rules) and fire, and stay quiet, on the series their tests give
// (promtool test rules). promtool comes from Debian's prometheus package
// (make promtool installs it); without it the test skips, unless
// WSREADY_REQUIRE_PROMTOOL is set, as make test sets it: then a missing
// promtool fails.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("WSREADY_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool not found (make promtool installs Debian's prometheus package): %v", err)
		}
		t.Skip("promtool not found: make promtool installs it (WSREADY_REQUIRE_PROMTOOL makes this a failure)")
	}
	for _, args := range [][]string{
		{"check", "rules", "wsready.rules.yml"},
		{"test", "rules", "wsready.rules.test.yml"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = "docs/deploy/prometheus"
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
