package minisched

// HTTPExtender speaks kube-scheduler's extender protocol: each verb is a
// POST of JSON to <urlPrefix>/<verb>, in the k8s.io/kube-scheduler/extender/v1
// types. Those types have no JSON tags, so their Go field names are the
// keys ({"Pod": ..., "Nodes": ..., "NodeNames": ...}).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/minisched/minisched/minisched/framework"
)

// DefaultExtenderTimeout bounds each call to an extender whose
// configuration gives no httpTimeout.
const DefaultExtenderTimeout = 5 * time.Second

// HTTPExtender is a framework.Extender reached over HTTP(S).
type HTTPExtender struct {
	urlPrefix                                         string
	filterVerb, prioritizeVerb, preemptVerb, bindVerb string
	weight                                            int64
	// nodeCacheCapable extenders keep their own node cache: they are sent
	// node names, not whole nodes.
	nodeCacheCapable bool
	managedResources sets.Set[string]
	ignorable        bool
	client           *http.Client
}

var _ framework.Extender = &HTTPExtender{}

// NewHTTPExtender returns the extender a configuration entry describes.
// With enableHTTPS and no CA, the server's certificate is not verified,
// as in kube-scheduler.
func NewHTTPExtender(cfg *configv1.Extender) (*HTTPExtender, error) {
	transport, err := extenderTransport(cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.HTTPTimeout.Duration
	if timeout == 0 {
		timeout = DefaultExtenderTimeout
	}
	managed := sets.New[string]()
	for _, r := range cfg.ManagedResources {
		managed.Insert(r.Name)
	}
	return &HTTPExtender{
		urlPrefix:        cfg.URLPrefix,
		filterVerb:       cfg.FilterVerb,
		prioritizeVerb:   cfg.PrioritizeVerb,
		preemptVerb:      cfg.PreemptVerb,
		bindVerb:         cfg.BindVerb,
		weight:           cfg.Weight,
		nodeCacheCapable: cfg.NodeCacheCapable,
		managedResources: managed,
		ignorable:        cfg.Ignorable,
		client:           &http.Client{Transport: transport, Timeout: timeout},
	}, nil
}

// extenderTransport builds the HTTP transport from tlsConfig with
// client-go's TLS helpers.
func extenderTransport(cfg *configv1.Extender) (http.RoundTripper, error) {
	var rc rest.Config
	if t := cfg.TLSConfig; t != nil {
		rc.TLSClientConfig = rest.TLSClientConfig{
			Insecure: t.Insecure, ServerName: t.ServerName,
			CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile,
			CertData: t.CertData, KeyData: t.KeyData, CAData: t.CAData,
		}
	}
	if cfg.EnableHTTPS && rc.CAFile == "" && len(rc.CAData) == 0 {
		rc.Insecure = true
	}
	tlsConfig, err := rest.TLSConfigFor(&rc)
	if err != nil {
		return nil, err
	}
	return utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig}), nil
}

// Name returns the URL prefix, which identifies the extender.
func (h *HTTPExtender) Name() string { return h.urlPrefix }

// IsIgnorable reports the ignorable setting.
func (h *HTTPExtender) IsIgnorable() bool { return h.ignorable }

// IsFilter reports whether filterVerb is set.
func (h *HTTPExtender) IsFilter() bool { return h.filterVerb != "" }

// IsPrioritizer reports whether prioritizeVerb is set.
func (h *HTTPExtender) IsPrioritizer() bool { return h.prioritizeVerb != "" }

// IsBinder reports whether bindVerb is set.
func (h *HTTPExtender) IsBinder() bool { return h.bindVerb != "" }

// SupportsPreemption reports whether preemptVerb is set.
func (h *HTTPExtender) SupportsPreemption() bool { return h.preemptVerb != "" }

// IsInterested is true without managed resources, and otherwise when a
// container or init container requests or limits one of them.
func (h *HTTPExtender) IsInterested(pod *v1.Pod) bool {
	if h.managedResources.Len() == 0 {
		return true
	}
	return h.usesManaged(pod.Spec.Containers) || h.usesManaged(pod.Spec.InitContainers)
}

func (h *HTTPExtender) usesManaged(containers []v1.Container) bool {
	for i := range containers {
		for name := range containers[i].Resources.Requests {
			if h.managedResources.Has(string(name)) {
				return true
			}
		}
		for name := range containers[i].Resources.Limits {
			if h.managedResources.Has(string(name)) {
				return true
			}
		}
	}
	return false
}

// args is what Filter and Prioritize send: the pod, and the nodes in full
// or (nodeCacheCapable) by name.
func (h *HTTPExtender) args(pod *v1.Pod, nodes []*framework.NodeInfo) *extenderv1.ExtenderArgs {
	if h.nodeCacheCapable {
		names := make([]string, 0, len(nodes))
		for _, n := range nodes {
			names = append(names, n.Node().Name)
		}
		return &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}
	}
	list := &v1.NodeList{}
	for _, n := range nodes {
		list.Items = append(list.Items, *n.Node())
	}
	return &extenderv1.ExtenderArgs{Pod: pod, Nodes: list}
}

// Filter asks the extender which of nodes may take pod. A node-cache
// extender answers with names, which must come from nodes. Other extenders
// answer with whole nodes, and those come back as NodeInfos of the node
// alone, without its pods — as in kube-scheduler, where Score plugins
// then see such nodes empty.
func (h *HTTPExtender) Filter(pod *v1.Pod, nodes []*framework.NodeInfo) ([]*framework.NodeInfo,
	extenderv1.FailedNodesMap, extenderv1.FailedNodesMap, error) {
	if !h.IsFilter() {
		return nodes, extenderv1.FailedNodesMap{}, extenderv1.FailedNodesMap{}, nil
	}
	var result extenderv1.ExtenderFilterResult
	if err := h.send(h.filterVerb, h.args(pod, nodes), &result); err != nil {
		return nil, nil, nil, err
	}
	if result.Error != "" {
		return nil, nil, nil, errors.New(result.Error)
	}
	var passed []*framework.NodeInfo
	switch {
	case h.nodeCacheCapable && result.NodeNames != nil:
		byName := make(map[string]*framework.NodeInfo, len(nodes))
		for _, n := range nodes {
			byName[n.Node().Name] = n
		}
		passed = make([]*framework.NodeInfo, 0, len(*result.NodeNames))
		for _, name := range *result.NodeNames {
			n, ok := byName[name]
			if !ok {
				return nil, nil, nil, fmt.Errorf("extender %q claims a filtered node %q which is not found in the input node list",
					h.urlPrefix, name)
			}
			passed = append(passed, n)
		}
	case result.Nodes != nil:
		passed = make([]*framework.NodeInfo, 0, len(result.Nodes.Items))
		for i := range result.Nodes.Items {
			ni := framework.NewNodeInfo()
			ni.SetNode(&result.Nodes.Items[i])
			passed = append(passed, ni)
		}
	}
	return passed, result.FailedNodes, result.FailedAndUnresolvableNodes, nil
}

// Prioritize asks the extender to score nodes and returns its weight.
func (h *HTTPExtender) Prioritize(pod *v1.Pod, nodes []*framework.NodeInfo) (*extenderv1.HostPriorityList, int64, error) {
	if !h.IsPrioritizer() {
		list := make(extenderv1.HostPriorityList, 0, len(nodes))
		for _, n := range nodes {
			list = append(list, extenderv1.HostPriority{Host: n.Node().Name})
		}
		return &list, 0, nil
	}
	var result extenderv1.HostPriorityList
	if err := h.send(h.prioritizeVerb, h.args(pod, nodes), &result); err != nil {
		return nil, 0, err
	}
	return &result, h.weight, nil
}

// Bind asks the extender to bind the pod.
func (h *HTTPExtender) Bind(binding *v1.Binding) error {
	if !h.IsBinder() {
		return fmt.Errorf("extender %q has no bindVerb", h.urlPrefix)
	}
	req := &extenderv1.ExtenderBindingArgs{
		PodName: binding.Name, PodNamespace: binding.Namespace, PodUID: binding.UID, Node: binding.Target.Name,
	}
	var result extenderv1.ExtenderBindingResult
	if err := h.send(h.bindVerb, req, &result); err != nil {
		return err
	}
	if result.Error != "" {
		return errors.New(result.Error)
	}
	return nil
}

// ProcessPreemption sends the dry run's candidates (victims by UID when
// nodeCacheCapable) and turns the answer, always victims by UID, back into
// pods found on the candidate nodes.
func (h *HTTPExtender) ProcessPreemption(pod *v1.Pod, nodeNameToVictims map[string]*extenderv1.Victims,
	nodeInfos framework.NodeInfoLister) (map[string]*extenderv1.Victims, error) {
	if !h.SupportsPreemption() {
		return nil, fmt.Errorf("extender %q has no preemptVerb", h.urlPrefix)
	}
	args := &extenderv1.ExtenderPreemptionArgs{Pod: pod}
	if h.nodeCacheCapable {
		args.NodeNameToMetaVictims = toMetaVictims(nodeNameToVictims)
	} else {
		args.NodeNameToVictims = nodeNameToVictims
	}
	var result extenderv1.ExtenderPreemptionResult
	if err := h.send(h.preemptVerb, args, &result); err != nil {
		return nil, err
	}
	out := make(map[string]*extenderv1.Victims, len(result.NodeNameToMetaVictims))
	for nodeName, meta := range result.NodeNameToMetaVictims {
		nodeInfo, err := nodeInfos.Get(nodeName)
		if err != nil {
			return nil, err
		}
		victims := &extenderv1.Victims{Pods: []*v1.Pod{}, NumPDBViolations: meta.NumPDBViolations}
		for _, mp := range meta.Pods {
			p := podByUID(nodeInfo, mp.UID)
			if p == nil {
				return nil, fmt.Errorf("extender: %v claims to preempt pod (UID: %v) on node: %v, but the pod is not found on that node",
					h.urlPrefix, mp, nodeName)
			}
			victims.Pods = append(victims.Pods, p)
		}
		out[nodeName] = victims
	}
	return out, nil
}

func toMetaVictims(in map[string]*extenderv1.Victims) map[string]*extenderv1.MetaVictims {
	out := make(map[string]*extenderv1.MetaVictims, len(in))
	for node, victims := range in {
		meta := &extenderv1.MetaVictims{Pods: []*extenderv1.MetaPod{}, NumPDBViolations: victims.NumPDBViolations}
		for _, p := range victims.Pods {
			meta.Pods = append(meta.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
		}
		out[node] = meta
	}
	return out
}

func podByUID(nodeInfo *framework.NodeInfo, uid string) *v1.Pod {
	for _, pi := range nodeInfo.Pods {
		if string(pi.Pod.UID) == uid {
			return pi.Pod
		}
	}
	return nil
}

// send POSTs args as JSON to <urlPrefix>/<verb> and decodes the answer
// into result; anything but 200 OK is an error, and so is an answer that
// does not decode into result (the error names the verb and the URL, so
// that an extender answering garbage is easy to find).
func (h *HTTPExtender) send(verb string, args, result any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	url := strings.TrimRight(h.urlPrefix, "/") + "/" + verb
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed %v with extender at URL %v, code %v", verb, url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(result); err != nil {
		return fmt.Errorf("decoding the answer to %v from extender at URL %v: %w", verb, url, err)
	}
	return nil
}
