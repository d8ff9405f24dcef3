// This file is the Cache itself: the pod state machine (drawn in the package
// comment, doc.go), node and image bookkeeping, the pod groups' states
// (podgroupstate.go) kept along the pod transitions, and the incremental
// UpdateSnapshot.

package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minisched/minisched/minisched/framework"
)

// cleanAssumedPeriod is how often Run looks for expired assumed pods.
const cleanAssumedPeriod = 1 * time.Second

// Cache is the scheduler's view of nodes and the pods on them. All methods are
// safe for concurrent use: one RWMutex, the package's only lock, guards
// everything (so there is no lock order to keep). Nothing the Cache hands
// out (NodeInfo copies, Dump, Snapshots, pod-group states) shares mutable
// state with it; pod, node and PodGroup objects are shared and never
// modified.
type Cache struct {
	// ttl is how long an assumed pod may wait for its informer Add after
	// FinishBinding before it expires; 0 means never.
	ttl time.Duration
	// period is how often the cleanup loop runs.
	period time.Duration
	// clock tells the time for deadlines and drives the cleanup loop.
	clock clock.Clock

	// mu guards everything below.
	mu sync.RWMutex
	// assumedPods are the UIDs of the pods in the Assumed state.
	assumedPods sets.Set[types.UID]
	// podStates holds every pod the cache knows (assumed or added), by UID.
	podStates map[types.UID]*podState
	// nodes holds a NodeInfo per node name: for every node the cache knows,
	// and for node names that pods point at although the node is not (or no
	// longer) known.
	nodes map[string]*nodeInfoListItem
	// headNode is the most recently changed NodeInfo. The items form a
	// doubly linked list in order of decreasing Generation, so UpdateSnapshot
	// visits only what changed since the snapshot was taken.
	headNode *nodeInfoListItem
	// nodeTree orders the nodes that exist, zones interleaved.
	nodeTree *nodeTree
	// imageStates records, per image name, which nodes have the image.
	imageStates map[string]*imageState

	// generation is the newest NodeInfo generation the cache produced,
	// including NodeInfos it has since dropped. A snapshot that reaches it
	// has seen every change.
	generation int64
	// treeChangedAt is the generation at which a node was last added to,
	// removed from, or moved within nodeTree; a snapshot older than that must
	// rebuild its lists.
	treeChangedAt int64
	// imagesChangedAt is the largest imageState.changedAt, so that
	// UpdateSnapshot can skip looking at images when none changed.
	imagesChangedAt int64

	// trackPodGroups is set by WithPodGroups (GenericWorkload): only then
	// does the cache keep podGroups.
	trackPodGroups bool
	// podGroups holds the state of every pod group the cache knows a pod or
	// the PodGroup of, by framework.PodGroupKey.
	podGroups podGroupStates
}

var _ framework.PodGroupManager = &Cache{}

// podState is what the cache remembers about one pod.
type podState struct {
	pod *v1.Pod
	// bindingFinished is set by FinishBinding; only then may the pod expire.
	bindingFinished bool
	// deadline is when an assumed pod expires (zero when it never does).
	deadline time.Time
}

// nodeInfoListItem is one NodeInfo in the cache's recency list.
type nodeInfoListItem struct {
	info *framework.NodeInfo
	next *nodeInfoListItem
	prev *nodeInfoListItem
}

// imageState is what the cache knows about one image name across nodes.
type imageState struct {
	// size is the image's size in bytes, as first reported.
	size int64
	// nodes are the names of the nodes that have the image.
	nodes sets.Set[string]
	// changedAt is the generation at which nodes last changed.
	changedAt int64
}

// Option configures New.
type Option func(*Cache)

// WithClock sets the clock for assumed-pod deadlines and the cleanup loop (a
// fake one in tests).
func WithClock(c clock.Clock) Option { return func(cache *Cache) { cache.clock = c } }

// WithPodGroups makes the cache keep a state per pod group, as
// kube-scheduler's does with the GenericWorkload gate: the group's pods,
// unscheduled, assumed or assigned, and its PodGroup object. Without it the
// pod-group methods do nothing and the listers know no group.
func WithPodGroups() Option { return func(cache *Cache) { cache.trackPodGroups = true } }

// New returns an empty cache. Assumed pods expire ttl after FinishBinding;
// with ttl 0 (what the scheduler passes, as kube-scheduler does) they never
// do. Only tests use another ttl. Call Run to start the expiry loop.
func New(ttl time.Duration, opts ...Option) *Cache {
	c := &Cache{
		ttl:         ttl,
		period:      cleanAssumedPeriod,
		clock:       clock.RealClock{},
		assumedPods: sets.New[types.UID](),
		podStates:   map[types.UID]*podState{},
		nodes:       map[string]*nodeInfoListItem{},
		nodeTree:    newNodeTree(klog.Background(), nil),
		imageStates: map[string]*imageState{},
		podGroups:   podGroupStates{},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Run starts, in the background, the loop that expires assumed pods every
// second until ctx is cancelled. With ttl 0 there is nothing to expire and it
// starts nothing. Run does not block.
func (c *Cache) Run(ctx context.Context) {
	if c.ttl <= 0 {
		return
	}
	logger := klog.FromContext(ctx)
	// The first timer is armed before Run returns, so a test that steps a
	// fake clock right after Run cannot miss it.
	timer := c.clock.NewTimer(c.period)
	go func() {
		defer func() { timer.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C():
				c.cleanupAssumedPods(logger, c.clock.Now())
				timer = c.clock.NewTimer(c.period)
			}
		}
	}()
}

// podUID is the key the cache uses for a pod: its UID, which, unlike the
// name, is never reused by a different pod. (framework.PodKey,
// namespace/name, is for messages.)
func podUID(pod *v1.Pod) (types.UID, error) {
	if pod.UID == "" {
		return "", fmt.Errorf("cannot get cache key for pod %s with empty UID", framework.PodKey(pod))
	}
	return pod.UID, nil
}

// AssumePod adds pod, which the scheduler just placed on pod.Spec.NodeName,
// as if it were already bound, so the next cycle sees the node's resources
// taken without waiting for the apiserver. It is an error if the pod is
// already in the cache.
func (c *Cache) AssumePod(logger klog.Logger, pod *v1.Pod) error {
	return c.AssumePodInfo(logger, framework.NewPodInfo(pod))
}

// AssumePodInfo is AssumePod for a pod whose PodInfo the caller has: its
// requests and terms are counted on the node as they are.
func (c *Cache) AssumePodInfo(logger klog.Logger, podInfo *framework.PodInfo) error {
	pod := podInfo.Pod
	key, err := podUID(pod)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s has no node name, so it cannot be assumed", framework.PodKey(pod))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.podStates[key]; ok {
		return fmt.Errorf("pod %s (uid %s) is in the cache, so it cannot be assumed", framework.PodKey(pod), key)
	}
	c.addPodInfo(podInfo, true)
	c.assumePodGroupMember(pod)
	logger.V(4).Info("Assumed pod", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
	return nil
}

// FinishBinding records that the binding cycle for an assumed pod is over,
// and starts its expiry deadline (ttl from now; none with ttl 0). It does
// nothing for a pod that is not assumed.
func (c *Cache) FinishBinding(logger klog.Logger, pod *v1.Pod) error {
	key, err := podUID(pod)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[key]
	if !ok || !c.assumedPods.Has(key) {
		return nil
	}
	ps.bindingFinished = true
	ps.deadline = time.Time{}
	if c.ttl > 0 {
		ps.deadline = now.Add(c.ttl)
	}
	logger.V(5).Info("Finished binding for pod, it can expire", "pod", klog.KObj(pod), "deadline", ps.deadline)
	return nil
}

// ForgetPod removes an assumed pod, because its scheduling or binding
// failed after AssumePod. It is an error if the pod is not assumed or was
// assumed on a different node.
func (c *Cache) ForgetPod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podUID(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[key]
	if ok && ps.pod.Spec.NodeName != pod.Spec.NodeName {
		return fmt.Errorf("pod %s (uid %s) was assumed on %s but assigned to %s",
			framework.PodKey(pod), key, pod.Spec.NodeName, ps.pod.Spec.NodeName)
	}
	if !ok || !c.assumedPods.Has(key) {
		return fmt.Errorf("pod %s (uid %s) wasn't assumed so cannot be forgotten", framework.PodKey(pod), key)
	}
	if err := c.removePod(logger, ps.pod); err != nil {
		return err
	}
	c.forgetPodGroupMember(ps.pod)
	logger.V(4).Info("Forgot assumed pod", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
	return nil
}

// AddPod records a pod the informer reports as assigned to a node. An assumed
// pod is thereby confirmed (and moved, if it landed on another node than
// assumed); an unknown one is added. It is an error if the pod was already
// added.
func (c *Cache) AddPod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podUID(pod)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s has no node name, so it cannot be added", framework.PodKey(pod))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[key]
	switch {
	case ok && c.assumedPods.Has(key):
		// Replace the assumed object with the informer's, which is newer
		// (status, resource version) and authoritative about the node.
		if ps.pod.Spec.NodeName != pod.Spec.NodeName {
			logger.Info("Pod was added to a different node than it was assumed on",
				"pod", klog.KObj(pod), "assumedNode", klog.KRef("", ps.pod.Spec.NodeName), "currentNode", klog.KRef("",
					pod.Spec.NodeName))
		}
		if err := c.removePod(logger, ps.pod); err != nil {
			return err
		}
		c.addPod(logger, pod, false)
		c.setPodGroupMember(pod)
		logger.V(4).Info("Confirmed assumed pod", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
	case !ok:
		// Bound by someone else, or an assumed pod that expired: add it.
		c.addPod(logger, pod, false)
		c.setPodGroupMember(pod)
		logger.V(4).Info("Added pod", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
	default:
		return fmt.Errorf("pod %s (uid %s) was already in added state", framework.PodKey(pod), key)
	}
	return nil
}

// UpdatePod replaces an added pod's object with newPod, moving it if its node
// changed. It is an error if the pod is unknown or only assumed: an assumed
// pod gets its informer Add before any Update.
func (c *Cache) UpdatePod(logger klog.Logger, oldPod, newPod *v1.Pod) error {
	key, err := podUID(oldPod)
	if err != nil {
		return err
	}
	if newPod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s has no node name, so it cannot be updated", framework.PodKey(newPod))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[key]
	if !ok {
		return fmt.Errorf("pod %s (uid %s) is not in the cache, so it cannot be updated", framework.PodKey(oldPod), key)
	}
	if c.assumedPods.Has(key) {
		return fmt.Errorf("assumed pod %s (uid %s) should not be updated", framework.PodKey(oldPod), key)
	}
	if ps.pod.Spec.NodeName != newPod.Spec.NodeName {
		// A pod's node never changes in the API; kube-scheduler exits here
		// because its cache must be corrupt. minisched logs and follows the
		// informer, which is the truth.
		logger.Error(nil, "Pod updated on a different node than it was added to",
			"pod", klog.KObj(newPod), "oldNode", klog.KRef("", ps.pod.Spec.NodeName), "newNode", klog.KRef("",
				newPod.Spec.NodeName))
	}
	// Remove the object the cache holds, not oldPod: it is what was counted.
	if err := c.removePod(logger, ps.pod); err != nil {
		return err
	}
	c.addPod(logger, newPod, false)
	c.setPodGroupMember(newPod)
	logger.V(4).Info("Updated pod", "pod", klog.KObj(newPod), "node", klog.KRef("", newPod.Spec.NodeName))
	return nil
}

// RemovePod removes a pod the informer reports deleted, from the node the
// cache has it on. It is an error if the pod is not in the cache.
func (c *Cache) RemovePod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podUID(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[key]
	if !ok {
		return fmt.Errorf("pod %s (uid %s) is not in the cache, so it cannot be removed", framework.PodKey(pod), key)
	}
	// An empty node name is normal: a missed delete is delivered with the
	// informer's last known state, which may predate the binding.
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != ps.pod.Spec.NodeName {
		logger.Error(nil, "Pod removed from a different node than the cache has it on",
			"pod", klog.KObj(pod), "cachedNode", klog.KRef("", ps.pod.Spec.NodeName), "node", klog.KRef("", pod.Spec.NodeName))
	}
	if err := c.removePod(logger, ps.pod); err != nil {
		return err
	}
	c.removePodGroupMember(ps.pod)
	logger.V(4).Info("Removed pod", "pod", klog.KObj(pod), "node", klog.KRef("", ps.pod.Spec.NodeName))
	return nil
}

// IsAssumedPod reports whether pod is assumed (placed by us, not yet
// confirmed by the informer).
func (c *Cache) IsAssumedPod(pod *v1.Pod) (bool, error) {
	key, err := podUID(pod)
	if err != nil {
		return false, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.assumedPods.Has(key), nil
}

// AssumedPods returns the assumed pods (placed by us, not yet confirmed by
// the informer), each with spec.nodeName set to its node. The objects are
// shared: do not modify them.
func (c *Cache) AssumedPods() []*v1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pods := make([]*v1.Pod, 0, len(c.assumedPods))
	for uid := range c.assumedPods {
		if ps, ok := c.podStates[uid]; ok {
			pods = append(pods, ps.pod)
		}
	}
	return pods
}

// GetPod returns the cache's object for pod (matched by UID), or an error if
// the cache does not have it. The object is shared: do not modify it.
func (c *Cache) GetPod(pod *v1.Pod) (*v1.Pod, error) {
	key, err := podUID(pod)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.podStates[key]
	if !ok {
		return nil, fmt.Errorf("pod %s (uid %s) does not exist in the cache", framework.PodKey(pod), key)
	}
	return ps.pod, nil
}

// Pod groups (WithPodGroups). A pod is a member of the group its
// spec.schedulingGroup names (which never changes: the field is immutable).
// The transitions above keep its group's state in step: AssumePod makes it
// assumed, FinishBinding leaves it so, ForgetPod (and expiry) makes it
// unscheduled again, AddPod and UpdatePod record it assigned, RemovePod
// drops it. Pods that are not bound come from the handler of unscheduled
// pods, through the three methods below.

// podGroupMemberKey returns the key of pod's group, and false if the cache
// does not track pod groups or pod names none.
func (c *Cache) podGroupMemberKey(pod *v1.Pod) (string, bool) {
	if !c.trackPodGroups {
		return "", false
	}
	return podGroupKeyOf(pod)
}

// AddPodGroupMember records a pod that is not bound as one of its group's
// pods, unscheduled (an assumed pod stays assumed). The handler of
// unscheduled pods calls it on Add. It does nothing for a pod that names no
// group, or if the cache does not track pod groups.
func (c *Cache) AddPodGroupMember(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPodGroupMember(pod)
}

// UpdatePodGroupMember replaces the group's object for a pod that is not
// bound (the handler of unscheduled pods' Update); a pod the group did not
// know is added, as by AddPodGroupMember. oldPod is not needed: a pod
// never changes group.
func (c *Cache) UpdatePodGroupMember(oldPod, newPod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPodGroupMember(newPod)
}

// RemovePodGroupMember drops a pod from its group: the handler of
// unscheduled pods calls it on Delete. A pod the cache has as added
// (bound) is left alone: the unscheduled informer also reports a Delete
// when a pod gets bound, maybe after the assigned informer's Add, and a
// bound pod leaves its group only through RemovePod. An assumed pod is
// dropped; if the Delete was its binding, AddPod brings it back, assigned.
func (c *Cache) RemovePodGroupMember(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.podStates[pod.UID]; ok && !c.assumedPods.Has(pod.UID) {
		return
	}
	c.removePodGroupMember(pod)
}

// setPodGroupMember records pod in its group as the informer reports it
// (podGroupState.setPod), creating the group's state if needed. The caller
// holds the lock.
func (c *Cache) setPodGroupMember(pod *v1.Pod) {
	if key, ok := c.podGroupMemberKey(pod); ok {
		c.podGroups.ensure(key).setPod(pod)
	}
}

// assumePodGroupMember makes pod assumed in its group. The caller holds the
// lock.
func (c *Cache) assumePodGroupMember(pod *v1.Pod) {
	if key, ok := c.podGroupMemberKey(pod); ok {
		c.podGroups.ensure(key).assumePod(pod)
	}
}

// forgetPodGroupMember makes an assumed pod unscheduled again in its group,
// if the group still has it. The caller holds the lock.
func (c *Cache) forgetPodGroupMember(pod *v1.Pod) {
	if key, ok := c.podGroupMemberKey(pod); ok {
		if st, ok := c.podGroups[key]; ok {
			st.forgetPod(pod.UID)
		}
	}
}

// removePodGroupMember drops pod from its group, and the group's state if
// nothing is left in it. The caller holds the lock.
func (c *Cache) removePodGroupMember(pod *v1.Pod) {
	if key, ok := c.podGroupMemberKey(pod); ok {
		if st, ok := c.podGroups[key]; ok {
			st.deletePod(pod.UID)
			c.podGroups.dropIfEmpty(key)
		}
	}
}

// AddPodGroup records a PodGroup the informer reports. It does nothing if
// the cache does not track pod groups.
func (c *Cache) AddPodGroup(pg *schedulingv1beta1.PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trackPodGroups {
		c.podGroups.ensure(framework.PodGroupKey(pg.Namespace, pg.Name)).setPodGroup(pg)
	}
}

// UpdatePodGroup replaces the cache's PodGroup object by newPG (adding it if
// the cache does not have it, as UpdateNode does).
func (c *Cache) UpdatePodGroup(oldPG, newPG *schedulingv1beta1.PodGroup) { c.AddPodGroup(newPG) }

// RemovePodGroup forgets a deleted PodGroup. Its group's state stays while
// pods still name it: they may be deleted later, or the PodGroup created
// again.
func (c *Cache) RemovePodGroup(pg *schedulingv1beta1.PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := framework.PodGroupKey(pg.Namespace, pg.Name)
	if st, ok := c.podGroups[key]; ok {
		st.setPodGroup(nil)
		c.podGroups.dropIfEmpty(key)
	}
}

// PodGroups implements framework.PodGroupManager: the PodGroup objects the
// cache has seen.
func (c *Cache) PodGroups() framework.PodGroupLister { return cachePodGroupLister{c} }

// PodGroupStates implements framework.PodGroupManager: each group's pods as
// the cache knows them now.
func (c *Cache) PodGroupStates() framework.PodGroupStateLister { return cachePodGroupStateLister{c} }

// cachePodGroupLister is Cache.PodGroups.
type cachePodGroupLister struct{ c *Cache }

// Get implements framework.PodGroupLister.
func (l cachePodGroupLister) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	l.c.mu.RLock()
	defer l.c.mu.RUnlock()
	return l.c.podGroups.podGroup(namespace, name)
}

// cachePodGroupStateLister is Cache.PodGroupStates.
type cachePodGroupStateLister struct{ c *Cache }

// Get implements framework.PodGroupStateLister. The state returned reads
// the cache as it is when each of its methods is called, under the
// cache's lock, as kube-scheduler's live state does under its own: a count
// costs nothing, and the methods that return pods return copies. Once the
// cache forgets the group, it reads as an empty group.
func (l cachePodGroupStateLister) Get(namespace, name string) (framework.PodGroupState, error) {
	l.c.mu.RLock()
	defer l.c.mu.RUnlock()
	if _, err := l.c.podGroups.state(namespace, name); err != nil {
		return nil, err
	}
	return livePodGroupState{c: l.c, key: framework.PodGroupKey(namespace, name)}, nil
}

// livePodGroupState is a group's state in the cache, read under its lock.
type livePodGroupState struct {
	c   *Cache
	key string
}

// read returns what fn reads of the group's state, under the cache's
// lock; an empty state if the cache has forgotten the group.
func read[T any](l livePodGroupState, fn func(*podGroupState) T) T {
	l.c.mu.RLock()
	defer l.c.mu.RUnlock()
	st := l.c.podGroups[l.key]
	if st == nil {
		st = newPodGroupState()
	}
	return fn(st)
}

// PodGroup implements framework.PodGroupState.
func (l livePodGroupState) PodGroup() *schedulingv1beta1.PodGroup {
	return read(l, (*podGroupState).PodGroup)
}

// AllPodsCount implements framework.PodGroupState.
func (l livePodGroupState) AllPodsCount() int { return read(l, (*podGroupState).AllPodsCount) }

// ScheduledPodsCount implements framework.PodGroupState.
func (l livePodGroupState) ScheduledPodsCount() int {
	return read(l, (*podGroupState).ScheduledPodsCount)
}

// ScheduledPods implements framework.PodGroupState.
func (l livePodGroupState) ScheduledPods() []*v1.Pod { return read(l, (*podGroupState).ScheduledPods) }

// UnscheduledPods implements framework.PodGroupState.
func (l livePodGroupState) UnscheduledPods() map[string]*v1.Pod {
	return read(l, (*podGroupState).UnscheduledPods)
}

// AssumedPods implements framework.PodGroupState.
func (l livePodGroupState) AssumedPods() sets.Set[types.UID] {
	return read(l, (*podGroupState).AssumedPods)
}

// addPod counts pod on its node, creating a node-less NodeInfo if the node is
// not known (yet). The caller holds the lock and has checked the state.
func (c *Cache) addPod(logger klog.Logger, pod *v1.Pod, assumed bool) {
	c.addPodInfo(framework.NewPodInfo(pod), assumed)
}

// addPodInfo is addPod with the pod's PodInfo computed already.
func (c *Cache) addPodInfo(podInfo *framework.PodInfo, assumed bool) {
	pod := podInfo.Pod
	item := c.nodeItem(pod.Spec.NodeName)
	item.info.AddPodInfo(podInfo)
	c.moveToHead(item)
	c.podStates[pod.UID] = &podState{pod: pod}
	if assumed {
		c.assumedPods.Insert(pod.UID)
	}
}

// removePod takes pod off its node and forgets it. A NodeInfo left with
// neither pods nor a node is dropped. The caller holds the lock.
func (c *Cache) removePod(logger klog.Logger, pod *v1.Pod) error {
	if item, ok := c.nodes[pod.Spec.NodeName]; ok {
		if err := item.info.RemovePod(pod); err != nil {
			return err
		}
		if len(item.info.Pods) == 0 && item.info.Node() == nil {
			c.removeItem(logger, pod.Spec.NodeName)
		} else {
			c.moveToHead(item)
		}
	} else {
		logger.Error(nil, "Node not found when removing pod", "node", klog.KRef("", pod.Spec.NodeName), "pod", klog.KObj(pod))
	}
	delete(c.podStates, pod.UID)
	c.assumedPods.Delete(pod.UID)
	return nil
}

// cleanupAssumedPods expires the assumed pods whose binding finished and
// whose deadline is before now. Run calls it every period; tests call it
// with a chosen time.
func (c *Cache) cleanupAssumedPods(logger klog.Logger, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl <= 0 {
		return
	}
	for key := range c.assumedPods {
		ps, ok := c.podStates[key]
		if !ok {
			logger.Error(nil, "Assumed pod missing from the pod states; dropping it", "uid", key)
			c.assumedPods.Delete(key)
			continue
		}
		if !ps.bindingFinished {
			logger.V(5).Info("Assumed pod cannot expire while binding is in progress", "pod", klog.KObj(ps.pod))
			continue
		}
		if now.After(ps.deadline) {
			logger.Info("Assumed pod expired", "pod", klog.KObj(ps.pod), "node", klog.KRef("", ps.pod.Spec.NodeName))
			if err := c.removePod(logger, ps.pod); err != nil {
				logger.Error(err, "Expiring assumed pod failed", "pod", klog.KObj(ps.pod))
			}
			// The pod is still pending as far as the cache knows: its
			// group counts it unscheduled again, as after ForgetPod.
			c.forgetPodGroupMember(ps.pod)
		}
	}
}

// AddNode records a node the informer reports, or replaces the cache's
// object for it, and returns a copy of its NodeInfo.
func (c *Cache) AddNode(logger klog.Logger, node *v1.Node) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setNode(logger, node)
}

// UpdateNode replaces the cache's object for a node (adding the node if the
// cache does not know it) and returns a copy of its NodeInfo. oldNode is not
// needed: the cache compares against what it holds, so it serves any
// informer's update handler as is.
func (c *Cache) UpdateNode(logger klog.Logger, oldNode, newNode *v1.Node) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setNode(logger, newNode)
}

// setNode is AddNode and UpdateNode. The caller holds the lock.
func (c *Cache) setNode(logger klog.Logger, node *v1.Node) *framework.NodeInfo {
	item := c.nodeItem(node.Name)
	changedImages := c.updateImageStates(node.Name, item.info.Node(), node)
	item.info.ImageStates = imageSummaries(node, c.imageStates)
	item.info.SetNode(node)
	c.moveToHead(item)
	if c.nodeTree.updateNode(logger, node) {
		c.treeChangedAt = item.info.Generation
	}
	c.markImagesChanged(changedImages, item.info.Generation)
	logger.V(4).Info("Set node", "node", klog.KObj(node), "pods", len(item.info.Pods))
	return c.cloneNodeInfo(item.info)
}

// RemoveNode removes a node the informer reports deleted. Pods may still
// point at it (their deletions arrive on another watch, maybe later), so its
// NodeInfo stays, without a node and out of snapshots, until its last pod is
// removed. It is an error if the node is not in the cache.
func (c *Cache) RemoveNode(logger klog.Logger, node *v1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok || item.info.Node() == nil {
		return fmt.Errorf("node %s is not in the cache", node.Name)
	}
	changedImages := c.updateImageStates(node.Name, item.info.Node(), nil)
	item.info.ImageStates = map[string]*framework.ImageStateSummary{}
	item.info.RemoveNode()
	gen := item.info.Generation
	if len(item.info.Pods) == 0 {
		c.removeItem(logger, node.Name)
	} else {
		c.moveToHead(item)
	}
	if err := c.nodeTree.removeNode(logger, node.Name); err != nil {
		return err
	}
	c.treeChangedAt = gen
	c.markImagesChanged(changedImages, gen)
	logger.V(2).Info("Removed node", "node", klog.KObj(node), "podsLeft", len(item.info.Pods))
	return nil
}

// nodeItem returns the list item for the node called name, creating an empty
// NodeInfo (no node, no pods) if there is none. The caller holds the lock.
func (c *Cache) nodeItem(name string) *nodeInfoListItem {
	item, ok := c.nodes[name]
	if !ok {
		item = &nodeInfoListItem{info: framework.NewNodeInfo()}
		c.nodes[name] = item
	}
	return item
}

// moveToHead puts a NodeInfo that just changed at the head of the recency
// list, which keeps the list ordered by decreasing Generation. The caller
// holds the lock.
func (c *Cache) moveToHead(item *nodeInfoListItem) {
	c.generation = max(c.generation, item.info.Generation)
	if item == c.headNode {
		return
	}
	c.unlink(item)
	item.next = c.headNode
	if c.headNode != nil {
		c.headNode.prev = item
	}
	c.headNode = item
}

// removeItem drops the NodeInfo of the node called name. The caller holds
// the lock.
func (c *Cache) removeItem(logger klog.Logger, name string) {
	item, ok := c.nodes[name]
	if !ok {
		return
	}
	c.generation = max(c.generation, item.info.Generation)
	c.unlink(item)
	delete(c.nodes, name)
	logger.V(4).Info("Dropped NodeInfo", "node", klog.KRef("", name))
}

// unlink takes item out of the recency list (a no-op if it is not in it).
func (c *Cache) unlink(item *nodeInfoListItem) {
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.headNode == item {
		c.headNode = item.next
	}
	item.prev, item.next = nil, nil
}

// imageName is one name of an image on a node, with the image's size.
type imageName struct {
	name string
	size int64
}

// imageNames lists every name of every image on node (an image usually has a
// tag and a digest name), each once. A nil node has none.
func imageNames(node *v1.Node) []imageName {
	if node == nil {
		return nil
	}
	var out []imageName
	seen := sets.New[string]()
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			if !seen.Has(name) {
				seen.Insert(name)
				out = append(out, imageName{name: name, size: img.SizeBytes})
			}
		}
	}
	return out
}

// imageSummaries returns node's ImageStates: one summary per image name,
// with the node counts of images.
func imageSummaries(node *v1.Node, images map[string]*imageState) map[string]*framework.ImageStateSummary {
	out := map[string]*framework.ImageStateSummary{}
	for _, img := range imageNames(node) {
		if st, ok := images[img.name]; ok {
			out[img.name] = &framework.ImageStateSummary{Size: st.size, NumNodes: st.nodes.Len()}
		}
	}
	return out
}

// updateImageStates moves the node called nodeName from the images of
// oldNode to those of newNode (either may be nil) in the cache-wide image
// records, and returns the image names whose set of nodes changed and that
// some node still has. The caller holds the lock.
func (c *Cache) updateImageStates(nodeName string, oldNode, newNode *v1.Node) []string {
	oldNames := sets.New[string]()
	for _, img := range imageNames(oldNode) {
		oldNames.Insert(img.name)
	}
	newNames := sets.New[string]()
	var changed []string
	for _, img := range imageNames(newNode) {
		newNames.Insert(img.name)
		if oldNames.Has(img.name) {
			continue
		}
		st, ok := c.imageStates[img.name]
		if !ok {
			st = &imageState{size: img.size, nodes: sets.New[string]()}
			c.imageStates[img.name] = st
		}
		st.nodes.Insert(nodeName)
		changed = append(changed, img.name)
	}
	for name := range oldNames {
		if newNames.Has(name) {
			continue
		}
		st, ok := c.imageStates[name]
		if !ok {
			continue
		}
		st.nodes.Delete(nodeName)
		if st.nodes.Len() == 0 {
			delete(c.imageStates, name)
			continue
		}
		changed = append(changed, name)
	}
	return changed
}

// markImagesChanged records that the node counts of names changed at
// generation gen. The caller holds the lock.
func (c *Cache) markImagesChanged(names []string, gen int64) {
	for _, name := range names {
		if st, ok := c.imageStates[name]; ok {
			st.changedAt = gen
		}
	}
	if len(names) > 0 {
		c.imagesChangedAt = max(c.imagesChangedAt, gen)
	}
}

// cloneNodeInfo returns a copy of info whose image summaries count nodes as
// they are now (the cache's own summaries are refreshed only when their node
// changes). The caller holds the lock.
func (c *Cache) cloneNodeInfo(info *framework.NodeInfo) *framework.NodeInfo {
	clone := info.Snapshot()
	for name, sum := range clone.ImageStates {
		if st, ok := c.imageStates[name]; ok {
			sum.NumNodes = st.nodes.Len()
		}
	}
	return clone
}

// UpdateSnapshot brings s up to date with the cache. It copies only the
// NodeInfos that changed since s was last updated, and rebuilds s's node
// lists only if the set or order of nodes, or which nodes have pods with
// (anti-)affinity, changed. If the result does not have as many nodes as the
// cache, s is rebuilt from scratch and an error returned so that the cycle
// relying on it fails rather than schedule on a bad view (kube-scheduler
// recovers the same way).
//
// The NodeInfos in s keep their identity across updates (a changed one is
// overwritten in place), so the lists need no rebuilding when only their
// contents change.
//
// With pod groups, the group states that changed are copied too. A
// mutation session a PodGroupPostFilter left open (Snapshot.StartMutations)
// is ended first, then a placement a pod-group cycle left in force
// (Snapshot.AssumePlacement) and the pods it left assumed in s
// (Snapshot.AssumePod) are forgotten; each is logged as an error.
func (c *Cache) UpdateSnapshot(logger klog.Logger, s *Snapshot) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s.endForgottenMutations(logger)
	s.forgetPlacement(logger)
	s.forgetAllAssumedPods(logger)
	c.updatePodGroupStateSnapshot(s)
	since := s.generation

	// Set when a node joins or leaves s, or the tree order changes.
	updateAll := c.treeChangedAt > since
	// Set when a node starts or stops having pods with (anti-)affinity.
	updateAffinity := false

	for item := c.headNode; item != nil && item.info.Generation > since; item = item.next {
		node := item.info.Node()
		if node == nil {
			// A deleted node with pods left: handled by the removal below.
			continue
		}
		clone := c.cloneNodeInfo(item.info)
		existing, ok := s.nodeInfoMap[node.Name]
		if !ok {
			s.nodeInfoMap[node.Name] = clone
			s.antiAffinityTerms.addNode(clone, 1)
			s.usedPVCs.addNode(clone, 1)
			updateAll = true
			continue
		}
		if (len(existing.PodsWithAffinity) > 0) != (len(clone.PodsWithAffinity) > 0) ||
			(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(clone.PodsWithRequiredAntiAffinity) > 0) ||
			hasAffinityScoringTerms(existing) != hasAffinityScoringTerms(clone) {
			updateAffinity = true
		}
		if len(existing.PodsWithRequiredAntiAffinity) > 0 || len(clone.PodsWithRequiredAntiAffinity) > 0 {
			s.antiAffinityTerms.addNode(existing, -1)
			s.antiAffinityTerms.addNode(clone, 1)
		}
		s.usedPVCs.addNode(existing, -1)
		s.usedPVCs.addNode(clone, 1)
		*existing = *clone
	}

	// An image that a node gained or lost changes NumNodes on every node
	// with that image, not only on the node that changed.
	if c.imagesChangedAt > since {
		c.refreshImageCounts(s, since)
	}

	if len(s.nodeInfoMap) > c.nodeTree.numNodes() {
		c.removeDeletedNodes(s)
		updateAll = true
	}

	switch {
	case updateAll:
		s.rebuildLists(c.nodeTree.list())
	case updateAffinity:
		s.rebuildAffinityLists()
	}
	s.generation = c.generation

	if len(s.nodeInfoList) != c.nodeTree.numNodes() || len(s.nodeInfoMap) != c.nodeTree.numNodes() {
		err := fmt.Errorf("snapshot state is not consistent: %d nodes listed, %d mapped, %d in the cache; rebuilt it",
			len(s.nodeInfoList), len(s.nodeInfoMap), c.nodeTree.numNodes())
		logger.Error(err, "Rebuilding the snapshot from scratch")
		c.rebuildSnapshot(s)
		return err
	}
	logger.V(5).Info("Updated snapshot",
		"generation", s.generation, "nodes", len(s.nodeInfoList), "listsRebuilt", updateAll)
	return nil
}

// updatePodGroupStateSnapshot drops from s the pod-group states the cache no
// longer has, and copies those whose generation differs from s's copy. It
// looks at every group, as kube-scheduler does: there are far fewer groups
// than pods. The caller holds the lock.
func (c *Cache) updatePodGroupStateSnapshot(s *Snapshot) {
	s.trackPodGroups = c.trackPodGroups
	for key := range s.podGroupStates {
		if _, ok := c.podGroups[key]; !ok {
			delete(s.podGroupStates, key)
		}
	}
	for key, st := range c.podGroups {
		if copied, ok := s.podGroupStates[key]; ok && copied.generation == st.generation {
			continue
		}
		s.podGroupStates[key] = st.clone()
	}
}

// refreshImageCounts sets NumNodes in s for every image whose set of nodes
// changed after generation since. The caller holds the lock.
func (c *Cache) refreshImageCounts(s *Snapshot, since int64) {
	for name, st := range c.imageStates {
		if st.changedAt <= since {
			continue
		}
		for nodeName := range st.nodes {
			if ni, ok := s.nodeInfoMap[nodeName]; ok {
				if sum, ok := ni.ImageStates[name]; ok {
					sum.NumNodes = st.nodes.Len()
				}
			}
		}
	}
}

// removeDeletedNodes drops from s the nodes the cache no longer has. The
// caller holds the lock.
func (c *Cache) removeDeletedNodes(s *Snapshot) {
	for name := range s.nodeInfoMap {
		if item, ok := c.nodes[name]; !ok || item.info.Node() == nil {
			s.antiAffinityTerms.addNode(s.nodeInfoMap[name], -1)
			s.usedPVCs.addNode(s.nodeInfoMap[name], -1)
			delete(s.nodeInfoMap, name)
		}
	}
}

// rebuildSnapshot refills s with a copy of every node in the cache. The
// caller holds the lock.
func (c *Cache) rebuildSnapshot(s *Snapshot) {
	s.nodeInfoMap = make(map[string]*framework.NodeInfo, c.nodeTree.numNodes())
	s.antiAffinityTerms = termIndex{}
	s.usedPVCs = pvcCounts{}
	for name, item := range c.nodes {
		if item.info.Node() != nil {
			clone := c.cloneNodeInfo(item.info)
			s.nodeInfoMap[name] = clone
			s.antiAffinityTerms.addNode(clone, 1)
			s.usedPVCs.addNode(clone, 1)
		}
	}
	s.rebuildLists(c.nodeTree.list())
	s.generation = c.generation
}

// Dump is a copy of the cache's contents, for debugging and tests.
type Dump struct {
	// AssumedPods are the UIDs of the assumed pods.
	AssumedPods sets.Set[types.UID]
	// Nodes maps a node name to a copy of its NodeInfo, including NodeInfos
	// without a node.
	Nodes map[string]*framework.NodeInfo
}

// Dump returns a copy of the cache's NodeInfos and assumed pods.
func (c *Cache) Dump() *Dump {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d := &Dump{
		AssumedPods: c.assumedPods.Clone(),
		Nodes:       make(map[string]*framework.NodeInfo, len(c.nodes)),
	}
	for name, item := range c.nodes {
		d.Nodes[name] = c.cloneNodeInfo(item.info)
	}
	return d
}
