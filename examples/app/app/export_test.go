//go:build !js

package app

import (
	"context"

	"github.com/wsready/wsready/server"
)

// Authorize is the app's Authorize hook, for the table test.
func Authorize(a *App, id server.Identity, act server.Action) error {
	return a.authorize(context.Background(), id, act)
}
