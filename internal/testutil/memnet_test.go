//go:build !js

package testutil

import (
	"io"
	"testing"
	"testing/synctest"

	"github.com/wsready/wsready/server"
)

func TestMemServerAnswersHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, hc := StartMemServer(t, server.Options{})
		resp, err := hc.Get(srv.Base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("healthz: %d %s", resp.StatusCode, b)
		}
	})
}
