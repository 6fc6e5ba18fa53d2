package chart

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestCharts draws both kinds with awkward input: empty and NaN series,
// log axes, and text that must come out escaped (labels come from results
// folders, which may come from elsewhere).
func TestCharts(t *testing.T) {
	evil := `<script>alert(1)</script>`
	l, err := Line("t "+evil, Axes{X: "x", Y: "y", LogX: true, LogY: true}, []Series{
		{Name: evil, Points: plotter.XYs{{X: 1, Y: 1}, {X: 10, Y: 100}}},
		{Name: "empty"},
		{Name: "dashed", Points: plotter.XYs{{X: 2, Y: 3}}, Dashed: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bars("bars", "ms", []string{"a", evil, "c"}, []string{"g1", "g2"},
		map[string][]float64{"g1": {1, math.NaN(), 3}, "g2": {2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, svg := range []string{string(l), string(b)} {
		if !strings.HasPrefix(svg, `<svg class="chart" role="img" `) || strings.Contains(svg, "<script") {
			t.Fatalf("chart: %.300s", svg)
		}
	}
	if !strings.Contains(string(l), "stroke-dasharray") {
		t.Error("dashed series drawn solid")
	}
}
