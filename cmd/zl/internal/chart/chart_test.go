package chart

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFit: windows that fit are equal runs of columns plus one closing
// column; more windows than columns keep each column's peak.
func TestFit(t *testing.T) {
	out, k := fit([]float64{1, 2, 3}, 10)
	if k != 3 || !slices.Equal(out, []float64{1, 1, 1, 2, 2, 2, 3, 3, 3, 3}) {
		t.Errorf("3 windows on 10 columns: %v, %d per window", out, k)
	}
	out, k = fit([]float64{7}, 2)
	if k != 1 || !slices.Equal(out, []float64{7, 7}) {
		t.Errorf("1 window on 2 columns: %v, %d", out, k)
	}
	vals := make([]float64, 100)
	vals[37] = 50 // a lone peak
	out, k = fit(vals, 10)
	if k != 0 || len(out) != 10 || out[3] != 50 || slices.Max(out) != 50 || out[4] != 0 {
		t.Errorf("100 windows on 10 columns: %v, %d", out, k)
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0: 1, 0.3: 1, 1: 1, 1.5: 2, 2: 2, 2.1: 5, 7.9: 10, 10: 10, 111: 200, 4999: 5000} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

// TestTicks: as many labels as fit, on window edges when a count allows.
func TestTicks(t *testing.T) {
	for _, c := range []struct{ n, cols, label, want int }{
		{24, 49, 11, 3},  // 0, 12, 24
		{24, 97, 11, 7},  // every 4 hours
		{8, 41, 11, 3},   // 0, 4, 8
		{7, 200, 10, 8},  // every window
		{23, 70, 11, 5},  // no count divides 23: as many as fit
		{1, 60, 11, 2},   // the window's two edges
		{100, 30, 11, 2}, // at least the ends
	} {
		if got := ticks(c.n, c.cols, c.label); got != c.want {
			t.Errorf("ticks(%d windows, %d columns, labels of %d) = %d, want %d", c.n, c.cols, c.label, got, c.want)
		}
	}
}

// TestRender: the y axis steps by a nice amount from 0, the x axis names
// the edges, the legend names the series with their glyphs; nothing wider
// than asked, no color codes off a terminal.
func TestRender(t *testing.T) {
	s := []Series{{"rpm", []float64{1, 2, 0, 1}}, {"tpm", []float64{30, 95, 0, 12}}}
	text, err := Render(s, Options{Width: 60, Edge: func(i int) string { return "e" + strconv.Itoa(i) }})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasPrefix(lines[0], " 100 ┤") || !strings.Contains(text, "\n   0 ┼") {
		t.Errorf("y axis:\n%s", text)
	}
	if !strings.Contains(text, "e0") || !strings.Contains(text, "e4") || !strings.Contains(text, "e2") {
		t.Errorf("x labels:\n%s", text)
	}
	if lines[len(lines)-1] != "      ─ rpm   • tpm" {
		t.Errorf("legend %q", lines[len(lines)-1])
	}
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 60 {
			t.Errorf("line wider than 60: %q", l)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Errorf("color codes without Color:\n%q", text)
	}
	colored, err := Render(s, Options{Width: 60, Color: true})
	if err != nil || !strings.Contains(colored, "\x1b[") || strings.Contains(colored, "•") {
		t.Errorf("with Color, colored lines and no glyphs: %v\n%q", err, colored)
	}
	// All zeros, one window, negative counts (refunds): still a chart.
	for _, vals := range [][]float64{{0, 0, 0}, {5}, {-3, 4}} {
		if _, err := Render([]Series{{"x", vals}}, Options{}); err != nil {
			t.Errorf("%v: %v", vals, err)
		}
	}
	neg, _ := Render([]Series{{"x", []float64{-3, 4}}}, Options{})
	if !strings.Contains(neg, "-3 ┤") && !strings.Contains(neg, "-3 ┼") {
		t.Errorf("negative values:\n%s", neg)
	}
}

func TestRenderRefuses(t *testing.T) {
	if _, err := Render(nil, Options{}); !errors.Is(err, ErrNoData) {
		t.Errorf("no series: %v", err)
	}
	if _, err := Render([]Series{{"a", nil}}, Options{}); !errors.Is(err, ErrNoData) {
		t.Errorf("no windows: %v", err)
	}
	if _, err := Render([]Series{{"a", []float64{1}}, {"b", []float64{1, 2}}}, Options{}); err == nil {
		t.Error("series of different lengths drawn")
	}
	many := make([]Series, MaxSeries+1)
	for i := range many {
		many[i] = Series{strconv.Itoa(i), []float64{1}}
	}
	if _, err := Render(many, Options{}); err == nil {
		t.Error("more series than glyphs drawn")
	}
}
