// Package chart draws counts per window over consecutive windows as a line
// chart for a terminal: time on the x axis, one line per series, drawn by
// github.com/guptarohit/asciigraph. Each window is a flat step as wide as
// the chart allows, so a count reads as it is, not as a slope between
// neighbours. On a terminal each series has a color of its own; off one,
// a glyph of its own, so the chart reads the same in a file.
package chart

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/guptarohit/asciigraph"
)

// Defaults of Options.
const (
	DefaultWidth  = 80 // columns, off a terminal
	DefaultHeight = 12 // rows of the plot at most
	// MinWidth is the narrowest chart drawn: labels and a few columns.
	MinWidth = 40
)

// Series is one line of a chart: its name and one value per window, every
// series as long as the others.
type Series struct {
	Name   string
	Values []float64
}

// Options shape a chart; zero values are the defaults.
type Options struct {
	// Width is the whole chart's width in columns, y labels included
	// (default DefaultWidth, at least MinWidth).
	Width int
	// Height is the most rows of the plot (default DefaultHeight): the
	// y axis steps by 1, 2 or 5 times a power of ten, as few rows as that
	// takes.
	Height int
	// Color draws each series in its own ANSI color with lines (for a
	// terminal); without it, each series has its own glyph.
	Color bool
	// Edge names the edge before window i on the x axis, for i from 0 to
	// the number of windows (the end of the last one); default i.
	Edge func(i int) string
}

// glyphs tell the series apart without color: the first is drawn with
// box-drawing lines, the others with a character of their own.
var glyphs = []string{"", "•", "×", "+", "∘", "#", "~", "*"}

// colors tell the series apart on a terminal.
var colors = []asciigraph.AnsiColor{asciigraph.Blue, asciigraph.Red, asciigraph.Green, asciigraph.Yellow,
	asciigraph.Magenta, asciigraph.Cyan, asciigraph.Orange, asciigraph.Gray}

// ErrNoData is returned for a chart with no series or no window.
var ErrNoData = errors.New("chart: nothing to draw")

// MaxSeries is the most series a chart tells apart.
const MaxSeries = 8

// Render draws the series. Each window gets the same number of columns,
// as many as fit; when there are more windows than columns, a column shows
// the largest value of the windows it covers, so no peak is lost.
func Render(series []Series, o Options) (string, error) {
	if len(series) == 0 || len(series[0].Values) == 0 {
		return "", ErrNoData
	}
	n := len(series[0].Values)
	for _, s := range series {
		if len(s.Values) != n {
			return "", fmt.Errorf("chart: series %q has %d values, the first %d", s.Name, len(s.Values), n)
		}
	}
	if len(series) > MaxSeries {
		return "", fmt.Errorf("chart: at most %d series, got %d", MaxSeries, len(series))
	}
	width := o.Width
	if width <= 0 {
		width = DefaultWidth
	}
	width = max(width, MinWidth)
	height := o.Height
	if height <= 0 {
		height = DefaultHeight
	}
	edge := o.Edge
	if edge == nil {
		edge = strconv.Itoa
	}

	lo, hi := 0.0, 0.0 // the axis always shows 0
	for _, s := range series {
		for _, v := range s.Values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	step := niceStep((hi - lo) / float64(height))
	lower, upper := math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	if upper == lower {
		upper = lower + step
	}
	yLabel := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	const offset = 3
	leftPad := offset + max(utf8.RuneCountInString(yLabel(lower)), utf8.RuneCountInString(yLabel(upper)))
	xWidth := 0
	for i := range n + 1 {
		xWidth = max(xWidth, utf8.RuneCountInString(edge(i)))
	}
	// The last x label is centred on the last column: leave room for its
	// right half.
	avail := max(width-leftPad-(xWidth-xWidth/2), 2)

	data := make([][]float64, len(series))
	perWindow := 0 // columns per window; 0 when columns cover several
	for i, s := range series {
		data[i], perWindow = fit(s.Values, avail)
	}
	cols := len(data[0])
	tickCount := min(n+1, max(cols/(xWidth+2), 2)) // labels on the nearest edges
	if perWindow > 0 {
		tickCount = ticks(n, cols, xWidth)
	}
	opts := []asciigraph.Option{
		asciigraph.Height(int(math.Round((upper - lower) / step))), asciigraph.Offset(offset),
		asciigraph.LowerBound(lower), asciigraph.UpperBound(upper),
		asciigraph.YAxisValueFormatter(func(v float64) string { return yLabel(math.Round(v/step) * step) }),
		asciigraph.XAxisRange(0, float64(n)),
		asciigraph.XAxisTickCount(tickCount),
		asciigraph.XAxisValueFormatter(func(v float64) string { return edge(min(max(int(math.Round(v)), 0), n)) }),
	}
	chars := make([]asciigraph.CharSet, len(series))
	for i := range series {
		chars[i] = asciigraph.DefaultCharSet
		if glyphs[i] != "" && !o.Color {
			chars[i] = asciigraph.CreateCharSet(glyphs[i])
		}
	}
	opts = append(opts, asciigraph.SeriesChars(chars...))
	if o.Color {
		opts = append(opts, asciigraph.SeriesColors(colors[:len(series)]...))
	}
	var b strings.Builder
	b.WriteString(asciigraph.PlotMany(data, opts...))
	b.WriteString("\n\n" + strings.Repeat(" ", leftPad))
	for i, s := range series {
		if i > 0 {
			b.WriteString("   ")
		}
		mark := glyphs[i]
		switch {
		case o.Color:
			mark = colors[i].String() + asciigraph.DefaultCharSet.Horizontal + asciigraph.Default.String()
		case mark == "":
			mark = asciigraph.DefaultCharSet.Horizontal
		}
		b.WriteString(mark + " " + s.Name)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// fit lays values out on at most cols columns. When they fit, each window
// is a run of the same number of columns, and one more column closes the
// last window (the x axis's last edge); perWindow is that number. Else each
// column shows the largest value of the windows it covers, and perWindow
// is 0.
func fit(values []float64, cols int) (out []float64, perWindow int) {
	n := len(values)
	if n < cols {
		k := (cols - 1) / n
		out = make([]float64, 0, n*k+1)
		for _, v := range values {
			for range k {
				out = append(out, v)
			}
		}
		return append(out, values[n-1]), k
	}
	out = make([]float64, cols)
	for c := range cols {
		from, to := c*n/cols, (c+1)*n/cols
		out[c] = values[from]
		for _, v := range values[from+1 : to] {
			out[c] = math.Max(out[c], v)
		}
	}
	return out, 0
}

// ticks chooses how many window edges the x axis labels: as many as fit
// side by side with a gap, preferring a count that puts every label on an
// edge (n a multiple of the steps between them).
func ticks(n, cols, labelWidth int) int {
	most := min(n+1, max(cols/(labelWidth+2), 2))
	for k := most; k >= 3 && 2*k > most; k-- {
		if n%(k-1) == 0 {
			return k
		}
	}
	return most
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten that is at
// least raw (1 for raw ≤ 1).
func niceStep(raw float64) float64 {
	if raw <= 1 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
