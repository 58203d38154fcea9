package latency

// Profiled values from data/profiles (pkg/catalog checks them against the
// embedded CSV files): T_i requests/s and L_i ms of one instance at batch 8.
const (
	resnetT4RPS = 363.0 // resnet50 on T4
	resnetT4Ms  = 22.41
	bertT4RPS   = 69.3 // bert-large on T4
	bertT4Ms    = 114.5
	bertV100RPS = 208.0 // bert-large on V100
	bertV100Ms  = 38.3
)
