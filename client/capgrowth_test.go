package client_test

import (
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

// The default cap growth is no global a program can change: changing the
// steps one has does not change the next client's.
func TestTheDefaultCapGrowthIsNoSharedValue(t *testing.T) {
	mine := client.DefaultCapGrowth()
	mine[0].Cap = time.Hour
	core, err := client.New(client.Config{Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.Config().CapGrowth; len(got) != 2 || got[0].Cap != time.Minute || got[1].Cap != 5*time.Minute {
		t.Fatalf("a new client's cap growth is %+v", got)
	}
	if client.DefaultCapGrowth()[0].Cap != time.Minute {
		t.Fatal("DefaultCapGrowth returned a changed default")
	}
}
