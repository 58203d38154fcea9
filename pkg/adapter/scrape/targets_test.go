package scrape

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
)

func TestTargetForPod(t *testing.T) {
	base := func() *adaptertest.PodBuilder {
		return adaptertest.NewPod("ml", "p").IP("127.1.0.2").Node("n1").Scrape(9090)
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		url  string // "" means not a target
	}{
		{"default path", base().Obj(), "http://127.1.0.2:9090/metrics"},
		{"path", base().Annotate(adapter.AnnotationPath, "/stats/prometheus").Obj(), "http://127.1.0.2:9090/stats/prometheus"},
		{"path without slash", base().Annotate(adapter.AnnotationPath, "m").Obj(), "http://127.1.0.2:9090/m"},
		{"path with query", base().Annotate(adapter.AnnotationPath, "/m?x=1").Obj(), "http://127.1.0.2:9090/m?x=1"},
		{"ipv6", base().IP("::1").Obj(), "http://[::1]:9090/metrics"},
		{"pending", base().Phase(corev1.PodPending).Obj(), ""},
		{"no ip", base().IP("").Obj(), ""},
		{"bad ip", base().IP("not-an-ip").Obj(), ""},
		{"scrape false", base().Annotate(adapter.AnnotationScrape, "false").Obj(), ""},
		{"no port", adaptertest.NewPod("ml", "p").IP("127.1.0.2").Annotate(adapter.AnnotationScrape, "true").Obj(), ""},
		{"bad port", base().Annotate(adapter.AnnotationPort, "http").Obj(), ""},
		{"port 0", base().Annotate(adapter.AnnotationPort, "0").Obj(), ""},
		{"port too big", base().Annotate(adapter.AnnotationPort, "70000").Obj(), ""},
		{"absolute path", base().Annotate(adapter.AnnotationPath, "//evil.example/x").Obj(), ""},
		{"nil", nil, ""},
	} {
		tg, ok := TargetForPod(tc.pod)
		if ok != (tc.url != "") || tg.URL != tc.url {
			t.Errorf("%s: got %q ok=%v, want %q", tc.name, tg.URL, ok, tc.url)
		}
		if ok && (tg.Pod != adaptertest.NN("ml", "p") || tg.Node != "n1") {
			t.Errorf("%s: target %+v", tc.name, tg)
		}
	}

	pods, _ := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("b", "x").IP("127.0.0.3").Scrape(1).Obj(),
		adaptertest.NewPod("a", "y").IP("127.0.0.2").Scrape(2).Obj(),
		adaptertest.NewPod("a", "z").IP("127.0.0.4").Obj(),
	}, nil)
	ts, err := PodTargetLister(pods, DCGMExporters{})()
	if err != nil || len(ts) != 2 || ts[0].Pod != adaptertest.NN("a", "y") || ts[1].Pod != adaptertest.NN("b", "x") {
		t.Fatalf("PodTargetLister: %v, %v", ts, err)
	}
}
