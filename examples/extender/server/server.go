// Package server is an example scheduler extender: the HTTP side of
// kube-scheduler's extender protocol, with a policy a platform team might
// run. It is used by examples/extender (a binary) and by the conformance
// suite, which puts the same extender behind minisched and kube-scheduler.
//
// The policy reads node annotations and labels:
//
//   - filter: a node annotated extender.example.com/maintenance fails with
//     "node(s) in maintenance" (preemption may still pick it: the reason is
//     Unschedulable); one annotated extender.example.com/retired fails with
//     "node(s) retired", UnschedulableAndUnresolvable.
//   - prioritize: a node scores the value of its label
//     extender.example.com/preference (0–10; missing or invalid: 0).
//   - bind: binds through the apiserver and records itself in the pod's
//     annotation extender.example.com/bound-by.
//   - preempt: keeps every candidate except nodes annotated
//     extender.example.com/no-preemption, with the victims proposed.
//
// Requests are the k8s.io/kube-scheduler/extender/v1 types as JSON. Nodes
// come in full, or by name when the scheduler is configured with
// nodeCacheCapable: true; then the extender looks them up itself.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// The annotations and labels the policy reads and writes.
const (
	MaintenanceAnnotation  = "extender.example.com/maintenance"
	RetiredAnnotation      = "extender.example.com/retired"
	NoPreemptionAnnotation = "extender.example.com/no-preemption"
	PreferenceLabel        = "extender.example.com/preference"
	BoundByAnnotation      = "extender.example.com/bound-by"
)

// The filter's reasons: short, so FailedScheduling can count them.
const (
	ReasonMaintenance = "node(s) in maintenance"
	ReasonRetired     = "node(s) retired"
)

// Name is what the extender writes in BoundByAnnotation.
const Name = "example-extender"

// NodeGetter finds a node by name: an informer's lister in a real
// extender (its "node cache"), or the apiserver itself (ClientNodes).
type NodeGetter interface {
	Get(name string) (*v1.Node, error)
}

// ClientNodes looks nodes up on the apiserver.
type ClientNodes struct{ Client kubernetes.Interface }

// Get returns the node from the apiserver.
func (c ClientNodes) Get(name string) (*v1.Node, error) {
	return c.Client.CoreV1().Nodes().Get(context.TODO(), name, metav1.GetOptions{})
}

// Server serves the verbs filter, prioritize, bind and preempt under its
// root (so a scheduler's urlPrefix is the server's URL).
type Server struct {
	client kubernetes.Interface
	nodes  NodeGetter
	mux    *http.ServeMux
}

// New returns a Server that binds with client and looks nodes up in nodes.
func New(client kubernetes.Interface, nodes NodeGetter) *Server {
	s := &Server{client: client, nodes: nodes, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /filter", handle(s.filter))
	s.mux.HandleFunc("POST /prioritize", handle(s.prioritize))
	s.mux.HandleFunc("POST /bind", handle(s.bind))
	s.mux.HandleFunc("POST /preempt", handle(s.preempt))
	return s
}

// ServeHTTP serves the four verbs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handle decodes a request of type Req, calls fn, and encodes its answer;
// a request that does not decode is a 400, an error of fn a 500.
func handle[Req, Resp any](fn func(*Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := fn(&req)
		if err != nil {
			klog.ErrorS(err, "Extender request failed", "path", r.URL.Path)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(resp); err != nil {
			klog.ErrorS(err, "Writing the extender's answer", "path", r.URL.Path)
		}
	}
}

// nodesOf returns the nodes of a filter or prioritize request: in full, or
// looked up by name.
func (s *Server) nodesOf(args *extenderv1.ExtenderArgs) ([]*v1.Node, error) {
	if args.Nodes != nil {
		out := make([]*v1.Node, len(args.Nodes.Items))
		for i := range args.Nodes.Items {
			out[i] = &args.Nodes.Items[i]
		}
		return out, nil
	}
	if args.NodeNames == nil {
		return nil, nil
	}
	out := make([]*v1.Node, 0, len(*args.NodeNames))
	for _, name := range *args.NodeNames {
		n, err := s.nodes.Get(name)
		if err != nil {
			return nil, fmt.Errorf("looking up node %q: %w", name, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// filter keeps the nodes neither in maintenance nor retired, answering in
// the form it was asked in (names for names, nodes for nodes).
func (s *Server) filter(args *extenderv1.ExtenderArgs) (*extenderv1.ExtenderFilterResult, error) {
	nodes, err := s.nodesOf(args)
	if err != nil {
		return &extenderv1.ExtenderFilterResult{Error: err.Error()}, nil
	}
	result := &extenderv1.ExtenderFilterResult{
		FailedNodes:                extenderv1.FailedNodesMap{},
		FailedAndUnresolvableNodes: extenderv1.FailedNodesMap{},
	}
	names := []string{}
	list := &v1.NodeList{}
	for _, n := range nodes {
		switch {
		case has(n.Annotations, RetiredAnnotation):
			result.FailedAndUnresolvableNodes[n.Name] = ReasonRetired
		case has(n.Annotations, MaintenanceAnnotation):
			result.FailedNodes[n.Name] = ReasonMaintenance
		default:
			names = append(names, n.Name)
			list.Items = append(list.Items, *n)
		}
	}
	if args.Nodes != nil {
		result.Nodes = list
	} else {
		result.NodeNames = &names
	}
	klog.V(2).InfoS("Filtered", "pod", klog.KObj(args.Pod), "passed", len(names),
		"failed", len(result.FailedNodes), "unresolvable", len(result.FailedAndUnresolvableNodes))
	return result, nil
}

// prioritize scores each node by its preference label.
func (s *Server) prioritize(args *extenderv1.ExtenderArgs) (*extenderv1.HostPriorityList, error) {
	nodes, err := s.nodesOf(args)
	if err != nil {
		return nil, err
	}
	list := make(extenderv1.HostPriorityList, 0, len(nodes))
	for _, n := range nodes {
		score, err := strconv.ParseInt(n.Labels[PreferenceLabel], 10, 64)
		if err != nil || score < 0 || score > extenderv1.MaxExtenderPriority {
			score = 0
		}
		list = append(list, extenderv1.HostPriority{Host: n.Name, Score: score})
	}
	return &list, nil
}

// bind writes the Binding, with the annotation saying who bound the pod
// (the apiserver copies a Binding's annotations to the pod).
func (s *Server) bind(args *extenderv1.ExtenderBindingArgs) (*extenderv1.ExtenderBindingResult, error) {
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID,
			Annotations: map[string]string{BoundByAnnotation: Name}},
		Target: v1.ObjectReference{Kind: "Node", Name: args.Node},
	}
	err := s.client.CoreV1().Pods(args.PodNamespace).Bind(context.TODO(), b, metav1.CreateOptions{})
	if err != nil {
		return &extenderv1.ExtenderBindingResult{Error: err.Error()}, nil
	}
	klog.V(2).InfoS("Bound", "pod", klog.KRef(args.PodNamespace, args.PodName), "node", args.Node)
	return &extenderv1.ExtenderBindingResult{}, nil
}

// preempt drops the candidates on protected nodes and keeps the rest with
// the victims proposed, always answering with victims by UID.
func (s *Server) preempt(args *extenderv1.ExtenderPreemptionArgs) (*extenderv1.ExtenderPreemptionResult, error) {
	proposed := args.NodeNameToMetaVictims
	if proposed == nil {
		proposed = map[string]*extenderv1.MetaVictims{}
		for node, victims := range args.NodeNameToVictims {
			meta := &extenderv1.MetaVictims{NumPDBViolations: victims.NumPDBViolations}
			for _, p := range victims.Pods {
				meta.Pods = append(meta.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
			}
			proposed[node] = meta
		}
	}
	result := &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
	for node, victims := range proposed {
		n, err := s.nodes.Get(node)
		if err != nil {
			return nil, fmt.Errorf("looking up node %q: %w", node, err)
		}
		if has(n.Annotations, NoPreemptionAnnotation) {
			klog.V(2).InfoS("Refused preemption", "pod", klog.KObj(args.Pod), "node", node)
			continue
		}
		result.NodeNameToMetaVictims[node] = victims
	}
	return result, nil
}

func has(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}
