package evaluate

// PolicyMelangeAIBrix is melange-ilp at the cadence and on the load window
// of AIBrix's GPU optimizer.
const PolicyMelangeAIBrix = "melange-aibrix"

// AIBrix's GPU optimizer loop (vllm-project/aibrix at commit e3e10f9,
// python/aibrix/aibrix/gpu_optimizer/load_monitor/).
const (
	// aibrixIntervalSeconds is the optimizer's re-solve cadence: its loop
	// (monitor.py, ModelMonitor._run_yieldable) reads one bucket of the
	// gateway's request statistics per pass and solves, then waits for the
	// next bucket (load_reader.py, GatewayLoadReader: key_ts_alignment
	// 10 s; next_available is the last bucket + 10 s + 2 s of tolerance).
	aibrixIntervalSeconds = 10
	// aibrixWindowSeconds is the window the optimizer averages the request
	// rate over (monitor.py, ModelMonitor window, default 240 s).
	aibrixWindowSeconds = 240
)

// melangeAIBrixPolicy is PolicyMelangeAIBrix: melangePolicy's solve and
// scale-in cool-down every aibrixIntervalSeconds, for W the larger of the
// mean arrival rate over the last aibrixWindowSeconds and over the last
// aibrixIntervalSeconds (the rate of the bucket just read): monitor.py
// solves for max(requests in the window / the window's span, the current
// rate), "the larger of average request rate in window and current request
// rate to get sufficient resources".
//
// Where it simplifies: AIBrix's window is a moving one of four buffers
// rotated every 60 s (clusterer.py, MovingDBSCANClusterer), so the span
// it averages over runs from 180 s to 240 s; here it is always the last
// 240 s (fewer at the start of the trace). AIBrix clusters the requests
// by input and output length (DBSCAN) into Mélange's request buckets; our
// requests are one size, one bucket. The decision falls every 10 s on the
// second the bucket closes, without the 2 s read delay.
type melangeAIBrixPolicy struct {
	*melangePolicy
}

func newMelangeAIBrixPolicy(cfg *Config) (*melangeAIBrixPolicy, error) {
	p, err := newMelangePolicy(cfg)
	if err != nil {
		return nil, err
	}
	return &melangeAIBrixPolicy{p}, nil
}

func (p *melangeAIBrixPolicy) decide(svc int, v view) []int {
	if len(v.offered) > 0 {
		v.arrival = max(v.meanRate(aibrixWindowSeconds), v.meanRate(aibrixIntervalSeconds))
	}
	return p.melangePolicy.decide(svc, v)
}

func (p *melangeAIBrixPolicy) decisionInterval() int { return aibrixIntervalSeconds }
func (p *melangeAIBrixPolicy) history() int          { return aibrixWindowSeconds }
