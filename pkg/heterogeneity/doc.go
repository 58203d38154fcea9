// Package heterogeneity holds hetsev's scaling decision for one inference
// service on a cluster of mixed GPUs (V100-32GB and T4 by default, more by
// configuration). The GPU catalog and the model profiles it decides over are
// data, in pkg/catalog; the optimisation problem and the latency model it
// relies on are packages of their own beneath it:
//
//   - package ilp: the scaling ILP of HetSev 4.1 as a pure optimisation
//     problem (objective sum_i C_i (X_i + lambda O_i max(X_i, 0)), capacity,
//     bounds), its exact branch-and-bound solver and the heuristic's greedy
//     instance selection;
//   - package latency: the SL_min percentile of the response time of a
//     batching instance, for the SLO check.
//
// This package decides, for one service:
//
//   - the [Autoscaler] and its triggers, after HetSev 4.1: scale out when the
//     saturation W / sum T_i N_i of the running instances stays above a
//     threshold for a period (or at once below MinReplicas); otherwise scale
//     in, at regular intervals, after a cool-down, when the load fits under
//     the threshold minus a hysteresis; never switch the type of a running
//     instance, except by a make-before-break replacement (replace.go,
//     Policy.Replacement, off by default: new instances of a cheaper column
//     first, the old removed only as new ones are ready). Its input is an
//     [Observation] of [TypeState]s, its output an [Action]. For bursts (burst.go) it remembers recent arrival rates: a
//     scale-out is triggered and sized for W extrapolated over the launch
//     time O_i, and a scale-in removes at once only what the highest W of
//     the cool-down window leaves spare, one instance per interval below it;
//   - the [Solver] that computes the amount once the triggers have fixed the
//     direction, named by Policy.Solver ([LookupSolver]): "heuristic", the
//     instance selection of HetSev 4.1 (one instance at a time in a
//     scale-in), or "exact", the optimum of the ILP in the decision's
//     direction ([DecisionProblem]; same triggers, optimal amounts);
//   - the translation of an observation and a [Policy] into that ILP
//     ([NewProblem], [DecisionProblem]): Target = W / SaturationThreshold,
//     free resources as MaxAdditional per type, constraint (4) from the SLO
//     check;
//   - the SLO check of constraint (4) ([Policy.MeetsSLO]): the paper's L_i <=
//     RT_max, or, with Policy.SLOCheck = "model", the SL_min percentile of
//     the latency model ([LatencyModelOf]: a dynamic batcher's queueing of
//     batches by Kingman's heavy-traffic approximation and the
//     co-location inflation of pkg/interference) at the threshold load.
//
// The formulation and the heuristic follow HetSev, "Heterogeneity-Aware
// Instance Autoscaling", section 4.1 of: HetSev: Exploiting Heterogeneity-Aware
// Autoscaling and Resource-Efficient Scheduling for Cost-Effective
// Machine-Learning Model Serving, Electronics 2023, 12, 240. The latency
// model's formation delay follows FA2 (RTAS 2022, section IV-B).
//
// The package knows no Kubernetes types: callers translate cluster state
// (running replicas, free GPU memory, CPU and memory, anti-affinity) into
// [TypeState] values and act on the returned [Action].
//
// Units throughout: latency in milliseconds (ms), throughput and arrival rate
// in requests per second (requests/s), memory in MiB, CPU in millicores,
// prices and objective values in US dollars per hour (USD/h), launch time in
// seconds (s), lambda per second.
package heterogeneity
