package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/data/profiles"
)

func TestDefaultProfiles(t *testing.T) {
	ps, err := DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ps.Models(), []string{"bert-large", "resnet50", "ssd-resnet50"}; !slices.Equal(got, want) {
		t.Errorf("Models() = %v, want %v", got, want)
	}
	// Rows of data/profiles/model_profiles.csv joined with
	// data/profiles/instance_estimates.csv.
	tests := []struct {
		model, gpu           string
		batch                int
		rps, ms              float64
		gpuMiB, cpu, memMiB  int64
		launch               float64
		sourceHas, basisHead string
	}{
		{"resnet50", "T4", 8, 363, 22.41, 2048, 2000, 4096, 20, "resnet50v1.5/README.md#L660", "ESTIMATE"},
		{"resnet50", "V100-32GB", 8, 709, 11.5, 2048, 2000, 4096, 20, "resnet50v1.5/README.md#L628", "ESTIMATE"},
		{"ssd-resnet50", "T4", 4, 37.71, 106.21, 3072, 2000, 4096, 25, "SSD/README.md#L588", "ESTIMATE"},
		{"ssd-resnet50", "V100-32GB", 4, 55.41, 72.19, 3072, 2000, 4096, 25, "SSD/README.md#L557", "ESTIMATE"},
		{"bert-large", "T4", 8, 69.3, 114.5, 6144, 2000, 8192, 40, "BERT/triton/large/README.md#L532", "ESTIMATE"},
		{"bert-large", "V100-32GB", 8, 208, 38.3, 6144, 2000, 8192, 40, "BERT/triton/large/README.md#L324", "ESTIMATE"},
		// The A100 rows: the same tables' batch sizes as the V100 and T4
		// rows (data/README.md).
		{"ssd-resnet50", "A100", 4, 58.81, 68.01, 3072, 2000, 4096, 25, "SSD/README.md#L527", "ESTIMATE"},
		{"bert-large", "A100", 8, 512, 15.4, 6144, 2000, 8192, 40, "BERT/triton/large/README.md#L427", "ESTIMATE"},
	}
	for _, tc := range tests {
		p, ok := ps.Get(tc.model, tc.gpu)
		if !ok {
			t.Errorf("Get(%q, %q): not found", tc.model, tc.gpu)
			continue
		}
		if p.Model != tc.model || p.GPUType != tc.gpu || p.BatchSize != tc.batch || p.ThroughputRPS != tc.rps ||
			p.LatencyMs != tc.ms || p.GPUMemoryMiB != tc.gpuMiB || p.CPUMilli != tc.cpu || p.MemoryMiB != tc.memMiB ||
			p.LaunchSeconds != tc.launch {
			t.Errorf("Get(%q, %q) = %+v", tc.model, tc.gpu, p)
		}
		if !strings.Contains(p.Source, tc.sourceHas) {
			t.Errorf("%s/%s: source %q lacks %q", tc.model, tc.gpu, p.Source, tc.sourceHas)
		}
		if !strings.HasPrefix(p.EstimateBasis, tc.basisHead) {
			t.Errorf("%s/%s: estimate basis %q", tc.model, tc.gpu, p.EstimateBasis)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s/%s: %v", tc.model, tc.gpu, err)
		}
	}
	if _, ok := ps.Get("resnet50", "K80"); ok {
		t.Error("Get(resnet50, K80) found")
	}
	var gpus []string
	for _, p := range ps.ForModel("resnet50") {
		gpus = append(gpus, p.GPUType)
	}
	if want := []string{"T4", "V100-32GB"}; !slices.Equal(gpus, want) {
		t.Errorf("ForModel(resnet50) GPU types = %v, want %v", gpus, want)
	}
	if got := ps.ForModel("vgg"); got != nil {
		t.Errorf("ForModel(vgg) = %v", got)
	}
	if n := len(ps.All()); n != 8 {
		t.Errorf("All() has %d profiles, want 8", n)
	}
	// No row on the V100 and T4 rows' basis exists for ResNet-50 on the
	// A100 or for any model on the A10G: those pairs are left out.
	for _, m := range ps.Models() {
		if p, ok := ps.Get(m, "A10G"); ok {
			t.Errorf("%s on A10G profiled: %+v", m, p)
		}
	}
	if p, ok := ps.Get("resnet50", "A100"); ok {
		t.Errorf("resnet50 on A100 profiled: %+v", p)
	}
	// Every profiled GPU type is priced in the catalog.
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.All() {
		if _, ok := cat.ByName(p.GPUType); !ok {
			t.Errorf("%s/%s: GPU type not in the catalog", p.Model, p.GPUType)
		}
	}
}

// TestProfilesOn: the profiles on the named GPU types only; an unknown name
// adds nothing.
func TestProfilesOn(t *testing.T) {
	ps, err := DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	on := ps.On("T4", "V100-32GB", "K80")
	if n := len(on.All()); n != 6 {
		t.Errorf("On(T4, V100-32GB, K80) has %d profiles, want 6", n)
	}
	for _, p := range on.All() {
		if p.GPUType != "T4" && p.GPUType != "V100-32GB" {
			t.Errorf("On(T4, V100-32GB) kept %s on %s", p.Model, p.GPUType)
		}
	}
	if p, ok := on.Get("bert-large", "T4"); !ok || p.ThroughputRPS != 69.3 {
		t.Errorf("On(...).Get(bert-large, T4) = %+v, %v", p, ok)
	}
	if got := ps.On().All(); len(got) != 0 {
		t.Errorf("On() = %v, want none", got)
	}
}

func TestProfilesZeroValue(t *testing.T) {
	var ps Profiles
	if _, ok := ps.Get("resnet50", "T4"); ok {
		t.Error("zero Profiles: Get found something")
	}
	if len(ps.Models()) != 0 || len(ps.ForModel("resnet50")) != 0 || len(ps.All()) != 0 {
		t.Error("zero Profiles is not empty")
	}
}

const (
	profHeader = "model,gpu_type,batch_size,throughput_rps,latency_ms,source\n"
	profT4     = "resnet50,T4,8,363.0,22.41,src\n"
	estHeader  = "model,gpu_memory_mib,cpu_millicores,memory_mib,launch_seconds,basis\n"
	estResnet  = "resnet50,2048,2000,4096,20,ESTIMATE: test\n"
)

func TestLoadProfilesErrors(t *testing.T) {
	pf, ef := profiles.ModelProfiles, profiles.InstanceEstimates
	tests := []struct {
		name, profiles, estimates, want string
	}{
		{"negative throughput", profHeader + profT4 + "resnet50,V100-32GB,8,-1,11.5,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:3: field throughput_rps: must be > 0, got "-1"`},
		{"non-numeric throughput", profHeader + "resnet50,T4,8,fast,22.41,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field throughput_rps: not a finite number: "fast"`},
		{"NaN throughput", profHeader + "resnet50,T4,8,NaN,22.41,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field throughput_rps: not a finite number: "NaN"`},
		{"zero latency", profHeader + "resnet50,T4,8,363,0,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field latency_ms: must be > 0, got "0"`},
		{"empty latency", profHeader + "resnet50,T4,8,363,,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field latency_ms: must not be empty`},
		{"zero batch", profHeader + "resnet50,T4,0,363,22.41,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field batch_size: must be > 0, got "0"`},
		{"fractional batch", profHeader + "resnet50,T4,8.5,363,22.41,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field batch_size: not an integer: "8.5"`},
		{"missing column", "model,gpu_type,batch_size,throughput_rps,source\n", estHeader + estResnet,
			`profiles/model_profiles.csv:1: field latency_ms: missing column in header`},
		{"short row", profHeader + "resnet50,T4,8,363\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: field latency_ms: missing value (row has 4 columns, header has 6)`},
		{"duplicate model and GPU", profHeader + profT4 + "resnet50,V100-32GB,8,709,11.5,src\n" + profT4, estHeader + estResnet,
			`profiles/model_profiles.csv:4: field gpu_type: duplicate row for model "resnet50" on "T4" (first on line 2)`},
		{"model without estimate", profHeader + profT4 + "vgg16,T4,8,100,30,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:3: field model: no row for model "vgg16" in profiles/instance_estimates.csv`},
		{"line of a row after a multi-line quoted field", profHeader + "resnet50,T4,8,363,22.41,\"two\nlines\"\nresnet50,V100-32GB,8,709,-3,src\n", estHeader + estResnet,
			`profiles/model_profiles.csv:4: field latency_ms: must be > 0, got "-3"`},
		{"bare quote", profHeader + "resnet50,T4,8,363,22.41,a\"b\n", estHeader + estResnet,
			`profiles/model_profiles.csv:2: malformed CSV at byte 26 of the line: bare " in non-quoted-field`},
		{"empty profiles", "", estHeader + estResnet,
			`profiles/model_profiles.csv:1: empty file, expected a header row`},
		{"header only", profHeader, estHeader + estResnet,
			`profiles/model_profiles.csv: no profiles (header only)`},
		{"zero GPU memory estimate", profHeader + profT4, estHeader + "resnet50,0,2000,4096,20,b\n",
			`profiles/instance_estimates.csv:2: field gpu_memory_mib: must be > 0, got "0"`},
		{"negative CPU estimate", profHeader + profT4, estHeader + "resnet50,2048,-2,4096,20,b\n",
			`profiles/instance_estimates.csv:2: field cpu_millicores: must be > 0, got "-2"`},
		{"non-numeric memory estimate", profHeader + profT4, estHeader + "resnet50,2048,2000,4G,20,b\n",
			`profiles/instance_estimates.csv:2: field memory_mib: not an integer: "4G"`},
		{"negative launch estimate", profHeader + profT4, estHeader + "resnet50,2048,2000,4096,-5,b\n",
			`profiles/instance_estimates.csv:2: field launch_seconds: must be >= 0, got "-5"`},
		{"duplicate estimate", profHeader + profT4, estHeader + estResnet + estResnet,
			`profiles/instance_estimates.csv:3: field model: duplicate row for model "resnet50" (first on line 2)`},
		{"estimates missing column", profHeader + profT4, "model,gpu_memory_mib,cpu_millicores,memory_mib,basis\n",
			`profiles/instance_estimates.csv:1: field launch_seconds: missing column in header`},
	}
	for _, tc := range tests {
		_, err := LoadProfiles(strings.NewReader(tc.profiles), pf, strings.NewReader(tc.estimates), ef)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got  %v\n want %s", tc.name, err, tc.want)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FieldError", tc.name, err)
		}
	}
	if _, err := LoadProfiles(nil, pf, strings.NewReader(estHeader+estResnet), ef); err == nil {
		t.Error("nil profiles reader: no error")
	}
	if _, err := LoadProfiles(strings.NewReader(profHeader+profT4), pf, nil, ef); err == nil {
		t.Error("nil estimates reader: no error")
	}
}

func TestLoadProfilesExtraColumnsAndQuotes(t *testing.T) {
	// Columns may come in any order, with extra ones and quoted fields; an
	// estimate for a model without profiles is allowed.
	profiles := "source,latency_ms,throughput_rps,batch_size,gpu_type,model,note\n" +
		"\"a, b\",22.41,363,8,T4,resnet50,x\n"
	estimates := estHeader + estResnet + "bert-large,6144,2000,8192,40,b\n"
	ps, err := LoadProfiles(strings.NewReader(profiles), "p.csv", strings.NewReader(estimates), "e.csv")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ps.Get("resnet50", "T4")
	if !ok || p.Source != "a, b" || p.ThroughputRPS != 363 || p.LaunchSeconds != 20 {
		t.Errorf("Get = %+v, %v", p, ok)
	}
}

func TestProfileValidate(t *testing.T) {
	ps, err := DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	base, _ := ps.Get("resnet50", "T4")
	tests := []struct {
		name   string
		change func(*Profile)
		want   string
	}{
		{"no model", func(p *Profile) { p.Model = "" }, "field model: must not be empty"},
		{"no GPU", func(p *Profile) { p.GPUType = "" }, "field gpu_type: must not be empty"},
		{"zero batch", func(p *Profile) { p.BatchSize = 0 }, "field batch_size: must be > 0, got 0"},
		{"negative throughput", func(p *Profile) { p.ThroughputRPS = -1 }, "field throughput_rps: must be > 0, got -1"},
		{"zero latency", func(p *Profile) { p.LatencyMs = 0 }, "field latency_ms: must be > 0, got 0"},
		{"zero GPU memory", func(p *Profile) { p.GPUMemoryMiB = 0 }, "field gpu_memory_mib: must be > 0"},
		{"zero CPU", func(p *Profile) { p.CPUMilli = 0 }, "field cpu_millicores: must be > 0"},
		{"zero memory", func(p *Profile) { p.MemoryMiB = 0 }, "field memory_mib: must be > 0"},
		{"negative launch", func(p *Profile) { p.LaunchSeconds = -1 }, "field launch_seconds"},
	}
	for _, tc := range tests {
		p := base
		tc.change(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzLoadProfiles checks that no input makes the loaders panic and that
// whatever loads is valid.
func FuzzLoadProfiles(f *testing.F) {
	f.Add(profHeader+profT4, estHeader+estResnet)
	f.Add(profHeader+"resnet50,T4,8,1e309,22.41,s\n", estHeader+estResnet)
	f.Add("\ufeff"+profHeader+"\"", estHeader)
	f.Add("model\n,,,,,,,\n", "")
	f.Fuzz(func(t *testing.T, profiles, estimates string) {
		ps, err := LoadProfiles(strings.NewReader(profiles), "p.csv", strings.NewReader(estimates), "e.csv")
		if err != nil {
			return
		}
		for _, p := range ps.All() {
			if err := p.Validate(); err != nil {
				t.Errorf("loaded an invalid profile: %v", err)
			}
		}
		_, _ = LoadCatalog(strings.NewReader(profiles), "c.csv")
	})
}

// The embedded smaller batches join their profiles, ascending, from the
// same tables: BERT-large on a T4 at batch 1 runs 14.4 ms at 69 requests/s.
func TestDefaultProfilesSmallBatches(t *testing.T) {
	ps, err := DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model, gpu string
		want       []BatchPoint
	}{
		{"bert-large", "T4", []BatchPoint{{1, 69, 14.4}}},
		{"ssd-resnet50", "T4", []BatchPoint{{1, 19.29, 51.9}, {2, 30.36, 66.04}}},
		{"resnet50", "V100-32GB", []BatchPoint{{1, 96, 10.37}, {2, 196, 10.24}, {4, 386, 10.46}}},
	} {
		p, _ := ps.Get(tc.model, tc.gpu)
		if !slices.Equal(p.SmallBatches, tc.want) {
			t.Errorf("%s on %s: small batches %v, want %v", tc.model, tc.gpu, p.SmallBatches, tc.want)
		}
	}
	for _, p := range ps.All() {
		for _, pt := range p.SmallBatches {
			if pt.BatchSize >= p.BatchSize {
				t.Errorf("%s on %s: batch %d not below %d", p.Model, p.GPUType, pt.BatchSize, p.BatchSize)
			}
		}
	}
}

func TestWithSmallBatchesErrors(t *testing.T) {
	ps, err := LoadProfiles(strings.NewReader(profHeader+profT4), profiles.ModelProfiles, strings.NewReader(estHeader+estResnet), profiles.InstanceEstimates)
	if err != nil {
		t.Fatal(err)
	}
	sf := profiles.SmallBatches
	for _, tc := range []struct{ name, rows, want string }{
		{"no such profile", "resnet50,V100-32GB,1,96,10.37,src\n",
			`profiles/small_batches.csv:2: field gpu_type: no profile of model "resnet50" on "V100-32GB" to add a batch size to`},
		{"batch not below the profile's", "resnet50,T4,8,363,22.41,src\n",
			`profiles/small_batches.csv:2: field batch_size: 8 is not below the profile's batch size 8`},
		{"duplicate batch", "resnet50,T4,1,98,10.7,src\nresnet50,T4,1,98,10.7,src\n",
			`profiles/small_batches.csv:3: field batch_size: duplicate batch size 1 for model "resnet50" on "T4"`},
		{"zero latency", "resnet50,T4,1,98,0,src\n",
			`profiles/small_batches.csv:2: field latency_ms: must be > 0, got "0"`},
	} {
		_, err := ps.WithSmallBatches(strings.NewReader(profHeader+tc.rows), sf)
		var fe *FieldError
		if err == nil || err.Error() != tc.want || !errors.As(err, &fe) {
			t.Errorf("%s:\n got  %v\n want %s", tc.name, err, tc.want)
		}
	}
	// A good file leaves the receiver as it was.
	got, err := ps.WithSmallBatches(strings.NewReader(profHeader+"resnet50,T4,2,186,11.26,src\nresnet50,T4,1,98,10.7,src\n"), sf)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := got.Get("resnet50", "T4"); !slices.Equal(p.SmallBatches, []BatchPoint{{1, 98, 10.7}, {2, 186, 11.26}}) {
		t.Errorf("small batches %v, want batch 1 then 2", p.SmallBatches)
	}
	if p, _ := ps.Get("resnet50", "T4"); len(p.SmallBatches) != 0 {
		t.Errorf("receiver changed: %v", p.SmallBatches)
	}
}
