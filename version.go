// Package wsready holds the project's version. The client is in package
// client (the core) and client/native (the Go driver); the backend in
// package server; the browser client is the npm package built by make npm.
package wsready

// Version is this release's version. The Go module is tagged vVersion and
// the npm package carries the same number; the browser client reports it
// as version in the JS API.
const Version = "0.5.0"
