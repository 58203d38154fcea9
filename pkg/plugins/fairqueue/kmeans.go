package fairqueue

import (
	"cmp"
	"slices"
)

// Shape is what Algorithm 1 step 1 clusters pods by (HetSev 4.2): the model
// (hetsev.io/model, "" for none) and the GPU memory it asks for (MiB).
type Shape struct {
	Model     string
	MemoryMiB int64
}

// weighted is a distinct shape and the number of pending pods that have it.
type weighted struct {
	Shape
	Count int
}

// distance is the L1 distance of HetSev 4.2 over the two features: GPU
// memory scaled by memScale (the largest memory among the points, so it
// lies in [0, 1]) plus 1 when the models differ (a categorical feature has
// distance 0 or 1).
func distance(a, b Shape, memScale float64) float64 {
	d := float64(a.MemoryMiB - b.MemoryMiB)
	if d < 0 {
		d = -d
	}
	d /= memScale
	if a.Model != b.Model {
		d++
	}
	return d
}

// maxIterations bounds Lloyd's iterations; over a handful of distinct shapes
// they converge in two or three.
const maxIterations = 20

// cluster groups the points into at most k classes by k-means under the L1
// distance (k-medians on memory, k-modes on the model: the centre that
// minimises the summed L1 distance of a class is the weighted median memory
// and the most frequent model). Points are distinct shapes weighted by their
// pending pods, so the cost is independent of the queue length. It returns
// each point's class in [0, n) and n <= k. Deterministic: the first centre
// is the most frequent shape, the next ones the points farthest from the
// centres so far (farthest-first seeding), and ties go to the earlier point
// in (count desc, model, memory) order.
func cluster(points []weighted, k int) (class []int, n int) {
	class = make([]int, len(points))
	if len(points) == 0 {
		return class, 0
	}
	order := make([]int, len(points))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := points[a], points[b]
		return cmp.Or(cmp.Compare(pb.Count, pa.Count), cmp.Compare(pa.Model, pb.Model), cmp.Compare(pa.MemoryMiB, pb.MemoryMiB))
	})
	if len(points) <= k {
		for rank, i := range order {
			class[i] = rank
		}
		return class, len(points)
	}
	memScale := 1.0
	for _, p := range points {
		memScale = max(memScale, float64(p.MemoryMiB))
	}

	centres := []Shape{points[order[0]].Shape}
	for len(centres) < k {
		best, bestD := -1, -1.0
		for _, i := range order {
			d := nearestDistance(points[i].Shape, centres, memScale)
			if d > bestD {
				best, bestD = i, d
			}
		}
		if bestD <= 0 {
			break // fewer distinct positions than k
		}
		centres = append(centres, points[best].Shape)
	}

	for i := range class {
		class[i] = -1
	}
	for it := 0; it < maxIterations; it++ {
		changed := false
		for i, p := range points {
			c := nearest(p.Shape, centres, memScale)
			if c != class[i] {
				class[i], changed = c, true
			}
		}
		if !changed {
			break
		}
		for c := range centres {
			if centre, ok := centreOf(points, class, c); ok {
				centres[c] = centre
			}
		}
	}
	return class, len(centres)
}

func nearest(s Shape, centres []Shape, memScale float64) int {
	best, bestD := 0, distance(s, centres[0], memScale)
	for c := 1; c < len(centres); c++ {
		if d := distance(s, centres[c], memScale); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func nearestDistance(s Shape, centres []Shape, memScale float64) float64 {
	return distance(s, centres[nearest(s, centres, memScale)], memScale)
}

// centreOf is the L1 centre of class c: the weighted median memory and the
// most frequent model (ties to the lexically first).
func centreOf(points []weighted, class []int, c int) (Shape, bool) {
	var members []weighted
	models := map[string]int{}
	total := 0
	for i, p := range points {
		if class[i] == c {
			members = append(members, p)
			models[p.Model] += p.Count
			total += p.Count
		}
	}
	if len(members) == 0 {
		return Shape{}, false
	}
	slices.SortFunc(members, func(a, b weighted) int { return cmp.Compare(a.MemoryMiB, b.MemoryMiB) })
	var centre Shape
	seen := 0
	for _, m := range members {
		seen += m.Count
		if 2*seen >= total {
			centre.MemoryMiB = m.MemoryMiB
			break
		}
	}
	bestN := -1
	for m, n := range models {
		if n > bestN || (n == bestN && m < centre.Model) {
			centre.Model, bestN = m, n
		}
	}
	return centre, true
}
