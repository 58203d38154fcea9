package latency

import "math"

// MaxBatchSize is the largest BatchSize the model evaluates (65536), so that
// its sums stay short; a larger one gives +Inf.
const MaxBatchSize = 1 << 16

// Model estimates the response-time percentile of one instance that forms
// batches of up to BatchSize requests and runs each batch in BatchLatencyMs *
// Inflation, so that the SLO check of HetSev 4.1 (constraint
// 4) can test the paper's service-level objective, "at least SL_min of the
// requests finish within RT_max" (HetSev section 4, after Swayam), instead of
// comparing the idle-GPU batch latency L_i with RT_max.
//
// # Formula
//
// For a per-instance arrival rate lambda (requests/s, Poisson) and a quantile
// q = SL_min, the response time is estimated by three terms that add up:
//
//	R_q = F_q + Wq_q + S                                      (all in ms)
//
// S, service: S = L * Inflation, the batch latency L on an idle GPU times the
// co-location inflation factor (pkg/interference's fitted model: a busy
// neighbour about doubles a saturating instance's latency under
// time-slicing, measured on an H100).
// Every batch is charged the full-batch latency, also a partial one
// (conservative).
//
// F_q, batch formation. A dynamic batcher (Triton's, TorchServe's, KServe's;
// the default here) runs whatever waits, up to b, whenever the GPU is free,
// so a batch forms while the one before it runs: only a request that finds
// the GPU idle waits to form one, and at most the server's batching delay
// MaxBatchDelayMs (Triton max_queue_delay_microseconds, TF Serving
// batch_timeout_micros): F_q = min(Erlang(b-1, lambda) q-quantile,
// MaxBatchDelayMs), 0 without a delay. A server that WaitsForFullBatch forms
// a batch only when b requests wait: the first waits for b-1 more arrivals.
// FA2 (RTAS 2022, section IV-B, eq. 2) models this worst-case formation
// delay as (b-1)/lambda, which is the mean of that wait; the wait itself is
// Erlang(b-1, lambda) distributed, so for a percentile SLO we take its
// q-quantile (>= FA2's term for q >= 0.5; see Breakdown.FA2FormationMs),
// capped at MaxBatchDelayMs when the server has one.
//
// Wq_q, queueing of batches: batches reach the GPU at rate lambda/b_eff and
// are served one at a time in deterministic time S, utilisation rho = lambda S
// / b_eff. b_eff = b for a dynamic batcher (while the GPU is the bottleneck
// the requests that wait fill every batch) and for a full-batch server
// without a delay; a full-batch server with one dispatches batches of mean
// size E[min(b, 1 + Poisson(lambda D))]. Full batches arrive with Erlang(b)
// inter-arrival times, squared coefficient of variation c_a^2 = 1/b_eff, and
// service is deterministic, c_s^2 = 0. We use Kingman's heavy-traffic
// approximation of the GI/G/1 queue (J. F. C. Kingman, "The single server
// queue in heavy traffic", Proc. Cambridge Phil. Soc. 57, 1961; and "On queues
// in heavy traffic", J. R. Stat. Soc. B 24, 1962): mean wait
// E[Wq] = rho/(1-rho) * (c_a^2 + c_s^2)/2 * S, waiting time exponential given
// that it is positive, and P(Wq > 0) = rho (exact for Poisson arrivals, an
// over-estimate for the more regular batch arrivals), so
//
//	P(Wq > t) ~ rho * exp(-2 b_eff (1-rho) t / S)
//	Wq_q = S / (2 b_eff (1-rho)) * ln(rho / (1-q))   if rho > 1-q, else 0.
//
// For b = 1 this is the usual exponential approximation of the M/D/1 waiting
// time with the Pollaczek-Khinchine mean rho S / (2(1-rho)). rho >= 1 means
// the instance cannot keep up: the percentile is +Inf.
//
// Why this formula: it is closed-form (the SLO check runs inside every
// decision) and it is held to measurements. Against the open-loop H100
// measurement of three servers with dynamic batching under time-slicing
// (data/measurements/gpu-serving-h100: ResNet-50, SSD and BERT-large alone
// at loads 0.3-0.9) the dynamic batcher's p98 is 0.97-1.19 times the
// measured one for ResNet-50 and SSD and 1.34-2.15 times for BERT-large,
// whose one-request batches take a fifth of a full one's time (under MPS,
// where a server alone runs slower than its batch table, 0.67-1.79); the
// full-batch server's formation wait, added to the queueing it overlaps
// with, read 1.5-12 times the measured p98 (internal/sim/calibration,
// TestSLOModelMeetsMeasuredServing). The package tests also compare both
// servers with seeded discrete-event simulations (b in {1, 2, 4, 8, 16, 32},
// loads 0.05..0.95, q in {0.95, 0.98, 0.99}). The plain M/D/1 model with
// Poisson batch arrivals and the mean (b-1)/lambda was tried first and
// rejected: at saturation 0.8 it over-estimates the 98th percentile of a
// full-batch ResNet-50 on T4 fourfold (269 ms against 63 ms simulated) and
// under-estimates it at saturation 0.1 (236 ms against 318 ms).
//
// Units: BatchLatencyMs, MaxBatchDelayMs and results in ms; arrival rates in
// requests/s.
type Model struct {
	// BatchSize is b, the requests per batch the server forms (the batch
	// size the profile was measured with); values below 1 count as 1 (no
	// batching).
	BatchSize int
	// BatchLatencyMs is L_i, the latency of one batch of BatchSize on an idle
	// GPU, in ms (HetSev 4.1 L_i^inf, catalog.Profile.LatencyMs).
	BatchLatencyMs float64
	// Inflation is the co-location latency factor (>= 1) for the GPUs the
	// instances run on, from pkg/interference (interference.Colocation). 0
	// means 1 (no co-location).
	Inflation float64
	// MaxBatchDelayMs is the server's batching delay, in ms: how long a
	// request that finds the GPU idle waits for more requests to join its
	// batch (Triton max_queue_delay_microseconds, TF Serving
	// batch_timeout_micros, TorchServe max_batch_delay). 0 means none: a
	// dynamic batcher dispatches what waits at once; a server that
	// WaitsForFullBatch then waits for a full batch however long it takes.
	MaxBatchDelayMs float64
	// WaitsForFullBatch describes a server that forms a batch only when
	// BatchSize requests wait (or MaxBatchDelayMs has passed), even while
	// the GPU is idle, and queues formed batches for the GPU. false is a
	// dynamic batcher, as Triton's, TorchServe's and KServe's are: whenever
	// the GPU is free it runs the requests that wait, up to BatchSize,
	// after at most MaxBatchDelayMs.
	WaitsForFullBatch bool
}

// Breakdown is the response-time percentile of a Model and its terms, in ms
// (see Model for the formulas).
type Breakdown struct {
	// TotalMs is FormationMs + QueueMs + ServiceMs: the q-quantile of the
	// response time, +Inf when the instance is overloaded (Utilization >= 1)
	// or the input is unusable.
	TotalMs float64
	// FormationMs is the q-quantile of the first request's wait for a full
	// batch, capped at MaxBatchDelayMs (a dynamic batcher waits at most
	// that; without a delay it does not wait).
	FormationMs float64
	// FA2FormationMs is FA2's worst-case formation delay (b-1)/lambda (FA2
	// eq. 2), for comparison; not part of TotalMs.
	FA2FormationMs float64
	// QueueMs is the q-quantile of the wait of a formed batch for the GPU.
	QueueMs float64
	// ServiceMs is the batch latency with inflation, S = L * Inflation.
	ServiceMs float64
	// Utilization is rho = lambda S / EffectiveBatch, the share of time the
	// GPU is busy with this instance's batches.
	Utilization float64
	// EffectiveBatch is b_eff, the mean batch size the queueing term
	// assumes (b, except for a full-batch server with a delay).
	EffectiveBatch float64
}

// Percentile returns the q-quantile (e.g. 0.98 for SL_min = 98 %) of the
// response time in ms at a per-instance arrival rate of arrivalRPS
// requests/s. It returns +Inf when the instance is overloaded, when q is not
// in (0, 1), when the model's numbers are unusable (negative, NaN, infinite,
// a BatchSize above MaxBatchSize) or when arrivalRPS <= 0 while a server that
// WaitsForFullBatch awaits full batches of more than one request without a
// delay.
func (m Model) Percentile(q, arrivalRPS float64) (ms float64) {
	return m.Breakdown(q, arrivalRPS).TotalMs
}

// MeetsSLO reports whether at least serviceLevel (SL_min, in (0, 1)) of the
// requests finish within rtMaxMs (RT_max, ms) at a per-instance arrival rate
// of arrivalRPS requests/s: Percentile(serviceLevel, arrivalRPS) <= rtMaxMs.
func (m Model) MeetsSLO(arrivalRPS, serviceLevel, rtMaxMs float64) bool {
	return m.Percentile(serviceLevel, arrivalRPS) <= rtMaxMs
}

// Breakdown returns Percentile's value with its terms.
func (m Model) Breakdown(q, arrivalRPS float64) Breakdown {
	inf := Breakdown{TotalMs: math.Inf(1), FormationMs: math.NaN(), FA2FormationMs: math.NaN(),
		QueueMs: math.NaN(), ServiceMs: math.NaN(), Utilization: math.NaN(), EffectiveBatch: math.NaN()}
	infl := m.Inflation
	if infl == 0 {
		infl = 1
	}
	if !(q > 0 && q < 1) || !finiteNonNeg(m.BatchLatencyMs) || !finiteNonNeg(infl) ||
		!finiteNonNeg(m.MaxBatchDelayMs) || math.IsNaN(arrivalRPS) || math.IsInf(arrivalRPS, 0) {
		return inf
	}
	if m.BatchSize > MaxBatchSize {
		return inf
	}
	b := max(m.BatchSize, 1)
	lam := max(arrivalRPS, 0) / 1000 // requests per ms
	var out Breakdown
	out.ServiceMs = m.BatchLatencyMs * infl
	if math.IsInf(out.ServiceMs, 0) {
		return inf
	}

	// Batch formation: Erlang(b-1, lambda) q-quantile, FA2's mean for reference.
	switch {
	case b == 1:
		out.FormationMs, out.FA2FormationMs = 0, 0
	case lam > 0:
		out.FA2FormationMs = float64(b-1) / lam
		out.FormationMs = erlangQuantile(b-1, q) / lam
	default:
		out.FA2FormationMs, out.FormationMs = math.Inf(1), math.Inf(1)
	}
	d := m.MaxBatchDelayMs
	out.EffectiveBatch = float64(b)
	switch {
	case !m.WaitsForFullBatch:
		// A dynamic batcher: a batch forms while the one before it runs,
		// so only a request that finds the GPU idle waits, and at most d.
		out.FormationMs = math.Min(out.FormationMs, d)
	case d > 0:
		out.FormationMs = math.Min(out.FormationMs, d)
		out.EffectiveBatch = meanCappedBatch(b, lam*d)
	}
	if math.IsInf(out.FormationMs, 0) {
		inf.FA2FormationMs, inf.ServiceMs, inf.EffectiveBatch = out.FA2FormationMs, out.ServiceMs, out.EffectiveBatch
		return inf
	}

	// Queueing of batches: Kingman heavy-traffic tail with c_a^2 = 1/b_eff.
	rho := lam * out.ServiceMs / out.EffectiveBatch
	out.Utilization = rho
	if !(rho < 1) {
		out.QueueMs, out.TotalMs = math.Inf(1), math.Inf(1)
		return out
	}
	if rho > 1-q {
		out.QueueMs = out.ServiceMs / (2 * out.EffectiveBatch * (1 - rho)) * math.Log(rho/(1-q))
	}
	out.TotalMs = out.FormationMs + out.QueueMs + out.ServiceMs
	return out
}
