// This file is SchedulingWithMixedChurn's churn: scheduler_perf's churn op
// in recreate mode with number 1 and intervalMilliseconds 1000, on the
// templates of upstream's misc/performance-config.yaml (churn/
// node-default.yaml, pod-high-priority-large-cpu.yaml, churn/
// service-default.yaml).

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/scenario"
)

// mixedChurnInterval is the churn op's intervalMilliseconds.
const mixedChurnInterval = time.Second

// churnPriorityClass gives the churn's large pod upstream's template's
// priority, 10 (the template sets spec.priority itself, which the Priority
// admission plugin this apiserver runs refuses; a class is its way).
const churnPriorityClass = "bench-churn"

// churnObject is one of the churn's three kinds of object: make creates
// the next one (its name from seq), remove deletes one by name.
type churnObject struct {
	kind   string
	make   func(ctx context.Context, seq int) (string, error)
	remove func(ctx context.Context, name string) error
}

// churnObjects are a node that holds no pod (capacity pods: 0), a pod of
// priority 10 asking for 9 CPUs and 500Mi (more than any node has, so it
// stays pending and its preemption finds nothing), and a service.
func churnObjects(client kubernetes.Interface) []churnObject {
	return []churnObject{
		{kind: "node",
			make: func(ctx context.Context, seq int) (string, error) {
				n := scenario.MakeNode(fmt.Sprintf("node-churn-%d", seq)).
					Capacity(map[v1.ResourceName]string{v1.ResourcePods: "0"}).Obj()
				created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
				if err != nil {
					return "", err
				}
				if len(created.Status.Conditions) == 0 {
					created.Status = n.Status
					_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
				}
				return n.Name, err
			},
			remove: func(ctx context.Context, name string) error {
				return client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{kind: "pod",
			make: func(ctx context.Context, seq int) (string, error) {
				p := defaultPod(fmt.Sprintf("pod-h-%d", seq), roleChurn).PriorityClassName(churnPriorityClass).
					Req(map[v1.ResourceName]string{v1.ResourceCPU: "9", v1.ResourceMemory: "500Mi"}).Obj()
				_, err := client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
				return p.Name, err
			},
			remove: func(ctx context.Context, name string) error {
				return client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{kind: "service",
			make: func(ctx context.Context, seq int) (string, error) {
				s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("service-churn-%d", seq), Namespace: namespace},
					Spec: v1.ServiceSpec{Selector: map[string]string{"app": "foo"}, Ports: []v1.ServicePort{{
						Protocol: v1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
				_, err := client.CoreV1().Services(namespace).Create(ctx, s, metav1.CreateOptions{})
				return s.Name, err
			},
			remove: func(ctx context.Context, name string) error {
				return client.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}},
	}
}

// createChurnPriorityClass creates the churn pod's priority class.
func createChurnPriorityClass(ctx context.Context, client kubernetes.Interface) error {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: churnPriorityClass}, Value: 10}
	if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating priority class %s: %w", churnPriorityClass, err)
	}
	return nil
}

// runMixedChurn is upstream's churn op in recreate mode with number 1: on
// every tick of interval, each kind of object is created if none of it
// exists, and the one that exists is deleted otherwise, until ctx ends.
// So a node, a large pod and a service appear one second and go the next.
func runMixedChurn(ctx context.Context, objects []churnObject, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	live := make([]string, len(objects))
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var errs []error
		for i, o := range objects {
			if live[i] != "" {
				if err := o.remove(ctx, live[i]); err != nil && ctx.Err() == nil {
					errs = append(errs, fmt.Errorf("churn: deleting %s %s: %w", o.kind, live[i], err))
				}
				live[i] = ""
				continue
			}
			name, err := o.make(ctx, seq)
			if err != nil {
				if ctx.Err() == nil {
					errs = append(errs, fmt.Errorf("churn: creating a %s: %w", o.kind, err))
				}
				continue
			}
			live[i] = name
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
}
