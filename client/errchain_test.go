package client

import (
	"errors"
	"fmt"
	"testing"
)

// asAny is an error whose As method hands out a *ServerError.
type asAny struct{ se *ServerError }

func (a asAny) Error() string { return "as" }
func (a asAny) As(target any) bool {
	if p, ok := target.(**ServerError); ok {
		*p = a.se
		return true
	}
	return false
}

// isTimeout is an error whose Is method matches ErrRequestTimeout.
type isTimeout struct{}

func (isTimeout) Error() string        { return "slow" }
func (isTimeout) Is(target error) bool { return target == ErrRequestTimeout }

// is, AsServerError and AsRequestError answer what errors.Is and errors.As
// answer, for every shape of chain: wrapped, joined, with Is and As
// methods, and for nil.
func TestErrorChainsMatchTheErrorsPackage(t *testing.T) {
	se := &ServerError{ID: 2, Code: "rate_limited"}
	re := &RequestError{Kind: ErrConnectionClosed, ID: 3}
	for _, err := range []error{
		nil, ErrNotReady, se, re, errors.New("other"),
		fmt.Errorf("failed to call: %w", re),
		fmt.Errorf("failed to call: %w", fmt.Errorf("again: %w", se)),
		errors.Join(errors.New("a"), fmt.Errorf("b: %w", ErrAborted), se),
		errors.Join(nil, re),
		asAny{se}, fmt.Errorf("wrapped: %w", asAny{se}),
		isTimeout{}, fmt.Errorf("%w and %w", errors.New("x"), isTimeout{}),
	} {
		for _, target := range []error{ErrNotReady, ErrRequestTimeout, ErrConnectionClosed, ErrInvalidRequest, ErrAborted} {
			if got, want := is(err, target), errors.Is(err, target); got != want {
				t.Errorf("is(%v, %v) = %v, errors.Is says %v", err, target, got, want)
			}
		}
		var wantSE *ServerError
		wantOK := errors.As(err, &wantSE)
		if got, ok := AsServerError(err); ok != wantOK || got != wantSE {
			t.Errorf("AsServerError(%v) = %v, %v; errors.As says %v, %v", err, got, ok, wantSE, wantOK)
		}
		var wantRE *RequestError
		wantOK = errors.As(err, &wantRE)
		if got, ok := AsRequestError(err); ok != wantOK || got != wantRE {
			t.Errorf("AsRequestError(%v) = %v, %v; errors.As says %v, %v", err, got, ok, wantRE, wantOK)
		}
	}
}
