// Package gpuinventory reads the GPU inventory of nodes and the GPU demand of
// pods from their Kubernetes metadata, and is the one place that says which
// pods occupy which GPU (Occupancy, AddPod), so that the scheduler, the
// placement rating, the scaler and the trace-driven evaluator account for
// GPU memory and anti-affinity the same way.
//
// Nodes: NVIDIA GPU Feature Discovery labels nvidia.com/gpu.product,
// nvidia.com/gpu.count and nvidia.com/gpu.memory (MiB per GPU).
// Pods: annotations hetsev.io/model (identity for per-GPU anti-affinity),
// hetsev.io/gpu-memory (a resource.Quantity) and, written by the scheduler,
// hetsev.io/gpu-index.
package gpuinventory
