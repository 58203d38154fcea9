package profiler

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Protocols a Target speaks.
const (
	// ProtocolHTTP POSTs the request body to the target's path.
	ProtocolHTTP = "http"
	// ProtocolKServeV2 is the KServe v2 / Triton inference protocol: POST
	// /v2/models/MODEL/infer, ready once GET /v2/models/MODEL/ready
	// answers 200.
	ProtocolKServeV2 = "kserve-v2"
)

// Target is the model server instance a profile measures.
type Target struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8000" (a
	// `kubectl port-forward` to the pod).
	URL string
	// Protocol is ProtocolHTTP or ProtocolKServeV2.
	Protocol string
	// Path is ProtocolHTTP's inference path, e.g. "/infer".
	Path string
	// ReadyPath is ProtocolHTTP's readiness path ("" : none checked).
	ReadyPath string
	// Model is ProtocolKServeV2's model name.
	Model string
	// Body is one request's body (one input, batch 1): JSON with inputs
	// for ProtocolKServeV2, whatever the server takes for ProtocolHTTP.
	Body []byte
	// ContentType is the body's media type ("" : application/json).
	ContentType string
	// Client sends the requests (nil: a client sized for the load).
	Client *http.Client
}

// inferURL and readyURL are where the target's requests go.
func (t *Target) inferURL() string {
	base := strings.TrimSuffix(t.URL, "/")
	if t.Protocol == ProtocolKServeV2 {
		return base + "/v2/models/" + url.PathEscape(t.Model) + "/infer"
	}
	return base + "/" + strings.TrimPrefix(t.Path, "/")
}

func (t *Target) readyURL() string {
	base := strings.TrimSuffix(t.URL, "/")
	switch {
	case t.Protocol == ProtocolKServeV2:
		return base + "/v2/models/" + url.PathEscape(t.Model) + "/ready"
	case t.ReadyPath != "":
		return base + "/" + strings.TrimPrefix(t.ReadyPath, "/")
	}
	return ""
}

// Validate returns an error naming the first field a Target cannot be
// measured with.
func (t *Target) Validate() error {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want http://HOST:PORT or https://HOST:PORT", t.URL)
	}
	switch t.Protocol {
	case ProtocolHTTP:
		if t.Path == "" {
			return errors.New("protocol http needs the inference path (--path)")
		}
	case ProtocolKServeV2:
		if t.Model == "" {
			return errors.New("protocol kserve-v2 needs the model name (--model)")
		}
		if len(bytes.TrimSpace(t.Body)) == 0 {
			return errors.New("protocol kserve-v2 needs a request body with the model's inputs (--request-file)")
		}
	default:
		return fmt.Errorf("protocol %q: want %s or %s", t.Protocol, ProtocolHTTP, ProtocolKServeV2)
	}
	return nil
}

// ready returns nil once the target's readiness endpoint answers 200
// (at once when it has none), or an error when ctx ends first.
func (t *Target) ready(ctx context.Context) error {
	u := t.readyURL()
	if u == "" {
		return nil
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err
		}
		resp, err := t.Client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, nil
			}
			err = fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		last = err
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("target not ready: %w", cmp.Or(last, err))
	}
	return nil
}

// send makes one request and returns nil for a 2xx answer, read to its end.
func (t *Target) send(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.inferURL(), bytes.NewReader(t.Body))
	if err != nil {
		return err
	}
	ct := t.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := t.Client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", t.inferURL(), resp.Status)
	}
	return err
}
