//go:build !js

package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/chromedp"
)

// markLoss's error wraps Eval's (it used to flatten it with %v), so a
// caller can tell a dead browser from a page without the demo.
func TestMarkLossWrapsEvalsError(t *testing.T) {
	r := &stageRun{b: &Browser{Ctx: context.Background()}} // no tab: chromedp refuses the context
	_, err := r.markLoss()
	if !errors.Is(err, chromedp.ErrInvalidContext) {
		t.Fatalf("markLoss: %v", err)
	}
}
