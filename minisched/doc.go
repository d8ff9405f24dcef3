// Package minisched is the scheduler being built: the Scheduler takes pods
// from the queue one at a time, runs the scheduling cycle with the pod's
// profile (a framework.Framework), and binds in the background. Its event
// handlers keep the cache and the queue in step with the apiserver, and its
// failure handling puts back the pods that could not be placed and still
// wait.
//
// Read it in this order:
//   - scheduler.go: the Scheduler, New, and Run, the loop;
//   - eventhandlers.go: how the world gets in (informer events to the cache
//     and the queue);
//   - schedule_one.go: one pod's way through the extension points, the
//     scheduling cycle and the binding cycle, in kube-scheduler's order and
//     names (scheduleOne, scheduleOnePod, schedulingCycle, bindingCycle);
//   - failure.go: what happens when a pod does not fit or does not bind;
//   - extender.go: HTTPExtender, the client side of scheduler extenders;
//
// Then the machinery, which is no part of kube-scheduler's loop and changes
// no decision; where the loop calls it, a comment says why:
//   - backpressure.go: no pod is popped while maxConcurrentBinds Bind calls
//     are in flight;
//   - pools.go: a cycle whose per-plugin scores nobody reads lends their
//     arrays to the next one;
//   - record.go: the attempt's record, built once the cycle has ended;
//     record_podgroup.go: its group part, for a member of a pod group,
//     built once per group attempt;
//   - observer.go: how an attempt is told to an Observer, or to a Watcher
//     (the live view) while it watches;
//   - recordwriter.go: how records reach their pods as annotations;
//   - inflight.go: the pods in flight and their phase, for the live view;
//   - step.go: step mode, the calls that tell a Stepper (the live view)
//     before each extension point, and the nodes' results.
//
// Its contract with plugins is the sub-package framework; the record's
// format is the sub-package attempt. Package scheduler is the service that
// builds a Scheduler from a configuration and runs it.
package minisched
