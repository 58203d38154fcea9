package gpuinventory

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// NodeGPUs is the GPU inventory of one node as GPU Feature Discovery reports it.
type NodeGPUs struct {
	Product   string // nvidia.com/gpu.product, e.g. "Tesla-T4"
	Count     int    // GPUs on the node
	MemoryMiB int64  // GPU memory of each GPU, MiB
}

// MaxGPUsPerNode bounds nvidia.com/gpu.count: per-GPU state is kept for every
// GPU of a node, so an absurd label must not allocate it.
const MaxGPUsPerNode = 64

// ErrNoGPULabels is returned by ParseNodeGPUs for nodes without GFD labels.
var ErrNoGPULabels = fmt.Errorf("node has no %s label", LabelGPUCount)

// ParseNodeGPUs reads a node's GFD labels. It returns ErrNoGPULabels when the
// node has no GPU count label, and an error naming the label when a label is
// present but malformed (non-numeric, zero or negative).
func ParseNodeGPUs(labels map[string]string) (NodeGPUs, error) {
	countStr, ok := labels[LabelGPUCount]
	if !ok {
		return NodeGPUs{}, ErrNoGPULabels
	}
	count, err := strconv.Atoi(countStr)
	if err != nil || count <= 0 || count > MaxGPUsPerNode {
		return NodeGPUs{}, fmt.Errorf("label %s=%q: want an integer from 1 to %d", LabelGPUCount, countStr, MaxGPUsPerNode)
	}
	memStr, ok := labels[LabelGPUMemory]
	if !ok {
		return NodeGPUs{}, fmt.Errorf("label %s is missing", LabelGPUMemory)
	}
	mem, err := strconv.ParseInt(memStr, 10, 64)
	if err != nil || mem <= 0 || mem > MaxGPUMemoryMiB {
		return NodeGPUs{}, fmt.Errorf("label %s=%q: want an integer from 1 to %d (MiB)", LabelGPUMemory, memStr, MaxGPUMemoryMiB)
	}
	return NodeGPUs{Product: labels[LabelGPUProduct], Count: count, MemoryMiB: mem}, nil
}

// NodeGPUsOf is ParseNodeGPUs for a node object.
func NodeGPUsOf(node *v1.Node) (NodeGPUs, error) {
	if node == nil {
		return NodeGPUs{}, ErrNoGPULabels
	}
	return ParseNodeGPUs(node.Labels)
}
