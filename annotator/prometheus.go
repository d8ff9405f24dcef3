// This file asks Prometheus for one node's value of one metric, the way
// crane-scheduler's controller does.

package annotator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// MetricSource gives a node's current value of a metric as the annotation
// wants it: a fraction, formatted. Prometheus is the real one; tests may
// bring their own.
type MetricSource interface {
	NodeMetric(ctx context.Context, metric string, node *v1.Node) (string, error)
}

// QueryTimeout bounds one Prometheus query, as in crane-scheduler.
const QueryTimeout = 10 * time.Second

// Prometheus queries a Prometheus server's HTTP API (/api/v1/query).
type Prometheus struct {
	api promv1.API
}

var _ MetricSource = &Prometheus{}

// NewPrometheus returns a client for the server at address
// (http://host:9090).
func NewPrometheus(address string) (*Prometheus, error) {
	client, err := promapi.NewClient(promapi.Config{Address: address})
	if err != nil {
		return nil, fmt.Errorf("prometheus address %q: %w", address, err)
	}
	return &Prometheus{api: promv1.NewAPI(client)}, nil
}

// NodeMetric asks for metric's series whose instance label is the node, in
// crane-scheduler's order, and returns the first answer:
//
//	<metric>{instance=~"<InternalIP>"} / 100
//	<metric>{instance=~"<InternalIP>:.+"} / 100   (the instance is an exporter's host:port)
//	<metric>{instance=~"<node name>"} / 100
//
// A node without an InternalIP is looked up by name in the first two
// queries too. Dividing by 100 is crane's: its recording rules give
// percentages, the annotations hold fractions. Special characters in the
// address or name are escaped, so "10.0.0.1" matches only itself.
func (p *Prometheus) NodeMetric(ctx context.Context, metric string, node *v1.Node) (string, error) {
	ip := internalIP(node)
	selectors := []string{
		regexp.QuoteMeta(ip),
		regexp.QuoteMeta(ip) + ":.+",
		regexp.QuoteMeta(node.Name),
	}
	var errs []error
	for _, sel := range selectors {
		query := fmt.Sprintf("%s{instance=~%s} / 100", metric, strconv.Quote(sel))
		value, err := p.query(ctx, query)
		switch {
		case err != nil:
			errs = append(errs, err)
		case value != "":
			return value, nil
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("no value of %s for node %s (InternalIP %s): %w", metric, node.Name, ip, errors.Join(errs...))
	}
	return "", fmt.Errorf("no value of %s for node %s (InternalIP %s): no series matched", metric, node.Name, ip)
}

// query runs an instant query and returns the value of its (last) sample,
// with five decimals; "" when no series matched. Negative and NaN values
// become 0, warnings are errors, as in crane-scheduler.
func (p *Prometheus) query(ctx context.Context, query string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	klog.FromContext(ctx).V(4).Info("Querying Prometheus", "query", query)
	result, warnings, err := p.api.Query(ctx, query, time.Now())
	if err != nil {
		return "", fmt.Errorf("query %q: %w", query, err)
	}
	if len(warnings) > 0 {
		return "", fmt.Errorf("query %q: warnings %v", query, warnings)
	}
	vector, ok := result.(model.Vector)
	if !ok {
		return "", fmt.Errorf("query %q: result is a %s, want a vector", query, result.Type())
	}
	value := ""
	for _, sample := range vector {
		v := float64(sample.Value)
		if v < 0 || math.IsNaN(v) {
			v = 0
		}
		value = strconv.FormatFloat(v, 'f', 5, 64)
	}
	return value, nil
}

// internalIP is the node's InternalIP address, or its name if it has none.
func internalIP(node *v1.Node) string {
	for _, addr := range node.Status.Addresses {
		if addr.Type == v1.NodeInternalIP {
			return addr.Address
		}
	}
	return node.Name
}
