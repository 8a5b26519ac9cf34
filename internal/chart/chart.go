// Package chart draws the simulator's line charts as self-contained SVG
// (no dependencies): a tool of make sim, not API.
package chart

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	Values []int // one per second
}

var palette = []string{"#cf222e", "#0969da", "#bf8700", "#1a7f37", "#8250df"}

// Line renders series as a standalone SVG: x is seconds, y is the
// value, with labelled axes, ticks, a legend and an optional horizontal
// reference line (for example the server's capacity).
func Line(title, ylabel string, series []Series, ref int, refLabel string, logY bool) string {
	const W, H = 900, 460
	const left, right, top, bottom = 80, 190, 50, 60
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	n, ymax := 0, ref
	for _, s := range series {
		n = max(n, len(s.Values))
		for _, v := range s.Values {
			ymax = max(ymax, v)
		}
	}
	if n < 2 {
		n = 2
	}
	if ymax < 1 {
		ymax = 1
	}
	top10 := niceCeil(float64(ymax))
	yOf := func(v float64) float64 {
		if logY {
			lv := math.Log10(math.Max(v, 1))
			return float64(top) + ph - lv/math.Log10(top10)*ph
		}
		return float64(top) + ph - v/top10*ph
	}
	xOf := func(i int) float64 { return float64(left) + float64(i)/float64(n-1)*pw }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="13">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="17" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// y ticks
	var ticks []float64
	if logY {
		for v := 1.0; v <= top10; v *= 10 {
			ticks = append(ticks, v)
		}
	} else {
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, top10*float64(i)/5)
		}
	}
	for _, v := range ticks {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eaeef2"/>`, left, float64(left)+pw, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+4, compact(v))
	}
	// x ticks every 10 s
	step := 10
	if n > 200 {
		step = 60
	}
	for s := 0; s < n; s += step {
		x := xOf(s)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#d0d7de"/>`, x, x, top+int(ph), float64(top)+ph+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x, float64(top)+ph+20, s)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="#57606a"/>`, left, left, top, float64(top)+ph)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#57606a"/>`+"\n", left, float64(left)+pw, float64(top)+ph, float64(top)+ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">time since the disconnect (s)</text>`+"\n", float64(left)+pw/2, H-15)
	fmt.Fprintf(&b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", float64(top)+ph/2, html.EscapeString(ylabel))
	if ref > 0 {
		y := yOf(float64(ref))
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#57606a" stroke-dasharray="6 4"/>`, left, float64(left)+pw, y, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#57606a">%s</text>`+"\n", float64(left)+pw+6, y+4, html.EscapeString(refLabel))
	}
	for i, s := range series {
		color := palette[i%len(palette)]
		var pts []string
		for j, v := range s.Values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(j), yOf(float64(v))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		ly := top + 20 + i*22
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>`, float64(left)+pw+20, float64(left)+pw+44, ly, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(left)+pw+50, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func compact(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

// Charts returns the two charts of the base scenario.
