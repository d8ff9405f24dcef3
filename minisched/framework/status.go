// This file is Status: the code and reasons every extension point answers
// with, and what the framework, the loop and the queue do with each code.

package framework

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Code is the outcome of one plugin call. The framework, the scheduling loop
// and the queue each react to the code, never to the message.
type Code int

// The codes a plugin may return. Each extension point documents which of them
// it accepts; any other code is treated as Error.
const (
	// Success: the plugin is satisfied. A nil *Status means Success.
	Success Code = iota
	// Error: something went wrong that is not the pod's fault (a bug, an
	// unreachable apiserver). The pod is retried after backoff, and the pod
	// condition's reason is SchedulerError.
	Error
	// Unschedulable: the pod does not fit, but a change in the cluster might
	// make it fit (a pod elsewhere is deleted, a node gains capacity).
	// PostFilter (preemption) may try to make room. The pod waits among the
	// unschedulable pods until an event registered by the rejecting plugin.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit and preemption on
	// this node cannot help (a node selector that does not match). Otherwise
	// handled like Unschedulable.
	UnschedulableAndUnresolvable
	// Wait: from Permit, the pod is parked among the waiting pods until a
	// plugin allows or rejects it, or its timeout expires. From
	// PlacementFeasible, a pod group's minCount is not met yet: its cycle
	// tries the next member, and fails the group if none is left.
	Wait
	// Skip: from PreFilter or PreScore, "this plugin has nothing to do for
	// this pod": its Filter or Score is not called for this pod. From
	// PreBindPreFlight, likewise for its PreBind. From Bind, "this binder
	// does not handle this pod": the next binder is tried.
	Skip
	// Pending: the pod waits for something outside the scheduler (an
	// external controller); like Unschedulable, but when an event the plugin
	// registered says the wait may be over, the pod goes straight to activeQ,
	// without serving its backoff.
	Pending
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending"}

// String returns the code's name, as kube-scheduler prints it.
func (c Code) String() string {
	if int(c) >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Status is what an extension point returns: a code, human-readable reasons,
// the error behind an Error, and the plugin that produced it.
//
// All methods work on a nil receiver, which means Success, so a plugin can
// simply `return nil`.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a Status with the given code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an error into a Status with code Error; nil stays nil.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, err: err}
}

// Code returns the status code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons, one per failed check; an attached error comes
// first.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	if s.err != nil {
		return append([]string{s.err.Error()}, s.reasons...)
	}
	return s.reasons
}

// WithError attaches err (a *FitError, say) to the status and returns it. The
// code is kept: an Unschedulable status may carry the FitError that explains
// it. On nil (Success) it returns AsStatus(err): an error is never dropped.
func (s *Status) WithError(err error) *Status {
	if s == nil {
		return AsStatus(err)
	}
	s.err = err
	return s
}

// AppendReason adds a reason at the end (a pod group's message gains its
// PodGroupPostFilter's this way).
func (s *Status) AppendReason(reason string) {
	if s != nil {
		s.reasons = append(s.reasons, reason)
	}
}

// Clone returns a copy that shares nothing mutable with s (nil for nil).
func (s *Status) Clone() *Status {
	if s == nil {
		return nil
	}
	c := *s
	c.reasons = slices.Clone(s.reasons)
	return &c
}

// Err returns the attached error, if any.
func (s *Status) Err() error {
	if s == nil {
		return nil
	}
	return s.err
}

// Message joins the reasons with ", ", as kube-scheduler does.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons(), ", ")
}

// Plugin names the plugin that returned this status ("" if none was set).
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that produced the status and returns it.
// The runtime calls it for every non-success status a plugin returns. On nil
// it returns nil: Success names no plugin.
func (s *Status) WithPlugin(plugin string) *Status {
	if s == nil {
		return nil
	}
	s.plugin = plugin
	return s
}

// AsError returns nil for Success, and otherwise an error carrying the
// message (the original error for code Error).
func (s *Status) AsError() error {
	if s.IsSuccess() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// IsSuccess reports whether the code is Success (true for nil).
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsWait reports whether Permit asked the pod to wait.
func (s *Status) IsWait() bool { return s.Code() == Wait }

// IsError reports whether the code is Error.
func (s *Status) IsError() bool { return s.Code() == Error }

// IsSkip reports whether the plugin opted out for this pod.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod was rejected as not fitting: Unschedulable,
// UnschedulableAndUnresolvable or Pending.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable || c == Pending
}

// Equal compares code, reasons and plugin; it is meant for tests.
func (s *Status) Equal(o *Status) bool {
	if s == nil || o == nil {
		return s.IsSuccess() && o.IsSuccess()
	}
	if s.code != o.code || s.plugin != o.plugin || len(s.Reasons()) != len(o.Reasons()) {
		return false
	}
	for i, r := range s.Reasons() {
		if o.Reasons()[i] != r {
			return false
		}
	}
	return true
}

// String renders the status for logs and test failures.
func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if s.plugin != "" {
		return fmt.Sprintf("%s(%s): %s", s.code, s.plugin, s.Message())
	}
	return fmt.Sprintf("%s: %s", s.code, s.Message())
}

// pluginError turns a status of an unexpected code (an error, or a code the
// extension point does not accept) into an Error naming the extension point
// and the plugin.
func pluginError(point string, pl Plugin, s *Status) *Status {
	return AsStatus(fmt.Errorf("running %s plugin %q: %w", point, pl.Name(), s.AsError())).WithPlugin(pl.Name())
}
