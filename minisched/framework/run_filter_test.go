// This file tests the Filter runner.

package framework

import (
	"context"
	"testing"
)

func TestFilterStopsAtFirstFailure(t *testing.T) {
	log := &callLog{}
	a := &fakePlugin{name: "A", log: log, filterFail: map[string]*Status{"n1": NewStatus(Unschedulable, "a says no")}}
	b := &fakePlugin{name: "B", log: log, filterFail: map[string]*Status{
		"n1": NewStatus(Unschedulable, "b says no"),
		"n2": NewStatus(UnschedulableAndUnresolvable, "b says never"),
	}}
	f := newTestFramework(t, []*fakePlugin{a, b}, nil)
	nodes := testNodes("n1", "n2", "n3")
	state := NewCycleState()
	got := map[string]*Status{}
	for _, ni := range nodes {
		got[ni.Node().Name] = f.RunFilterPlugins(context.Background(), state, testPod, ni)
	}
	if s := got["n1"]; s.Plugin() != "A" || s.Message() != "a says no" {
		t.Errorf("n1 status = %v, want A's", s)
	}
	if s := got["n2"]; s.Plugin() != "B" || s.Code() != UnschedulableAndUnresolvable {
		t.Errorf("n2 status = %v, want B's", s)
	}
	if s := got["n3"]; !s.IsSuccess() {
		t.Errorf("n3 status = %v, want Success", s)
	}
	for _, c := range log.get() {
		if c == "Filter/B/n1" {
			t.Errorf("B's Filter ran on n1 after A rejected it")
		}
	}
}
