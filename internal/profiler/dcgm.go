package profiler

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// GPUSelector names the GPU whose memory a profile reads from
// dcgm-exporter. Each field set must match the series' label; with none
// set, the exporter must show exactly one GPU.
type GPUSelector struct {
	// UUID is the GPU's UUID label ("GPU-...").
	UUID string
	// Node is the Hostname label (the node's name).
	Node string
	// Index is the gpu label, the GPU's index on its node ("" : any).
	Index string
}

func (s GPUSelector) String() string {
	var parts []string
	for _, kv := range [][2]string{{adapter.LabelDCGMUUID, s.UUID}, {adapter.LabelDCGMHostname, s.Node}, {adapter.LabelDCGMGPU, s.Index}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(parts) == 0 {
		return "the only GPU"
	}
	return strings.Join(parts, ",")
}

// FBUsedMiB scrapes dcgm-exporter's metrics at url once and returns the
// selected GPU's DCGM_FI_DEV_FB_USED, MiB. It returns an error when the
// scrape fails, when no series matches, or when several do.
func FBUsedMiB(ctx context.Context, client *http.Client, url string, sel GPUSelector) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	fam, ok := families[adapter.SeriesDCGMFBUsed]
	if !ok {
		return 0, fmt.Errorf("GET %s: no %s series", url, adapter.SeriesDCGMFBUsed)
	}
	var found []*dto.Metric
	var seen []string
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		seen = append(seen, GPUSelector{UUID: labels[adapter.LabelDCGMUUID], Node: labels[adapter.LabelDCGMHostname], Index: labels[adapter.LabelDCGMGPU]}.String())
		if (sel.UUID == "" || labels[adapter.LabelDCGMUUID] == sel.UUID) &&
			(sel.Node == "" || labels[adapter.LabelDCGMHostname] == sel.Node) &&
			(sel.Index == "" || labels[adapter.LabelDCGMGPU] == sel.Index) {
			found = append(found, m)
		}
	}
	slices.Sort(seen)
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("%s: no %s series of %s among %s", url, adapter.SeriesDCGMFBUsed, sel, strings.Join(seen, "; "))
	case 1:
		return found[0].GetGauge().GetValue(), nil
	}
	return 0, fmt.Errorf("%s: %d GPUs match %s (%s): name the GPU", url, len(found), sel, strings.Join(seen, "; "))
}

// DCGMSampler keeps the peak of a GPU's DCGM_FI_DEV_FB_USED over the
// scrapes it makes until stopped.
type DCGMSampler struct {
	mu     sync.Mutex
	peak   float64
	n      int
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

// SampleDCGM scrapes url every interval until Stop, keeping the selected
// GPU's peak. The first scrape happens before it returns, and its error
// is returned: a wrong URL or selector fails before any load is sent.
func SampleDCGM(ctx context.Context, client *http.Client, url string, sel GPUSelector, interval time.Duration) (*DCGMSampler, error) {
	v, err := FBUsedMiB(ctx, client, url, sel)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &DCGMSampler{peak: v, n: 1, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			v, err := FBUsedMiB(ctx, client, url, sel)
			s.mu.Lock()
			if err == nil {
				s.peak, s.n = max(s.peak, v), s.n+1
			} else if ctx.Err() == nil {
				s.err = err
			}
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// Stop ends the sampling and returns the peak, MiB, the number of
// scrapes it was taken over, and the last scrape error (nil when none).
func (s *DCGMSampler) Stop() (peakMiB float64, scrapes int, err error) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.n, s.err
}
