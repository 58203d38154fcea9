// Package ilp is the scaling ILP of HetSev 4.1 as a pure optimisation problem,
// with its solvers. It knows nothing of observations, policies or triggers:
// pkg/heterogeneity builds a [Problem] from a decision's observation and
// policy (heterogeneity.DecisionProblem) and solves it with either solver.
//
//   - [Problem]: for one service, the instances X_i of each GPU type i to add
//     (> 0) or remove (< 0) that minimise the objective sum_i C_i (X_i +
//     lambda O_i max(X_i, 0)) ([Objective], USD/h) subject to the capacity
//     sum_i T_i (N_i + X_i) >= Target ([Capacity], requests/s), bounds on
//     each X_i (free resources and the SLO check folded in by the caller;
//     N_i + X_i >= 0) and bounds on the total number of instances. Each
//     [Type] holds the coefficients N_i (running instances), T_i
//     (requests/s), C_i (USD/h) and O_i (launch time, s). A [Direction]
//     restricts the signs of X.
//   - [SolveExact]: an exact branch and bound with linear-programming bounds,
//     checked against brute-force enumeration in the tests; [ExactResult]
//     says whether the optimum is proven ([ExactNodeBudget] bounds the
//     search). [Problem.Relaxed] is the target of a scale-out that cannot be
//     covered: the most capacity the bounds allow.
//   - [SolveGreedy]: the instance selection of HetSev 4.1 for a scale-out,
//     the heuristic's amount: one type that covers the deficit at the least
//     objective, else the cheapest per request/s up to its bound, then the
//     next.
//
// The formulation and the greedy selection follow HetSev, "Heterogeneity-Aware
// Instance Autoscaling", section 4.1 of: HetSev: Exploiting Heterogeneity-Aware
// Autoscaling and Resource-Efficient Scheduling for Cost-Effective
// Machine-Learning Model Serving, Electronics 2023, 12, 240.
//
// Units throughout: throughput, capacity and targets in requests per second
// (requests/s), prices, objective values and costs in US dollars per hour
// (USD/h), launch time in seconds (s), lambda per second, instance counts as
// integers. Comparisons of rates allow a relative rounding tolerance of 1e-9
// ([Tolerance]).
package ilp
