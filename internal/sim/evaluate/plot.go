package evaluate

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePlot draws r's time series into a PNG at path, three panels over
// trace time: the total arrival rate; the instances per GPU type of each
// policy (one colour per policy, one dash pattern per GPU type); and each
// policy's billed cost so far.
func WritePlot(path string, r RunResult) error {
	if len(r.Policies) == 0 {
		return fmt.Errorf("evaluate: %s: nothing to plot", r.Name)
	}
	load := plot.New()
	load.Title.Text = r.Name + ": arrival rate"
	load.Y.Label.Text = "requests/s"
	first := r.Policies[0].Series
	if err := addLine(load, "", first.Hours, first.LoadRPS, 0, 0); err != nil {
		return err
	}

	inst := plot.New()
	inst.Title.Text = "instances per GPU type"
	inst.Y.Label.Text = "instances"
	cost := plot.New()
	cost.Title.Text = "billed cost so far"
	cost.Y.Label.Text = "USD"
	cost.X.Label.Text = "trace time (h)"
	for i, p := range r.Policies {
		for j, t := range gpuTypesOf(r.Cluster) {
			if err := addLine(inst, p.Policy+" "+t, p.Series.Hours, p.Series.Instances[t], i, j); err != nil {
				return err
			}
		}
		if err := addLine(cost, p.Policy, p.Series.Hours, p.Series.CostUSD, i, 0); err != nil {
			return err
		}
	}
	for _, p := range []*plot.Plot{load, inst, cost} {
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
	}

	const w, h = 22 * vg.Centimeter, 27 * vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{load}, {inst}, {cost}}
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
