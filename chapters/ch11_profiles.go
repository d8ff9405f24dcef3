// Chapter 11's story (docs/11-profiles.md), profiles and configuration:
// one scheduler, one queue, two profiles, each pod scheduled by the profile
// its spec.schedulerName names.

package chapters

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minisched/minisched/scenario"
)

// binPacking is the second profile of ch11-profiles.
const binPacking = "bin-packing"

// profilesConfig is ch11-profiles' configuration, as a reader would write it
// for --config. The default profile is left as it is. bin-packing differs in
// two ways: pluginConfig gives NodeResourcesFit the MostAllocated strategy
// (prefer the fullest node that fits), and multiPoint re-enables
// NodeResourcesFit with weight 3 (the default is 1), so its packing
// outweighs the other scores. Both profiles share the queue, so they must
// sort it the same way; both keep PrioritySort.
const profilesConfig = `profiles:
- schedulerName: default-scheduler
- schedulerName: ` + binPacking + `
  plugins:
    multiPoint:
      enabled:
      - name: NodeResourcesFit
        weight: 3
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
`

// chapter11 is chapter 11's story.
func chapter11() []scenario.Scenario {
	return []scenario.Scenario{
		{
			Name: "ch11-profiles", Chapter: 11,
			Description: "two profiles in one scheduler, chosen by spec.schedulerName: default-scheduler spreads four " +
				"1-cpu pods over four nodes, bin-packing (NodeResourcesFit MostAllocated, weight 3) piles three onto " +
				"one node, and a pod naming no profile of ours is never tried",
			Config: scenario.ConfigYAML(profilesConfig),
			Run:    runProfiles,
		},
	}
}

func runProfiles(ctx context.Context, env *scenario.Env) error {
	if err := env.CreateNodes(ctx, scenario.Nodes(scenario.Numbered("node", 0, 3)...)...); err != nil {
		return err
	}
	// Every pod asks for a quarter of a node's cpu and memory alike, so
	// BalancedAllocation scores all nodes the same, and the profiles'
	// NodeResourcesFit strategies alone decide.
	shape := map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "4Gi"}

	// 1. default-scheduler: LeastAllocated, the emptiest node wins.
	web := scenario.Numbered("web-", 0, 3)
	for _, name := range web {
		// The scenario's pods ask for env.SchedulerName, the first profile.
		if err := env.CreatePods(ctx, scenario.MakePod(name).Req(shape).Obj()); err != nil {
			return err
		}
	}
	webNodes, err := env.WaitForPodsBound(ctx, web)
	if err != nil {
		return err
	}
	env.Logf("%s (schedulerName %s) → %s: LeastAllocated puts each on the emptiest node", strings.Join(web, ", "),
		env.SchedulerName, strings.Join(webNodes, ", "))
	if n := sets.New(webNodes...).Len(); n != len(web) {
		return fmt.Errorf("%s spread over %d nodes, want one each on %d nodes", env.SchedulerName, n, len(web))
	}

	// 2. bin-packing: the same shape, MostAllocated, the fullest node wins.
	batch := scenario.Numbered("batch-", 0, 2)
	for _, name := range batch {
		if err := env.CreatePods(ctx, scenario.MakePod(name).SchedulerName(binPacking).Req(shape).Obj()); err != nil {
			return err
		}
	}
	batchNodes, err := env.WaitForPodsBound(ctx, batch)
	if err != nil {
		return err
	}
	env.Logf("%s (schedulerName %s) → %s: MostAllocated piles them onto one node until it is full",
		strings.Join(batch, ", "), binPacking, strings.Join(batchNodes, ", "))
	for _, name := range []string{"web-1", "batch-1"} {
		// Told after the bind: a moment after the pod shows bound.
		last, err := env.WaitForScheduledAttempt(ctx, name, scenario.DefaultWait)
		if err != nil {
			return err
		}
		env.Logf("%s, profile %s, top scores: %s", name, last.Profile, scenario.ScoreSummary(last))
		if want := map[string]string{"web-1": env.SchedulerName, "batch-1": binPacking}[name]; last.Profile != want {
			return fmt.Errorf("%s was scheduled by profile %q, want %q", name, last.Profile, want)
		}
	}
	if d := sets.List(sets.New(batchNodes...)); len(d) != 1 {
		return fmt.Errorf("%s packed %s onto %d nodes (%s), want one", binPacking, strings.Join(batch, ", "),
			len(d), strings.Join(d, ", "))
	}

	// 3. A schedulerName no profile has: some other scheduler's pod.
	const stranger = "stranger"
	if err := env.CreatePods(ctx, scenario.MakePod(stranger).SchedulerName("no-such-scheduler").Req(shape).Obj()); err != nil {
		return err
	}
	if err := env.ExpectNoNewAttempts(ctx, stranger, 2*time.Second); err != nil {
		return err
	}
	var events []string
	for _, reason := range []string{"Scheduled", "FailedScheduling"} {
		notes, err := env.EventMessages(ctx, stranger, reason)
		if err != nil {
			return err
		}
		events = append(events, notes...)
	}
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, stranger, metav1.GetOptions{})
	if err != nil {
		return err
	}
	env.Logf("%s (schedulerName no-such-scheduler): %d attempts, %d events, node %q after 2 s: not ours, left alone",
		stranger, len(env.PodAttempts(stranger)), len(events), p.Spec.NodeName)
	if n := len(env.PodAttempts(stranger)); n > 0 || len(events) > 0 || p.Spec.NodeName != "" {
		return fmt.Errorf("%s names no profile of ours, yet was tried %d times, has events %q and node %q",
			stranger, n, events, p.Spec.NodeName)
	}
	return nil
}
