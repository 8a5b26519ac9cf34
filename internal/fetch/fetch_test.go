package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGetDecodesAndNamesWhatWentWrong(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`{"n":3}`))
		case "/bad":
			w.Write([]byte(`{"n":`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	var v struct{ N int }
	if err := JSON(context.Background(), nil, hs.URL+"/ok", &v); err != nil || v.N != 3 {
		t.Fatalf("ok: %+v, %v", v, err)
	}
	if err := JSON(context.Background(), hs.Client(), hs.URL+"/nope", &v); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: %v", err)
	}
	if err := JSON(context.Background(), nil, hs.URL+"/bad", &v); err == nil || !strings.HasPrefix(err.Error(), "failed to decode ") {
		t.Fatalf("bad JSON: %v", err)
	}
}

func TestStatusSendsTheHost(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "named.example" {
			w.WriteHeader(http.StatusMisdirectedRequest)
		}
	}))
	defer hs.Close()
	for host, want := range map[string]int{"named.example": 200, "": 421} {
		if got, err := Status(context.Background(), nil, hs.URL, host); err != nil || got != want {
			t.Errorf("Host %q: %d, %v; want %d", host, got, err, want)
		}
	}
}
