package attempt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bigRecord is a record of numNodes nodes: n0 selected, the next 10 scored,
// the others rejected for one of three long reasons.
func bigRecord(numNodes int) *Record {
	rec := &Record{Version: Version, Result: Scheduled, Node: "n0", NumNodes: numNodes,
		Filters: []string{"F"}, Scorers: []Scorer{{Name: "S", Weight: 1}}}
	for i := range numNodes {
		n := NodeRecord{Name: fmt.Sprintf("n%d", i)}
		if i <= 10 {
			n.Scores, n.Total = [][3]int64{{int64(i), int64(i), int64(100 - i)}}, int64(100-i)
		} else {
			n.RejectedBy = "F"
			n.Reason = fmt.Sprintf("reason %d %s", i%3, strings.Repeat("x", 100))
		}
		rec.Nodes = append(rec.Nodes, n)
	}
	return rec
}

func TestEncodeBoundsTheRecord(t *testing.T) {
	tests := []struct {
		name      string
		numNodes  int
		limit     int
		wantWhole bool
	}{
		{name: "a small record is whole", numNodes: 20, limit: MaxBytes, wantWhole: true},
		{name: "5000 nodes are cut to the limit", numNodes: 5000, limit: MaxBytes},
		{name: "a tight limit keeps the most telling nodes", numNodes: 300, limit: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := bigRecord(tt.numNodes).Encode(tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > tt.limit {
				t.Fatalf("encoded %d bytes, limit %d", len(data), tt.limit)
			}
			got, err := Decode(string(data))
			if err != nil {
				t.Fatal(err)
			}
			kept := len(got.Nodes)
			if got.Omitted != nil {
				kept += got.Omitted.Nodes
			}
			if kept != tt.numNodes {
				t.Errorf("nodes kept %d + omitted = %d, want %d", len(got.Nodes), kept, tt.numNodes)
			}
			if (got.Omitted == nil) != tt.wantWhole {
				t.Fatalf("omitted = %+v, want whole: %v", got.Omitted, tt.wantWhole)
			}
			if tt.wantWhole {
				return
			}
			// The selected node first, then the best scored, then one node
			// per reason before any repeat.
			if got.Nodes[0].Name != "n0" || got.Nodes[1].Name != "n1" {
				t.Errorf("first nodes %s, %s; want n0 (selected), n1 (best scored)", got.Nodes[0].Name, got.Nodes[1].Name)
			}
			reasons := map[string]bool{}
			for _, n := range got.Nodes {
				if !n.Passed() {
					reasons[n.Reason] = true
				}
			}
			if len(reasons) != 3 {
				t.Errorf("kept %d distinct reasons, want all 3", len(reasons))
			}
			sum := 0
			for _, c := range got.Omitted.Reasons {
				sum += c
			}
			if sum != got.Omitted.Nodes {
				t.Errorf("omitted reasons count %d nodes, want %d", sum, got.Omitted.Nodes)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		wantErr string
	}{
		{name: "version 1", value: `{"v":1,"result":"Scheduled","node":"n1","numNodes":1}`},
		{name: "a version from the future", value: `{"v":2,"whatever":[]}`,
			wantErr: "minisched.io/last-attempt has version 2; this minisched reads version 1 only"},
		{name: "no version", value: `{"result":"Scheduled"}`, wantErr: "has version 0"},
		{name: "not JSON", value: `Scheduled on n1`, wantErr: "decoding minisched.io/last-attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Decode(tt.value)
			if tt.wantErr == "" {
				if err != nil || rec.Node != "n1" {
					t.Fatalf("Decode = %+v, %v; want node n1", rec, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRecordViews checks what an observer reads off a record: the best
// scored nodes, one scorer's weighted score, and the rejected nodes.
func TestRecordViews(t *testing.T) {
	rec := &Record{Scorers: []Scorer{{Name: "A", Weight: 1}, {Name: "B", Weight: 2}}, Nodes: []NodeRecord{
		{Name: "n3", RejectedBy: "F", Reason: "no"},
		{Name: "n1", Scores: [][3]int64{{1, 1, 1}, {5, 5, 10}}, Total: 11},
		{Name: "n2", Scores: [][3]int64{{7, 7, 7}, {2, 2, 4}}, Total: 11},
		{Name: "n0", Scores: [][3]int64{{0, 0, 0}, {0, 0, 0}}, Total: 0},
		{Name: "n4", RejectedBy: "G", Reason: "never"},
	}}
	names := func(nodes []NodeRecord) []string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{name: "top 2: ties by name", got: names(rec.TopScores(2)), want: []string{"n1", "n2"}},
		{name: "top 9: every scored node", got: names(rec.TopScores(9)), want: []string{"n1", "n2", "n0"}},
		{name: "rejections by name", got: names(rec.Rejections()), want: []string{"n3", "n4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	weightedTests := []struct {
		name, node, scorer string
		want               int64
		wantOK             bool
	}{
		{name: "B on n1", node: "n1", scorer: "B", want: 10, wantOK: true},
		{name: "A on n2", node: "n2", scorer: "A", want: 7, wantOK: true},
		{name: "an unknown scorer", node: "n1", scorer: "C"},
		{name: "a rejected node", node: "n3", scorer: "A"},
	}
	for _, tt := range weightedTests {
		t.Run(tt.name, func(t *testing.T) {
			node := rec.Nodes[slices.IndexFunc(rec.Nodes, func(n NodeRecord) bool { return n.Name == tt.node })]
			got, ok := rec.Weighted(node, tt.scorer)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Weighted(%s, %s) = %d, %v; want %d, %v", tt.node, tt.scorer, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestEncodeTrimsAGroupsMembers: a member's record whose group lists more
// members than fit keeps no node and the first members tried, and counts
// the others.
func TestEncodeTrimsAGroupsMembers(t *testing.T) {
	tests := []struct {
		name        string
		numMembers  int
		wantMembers bool // all members kept
	}{
		{name: "a small group is whole", numMembers: 10, wantMembers: true},
		{name: "2000 members with long messages are cut", numMembers: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := bigRecord(200)
			rec.Group = &GroupAttempt{PodGroup: "g", Policy: PolicyGang, MinCount: tt.numMembers, Attempt: 1,
				Result: Unschedulable}
			for i := range tt.numMembers {
				rec.Group.Members = append(rec.Group.Members, GroupMember{Pod: fmt.Sprintf("m%d", i), Tried: true,
					Message: strings.Repeat("y", 200), Shape: ShapeFitNowhere})
			}
			data, err := rec.Encode(MaxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > MaxBytes {
				t.Fatalf("encoded %d bytes, limit %d", len(data), MaxBytes)
			}
			got, err := Decode(string(data))
			if err != nil {
				t.Fatal(err)
			}
			g := got.Group
			if kept := len(g.Members) + g.OmittedMembers; kept != tt.numMembers {
				t.Errorf("members kept %d + omitted %d, want %d", len(g.Members), g.OmittedMembers, tt.numMembers)
			}
			if tt.wantMembers {
				if g.OmittedMembers != 0 {
					t.Errorf("omitted %d members, want none", g.OmittedMembers)
				}
				return
			}
			if len(got.Nodes) != 0 || got.Omitted == nil || got.Omitted.Nodes != 200 {
				t.Errorf("nodes kept %d, omitted %+v; want none kept, 200 omitted", len(got.Nodes), got.Omitted)
			}
			if len(g.Members) == 0 || g.Members[0].Pod != "m0" || g.Members[len(g.Members)-1].Pod != fmt.Sprintf("m%d", len(g.Members)-1) {
				t.Errorf("members kept are not the first ones tried: %d kept, first %+v", len(g.Members), g.Members[:min(1, len(g.Members))])
			}
			// Not one more member fits.
			more := *got
			group := *g
			group.Members = rec.Group.Members[:len(g.Members)+1]
			group.OmittedMembers--
			more.Group = &group
			if data, _ := json.Marshal(&more); len(data) <= MaxBytes {
				t.Errorf("one more member would have fitted (%d bytes)", len(data))
			}
		})
	}
}
