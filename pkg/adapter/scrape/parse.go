package scrape

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// decodeSamples parses a Prometheus exposition (text, or delimited protobuf
// when format says so) and returns the samples of the series the adapter
// reads; samples without a timestamp get start.
func decodeSamples(body []byte, format expfmt.Format, start time.Time) (model.Vector, error) {
	dec := &expfmt.SampleDecoder{
		Dec:  expfmt.NewDecoder(bytes.NewReader(body), format),
		Opts: &expfmt.DecodeOptions{Timestamp: model.TimeFromUnixNano(start.UnixNano())},
	}
	var samples model.Vector
	for {
		var v model.Vector
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return samples, nil
		}
		if err != nil {
			return nil, err
		}
		for _, smp := range v {
			if smp != nil && interesting(string(smp.Metric[model.MetricNameLabel])) {
				samples = append(samples, smp)
			}
		}
	}
}

func interesting(name string) bool {
	switch name {
	case adapter.SeriesIstioRequests, adapter.SeriesIstioDurationBucket, adapter.SeriesDCGMGPUUtil, adapter.SeriesDCGMFBUsed:
		return true
	}
	return false
}
