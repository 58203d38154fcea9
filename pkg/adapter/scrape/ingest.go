package scrape

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

// destinationReported filters Istio series to reporter="destination",
// counting series without a reporter label as ignored.
func destinationReported(m model.Metric, series string) bool {
	r, ok := m[adapter.LabelReporter]
	if !ok {
		selfmetrics.Ignore(series, selfmetrics.IgnoredNoReporter)
		return false
	}
	return r == adapter.ReporterDestination
}

// ingest stores one successful scrape's samples in st, scraped at
// scraped (the scraper's clock). Istio series keep their samples' times
// (an exposition's own timestamps, or scraped): rates are per target, so a
// target's timestamps only ever move its own series. DCGM gauges take
// scraped: their times decide which of several exporters of one GPU is
// newest, which an exporter must not be able to claim. Caller holds s.mu.
func (s *Scraper) ingest(st *targetState, samples model.Vector, scraped time.Time) {
	var (
		reqNow   = map[model.Fingerprint]float64{}
		reqInc   float64
		reqT     time.Time
		bktNow   = map[bucketKey]float64{}
		bktInc   = map[float64]float64{}
		bktT     time.Time
		gaugeNow = map[gaugeKey]point{}
		// gaugeExposed is each gauge's exposition time, to pick the
		// newest of a series repeated in one exposition.
		gaugeExposed = map[gaugeKey]time.Time{}
		uuidNow      = map[uuidKey]point{}
	)
	for _, smp := range samples {
		name := string(smp.Metric[model.MetricNameLabel])
		v := float64(smp.Value)
		ts := smp.Timestamp.Time()
		switch name {
		case adapter.SeriesIstioRequests:
			if !destinationReported(smp.Metric, name) {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			fp := smp.Metric.Fingerprint()
			if _, dup := reqNow[fp]; dup {
				selfmetrics.Ignore(name, selfmetrics.IgnoredDuplicate)
				continue
			}
			reqNow[fp] = v
			if prev, ok := st.reqLast[fp]; ok {
				reqInc += counterIncrease(prev, v)
			}
			if ts.After(reqT) {
				reqT = ts
			}
		case adapter.SeriesIstioDurationBucket:
			if !destinationReported(smp.Metric, name) {
				continue
			}
			le, err := strconv.ParseFloat(string(smp.Metric[model.BucketLabel]), 64)
			if err != nil || math.IsNaN(le) {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadLe)
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			key := bucketKey{series: withoutLe(smp.Metric).Fingerprint(), le: le}
			if _, dup := bktNow[key]; dup {
				selfmetrics.Ignore(name, selfmetrics.IgnoredDuplicate)
				continue
			}
			bktNow[key] = v
			inc := 0.0
			if prev, ok := st.bucketLast[key]; ok {
				inc = counterIncrease(prev, v)
			}
			bktInc[le] += inc
			if ts.After(bktT) {
				bktT = ts
			}
		case adapter.SeriesDCGMGPUUtil, adapter.SeriesDCGMFBUsed:
			if !st.DCGM {
				selfmetrics.Ignore(name, selfmetrics.IgnoredNotDCGMExporter)
				continue
			}
			gpu, err := strconv.Atoi(string(smp.Metric[adapter.LabelDCGMGPU]))
			if err != nil || gpu < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadGPU)
				continue
			}
			// An exporter reports the GPUs of the node it runs on. Its
			// Hostname label is that node (the GPU Operator sets
			// NODE_NAME) or its own pod's name (without it); a sample
			// naming anything else is not about this node's GPUs.
			node := st.Node
			if host := string(smp.Metric[adapter.LabelDCGMHostname]); host != "" && host != node && host != st.Pod.Name {
				selfmetrics.Ignore(name, selfmetrics.IgnoredForeignNode)
				continue
			}
			if node == "" {
				selfmetrics.Ignore(name, selfmetrics.IgnoredNoNode)
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			key := gaugeKey{series: name, node: node, gpu: gpu}
			if old, dup := gaugeExposed[key]; dup && !ts.After(old) {
				continue // a repeated series: its newest sample
			}
			gaugeExposed[key] = ts
			gaugeNow[key] = point{t: scraped, v: v}
			if uuid := string(smp.Metric[adapter.LabelDCGMUUID]); uuid != "" {
				uuidNow[uuidKey{series: name, uuid: uuid}] = point{t: scraped, v: v}
			}
		}
	}

	// Requests: running total, one point per scrape.
	st.reqLast = reqNow
	if len(reqNow) == 0 {
		st.req = nil // series gone (e.g. restarted, idle): no data rather than a stale rate
	} else {
		st.reqTotal += reqInc
		st.req = s.appendPoint(st.req, point{t: reqT, v: st.reqTotal})
	}

	// Histogram: running total per le, one snapshot per scrape.
	st.bucketLast = bktNow
	if len(bktNow) == 0 {
		st.hist = nil
		st.bucketTotal = map[float64]float64{}
	} else {
		for le, inc := range bktInc {
			st.bucketTotal[le] += inc
		}
		snap := make(map[float64]float64, len(st.bucketTotal))
		for le, v := range st.bucketTotal {
			snap[le] = v
		}
		st.hist = s.appendHist(st.hist, histPoint{t: bktT, counts: snap})
	}

	st.gauges, st.byUUID = gaugeNow, uuidNow
}

// withoutLe returns m without its le label.
func withoutLe(m model.Metric) model.Metric {
	out := make(model.Metric, len(m))
	for k, v := range m {
		if k != model.BucketLabel {
			out[k] = v
		}
	}
	return out
}

// appendPoint appends p to a time-ordered history and trims it to the rate
// window ending at p (and to MaxSamples). A p at the last point's time
// replaces its value (the exporter's clock did not advance); a p older than
// the last point (the exporter's clock went back, e.g. a restarted
// simulation) restarts the history.
func (s *Scraper) appendPoint(pts []point, p point) []point {
	if n := len(pts); n > 0 {
		last := pts[n-1].t
		switch {
		case p.t.Equal(last):
			pts[n-1].v = p.v // same sample time: keep the newest total
			return pts
		case p.t.Before(last):
			pts = pts[:0]
		}
	}
	pts = append(pts, p)
	cut := p.t.Add(-s.opts.RateWindow)
	i := sort.Search(len(pts), func(i int) bool { return !pts[i].t.Before(cut) })
	if over := len(pts) - s.opts.MaxSamples; over > i {
		i = over
	}
	if i > 0 {
		pts = append(pts[:0], pts[i:]...)
	}
	return pts
}

// appendHist is appendPoint for histogram snapshots.
func (s *Scraper) appendHist(hs []histPoint, h histPoint) []histPoint {
	if n := len(hs); n > 0 {
		last := hs[n-1].t
		switch {
		case h.t.Equal(last):
			hs[n-1].counts = h.counts
			return hs
		case h.t.Before(last):
			hs = hs[:0]
		}
	}
	hs = append(hs, h)
	cut := h.t.Add(-s.opts.RateWindow)
	i := sort.Search(len(hs), func(i int) bool { return !hs[i].t.Before(cut) })
	if over := len(hs) - s.opts.MaxSamples; over > i {
		i = over
	}
	if i > 0 {
		n := copy(hs, hs[i:])
		clear(hs[n:])
		hs = hs[:n]
	}
	return hs
}
