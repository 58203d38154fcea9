package kubectlhetsev

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/profiler"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// profileFlags are `profile`'s flags.
type profileFlags struct {
	gpuType, url, protocol, path, readyPath, model, requestFile string
	batchSizes                                                  []int
	pod, dcgmURL, dcgmGPU                                       string
	stepDuration                                                time.Duration
	latencyBursts, maxSteps                                     int
	write                                                       bool
}

// newProfileCommand is `profile MODELSERVICE`.
func newProfileCommand(e *env) *cobra.Command {
	f := &profileFlags{}
	cmd := &cobra.Command{
		Use:   "profile MODELSERVICE --gpu-type TYPE --url URL",
		Short: "Measure a running model server and write the ModelService's profile for its GPU type",
		Long: `profile measures one model server instance running alone on a GPU of one
type: per batch size, one batch's latency (L_i) and the instance's
throughput under open-loop load (T_i); the GPU memory it holds, from
dcgm-exporter (--dcgm-url); and its launch time, from the pod's creation
to Ready (--pod). It prints the ModelService's profile entry for the GPU
type and, with --write, writes it into the ModelService (spec.profiles,
the entry of --gpu-type; smallBatches for sizes below spec.batchSize).

Reach the server and dcgm-exporter with kubectl port-forward, e.g.
  kubectl port-forward pod/resnet50-t4-0 8000 &
  kubectl -n gpu-operator port-forward svc/nvidia-dcgm-exporter 9400 &
  kubectl hetsev profile resnet50 --gpu-type T4 --url http://127.0.0.1:8000 \
    --protocol kserve-v2 --request-file input.json --pod resnet50-t4-0 \
    --dcgm-url http://127.0.0.1:9400/metrics --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.profile(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.gpuType, "gpu-type", "", "the GPU type the server runs on, as spec.profiles names it (required)")
	fl.StringVar(&f.url, "url", "", "the model server's base URL, e.g. http://127.0.0.1:8000 (required)")
	fl.StringVar(&f.protocol, "protocol", profiler.ProtocolHTTP, "the server's protocol: http (POST the request body to --path) or kserve-v2 (KServe v2 / Triton)")
	fl.StringVar(&f.path, "path", "/infer", "protocol http: the inference path")
	fl.StringVar(&f.readyPath, "ready-path", "", "protocol http: a path that answers 200 once the server is ready")
	fl.StringVar(&f.model, "model", "", "protocol kserve-v2: the model's name on the server (default spec.model)")
	fl.StringVar(&f.requestFile, "request-file", "", "one request's body, batch 1 (kserve-v2: the JSON with the model's inputs)")
	fl.IntSliceVar(&f.batchSizes, "batch-sizes", nil, "batch sizes to measure, ascending, the largest the server's own (default spec.batchSize)")
	fl.StringVar(&f.pod, "pod", "", "the model server's pod: launch time from its creation to Ready, and its GPU for dcgm-exporter")
	fl.StringVar(&f.dcgmURL, "dcgm-url", "", "dcgm-exporter's metrics URL: GPU memory is the peak of DCGM_FI_DEV_FB_USED during the run")
	fl.StringVar(&f.dcgmGPU, "dcgm-gpu", "", "the GPU on dcgm-exporter: its index or UUID (default: the pod's, else the only one)")
	fl.DurationVar(&f.stepDuration, "step-duration", 10*time.Second, "how long each offered rate runs")
	fl.IntVar(&f.latencyBursts, "latency-bursts", 20, "bursts per batch size measuring its latency (the median counts)")
	fl.IntVar(&f.maxSteps, "max-steps", 16, "offered rates per batch size at most, each 1.25 times the last")
	fl.BoolVar(&f.write, "write", false, "write the entry into the ModelService (needs update on modelservices)")
	return cmd
}

// ProfileResult is what `profile` measured, and the entry it made of it.
type ProfileResult struct {
	Points []profiler.Point `json:"points"`
	// GPUMemoryMiB is the peak DCGM_FI_DEV_FB_USED, MiB; 0 when not read.
	GPUMemoryMiB float64 `json:"gpuMemoryMiB,omitempty"`
	// LaunchSeconds is the pod's creation to Ready, s; 0 when not read.
	LaunchSeconds float64 `json:"launchSeconds,omitempty"`
	// Notes say what the figures leave out.
	Notes []string `json:"notes,omitempty"`
	// Entry is the ModelService's profile entry for the GPU type.
	Entry v1alpha1.GPUProfile `json:"entry"`
}

func (e *env) profile(ctx context.Context, name string, f *profileFlags) error {
	if f.gpuType == "" || f.url == "" {
		return fmt.Errorf("profile needs --gpu-type and --url")
	}
	ns, c, err := e.namespaced()
	if err != nil {
		return err
	}
	var ms v1alpha1.ModelService
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ms); err != nil {
		return apiError(err, "get", "modelservices", "modelservice", ns+"/"+name)
	}
	sizes := f.batchSizes
	if len(sizes) == 0 {
		sizes = []int{ms.Spec.BatchSize}
	}
	if sizes[len(sizes)-1] > ms.Spec.BatchSize {
		return fmt.Errorf("--batch-sizes %v: above spec.batchSize %d", sizes, ms.Spec.BatchSize)
	}
	if !slices.ContainsFunc(ms.Spec.Profiles, func(p v1alpha1.GPUProfile) bool { return p.GPUType == f.gpuType }) &&
		(f.dcgmURL == "" || !slices.Contains(sizes, ms.Spec.BatchSize)) {
		return fmt.Errorf("modelservice %s has no profile for %s: a new one needs batch size %d (spec.batchSize) among --batch-sizes and GPU memory (--dcgm-url)",
			name, f.gpuType, ms.Spec.BatchSize)
	}
	target := profiler.Target{URL: f.url, Protocol: f.protocol, Path: f.path, ReadyPath: f.readyPath,
		Model: cmp.Or(f.model, ms.Spec.Model)}
	if f.requestFile != "" {
		if target.Body, err = os.ReadFile(f.requestFile); err != nil {
			return err
		}
	}
	if err := target.Validate(); err != nil {
		return err
	}
	res := &ProfileResult{}
	sel := profiler.GPUSelector{}
	if f.pod != "" {
		var pod v1.Pod
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: f.pod}, &pod); err != nil {
			return apiError(err, "get", "pods", "pod", ns+"/"+f.pod)
		}
		if err := launchTime(ctx, c, &pod, res); err != nil {
			return err
		}
		sel = profiler.GPUSelector{Node: pod.Spec.NodeName, Index: pod.Annotations[v1alpha1.AnnotationGPUIndex],
			UUID: pod.Annotations[v1alpha1.AnnotationGPUUUID]}
	}
	switch {
	case strings.HasPrefix(f.dcgmGPU, "GPU-"):
		sel = profiler.GPUSelector{UUID: f.dcgmGPU}
	case f.dcgmGPU != "":
		sel.UUID, sel.Index = "", f.dcgmGPU
	}
	var sampler *profiler.DCGMSampler
	if f.dcgmURL != "" {
		hc := &http.Client{Timeout: 10 * time.Second}
		if sampler, err = profiler.SampleDCGM(ctx, hc, f.dcgmURL, sel, time.Second); err != nil {
			return fmt.Errorf("GPU memory: %w", err)
		}
	}
	// Steps are printed as they end: fixed widths, as a tabwriter aligns
	// only what it holds.
	const stepRow = "%5v  %11v  %11v  %12v  %8v  %8v  %6v  %v\n"
	fmt.Fprintf(e.out, stepRow, "BATCH", "OFFERED RPS", "ARRIVED RPS", "ANSWERED RPS", "P50 MS", "P98 MS", "ERRORS", "SATURATED")
	points, err := profiler.Measure(ctx, target, profiler.Options{BatchSizes: sizes, StepDuration: f.stepDuration,
		LatencyBursts: f.latencyBursts, MaxSteps: f.maxSteps, Seed: 1,
		Progress: func(s profiler.Step) {
			fmt.Fprintf(e.out, stepRow, s.BatchSize, fmt.Sprintf("%.1f", s.OfferedRPS), fmt.Sprintf("%.1f", s.ArrivedRPS),
				fmt.Sprintf("%.1f", s.AchievedRPS), fmt.Sprintf("%.1f", s.P50Ms), fmt.Sprintf("%.1f", s.P98Ms), s.Errors, s.Saturated())
		}})
	if sampler != nil {
		peak, _, serr := sampler.Stop()
		res.GPUMemoryMiB = peak
		if serr != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("a dcgm-exporter scrape failed during the run: %v", serr))
		}
	}
	if err != nil {
		return err
	}
	res.Points = points
	res.Notes = append(res.Notes, profileNotes(points, f, sampler != nil)...)
	entry, err := profileEntry(&ms, f.gpuType, res)
	if err != nil {
		return err
	}
	res.Entry = *entry
	if err := printProfile(e.out, res); err != nil {
		return err
	}
	if !f.write {
		_, err := fmt.Fprintf(e.out, "not written: run again with --write to write it into modelservice %s/%s\n", ns, name)
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.ModelService
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cur); err != nil {
			return err
		}
		entry, err := profileEntry(&cur, f.gpuType, res)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(cur.Spec.Profiles, func(p v1alpha1.GPUProfile) bool { return p.GPUType == f.gpuType })
		if i < 0 {
			cur.Spec.Profiles = append(cur.Spec.Profiles, *entry)
		} else {
			cur.Spec.Profiles[i] = *entry
		}
		return c.Update(ctx, &cur)
	})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("forbidden: you may not update modelservices in namespace %s, which --write needs: the namespace's edit role grants it (hetsev-modelservices-edit aggregates into it) (%v)", ns, err)
	}
	if err != nil {
		return apiError(err, "update", "modelservices", "modelservice", ns+"/"+name)
	}
	_, err = fmt.Fprintf(e.out, "modelservice %s/%s: profile %s written\n", ns, name, f.gpuType)
	return err
}

// launchTime sets res.LaunchSeconds from the pod's creation to its Ready
// condition, noting what makes the figure not O_i: a pod not ready, one
// that restarted (Ready then marks the restart), or an image pulled
// rather than cached (the pull is in the figure).
func launchTime(ctx context.Context, c client.Reader, pod *v1.Pod, res *ProfileResult) error {
	var ready *v1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			ready = &pod.Status.Conditions[i]
		}
	}
	restarts := int32(0)
	for _, s := range pod.Status.ContainerStatuses {
		restarts += s.RestartCount
	}
	switch {
	case ready == nil || ready.Status != v1.ConditionTrue:
		res.Notes = append(res.Notes, fmt.Sprintf("pod %s is not Ready: launch time not measured", pod.Name))
		return nil
	case restarts > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("pod %s restarted %d times: launch time not measured (its Ready time is the last restart's)", pod.Name, restarts))
		return nil
	}
	res.LaunchSeconds = ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds()
	events, note, err := eventsOf(ctx, c, "Pod", pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		return err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	for _, ev := range events {
		if ev.Reason == "Pulled" && !strings.Contains(ev.Message, "already present") {
			res.Notes = append(res.Notes, fmt.Sprintf("pod %s pulled its image (%q): the launch time includes the pull; measure on a node with the image cached", pod.Name, ev.Message))
		}
	}
	return nil
}

// profileNotes says what limits the measurement.
func profileNotes(points []profiler.Point, f *profileFlags, memory bool) []string {
	var notes []string
	for _, p := range points {
		if !p.Saturated {
			notes = append(notes, fmt.Sprintf("batch %d: %d steps never saturated the server: its throughput is a lower bound (raise --max-steps)", p.BatchSize, len(p.Steps)))
		}
	}
	if !memory {
		notes = append(notes, "GPU memory not measured (no --dcgm-url)")
	}
	if f.pod == "" {
		notes = append(notes, "launch time not measured (no --pod)")
	}
	return notes
}

// profileEntry is ms's profile entry for gpuType with res's measurements:
// the entry it has, if any, with the measured fields replaced (the top
// level at spec.batchSize, smallBatches below it, merged by batch size),
// or a new one, which needs every required field measured.
func profileEntry(ms *v1alpha1.ModelService, gpuType string, res *ProfileResult) (*v1alpha1.GPUProfile, error) {
	entry := v1alpha1.GPUProfile{GPUType: gpuType}
	i := slices.IndexFunc(ms.Spec.Profiles, func(p v1alpha1.GPUProfile) bool { return p.GPUType == gpuType })
	if i >= 0 {
		entry = *ms.Spec.Profiles[i].DeepCopy()
	}
	top := false
	small := map[int]v1alpha1.BatchPoint{}
	for _, b := range entry.SmallBatches {
		small[b.BatchSize] = b
	}
	for _, p := range res.Points {
		tput, lat := round(p.ThroughputRPS, 1), round(p.LatencyMs, 2)
		if p.BatchSize == ms.Spec.BatchSize {
			entry.ThroughputRPS, entry.LatencyMs, top = tput, lat, true
			continue
		}
		small[p.BatchSize] = v1alpha1.BatchPoint{BatchSize: p.BatchSize, ThroughputRPS: tput, LatencyMs: lat}
	}
	entry.SmallBatches = nil
	for _, b := range slices.Sorted(maps.Keys(small)) {
		if b < ms.Spec.BatchSize {
			entry.SmallBatches = append(entry.SmallBatches, small[b])
		}
	}
	if res.GPUMemoryMiB > 0 {
		entry.GPUMemory = fmt.Sprintf("%dMi", int64(math.Ceil(res.GPUMemoryMiB)))
	}
	if res.LaunchSeconds > 0 {
		entry.LaunchSeconds = round(res.LaunchSeconds, 1)
	}
	if i < 0 {
		var missing []string
		if !top {
			missing = append(missing, fmt.Sprintf("throughputRPS and latencyMs (measure batch size %d, spec.batchSize)", ms.Spec.BatchSize))
		}
		if entry.GPUMemory == "" {
			missing = append(missing, "gpuMemory (--dcgm-url)")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("modelservice %s has no profile for %s, and a new one needs %s", ms.Name, gpuType, strings.Join(missing, ", "))
		}
	}
	return &entry, nil
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// printProfile writes the results per batch size, the notes and the
// entry as YAML.
func printProfile(w io.Writer, res *ProfileResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBATCH\tTHROUGHPUT RPS\tLATENCY MS\tSATURATED")
	for _, p := range res.Points {
		fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t%v\n", p.BatchSize, p.ThroughputRPS, p.LatencyMs, p.Saturated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.GPUMemoryMiB > 0 {
		fmt.Fprintf(w, "GPU memory: %.0f MiB (peak DCGM_FI_DEV_FB_USED)\n", res.GPUMemoryMiB)
	}
	if res.LaunchSeconds > 0 {
		fmt.Fprintf(w, "launch: %.1f s (creation to Ready)\n", res.LaunchSeconds)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	b, err := yaml.Marshal([]v1alpha1.GPUProfile{res.Entry})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\nspec.profiles entry:\n%s", b)
	return err
}
