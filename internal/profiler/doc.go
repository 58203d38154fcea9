// Package profiler measures one running model server instance for a
// ModelService's GPU profile (v1alpha1.GPUProfile): per batch size b,
//
//   - LatencyMs (L_i, HetSev section 4): one batch's latency alone, the
//     median over bursts of b requests sent together to the idle server,
//     from the first send to the last answer;
//   - ThroughputRPS (T_i): the most answers per second the instance gives
//     under open-loop load: Poisson arrivals at rising rates, from half of
//     b/L_b by a fixed ratio per step, until the answers fall behind the
//     arrivals (the instance is saturated, and answers at its capacity).
//     Each step's first fifth is a warm-up its counts leave out.
//
// A server whose largest batch is B (its configuration) is measured at B
// with every arrival sent as it comes; at a smaller b the profiler keeps
// at most b requests in flight and queues the rest itself, which is what
// a server capped at b does when it runs one batch at a time (Triton's
// dynamic batcher with one model instance, TF Serving's batching
// scheduler). Latencies count from the arrival's scheduled time, so time
// spent queued in the profiler is counted as a server queue would be.
//
// GPU memory comes from dcgm-exporter (DCGM_FI_DEV_FB_USED, the peak over
// the run; SampleDCGM), so it is the whole GPU's use: profile an
// instance alone on its GPU.
package profiler
