// Package latency is the response-time model of hetsev's SLO check: the
// SL_min percentile of the response time of one inference instance that forms
// batches ([Model]), so that constraint (4) of the HetSev scaling ILP can test
// the paper's service-level objective, "at least SL_min of the requests finish
// within RT_max", instead of the idle-GPU batch latency L_i <= RT_max.
//
// The percentile adds three terms ([Breakdown]): the wait for a batch to form
// (none for a dynamic batcher without a batching delay, which forms a batch
// while the one before it runs; an Erlang quantile for a server that waits
// for full batches, whose mean is FA2's (b-1)/lambda: FA2, RTAS 2022,
// section IV-B, eq. 2), the queueing of formed batches
// for the GPU (Kingman's heavy-traffic approximation of the GI/G/1 queue,
// 1961/1962) and the batch latency inflated by co-location (HetSev 3.2, from
// pkg/interference). pkg/heterogeneity maps a GPU type's profile onto a Model
// (heterogeneity.LatencyModelOf) and checks it at the per-instance load of the
// saturation threshold (heterogeneity.Policy.SLOLatencyMs).
//
// The formulation it serves is HetSev, "Heterogeneity-Aware Instance
// Autoscaling", section 4.1 of: HetSev: Exploiting Heterogeneity-Aware
// Autoscaling and Resource-Efficient Scheduling for Cost-Effective
// Machine-Learning Model Serving, Electronics 2023, 12, 240.
//
// Units: latencies and batching timeouts in milliseconds (ms), arrival rates
// in requests per second (requests/s), quantiles as fractions in (0, 1).
package latency
