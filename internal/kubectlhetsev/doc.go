// Package kubectlhetsev is `kubectl hetsev`, a kubectl plugin that answers
// an operator's day-two questions about hetsev from the API server's
// objects:
//
//   - gpus: who shares which GPU: per node and GPU its type, its tenants
//     (namespace/pod and model), GPU memory used and total (MiB), the
//     summed declared busy share and each tenant's latency inflation, as
//     hetsev-scheduler predicted it at placement and as the co-location
//     model predicts it beside the GPU's tenants now;
//   - explain pod NAME: where a pod runs and why, or why it is Pending
//     (the scheduler's reasons and malformed-annotation events);
//   - explain modelservice NAME: the scaler's last decision, conditions,
//     replicas per GPU type, arrival rate, saturation and recent Events;
//   - what-if: the trace-driven evaluator (internal/sim/evaluate) with
//     hetsev-evaluate's flags, for a user's own trace.
//
// It lives under internal/ because what-if runs the simulation evaluator,
// which production packages under pkg/ must not import
// (hack/verify-imports.sh). cmd/kubectl-hetsev is its thin main.
package kubectlhetsev
