package evaluate

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePlot draws r's time series into a PNG at path, four panels over
// trace time: the total arrival rate; the instances per GPU type of each
// policy (one colour per policy, one dash pattern per GPU type); each
// policy's instances per GPU in use (packing); and each policy's billed
// cost so far. The bound, which is not replayed, has no series.
func WritePlot(path string, r RunResult) error {
	var replayed []PolicyResult
	for _, p := range r.Policies {
		if !p.Bound {
			replayed = append(replayed, p)
		}
	}
	if len(replayed) == 0 {
		return fmt.Errorf("evaluate: %s: nothing to plot", r.Name)
	}
	load := plot.New()
	load.Title.Text = r.Name + ": arrival rate"
	load.Y.Label.Text = "requests/s"
	first := replayed[0].Series
	if err := addLine(load, "", first.Hours, first.LoadRPS, 0, 0); err != nil {
		return err
	}

	inst := plot.New()
	inst.Title.Text = "instances per GPU type"
	inst.Y.Label.Text = "instances"
	pack := plot.New()
	pack.Title.Text = "instances per GPU in use (packing)"
	pack.Y.Label.Text = "instances / GPU"
	cost := plot.New()
	cost.Title.Text = "billed cost so far"
	cost.Y.Label.Text = "USD"
	cost.X.Label.Text = "trace time (h)"
	for i, p := range replayed {
		for j, t := range gpuTypesOf(r.Cluster) {
			if err := addLine(inst, p.Policy+" "+t, p.Series.Hours, p.Series.Instances[t], i, j); err != nil {
				return err
			}
		}
		if err := addLine(pack, p.Policy, p.Series.Hours, p.Series.InstancesPerGPU, i, 0); err != nil {
			return err
		}
		if err := addLine(cost, p.Policy, p.Series.Hours, p.Series.CostUSD, i, 0); err != nil {
			return err
		}
	}
	plots := [][]*plot.Plot{{load}, {inst}, {pack}, {cost}}
	for _, p := range plots {
		p[0].Legend.Top, p[0].Legend.Left = true, true
		p[0].Add(plotter.NewGrid())
	}
	return writePNG(path, 22*vg.Centimeter, 34*vg.Centimeter, plots)
}

// WriteSLOPlot draws each service's SLO attainment under each replayed
// policy (one colour per policy) into a PNG at path, services sorted by
// their requests (busiest first), with each service's SL_min in black: a
// point below the black one is a missed SLO.
func WriteSLOPlot(path string, r RunResult) error {
	var replayed []PolicyResult
	for _, p := range r.Policies {
		if !p.Bound && len(p.Services) > 0 {
			replayed = append(replayed, p)
		}
	}
	if len(replayed) == 0 {
		return fmt.Errorf("evaluate: %s: nothing to plot", r.Name)
	}
	order := make([]int, len(replayed[0].Services))
	for k := range order {
		order[k] = k
	}
	svc := replayed[0].Services
	sort.SliceStable(order, func(a, b int) bool { return svc[order[a]].Requests > svc[order[b]].Requests })
	pl := plot.New()
	pl.Title.Text = r.Name + ": SLO attainment per service (busiest first)"
	pl.X.Label.Text = "service rank by requests"
	pl.Y.Label.Text = "requests within RT_max"
	lowest := 1.0
	slo := make(plotter.XYs, len(order))
	for x, k := range order {
		slo[x].X, slo[x].Y = float64(x), svc[k].ServiceLevel
		lowest = math.Min(lowest, svc[k].ServiceLevel)
	}
	for i, p := range replayed {
		pts := make(plotter.XYs, len(order))
		for x, k := range order {
			pts[x].X, pts[x].Y = float64(x), p.Services[k].SLOAttainment
			lowest = math.Min(lowest, p.Services[k].SLOAttainment)
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = plotutil.Color(i)
		sc.GlyphStyle.Shape = plotutil.Shape(i)
		sc.GlyphStyle.Radius = vg.Points(2.5)
		pl.Add(sc)
		pl.Legend.Add(p.Policy, sc)
	}
	sl, err := plotter.NewScatter(slo)
	if err != nil {
		return err
	}
	sl.GlyphStyle.Color = color.Black
	sl.GlyphStyle.Shape = draw.BoxGlyph{}
	sl.GlyphStyle.Radius = vg.Points(1.5)
	pl.Add(sl)
	pl.Legend.Add("SL_min", sl)
	pl.Y.Min, pl.Y.Max = math.Max(0, math.Min(lowest, 0.95)-0.01), 1.002
	pl.Legend.Top, pl.Legend.Left = false, true
	pl.Add(plotter.NewGrid())
	return writePNG(path, 22*vg.Centimeter, 12*vg.Centimeter, [][]*plot.Plot{{pl}})
}

// WriteParetoPlot draws r's sweep (RunResult.Pareto) into a PNG at path:
// per curve (a policy and its knobs other than the target), its billed
// cost against its excess missed requests E at each target replayed,
// joined in target order (sortPoints), the target written by each point. Lower and further left is cheaper at the same
// attainment.
func WriteParetoPlot(path string, r RunResult) error {
	if len(r.Pareto) == 0 {
		return fmt.Errorf("evaluate: %s: no sweep to plot", r.Name)
	}
	pl := plot.New()
	pl.Title.Text = r.Name + ": cost against excess missed requests, per saturation threshold"
	pl.X.Label.Text = "excess missed requests E (beyond the targets)"
	pl.Y.Label.Text = "billed cost (USD)"
	// A policy whose least E is far beyond hetsev-exact's largest would
	// squash every other curve against the axis: it is named, not drawn.
	reach := 1000.0
	for _, p := range r.Pareto {
		if p.Policy == PolicyExact {
			reach = math.Max(reach, 10*p.ExcessMissed)
		}
	}
	var names, off []string
	seen := map[string]bool{}
	for _, p := range r.Pareto {
		if seen[p.curve()] {
			continue
		}
		seen[p.curve()] = true
		least := math.Inf(1)
		for _, q := range r.Pareto {
			if q.curve() == p.curve() {
				least = math.Min(least, q.ExcessMissed)
			}
		}
		if least > reach {
			off = append(off, fmt.Sprintf("%s (E >= %.3g)", p.curve(), least))
		} else {
			names = append(names, p.curve())
		}
	}
	if len(off) > 0 {
		pl.Title.Text += "\noff the chart: " + strings.Join(off, ", ")
	}
	for i, name := range names {
		var pts plotter.XYs
		var labels []string
		for _, p := range r.Pareto {
			if p.curve() == name {
				pts = append(pts, plotter.XY{X: p.ExcessMissed, Y: p.CostUSD})
				labels = append(labels, fmt.Sprintf("%.3g", p.Threshold))
			}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.LineStyle.Color, line.LineStyle.Width = plotutil.Color(i), vg.Points(1)
		points.GlyphStyle.Color, points.GlyphStyle.Shape = plotutil.Color(i), plotutil.Shape(i)
		points.GlyphStyle.Radius = vg.Points(3)
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return err
		}
		for k := range lab.TextStyle {
			lab.TextStyle[k].Color = plotutil.Color(i)
			lab.TextStyle[k].XAlign = draw.XRight
		}
		pl.Add(line, points, lab)
		pl.Legend.Add(name, line, points)
	}
	pl.Legend.Top = true
	// Costs from zero: a spread of cents must not look like one of
	// dollars.
	pl.Y.Min = 0
	pl.Add(plotter.NewGrid())
	return writePNG(path, 22*vg.Centimeter, 14*vg.Centimeter, [][]*plot.Plot{{pl}})
}

// writePNG lays plots out in one column and writes them as a PNG.
func writePNG(path string, w, h vg.Length, plots [][]*plot.Plot) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addLine adds the series (x, y) in colour i and dash pattern j, with a
// legend entry unless name is empty.
func addLine(p *plot.Plot, name string, x, y []float64, i, j int) error {
	pts := make(plotter.XYs, min(len(x), len(y)))
	for k := range pts {
		pts[k].X, pts[k].Y = x[k], y[k]
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.LineStyle.Color = plotutil.Color(i)
	l.LineStyle.Dashes = plotutil.Dashes(j)
	l.LineStyle.Width = vg.Points(1)
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}
