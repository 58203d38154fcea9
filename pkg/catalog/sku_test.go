package catalog

import (
	"errors"
	"strings"
	"testing"
)

// Every GPU type of the shipped catalog comes in at least one shipped
// instance type, and the cheapest per GPU is the catalog's instance at the
// catalog's price.
func TestDefaultSKUsCoverTheCatalog(t *testing.T) {
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	skus, err := DefaultSKUs(cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cat.Types {
		cheapest := InstanceSKU{}
		for _, s := range skus {
			if s.GPUType == g.Name && (cheapest.Name == "" || s.PriceUSDPerHour/float64(s.GPUs) < cheapest.PriceUSDPerHour/float64(cheapest.GPUs)) {
				cheapest = s
			}
		}
		if cheapest.Name != g.InstanceType || cheapest.PriceUSDPerHour/float64(cheapest.GPUs) != g.PriceUSDPerHour {
			t.Errorf("%s: cheapest instance per GPU %+v; want the catalog's %s at %g USD/h per GPU", g.Name, cheapest, g.InstanceType, g.PriceUSDPerHour)
		}
	}
}

// A bad SKU file is refused with its file, line and column.
func TestLoadSKUsErrors(t *testing.T) {
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	const header = "instance_type,gpu_type,gpus,vcpus,memory_gib,usd_per_hour\n"
	for _, c := range []struct{ name, body, field, msg string }{
		{"unknown GPU type", "x.large,K80,1,4,16,0.9\n", "gpu_type", "not in the GPU catalog"},
		{"no price", "x.large,T4,1,4,16,\n", "usd_per_hour", ""},
		{"zero price", "x.large,T4,1,4,16,0\n", "usd_per_hour", ""},
		{"below the catalog", "x.large,T4,1,4,16,0.4\n", "usd_per_hour", "below the catalog"},
		{"no GPUs", "x.large,T4,0,4,16,0.6\n", "gpus", ""},
		{"repeated", "x.large,T4,1,4,16,0.6\nx.large,T4,1,8,32,0.8\n", "instance_type", "duplicate"},
		{"missing column", "", "vcpus", "missing column"},
	} {
		body := header + c.body
		if c.name == "missing column" {
			body = "instance_type,gpu_type,gpus,memory_gib,usd_per_hour\nx,T4,1,16,0.6\n"
		}
		_, err := LoadSKUs(strings.NewReader(body), "skus.csv", cat)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.File != "skus.csv" || fe.Field != c.field || !strings.Contains(fe.Error(), c.msg) {
			t.Errorf("%s: %v; want a FieldError on skus.csv, column %s, saying %q", c.name, err, c.field, c.msg)
		}
	}
}
