package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func testNode(name string, annotations, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Labels: labels}}
}

var testNodes = []*v1.Node{
	testNode("ok", nil, map[string]string{PreferenceLabel: "7"}),
	testNode("maint", map[string]string{MaintenanceAnnotation: "x"}, nil),
	testNode("retired", map[string]string{RetiredAnnotation: "x", MaintenanceAnnotation: "x"}, nil),
	testNode("guarded", map[string]string{NoPreemptionAnnotation: "true"}, map[string]string{PreferenceLabel: "11"}),
}

// post sends req to the verb and decodes the answer into resp.
func post(t *testing.T, srv *Server, verb string, req, resp any) int {
	t.Helper()
	body, _ := json.Marshal(req)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/"+verb, bytes.NewReader(body)))
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), resp); err != nil {
			t.Fatalf("answer %q: %v", rec.Body.String(), err)
		}
	}
	return rec.Code
}

func newServer() (*Server, *fake.Clientset) {
	var objs []runtime.Object
	for _, n := range testNodes {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	return New(client, ClientNodes{Client: client}), client
}

func TestFilter(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	wantFailed := extenderv1.FailedNodesMap{"maint": ReasonMaintenance}
	wantUnresolvable := extenderv1.FailedNodesMap{"retired": ReasonRetired}
	t.Run("whole nodes", func(t *testing.T) {
		srv, _ := newServer()
		list := &v1.NodeList{}
		for _, n := range testNodes {
			list.Items = append(list.Items, *n)
		}
		var got extenderv1.ExtenderFilterResult
		if code := post(t, srv, "filter", &extenderv1.ExtenderArgs{Pod: pod, Nodes: list}, &got); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		var names []string
		for _, n := range got.Nodes.Items {
			names = append(names, n.Name)
		}
		if diff := cmp.Diff([]string{"ok", "guarded"}, names); diff != "" || got.NodeNames != nil {
			t.Errorf("passed (-want +got):\n%s (names %v)", diff, got.NodeNames)
		}
		if !cmp.Equal(wantFailed, got.FailedNodes) || !cmp.Equal(wantUnresolvable, got.FailedAndUnresolvableNodes) {
			t.Errorf("failed %v, unresolvable %v", got.FailedNodes, got.FailedAndUnresolvableNodes)
		}
	})
	t.Run("names, looked up in the node cache", func(t *testing.T) {
		srv, _ := newServer()
		var got extenderv1.ExtenderFilterResult
		names := []string{"ok", "maint", "retired", "guarded"}
		post(t, srv, "filter", &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}, &got)
		if got.NodeNames == nil || !cmp.Equal([]string{"ok", "guarded"}, *got.NodeNames) || got.Nodes != nil {
			t.Errorf("passed %v / %v, want names ok, guarded", got.NodeNames, got.Nodes)
		}
		if !cmp.Equal(wantFailed, got.FailedNodes) || !cmp.Equal(wantUnresolvable, got.FailedAndUnresolvableNodes) {
			t.Errorf("failed %v, unresolvable %v", got.FailedNodes, got.FailedAndUnresolvableNodes)
		}
	})
	t.Run("an unknown node is the answer's Error", func(t *testing.T) {
		srv, _ := newServer()
		var got extenderv1.ExtenderFilterResult
		names := []string{"nope"}
		post(t, srv, "filter", &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}, &got)
		if got.Error == "" {
			t.Errorf("no error for an unknown node")
		}
	})
	t.Run("a body that is not JSON is a 400", func(t *testing.T) {
		srv, _ := newServer()
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/filter", bytes.NewReader([]byte("{"))))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("status %d, want 400", rec.Code)
		}
	})
}

func TestPrioritize(t *testing.T) {
	srv, _ := newServer()
	names := []string{"ok", "maint", "guarded"}
	var got extenderv1.HostPriorityList
	post(t, srv, "prioritize", &extenderv1.ExtenderArgs{Pod: &v1.Pod{}, NodeNames: &names}, &got)
	// guarded's preference (11) is out of range: 0.
	want := extenderv1.HostPriorityList{{Host: "ok", Score: 7}, {Host: "maint", Score: 0}, {Host: "guarded", Score: 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestBind(t *testing.T) {
	srv, client := newServer()
	var binding *v1.Binding
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "binding" {
			binding = a.(clienttesting.CreateAction).GetObject().(*v1.Binding)
			return true, binding, nil
		}
		return false, nil, nil
	})
	var got extenderv1.ExtenderBindingResult
	req := &extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "uid", Node: "ok"}
	if code := post(t, srv, "bind", req, &got); code != http.StatusOK || got.Error != "" {
		t.Fatalf("status %d, error %q", code, got.Error)
	}
	if binding == nil || binding.Target.Name != "ok" || binding.Name != "p" || binding.Annotations[BoundByAnnotation] != Name {
		t.Errorf("binding = %+v, want p to ok with the bound-by annotation", binding)
	}
}

func TestPreempt(t *testing.T) {
	victim := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "v", UID: "uid-v"}}
	tests := []struct {
		name string
		args extenderv1.ExtenderPreemptionArgs
	}{
		{name: "whole victims", args: extenderv1.ExtenderPreemptionArgs{NodeNameToVictims: map[string]*extenderv1.Victims{
			"ok": {Pods: []*v1.Pod{victim}, NumPDBViolations: 1}, "guarded": {Pods: []*v1.Pod{victim}}}}},
		{name: "victims by UID", args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"ok": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}, NumPDBViolations: 1}, "guarded": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer()
			tt.args.Pod = &v1.Pod{}
			var got extenderv1.ExtenderPreemptionResult
			post(t, srv, "preempt", &tt.args, &got)
			want := map[string]*extenderv1.MetaVictims{"ok": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}, NumPDBViolations: 1}}
			if diff := cmp.Diff(want, got.NodeNameToMetaVictims); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}
