// What a story gets: a client, its own namespace, the scheduler's attempts
// and a place to narrate.

package scenario

import (
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/testenv"
)

// Env is what a scenario gets: a client, its own namespace, a log of the
// scheduler's attempts, and a place to narrate.
type Env struct {
	Client kubernetes.Interface
	// Namespace is the scenario's own namespace (its name).
	Namespace string
	// SchedulerName is the profile the scenario's pods ask for.
	SchedulerName string
	// Attempts is every scheduling attempt the scheduler reported.
	Attempts *AttemptLog
	// RestConfig reaches the apiserver as an administrator, for a scenario
	// that starts schedulers of its own (OwnSchedulers).
	RestConfig *rest.Config
	// MetricsURL is the runner's scheduler's /metrics, in Prometheus' text
	// format; empty for a scenario that starts its own schedulers.
	MetricsURL string
	out        io.Writer
	// controllers are the kube-controller-manager controllers the story
	// runs for itself (Scenario.Controllers).
	controllers []string
	// featureGates are the story's (Scenario.FeatureGates), which the
	// replicas it starts run with.
	featureGates features.Gates
	// environment runs the descheduler for a story that lists the
	// Descheduler part; nil for the others.
	environment *testenv.Environment
	// patient: a person steps the scheduler through its cycles (start
	// --step), so the waits for what it does wait as long as ctx lasts.
	patient bool
}

// DefaultWait bounds every wait in the scenarios.
const DefaultWait = 30 * time.Second

// WaitLimit is how long a wait for the scheduler to do something may
// take: timeout, or, while a person steps the scheduler (start --step),
// patientWait: each cycle then waits for Next, and a story must not give
// up on it. A wait that checks something does NOT happen for a while
// (ExpectNoNewAttempts) keeps its duration.
func (e *Env) WaitLimit(timeout time.Duration) time.Duration {
	if e.patient {
		return patientWait
	}
	return timeout
}

// patientWait bounds a wait while a person steps the scheduler: a day,
// that is, until they press Run or Ctrl-C.
const patientWait = 24 * time.Hour

// PollInterval is how often waits look again.
const PollInterval = 50 * time.Millisecond

// Logf narrates one line of the scenario's story.
func (e *Env) Logf(format string, args ...interface{}) {
	if e.out == nil {
		return
	}
	fmt.Fprintf(e.out, "    "+format+"\n", args...)
}
