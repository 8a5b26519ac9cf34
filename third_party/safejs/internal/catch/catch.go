//go:build js && wasm

// Package catch runs functions and returns panic values as errors instead.
//
// Changed by wsready from safejs v0.1.0 (see ../../WSREADY.md): a panic
// value that is neither an error nor a js.Value becomes an error without
// fmt, and the error carries no stack trace (upstream's only showed with
// fmt's %+v).
package catch

import (
	"errors"
	"strconv"
	"syscall/js"
)

// Try runs fn and returns the result. If fn panicked, the panic value is returned as an error instead.
func Try[Result any](fn func() Result) (result Result, err error) {
	defer recoverErr(&err)
	result = fn()
	return
}

// TrySideEffect is like Try, but does not have a return value.
func TrySideEffect(fn func()) (err error) {
	defer recoverErr(&err)
	fn()
	return
}

func recoverErr(err *error) {
	value := recover()
	valueErr := recoverValueToError(value)
	if valueErr != nil {
		*err = valueErr
	}
}

func recoverValueToError(value any) error {
	if value == nil {
		return nil
	}
	switch value := value.(type) {
	case error:
		return value
	case js.Value:
		return js.Error{Value: value}
	case string:
		return errors.New(value)
	case interface{ String() string }:
		return errors.New(value.String())
	case int:
		return errors.New(strconv.Itoa(value))
	case bool:
		return errors.New(strconv.FormatBool(value))
	default:
		return errors.New("panic with a value of a type safejs does not print")
	}
}
