// Package heterogeneity holds hetsev's scaling decision for one inference
// service on a cluster of mixed GPUs (V100-32GB and T4 by default, more by
// configuration). The GPU catalog and the model profiles it decides over are
// data, in pkg/catalog.
//
//   - the objective of the HetSev scaling ILP, sum_i C_i (X_i + lambda O_i
//     max(X_i, 0)) (ilp.Objective), and the capacity and saturation it is
//     constrained by ([Capacity], [Saturation]);
//   - the heuristic autoscaler that approximates that ILP for one service:
//     scale out when the saturation of running instances stays above a
//     threshold, choosing the GPU types that minimise the objective among those
//     that meet the latency SLO and fit the free resources; scale in one
//     instance at a time, at regular intervals, after a cool-down; never switch
//     the type of a running instance;
//   - the full ILP (package ilp: ilp.Problem, constraints (1)-(4) and the
//     replica bounds, built from an observation by [DecisionProblem]) and an
//     exact branch-and-bound solver for it (ilp.SolveExact), which the
//     autoscaler uses instead of the heuristic with Policy.Solver = "exact"
//     (same triggers, optimal amounts);
//   - the mapping of a GPU type onto the latency model of package latency
//     ([LatencyModelOf]) for the SLO check: the SL_min percentile of the
//     response time with batch formation (after FA2), queueing of batches
//     (Kingman's heavy-traffic approximation) and the co-location inflation
//     of pkg/interference, used for constraint (4) with Policy.SLOCheck =
//     "model" instead of the paper's L_i <= RT_max.
//
// The formulation and the heuristic follow HetSev, "Heterogeneity-Aware
// Instance Autoscaling", section 4.1 of: HetSev: Exploiting Heterogeneity-Aware
// Autoscaling and Resource-Efficient Scheduling for Cost-Effective
// Machine-Learning Model Serving, Electronics 2023, 12, 240
// (shared/papers/hetsev.txt). The latency model's formation delay follows FA2
// (RTAS 2022, section IV-B; shared/papers/fa2.txt).
//
// The package knows no Kubernetes types: callers translate cluster state
// (running replicas, free GPU memory, CPU and memory, anti-affinity) into
// [TypeState] values and act on the returned [Action].
//
// Units throughout: latency in milliseconds (ms), throughput and arrival rate
// in requests per second (requests/s), memory in MiB, CPU in millicores,
// prices and objective values in US dollars per hour (USD/h), launch time in
// seconds, lambda per second.
package heterogeneity
