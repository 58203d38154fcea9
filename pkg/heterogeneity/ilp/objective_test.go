package ilp

import "testing"

func TestObjective(t *testing.T) {
	types := ts(resnetT4(1), resnetV100(1))
	tests := []struct {
		name   string
		x      []int
		lambda float64
		want   float64
	}{
		// 0.526 * (3 + 0.01*20*3) = 0.526 * 3.6 = 1.8936
		{"add 3 T4", []int{3, 0}, 0.01, 1.8936},
		// 0.526*3*1.2 + 3.9015*2*1.2 = 1.8936 + 9.3636 = 11.2572
		{"add both", []int{3, 2}, 0.01, 11.2572},
		// removal: launch term is charged only on max(X,0): 3.9015 * -1
		{"remove V100", []int{0, -1}, 0.01, -3.9015},
		// lambda 0: plain hardware cost 0.526*3
		{"lambda zero", []int{3, 0}, 0, 1.578},
		// missing entries count as 0
		{"short x", []int{1}, 0.01, 0.6312},
		{"nil x", nil, 0.01, 0},
	}
	for _, tc := range tests {
		if got := Objective(types, tc.x, tc.lambda); !near(got, tc.want) {
			t.Errorf("%s: Objective = %v, want %v", tc.name, got, tc.want)
		}
	}
}
