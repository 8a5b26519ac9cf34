//go:build !js

package server_test

import (
	"io/fs"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

func init() {
	server.NewTestDemo = func(s *server.Server, files fs.FS) server.TestDemo { return testDemo{demo.New(s, files)} }
}

type testDemo struct{ *demo.Demo }

func (d testDemo) Faults() map[string]bool { return d.Stats().Faults }
