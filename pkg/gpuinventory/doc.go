// Package gpuinventory reads the GPU inventory of nodes and the GPU demand of
// pods from their Kubernetes metadata, so that the scheduler and the scaler
// account for GPU memory the same way.
//
// Nodes: NVIDIA GPU Feature Discovery labels nvidia.com/gpu.product,
// nvidia.com/gpu.count and nvidia.com/gpu.memory (MiB per GPU).
// Pods: annotations hetsev.io/model (identity for per-GPU anti-affinity),
// hetsev.io/gpu-memory (a resource.Quantity) and, written by the scheduler,
// hetsev.io/gpu-index.
package gpuinventory
