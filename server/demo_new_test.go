//go:build !js

package server_test

import (
	"io/fs"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

func init() {
	server.NewTestDemo = func(s *server.Server, files fs.FS, o server.DemoOptions) (server.TestDemo, error) {
		do := demo.Options(o)
		d, err := demo.New(s, files, &do)
		if err != nil {
			return nil, err
		}
		return testDemo{d}, nil
	}
}

type testDemo struct{ *demo.Demo }

func (d testDemo) Faults() map[string]bool { return d.Stats().Faults }
