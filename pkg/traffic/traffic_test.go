package traffic

import "testing"

// TestWeights works the split by hand: one T4 (363 requests/s) and two
// V100s (709 each) -> 363/1781 = 20.38 %, 1418/1781 = 79.62 % -> 20 / 80.
func TestWeights(t *testing.T) {
	cases := []struct {
		name   string
		caps   []float64
		want   []int32
		wantOK bool
	}{
		{"t4 and two v100", []float64{363, 1418}, []int32{20, 80}, true},
		{"only t4", []float64{363, 0}, []int32{100, 0}, true},
		{"thirds keep 100", []float64{1, 1, 1}, []int32{34, 33, 33}, true},
		{"nothing serves", []float64{0, 0}, nil, false},
	}
	for _, c := range cases {
		var shares []Share
		for i, v := range c.caps {
			shares = append(shares, Share{GPUType: string(rune('a' + i)), CapacityRPS: v})
		}
		got, ok := Weights(shares)
		if ok != c.wantOK || len(got) != len(c.want) {
			t.Fatalf("%s: %v %v", c.name, got, ok)
		}
		sum := int32(0)
		for i := range got {
			sum += got[i]
			if got[i] != c.want[i] {
				t.Errorf("%s: weights %v, want %v", c.name, got, c.want)
				break
			}
		}
		if ok && sum != 100 {
			t.Errorf("%s: weights sum to %d", c.name, sum)
		}
	}
	if SubsetName("V100-32GB") != "v100-32gb" {
		t.Error(SubsetName("V100-32GB"))
	}
}
