// The parts a story needs beside its scheduler (Scenario.Parts,
// Provisioner, DRADriver), started before the story and stopped after it.

package scenario

import (
	"context"
	"errors"

	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/testenv"
)

// startParts starts what the scenario needs beside its scheduler: KWOK,
// kube-controller-manager with the controllers it needs (controllersFor;
// kept for the next scenarios), another with its own Controllers (stopped
// with it), the example provisioner and the example DRA driver. stop stops them in the reverse order and returns the first
// error; if one fails to start, those started before it are stopped.
func (r *Runner) startParts(ctx context.Context, client kubernetes.Interface, s Scenario) (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error { return stopInReverse(stops) }
	defer func() {
		if err != nil {
			_ = stopAll()
		}
	}()
	if s.Parts.Has(KWOK) {
		stopKWOK, err := r.startKWOK(kwokOptions(s))
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopKWOK)
	}
	if controllers := controllersFor(s); len(controllers) > 0 {
		if err := r.startControllerManager(controllers...); err != nil {
			return nil, err
		}
	}
	if len(s.Controllers) > 0 {
		stopControllers, err := r.startStoryControllers(s)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopControllers)
	}
	if s.Provisioner != nil {
		stopProvisioner, err := startProvisioner(ctx, client, s.Provisioner)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopProvisioner)
	}
	if s.DRADriver != nil {
		stops = append(stops, startDRADriver(ctx, client, *s.DRADriver))
	}
	return stopAll, nil
}

// startKWOK starts KWOK in the runner's Environment. Its stop reports no
// error: how KWOK ended is no part of the scenario's verdict.
func (r *Runner) startKWOK(opts testenv.KWOKOptions) (stop func() error, err error) {
	if r.Environment == nil {
		return nil, errors.New("this scenario needs KWOK, which needs the runner's Environment")
	}
	kwok, err := r.Environment.StartKWOKWith(opts)
	if err != nil {
		return nil, err
	}
	return func() error { _ = kwok.Stop(); return nil }, nil
}

// controllersFor is the kube-controller-manager controllers the scenario
// needs: the storage ones for Storage or a Provisioner, the DRA ones for
// DRA or a DRADriver, the PodGroup protection controller for a story with
// GenericWorkload (so that deleting a PodGroup finishes).
func controllersFor(s Scenario) []string {
	var controllers []string
	if s.Parts.Has(Storage) || s.Provisioner != nil {
		controllers = append(controllers, testenv.StorageControllers...)
	}
	if s.Parts.Has(DRA) || s.DRADriver != nil {
		controllers = append(controllers, testenv.DRAControllers...)
	}
	if s.FeatureGates.GenericWorkload {
		controllers = append(controllers, testenv.WorkloadControllers...)
	}
	return controllers
}

// stopInReverse calls each stop, the last first, and returns the first
// error.
func stopInReverse(stops []func() error) error {
	var first error
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}
