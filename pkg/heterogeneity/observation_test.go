package heterogeneity

import (
	"math"
	"testing"
)

func TestCapacityAndSaturation(t *testing.T) {
	types := ts(resnetT4(1, 0), resnetV100(1, 0))
	// 363*1 + 709*1 = 1072 requests/s
	if got := Capacity(types, nil); !near(got, 1072) {
		t.Errorf("Capacity(nil) = %v, want 1072", got)
	}
	// 363*(1+3) + 709*(1-1) = 1452
	if got := Capacity(types, []int{3, -1}); !near(got, 1452) {
		t.Errorf("Capacity(+3,-1) = %v, want 1452", got)
	}
	tests := []struct {
		name  string
		w     float64
		types []TypeState
		want  float64
	}{
		{"1000 on one T4", 1000, ts(resnetT4(1, 0)), 1000.0 / 363},
		{"536 on T4+V100", 536, types, 0.5},
		{"no load", 0, types, 0},
		{"negative load", -5, types, 0},
		{"no load no capacity", 0, ts(resnetT4(0, 1)), 0},
		{"load without capacity", 10, ts(resnetT4(0, 1)), math.Inf(1)},
		{"load without types", 10, nil, math.Inf(1)},
	}
	for _, tc := range tests {
		if got := Saturation(tc.w, tc.types); !near(got, tc.want) {
			t.Errorf("%s: Saturation = %v, want %v", tc.name, got, tc.want)
		}
	}
}
