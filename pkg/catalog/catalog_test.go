package catalog

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultCatalog(t *testing.T) {
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Types) != 4 {
		t.Fatalf("got %d GPU types, want 4", len(c.Types))
	}
	// Rows of data/profiles/gpu_catalog.csv.
	want := []GPUType{
		{Name: "V100-32GB", ProductLabel: "Tesla-V100-SXM2-32GB", MemoryMiB: 32768, PriceUSDPerHour: 3.9015, InstanceType: "p3dn.24xlarge"},
		{Name: "T4", ProductLabel: "Tesla-T4", MemoryMiB: 16384, PriceUSDPerHour: 0.526, InstanceType: "g4dn.xlarge"},
		// p4d.24xlarge's 32.7726 USD/h / 8 GPUs.
		{Name: "A100", ProductLabel: "NVIDIA-A100-SXM4-40GB", MemoryMiB: 40960, PriceUSDPerHour: 4.096575, InstanceType: "p4d.24xlarge"},
		{Name: "A10G", ProductLabel: "NVIDIA-A10G", MemoryMiB: 24576, PriceUSDPerHour: 1.006, InstanceType: "g5.xlarge"},
	}
	for _, w := range want {
		g, ok := c.ByName(w.Name)
		if !ok {
			t.Errorf("ByName(%q): not found", w.Name)
			continue
		}
		if !strings.Contains(g.Source, "skypilot-catalog") {
			t.Errorf("%s: source %q does not cite the SkyPilot catalog", w.Name, g.Source)
		}
		g.Source = ""
		if g != w {
			t.Errorf("ByName(%q) = %+v, want %+v", w.Name, g, w)
		}
		if byLabel, ok := c.ByProductLabel(w.ProductLabel); !ok || byLabel.Name != w.Name {
			t.Errorf("ByProductLabel(%q) = %v, %v", w.ProductLabel, byLabel.Name, ok)
		}
	}
	if _, ok := c.ByName("K80"); ok {
		t.Error("ByName(K80) found")
	}
	if _, ok := c.ByProductLabel("T4"); ok {
		t.Error("ByProductLabel(T4) matched a short name")
	}
}

const catalogHeader = "gpu_type,product_label,gpu_memory_mib,usd_per_hour,instance_type,instance_gpus,instance_usd_per_hour,region,source\n"
const catalogT4 = "T4,Tesla-T4,16384,0.526,g4dn.xlarge,1,0.526,us-east-1,src\n"

func TestLoadCatalogErrors(t *testing.T) {
	const file = "profiles/gpu_catalog.csv"
	tests := []struct {
		name, in, want string
	}{
		{"price not a number", catalogHeader + catalogT4 + "V100,Tesla-V100,32768,abc,p3,8,1,r,s\n",
			`profiles/gpu_catalog.csv:3: field usd_per_hour: not a finite number: "abc"`},
		{"negative price", catalogHeader + "T4,Tesla-T4,16384,-0.5,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:2: field usd_per_hour: must be > 0, got "-0.5"`},
		{"negative memory", catalogHeader + "T4,Tesla-T4,-1,0.526,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:2: field gpu_memory_mib: must be > 0, got "-1"`},
		{"fractional memory", catalogHeader + "T4,Tesla-T4,16.5,0.526,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:2: field gpu_memory_mib: not an integer: "16.5"`},
		{"empty name", catalogHeader + ",Tesla-T4,16384,0.526,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:2: field gpu_type: must not be empty`},
		{"duplicate name", catalogHeader + catalogT4 + "T4,Tesla-T4-b,16384,0.526,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:3: field gpu_type: duplicate GPU type "T4" (first on line 2)`},
		{"duplicate label", catalogHeader + catalogT4 + "T4b,Tesla-T4,16384,0.526,g4dn.xlarge,1,0.526,r,s\n",
			`profiles/gpu_catalog.csv:3: field product_label: duplicate product label "Tesla-T4" (first on line 2)`},
		{"missing column", "gpu_type,gpu_memory_mib,usd_per_hour,instance_type,source\nT4,16384,0.526,g4dn.xlarge,s\n",
			`profiles/gpu_catalog.csv:1: field product_label: missing column in header`},
		{"short row", catalogHeader + "T4,Tesla-T4,16384\n",
			`profiles/gpu_catalog.csv:2: field usd_per_hour: missing value (row has 3 columns, header has 9)`},
		{"header only", catalogHeader, `profiles/gpu_catalog.csv: no GPU types (header only)`},
		{"empty", "", `profiles/gpu_catalog.csv:1: empty file, expected a header row`},
	}
	for _, tc := range tests {
		_, err := LoadCatalog(strings.NewReader(tc.in), file)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got  %v\n want %s", tc.name, err, tc.want)
		}
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FieldError", tc.name, err)
		}
	}
	if _, err := LoadCatalog(nil, file); err == nil {
		t.Error("nil reader: no error")
	}
}
