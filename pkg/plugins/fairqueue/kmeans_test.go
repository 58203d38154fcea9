package fairqueue

import "testing"

// TestClusterByHand works k-means (L1, k = 3) on five shapes. memScale is
// 10240 MiB. Seeding: resnet50/2048 (10 pods, the most frequent) first;
// the farthest from it is ssd/10240 (8192/10240 + 1 = 1.8); then bert/6144
// (min(4096/10240 + 1, 4096/10240 + 1) = 1.4, against bert/6200's 1.395).
// resnet50/2100 joins resnet50/2048 (0.005) and bert/6200 joins bert/6144.
func TestClusterByHand(t *testing.T) {
	points := []weighted{
		{Shape{"bert", 6200}, 1},
		{Shape{"resnet50", 2048}, 10},
		{Shape{"ssd", 10240}, 5},
		{Shape{"resnet50", 2100}, 1},
		{Shape{"bert", 6144}, 2},
	}
	class, n := cluster(points, 3)
	if n != 3 {
		t.Fatalf("%d classes, want 3", n)
	}
	want := []int{2, 0, 1, 0, 2} // classes in seeding order
	for i := range points {
		if class[i] != want[i] {
			t.Errorf("%v in class %d, want %d", points[i].Shape, class[i], want[i])
		}
	}
	// k = 1: one class; k >= points: one class each, the most frequent first.
	if class, n := cluster(points, 1); n != 1 || class[0] != 0 || class[2] != 0 {
		t.Errorf("k=1: %v %d", class, n)
	}
	if class, n := cluster(points, 8); n != 5 || class[1] != 0 || class[2] != 1 {
		t.Errorf("k=8: %v %d, want resnet50/2048 first and ssd second", class, n)
	}
}

// TestClusterMemoryOnly: one model, memories 1, 2, 9, 10 and 30 GiB (in
// MiB), k = 2. memScale = 30720. Seeds: 1 GiB (most pods), then 30 GiB.
// First assignment: 1, 2, 9 GiB to the first centre (9 GiB is 8192 from 1
// GiB and 21504 from 30 GiB), 10 GiB too (9216 < 20480); the centres move to
// the weighted median (2 GiB) and 30 GiB, and nothing changes after.
func TestClusterMemoryOnly(t *testing.T) {
	points := []weighted{
		{Shape{"m", 1024}, 4}, {Shape{"m", 2048}, 3}, {Shape{"m", 9216}, 1}, {Shape{"m", 10240}, 1}, {Shape{"m", 30720}, 2},
	}
	class, n := cluster(points, 2)
	if n != 2 {
		t.Fatalf("%d classes", n)
	}
	for i, want := range []int{0, 0, 0, 0, 1} {
		if class[i] != want {
			t.Errorf("%v in class %d, want %d", points[i].Shape, class[i], want)
		}
	}
	if c, _ := centreOf(points, class, 0); c != (Shape{"m", 2048}) {
		t.Errorf("centre %v, want the weighted median m/2048", c)
	}
}
