package catalog

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/hetsev/hetsev/data/profiles"
)

// Profile describes one instance of a model served on one GPU type: the
// offline-profiled capacity T_i and latency L_i of HetSev 4.1, and the
// resources R_i and launch latency O_i of one instance.
//
// Throughput, latency and batch size are measurements, each row citing its
// Source (data/profiles/model_profiles.csv). GPU memory, CPU, memory and
// launch time are per-model ESTIMATES (data/profiles/instance_estimates.csv),
// explained by EstimateBasis; no source measures them.
type Profile struct {
	Model   string // model name, e.g. "resnet50"
	GPUType string // GPU type name as in the catalog, e.g. "T4"

	BatchSize int // batch size the measurement used (requests per batch)
	// ThroughputRPS is the maximum throughput of one instance at BatchSize, in
	// requests/s (T_i).
	ThroughputRPS float64
	// LatencyMs is the latency of one batch of BatchSize on an otherwise idle
	// GPU, in ms (L_i).
	LatencyMs float64

	GPUMemoryMiB int64 // GPU memory one instance needs, in MiB (estimate)
	CPUMilli     int64 // CPU one instance needs, in millicores (estimate)
	MemoryMiB    int64 // host memory one instance needs, in MiB (estimate)
	// LaunchSeconds is the time from creating an instance to it serving, in
	// seconds (O_i, estimate).
	LaunchSeconds float64

	Source        string // where throughput and latency were measured
	EstimateBasis string // why the estimated fields have their values

	// SmallBatches are measurements of the same setup at batch sizes below
	// BatchSize, ascending (data/profiles/small_batches.csv); empty where
	// none are loaded. A flavor whose batch of BatchSize would take too
	// long runs at one of them (heterogeneity.ExpandFlavors).
	SmallBatches []BatchPoint
}

// BatchPoint is one measured batch size of a profile: T and L of the
// server when its batches hold at most BatchSize requests.
type BatchPoint struct {
	BatchSize int // requests per batch
	// ThroughputRPS is the throughput at BatchSize, requests/s.
	ThroughputRPS float64
	// LatencyMs is the latency of one batch of BatchSize alone on the
	// GPU, ms.
	LatencyMs float64
}

// SmallBatch returns the measured point of batch size b below BatchSize.
func (p Profile) SmallBatch(b int) (BatchPoint, bool) {
	for _, pt := range p.SmallBatches {
		if pt.BatchSize == b {
			return pt, true
		}
	}
	return BatchPoint{}, false
}

// Validate reports the first field of p that cannot be used: empty model or
// GPU type; batch size, throughput, latency, GPU memory, CPU or memory <= 0;
// negative launch time; or a non-finite number. Field names in the error are
// the CSV column names.
func (p Profile) Validate() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("profile %q on %q: field %s: %s", p.Model, p.GPUType, field, fmt.Sprintf(format, args...))
	}
	positive := func(field string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fail(field, "not a finite number: %v", v)
		}
		if v <= 0 {
			return fail(field, "must be > 0, got %v", v)
		}
		return nil
	}
	switch {
	case p.Model == "":
		return fail(colModel, "must not be empty")
	case p.GPUType == "":
		return fail(colProfileGPUType, "must not be empty")
	case p.BatchSize <= 0:
		return fail(colBatchSize, "must be > 0, got %d", p.BatchSize)
	case p.GPUMemoryMiB <= 0:
		return fail(colEstGPUMemoryMiB, "must be > 0, got %d", p.GPUMemoryMiB)
	case p.CPUMilli <= 0:
		return fail(colCPUMillicores, "must be > 0, got %d", p.CPUMilli)
	case p.MemoryMiB <= 0:
		return fail(colMemoryMiB, "must be > 0, got %d", p.MemoryMiB)
	}
	if err := positive(colThroughputRPS, p.ThroughputRPS); err != nil {
		return err
	}
	if err := positive(colLatencyMs, p.LatencyMs); err != nil {
		return err
	}
	if math.IsNaN(p.LaunchSeconds) || math.IsInf(p.LaunchSeconds, 0) || p.LaunchSeconds < 0 {
		return fail(colLaunchSeconds, "must be a finite number >= 0, got %v", p.LaunchSeconds)
	}
	return nil
}

// Profiles holds one Profile per (model, GPU type). The zero value is empty
// and usable.
type Profiles struct {
	byKey map[profileKey]Profile
}

type profileKey struct{ model, gpuType string }

// Get returns the profile of model on gpuType.
func (ps Profiles) Get(model, gpuType string) (Profile, bool) {
	p, ok := ps.byKey[profileKey{model, gpuType}]
	return p, ok
}

// Models returns the profiled model names, sorted.
func (ps Profiles) Models() []string {
	seen := map[string]bool{}
	var models []string
	for k := range ps.byKey {
		if !seen[k.model] {
			seen[k.model] = true
			models = append(models, k.model)
		}
	}
	slices.Sort(models)
	return models
}

// ForModel returns the profiles of model on every profiled GPU type, sorted by
// GPU type name; nil when the model is unknown.
func (ps Profiles) ForModel(model string) []Profile {
	var out []Profile
	for k, p := range ps.byKey {
		if k.model == model {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Profile) int { return cmp.Compare(a.GPUType, b.GPUType) })
	return out
}

// On returns the profiles on the GPU types gpuTypes only: what a cluster
// that offers those types can run. Names not profiled are ignored.
func (ps Profiles) On(gpuTypes ...string) Profiles {
	out := Profiles{byKey: map[profileKey]Profile{}}
	for k, p := range ps.byKey {
		if slices.Contains(gpuTypes, k.gpuType) {
			out.byKey[k] = p
		}
	}
	return out
}

// All returns every profile, sorted by model and then GPU type.
func (ps Profiles) All() []Profile {
	out := make([]Profile, 0, len(ps.byKey))
	for _, p := range ps.byKey {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Profile) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.GPUType, b.GPUType))
	})
	return out
}

// Column names of the two profile files.
const (
	colModel          = "model"
	colProfileGPUType = "gpu_type"
	colBatchSize      = "batch_size"
	colThroughputRPS  = "throughput_rps"
	colLatencyMs      = "latency_ms"
	colProfileSource  = "source"

	colEstGPUMemoryMiB = "gpu_memory_mib"
	colCPUMillicores   = "cpu_millicores"
	colMemoryMiB       = "memory_mib"
	colLaunchSeconds   = "launch_seconds"
	colBasis           = "basis"
)

// instanceEstimate is one row of instance_estimates.csv.
type instanceEstimate struct {
	gpuMemoryMiB, cpuMilli, memoryMiB int64
	launchSeconds                     float64
	basis                             string
}

// LoadProfiles reads measured model profiles and per-model instance estimates
// and joins them on the model name.
//
// The profiles file has the columns model, gpu_type, batch_size (> 0),
// throughput_rps (requests/s, > 0), latency_ms (ms, > 0) and source; one row
// per (model, gpu_type). The estimates file has the columns model,
// gpu_memory_mib (MiB, > 0), cpu_millicores (> 0), memory_mib (MiB, > 0),
// launch_seconds (s, >= 0) and basis; one row per model. Other columns are
// allowed and ignored.
//
// Errors are *FieldError values naming the file (profilesFile or
// estimatesFile), the line and the column: non-numeric or out-of-range
// values, missing columns, duplicate rows, and a profiled model without an
// estimate row. Estimate rows for models without profiles are allowed.
func LoadProfiles(profiles io.Reader, profilesFile string, estimates io.Reader, estimatesFile string) (Profiles, error) {
	est, err := loadEstimates(estimates, estimatesFile)
	if err != nil {
		return Profiles{}, err
	}
	ps := Profiles{byKey: map[profileKey]Profile{}}
	keyLine := map[profileKey]int{}
	err = eachProfileRow(profiles, profilesFile, func(row csvRow, p Profile) error {
		k := profileKey{p.Model, p.GPUType}
		if first, dup := keyLine[k]; dup {
			return row.errorf(colProfileGPUType, "duplicate row for model %q on %q (first on line %d)", p.Model, p.GPUType, first)
		}
		e, ok := est[p.Model]
		if !ok {
			return row.errorf(colModel, "no row for model %q in %s", p.Model, estimatesFile)
		}
		p.GPUMemoryMiB, p.CPUMilli, p.MemoryMiB = e.gpuMemoryMiB, e.cpuMilli, e.memoryMiB
		p.LaunchSeconds, p.EstimateBasis = e.launchSeconds, e.basis
		if err := p.Validate(); err != nil {
			// Unreachable after the checks above; kept as a backstop.
			return &FieldError{File: profilesFile, Line: row.lineOf(colModel), Msg: err.Error()}
		}
		keyLine[k] = row.lineOf(colModel)
		ps.byKey[k] = p
		return nil
	})
	if err != nil {
		return Profiles{}, err
	}
	if len(ps.byKey) == 0 {
		return Profiles{}, &FieldError{File: profilesFile, Msg: "no profiles (header only)"}
	}
	return ps, nil
}

// eachProfileRow calls fn with every row of a profile file (the columns
// of model_profiles.csv) parsed, in file order; it stops at the first
// error, a file's or fn's.
func eachProfileRow(r io.Reader, file string, fn func(row csvRow, p Profile) error) error {
	t, err := newCSVTable(r, file, []string{colModel, colProfileGPUType, colBatchSize, colThroughputRPS, colLatencyMs, colProfileSource})
	if err != nil {
		return err
	}
	for {
		row, ok, err := t.next()
		if err != nil || !ok {
			return err
		}
		p, err := parseProfile(row)
		if err != nil {
			return err
		}
		if err := fn(row, p); err != nil {
			return err
		}
	}
}

func parseProfile(row csvRow) (Profile, error) {
	var p Profile
	var err error
	if p.Model, err = row.nonEmpty(colModel); err != nil {
		return p, err
	}
	if p.GPUType, err = row.nonEmpty(colProfileGPUType); err != nil {
		return p, err
	}
	batch, err := row.positiveInt(colBatchSize)
	if err != nil {
		return p, err
	}
	if batch > math.MaxInt32 {
		return p, row.errorf(colBatchSize, "out of range: %d", batch)
	}
	p.BatchSize = int(batch)
	if p.ThroughputRPS, err = row.float(colThroughputRPS, true); err != nil {
		return p, err
	}
	if p.LatencyMs, err = row.float(colLatencyMs, true); err != nil {
		return p, err
	}
	if p.Source, err = row.str(colProfileSource); err != nil {
		return p, err
	}
	return p, nil
}

func loadEstimates(r io.Reader, file string) (map[string]instanceEstimate, error) {
	t, err := newCSVTable(r, file, []string{colModel, colEstGPUMemoryMiB, colCPUMillicores, colMemoryMiB, colLaunchSeconds, colBasis})
	if err != nil {
		return nil, err
	}
	est := map[string]instanceEstimate{}
	modelLine := map[string]int{}
	for {
		row, ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return est, nil
		}
		model, err := row.nonEmpty(colModel)
		if err != nil {
			return nil, err
		}
		if first, dup := modelLine[model]; dup {
			return nil, row.errorf(colModel, "duplicate row for model %q (first on line %d)", model, first)
		}
		var e instanceEstimate
		if e.gpuMemoryMiB, err = row.positiveInt(colEstGPUMemoryMiB); err != nil {
			return nil, err
		}
		if e.cpuMilli, err = row.positiveInt(colCPUMillicores); err != nil {
			return nil, err
		}
		if e.memoryMiB, err = row.positiveInt(colMemoryMiB); err != nil {
			return nil, err
		}
		if e.launchSeconds, err = row.float(colLaunchSeconds, false); err != nil {
			return nil, err
		}
		if e.basis, err = row.str(colBasis); err != nil {
			return nil, err
		}
		modelLine[model] = row.lineOf(colModel)
		est[model] = e
	}
}

// DefaultProfiles loads the profiles embedded in package data
// (data/profiles/model_profiles.csv joined with
// data/profiles/instance_estimates.csv): resnet50, ssd-resnet50 and
// bert-large on V100-32GB and T4, measured by NVIDIA DeepLearningExamples as
// cited per row.
func DefaultProfiles() (Profiles, error) {
	pf, err := openEmbedded(profiles.ModelProfiles)
	if err != nil {
		return Profiles{}, err
	}
	defer pf.Close()
	ef, err := openEmbedded(profiles.InstanceEstimates)
	if err != nil {
		return Profiles{}, err
	}
	defer ef.Close()
	ps, err := LoadProfiles(pf, profiles.ModelProfiles, ef, profiles.InstanceEstimates)
	if err != nil {
		return Profiles{}, err
	}
	sf, err := openEmbedded(profiles.SmallBatches)
	if err != nil {
		return Profiles{}, err
	}
	defer sf.Close()
	return ps.WithSmallBatches(sf, profiles.SmallBatches)
}

// WithSmallBatches returns ps with the smaller-batch measurements of r
// (columns model, gpu_type, batch_size, throughput_rps, latency_ms,
// source; other columns ignored) added to the profiles they belong to.
//
// Errors are *FieldError values naming file, line and column: a row
// without a profile of its model and GPU type, a batch size not below
// the profile's, a duplicate batch size, or a number that is not
// positive. ps is left unchanged.
func (ps Profiles) WithSmallBatches(r io.Reader, file string) (Profiles, error) {
	out := Profiles{byKey: make(map[profileKey]Profile, len(ps.byKey))}
	for k, p := range ps.byKey {
		p.SmallBatches = slices.Clone(p.SmallBatches)
		out.byKey[k] = p
	}
	err := eachProfileRow(r, file, func(row csvRow, pt Profile) error {
		k := profileKey{pt.Model, pt.GPUType}
		p, ok := out.byKey[k]
		if !ok {
			return row.errorf(colProfileGPUType, "no profile of model %q on %q to add a batch size to", pt.Model, pt.GPUType)
		}
		if pt.BatchSize >= p.BatchSize {
			return row.errorf(colBatchSize, "%d is not below the profile's batch size %d", pt.BatchSize, p.BatchSize)
		}
		if _, dup := p.SmallBatch(pt.BatchSize); dup {
			return row.errorf(colBatchSize, "duplicate batch size %d for model %q on %q", pt.BatchSize, pt.Model, pt.GPUType)
		}
		p.SmallBatches = append(p.SmallBatches, BatchPoint{BatchSize: pt.BatchSize, ThroughputRPS: pt.ThroughputRPS, LatencyMs: pt.LatencyMs})
		slices.SortFunc(p.SmallBatches, func(a, b BatchPoint) int { return cmp.Compare(a.BatchSize, b.BatchSize) })
		out.byKey[k] = p
		return nil
	})
	if err != nil {
		return Profiles{}, err
	}
	return out, nil
}
