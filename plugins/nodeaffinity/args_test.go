// Tests for decoding and validating NodeAffinityArgs through New.
package nodeaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
)

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *runtime.RawExtension
		wantErr string
		// wantAddedSelector and wantAddedPreferred say whether New kept an
		// added required selector and added preferred terms.
		wantAddedSelector  bool
		wantAddedPreferred bool
	}{
		{name: "no args"},
		{name: "empty args", args: rawArgs(`{}`)},
		{name: "null args", args: rawArgs(`null`)},
		{name: "empty addedAffinity", args: rawArgs(`{"addedAffinity": {}}`)},
		{
			name: "full args with apiVersion and kind",
			args: rawArgs(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs",
				"addedAffinity": {
					"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
						{"matchExpressions": [{"key": "label-1", "operator": "In", "values": ["label-1-val"]}]}]},
					"preferredDuringSchedulingIgnoredDuringExecution": [
						{"weight": 1,
							"preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}}]}}`),
			wantAddedSelector:  true,
			wantAddedPreferred: true,
		},
		{
			name: "typed args",
			args: &runtime.RawExtension{Object: &configv1.NodeAffinityArgs{
				AddedAffinity: required(labelTerm(expr("zone", v1.NodeSelectorOpExists))),
			}},
			wantAddedSelector: true,
		},
		{
			// Upstream ignores an empty preferred list, like a missing one.
			name: "empty preferred list",
			args: rawArgs(`{"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}`),
		},
		{
			name:    "unknown field",
			args:    rawArgs(`{"addedAfinity": {}}`),
			wantErr: `decoding NodeAffinityArgs: unknown field "addedAfinity"`,
		},
		{
			name:    "unknown field inside addedAffinity",
			args:    rawArgs(`{"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}}`),
			wantErr: `decoding NodeAffinityArgs: unknown field "addedAffinity.requiredDuringSchedulingRequiredDuringExecution"`,
		},
		{
			name: "invalid label key in the required selector",
			args: rawArgs(`{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
				{"matchExpressions": [{"key": "invalid/label/key", "operator": "In", "values": ["v"]}]}]}}}`),
			wantErr: `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]` +
				`.key: Invalid value: "invalid/label/key": a valid label key must consist of alphanumeric characters, '-', '_' ` +
				`or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', ` +
				`regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix ` +
				`and '/' (e.g. 'example.com/MyName')`,
		},
		{
			name: "unsupported operator in the required selector",
			args: rawArgs(`{"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
				{}, {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}]}}}`),
			wantErr: `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchFields[0]` +
				`.operator: Unsupported value: "Exists": supported values: "In", "NotIn"`,
		},
		{
			// Upstream names preferred terms by index, without ".preference".
			name: "two values for a metadata.name field in a preferred term",
			args: rawArgs(`{"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
				{"weight": 1,
					"preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}]}}]}}`),
			wantErr: `addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: ` +
				`["node-1","node-2"]: must have one element`,
		},
		{
			name: "errors in both, reported together",
			args: rawArgs(`{"addedAffinity": {
				"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
					{"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["a"]}]}]},
				"preferredDuringSchedulingIgnoredDuringExecution": [
					{"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "Equals", "values": ["a"]}]}}]}}`),
			wantErr: `[addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]` +
				`.values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer, ` +
				`addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0].operator: Unsupported ` +
				`value: "Equals": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]`,
		},
		{
			// A preferred term of weight 0 is not parsed, so it cannot be wrong.
			name: "invalid preferred term of weight 0 is ignored",
			args: rawArgs(`{"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
				{"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Equals"}]}}]}}`),
			wantAddedPreferred: true,
		},
		{
			name:    "wrong typed args",
			args:    &runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{}},
			wantErr: "decoding NodeAffinityArgs: want args of type *v1.NodeAffinityArgs, got *v1.NodeResourcesFitArgs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(context.Background(), tt.args, nil)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("New succeeded, want error %q", tt.wantErr)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*NodeAffinity)
			if got := pl.addedNodeSelector != nil; got != tt.wantAddedSelector {
				t.Errorf("added required selector kept = %v, want %v", got, tt.wantAddedSelector)
			}
			if got := pl.addedPrefSchedTerms != nil; got != tt.wantAddedPreferred {
				t.Errorf("added preferred terms kept = %v, want %v", got, tt.wantAddedPreferred)
			}
		})
	}
}

// TestNewKeepsAddedAffinity checks that the parsed addedAffinity is the one
// configured: its selector and its preferred terms act on nodes.
func TestNewKeepsAddedAffinity(t *testing.T) {
	p, err := New(context.Background(), rawArgs(`{"addedAffinity": {
		"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
			{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch"]}]}]},
		"preferredDuringSchedulingIgnoredDuringExecution": [
			{"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*NodeAffinity)
	batchSSD := st.MakeNode().Name("n1").Label("pool", "batch").Label("disk", "ssd").Obj()
	web := st.MakeNode().Name("n2").Label("pool", "web").Obj()
	got := []interface{}{pl.addedNodeSelector.Match(batchSSD), pl.addedNodeSelector.Match(web),
		pl.addedPrefSchedTerms.Score(batchSSD), pl.addedPrefSchedTerms.Score(web)}
	want := []interface{}{true, false, int64(7), int64(0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("match batch, match web, score batch, score web (-want +got):\n%s", diff)
	}
}

func TestValidateArgsNamesFieldsUnderPath(t *testing.T) {
	args := &configv1.NodeAffinityArgs{AddedAffinity: required(fieldTerm(nameIn()))}
	err := ValidateArgs(nil, args)
	want := `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: ` +
		`Invalid value: null: must have one element`
	if err == nil {
		t.Fatalf("ValidateArgs succeeded, want %q", want)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
