// Package replay is the per-second loop that drives simulated model servers
// (internal/sim/modelserver) through trace time, shared by the demo's
// simulated world (internal/sim/simulator) and the trace-driven evaluator
// (internal/sim/evaluate).
//
// An Engine holds instances grouped by service and by GPU. Each Step over
// trace time [t0, t1):
//
//  1. sets every instance's latency factor from its GPU neighbours' busy
//     share in the previous step (pkg/interference); for a server with a
//     solo latency per batch size, one factor per batch size, with its
//     neighbours' mean batch of that step;
//  2. offers each service its arrivals, service by service in the order
//     they were added and trace second by trace second: the service's own
//     rate in that second (Service.Rates, for a trace of one series per
//     service) or its share of the trace's rate, rounded at random to a
//     count, at Poisson times within the second, drawn once for the whole
//     second so that a step that covers part of it offers the arrivals in
//     that part (the arrivals do not depend on how steps cut the seconds),
//     each routed like Envoy's LEAST_REQUEST balancer (modelserver.Router)
//     among the instances ready when it arrives;
//  3. advances every server to t1 and hands each instance's completions to
//     its callback;
//  4. records each instance's busy time and share of the step; a GPU's
//     busy time is its instances' sum (GPU.Busy).
//
// What the instances stand for, where they are placed and what the results
// are worth stays with the caller, which hears of arrivals, unserved
// requests and completions through callbacks. All randomness comes from the
// services' generators, so a replay is deterministic for given seeds and
// calls.
//
// Files: engine.go (Engine and its Step), groups.go (Service, GPU and
// Instance, and adding and removing instances).
package replay
