package minisched

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
	"github.com/minisched/minisched/queue"
)

// signallingBinder reports each Bind call on calls and binds nothing.
type signallingBinder struct{ calls chan string }

func (signallingBinder) Name() string { return "SignallingBinder" }
func (b signallingBinder) Bind(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) *framework.Status {
	b.calls <- pod.Name
	return nil
}

// TestBindSlotsHoldBackTheNextPod checks the back-pressure of
// maxConcurrentBinds: with every bind slot taken, scheduleOne leaves the
// next pod in the queue, and schedules and binds it once a slot is free.
func TestBindSlotsHoldBackTheNextPod(t *testing.T) {
	tests := []struct {
		name string
		// slots is the bound; taken of them are held by Bind calls in flight.
		slots, taken int
	}{
		{name: "a free slot: the pod is scheduled at once", slots: 2, taken: 1},
		{name: "every slot taken: the pod waits in the queue", slots: 2, taken: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pod := st.MakePod().Namespace("ns").Name("p").UID("p-uid").SchedulerName(plugintesting.ProfileName).Obj()
			binder := signallingBinder{calls: make(chan string, 1)}
			registry := plugins.NewInTreeRegistry()
			registry[binder.Name()] = func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
				return binder, nil
			}
			s := newLoopTestScheduler(ctx, t, fake.NewClientset(pod), pod, registry, &configv1.Plugins{
				QueueSort: plugintesting.Enable("PrioritySort"),
				Bind:      plugintesting.Enable(binder.Name()),
			})
			s.bindSlots = make(chan struct{}, tt.slots)
			for range tt.taken {
				s.bindSlots <- struct{}{}
			}

			done := make(chan struct{})
			go func() {
				defer close(done)
				s.scheduleOne(ctx, ctx)
			}()
			if tt.taken == tt.slots {
				// Nothing can happen until a slot is free: give scheduleOne
				// the chance to pop anyway, then look.
				select {
				case name := <-binder.calls:
					t.Fatalf("pod %s was bound while every slot was taken", name)
				case <-done:
					t.Fatal("scheduleOne returned while every slot was taken")
				case <-time.After(100 * time.Millisecond):
				}
				if loc := s.Queue.Locate(pod.UID); loc != queue.ActiveQ {
					t.Fatalf("while every slot was taken the pod is in %q, want %q", loc, queue.ActiveQ)
				}
				<-s.bindSlots // one Bind call in flight ends
			}
			select {
			case name := <-binder.calls:
				if name != pod.Name {
					t.Errorf("bound %s, want %s", name, pod.Name)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the pod was never bound")
			}
			<-done
			s.bindings.Wait()
			// The bind gave its slot back: the slots held now are the ones
			// the test took and did not release.
			want := tt.taken
			if tt.taken == tt.slots {
				want--
			}
			if got := len(s.bindSlots); got != want {
				t.Errorf("%d slots taken after the binding, want %d", got, want)
			}
		})
	}
}
