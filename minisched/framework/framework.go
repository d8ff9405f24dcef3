// This file is a profile built from its configuration: the Framework, the
// options NewFramework takes, the one table of extension points, and the
// rules by which NewFramework turns a KubeSchedulerProfile into each
// extension point's plugins in order (multiPoint expansion), their score
// weights and their queueing hints. It ends with what the built profile
// answers about itself. What it hands its plugins is in handle.go; the
// methods that run each extension point are in the run_*.go files.

package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/metrics"
)

// Framework is the runtime of one profile: the plugins enabled at each
// extension point, in order, with their score weights, and the methods that
// run each extension point. It also implements Handle for its plugins.
type Framework struct {
	profileName string

	preEnqueuePlugins []PreEnqueuePlugin
	queueSortPlugins  []QueueSortPlugin
	preFilterPlugins  []PreFilterPlugin
	filterPlugins     []FilterPlugin
	postFilterPlugins []PostFilterPlugin
	preScorePlugins   []PreScorePlugin
	scorePlugins      []ScorePlugin
	reservePlugins    []ReservePlugin
	permitPlugins     []PermitPlugin
	preBindPlugins    []PreBindPlugin
	bindPlugins       []BindPlugin
	postBindPlugins   []PostBindPlugin
	// The pod-group extension points (GenericWorkload). PlacementFeasible
	// is not configured: it is GangScheduling whenever that plugin is in
	// the profile and the gate is on (wirePlacementFeasible).
	placementGeneratePlugins  []PlacementGeneratePlugin
	placementFeasiblePlugins  []PlacementFeasiblePlugin
	placementScorePlugins     []PlacementScorePlugin
	podGroupPostFilterPlugins []PodGroupPostFilterPlugin

	// scoreWeights holds each Score plugin's weight (at least 1), and
	// placementScoreWeights each PlacementScore plugin's.
	scoreWeights          map[string]int64
	placementScoreWeights map[string]int64
	// queueingHints holds, for each plugin that can reject pods, the events
	// that may make such a pod schedulable.
	queueingHints map[string][]ClusterEventWithHint

	pluginsMap   map[string]Plugin
	snapshot     SharedLister
	clientSet    kubernetes.Interface
	recorder     events.EventRecorder
	informers    informers.SharedInformerFactory
	waitingPods  *waitingPodsMap
	parallelizer Parallelizer
	clock        clock.WithDelayedExecution
	extenders    []Extender
	// draManager is the scheduler's shared DRA state; nil without DRA.
	draManager SharedDRAManager
	// podGroupManager is the cache's knowledge of pod groups; nil without
	// GenericWorkload.
	podGroupManager PodGroupManager
	// gates are the scheduler's feature gates.
	gates features.Gates
	// metrics records extension point and (sampled) plugin durations; nil
	// records nothing.
	metrics *metrics.Metrics
	// nominator and activator are the scheduling queue, set once it exists.
	nominator PodNominator
	activator PodActivator

	// signPlugins sign pods for OpportunisticBatching, each once although
	// it may sit at several extension points; signatures says whether this
	// profile signs pods at all (computeSignPlugins says when it does not).
	signPlugins []SignPlugin
	signatures  bool
	// batch is OpportunisticBatching's stored ranking (batch.go).
	batch *OpportunisticBatch
}

// Option configures NewFramework.
type Option func(*Framework)

// WithSnapshotSharedLister sets the snapshot plugins read.
func WithSnapshotSharedLister(l SharedLister) Option { return func(f *Framework) { f.snapshot = l } }

// WithClientSet sets the client plugins use.
func WithClientSet(c kubernetes.Interface) Option { return func(f *Framework) { f.clientSet = c } }

// WithEventRecorder sets the recorder plugins use.
func WithEventRecorder(r events.EventRecorder) Option { return func(f *Framework) { f.recorder = r } }

// WithInformerFactory sets the informer factory plugins get listers from.
func WithInformerFactory(f informers.SharedInformerFactory) Option {
	return func(fw *Framework) { fw.informers = f }
}

// WithParallelism sets how many goroutines Filter and Score use.
func WithParallelism(n int) Option {
	return func(f *Framework) { f.parallelizer = NewParallelizer(n) }
}

// WithMetrics records how long extension points and, in sampled cycles
// (CycleState.RecordPluginMetrics), each plugin call take.
func WithMetrics(m *metrics.Metrics) Option { return func(f *Framework) { f.metrics = m } }

// WithExtenders sets the HTTP extenders, shared by every profile.
func WithExtenders(e []Extender) Option { return func(f *Framework) { f.extenders = e } }

// WithPodGroupManager sets what the scheduler knows of pod groups, live
// (the cache), for plugins that judge a group outside its cycle
// (GangScheduling's PreEnqueue and Permit).
func WithPodGroupManager(m PodGroupManager) Option {
	return func(f *Framework) { f.podGroupManager = m }
}

// WithFeatureGates sets the scheduler's feature gates (kube-scheduler's
// defaults without it).
func WithFeatureGates(g features.Gates) Option { return func(f *Framework) { f.gates = g } }

// WithSharedDRAManager sets the DRA state every profile shares.
func WithSharedDRAManager(m SharedDRAManager) Option { return func(f *Framework) { f.draManager = m } }

// WithClock sets the clock behind Permit timeouts (a fake one in tests).
func WithClock(c clock.WithDelayedExecution) Option { return func(f *Framework) { f.clock = c } }

// extensionPoint is one row of the extension-point table: the configured
// PluginSet of one extension point, how to tell whether a plugin implements
// it, and the Framework's list of its plugins.
type extensionPoint struct {
	// name is the extension point's name ("PreFilter"); in a configuration
	// its field is the same in lowerCamelCase ("preFilter").
	name string
	// set is the profile's PluginSet for this extension point.
	set *configv1.PluginSet
	// rejects says plugins here can reject a pod, so they register the
	// events that may undo a rejection (their queueing hints).
	rejects bool
	// implements reports whether a plugin implements the interface.
	implements func(Plugin) bool
	// add appends a plugin to the Framework's list; enabled lists it.
	add     func(Plugin)
	enabled func() []Plugin
}

// canReject marks the extension points whose plugins can reject a pod.
const canReject = true

// extensionPoints is the table of extension points, in the order a pod
// meets them, each tied to its PluginSet in p and its list in f. It is the
// one list of extension points: building a framework, collecting queueing
// hints, listing plugins and validating a configuration all walk it.
func (f *Framework) extensionPoints(p *configv1.Plugins) []extensionPoint {
	return []extensionPoint{
		point("PreEnqueue", &p.PreEnqueue, &f.preEnqueuePlugins, canReject),
		point("QueueSort", &p.QueueSort, &f.queueSortPlugins, false),
		point("PreFilter", &p.PreFilter, &f.preFilterPlugins, canReject),
		point("Filter", &p.Filter, &f.filterPlugins, canReject),
		point("PostFilter", &p.PostFilter, &f.postFilterPlugins, false),
		point("PreScore", &p.PreScore, &f.preScorePlugins, false),
		point("Score", &p.Score, &f.scorePlugins, false),
		point("Reserve", &p.Reserve, &f.reservePlugins, canReject),
		point("Permit", &p.Permit, &f.permitPlugins, canReject),
		point("PreBind", &p.PreBind, &f.preBindPlugins, false),
		point("Bind", &p.Bind, &f.bindPlugins, false),
		point("PostBind", &p.PostBind, &f.postBindPlugins, false),
		point("PlacementGenerate", &p.PlacementGenerate, &f.placementGeneratePlugins, false),
		point("PlacementScore", &p.PlacementScore, &f.placementScorePlugins, false),
		point("PodGroupPostFilter", &p.PodGroupPostFilter, &f.podGroupPostFilterPlugins, false),
	}
}

// point makes a row of the table for plugins of interface T kept in list.
func point[T Plugin](name string, set *configv1.PluginSet, list *[]T, rejects bool) extensionPoint {
	return extensionPoint{
		name:       name,
		set:        set,
		rejects:    rejects,
		implements: func(pl Plugin) bool { _, ok := pl.(T); return ok },
		add:        func(pl Plugin) { *list = append(*list, pl.(T)) },
		enabled: func() []Plugin {
			out := make([]Plugin, len(*list))
			for i, pl := range *list {
				out[i] = pl
			}
			return out
		},
	}
}

// NamedPluginSet is one PluginSet of a configuration's plugins with the name
// of its field there ("multiPoint", "preFilter" ...).
type NamedPluginSet struct {
	Field string
	Set   *configv1.PluginSet
}

// PluginSets lists the PluginSets of p: multiPoint first, then one per
// extension point in the order a pod meets them. Configuration defaulting
// and validation walk it, so they cover the same extension points as the
// framework.
func PluginSets(p *configv1.Plugins) []NamedPluginSet {
	out := []NamedPluginSet{{Field: "multiPoint", Set: &p.MultiPoint}}
	for _, e := range (&Framework{}).extensionPoints(p) {
		out = append(out, NamedPluginSet{Field: strings.ToLower(e.name[:1]) + e.name[1:], Set: e.set})
	}
	return out
}

// NewFramework builds the runtime of one profile. The profile's Plugins must
// already be merged with the defaults (package scheduler does that, with
// kube-scheduler's rules). NewFramework instantiates every plugin named
// anywhere, checks each extension point's enabled list, then expands
// multiPoint into the extension points (expandMultiPoint states the rules).
// Score weights come from the Score entry if there is one, else from
// multiPoint; 0 means 1.
func NewFramework(ctx context.Context, r Registry, profile *configv1.KubeSchedulerProfile,
	opts ...Option) (*Framework, error) {
	f := &Framework{
		profileName:           deref(profile.SchedulerName),
		scoreWeights:          map[string]int64{},
		placementScoreWeights: map[string]int64{},
		queueingHints:         map[string][]ClusterEventWithHint{},
		pluginsMap:            map[string]Plugin{},
		waitingPods:           newWaitingPodsMap(),
		parallelizer:          NewParallelizer(DefaultParallelism),
		clock:                 clock.RealClock{},
	}
	for _, o := range opts {
		o(f)
	}
	plugins := &configv1.Plugins{}
	if profile.Plugins != nil {
		plugins = profile.Plugins.DeepCopy()
	}

	args := map[string]*runtime.RawExtension{}
	for i := range profile.PluginConfig {
		pc := &profile.PluginConfig[i]
		if _, dup := args[pc.Name]; dup {
			return nil, fmt.Errorf("profile %q: pluginConfig lists %q twice", f.profileName, pc.Name)
		}
		args[pc.Name] = &pc.Args
	}

	// Instantiate every plugin that is enabled somewhere, multiPoint included.
	needed := sets.New[string]()
	for _, ps := range PluginSets(plugins) {
		for _, p := range ps.Set.Enabled {
			needed.Insert(p.Name)
		}
	}
	for _, name := range sets.List(needed) {
		factory, ok := r[name]
		if !ok {
			return nil, fmt.Errorf("profile %q: unknown plugin %q (known plugins: %s)",
				f.profileName, name, strings.Join(r.Names(), ", "))
		}
		pl, err := factory(ctx, args[name], f)
		if err != nil {
			return nil, fmt.Errorf("profile %q: plugin %q: %w", f.profileName, name, err)
		}
		f.pluginsMap[name] = pl
	}

	points := f.extensionPoints(plugins)
	for _, e := range points {
		seen := sets.New[string]()
		for _, p := range e.set.Enabled {
			if !e.implements(f.pluginsMap[p.Name]) {
				return nil, fmt.Errorf("profile %q: plugin %q is enabled at %s but does not implement the %s extension point",
					f.profileName, p.Name, e.name, e.name)
			}
			if seen.Has(p.Name) {
				return nil, fmt.Errorf("profile %q: plugin %q is enabled twice at %s", f.profileName, p.Name, e.name)
			}
			seen.Insert(p.Name)
		}
	}
	if err := f.expandMultiPoint(points, plugins.MultiPoint.Enabled); err != nil {
		return nil, err
	}

	if len(f.queueSortPlugins) != 1 {
		return nil, fmt.Errorf("profile %q: exactly one QueueSort plugin is required, got %d",
			f.profileName, len(f.queueSortPlugins))
	}
	if len(f.bindPlugins) == 0 {
		return nil, fmt.Errorf("profile %q: at least one Bind plugin is required", f.profileName)
	}
	if len(f.placementGeneratePlugins) > 1 {
		return nil, fmt.Errorf("profile %q: at most one PlacementGenerate plugin is allowed, got %d",
			f.profileName, len(f.placementGeneratePlugins))
	}
	if err := setWeights[ScorePlugin](f, "score", f.scoreWeights,
		append(slices.Clone(plugins.Score.Enabled), plugins.MultiPoint.Enabled...)); err != nil {
		return nil, err
	}
	if err := setWeights[PlacementScorePlugin](f, "placement score", f.placementScoreWeights,
		append(slices.Clone(plugins.PlacementScore.Enabled), plugins.MultiPoint.Enabled...)); err != nil {
		return nil, err
	}
	f.wirePlacementFeasible(klog.FromContext(ctx))
	if err := f.collectQueueingHints(ctx, points); err != nil {
		return nil, err
	}
	f.computeSignPlugins(klog.FromContext(ctx))
	f.batch = newOpportunisticBatch(f)
	return f, nil
}

// expandMultiPoint fills each extension point's list from its own enabled
// plugins and the multiPoint plugins that implement it, with kube-scheduler's
// rules (each is applied where it is marked below).
func (f *Framework) expandMultiPoint(points []extensionPoint, multiPoint []configv1.Plugin) error {
	for _, e := range points {
		enabled := make([]string, 0, len(e.set.Enabled))
		for _, p := range e.set.Enabled {
			enabled = append(enabled, p.Name)
		}
		enabledHere := sets.New(enabled...)
		disabledHere := sets.New[string]()
		for _, p := range e.set.Disabled {
			disabledHere.Insert(p.Name)
		}

		var expanded []string // multiPoint plugins placed here by expansion
		overridden := sets.New[string]()
		// Rule 1: "*" disabled at an extension point stops all expansion there.
		if !disabledHere.Has("*") {
			for _, p := range multiPoint {
				// Rule 2: a plugin is expanded only to the extension points it
				// implements, and not where it is disabled by name.
				if !e.implements(f.pluginsMap[p.Name]) || disabledHere.Has(p.Name) {
					continue
				}
				// Rule 3: a plugin also enabled at this extension point keeps
				// that specific entry, which overrides its multiPoint one.
				if enabledHere.Has(p.Name) {
					overridden.Insert(p.Name)
					continue
				}
				if slices.Contains(expanded, p.Name) {
					return fmt.Errorf("profile %q: plugin %q is enabled twice in multiPoint", f.profileName, p.Name)
				}
				expanded = append(expanded, p.Name)
			}
		}

		// Rule 4, the order: overridden plugins first (in this extension
		// point's order), then the other multiPoint plugins (in multiPoint's
		// order), then the remaining plugins enabled here.
		var order []string
		for _, name := range enabled {
			if overridden.Has(name) {
				order = append(order, name)
			}
		}
		order = append(order, expanded...)
		for _, name := range enabled {
			if !overridden.Has(name) {
				order = append(order, name)
			}
		}
		for _, name := range order {
			e.add(f.pluginsMap[name])
		}
	}
	return nil
}

// setWeights records the weight of each plugin of interface P (Score or
// PlacementScore, which kind names in errors) in weights; entries lists the
// extension point's own entries before the multiPoint ones, so its own
// entry wins. The weights of one kind must not let a total overflow, as
// kube-scheduler checks.
func setWeights[P Plugin](f *Framework, kind string, weights map[string]int64, entries []configv1.Plugin) error {
	var total int64
	for _, p := range entries {
		if _, ok := f.pluginsMap[p.Name].(P); !ok {
			continue
		}
		if _, ok := weights[p.Name]; ok {
			continue // the extension point's own entry came first and wins over multiPoint
		}
		w := int64(1)
		if p.Weight != nil && *p.Weight != 0 {
			w = int64(*p.Weight)
		}
		if w < 0 {
			return fmt.Errorf("profile %q: plugin %q: weight must be positive, got %d", f.profileName, p.Name, w)
		}
		if w*MaxNodeScore > MaxTotalScore-total {
			return fmt.Errorf("profile %q: %s plugins: total score of Score plugins could overflow", f.profileName, kind)
		}
		total += w * MaxNodeScore
		weights[p.Name] = w
	}
	return nil
}

// gangSchedulingName is the plugin the framework makes the PlacementFeasible
// plugin.
const gangSchedulingName = "GangScheduling"

// wirePlacementFeasible makes GangScheduling the profile's PlacementFeasible
// plugin when GenericWorkload is on and the profile has it, as
// kube-scheduler does: the extension point is not configurable. Without it
// a gang's minCount is not enforced within a cycle, which kube-scheduler
// says at error level too.
func (f *Framework) wirePlacementFeasible(logger klog.Logger) {
	if !f.gates.GenericWorkload {
		return
	}
	if pl, ok := f.pluginsMap[gangSchedulingName].(PlacementFeasiblePlugin); ok {
		f.placementFeasiblePlugins = []PlacementFeasiblePlugin{pl}
		return
	}
	logger.Error(nil, "GenericWorkload is enabled, but GangScheduling plugin is not set. "+
		"Gang scheduling using PodGroups may not work as expected.", "profile", f.profileName)
}

// collectQueueingHints asks every plugin that can reject a pod which events
// may undo that. A rejecting plugin without EnqueueExtensions gets every event.
func (f *Framework) collectQueueingHints(ctx context.Context, points []extensionPoint) error {
	// Extenders cannot say which events matter to them: a pod some extender
	// rejected is moved by any event (see ExtenderName).
	if len(f.extenders) > 0 {
		f.queueingHints[ExtenderName] = []ClusterEventWithHint{
			{Event: ClusterEvent{Resource: WildCard, ActionType: All, Label: "WildCard"}},
		}
	}
	for _, e := range points {
		if !e.rejects {
			continue
		}
		for _, pl := range e.enabled() {
			if _, done := f.queueingHints[pl.Name()]; done {
				continue
			}
			ext, ok := pl.(EnqueueExtensions)
			if !ok {
				f.queueingHints[pl.Name()] = []ClusterEventWithHint{
					{Event: ClusterEvent{Resource: WildCard, ActionType: All, Label: "WildCard"}},
				}
				continue
			}
			evs, err := ext.EventsToRegister(ctx)
			if err != nil {
				return fmt.Errorf("profile %q: plugin %q: EventsToRegister: %w", f.profileName, pl.Name(), err)
			}
			f.queueingHints[pl.Name()] = evs
		}
	}
	return nil
}

// deref returns *s, or "" for nil (an unset schedulerName).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profileName }

// QueueingHints returns, per rejecting plugin, the events it registered.
func (f *Framework) QueueingHints() map[string][]ClusterEventWithHint { return f.queueingHints }

// HasFilterPlugins reports whether any Filter plugin is enabled.
func (f *Framework) HasFilterPlugins() bool { return len(f.filterPlugins) > 0 }

// HasPostFilterPlugins reports whether any PostFilter plugin is enabled.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilterPlugins) > 0 }

// HasScorePlugins reports whether any Score plugin is enabled.
func (f *Framework) HasScorePlugins() bool { return len(f.scorePlugins) > 0 }

// ScoreWeight returns the weight of a Score plugin the profile names (0 for
// any other name).
func (f *Framework) ScoreWeight(name string) int64 { return f.scoreWeights[name] }

// PlacementScoreWeight returns a PlacementScore plugin's weight (0 if it is
// not one of this profile's).
func (f *Framework) PlacementScoreWeight(name string) int64 { return f.placementScoreWeights[name] }

// FilterPluginNames returns the Filter plugins' names, in the order they
// run on a node.
func (f *Framework) FilterPluginNames() []string {
	names := make([]string, len(f.filterPlugins))
	for i, pl := range f.filterPlugins {
		names[i] = pl.Name()
	}
	return names
}

// ListPlugins returns the enabled plugins per extension point, in order: the
// profile after multiPoint expansion. Tests use it to check a configuration's
// effective plugin lists.
func (f *Framework) ListPlugins() map[string][]string {
	out := map[string][]string{}
	for _, e := range f.extensionPoints(&configv1.Plugins{}) {
		for _, pl := range e.enabled() {
			out[e.name] = append(out[e.name], pl.Name())
		}
	}
	return out
}
