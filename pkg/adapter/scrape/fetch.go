package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

// acceptHeader asks for the Prometheus text format (0.0.4), as Prometheus
// 2.x does when it does not negotiate protobuf.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// fetch GETs url and decodes it into samples; samples without a timestamp
// get start. It returns the scrape result label and an error for anything
// but success.
func (s *Scraper) fetch(ctx context.Context, url string, start time.Time) (samples model.Vector, result string, err error) {
	defer func() {
		if r := recover(); r != nil {
			samples, result, err = nil, selfmetrics.ScrapeParseError, fmt.Errorf("panic while parsing: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, selfmetrics.ScrapeError, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", "hetsev-metrics-adapter")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.opts.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, transportResult(ctx, err), err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, selfmetrics.ScrapeHTTPError, fmt.Errorf("HTTP status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, transportResult(ctx, err), err
	}
	if int64(len(body)) > s.opts.MaxBodyBytes {
		return nil, selfmetrics.ScrapeTooLarge, fmt.Errorf("body larger than %d bytes", s.opts.MaxBodyBytes)
	}
	samples, err = decodeSamples(body, expfmt.ResponseFormat(resp.Header), start)
	if err != nil {
		return nil, selfmetrics.ScrapeParseError, err
	}
	return samples, selfmetrics.ScrapeSuccess, nil
}

func transportResult(ctx context.Context, err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return selfmetrics.ScrapeTimeout
	}
	return selfmetrics.ScrapeError
}
