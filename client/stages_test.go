package client

// The demo's stages for the core's own tests: stage n keeps the first n
// fixes. Package internal/stages holds the table everyone else selects
// from; it imports this package, so these tests cannot import it, and its
// test pins that each stage there disables exactly these fixes.

// maxStage is the last stage: every fix.
const maxStage = 8

// stageFixes returns the fixes stage n disables.
func stageFixes(n int) Fixes {
	return Fixes{Registry: n < 1, Heartbeat: n < 2, StaleFilter: n < 3, Service: n < 4,
		Backoff: n < 5, Cooldown: n < 5, Session: n < 6, Resume: n < 7, WhereUsersAre: n < 8}
}

// stageConfig returns the library's defaults for stage n with the given
// random source.
func stageConfig(n int, rand func() float64) Config {
	return Config{Disable: stageFixes(n), Rand: rand}
}
