package profiler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Options shape a measurement; zero fields take the defaults below.
type Options struct {
	// BatchSizes are the batch sizes to measure, ascending, each >= 1; the
	// last is the server's own largest batch.
	BatchSizes []int
	// LatencyBursts is how many bursts measure each batch's latency
	// (default 20).
	LatencyBursts int
	// StepDuration is how long each offered rate runs (default 10 s).
	StepDuration time.Duration
	// Growth is the ratio of one step's offered rate to the previous one's
	// (default 1.25, > 1).
	Growth float64
	// MaxSteps bounds the steps per batch size (default 16).
	MaxSteps int
	// Seed seeds the arrivals.
	Seed uint64
	// Progress, when set, is told each finished step.
	Progress func(Step)
}

// Saturation is the answers' share of the arrivals, both counted after
// the warm-up, below which a step counts as saturated. Comparing with the
// arrivals drawn rather than the rate offered leaves out the Poisson
// count's own spread; what remains is the answers still in flight at the
// window's edges, a few per cent when a latency is short against the
// step.
const Saturation = 0.9

// warmupShare is the share of each step its counts leave out: the time
// for the first arrivals' answers to come back.
const warmupShare = 0.2

// maxInFlight bounds the requests in flight at the largest batch; more
// arrivals wait in the profiler (counted as queued).
const maxInFlight = 4096

// Step is one offered rate of a throughput ramp.
type Step struct {
	BatchSize int
	// OfferedRPS is the arrival rate, requests/s; ArrivedRPS the rate of
	// the arrivals drawn after the warm-up, requests/s; AchievedRPS the
	// rate of successful answers after the warm-up, requests/s.
	OfferedRPS, ArrivedRPS, AchievedRPS float64
	// P50Ms and P98Ms are the latencies of the requests that arrived
	// after the warm-up, from the scheduled arrival, ms.
	P50Ms, P98Ms float64
	// Sent counts the step's requests, Errors those without a 2xx answer.
	Sent, Errors int
	// FirstError is the first error's text, "" when none.
	FirstError string
}

// Saturated says whether the answers fell behind the arrivals.
func (s Step) Saturated() bool { return s.AchievedRPS < Saturation*s.ArrivedRPS }

// Point is one batch size's result.
type Point struct {
	BatchSize int
	// ThroughputRPS is T: the most answers per second of any step,
	// requests/s.
	ThroughputRPS float64
	// LatencyMs is L: the median burst latency, ms.
	LatencyMs float64
	// Saturated is false when no step saturated the server: ThroughputRPS
	// is then a lower bound (raise MaxSteps).
	Saturated bool
	Steps     []Step
}

func (o *Options) defaults() error {
	if len(o.BatchSizes) == 0 {
		return errors.New("no batch sizes to measure")
	}
	for i, b := range o.BatchSizes {
		if b < 1 || (i > 0 && b <= o.BatchSizes[i-1]) {
			return fmt.Errorf("batch sizes %v: want ascending sizes >= 1", o.BatchSizes)
		}
	}
	if o.LatencyBursts <= 0 {
		o.LatencyBursts = 20
	}
	if o.StepDuration <= 0 {
		o.StepDuration = 10 * time.Second
	}
	if o.Growth == 0 {
		o.Growth = 1.25
	}
	if o.Growth <= 1 || math.IsNaN(o.Growth) || math.IsInf(o.Growth, 0) {
		return fmt.Errorf("growth %v: want > 1", o.Growth)
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	return nil
}

// Measure measures t at each of o.BatchSizes, once its readiness endpoint
// answers 200. It returns an error for bad options or target, when the
// target never gets ready, when every request of a burst fails, or when
// ctx ends.
func Measure(ctx context.Context, t Target, o Options) ([]Point, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if t.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = maxInFlight
		tr.Proxy = nil
		t.Client = &http.Client{Transport: tr}
	}
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := t.ready(readyCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	// A few requests first: connections, caches and lazy initialisation.
	for range 3 {
		if err := t.send(ctx); err != nil {
			return nil, fmt.Errorf("first request: %w", err)
		}
	}
	points := make([]Point, 0, len(o.BatchSizes))
	largest := o.BatchSizes[len(o.BatchSizes)-1]
	for _, b := range o.BatchSizes {
		lat, err := burstLatency(ctx, &t, b, o.LatencyBursts)
		if err != nil {
			return nil, fmt.Errorf("batch size %d: %w", b, err)
		}
		window := b
		if b == largest {
			window = maxInFlight
		}
		p := Point{BatchSize: b, LatencyMs: lat}
		rate := 0.5 * float64(b) / (lat / 1000)
		for i := range o.MaxSteps {
			s, err := step(ctx, &t, b, rate, window, o.StepDuration, o.Seed+uint64(b)<<20+uint64(i))
			if err != nil {
				return nil, err
			}
			if o.Progress != nil {
				o.Progress(s)
			}
			p.Steps = append(p.Steps, s)
			p.ThroughputRPS = max(p.ThroughputRPS, s.AchievedRPS)
			if s.Saturated() {
				p.Saturated = true
				break
			}
			rate *= o.Growth
		}
		if p.ThroughputRPS == 0 {
			last := p.Steps[len(p.Steps)-1]
			return nil, fmt.Errorf("batch size %d: no request answered at %.1f requests/s: %s", b, last.OfferedRPS, last.FirstError)
		}
		points = append(points, p)
	}
	return points, nil
}

// burstLatency is the median over n bursts of b requests sent together
// of the time from the first send to the last answer, ms.
func burstLatency(ctx context.Context, t *Target, b, n int) (float64, error) {
	ms := make([]float64, 0, n)
	for range n {
		start := time.Now()
		errs := make(chan error, b)
		for range b {
			go func() { errs <- t.send(ctx) }()
		}
		var first error
		for range b {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return 0, fmt.Errorf("burst of %d: %w", b, first)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	return quantile(ms, 0.5), nil
}

// step offers Poisson arrivals at rate (requests/s) for d, with at most
// window requests in flight, waits for their answers (at most d more)
// and counts what came back after the warm-up.
func step(ctx context.Context, t *Target, b int, rate float64, window int, d time.Duration, seed uint64) (Step, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	s := Step{BatchSize: b, OfferedRPS: rate}
	reqCtx, cancel := context.WithTimeout(ctx, 2*d)
	defer cancel()
	start := time.Now()
	warm := start.Add(time.Duration(warmupShare * float64(d)))
	end := start.Add(d)
	slots := make(chan struct{}, window)
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		latencies []float64
		answered  int
		arrived   int
	)
	at := start
	for {
		at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		if at.After(end) {
			break
		}
		if err := sleepUntil(ctx, at); err != nil {
			return s, err
		}
		select {
		case slots <- struct{}{}:
		case <-reqCtx.Done():
			return s, fmt.Errorf("offering %.1f requests/s: %w", rate, reqCtx.Err())
		}
		s.Sent++
		if !at.Before(warm) {
			arrived++
		}
		wg.Add(1)
		go func(arrival time.Time) {
			defer wg.Done()
			err := t.send(reqCtx)
			done := time.Now()
			<-slots
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.Errors++
				if s.FirstError == "" {
					s.FirstError = err.Error()
				}
				return
			}
			if !done.Before(warm) && !done.After(end) {
				answered++
			}
			if !arrival.Before(warm) {
				latencies = append(latencies, float64(done.Sub(arrival).Microseconds())/1000)
			}
		}(at)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return s, err
	}
	s.AchievedRPS = float64(answered) / end.Sub(warm).Seconds()
	s.ArrivedRPS = float64(arrived) / end.Sub(warm).Seconds()
	s.P50Ms, s.P98Ms = quantile(latencies, 0.5), quantile(latencies, 0.98)
	return s, nil
}

func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// quantile is the q-quantile of xs (the empirical distribution's: the
// nearest rank), NaN when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return stat.Quantile(q, stat.Empirical, s, nil)
}
