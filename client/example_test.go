package client_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/wsready/wsready/client"
)

// A driver steps the core with events and carries out its effects. Here
// the "network" is played by hand: the socket opens, the server pings and
// says it serves the session (welcome: this client asked for no topics),
// a request is answered, and a topic the app subscribes to makes the
// service pending until the server acknowledges it. At READY the core
// reports it to the server (Config.NoReports turns that off).
func Example() {
	// The zero Config is the client with every fix; the core draws no
	// random numbers of its own, so it needs a source.
	core, err := client.New(client.Config{Rand: rand.New(rand.NewPCG(1, 2)).Float64})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func() {
		for _, e := range core.Effects() {
			switch e.Kind {
			case client.EffDial:
				fmt.Println("dial socket", e.Socket)
			case client.EffSend:
				fmt.Printf("send %s\n", e.Frame)
			case client.EffState:
				fmt.Printf("state transport=%v protocol=%v service=%v ready=%v\n", e.State.Transport, e.State.Protocol, e.State.Service, e.State.Ready)
			case client.EffSettle:
				fmt.Printf("request %d settled: %s %v\n", e.ID, e.Result, e.Err)
			}
		}
	}
	core.Start(now)
	show()
	core.Opened(1, now)
	show()
	core.Received(1, []byte(`{"type":"ping","intervalMs":1000}`), now)
	show()
	core.Received(1, []byte(`{"type":"welcome","session":"q1Zb3kPm9tV0xY2zA4cD6e"}`), now)
	show()
	id := core.Request("echo", []byte(`{"hi":1}`), now)
	show()
	core.Received(1, []byte(fmt.Sprintf(`{"type":"response","id":%d,"result":{"hi":1}}`, id)), now)
	show()
	// A topic added while READY does not take READY away on its way.
	core.Subscribe("feed", 0, false, now)
	show()
	core.Received(1, []byte(`{"type":"subscribed","topic":"feed","from":1}`), now)
	show()
	// Output:
	// dial socket 1
	// state transport=pending protocol=down service=down ready=false
	// state transport=up protocol=pending service=pending ready=false
	// state transport=up protocol=up service=pending ready=false
	// send {"type":"report","report":{"kind":"connect","notReadyMs":0,"attempts":1,"cause":"none","transport":"ws","refusedBusy":0,"refusedSlot":0,"lost":0,"role":"alone"}}
	// state transport=up protocol=up service=up ready=true
	// send {"type":"request","id":1,"method":"echo","params":{"hi":1},"timeoutMs":5000}
	// request 1 settled: {"hi":1} <nil>
	// send {"type":"subscribe","topic":"feed"}
}
