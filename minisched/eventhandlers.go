package minisched

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// addAllEventHandlers connects the informers to the cache and the queue:
//
//	assigned pods              → cache (Add/Update/Remove) + queue moves (AssignedPod*)
//	unassigned pods of ours    → queue (Add/Update/Delete); with GenericWorkload, a member
//	                             also → the cache's group state, and an Add → queue moves
//	                             (UnscheduledPodAdd: it may complete a gang)
//	PodGroups (GenericWorkload) → cache + queue (Add/Update/Delete) + queue moves
//	nodes                      → cache + queue moves, one ClusterEvent per kind of change
//	storage objects (PVs, PVCs, classes, CSI objects), for the plugins that
//	registered events on them → queue moves only
//	DRA objects, from the shared DRA state when a plugin uses it → queue moves only:
//	  ResourceClaims from its assume cache (the scheduler's own writes included),
//	  ResourceSlices from its tracker (DeviceTaintRule changes arrive as slice updates),
//	  DeviceClasses after its extended-resource map took them in
//
// A pod that gets bound leaves the second filter and enters the first, so the
// queue sees a Delete and the cache an Add: the informer's Add of a pod we
// assumed is what confirms it.
func (s *Scheduler) addAllEventHandlers(factory informers.SharedInformerFactory,
	podGroupInformer toolscache.SharedIndexInformer) error {
	podInformer := factory.Core().V1().Pods().Informer()
	nodeInformer := factory.Core().V1().Nodes().Informer()

	type informerHandler struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}
	handlers := []informerHandler{
		{podInformer, s.assignedPodHandler()},
		{podInformer, s.unassignedPodHandler()},
		{nodeInformer, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addNodeToCache,
			UpdateFunc: s.updateNodeInCache,
			DeleteFunc: s.deleteNodeFromCache,
		}},
	}
	if podGroupInformer != nil {
		handlers = append(handlers, informerHandler{podGroupInformer, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodGroup,
			UpdateFunc: s.updatePodGroup,
			DeleteFunc: s.deletePodGroup,
		}})
	}
	hasInformer := func(r framework.EventResource) bool { _, ok := otherInformers[r]; return ok }
	for resource, actions := range s.registeredActions(hasInformer) {
		handlers = append(handlers, informerHandler{otherInformers[resource](factory), s.moveOnEvents(resource, actions)})
	}
	for _, h := range handlers {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return fmt.Errorf("adding event handler: %w", err)
		}
		s.informersSynced = append(s.informersSynced, reg.HasSynced)
	}
	return s.addDRAEventHandlers()
}

// addDRAEventHandlers connects the shared DRA state's events to the queue,
// for the DRA resources some plugin registered, with the actions
// registered. Its informers run only when a plugin used it (InUse); then
// the scheduler also waits for them before its first cycle.
func (s *Scheduler) addDRAEventHandlers() error {
	if !s.draManager.InUse() {
		return nil
	}
	actions := s.registeredActions(func(r framework.EventResource) bool { return draResources[r] })
	if a, ok := actions[framework.ResourceClaim]; ok {
		synced := s.draManager.AddClaimEventHandler(s.moveOnEvents(framework.ResourceClaim, a))
		s.informersSynced = append(s.informersSynced, synced)
	}
	if a, ok := actions[framework.ResourceSlice]; ok {
		synced, err := s.draManager.AddSliceEventHandler(s.moveOnEvents(framework.ResourceSlice, a))
		if err != nil {
			return fmt.Errorf("adding ResourceSlice event handler: %w", err)
		}
		s.informersSynced = append(s.informersSynced, synced)
	}
	if a, ok := actions[framework.DeviceClass]; ok {
		synced := s.draManager.AddDeviceClassEventHandler(s.moveOnEvents(framework.DeviceClass, a))
		s.informersSynced = append(s.informersSynced, synced)
	}
	return nil
}

// draResources are the resources whose events come from the shared DRA
// state rather than from an informer of the factory.
var draResources = map[framework.EventResource]bool{
	framework.ResourceClaim: true, framework.ResourceSlice: true, framework.DeviceClass: true,
}

// assignedPodHandler feeds the cache with bound pods. A tombstone (the
// DeletedFinalStateUnknown of a delete the watch missed) always passes: the
// object it carries may predate the binding, and a pod we assumed is in the
// cache whatever that stale copy says. Removing a pod the cache does not
// hold only logs an error.
func (s *Scheduler) assignedPodHandler() toolscache.ResourceEventHandler {
	return toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				_, isPod := podOf(obj)
				return isPod
			}
			pod, ok := podOf(obj)
			return ok && assignedPod(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToCache,
			UpdateFunc: s.updatePodInCache,
			DeleteFunc: s.deletePodFromCache,
		},
	}
}

// unassignedPodHandler feeds the queue with the pending pods of our
// profiles. A tombstone of one of our pods passes whether or not its stale
// object says it was bound, for the same reason as in assignedPodHandler:
// deleting a pod the queue does not hold does nothing.
func (s *Scheduler) unassignedPodHandler() toolscache.ResourceEventHandler {
	return toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := podOf(obj)
			if !ok || !s.responsibleForPod(pod) {
				return false
			}
			_, tombstone := obj.(toolscache.DeletedFinalStateUnknown)
			return tombstone || !assignedPod(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToSchedulingQueue,
			UpdateFunc: s.updatePodInSchedulingQueue,
			DeleteFunc: s.deletePodFromSchedulingQueue,
		},
	}
}

// podOf unwraps a pod from an informer notification, including the
// DeletedFinalStateUnknown tombstone of a missed delete.
func podOf(obj interface{}) (*v1.Pod, bool) {
	switch t := obj.(type) {
	case *v1.Pod:
		return t, true
	case toolscache.DeletedFinalStateUnknown:
		p, ok := t.Obj.(*v1.Pod)
		return p, ok
	}
	return nil, false
}

func nodeOf(obj interface{}) (*v1.Node, bool) {
	switch t := obj.(type) {
	case *v1.Node:
		return t, true
	case toolscache.DeletedFinalStateUnknown:
		n, ok := t.Obj.(*v1.Node)
		return n, ok
	}
	return nil, false
}

// assignedPod reports whether the pod is bound to a node.
func assignedPod(pod *v1.Pod) bool { return pod.Spec.NodeName != "" }

// Unassigned pods → the queue.

// observeEvent records how long the handlers of an informer event took,
// under kube-scheduler's event labels: `defer s.observeEvent(label, time.Now())`.
func (s *Scheduler) observeEvent(label string, start time.Time) {
	s.metrics.EventHandled(label, time.Since(start))
}

func (s *Scheduler) addPodToSchedulingQueue(obj interface{}) {
	defer s.observeEvent("UnscheduledPodAdd", time.Now())
	pod, _ := podOf(obj)
	s.logger.V(3).Info("Add event for unscheduled pod", "pod", klog.KObj(pod))
	s.Cache.AddPodGroupMember(pod)
	s.Queue.Add(s.logger, pod)
	if s.gates.GenericWorkload {
		// A new member may bring a gang to minCount: the gated members of
		// its group are offered the event, as in kube-scheduler.
		s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, framework.UnscheduledPodAdd, nil, pod, nil)
	}
}

func (s *Scheduler) updatePodInSchedulingQueue(oldObj, newObj interface{}) {
	defer s.observeEvent("UnscheduledPodUpdate", time.Now())
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	// A resync delivers identical objects: ignore them, or the pod could be
	// scheduled twice.
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	// An assumed pod is being bound by us; its updates are not news.
	if assumed, _ := s.Cache.IsAssumedPod(newPod); assumed {
		return
	}
	s.logger.V(4).Info("Update event for unscheduled pod", "pod", klog.KObj(newPod))
	s.Cache.UpdatePodGroupMember(oldPod, newPod)
	s.Queue.Update(s.logger, oldPod, newPod)
}

func (s *Scheduler) deletePodFromSchedulingQueue(obj interface{}) {
	defer s.observeEvent("UnscheduledPodDelete", time.Now())
	pod, ok := podOf(obj)
	if !ok {
		return
	}
	s.logger.V(3).Info("Delete event for unscheduled pod", "pod", klog.KObj(pod))
	s.Cache.RemovePodGroupMember(pod)
	s.Queue.Delete(pod)
	schedFramework, err := s.frameworkForPod(pod)
	if err != nil {
		return
	}
	// A pod waiting on Permit was assumed: rejecting it frees its place, which
	// may help other pods, as if an assigned pod had been deleted.
	if schedFramework.RejectWaitingPod(pod.UID) {
		s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, framework.AssignedPodDelete, pod, nil, nil)
	}
}

// PodGroups → the cache and the queue, and queue moves for the members
// waiting on them (GangScheduling registers PodGroup events).

func podGroupOf(obj interface{}) (*schedulingv1beta1.PodGroup, bool) {
	switch t := obj.(type) {
	case *schedulingv1beta1.PodGroup:
		return t, true
	case toolscache.DeletedFinalStateUnknown:
		pg, ok := t.Obj.(*schedulingv1beta1.PodGroup)
		return pg, ok
	}
	return nil, false
}

// podGroupEvent is the ClusterEvent of a PodGroup change, labelled as
// kube-scheduler labels it ("scheduling.k8s.io/PodGroupAdd").
func podGroupEvent(action framework.ActionType, label string) framework.ClusterEvent {
	return framework.ClusterEvent{Resource: framework.PodGroup, ActionType: action,
		Label: string(framework.PodGroup) + label}
}

func (s *Scheduler) addPodGroup(obj interface{}) {
	event := podGroupEvent(framework.Add, "Add")
	defer s.observeEvent(event.Label, time.Now())
	pg, ok := podGroupOf(obj)
	if !ok {
		return
	}
	s.logger.V(3).Info("Add event for pod group", "podGroup", klog.KObj(pg))
	s.Cache.AddPodGroup(pg)
	s.Queue.AddPodGroup(s.logger, pg)
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, event, nil, pg, nil)
}

func (s *Scheduler) updatePodGroup(oldObj, newObj interface{}) {
	event := podGroupEvent(framework.Update, "Update")
	defer s.observeEvent(event.Label, time.Now())
	oldPG, ok1 := podGroupOf(oldObj)
	newPG, ok2 := podGroupOf(newObj)
	if !ok1 || !ok2 || oldPG.ResourceVersion == newPG.ResourceVersion {
		return // a resync: nothing changed
	}
	s.logger.V(4).Info("Update event for pod group", "podGroup", klog.KObj(newPG))
	s.Cache.UpdatePodGroup(oldPG, newPG)
	s.Queue.UpdatePodGroup(s.logger, newPG)
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, event, oldPG, newPG, nil)
}

func (s *Scheduler) deletePodGroup(obj interface{}) {
	event := podGroupEvent(framework.Delete, "Delete")
	defer s.observeEvent(event.Label, time.Now())
	pg, ok := podGroupOf(obj)
	if !ok {
		return
	}
	s.logger.V(3).Info("Delete event for pod group", "podGroup", klog.KObj(pg))
	s.Cache.RemovePodGroup(pg)
	s.Queue.DeletePodGroup(s.logger, pg)
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, event, pg, nil, nil)
}

// Assigned pods → the cache, and queue moves for pods waiting on them.

func (s *Scheduler) addPodToCache(obj interface{}) {
	defer s.observeEvent(framework.AssignedPodAdd.Label, time.Now())
	pod, _ := podOf(obj)
	s.logger.V(3).Info("Add event for scheduled pod", "pod", klog.KObj(pod))
	if err := s.Cache.AddPod(s.logger, pod); err != nil {
		s.logger.Error(err, "Scheduler cache AddPod failed", "pod", klog.KObj(pod))
	}
	s.Queue.AssignedPodAdded(s.logger, pod)
}

func (s *Scheduler) updatePodInCache(oldObj, newObj interface{}) {
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	if oldPod.UID != newPod.UID {
		// A pod deleted and recreated under the same name between two
		// watches: treat it as such.
		s.deletePodFromCache(oldObj)
		s.addPodToCache(newObj)
		return
	}
	defer s.observeEvent("AssignedPodUpdate", time.Now())
	if err := s.Cache.UpdatePod(s.logger, oldPod, newPod); err != nil {
		s.logger.Error(err, "Scheduler cache UpdatePod failed", "pod", klog.KObj(oldPod))
	}
	s.Queue.AssignedPodUpdated(s.logger, oldPod, newPod)
}

func (s *Scheduler) deletePodFromCache(obj interface{}) {
	defer s.observeEvent(framework.AssignedPodDelete.Label, time.Now())
	pod, ok := podOf(obj)
	if !ok {
		return
	}
	s.logger.V(3).Info("Delete event for scheduled pod", "pod", klog.KObj(pod))
	if err := s.Cache.RemovePod(s.logger, pod); err != nil {
		s.logger.Error(err, "Scheduler cache RemovePod failed", "pod", klog.KObj(pod))
	}
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, framework.AssignedPodDelete, pod, nil, nil)
}

// Nodes → the cache, and queue moves with the precise kind of change.

func (s *Scheduler) addNodeToCache(obj interface{}) {
	defer s.observeEvent(framework.NodeAdd.Label, time.Now())
	node, _ := nodeOf(obj)
	s.logger.V(3).Info("Add event for node", "node", klog.KObj(node))
	s.Cache.AddNode(s.logger, node)
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, framework.NodeAdd, nil, node, nil)
}

func (s *Scheduler) updateNodeInCache(oldObj, newObj interface{}) {
	oldNode, _ := nodeOf(oldObj)
	newNode, _ := nodeOf(newObj)
	start := time.Now()
	s.Cache.UpdateNode(s.logger, oldNode, newNode)
	updating := time.Since(start)
	// Each kind of change is its own event, timed with the cache update.
	for _, evt := range framework.NodeUpdateEvents(oldNode, newNode) {
		s.logger.V(4).Info("Update event for node", "node", klog.KObj(newNode), "event", evt.Label)
		moving := time.Now()
		s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, evt, oldNode, newNode, nil)
		s.metrics.EventHandled(evt.Label, updating+time.Since(moving))
	}
}

func (s *Scheduler) deleteNodeFromCache(obj interface{}) {
	defer s.observeEvent(framework.NodeDelete.Label, time.Now())
	node, ok := nodeOf(obj)
	if !ok {
		return
	}
	s.logger.V(3).Info("Delete event for node", "node", klog.KObj(node))
	if err := s.Cache.RemoveNode(s.logger, node); err != nil {
		s.logger.Error(err, "Scheduler cache RemoveNode failed", "node", klog.KObj(node))
	}
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, framework.NodeDelete, node, nil, nil)
}

// Other resources → queue moves only. Their informers are started for the
// resources some profile's plugin registered an event for, and only with the
// actions registered (as kube-scheduler does): a profile without the volume
// plugins watches no PersistentVolumes.

// otherInformers gives the informer of each resource that only moves pods.
var otherInformers = map[framework.EventResource]func(informers.SharedInformerFactory) toolscache.SharedIndexInformer{
	framework.PersistentVolume: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumes().Informer()
	},
	framework.PersistentVolumeClaim: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumeClaims().Informer()
	},
	framework.StorageClass: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().StorageClasses().Informer()
	},
	framework.CSINode: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSINodes().Informer()
	},
	framework.CSIDriver: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSIDrivers().Informer()
	},
	framework.CSIStorageCapacity: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().CSIStorageCapacities().Informer()
	},
	framework.VolumeAttachment: func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Storage().V1().VolumeAttachments().Informer()
	},
}

// registeredActions returns, per resource that handled reports true for,
// the union of the actions the profiles' plugins registered for it.
func (s *Scheduler) registeredActions(handled func(framework.EventResource) bool) map[framework.EventResource]framework.ActionType {
	out := map[framework.EventResource]framework.ActionType{}
	for _, schedFramework := range s.Profiles {
		for _, events := range schedFramework.QueueingHints() {
			for _, e := range events {
				if handled(e.Event.Resource) {
					out[e.Event.Resource] |= e.Event.ActionType
				}
			}
		}
	}
	return out
}

// moveOnEvents is the handler of a resource that only moves pods: one
// ClusterEvent per registered action, labelled like kube-scheduler's
// ("PersistentVolumeClaimAdd").
func (s *Scheduler) moveOnEvents(resource framework.EventResource, actions framework.ActionType) toolscache.ResourceEventHandlerFuncs {
	event := func(a framework.ActionType) framework.ClusterEvent {
		return framework.ClusterEvent{Resource: resource, ActionType: a, Label: string(resource) + a.String()}
	}
	var funcs toolscache.ResourceEventHandlerFuncs
	if actions&framework.Add != 0 {
		add := event(framework.Add)
		funcs.AddFunc = func(obj interface{}) {
			defer s.observeEvent(add.Label, time.Now())
			s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, add, nil, obj, nil)
		}
	}
	if actions&framework.Update != 0 {
		update := event(framework.Update)
		funcs.UpdateFunc = func(oldObj, newObj interface{}) {
			defer s.observeEvent(update.Label, time.Now())
			s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, update, oldObj, newObj, nil)
		}
	}
	if actions&framework.Delete != 0 {
		del := event(framework.Delete)
		funcs.DeleteFunc = func(obj interface{}) {
			defer s.observeEvent(del.Label, time.Now())
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, del, obj, nil, nil)
		}
	}
	return funcs
}
