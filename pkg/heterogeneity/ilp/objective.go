package ilp

import "math"

// Objective is the objective of the HetSev scaling ILP (paper section 4.1)
// for the scaling action x over types:
//
//	sum_i C_i * (X_i + lambda * O_i * max(X_i, 0))
//
// with C_i = types[i].PriceUSDPerHour in USD/h, X_i = x[i] instances (negative
// to remove), O_i = types[i].LaunchSeconds in seconds and lambda per second,
// so the result is in USD/h. The launch term charges only instances being
// added: a large lambda favours types that start quickly, a small one favours
// the cheapest hardware. x[i] pairs with types[i]; missing entries count as 0
// and extra entries are ignored.
func Objective(types []Type, x []int, lambda float64) float64 {
	var sum float64
	for i := range min(len(types), len(x)) {
		sum += types[i].Cost(x[i], lambda)
	}
	return sum
}

// Cost is the term of type t in the objective for X_i = x instances, in
// USD/h: C_i (x + lambda O_i max(x, 0)).
func (t Type) Cost(x int, lambda float64) float64 {
	xi := float64(x)
	return t.PriceUSDPerHour * (xi + lambda*t.LaunchSeconds*math.Max(xi, 0))
}

// Capacity is the throughput of all instances after the action x, in
// requests/s: sum_i T_i (N_i + X_i), the left side of constraint (1) of HetSev
// 4.1. A nil x gives the capacity of the running instances. x[i] pairs with
// types[i]; missing entries count as 0.
func Capacity(types []Type, x []int) float64 {
	var sum float64
	for i, t := range types {
		xi := 0
		if i < len(x) {
			xi = x[i]
		}
		sum += t.Capacity(xi)
	}
	return sum
}

// Capacity is the throughput of the instances of type t after X_i = x, in
// requests/s: T_i (N_i + x).
func (t Type) Capacity(x int) float64 {
	return t.ThroughputRPS * float64(t.Running+x)
}
