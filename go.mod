module github.com/wsready/wsready

go 1.26.8

require (
	github.com/coder/websocket v1.8.15
	go.uber.org/goleak v1.3.0
)

require github.com/hack-pad/safejs v0.1.0
