//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rateAt is a load profile: requests/s at t seconds from the start.
type rateAt func(t float64) float64

// loadResult is what the load generator saw.
type loadResult struct {
	Sent, OK, Failed int64
	// WithinRTMax counts 200 answers within RT_max, measured by the client.
	WithinRTMax int64
	// ServerWithinRTMax counts those the server answered within RT_max of
	// the request's arrival (what its Istio sidecar measures).
	ServerWithinRTMax int64
	// ByPod counts answers per pod.
	ByPod map[string]int64
	// FirstErrors are up to five failures, for the log.
	FirstErrors []string
}

// Attainment is the share of requests sent that were answered within
// RT_max (a failed request counts as missed).
func (r loadResult) Attainment() float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.WithinRTMax) / float64(r.Sent)
}

// readyPods lists, every 250 ms, the pods of selector that are Ready and
// not terminating: the endpoints a Service (or Istio's subsets) would send
// to. Readiness gates traffic here as it does there.
type readyPods struct {
	mu   sync.Mutex
	ips  []string
	next atomic.Uint64
}

func (r *readyPods) watch(ctx context.Context, c kubernetes.Interface, ns, selector string) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			var ips []string
			for _, p := range l.Items {
				if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
					ips = append(ips, p.Status.PodIP)
				}
			}
			sort.Strings(ips)
			r.mu.Lock()
			r.ips = ips
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pick returns the next Ready pod's IP, round robin.
func (r *readyPods) pick() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ips) == 0 {
		return "", false
	}
	return r.ips[r.next.Add(1)%uint64(len(r.ips))], true
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// generateLoad sends /infer requests at rate(t) for duration, evenly spaced
// within each 100 ms, each to the next Ready pod, and counts answers within
// rtMaxMs. A request with no Ready pod, a connection error or a non-200
// answer fails.
func generateLoad(ctx context.Context, pods *readyPods, rate rateAt, duration time.Duration, rtMaxMs float64) loadResult {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 256, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	var (
		mu  sync.Mutex
		res = loadResult{ByPod: map[string]int64{}}
		wg  sync.WaitGroup
	)
	fail := func(msg string) {
		mu.Lock()
		res.Failed++
		if len(res.FirstErrors) < 5 {
			res.FirstErrors = append(res.FirstErrors, msg)
		}
		mu.Unlock()
	}
	start := time.Now()
	const step = 100 * time.Millisecond
	owed := 0.0
	for at := time.Duration(0); at < duration; at += step {
		if d := time.Until(start.Add(at)); d > 0 {
			select {
			case <-ctx.Done():
				return res
			case <-time.After(d):
			}
		}
		owed += rate(at.Seconds()) * step.Seconds()
		n := int(math.Floor(owed))
		owed -= float64(n)
		for i := 0; i < n; i++ {
			ip, ok := pods.pick()
			res.Sent++
			if !ok {
				fail("no Ready pod")
				continue
			}
			wg.Add(1)
			go func(ip string, delay time.Duration) {
				defer wg.Done()
				time.Sleep(delay)
				t0 := time.Now()
				resp, err := client.Post("http://"+net.JoinHostPort(ip, "8080")+"/infer", "text/plain", nil)
				if err != nil {
					fail(err.Error())
					return
				}
				defer resp.Body.Close()
				var inf struct {
					Pod       string
					LatencyMs float64
				}
				if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&inf) != nil {
					fail(fmt.Sprintf("%s: HTTP %d", ip, resp.StatusCode))
					return
				}
				ms := float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				res.OK++
				res.ByPod[inf.Pod]++
				if ms <= rtMaxMs {
					res.WithinRTMax++
				}
				if inf.LatencyMs <= rtMaxMs {
					res.ServerWithinRTMax++
				}
				mu.Unlock()
			}(ip, time.Duration(i)*step/time.Duration(n))
		}
	}
	wg.Wait()
	return res
}
