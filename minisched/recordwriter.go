// The record writer: attempt records go to their pods, as the annotation
// attempt.Annotation, in the background: the scheduling loop only hands a
// record over and never waits for the apiserver.

package minisched

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/attempt"
)

// recordWriteTimeout bounds one annotation patch.
const recordWriteTimeout = 10 * time.Second

// recordWriters is how many patches are in flight at most.
const recordWriters = 2

// recordWriter patches each pod's last attempt record onto it. Records wait
// in a work queue keyed by pod, so a pod tried again before its record was
// written gets only its latest one written. Writing is best effort: a
// failure is logged at V(2) and never fails scheduling.
type recordWriter struct {
	client kubernetes.Interface
	queue  workqueue.TypedInterface[types.NamespacedName]
	// mu guards latest, the record to write for each queued pod.
	mu     sync.Mutex
	latest map[types.NamespacedName]pendingRecord
	// workers counts the running workers, for stop.
	workers sync.WaitGroup
}

// pendingRecord is a record to write and the pod it is about, with the
// pod's last preempting record if that one is not written yet either.
type pendingRecord struct {
	uid        types.UID
	record     *attempt.Record
	preemption *attempt.Record
}

func newRecordWriter(client kubernetes.Interface) *recordWriter {
	return &recordWriter{
		client: client,
		queue:  workqueue.NewTyped[types.NamespacedName](),
		latest: map[types.NamespacedName]pendingRecord{},
	}
}

// add queues rec to be written to pod, replacing a record not yet written;
// a preempting record not yet written is kept, to be written as
// attempt.PreemptionAnnotation.
func (w *recordWriter) add(pod *v1.Pod, rec *attempt.Record) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p := pendingRecord{uid: pod.UID, record: rec}
	if rec.NominatedNode != "" {
		p.preemption = rec
	}
	w.mu.Lock()
	if old, ok := w.latest[key]; ok && old.uid == pod.UID && p.preemption == nil {
		p.preemption = old.preemption
	}
	w.latest[key] = p
	w.mu.Unlock()
	w.queue.Add(key)
}

// start runs the workers until stop; they log with ctx's logger.
func (w *recordWriter) start(ctx context.Context) {
	for range recordWriters {
		w.workers.Go(func() {
			for w.writeNext(ctx) {
			}
		})
	}
}

// stop drops the records not yet written and waits for the patches in
// flight.
func (w *recordWriter) stop() {
	w.mu.Lock()
	clear(w.latest)
	w.mu.Unlock()
	w.queue.ShutDown()
	w.workers.Wait()
}

// writeNext writes one queued record; it returns false once the queue is
// shut down.
func (w *recordWriter) writeNext(ctx context.Context) bool {
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	w.mu.Lock()
	p, ok := w.latest[key]
	delete(w.latest, key)
	w.mu.Unlock()
	if !ok {
		return true
	}
	logger := klog.FromContext(ctx).WithValues("pod", key)
	if err := w.write(ctx, key, p); err != nil {
		logger.V(2).Info("Could not write the attempt record to the pod", "err", err)
		return true
	}
	logger.V(4).Info("Wrote the attempt record to the pod", "result", p.record.Result)
	return true
}

// write encodes the records and merge-patches them onto the pod. The patch
// names the pod's UID: a pod replaced under the same name is not written
// (the apiserver refuses to change a UID).
func (w *recordWriter) write(ctx context.Context, key types.NamespacedName, p pendingRecord) error {
	annotations := map[string]string{}
	for name, rec := range map[string]*attempt.Record{
		attempt.Annotation: p.record, attempt.PreemptionAnnotation: p.preemption} {
		if rec == nil {
			continue
		}
		value, err := rec.Encode(attempt.MaxBytes)
		if err != nil {
			return err
		}
		annotations[name] = string(value)
	}
	patch, err := annotationPatch(p.uid, annotations)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, recordWriteTimeout)
	defer cancel()
	_, err = w.client.CoreV1().Pods(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{})
	return err
}

// annotationPatch is the merge patch that sets the record annotations on
// the pod with uid.
func annotationPatch(uid types.UID, annotations map[string]string) ([]byte, error) {
	patch := map[string]any{"metadata": map[string]any{
		"uid":         uid,
		"annotations": annotations,
	}}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding the annotation patch: %w", err)
	}
	return data, nil
}
