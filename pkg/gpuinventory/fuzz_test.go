package gpuinventory

import (
	"strconv"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// The parsers below read what users and GPU Feature Discovery write; none
// may panic, and what they accept must be in range and read back the same.
// Seed corpora: testdata/fuzz/<target>/. Run one with, for example,
//   go test ./pkg/gpuinventory -run '^$' -fuzz FuzzParseDemand -fuzztime 30s

func FuzzParseDemand(f *testing.F) {
	f.Add("2048Mi", "resnet50", true, true)
	f.Add("3Gi", "", true, false)
	f.Add("-1", "ssd", true, true)
	f.Fuzz(func(t *testing.T, mem, model string, hasMem, hasModel bool) {
		ann := map[string]string{}
		if hasMem {
			ann[v1alpha1.AnnotationGPUMemory] = mem
		}
		if hasModel {
			ann[v1alpha1.AnnotationModel] = model
		}
		d, ok, err := ParseDemand(ann)
		if ok != (hasMem || hasModel) {
			t.Fatalf("ok = %v for %v", ok, ann)
		}
		if err != nil || !ok {
			return
		}
		if d.MemoryMiB < 1 || d.MemoryMiB > MaxGPUMemoryMiB {
			t.Fatalf("%q -> %d MiB, out of range", mem, d.MemoryMiB)
		}
		if d.Model != ann[v1alpha1.AnnotationModel] {
			t.Fatalf("model %q -> %q", ann[v1alpha1.AnnotationModel], d.Model)
		}
		again, _, err := ParseDemand(map[string]string{v1alpha1.AnnotationGPUMemory: strconv.FormatInt(d.MemoryMiB, 10) + "Mi"})
		if err != nil || again.MemoryMiB != d.MemoryMiB {
			t.Fatalf("%d MiB does not read back: %+v %v", d.MemoryMiB, again, err)
		}
	})
}

func FuzzParseNodeGPUs(f *testing.F) {
	f.Add("Tesla-T4", "2", "16384")
	f.Add("Tesla-V100-SXM2-32GB", "8", "32768")
	f.Add("", "0", "x")
	f.Fuzz(func(t *testing.T, product, count, mem string) {
		g, err := ParseNodeGPUs(map[string]string{LabelGPUProduct: product, LabelGPUCount: count, LabelGPUMemory: mem})
		if err != nil {
			return
		}
		if g.Count < 1 || g.Count > MaxGPUsPerNode || g.MemoryMiB < 1 || g.MemoryMiB > MaxGPUMemoryMiB || g.Product != product {
			t.Fatalf("%q/%q/%q -> %+v, out of range", product, count, mem, g)
		}
		again, err := ParseNodeGPUs(map[string]string{LabelGPUProduct: g.Product, LabelGPUCount: strconv.Itoa(g.Count), LabelGPUMemory: strconv.FormatInt(g.MemoryMiB, 10)})
		if err != nil || again != g {
			t.Fatalf("%+v does not read back: %+v %v", g, again, err)
		}
	})
}

func FuzzParseGPUIndex(f *testing.F) {
	f.Add("0")
	f.Add("7")
	f.Add("-1")
	f.Fuzz(func(t *testing.T, s string) {
		idx, ok, err := ParseGPUIndex(map[string]string{v1alpha1.AnnotationGPUIndex: s})
		if !ok {
			t.Fatalf("%q: ok = false with the annotation present", s)
		}
		if err != nil {
			return
		}
		if idx < 0 {
			t.Fatalf("%q -> %d", s, idx)
		}
		if again, _, err := ParseGPUIndex(map[string]string{v1alpha1.AnnotationGPUIndex: strconv.Itoa(idx)}); err != nil || again != idx {
			t.Fatalf("%d does not read back: %d %v", idx, again, err)
		}
	})
}

func FuzzParseBusyShare(f *testing.F) {
	f.Add("0.35")
	f.Add("1")
	f.Add("1e-300")
	f.Add("NaN")
	f.Add("-0")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBusyShare(map[string]string{v1alpha1.AnnotationBusyShare: s})
		if err != nil {
			if b != 0 {
				t.Fatalf("%q: error %v with share %v, want 0 (unknown)", s, err, b)
			}
			return
		}
		if !(b > 0 && b <= 1) {
			t.Fatalf("%q -> %v, out of (0, 1]", s, b)
		}
		if d := (Demand{BusyShare: b}); d.Busy() != b {
			t.Fatalf("%q -> %v, Busy() %v", s, b, d.Busy())
		}
		again, err := ParseBusyShare(map[string]string{v1alpha1.AnnotationBusyShare: strconv.FormatFloat(b, 'g', -1, 64)})
		if err != nil || again != b {
			t.Fatalf("%v does not read back: %v %v", b, again, err)
		}
	})
}
