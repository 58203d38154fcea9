package kubectlhetsev

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// involvedNameField selects events by the name of their object (a field
// selector the API server serves for core/v1 Events).
const involvedNameField = "involvedObject.name"

// maxEvents bounds the events an explanation lists, newest first.
const maxEvents = 10

// EventSummary is one Event about an object.
type EventSummary struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	From    string    `json:"from,omitempty"`
	Count   int32     `json:"count,omitempty"`
	Last    time.Time `json:"last"`
	Message string    `json:"message"`
}

// eventsOf lists the Events about the object kind namespace/name (and uid,
// when the event names one), newest first, at most maxEvents. A user who
// may not list events gets a note instead.
func eventsOf(ctx context.Context, c client.Reader, kind, namespace, name string, uid types.UID) ([]EventSummary, string, error) {
	var list v1.EventList
	err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{involvedNameField: name})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Sprintf("may not list events in namespace %s: events not shown", namespace), nil
	}
	if err != nil {
		return nil, "", apiError(err, "list", "events", "", "")
	}
	var out []EventSummary
	for _, e := range list.Items {
		io := e.InvolvedObject
		if io.Kind != kind || io.Name != name || (io.UID != "" && uid != "" && io.UID != uid) {
			continue
		}
		count := e.Count
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, EventSummary{
			Type: e.Type, Reason: e.Reason, From: cmp.Or(e.ReportingController, e.Source.Component),
			Count: count, Last: eventTime(&e), Message: e.Message,
		})
	}
	slices.SortStableFunc(out, func(a, b EventSummary) int { return b.Last.Compare(a.Last) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out, "", nil
}

// eventTime is when the event was last seen, from whichever of the
// core/v1 and events.k8s.io/v1 time fields its recorder set.
func eventTime(e *v1.Event) time.Time {
	var t time.Time
	for _, c := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}
