// Package chart draws the lab's charts with gonum/plot as inline SVG:
// line charts of series and grouped bar charts, in a colour-blind-safe
// palette, with nothing fetched (no scripts, no fonts).
package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is colour-blind-safe (Okabe–Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{0, 0, 0, 255}, color.RGBA{240, 228, 66, 255},
}

// newPlot returns a plot with the report's type sizes.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	// Type sizes for a chart shown between 560 and 760 CSS px wide (the
	// page's CSS): 10 pt is 11–15 px there.
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(1)
	return p
}

// Series is one line of a line chart.
type Series struct {
	Name   string
	Points plotter.XYs
	Dashed bool
}

// Axes say how a line chart's axes are labelled and scaled.
type Axes struct {
	X, Y       string // labels
	LogX, LogY bool
	// XFormat, if set, puts the x axis's ticks at the data's x values,
	// labelled by it (Bytes: 64 B, 4 KiB, 1 MiB; Number: 0, 20, 75).
	XFormat func(float64) string
}

// readableLog ticks an axis at powers of ten (or at the data's x values),
// labelled by format: "1,000" rather than "1e+03".
type readableLog struct {
	format func(float64) string
	at     []float64 // the data's x values (bytes axis), or nil
}

// Ticks implements plot.Ticker.
func (t readableLog) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if t.at != nil {
		for _, v := range t.at {
			if v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: t.format(v)})
			}
		}
		return out
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		if v := math.Pow(10, e); v >= lo*0.999 && v <= hi*1.001 {
			out = append(out, plot.Tick{Value: v, Label: t.format(v)})
		}
	}
	if len(out) < 2 { // a narrow range: its ends
		out = []plot.Tick{{Value: lo, Label: t.format(lo)}, {Value: hi, Label: t.format(hi)}}
	}
	return out
}

// relabel is a ticker whose labels format writes (thousands separated,
// no exponent); minor ticks stay unlabelled.
type relabel struct {
	inner  plot.Ticker
	format func(float64) string
}

// Ticks implements plot.Ticker.
func (r relabel) Ticks(lo, hi float64) []plot.Tick {
	ts := r.inner.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = r.format(ts[i].Value)
		}
	}
	return ts
}

// Number formats an axis value: thousands separated, no exponent.
func Number(v float64) string {
	switch {
	case v >= 1000:
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	case v >= 1 || v <= -1 || v == 0:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// Bytes formats a size: 64 B, 500 B, 4 KiB, 1 MiB.
func Bytes(v float64) string {
	switch {
	case v >= 1<<20 && math.Mod(v, 1<<20) == 0:
		return strconv.FormatFloat(v/(1<<20), 'f', -1, 64) + " MiB"
	case v >= 1<<10 && math.Mod(v, 1<<10) == 0:
		return strconv.FormatFloat(v/(1<<10), 'f', -1, 64) + " KiB"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " B"
}

// Line draws series against x and returns inline SVG.
func Line(title string, axes Axes, ss []Series) (template.HTML, error) {
	xlabel, ylabel, logX, logY := axes.X, axes.Y, axes.LogX, axes.LogY
	p := newPlot(title, xlabel, ylabel)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = readableLog{format: Number}
	}
	if axes.XFormat != nil {
		var at []float64
		for _, s := range ss {
			for _, pt := range s.Points {
				if !slices.Contains(at, pt.X) {
					at = append(at, pt.X)
				}
			}
		}
		slices.Sort(at)
		p.X.Tick.Marker = readableLog{format: axes.XFormat, at: at}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = readableLog{format: Number}
	} else {
		p.Y.Tick.Marker = relabel{plot.DefaultTicks{}, Number}
	}
	// The legend goes below the plot: no line can cross its text.
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = p.Legend.TextStyle.Font.Size
	leg.Top, leg.Left, leg.Padding = true, true, vg.Points(2)
	entries := 0
	p.Add(plotter.NewGrid())
	for i, s := range ss {
		if len(s.Points) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.Points)
		if err != nil {
			return "", err
		}
		c := palette[i%len(palette)]
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, pts)
		leg.Add(s.Name, l, pts)
		entries++
	}
	return renderBelow(p, leg, entries, 7, 4.2)
}

// renderBelow renders p with its legend's n entries in rows below it.
func renderBelow(p *plot.Plot, leg plot.Legend, n int, wIn, hIn float64) (out template.HTML, err error) {
	var legH vg.Length
	if n > 0 {
		legH = vg.Length(n)*(leg.TextStyle.Font.Size*1.25+leg.Padding) + vg.Points(8)
	}
	return renderWith(p, wIn, hIn+float64(legH/vg.Inch), func(dc draw.Canvas) {
		// A margin inside the picture: gonum/plot lays text out to the
		// edge, and an SVG clips what crosses it (the last tick label, a
		// rotated axis label, a title's ascenders).
		p.Draw(draw.Crop(dc, margin, -margin, margin/2+legH, -margin/2))
		if legH > 0 {
			total := dc.Max.Y - dc.Min.Y
			leg.Draw(draw.Crop(dc, margin, -margin, margin/2, -(total - margin/2 - legH)))
		}
	})
}

// Bars draws grouped bars on a linear axis: for each label, one bar per
// group, values[group][label index]. Missing values (NaN) draw no bar.
func Bars(title, ylabel string, labels []string, groups []string, values map[string][]float64) (template.HTML, error) {
	p := newPlot(title, "", ylabel)
	p.Y.Min = 0
	p.Y.Tick.Marker = relabel{plot.DefaultTicks{}, Number}
	// The legend goes below the plot: no bar can hide its text.
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = p.Legend.TextStyle.Font.Size
	leg.Top, leg.Left, leg.Padding = true, true, vg.Points(2)
	entries := 0
	var notRun []func()
	p.Add(plotter.NewGrid())
	// About 430 points of plotting width, 80 % of each category filled.
	w := vg.Points(math.Max(3, 430*0.8/float64(max(1, len(labels)))/float64(max(1, len(groups)))))
	for i, g := range groups {
		vals := make(plotter.Values, len(labels))
		drawn := false
		for j := range vals {
			if j < len(values[g]) && !math.IsNaN(values[g][j]) {
				vals[j], drawn = values[g][j], true
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return "", err
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(groups)-1)/2) * w
		switch {
		case !drawn && len(groups) > 1: // a legend entry, last, says why there is no bar
			notRun = append(notRun, func() { leg.Add(g+" (not run here)", b) })
			entries++
		case !drawn:
		default:
			p.Add(b)
			if len(groups) > 1 {
				leg.Add(g, b)
				entries++
			}
		}
	}
	for _, add := range notRun {
		add()
	}
	top := 0.0 // a little headroom above the tallest bar
	for _, g := range groups {
		for _, v := range values[g] {
			if !math.IsNaN(v) && v > top {
				top = v
			}
		}
	}
	if top > 0 {
		p.Y.Max = top * 1.06
	}
	p.NominalX(labels...)
	// Labels that would not fit side by side are slanted.
	chars := 0
	for _, l := range labels {
		chars += len(l)
	}
	if len(labels) > 5 || chars > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
	}
	return renderBelow(p, leg, entries, 7, 4.2)
}

// margin is the space kept free on each side of a chart (half of it at
// the top and bottom).
const margin = 0.35 * vg.Inch

// renderWith draws on an SVG canvas of wIn × hIn inches and returns the
// inline SVG.
func renderWith(p *plot.Plot, wIn, hIn float64, drawOn func(draw.Canvas)) (out template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil { // gonum/plot panics on degenerate data
			out, err = "", fmt.Errorf("chart: drawing %q: %v", p.Title.Text, r)
		}
	}()
	c := vgsvg.NewWith(vgsvg.UseWH(vg.Length(wIn)*vg.Inch, vg.Length(hIn)*vg.Inch), vgsvg.EmbedFonts(false))
	drawOn(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = strings.Replace(s, "<svg ", `<svg class="chart" role="img" `, 1)
	return template.HTML(s), nil // generated by gonum/plot from numbers, not from input text
}
