package app

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExplainFlags(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantPods      []string
		wantNamespace string
		wantWide      bool
	}{
		{name: "flags first", args: []string{"-n", "shop", "web"}, wantPods: []string{"web"}, wantNamespace: "shop"},
		{name: "flags after the pod", args: []string{"web", "-n", "shop", "--wide"}, wantPods: []string{"web"},
			wantNamespace: "shop", wantWide: true},
		{name: "flags around the pod", args: []string{"--namespace=shop", "web", "--kubeconfig", "/k"},
			wantPods: []string{"web"}, wantNamespace: "shop"},
		{name: "two pods", args: []string{"a", "b"}, wantPods: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("explain")
			ns := fs.String("n", "", "")
			fs.StringVar(ns, "namespace", "", "")
			fs.String("kubeconfig", "", "")
			wide := fs.Bool("wide", false, "")
			pods, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPods, pods); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			if *ns != tt.wantNamespace || *wide != tt.wantWide {
				t.Errorf("namespace %q, wide %v; want %q, %v", *ns, *wide, tt.wantNamespace, tt.wantWide)
			}
		})
	}
}

func TestExplainNeedsOnePod(t *testing.T) {
	for _, args := range [][]string{nil, {"a", "b"}} {
		c := NewCommand()
		c.stderr = &strings.Builder{}
		err := c.explainPod(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), "exactly one pod name") {
			t.Errorf("explain %q: err = %v, want one asking for exactly one pod", args, err)
		}
	}
}
