// Tests of unpacking a node event for a queueing hint.

package helper

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/minisched/minisched/builders"
)

func TestNodesOfEvent(t *testing.T) {
	oldNode := st.MakeNode().Name("n").Obj()
	newNode := st.MakeNode().Name("n").Label("zone", "a").Obj()
	tests := []struct {
		name           string
		oldObj, newObj interface{}
		wantOld        *v1.Node
		wantNew        *v1.Node
		wantErr        string
	}{
		{name: "add", newObj: newNode, wantNew: newNode},
		{name: "update", oldObj: oldNode, newObj: newNode, wantOld: oldNode, wantNew: newNode},
		{name: "no new node", oldObj: oldNode, wantErr: "node event without a new node"},
		{name: "a new object that is no node", newObj: st.MakePod().Obj(),
			wantErr: "want new object of type *v1.Node, got *v1.Pod"},
		{name: "an old object that is no node", oldObj: "node", newObj: newNode,
			wantErr: "want old object of type *v1.Node, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotOld, gotNew, err := NodesOfEvent(tt.oldObj, tt.newObj)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("NodesOfEvent error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NodesOfEvent: %v", err)
			}
			if gotOld != tt.wantOld || gotNew != tt.wantNew {
				t.Errorf("NodesOfEvent = (%v, %v), want (%v, %v)", gotOld, gotNew, tt.wantOld, tt.wantNew)
			}
		})
	}
}
