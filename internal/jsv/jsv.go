//go:build js && wasm

// Package jsv is a small, panic-safe layer over syscall/js: every call that
// can throw in JavaScript (or panic in syscall/js) returns an error instead,
// and a Go callback that panics is reported on the console instead of
// ending the program. It replaces github.com/hack-pad/safejs, whose error
// helpers link fmt (and with it reflect and os) into the browser client;
// errors here are plain strings, built without fmt.
package jsv

import (
	"syscall/js"
)

// Type is a JavaScript value's type.
type Type = js.Type

// The types, as syscall/js names them.
const (
	TypeUndefined = js.TypeUndefined
	TypeNull      = js.TypeNull
	TypeBoolean   = js.TypeBoolean
	TypeNumber    = js.TypeNumber
	TypeString    = js.TypeString
	TypeSymbol    = js.TypeSymbol
	TypeObject    = js.TypeObject
	TypeFunction  = js.TypeFunction
)

// Value is a JavaScript value whose methods return errors instead of
// panicking.
type Value struct{ v js.Value }

// Func is a Go function JavaScript can call.
type Func struct{ f js.Func }

// Error is a failure inside a JavaScript call: a thrown value, or a panic
// in syscall/js (a wrong type, a released function).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// try runs fn and turns a panic into an *Error.
func try(what string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{msg: what + ": " + describe(r)}
		}
	}()
	fn()
	return nil
}

// describe names a recovered value without fmt.
func describe(r any) string {
	switch x := r.(type) {
	case error:
		return x.Error()
	case string:
		return x
	case js.Value:
		if m := x.Get("message"); m.Type() == js.TypeString {
			return m.String()
		}
		return "a JavaScript exception"
	}
	return "panic"
}

// Global is globalThis.
func Global() Value { return Value{js.Global()} }

// Null and Undefined are the JavaScript values.
func Null() Value      { return Value{js.Null()} }
func Undefined() Value { return Value{js.Undefined()} }

// unwrap turns Values and Funcs (also inside maps and slices) into what
// syscall/js accepts.
func unwrap(x any) any {
	switch v := x.(type) {
	case Value:
		return v.v
	case Func:
		return v.f.Value
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = unwrap(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = unwrap(e)
		}
		return s
	}
	return x
}

func unwrapAll(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = unwrap(a)
	}
	return out
}

// ValueOf converts a Go value as js.ValueOf does.
func ValueOf(x any) (Value, error) {
	var v js.Value
	err := try("ValueOf", func() { v = js.ValueOf(unwrap(x)) })
	return Value{v}, err
}

func (v Value) Type() Type        { return v.v.Type() }
func (v Value) IsUndefined() bool { return v.v.IsUndefined() }
func (v Value) IsNull() bool      { return v.v.IsNull() }

func (v Value) Get(p string) (Value, error) {
	var r js.Value
	err := try("get "+p, func() { r = v.v.Get(p) })
	return Value{r}, err
}

func (v Value) Set(p string, x any) error {
	return try("set "+p, func() { v.v.Set(p, unwrap(x)) })
}

func (v Value) Call(m string, args ...any) (Value, error) {
	var r js.Value
	err := try("call "+m, func() { r = v.v.Call(m, unwrapAll(args)...) })
	return Value{r}, err
}

func (v Value) Invoke(args ...any) (Value, error) {
	var r js.Value
	err := try("invoke", func() { r = v.v.Invoke(unwrapAll(args)...) })
	return Value{r}, err
}

func (v Value) New(args ...any) (Value, error) {
	var r js.Value
	err := try("new", func() { r = v.v.New(unwrapAll(args)...) })
	return Value{r}, err
}

func (v Value) String() (string, error) {
	if v.v.Type() != js.TypeString {
		return "", &Error{msg: "not a string"}
	}
	return v.v.String(), nil
}

func (v Value) Float() (float64, error) {
	var f float64
	err := try("number", func() { f = v.v.Float() })
	return f, err
}

func (v Value) Int() (int, error) {
	var n int
	err := try("number", func() { n = v.v.Int() })
	return n, err
}

func (v Value) Bool() (bool, error) {
	var b bool
	err := try("boolean", func() { b = v.v.Bool() })
	return b, err
}

// FuncOf wraps fn for JavaScript. A panic in fn is reported with
// console.error and the call returns undefined: it never crosses into JS
// or ends the program.
func FuncOf(fn func(this Value, args []Value) any) (Func, error) {
	var f js.Func
	err := try("FuncOf", func() {
		f = js.FuncOf(func(this js.Value, args []js.Value) (out any) {
			defer func() {
				if r := recover(); r != nil {
					js.Global().Get("console").Call("error", "wsready: a callback panicked: "+describe(r))
					out = js.Undefined()
				}
			}()
			vs := make([]Value, len(args))
			for i, a := range args {
				vs[i] = Value{a}
			}
			return unwrap(fn(Value{this}, vs))
		})
	})
	return Func{f}, err
}

// Value is the function as a JavaScript value.
func (f Func) Value() Value { return Value{f.f.Value} }

// Release frees the function; JavaScript must not call it after.
func (f Func) Release() { f.f.Release() }
