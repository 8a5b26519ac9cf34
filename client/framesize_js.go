//go:build js

package client

import "github.com/wsready/wsready/protocol"

// tooLarge is nil in the browser: see framesize.go.
var tooLarge func(m protocol.Message, id uint64, key string, queue bool) string
