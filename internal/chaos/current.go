// This file holds the run's access to the scheduler under test: read it
// through current, never keep it, since a fault may replace it.

package chaos

import "github.com/minisched/minisched/minisched"

// current returns the scheduler under test now.
func (r *Run) current() *minisched.Scheduler { return r.sched.Load().svc.Scheduler }
