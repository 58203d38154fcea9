package v1

import (
	"github.com/hetsev/hetsev/pkg/apis/config"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Defaults of HetsevFairQueueArgs. HetSev 4.2 names k and beta but gives no
// values: k = 3 is the default, beta = 16 our choice (a round short
// enough that weights follow a burst within a second at the default
// scheduler's pace).
const (
	// DefaultFairQueueK is the default number of classes.
	DefaultFairQueueK = 3
	// DefaultFairQueueBeta is the default round length, in pods.
	DefaultFairQueueBeta = 16
)

// Defaults of HetsevGPUShareArgs: the paper's rules (HetSev 4.2), and an
// interference weight that is our choice, not the paper's. They are the
// domain packages' defaults (placement.DefaultInterferenceWeight,
// gpuinventory.DefaultMaxBusyShare, gpuinventory.FitWorst), written here
// so that the config API imports no domain package; a test of
// pkg/plugins/gpushare keeps them equal.
const (
	DefaultGPUShareAntiAffinity = config.AntiAffinityHard
	DefaultGPUShareFit          = config.FitWorst
	// DefaultGPUShareInterferenceWeight is dimensionless, in 0..1.
	DefaultGPUShareInterferenceWeight = 0.5
	// DefaultGPUShareMaxBusyShare is the summed busy share one GPU may
	// carry (dimensionless): busy all the time.
	DefaultGPUShareMaxBusyShare = 1.0
	// DefaultGPUShareConsolidate: GPUs in use first for instances that
	// declare their busy share (ours, not the paper's).
	DefaultGPUShareConsolidate = true
	// DefaultGPUShareGPUMode: annotations, for clusters without a DRA GPU
	// driver.
	DefaultGPUShareGPUMode = v1alpha1.GPUModeAnnotations
	// DefaultGPUSharePool: off, so that nodes without the pool label
	// (clusters installed before it) keep their pods on upgrade; the
	// shipped scheduler configuration turns it on.
	DefaultGPUSharePool = false
)

// SetDefaults_HetsevFairQueueArgs fills zero fields.
func SetDefaults_HetsevFairQueueArgs(obj *HetsevFairQueueArgs) {
	if obj.K == 0 {
		obj.K = DefaultFairQueueK
	}
	if obj.Beta == 0 {
		obj.Beta = DefaultFairQueueBeta
	}
}

// SetDefaults_HetsevGPUShareArgs fills empty fields; an explicit
// interferenceWeight or maxBusyShare of 0 is kept.
func SetDefaults_HetsevGPUShareArgs(obj *HetsevGPUShareArgs) {
	if obj.AntiAffinity == "" {
		obj.AntiAffinity = DefaultGPUShareAntiAffinity
	}
	if obj.Fit == "" {
		obj.Fit = DefaultGPUShareFit
	}
	if obj.InterferenceWeight == nil {
		w := float64(DefaultGPUShareInterferenceWeight) // dimensionless, 0..1
		obj.InterferenceWeight = &w
	}
	if obj.Consolidate == nil {
		c := DefaultGPUShareConsolidate
		obj.Consolidate = &c
	}
	if obj.GPUMode == "" {
		obj.GPUMode = DefaultGPUShareGPUMode
	}
	if obj.GPUPool == nil {
		p := DefaultGPUSharePool
		obj.GPUPool = &p
	}
	if obj.MaxBusyShare == nil {
		c := DefaultGPUShareMaxBusyShare // dimensionless
		obj.MaxBusyShare = &c
	}
}
