//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

func newEnv(t *testing.T) (*Env, *Browser) {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the server's options (nil: make run's).
func newEnvWith(t *testing.T, opts *server.Options) (*Env, *Browser) {
	t.Helper()
	env, err := StartServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	b, err := NewBrowser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return env, b
}

// Every stage reaches READY, shows the stage asked for, and a request
// round-trips through the page's Send request path.
func TestSmokeEveryStage(t *testing.T) {
	env, b := newEnv(t)
	for stage := 0; stage <= 7; stage++ {
		if err := b.Navigate(fmt.Sprintf("%s/?stage=%d", env.Base, stage)); err != nil {
			t.Fatal(err)
		}
		if err := WaitJS(b, "window.wsreadyDemo && wsreadyDemo.state && wsreadyDemo.state.ready", 20*time.Second); err != nil {
			t.Fatalf("stage %d: %v", stage, err)
		}
		shown, err := Eval[string](b, "document.querySelector('nav a.current').textContent + '|' + wsreadyDemo.stage + '|' + document.title")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("Stage %d|%d|wsready demo: stage %d", stage, stage, stage); shown != want {
			t.Fatalf("stage shown %q, want %q", shown, want)
		}
		res, err := Eval[map[string]any](b, "wsreadyDemo.sendRequest('echo', {stage: wsreadyDemo.stage})")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := res["value"].(map[string]any)
		if res["status"] != "resolved" || v == nil || v["stage"] != float64(stage) {
			t.Fatalf("stage %d request: %v", stage, res)
		}
		text, _ := Eval[string](b, "document.getElementById('result').textContent")
		if !strings.HasPrefix(text, "resolved in") {
			t.Fatalf("stage %d result shown %q", stage, text)
		}
	}
}

func TestSmokeEmbeddingExample(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/embed.html"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.embedResult && (embedResult.echo || embedResult.error)", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := Eval[map[string]any](b, "embedResult")
	if err != nil {
		t.Fatal(err)
	}
	echo, _ := r["echo"].(map[string]any)
	if r["error"] != nil || echo["hello"] != "embed" || r["ready"] != true {
		t.Fatalf("embed result %v", r)
	}
	// The JS API rejects bad options with a clear error instead of hanging.
	msg, err := Eval[string](b, `import('./wsready.js').then(m => m.connect({url: 'http://nope', stage: 9})).then(() => 'no error', e => e.name + ': ' + e.message)`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "url must start with ws://") {
		t.Fatalf("bad options: %q", msg)
	}
	msg, _ = Eval[string](b, `import('./wsready.js').then(m => m.connect({stage: 1.5})).then(() => 'no error', e => e.message)`)
	if !strings.Contains(msg, "stage must be an integer 0-8") {
		t.Fatalf("bad stage: %q", msg)
	}
}

func TestSmokeWrongStageShowsAMessage(t *testing.T) {
	env, b := newEnv(t)
	for _, bad := range []string{"9", "x", "-1", "2.5"} {
		if err := b.Navigate(env.Base + "/?stage=" + bad); err != nil {
			t.Fatal(err)
		}
		if err := WaitJS(b, "window.wsreadyDemo && wsreadyDemo.error", 10*time.Second); err != nil {
			t.Fatalf("stage=%s: %v", bad, err)
		}
		text, _ := Eval[string](b, "document.getElementById('error').hidden ? '' : document.getElementById('error').textContent")
		links, _ := Eval[int](b, "document.querySelectorAll('nav a').length")
		if !strings.Contains(text, `Unknown stage "`+bad+`"`) || links != 9 {
			t.Fatalf("stage=%s: message %q, %d stage links", bad, text, links)
		}
	}
}

// A person's click on a switch reaches the server, and the client sees it.
func TestSmokeSwitchFromThePage(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/?stage=5"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// The switches are drawn once /api/faults has answered (and, like all
	// the page draws, not before READY): READY can come first.
	if err := WaitJS(b, "!!document.querySelector('[data-switch=serviceDown]')", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := Eval[bool](b, "(document.querySelector('[data-switch=serviceDown]').click(), true)"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.state.service !== 'up' && !wsreadyDemo.state.ready", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !env.Demo.Stats().Faults["serviceDown"] {
		t.Fatal("the click did not reach the server")
	}
	Eval[bool](b, "(document.querySelector('[data-switch=serviceDown]').click(), true)")
	if err := WaitJS(b, "wsreadyDemo.state.ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// The page's Publish button is live only on a server that takes publishes:
// without -publish every publish is refused, and the page says so.
func TestSmokePublishButtonFollowsTheServer(t *testing.T) {
	for _, publish := range []bool{false, true} {
		t.Run(fmt.Sprint("publish=", publish), func(t *testing.T) {
			env, err := startServer(nil, publish)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(env.Close)
			b, err := NewBrowser(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
				t.Fatal(err)
			}
			if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready && wsreadyDemo.server", 20*time.Second); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("document.getElementById('publish').disabled === %v", !publish)
			if err := WaitJS(b, want, 5*time.Second); err != nil {
				text, _ := Eval[string](b, "document.getElementById('pub-result').textContent")
				t.Fatalf("the Publish button's disabled is not %v (it reads %q): %v", !publish, text, err)
			}
			text, _ := Eval[string](b, "document.getElementById('pub-result').textContent")
			if says := strings.Contains(text, "-publish"); says == publish {
				t.Errorf("with publish %v the page reads %q", publish, text)
			}
		})
	}
}
