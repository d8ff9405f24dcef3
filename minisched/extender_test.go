package minisched

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
)

// recordingServer answers every verb with answer and records each request's
// path and body as a generic JSON map, so tests can check the wire keys.
func recordingServer(t *testing.T, status int, answer any) (*httptest.Server, *[]map[string]any, *[]string) {
	t.Helper()
	var bodies []map[string]any
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" || r.Method != http.MethodPost {
			t.Errorf("got %s with Content-Type %q, want a POST of application/json", r.Method, ct)
		}
		bodies, paths = append(bodies, m), append(paths, r.URL.Path)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies, &paths
}

func nodeInfos(nodes ...*v1.Node) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = framework.NewNodeInfo(st.MakePod().Name("running-" + n.Name).UID("u-" + n.Name).NodeName(n.Name).Obj())
		out[i].SetNode(n)
	}
	return out
}

func names(nodes []*framework.NodeInfo) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Node().Name)
	}
	return out
}

func TestHTTPExtenderFilter(t *testing.T) {
	nodes := nodeInfos(st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj(), st.MakeNode().Name("c").Obj())
	pod := st.MakePod().Name("p").Obj()
	tests := []struct {
		name             string
		nodeCacheCapable bool
		answer           extenderv1.ExtenderFilterResult
		wantKeys         []string // top-level keys of the request
		wantPassed       []string
		wantPods         bool // the passed NodeInfos still hold the nodes' pods
		wantFailed       extenderv1.FailedNodesMap
		wantErr          string
	}{
		{
			name: "whole nodes out, whole nodes back, as NodeInfos without their pods",
			answer: extenderv1.ExtenderFilterResult{
				Nodes:       &v1.NodeList{Items: []v1.Node{*nodes[0].Node(), *nodes[2].Node()}},
				FailedNodes: extenderv1.FailedNodesMap{"b": "node(s) in maintenance"},
			},
			wantKeys:   []string{"NodeNames", "Nodes", "Pod"},
			wantPassed: []string{"a", "c"},
			wantFailed: extenderv1.FailedNodesMap{"b": "node(s) in maintenance"},
		},
		{
			name:             "nodeCacheCapable: names out, names back, the same NodeInfos",
			nodeCacheCapable: true,
			answer:           extenderv1.ExtenderFilterResult{NodeNames: &[]string{"c"}},
			wantKeys:         []string{"NodeNames", "Nodes", "Pod"},
			wantPassed:       []string{"c"},
			wantPods:         true,
		},
		{
			name:             "a name that was not asked about is an error",
			nodeCacheCapable: true,
			answer:           extenderv1.ExtenderFilterResult{NodeNames: &[]string{"z"}},
			wantErr:          `claims a filtered node "z" which is not found in the input node list`,
		},
		{
			name:    "the answer's Error is the error",
			answer:  extenderv1.ExtenderFilterResult{Error: "out of service"},
			wantErr: "out of service",
		},
		{
			name:       "no nodes in the answer: none passed",
			answer:     extenderv1.ExtenderFilterResult{},
			wantPassed: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, bodies, paths := recordingServer(t, http.StatusOK, tt.answer)
			ext, err := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL + "/", FilterVerb: "filter",
				NodeCacheCapable: tt.nodeCacheCapable})
			if err != nil {
				t.Fatal(err)
			}
			passed, failed, _, err := ext.Filter(pod, nodes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPassed, names(passed)); diff != "" {
				t.Errorf("passed (-want +got):\n%s", diff)
			}
			for _, n := range passed {
				if got := len(n.Pods) > 0; got != tt.wantPods {
					t.Errorf("node %s has pods: %v, want %v", n.Node().Name, got, tt.wantPods)
				}
			}
			if diff := cmp.Diff(tt.wantFailed, failed, cmp.Comparer(func(a, b extenderv1.FailedNodesMap) bool {
				return len(a) == 0 && len(b) == 0 || cmp.Equal(map[string]string(a), map[string]string(b))
			})); diff != "" {
				t.Errorf("failed (-want +got):\n%s", diff)
			}
			if want := []string{"/filter"}; !cmp.Equal(want, *paths) {
				t.Errorf("paths = %v, want %v (the trailing slash of urlPrefix dropped)", *paths, want)
			}
			body := (*bodies)[0]
			keys := slices.Sorted(maps.Keys(body))
			if diff := cmp.Diff(tt.wantKeys, keys); tt.wantKeys != nil && diff != "" {
				t.Errorf("request keys (-want +got):\n%s", diff)
			}
			if tt.nodeCacheCapable {
				if body["Nodes"] != nil || len(body["NodeNames"].([]any)) != 3 {
					t.Errorf("nodeCacheCapable request = %v, want three NodeNames and no Nodes", body)
				}
			} else if body["NodeNames"] != nil || len(body["Nodes"].(map[string]any)["items"].([]any)) != 3 {
				t.Errorf("request = %v, want three whole Nodes and no NodeNames", body)
			}
		})
	}
}

func TestHTTPExtenderVerbs(t *testing.T) {
	nodes := nodeInfos(st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj())
	pod := st.MakePod().Name("p").Obj()
	t.Run("prioritize returns the scores and the weight", func(t *testing.T) {
		srv, _, _ := recordingServer(t, http.StatusOK, extenderv1.HostPriorityList{{Host: "a", Score: 3}})
		ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, PrioritizeVerb: "prio", Weight: 4})
		list, weight, err := ext.Prioritize(pod, nodes)
		if err != nil || weight != 4 || len(*list) != 1 || (*list)[0].Score != 3 {
			t.Errorf("Prioritize = %v, %d, %v; want a:3, weight 4", list, weight, err)
		}
	})
	t.Run("without prioritizeVerb every node scores 0 at weight 0, with no call", func(t *testing.T) {
		ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: "http://127.0.0.1:1"})
		list, weight, err := ext.Prioritize(pod, nodes)
		if err != nil || weight != 0 || len(*list) != 2 {
			t.Errorf("Prioritize = %v, %d, %v", list, weight, err)
		}
	})
	t.Run("bind sends the binding's fields by name", func(t *testing.T) {
		srv, bodies, paths := recordingServer(t, http.StatusOK, extenderv1.ExtenderBindingResult{})
		ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, BindVerb: "bind"})
		b := &v1.Binding{Target: v1.ObjectReference{Name: "a"}}
		b.Name, b.Namespace, b.UID = "p", "ns", "uid-1"
		if err := ext.Bind(b); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"PodName": "p", "PodNamespace": "ns", "PodUID": "uid-1", "Node": "a"}
		if diff := cmp.Diff(want, (*bodies)[0]); diff != "" || (*paths)[0] != "/bind" {
			t.Errorf("bind request to %s (-want +got):\n%s", (*paths)[0], diff)
		}
	})
	t.Run("bind's Error is the error", func(t *testing.T) {
		srv, _, _ := recordingServer(t, http.StatusOK, extenderv1.ExtenderBindingResult{Error: "no"})
		ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, BindVerb: "bind"})
		if err := ext.Bind(&v1.Binding{}); err == nil || err.Error() != "no" {
			t.Errorf("Bind = %v, want no", err)
		}
	})
	t.Run("a status other than 200 is an error naming the verb and URL", func(t *testing.T) {
		srv, _, _ := recordingServer(t, http.StatusServiceUnavailable, nil)
		ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, FilterVerb: "filter"})
		_, _, _, err := ext.Filter(pod, nodes)
		want := "failed filter with extender at URL " + srv.URL + "/filter, code 503"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
}

// TestHTTPExtenderGarbage checks that an extender answering 200 with a body
// that is not the answer the verb expects fails the call with an error that
// names the verb, the URL and what was wrong, for every verb.
func TestHTTPExtenderGarbage(t *testing.T) {
	nodes := nodeInfos(st.MakeNode().Name("a").Obj())
	pod := st.MakePod().Name("p").Obj()
	verbs := []struct {
		verb string
		call func(*HTTPExtender) error
	}{
		{"filter", func(e *HTTPExtender) error { _, _, _, err := e.Filter(pod, nodes); return err }},
		{"prioritize", func(e *HTTPExtender) error { _, _, err := e.Prioritize(pod, nodes); return err }},
		{"bind", func(e *HTTPExtender) error { return e.Bind(&v1.Binding{}) }},
		{"preempt", func(e *HTTPExtender) error {
			_, err := e.ProcessPreemption(pod, map[string]*extenderv1.Victims{}, nil)
			return err
		}},
	}
	bodies := []struct {
		name, body, want string
	}{
		{"HTML", "<html>oops</html>", "invalid character '<'"},
		{"a JSON answer of another shape", `"all good"`, "cannot unmarshal string"},
		{"a truncated answer", `{"NodeNames": [`, "unexpected EOF"},
	}
	for _, b := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, b.body)
		}))
		t.Cleanup(srv.Close)
		for _, v := range verbs {
			t.Run(b.name+"/"+v.verb, func(t *testing.T) {
				ext, err := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, FilterVerb: "filter",
					PrioritizeVerb: "prioritize", BindVerb: "bind", PreemptVerb: "preempt", Weight: 1})
				if err != nil {
					t.Fatal(err)
				}
				err = v.call(ext)
				wantPrefix := "decoding the answer to " + v.verb + " from extender at URL " + srv.URL + "/" + v.verb + ": "
				if err == nil || !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), b.want) {
					t.Errorf("err = %v, want %q followed by an error containing %q", err, wantPrefix, b.want)
				}
			})
		}
	}
}

func TestHTTPExtenderProcessPreemption(t *testing.T) {
	a := st.MakeNode().Name("a").Obj()
	victim := st.MakePod().Name("v").UID("uid-v").NodeName("a").Obj()
	other := st.MakePod().Name("o").UID("uid-o").NodeName("a").Obj()
	snapshot := cache.NewSnapshot([]*v1.Pod{victim, other}, []*v1.Node{a})
	proposed := map[string]*extenderv1.Victims{"a": {Pods: []*v1.Pod{victim}, NumPDBViolations: 1}}
	pod := st.MakePod().Name("p").Obj()
	tests := []struct {
		name             string
		nodeCacheCapable bool
		answer           extenderv1.ExtenderPreemptionResult
		wantKey          string
		want             []string // victims' names on a
		wantErr          string
	}{
		{
			name:    "whole victims out, victims by UID back, found on the node",
			answer:  extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"a": {Pods: []*extenderv1.MetaPod{{UID: "uid-o"}}}}},
			wantKey: "NodeNameToVictims",
			want:    []string{"o"},
		},
		{
			name:             "nodeCacheCapable: victims by UID both ways",
			nodeCacheCapable: true,
			answer:           extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"a": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}}}},
			wantKey:          "NodeNameToMetaVictims",
			want:             []string{"v"},
		},
		{
			name:    "a victim not on the node is an error",
			answer:  extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"a": {Pods: []*extenderv1.MetaPod{{UID: "nope"}}}}},
			wantErr: "but the pod is not found on that node",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, bodies, _ := recordingServer(t, http.StatusOK, tt.answer)
			ext, _ := NewHTTPExtender(&configv1.Extender{URLPrefix: srv.URL, PreemptVerb: "preempt",
				NodeCacheCapable: tt.nodeCacheCapable})
			got, err := ext.ProcessPreemption(pod, proposed, snapshot.NodeInfos())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := (*bodies)[0][tt.wantKey]; !ok {
				t.Errorf("request %v lacks %s", (*bodies)[0], tt.wantKey)
			}
			var victims []string
			for _, p := range got["a"].Pods {
				victims = append(victims, p.Name)
			}
			if diff := cmp.Diff(tt.want, victims); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if proposed["a"].Pods[0] != victim {
				t.Errorf("ProcessPreemption changed its input")
			}
		})
	}
}

func TestHTTPExtenderIsInterested(t *testing.T) {
	const gpu = "example.com/gpu"
	tests := []struct {
		name    string
		managed []string
		pod     *v1.Pod
		want    bool
	}{
		{name: "no managed resources: every pod", pod: st.MakePod().Obj(), want: true},
		{name: "a pod without the resource", managed: []string{gpu},
			pod: st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(), want: false},
		{name: "a container requesting it", managed: []string{gpu},
			pod: st.MakePod().Req(map[v1.ResourceName]string{gpu: "1"}).Obj(), want: true},
		{name: "an init container requesting it", managed: []string{gpu},
			pod: st.MakePod().InitReq(map[v1.ResourceName]string{gpu: "1"}).Obj(), want: true},
		{name: "a container limiting it", managed: []string{gpu},
			pod: func() *v1.Pod {
				p := st.MakePod().Req(nil).Obj()
				p.Spec.Containers[0].Resources.Limits = v1.ResourceList{gpu: {}}
				return p
			}(), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &configv1.Extender{URLPrefix: "http://x"}
			for _, m := range tt.managed {
				cfg.ManagedResources = append(cfg.ManagedResources, configv1.ExtenderManagedResource{Name: m})
			}
			ext, _ := NewHTTPExtender(cfg)
			if got := ext.IsInterested(tt.pod); got != tt.want {
				t.Errorf("IsInterested = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPExtenderTimeout(t *testing.T) {
	tests := []struct {
		name string
		cfg  configv1.Extender
		want string
	}{
		{name: "default 5s", want: "5s"},
		{name: "configured", cfg: configv1.Extender{HTTPTimeout: metav1Duration("250ms")}, want: "250ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := NewHTTPExtender(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := ext.client.Timeout.String(); got != tt.want {
				t.Errorf("timeout = %s, want %s", got, tt.want)
			}
		})
	}
}

func metav1Duration(s string) metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err) // a typo in a test table
	}
	return metav1.Duration{Duration: d}
}

func TestHTTPExtenderTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(extenderv1.ExtenderBindingResult{})
	}))
	defer srv.Close()
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	// Every httptest server has the same certificate: make another one.
	otherCA, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     configv1.Extender
		wantErr bool
	}{
		{name: "enableHTTPS without a CA does not verify the server", cfg: configv1.Extender{EnableHTTPS: true}},
		{name: "the server's CA verifies it",
			cfg: configv1.Extender{EnableHTTPS: true, TLSConfig: &configv1.ExtenderTLSConfig{CAData: serverCA}}},
		{name: "another CA does not", wantErr: true,
			cfg: configv1.Extender{EnableHTTPS: true, TLSConfig: &configv1.ExtenderTLSConfig{CAData: otherCA}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.URLPrefix, tt.cfg.BindVerb = srv.URL, "bind"
			ext, err := NewHTTPExtender(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = ext.Bind(&v1.Binding{})
			if (err != nil) != tt.wantErr {
				t.Errorf("Bind = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}
