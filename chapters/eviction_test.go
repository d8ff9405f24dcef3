package chapters

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/testenv"
)

// TestStoryControllersRefused checks the stories chapter 18's machinery
// must refuse, each with an error that says why, before anything hangs: an
// unknown controller (named), the taint-eviction controller alone, the node
// lifecycle controller without KWOK, and an eviction of a pod a
// PodDisruptionBudget covers in a story without the disruption controller
// (the 100s trap, named). A story that gets as far as Run records so.
func TestStoryControllersRefused(t *testing.T) {
	evictCovered := func(ctx context.Context, env *scenario.Env) error {
		if err := env.CreateNodes(ctx, scenario.Nodes("a")...); err != nil {
			return err
		}
		if err := env.CreateObjects(ctx, budget("db", 1)); err != nil {
			return err
		}
		if err := createRunning(ctx, env, scenario.MakePod("db").Label("app", "db").Obj()); err != nil {
			return err
		}
		return env.Evict(ctx, "db")
	}
	tests := []struct {
		name        string
		parts       scenario.Parts
		controllers []string
		run         func(ctx context.Context, env *scenario.Env) error
		wantErr     string
		wantRun     bool
	}{
		{name: "unknown controller", parts: scenario.Parts{scenario.KWOK},
			controllers: []string{testenv.ReplicaSetController, "replica-set-controller"},
			wantErr:     `unknown controller "replica-set-controller"`},
		{name: "named twice", controllers: []string{testenv.ReplicaSetController, testenv.ReplicaSetController},
			wantErr: `controller "replicaset-controller" is named twice`},
		{name: "taint eviction alone", parts: scenario.Parts{scenario.KWOK},
			controllers: []string{testenv.TaintEvictionController},
			wantErr:     "taint-eviction-controller needs node-lifecycle-controller beside it"},
		{name: "node lifecycle without KWOK", controllers: []string{testenv.NodeLifecycleController},
			wantErr: "node-lifecycle-controller needs KWOK"},
		{name: "budget without the disruption controller", parts: scenario.Parts{scenario.KWOK},
			controllers: []string{testenv.ReplicaSetController}, run: evictCovered, wantRun: true,
			wantErr: "which PodDisruptionBudget db covers, in a story that does not run disruption-controller: " +
				"without disruption-controller nobody writes the budget's status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			s := scenario.Scenario{Name: "refused", Parts: tt.parts, Controllers: tt.controllers,
				Run: func(ctx context.Context, env *scenario.Env) error {
					ran = true
					if tt.run == nil {
						return nil
					}
					return tt.run(ctx, env)
				}}
			// Shorter than the trap's 100s: a story that hung would fail
			// here with a deadline, not with the error wanted.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			r := &scenario.Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
			err := r.Run(ctx, s)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q\n%s", err, tt.wantErr, out.String())
			}
			if ran != tt.wantRun {
				t.Errorf("Run ran: %t, want %t", ran, tt.wantRun)
			}
		})
	}
}

// TestStoryControllersFailToStart checks that a story whose
// kube-controller-manager cannot start fails with an error naming the log
// that says why.
func TestStoryControllersFailToStart(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kube-controller-manager")
	script := "#!/bin/sh\necho 'F1128 fake kube-controller-manager: cannot start' >&2\nexit 255\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_CONTROLLER_MANAGER", fake)
	s := scenario.Scenario{Name: "no-kcm", Controllers: []string{testenv.ReplicaSetController},
		Run: func(context.Context, *scenario.Env) error { return fmt.Errorf("the story ran") }}
	var out bytes.Buffer
	r := &scenario.Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
	err := r.Run(t.Context(), s)
	if err == nil {
		t.Fatal("the story passed without its kube-controller-manager")
	}
	m := regexp.MustCompile(`its log: (\S+);`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q names no log", err)
	}
	log, readErr := os.ReadFile(m[1])
	if readErr != nil {
		t.Fatalf("error %q names log %s: %v", err, m[1], readErr)
	}
	if !strings.Contains(string(log), "cannot start") {
		t.Errorf("log %s does not say why:\n%s", m[1], log)
	}
	_ = os.Remove(m[1])
}

// TestCleaningBetweenStories checks that the runner removes what one story
// leaves behind that a controller of the next could act on: ReplicaSets,
// Deployments, PodDisruptionBudgets and node Leases.
func TestCleaningBetweenStories(t *testing.T) {
	leave := func(ctx context.Context, env *scenario.Env) error {
		if err := env.CreateReplicaSet(ctx, "web", 1, scenario.MakePod("web").Obj()); err != nil {
			return err
		}
		labels := map[string]string{"app": "api"}
		deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "pause"}}}}}}
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: v1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone")}}
		return env.CreateObjects(ctx, deploy, budget("web", 1), lease)
	}
	var left []string
	look := func(ctx context.Context, env *scenario.Env) error {
		// A pod bound first: the cleaned cluster still schedules.
		if err := env.CreateNodes(ctx, scenario.Nodes("a")...); err != nil {
			return err
		}
		if err := env.CreatePods(ctx, scenario.MakePod("p").Obj()); err != nil {
			return err
		}
		if _, err := env.WaitForPodBound(ctx, "p", scenario.DefaultWait); err != nil {
			return err
		}
		rs, err := env.Client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		deploys, err := env.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		budgets, err := env.Client.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		leases, err := env.Client.CoordinationV1().Leases(v1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, o := range rs.Items {
			left = append(left, "ReplicaSet "+o.Name)
		}
		for _, o := range deploys.Items {
			left = append(left, "Deployment "+o.Name)
		}
		for _, o := range budgets.Items {
			left = append(left, "PodDisruptionBudget "+o.Name)
		}
		for _, o := range leases.Items {
			left = append(left, "Lease "+o.Name)
		}
		return nil
	}
	for _, s := range []scenario.Scenario{{Name: "leaves", Run: leave}, {Name: "looks", Run: look}} {
		var out bytes.Buffer
		r := &scenario.Runner{RestConfig: testEnv.Config, Out: &out, Environment: testEnv}
		if err := r.Run(t.Context(), s); err != nil {
			t.Fatalf("%s: %v\n%s", s.Name, err, out.String())
		}
	}
	if len(left) > 0 {
		t.Errorf("the next story found %s", strings.Join(left, ", "))
	}
}
