# wsready: make run (the demo at http://localhost:8080) and make test (everything).
SHELL := /bin/bash
GO ?= go
GOROOT := $(shell $(GO) env GOROOT)
WASM_EXEC := $(GOROOT)/lib/wasm/wasm_exec.js
STATIC := web/static
ADDR ?= 127.0.0.1:8080

.PHONY: app app-web release run cluster cluster-test fleet-test jitter bench build wasm test vet unit wasm-test e2e fuzz chromium proxies promtool size sim measure bench-browser profile-browser storm refresh-storm npm example clean image manifests soak soak-race soak-ci e2e-soak nettools

run: build
	./bin/wsready serve -demo -auth optional -publish -ping 1s -addr $(ADDR)

# No single point of failure: three NATS servers clustered (each embedded
# in its own wsready nats process: nothing is downloaded; JetStream
# clustered, routes between them) and three wsready nodes on ports
# 8081-8083, each given all three NATS URLs, topics kept with three
# replicas; node 1 produces the feed. Any one NATS server and any node may
# die (docs/cluster.md). Ctrl-C stops them all. Each NATS server stores in
# build/cluster/natsN until make clean. The nodes share one ticket key,
# build/cluster/ticket-key (made once, mode 0600), so a ticket one node
# issued is good on the others and on a restarted one. All on loopback.
NATS_HOST ?= 127.0.0.1
NATS_URLS = nats://$(NATS_HOST):4222,nats://$(NATS_HOST):4223,nats://$(NATS_HOST):4224
NATS_ROUTES = $(NATS_HOST):6222,$(NATS_HOST):6223,$(NATS_HOST):6224
cluster: build
	@mkdir -p build/cluster; key=build/cluster/ticket-key; \
	[ -s $$key ] || (umask 077; head -c 48 /dev/urandom | base64 > $$key.tmp && mv $$key.tmp $$key) || exit 1; \
	trap 'kill 0' EXIT; \
	for n in 1 2 3; do \
	  ./bin/wsready nats -name nats$$n -addr $(NATS_HOST):$$((4221+n)) -data build/cluster/nats$$n \
	    -cluster wsready -cluster-addr $(NATS_HOST):$$((6221+n)) -routes $(NATS_ROUTES) & \
	done; \
	for p in 4222 4223 4224; do \
	  for i in $$(seq 50); do (exec 3<>/dev/tcp/$(NATS_HOST)/$$p) 2>/dev/null && break; sleep 0.1; done; \
	done; \
	for n in 1 2 3; do \
	  lead=false; [ $$n = 1 ] && lead=true; \
	  ./bin/wsready serve -demo -auth optional -publish -ping 1s -nats $(NATS_URLS) -nats-replicas 3 -node node$$n -feed-leader=$$lead -auth-key-file $$key -addr 127.0.0.1:808$$n & \
	done; \
	for p in 8081 8082 8083; do \
	  for i in $$(seq 400); do (exec 3<>/dev/tcp/127.0.0.1/$$p) 2>/dev/null && break; sleep 0.1; done; \
	done; \
	echo; echo "cluster up: http://localhost:8081 http://localhost:8082 http://localhost:8083 (NATS at $(NATS_URLS)); Ctrl-C stops it"; \
	wait

# The cluster test alone (it is also in make unit: under 2 minutes): three
# wsready nats and three wsready serve processes, 300 clients, one NATS
# server and one node SIGKILLed; it logs the time to recover.
cluster-test:
	ulimit -n 20000; $(GO) test -count=1 -v -run 'TestCluster' ./cmd/wsready

# A real Prometheus (Debian's, make promtool installs it) scraping three
# nodes every second while wsready storm restarts each with 300 clients:
# its histogram_quantile p50/p99 within 10% of what the clients measured,
# each node's fleet page the same as Prometheus over that node, and the
# storm alert fires and resolves; then the fleet page in Chromium through
# a storm, its screenshot into docs/measured/fleet.png
# (docs/operations.md; about 2 minutes).
fleet-test: promtool chromium
	ulimit -n 20000; WSREADY_FLEET=1 WSREADY_REQUIRE_PROMTOOL=1 $(GO) test -count=1 -v -run 'TestPrometheusSeesTheStorm' ./cmd/wsready
	ulimit -n 20000; cd e2e && WSREADY_FLEET=1 $(GO) test -count=1 -v -run 'TestFleetPageShowsTheStorm' .

build: wasm
	$(GO) build -o bin/wsready ./cmd/wsready

# The wasm and wasm_exec.js are generated, never committed. WASM_FLAGS
# compiles the driver's glue (./wasm) and internal/bridge without inlining:
# 9 KB less brotli (docs/performance.md); their work per frame is
# calls across the JS boundary (wasm's BenchmarkDeliverUpdate). The core
# (./client) too: 6.8 KB less brotli (656,154 to 649,382, the 650,117 goal
# met) for about 0.3 us more per frame as wasm under Node
# (BenchmarkCoreMessage median 2.35 to 2.64 us, +12%, same allocations),
# next to the ~18 us each update already pays to reach the page's onUpdate.
# The protocol (./protocol) and the runtime's maps (internal/runtime/maps)
# too: 6.5 KB less brotli (660,154 to 653,638), for a core step about 7%
# slower as wasm under Node (CPU per BenchmarkCoreMessage 2.19 to 2.34 us,
# medians of five alternating rounds; a frame's way in and an update's
# way out did not slow), inside the ~16 us a frame costs the page.
# WASM_ENV builds it with Go 1.26's previous garbage collector
# (GOEXPERIMENT=nogreenteagc): 11.2 KB less brotli (653,638 to 642,447)
# and no slower as wasm under Node (CPU per update delivered, per frame
# stepped and per core step within the rounds' spread); a page's heap is a
# few MiB on one thread, where Green Tea's gains are not. Go 1.27 is
# expected to remove the opt-out: then internal/tools/wasmsize's
# TestWasmWithinItsCeiling may fail and the bytes must be found elsewhere.
WASM_ENV := GOEXPERIMENT=nogreenteagc
# No build ID: a browser has no use for it, and it changed the brotli size
# by hundreds of bytes from one commit to the next with the same code.
WASM_LDFLAGS := -s -buildid=
WASM_FLAGS := -gcflags=github.com/wsready/wsready/wasm=-l -gcflags=github.com/wsready/wsready/internal/bridge=-l -gcflags=github.com/wsready/wsready/client=-l -gcflags=github.com/wsready/wsready/protocol=-l -gcflags=internal/runtime/maps=-l
# internal/tools/wasmsegments then writes the data section as 18 segments
# instead of the linker's 41,134 (34,065 of them the runtime's findfunctab,
# two bytes each, their headers compressing badly): the same memory at
# start, 44.7 KB less brotli (655,627 to 610,941) and 70 KB less gzip, for
# 419 KB more raw (the zeros written out; docs/performance.md).
wasm:
	GOOS=js GOARCH=wasm $(WASM_ENV) $(GO) build -trimpath -ldflags="$(WASM_LDFLAGS)" $(WASM_FLAGS) -o $(STATIC)/wsready.wasm ./wasm
	$(GO) run ./internal/tools/wasmsegments $(STATIC)/wsready.wasm
	$(GO) run ./internal/tools/precompress $(STATIC)/wsready.wasm
	cp $(WASM_EXEC) $(STATIC)/wasm_exec.js

test: build chromium vet unit wasm-test fuzz example e2e-soak manifests

# The packages compiled into the browser client (the wasm and what it
# imports from this module): jsguard checks that they call the browser only
# through safejs. Evaluated only when used. jsguard misses a method called
# on an expression (js.Global().Get(...) passes), and no browser package
# needs a raw call today, so vet also refuses any import of syscall/js in
# them (should a raw call ever have to stay, give it a file of its own,
# let this check skip that file by name and say why there).
BROWSER_PKGS = $(shell GOOS=js GOARCH=wasm $(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./wasm | grep '^github.com/wsready/wsready')

vet: bin/jsguard
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./...
	GOOS=js GOARCH=wasm bin/jsguard $(BROWSER_PKGS)
	@bad=$$(GOOS=js GOARCH=wasm $(GO) list -f '{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' $(BROWSER_PKGS) | grep -E ' syscall/js( |$$)'); \
	  test -z "$$bad" || { echo "import safejs, not syscall/js, in the browser client:"; echo "$$bad" | cut -d: -f1; exit 1; }
	cd internal/tools/jsguard && $(GO) vet ./...
	cd e2e && $(GO) vet ./...
	cd cmd/wsready-bench/centrifuge && $(GO) vet ./...

# safejs's jsguard analyzer, built from a module of its own
# (internal/tools/jsguard: it needs a newer golang.org/x/tools than
# safejs pins, kept out of wsready's go.mod), for the host.
bin/jsguard: internal/tools/jsguard/main.go internal/tools/jsguard/go.mod internal/tools/jsguard/go.sum
	cd internal/tools/jsguard && GOOS=$$($(GO) env GOHOSTOS) GOARCH=$$($(GO) env GOHOSTARCH) $(GO) build -o ../../../bin/jsguard .

# WSREADY_REQUIRE_PROMTOOL: the alert rules' test (alerts_test.go) fails,
# not skips, without promtool.
unit: promtool
	WSREADY_REQUIRE_PROMTOOL=1 $(GO) test -race -count=1 ./...

wasm-test:
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec="$(GOROOT)/lib/wasm/go_js_wasm_exec" ./protocol ./client ./internal/bridge ./wasm

# A count, not a duration: Go 1.26's fuzzing coordinator can fail a target
# with a bare "context deadline exceeded" when a -fuzztime duration runs
# out (go.dev/issue/75804, fixed in Go 1.27). 200,000 inputs is about 10 s
# each here.
fuzz:
	$(GO) test ./protocol -run '^$$' -fuzz FuzzDecode -fuzztime 200000x
	$(GO) test ./protocol -run '^$$' -fuzz FuzzBothDecoders -fuzztime 200000x

# The browser suite: the smoke test and the CI subset of the measurements,
# and docs/deploy's proxy files run (e2e/proxy_test.go):
# WSREADY_REQUIRE_PROXIES makes a missing proxy a failure, not a skip.
e2e: build chromium proxies
	cd e2e && WSREADY_REQUIRE_PROXIES=1 $(GO) test -count=1 -timeout 20m ./...

# The npm package: dist/wsready-$(VERSION).tgz (npm pack; nothing is published).
# It ships others' code with their licenses in licenses/: wasm_exec.js and
# the runtime and standard library in the wasm are Go's (BSD), and safejs is
# compiled into the wasm (Apache-2.0). Nothing else is: go list -deps ./wasm
# names only the standard library, safejs and this module.
VERSION := $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' version.go)
NPMDIR := build/npm

npm: wasm
	@command -v npm >/dev/null || { echo "make npm needs Node.js with npm (the machine image has them)"; exit 1; }
	rm -rf $(NPMDIR) && mkdir -p $(NPMDIR) dist
	cp $(STATIC)/wsready.js $(STATIC)/wsready.d.ts $(STATIC)/wsready.wasm $(STATIC)/wasm_exec.js LICENSE web/npm/README.md web/npm/vite.js web/npm/vite.d.ts $(NPMDIR)/
	mkdir -p $(NPMDIR)/licenses
	cp $(GOROOT)/LICENSE $(NPMDIR)/licenses/go-LICENSE
	cp "$$($(GO) list -m -f '{{.Dir}}' github.com/hack-pad/safejs)/LICENSE" $(NPMDIR)/licenses/safejs-LICENSE
	sed 's/"version": ".*"/"version": "$(VERSION)"/' web/npm/package.json > $(NPMDIR)/package.json
	cd $(NPMDIR) && npm pack --silent --pack-destination ../../dist >/dev/null
	@ls -l dist/wsready-$(VERSION).tgz
	node web/npm/node-check.mjs $(NPMDIR)/wsready.js

# The Vite example app, built from the tarball (npm ci for Vite and
# TypeScript, pinned in its lockfile), and strict tsc checks of usage files
# against the package's .d.ts files (the client's; wsready/vite's, with
# Node's types). The browser suite loads the built app.
# The example application's page (examples/app/web) is built the same way
# (app-web); the browser suite runs the app with it (e2e/app_test.go).
example: npm app-web
	@command -v npm >/dev/null || { echo "make example needs Node.js 20.19+ with npm (the machine image has them)"; exit 1; }
	cd examples/vite && npm ci --silent --no-audit --no-fund && \
	  npm install --silent --no-save --no-package-lock --no-audit --no-fund ../../dist/wsready-$(VERSION).tgz && \
	  npx tsc -p tsconfig.json && npx tsc -p tsconfig.node.json && npx vite build --logLevel warn

# The example application (docs/app.md): its page, Vite + TypeScript with
# the package from the tarball, into examples/app/web/dist.
app-web: npm
	@command -v npm >/dev/null || { echo "make app-web needs Node.js 20.19+ with npm (the machine image has them)"; exit 1; }
	cd examples/app/web && npm ci --silent --no-audit --no-fund && \
	  npm install --silent --no-save --no-package-lock --no-audit --no-fund ../../../dist/wsready-$(VERSION).tgz && \
	  npx tsc -p tsconfig.json && npx vite build --logLevel warn

# The example application at http://127.0.0.1:8090 (APP_ADDR): sign in as
# alice, bob or carol. APP_FLAGS adds flags (-tokens jwt -jwt-life 30s).
APP_ADDR ?= 127.0.0.1:8090
APP_FLAGS ?=
app: app-web
	$(GO) run ./examples/app -addr $(APP_ADDR) -static examples/app/web/dist $(APP_FLAGS)

chromium:
	@command -v chromium >/dev/null || { echo "installing Chromium from Debian's packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The reverse proxies docs/deploy.md configures, from Debian's packages
# (the browser suite runs them as plain processes; their services are not
# started).
proxies:
	@missing=; for p in nginx haproxy caddy; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	  test -z "$$missing" || { echo "installing$$missing from Debian's packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }

# iptables, for the soak's blackhole of a node, from Debian's package when
# missing (without it the soak logs the kind as one it could not make).
nettools:
	@command -v iptables >/dev/null || { echo "installing iptables from Debian's packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null; }

# promtool, which checks and tests docs/deploy/prometheus's alert rules
# (alerts_test.go, about 2 s), from Debian's prometheus package (a 19 MB
# download; without its recommends, the node exporter and its tools; its
# server is not used: the tests run promtool alone).
promtool:
	@command -v promtool >/dev/null || { echo "installing promtool from Debian's prometheus package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# The wasm's three sizes, then what each package costs (code and data
# bytes, the top SIZE_TOP, and the whole: internal/tools/wasmsize, which
# builds the wasm once more with the linker's -dumpdep and the name section;
# its whole is the linker's output, before wasmsegments writes the zeros out).
SIZE_TOP ?= 25
size: wasm
	@raw=$$(stat -c %s $(STATIC)/wsready.wasm); gz=$$(stat -c %s $(STATIC)/wsready.wasm.gz); br=$$(stat -c %s $(STATIC)/wsready.wasm.br); \
	  awk -v r=$$raw -v g=$$gz -v b=$$br 'BEGIN{printf "wsready.wasm     %8d bytes (%.2f MiB)\nwsready.wasm.gz  %8d bytes (%.2f MiB)\nwsready.wasm.br  %8d bytes (%.2f MiB)\n", r, r/1048576, g, g/1048576, b, b/1048576}'
	@echo
	GOFLAGS="$(WASM_FLAGS)" $(WASM_ENV) $(GO) run ./internal/tools/wasmsize -top $(SIZE_TOP) ./wasm

# The write-ups table (docs/sim.md) reads make storm's report for its field figures.
sim:
	$(GO) run ./cmd/wsready sim -seed 1 -storm docs/measured/storm.json -svg docs/measured -out docs/measured/sim.md -json docs/measured/sim.json

# Real sockets: 5,000 clients through a Restart, stage 5 against stage 6
# with and without reconnect slots, beside the simulator (about 4 minutes).
storm: build
	./bin/wsready storm -compare -clients 5000 -json docs/measured/storm.json -md docs/measured/storm.md

# Real sockets: 5,000 clients with 60 s tickets for 5 minutes, in-band
# refresh on against off, each against a fresh wsready serve -auth
# required: the handshakes expiries cost and the server's CPU for them
# (about 11 minutes; docs/auth.md quotes it).
refresh-storm: build
	./bin/wsready storm -refresh-compare -clients 5000 -ticket-life 60s -duration 5m -json docs/measured/refresh.json -md docs/measured/refresh.md

# The server beside a lean baseline (cmd/wsready-bench/lean.go) and
# centrifuge (cmd/wsready-bench/centrifuge, a module of its own), the idle
# row (wsready serve, 19,500 connections at 25 s pings), and the simulator
# beside the published Python model (MODEL=path; when it is missing the
# report says so), three runs each on this machine: about 12-20 minutes.
# Every server pings at 25 s, as in production (the tool's default, 1 s, is
# the demo's heartbeat: there centrifuge's pong timeout of 800 ms dropped
# its clients while 19,000 connected, and no trial measured it).
# Writes docs/measured/bench.md and bench.json; FINDINGS (a JSON object by row
# key) are printed beside the figures.
MODEL ?= ../shared/anchors/fleet_model.py
FINDINGS ?= docs/measured/bench-findings.json
bench:
	$(GO) run ./cmd/wsready-bench run -conns 10000 -connect 19000 -steady 10s -ping 25s -model $(MODEL) -findings $(FINDINGS) -out docs/measured

# Five minutes of the Jitter switch (pings delayed 0-800 ms) against stage 6
# clients at 1 s pings, and against clients at the defaults on the feed
# sending requests: none may leave READY (CI runs 20 s of each).
jitter:
	WSREADY_LONG=1 $(GO) test -count=1 -run 'TestJitteryPings' -v ./client/native

# The browser suite's measurements (TestMeasure*: docs/measured/measurements.md,
# each test its own section), among them idle connections through nginx
# and HAProxy at a 60 s read timeout and 25 s pings for 200 s
# (TestMeasureProxyIdle, about 7 minutes).
measure: build chromium proxies nettools
	cd e2e && WSREADY_MEASURE=1 WSREADY_REQUIRE_PROXIES=1 $(GO) test -count=1 -timeout 100m -run TestMeasure -v ./...

# The chaos soak (docs/soak.md): make cluster's three NATS servers and
# three nodes, 1,000 native clients over 8 source addresses resuming three
# topics, a publisher per topic, three Chromium pages at stage 8
# (e2e/soakpages; none where Chromium is missing), and a nemesis drawing a
# fault every 10-30 s from SEED (kills, drains, resets, NATS kills, the
# demo's switches, publish bursts, page freezes); the checker reads the
# whole history afterwards and docs/measured/soak.md is the report.
# MINUTES=30 by default; SEED=0 draws one (printed; the same seed replays
# the schedule); BREAK=resume runs clients with resume off, which the
# checker must fail. soak-race builds every process with -race (3 minutes,
# 300 clients: the race detector allows 8,128 live goroutines in the test
# process).
MINUTES ?= 30
SEED ?= 0
SOAK_CLIENTS ?= 1000
SOAK_REPORT ?= docs/measured/soak.md
BREAK ?=
soak: wasm nettools
	ulimit -n 20000; WSREADY_SOAK=1 $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./cmd/wsready \
	  -args -soak.minutes=$(MINUTES) -soak.seed=$(SEED) -soak.clients=$(SOAK_CLIENTS) -soak.report=$(abspath $(SOAK_REPORT)) -soak.break=$(BREAK)

soak-race: wasm nettools
	mkdir -p build
	ulimit -n 20000; WSREADY_SOAK=1 WSREADY_BIN_RACE=1 $(GO) test -race -count=1 -timeout 0 -run '^TestSoak$$' -v ./cmd/wsready \
	  -args -soak.minutes=3 -soak.seed=$(SEED) -soak.clients=300 -soak.report=$(CURDIR)/build/soak-race.md

# make test's soak: soak-race's 3 minutes (300 clients, the three pages,
# every process built with -race, a seed drawn and printed), its log in
# build/soak-ci.log (the last lines printed when it fails), the report in
# build/soak-ci.md. e2e-soak runs it beside the e2e suite, whose browser
# tests wait on timers with the machine mostly idle (a load of about 0.5
# on 2 CPUs through them): the suite stays under 20 minutes.
soak-ci: wasm nettools
	mkdir -p build
	ulimit -n 20000; WSREADY_SOAK=1 WSREADY_BIN_RACE=1 $(GO) test -race -count=1 -timeout 15m -run '^TestSoak$$' -v ./cmd/wsready \
	  -args -soak.minutes=3 -soak.seed=$(SEED) -soak.clients=300 -soak.report=$(CURDIR)/build/soak-ci.md > build/soak-ci.log 2>&1 \
	  || { tail -60 build/soak-ci.log; echo "make soak-ci failed: build/soak-ci.log; the seed is printed above"; exit 1; }
	@grep -m1 'soak seed' build/soak-ci.log || true
	@tail -3 build/soak-ci.log

e2e-soak: build chromium proxies wasm nettools
	$(MAKE) -j2 e2e soak-ci

# The browser client beside centrifuge-js (npm's centrifuge, installed into
# build/browserbench, never committed) in one headless Chromium, each
# against its own server on loopback (wsready's demo server; the centrifuge
# server of cmd/wsready-bench/centrifuge), alternating: docs/browser-bench.md.
# Each run is a cold load and its window, a warm visit in the same browser,
# then a cold and a warm visit over an emulated slow mobile link; after the
# first rate's runs, the memory phase (every page at once, sampled at 20 s
# and at its end). BROWSER_BENCH_RATES, _RUNS, _WINDOW and _MEMORY set the
# updates a second, the runs per client, the window and the memory phase's
# length (0 skips it): about 4 minutes per rate at 3 runs of 20 s, and
# 6 minutes for a memory phase of 5. The tables go to
# build/browserbench/results.md.
BROWSER_BENCH_RATES ?= 200,1000
BROWSER_BENCH_RUNS ?= 3
BROWSER_BENCH_WINDOW ?= 20s
BROWSER_BENCH_MEMORY ?= 5m
bench-browser: build chromium
	@command -v npm >/dev/null || { echo "make bench-browser needs Node.js with npm (the machine image has them)"; exit 1; }
	mkdir -p build/browserbench
	npm install --prefix build/browserbench --silent --no-save --no-package-lock --no-audit --no-fund centrifuge@5.7.4
	cd e2e && WSREADY_BROWSER_BENCH=1 WSREADY_BROWSER_BENCH_RATES=$(BROWSER_BENCH_RATES) WSREADY_BROWSER_BENCH_RUNS=$(BROWSER_BENCH_RUNS) \
	  WSREADY_BROWSER_BENCH_WINDOW=$(BROWSER_BENCH_WINDOW) WSREADY_BROWSER_BENCH_MEMORY=$(BROWSER_BENCH_MEMORY) \
	  $(GO) test -count=1 -timeout 60m -run TestBrowserBench -v .

# Where the browser client's main-thread time goes: the bench's wsready
# page at PROFILE_RATE updates a second, V8's sampling profiler over a
# 10 s window, self time by Go package, script and built-in, then by
# function (e2e/browserprofile_test.go). The wasm is make wasm's, built
# again with its name section kept (-s dropped) so Go's functions are
# named. PROFILE_CLIENT=centrifuge-js profiles its page instead, for
# comparison. Writes build/browserprofile/<client>.md and <client>.cpuprofile
# (DevTools opens it).
PROFILE_RATE ?= 200
PROFILE_CLIENT ?= wsready
profile-browser: wasm chromium
	mkdir -p build/browserprofile
	GOOS=js GOARCH=wasm $(WASM_ENV) $(GO) build -trimpath -ldflags="-buildid=" $(WASM_FLAGS) -o build/browserprofile/wsready.wasm ./wasm
	@if [ "$(PROFILE_CLIENT)" = centrifuge-js ]; then npm install --prefix build/browserbench --silent --no-save --no-package-lock --no-audit --no-fund centrifuge@5.7.4; fi
	cd e2e && WSREADY_BROWSER_PROFILE=1 WSREADY_BROWSER_PROFILE_WASM=$(CURDIR)/build/browserprofile/wsready.wasm \
	  WSREADY_BROWSER_PROFILE_CLIENT=$(PROFILE_CLIENT) WSREADY_BROWSER_PROFILE_RATE=$(PROFILE_RATE) \
	  WSREADY_BROWSER_PROFILE_OUT=$(CURDIR)/build/browserprofile/$(PROFILE_CLIENT).md $(GO) test -count=1 -timeout 10m -run '^TestBrowserProfile$$' -v .

# What a release publishes, built here (publishing happens on the public
# host: .github/workflows/release.yml): dist/ gets the npm tarball, the
# wsready binary for linux, darwin and windows on amd64 and arm64 (each
# with the browser client embedded), and SHA256SUMS over all of them. The
# version is version.go's; a tag must match it (the workflow checks).
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
release: npm
	@for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  out=dist/wsready-$(VERSION)-$$os-$$arch$$ext; echo "building $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags=-s -o $$out ./cmd/wsready || exit 1; \
	done
	cd dist && rm -f SHA256SUMS && sha256sum wsready-$(VERSION)-* wsready-$(VERSION).tgz > SHA256SUMS
	@cat dist/SHA256SUMS

# The container image (docs/deploy.md): the static binary (the browser
# client embedded) alone, FROM scratch, so nothing is pulled. docker build
# takes the same arguments (CONTAINER=docker).
CONTAINER ?= podman
image: wasm
	mkdir -p build/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags=-s -o build/image/wsready ./cmd/wsready
	$(CONTAINER) build -f docs/deploy/Dockerfile -t wsready:$(VERSION) build/image

# docs/deploy/kubernetes checked with no cluster: against the API's types
# and each other (internal/tools/k8scheck, a module of its own).
manifests:
	cd internal/tools/k8scheck && $(GO) vet ./... && $(GO) test -count=1 ./...

clean:
	rm -rf bin build dist examples/vite/dist examples/vite/node_modules examples/app/web/dist examples/app/web/node_modules $(STATIC)/wsready.wasm $(STATIC)/wsready.wasm.gz $(STATIC)/wsready.wasm.br $(STATIC)/wasm_exec.js
