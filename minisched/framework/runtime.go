package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"

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

	// scoreWeights holds each Score plugin's weight (at least 1).
	scoreWeights map[string]int64
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

var _ Handle = &Framework{}

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
		profileName:   deref(profile.SchedulerName),
		scoreWeights:  map[string]int64{},
		queueingHints: map[string][]ClusterEventWithHint{},
		pluginsMap:    map[string]Plugin{},
		waitingPods:   newWaitingPodsMap(),
		parallelizer:  NewParallelizer(DefaultParallelism),
		clock:         clock.RealClock{},
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
	if err := f.setScoreWeights(append(slices.Clone(plugins.Score.Enabled), plugins.MultiPoint.Enabled...)); err != nil {
		return nil, err
	}
	if err := f.collectQueueingHints(ctx, points); err != nil {
		return nil, err
	}
	f.computeSignPlugins(klog.FromContext(ctx))
	f.batch = newOpportunisticBatch(f)
	return f, nil
}

// computeSignPlugins collects the plugins that sign pods: every PreFilter,
// Filter, PreScore and Score plugin must, since a signature must capture all
// that decides where the pod fits and how nodes rank. If one does not, or if
// extenders are configured (they see the pod as they like), the profile signs
// no pod and OpportunisticBatching never fires for it.
func (f *Framework) computeSignPlugins(logger klog.Logger) {
	f.signatures = true
	if len(f.extenders) > 0 {
		logger.Info("Disabling signatures for profile because it has extenders configured.", "profile", f.profileName)
		f.signatures = false
	}
	var candidates []Plugin
	for _, pl := range f.preFilterPlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.filterPlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.preScorePlugins {
		candidates = append(candidates, pl)
	}
	for _, pl := range f.scorePlugins {
		candidates = append(candidates, pl)
	}
	seen, unsigned := sets.New[string](), sets.New[string]()
	for _, pl := range candidates {
		if seen.Has(pl.Name()) {
			continue
		}
		seen.Insert(pl.Name())
		if sp, ok := pl.(SignPlugin); ok {
			f.signPlugins = append(f.signPlugins, sp)
		} else {
			unsigned.Insert(pl.Name())
			f.signatures = false
		}
	}
	if unsigned.Len() > 0 {
		logger.Info("Disabling signatures for profile because plugins do not support it.", "profile", f.profileName,
			"plugins", sets.List(unsigned))
	}
}

// SignPod returns the pod's signature: spec.schedulerName and every sign
// plugin's fragments, by key, as JSON (a key two plugins give is kept once).
// It is nil when the profile signs no pod or a plugin refuses this one; the
// queue calls it when the pod is added or updated (see SignPlugin).
func (f *Framework) SignPod(ctx context.Context, pod *v1.Pod) (sig PodSignature) {
	var status *Status
	defer f.observe(signPoint, time.Now(), &status)
	if !f.signatures {
		return nil
	}
	logger := klog.FromContext(ctx)
	fragments := map[string]any{SchedulerNameSignerName: pod.Spec.SchedulerName}
	for _, pl := range f.signPlugins {
		parts, s := pl.SignPod(ctx, pod)
		if !s.IsSuccess() {
			if s.Code() == Error {
				logger.Error(s.AsError(), "SignPod failed for plugin", "plugin", pl.Name())
			}
			logger.V(5).Info("SignPod can't sign pod due to plugin", "pod", klog.KObj(pod), "plugin", pl.Name(),
				"status", s.Message())
			return nil
		}
		for _, p := range parts {
			fragments[p.Key] = p.Value
		}
	}
	out, err := json.Marshal(fragments)
	if err != nil {
		status = AsStatus(err)
		logger.Error(err, "SignPod failed to marshal signature object", "pod", klog.KObj(pod))
		return nil
	}
	return out
}

// GetNodeHint asks OpportunisticBatching for a node to try first (batch.go).
func (f *Framework) GetNodeHint(ctx context.Context, pod *v1.Pod, signature PodSignature, state *CycleState,
	cycleCount int64) string {
	return f.batch.GetNodeHint(ctx, pod, signature, state, cycleCount)
}

// StoreScheduleResults tells OpportunisticBatching what a cycle chose
// (batch.go).
func (f *Framework) StoreScheduleResults(ctx context.Context, signature PodSignature, hintedNode, chosenNode string,
	otherNodes *SortedScoredNodes, cycleCount int64) {
	f.batch.StoreScheduleResults(ctx, signature, hintedNode, chosenNode, otherNodes, cycleCount)
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

// setScoreWeights records each Score plugin's weight; entries lists the
// Score entries before the multiPoint ones, so a Score entry wins.
func (f *Framework) setScoreWeights(entries []configv1.Plugin) error {
	var total int64
	for _, p := range entries {
		if _, ok := f.pluginsMap[p.Name].(ScorePlugin); !ok {
			continue
		}
		if _, ok := f.scoreWeights[p.Name]; ok {
			continue // the Score entry came first and wins over multiPoint
		}
		w := int64(1)
		if p.Weight != nil && *p.Weight != 0 {
			w = int64(*p.Weight)
		}
		if w < 0 {
			return fmt.Errorf("profile %q: plugin %q: weight must be positive, got %d", f.profileName, p.Name, w)
		}
		if w*MaxNodeScore > MaxTotalScore-total {
			return fmt.Errorf("profile %q: total score of Score plugins could overflow", f.profileName)
		}
		total += w * MaxNodeScore
		f.scoreWeights[p.Name] = w
	}
	return nil
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profileName }

// QueueSortFunc returns the QueueSort plugin's Less.
func (f *Framework) QueueSortFunc() LessFunc { return f.queueSortPlugins[0].Less }

// QueueSortPluginName names the QueueSort plugin (profiles must agree on it).
func (f *Framework) QueueSortPluginName() string { return f.queueSortPlugins[0].Name() }

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

// Handle implementation.

// SnapshotSharedLister implements Handle.
func (f *Framework) SnapshotSharedLister() SharedLister { return f.snapshot }

// ClientSet implements Handle.
func (f *Framework) ClientSet() kubernetes.Interface { return f.clientSet }

// EventRecorder implements Handle.
func (f *Framework) EventRecorder() events.EventRecorder { return f.recorder }

// SharedInformerFactory implements Handle.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory { return f.informers }

// SharedDRAManager returns the DRA state every profile shares.
func (f *Framework) SharedDRAManager() SharedDRAManager { return f.draManager }

// Parallelizer implements Handle.
func (f *Framework) Parallelizer() Parallelizer { return f.parallelizer }

// Metrics returns the metrics the framework records to (nil: none).
func (f *Framework) Metrics() *metrics.Metrics { return f.metrics }

// Extenders returns the HTTP extenders, ignorable ones last.
func (f *Framework) Extenders() []Extender { return f.extenders }

// GetWaitingPod implements Handle.
func (f *Framework) GetWaitingPod(uid types.UID) WaitingPod {
	if wp := f.waitingPods.get(uid); wp != nil {
		return wp
	}
	return nil
}

// IterateOverWaitingPods implements Handle.
func (f *Framework) IterateOverWaitingPods(fn func(WaitingPod)) { f.waitingPods.iterate(fn) }

// RejectWaitingPod implements Handle.
func (f *Framework) RejectWaitingPod(uid types.UID) bool {
	if wp := f.waitingPods.get(uid); wp != nil {
		wp.Reject("", "removed")
		return true
	}
	return false
}

// Running the extension points.

// Extension point names, as the extension_point label of the metrics.
const (
	preFilterPoint  = "PreFilter"
	filterPoint     = "Filter"
	postFilterPoint = "PostFilter"
	signPoint       = "Sign"
	preScorePoint   = "PreScore"
	scorePoint      = "Score"
	reservePoint    = "Reserve"
	unreservePoint  = "Unreserve"
	permitPoint     = "Permit"
	preBindPoint    = "PreBind"
	bindPoint       = "Bind"
	postBindPoint   = "PostBind"
)

// observe records, when a Run function returns, how long its extension
// point took and the status it returned. Use it as
// `defer f.observe(point, time.Now(), &status)` with a named result.
func (f *Framework) observe(point string, start time.Time, status **Status) {
	if f.metrics == nil {
		return
	}
	f.metrics.ExtensionPoint(point, (*status).Code().String(), f.profileName, time.Since(start))
}

// ObserveFilter records the Filter extension point's duration over all
// nodes: the scheduler's search runs the plugins node by node, so it times
// the whole.
func (f *Framework) ObserveFilter(start time.Time, status *Status) {
	f.observe(filterPoint, start, &status)
}

// clockOrigin is what sampled plugin timings count from: time.Since of it
// reads only the monotonic clock, where time.Now reads the wall clock too,
// and a sampled cycle times thousands of calls. It is a second before the
// package was initialised, so that a sampled start is never 0.
var clockOrigin = time.Now().Add(-time.Second)

// sampleStart starts timing a plugin call in a sampled cycle (the time since
// clockOrigin); in other cycles it returns 0 and costs no clock read.
func (f *Framework) sampleStart(state *CycleState) time.Duration {
	if f.metrics == nil || state == nil || !state.RecordPluginMetrics {
		return 0
	}
	return time.Since(clockOrigin)
}

// recordPlugin records a plugin call that sampleStart timed.
func (f *Framework) recordPlugin(plugin, point string, start time.Duration, s *Status) {
	if start == 0 {
		return
	}
	f.metrics.PluginExecution(plugin, point, s.Code().String(), time.Since(clockOrigin)-start)
}

// successObservers returns, when the cycle records plugin timings, the
// series each of plugins' successful calls at point is observed in (nil
// otherwise): Filter and Score are called on every node, and looking the
// series up by its three labels on each call of a sampled cycle came to
// 4 % of the scheduler's CPU per pod (BenchmarkSchedulingBasic).
func successObservers[P Plugin](f *Framework, state *CycleState, plugins []P, point string) []prometheus.Observer {
	if f.metrics == nil || !state.RecordPluginMetrics {
		return nil
	}
	observers := make([]prometheus.Observer, len(plugins))
	for i, pl := range plugins {
		observers[i] = f.metrics.PluginObserver(pl.Name(), point, Success.String())
	}
	return observers
}

// recordCall records a call of the i-th plugin of a list that sampleStart
// timed: a success in observers[i] (successObservers of the list), any
// other outcome, or one without observers, by its labels.
func (f *Framework) recordCall(observers []prometheus.Observer, i int, plugin, point string, start time.Duration, s *Status) {
	if start == 0 {
		return
	}
	if observers != nil && s.IsSuccess() {
		observers[i].Observe((time.Since(clockOrigin) - start).Seconds())
		return
	}
	f.recordPlugin(plugin, point, start, s)
}

// pluginError turns a status of an unexpected code (an error, or a code the
// extension point does not accept) into an Error naming the extension point
// and the plugin.
func pluginError(point string, pl Plugin, s *Status) *Status {
	return AsStatus(fmt.Errorf("running %s plugin %q: %w", point, pl.Name(), s.AsError())).WithPlugin(pl.Name())
}

// RunPreEnqueuePlugins runs PreEnqueue plugins in order; the first that does
// not return Success gates the pod (its status names the plugin). A code
// other than the rejection codes comes back as an Error.
func (f *Framework) RunPreEnqueuePlugins(ctx context.Context, pod *v1.Pod) *Status {
	for _, pl := range f.preEnqueuePlugins {
		s := pl.PreEnqueue(ctx, pod)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("PreEnqueue", pl, s)
	}
	return nil
}

// RunPreFilterPlugins runs PreFilter plugins in order and intersects their
// results. It returns the merged result, a non-success status if a plugin
// rejected the pod (or the results left no node), and the plugins that
// narrowed the node set, with the rejecting plugin if there is one (they
// count as rejectors of the excluded nodes). Plugins that return Skip are
// recorded in state.SkipFilterPlugins.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (_ *PreFilterResult, status *Status, _ sets.Set[string]) {
	defer f.observe(preFilterPoint, time.Now(), &status)
	var result *PreFilterResult
	var narrowing []string
	skip := sets.New[string]()
	for _, pl := range f.preFilterPlugins {
		start := f.sampleStart(state)
		r, s := pl.PreFilter(ctx, state, pod, nodes)
		f.recordPlugin(pl.Name(), preFilterPoint, start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			s.WithPlugin(pl.Name())
			if s.IsRejected() {
				return nil, s, sets.New(append(narrowing, pl.Name())...)
			}
			return nil, pluginError("PreFilter", pl, s), nil
		}
		if !r.AllNodes() {
			narrowing = append(narrowing, pl.Name())
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", narrowing)
			if len(narrowing) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", narrowing[0])
			}
			return result, NewStatus(UnschedulableAndUnresolvable, msg), sets.New(narrowing...)
		}
	}
	state.SkipFilterPlugins = skip
	state.filterPlugins, state.filterPluginsSet = f.activeFilterPlugins(skip), true
	state.filterObservers = successObservers(f, state, state.filterPlugins, filterPoint)
	return result, nil, sets.New(narrowing...)
}

// RunFilterPlugins runs Filter plugins on one node, in order, and stops at the
// first that does not return Success: that plugin's status (with its name)
// is the node's verdict. A code other than the rejection codes becomes Error.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	plugins, observers := state.filterPlugins, state.filterObservers
	if !state.filterPluginsSet { // no PreFilter ran on this state
		plugins, observers = f.activeFilterPlugins(state.SkipFilterPlugins), nil
	}
	for i, pl := range plugins {
		start := f.sampleStart(state)
		s := pl.Filter(ctx, state, pod, nodeInfo)
		f.recordCall(observers, i, pl.Name(), filterPoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if !s.IsRejected() {
			s = AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.AsError()))
		}
		return s.WithPlugin(pl.Name())
	}
	return nil
}

// activeFilterPlugins are the Filter plugins not in skip, in order.
func (f *Framework) activeFilterPlugins(skip sets.Set[string]) []FilterPlugin {
	var plugins []FilterPlugin
	for _, pl := range f.filterPlugins {
		if !skip.Has(pl.Name()) {
			plugins = append(plugins, pl)
		}
	}
	return plugins
}

// RunPostFilterPlugins runs PostFilter plugins in order while they return
// Unschedulable (or Pending). Success and UnschedulableAndUnresolvable return
// at once, with the plugin's result; any other code returns at once as an
// Error, with no result. If no plugin stops the run, the status is
// Unschedulable with all their reasons, naming the first plugin.
//
// The result returned with that status is the last one that asks for a
// change of the nominated node (preemption clears it when no node could
// help); nil keeps the nomination as it is.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	m *NodeToStatus) (_ *PostFilterResult, status *Status) {
	defer f.observe(postFilterPoint, time.Now(), &status)
	var result *PostFilterResult
	var reasons []string
	rejector := ""
	for _, pl := range f.postFilterPlugins {
		start := f.sampleStart(state)
		r, s := pl.PostFilter(ctx, state, pod, m)
		f.recordPlugin(pl.Name(), postFilterPoint, start, s)
		switch {
		case s.IsSuccess():
			return r, s
		case s.Code() == UnschedulableAndUnresolvable:
			return r, s.WithPlugin(pl.Name())
		case !s.IsRejected():
			return nil, AsStatus(s.AsError()).WithPlugin(pl.Name())
		}
		if r != nil && r.Mode() != ModeNoop {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = pl.Name()
		}
	}
	return result, NewStatus(Unschedulable, reasons...).WithPlugin(rejector)
}

// RunPreScorePlugins runs PreScore plugins with the feasible nodes. Plugins
// returning Skip are recorded in state.SkipScorePlugins; any other
// non-success status is an Error.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (status *Status) {
	defer f.observe(preScorePoint, time.Now(), &status)
	skip := sets.New[string]()
	for _, pl := range f.preScorePlugins {
		start := f.sampleStart(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		f.recordPlugin(pl.Name(), preScorePoint, start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return pluginError("PreScore", pl, s)
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

// RunScorePlugins scores every node with every Score plugin (nodes in
// parallel), normalises each plugin's scores once, checks they are within
// [MinNodeScore, MaxNodeScore], multiplies by the weights and sums. The
// result is in node order. Each node's Scores list every plugin's raw and
// weighted score, unless state.ScoreTotalsOnly is set: then Scores is nil
// and only TotalScore is kept, and the list's array may be one an earlier
// cycle gave back with ReleaseScores.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodes []*NodeInfo) (_ []NodePluginScores, status *Status) {
	defer f.observe(scorePoint, time.Now(), &status)
	active := f.activeScorePlugins(state)
	var result []NodePluginScores
	if state.ScoreTotalsOnly {
		result = pluginScoresPool.get(len(nodes))
	} else {
		result = make([]NodePluginScores, len(nodes))
	}
	for i, n := range nodes {
		result[i].Name = n.Node().Name
	}
	if len(active) == 0 {
		return result, nil
	}
	// raw[i*k+j] is plugin j's score of node i: plain integers, which the
	// garbage collector need not scan, in an array of an earlier cycle
	// (nothing keeps it once the totals are summed).
	k := len(active)
	raw := rawScoresPool.get(len(nodes) * k)
	defer rawScoresPool.put(raw)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errOnce sync.Once
	var failed *Status
	observers := successObservers(f, state, active, scorePoint)
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		if s := f.runRawScorePlugins(ctx, state, pod, nodes[i], active, observers, raw[i*k:(i+1)*k]); s != nil {
			errOnce.Do(func() { failed = s })
			cancel()
		}
	})
	if failed != nil {
		return nil, failed
	}
	if s := f.normalizeAndWeigh(ctx, state, pod, active, raw, result, !state.ScoreTotalsOnly); s != nil {
		return nil, s
	}
	return result, nil
}

// RunRawScorePlugins scores one node with the Score plugins the cycle did
// not skip, without normalising or weighing: each PluginScore has its Name
// and Raw score only. OpportunisticBatching rescores the last chosen node
// with it, then NormalizeScores ranks it among the stored nodes.
func (f *Framework) RunRawScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo) ([]PluginScore, *Status) {
	active := f.activeScorePlugins(state)
	raw := make([]int64, len(active))
	if s := f.runRawScorePlugins(ctx, state, pod, nodeInfo, active, nil, raw); s != nil {
		return nil, s
	}
	scores := make([]PluginScore, len(active))
	for j, pl := range active {
		scores[j] = PluginScore{Name: pl.Name(), Raw: raw[j]}
	}
	return scores, nil
}

// NormalizeScores recomputes, from the raw scores each node keeps, every
// node's normalised and weighted scores and its total, over exactly these
// nodes: a plugin's NormalizeScore sees the whole list at once. It rewrites
// the entries' Scores as new slices (never in place: the attempt record of
// the cycle that first scored them may still hold the old ones).
func (f *Framework) NormalizeScores(ctx context.Context, state *CycleState, pod *v1.Pod,
	scores []NodePluginScores) *Status {
	active := f.activeScorePlugins(state)
	k := len(active)
	raw := make([]int64, len(scores)*k)
	for i := range scores {
		for j, pl := range active {
			for _, ps := range scores[i].Scores {
				if ps.Name == pl.Name() {
					raw[i*k+j] = ps.Raw
				}
			}
		}
	}
	return f.normalizeAndWeigh(ctx, state, pod, active, raw, scores, true)
}

// activeScorePlugins are the Score plugins PreScore did not skip.
func (f *Framework) activeScorePlugins(state *CycleState) []ScorePlugin {
	var active []ScorePlugin
	for _, pl := range f.scorePlugins {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	return active
}

// slicePool lends slices of T that a cycle needs while it lasts, as long
// as the cycle before needed them, which would otherwise be left to the
// garbage collector once per pod.
type slicePool[T any] struct{ pool sync.Pool }

// get returns a slice of n zero values.
func (sp *slicePool[T]) get(n int) []T {
	if s, _ := sp.pool.Get().(*[]T); s != nil && cap(*s) >= n {
		return (*s)[:n] // put zeroed it
	}
	return make([]T, n)
}

// put takes back s, which nothing may use any more: its whole array is
// zeroed, so that the next get starts from zero values and the pool keeps
// nothing alive.
func (sp *slicePool[T]) put(s []T) {
	s = s[:cap(s)]
	clear(s)
	sp.pool.Put(&s)
}

// The pools of the scoring phase: each node's raw scores, the lists
// handed to NormalizeScore, and the node lists of totals-only cycles
// (RunScorePlugins with ScoreTotalsOnly) the scheduler gives back with
// ReleaseScores.
var (
	rawScoresPool    slicePool[int64]
	nodeScoresPool   slicePool[NodeScore]
	pluginScoresPool slicePool[NodePluginScores]
)

// ReleaseScores gives back the list RunScorePlugins returned for a cycle
// with state.ScoreTotalsOnly, once nothing reads it or a list made from it
// (SortedScoredNodes's heap is built in its array): the next such cycle
// reuses the array. Lists of other cycles are left alone.
func ReleaseScores(state *CycleState, scores []NodePluginScores) {
	if !state.ScoreTotalsOnly || cap(scores) == 0 {
		return
	}
	pluginScoresPool.put(scores)
}

// runRawScorePlugins has each plugin of active score one node, into
// out[j]; it returns the first failure. observers are successObservers of
// active, or nil.
func (f *Framework) runRawScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeInfo *NodeInfo, active []ScorePlugin, observers []prometheus.Observer, out []int64) *Status {
	for j, pl := range active {
		start := f.sampleStart(state)
		score, s := pl.Score(ctx, state, pod, nodeInfo)
		f.recordCall(observers, j, pl.Name(), scorePoint, start, s)
		if !s.IsSuccess() {
			return pluginError("Score", pl, s)
		}
		out[j] = score
	}
	return nil
}

// normalizeAndWeigh turns the raw scores of active's plugins (raw[i*k+j],
// plugin j's score of scores[i]'s node, k plugins) into each node's total:
// each plugin's NormalizeScore over all nodes (plugins in parallel), the
// range check, the weight. Only plugins with ScoreExtensions get a list of
// their scores to normalise; the others' raw scores are their scores. With
// perPlugin set, each node's Scores is a new list of every plugin's raw and
// weighted score; otherwise it is left nil.
func (f *Framework) normalizeAndWeigh(ctx context.Context, state *CycleState, pod *v1.Pod,
	active []ScorePlugin, raw []int64, scores []NodePluginScores, perPlugin bool) *Status {
	k := len(active)
	normalized := make([]NodeScoreList, k)
	extended := 0
	for _, pl := range active {
		if pl.ScoreExtensions() != nil {
			extended++
		}
	}
	// The lists to normalise share one array of an earlier cycle: a
	// NormalizeScore rewrites its list in place and keeps nothing of it.
	lists := nodeScoresPool.get(extended * len(scores))
	defer nodeScoresPool.put(lists)
	for j, pl := range active {
		if pl.ScoreExtensions() == nil {
			continue
		}
		normalized[j], lists = lists[:len(scores):len(scores)], lists[len(scores):]
		for i := range scores {
			normalized[j][i] = NodeScore{Name: scores[i].Name, Score: raw[i*k+j]}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errOnce sync.Once
	var failed *Status
	f.parallelizer.Until(ctx, k, func(j int) {
		if normalized[j] == nil {
			return
		}
		if s := active[j].ScoreExtensions().NormalizeScore(ctx, state, pod, normalized[j]); !s.IsSuccess() {
			errOnce.Do(func() { failed = pluginError("Normalize on Score", active[j], s) })
			cancel()
		}
	})
	if failed != nil {
		return failed
	}
	// One array holds every node's scores; each node's slice of it is capped
	// at its end, so that appending to it (an extender's score) copies it
	// out instead of overwriting the next node's.
	var all []PluginScore
	if perPlugin {
		all = make([]PluginScore, len(scores)*k)
	}
	for i := range scores {
		scores[i].TotalScore = 0
		scores[i].Scores = nil
		if perPlugin {
			scores[i].Scores = all[i*k : (i+1)*k : (i+1)*k]
		}
	}
	for j, pl := range active {
		w := f.scoreWeights[pl.Name()]
		for i := range scores {
			score := raw[i*k+j]
			if normalized[j] != nil {
				score = normalized[j][i].Score
			}
			if score > MaxNodeScore || score < MinNodeScore {
				err := fmt.Errorf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] "+
					"after normalizing", pl.Name(), score, MinNodeScore, MaxNodeScore)
				return AsStatus(err).WithPlugin(pl.Name())
			}
			weighted := score * w
			scores[i].TotalScore += weighted
			if perPlugin {
				scores[i].Scores[j] = PluginScore{Name: pl.Name(), Raw: raw[i*k+j], Score: weighted}
			}
		}
	}
	return nil
}

// RunReservePluginsReserve runs Reserve in order; the first failure is
// returned (the caller then runs Unreserve on all of them).
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(reservePoint, time.Now(), &status)
	for _, pl := range f.reservePlugins {
		start := f.sampleStart(state)
		s := pl.Reserve(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), reservePoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("Reserve", pl, s)
	}
	return nil
}

// RunReservePluginsUnreserve runs Unreserve in reverse order of Reserve.
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	var status *Status // Unreserve cannot fail
	defer f.observe(unreservePoint, time.Now(), &status)
	for i := len(f.reservePlugins) - 1; i >= 0; i-- {
		f.reservePlugins[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunPermitPlugins runs Permit in order. A rejection stops at once. If any
// plugin asked to wait (and none rejected), the pod joins the waiting pods
// with one timer per waiting plugin and Wait is returned; WaitOnPermit then
// blocks the binding goroutine until the verdict.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(permitPoint, time.Now(), &status)
	waits := map[string]time.Duration{}
	for _, pl := range f.permitPlugins {
		start := f.sampleStart(state)
		s, timeout := pl.Permit(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), permitPoint, start, s)
		switch {
		case s.IsSuccess():
		case s.IsRejected():
			klog.FromContext(ctx).V(4).Info("Pod rejected by Permit plugin", "pod", klog.KObj(pod),
				"plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		case s.IsWait():
			waits[pl.Name()] = min(timeout, MaxPermitTimeout)
		default:
			return pluginError("Permit", pl, s)
		}
	}
	if len(waits) > 0 {
		f.waitingPods.add(newWaitingPod(f.clock, pod, waits))
		return NewStatus(Wait, fmt.Sprintf("one or more plugins asked to wait and no plugin rejected pod %q", pod.Name))
	}
	return nil
}

// WaitOnPermit blocks until the waiting pod is allowed (nil), rejected (the
// rejecting plugin's status) or preempted (an Error). A pod that is not
// waiting returns at once. A cancelled ctx ends the wait (its timers are
// stopped) and returns ctx's error as an Error.
func (f *Framework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *Status {
	wp := f.waitingPods.get(pod.UID)
	if wp == nil {
		return nil
	}
	defer f.waitingPods.remove(pod.UID)
	select {
	case s := <-wp.s:
		if s.IsSuccess() || s.IsRejected() {
			if s.IsSuccess() {
				return nil
			}
			return s
		}
		return AsStatus(fmt.Errorf("waiting on permit for pod: %w", s.AsError())).WithPlugin(s.Plugin())
	case <-ctx.Done():
		wp.Reject("", "scheduler is shutting down")
		return AsStatus(ctx.Err())
	}
}

// RunPreBindPlugins runs PreBind in order; the first failure aborts binding.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(preBindPoint, time.Now(), &status)
	for _, pl := range f.preBindPlugins {
		if state.SkipPreBindPlugins.Has(pl.Name()) {
			continue
		}
		start := f.sampleStart(state)
		s := pl.PreBind(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), preBindPoint, start, s)
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("PreBind", pl, s)
	}
	return nil
}

// RunPreBindPreFlights asks every PreBind plugin whether it has work to do
// for the pod: Success if any has, Skip if none has (or there are none), an
// Error if any fails or answers something else. Plugins that skip are
// recorded in state.SkipPreBindPlugins, and RunPreBindPlugins passes them by.
func (f *Framework) RunPreBindPreFlights(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) *Status {
	result := NewStatus(Skip)
	skip := sets.New[string]()
	for _, pl := range f.preBindPlugins {
		s := pl.PreBindPreFlight(ctx, state, pod, nodeName)
		switch {
		case s.IsSuccess():
			result = nil
		case s.IsSkip():
			skip.Insert(pl.Name())
		case s.Code() == Error:
			return pluginError("PreBindPreFlight", pl, s)
		default:
			return AsStatus(fmt.Errorf("PreBindPreFlight %s returned %q; it may return Success, Skip or Error",
				pl.Name(), s.Code()))
		}
	}
	state.SkipPreBindPlugins = skip
	return result
}

// WillWaitOnPermit reports whether a Permit plugin made the pod wait.
func (f *Framework) WillWaitOnPermit(pod *v1.Pod) bool {
	return f.waitingPods.get(pod.UID) != nil
}

// RunBindPlugins tries Bind plugins in order until one does not Skip. If all
// skip, the status is Skip (the caller treats that as an error: nobody bound
// the pod).
func (f *Framework) RunBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod,
	nodeName string) (status *Status) {
	defer f.observe(bindPoint, time.Now(), &status)
	s := NewStatus(Skip)
	for _, pl := range f.bindPlugins {
		start := f.sampleStart(state)
		s = pl.Bind(ctx, state, pod, nodeName)
		f.recordPlugin(pl.Name(), bindPoint, start, s)
		if s.IsSkip() {
			continue
		}
		if s.IsSuccess() {
			return nil
		}
		if s.IsRejected() {
			return s.WithPlugin(pl.Name())
		}
		return pluginError("Bind", pl, s)
	}
	return s
}

// RunPostBindPlugins informs PostBind plugins of a successful bind.
func (f *Framework) RunPostBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	var status *Status // PostBind cannot fail
	defer f.observe(postBindPoint, time.Now(), &status)
	for _, pl := range f.postBindPlugins {
		pl.PostBind(ctx, state, pod, nodeName)
	}
}
