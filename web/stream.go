// The stream: Server-Sent Events that carry the queue document when it
// changes, each attempt as it ends, in step mode the step document when
// it changes, and the cluster map's document when it changes (at most
// once a second). While at least one stream is open the view is Watching,
// and the scheduler records attempts for it.

package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// How often a stream looks at the queue, and how often it sends a comment
// so that proxies keep an idle stream open.
const (
	queuePollInterval = 250 * time.Millisecond
	keepAliveInterval = 15 * time.Second
)

// clusterEventInterval bounds how often a stream sends the cluster map's
// document (cluster.go): at most once per interval, and only when its
// change key moved.
const clusterEventInterval = time.Second

// serveStream serves /api/stream until the client goes or the server stops.
func (v *View) serveStream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	// Watching before the client sees the stream open.
	attempts, unsubscribe := v.attempts.subscribe()
	defer unsubscribe()
	v.streams.Add(1)
	defer v.streams.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	p := pageOf(r, defaultQueueLimit, maxQueueLimit)
	poll := time.NewTicker(queuePollInterval)
	defer poll.Stop()
	keepAlive := time.NewTicker(keepAliveInterval)
	defer keepAlive.Stop()
	var last []byte
	sendQueue := func() error {
		doc := v.queueDocument(p)
		key, err := changeKey(doc)
		if err != nil || bytes.Equal(key, last) {
			return err
		}
		last = key
		return writeEvent(w, "queue", doc)
	}
	stepVersion := int64(-1)
	sendStep := func() error {
		if v.stepper == nil {
			return nil
		}
		doc, version := v.stepper.document()
		if version == stepVersion {
			return nil
		}
		stepVersion = version
		return writeEvent(w, "step", doc)
	}
	if err := sendQueue(); err != nil {
		return
	}
	if err := sendStep(); err != nil {
		return
	}
	sendCluster := v.clusterSender(w, r)
	if err := sendCluster(); err != nil {
		return
	}
	flusher.Flush()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-poll.C:
			if err = sendQueue(); err == nil {
				err = sendStep()
			}
			if err == nil {
				err = sendCluster()
			}
		case e := <-attempts:
			err = writeEvent(w, "attempt", e)
		case <-keepAlive.C:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		}
		if err != nil {
			return
		}
		flusher.Flush()
	}
}

// clusterSender returns what sends the stream's "cluster" event: the
// document /api/cluster would serve for the stream's query, when its
// change key moved and clusterEventInterval has passed since the last one.
func (v *View) clusterSender(w http.ResponseWriter, r *http.Request) func() error {
	q := clusterQueryOf(r)
	var sent time.Time
	var last uint64
	var attached bool
	return func() error {
		if time.Since(sent) < clusterEventInterval {
			return nil
		}
		src := v.attached()
		key := v.cluster.changeKey(src)
		if !sent.IsZero() && key == last && attached == (src != nil) {
			return nil
		}
		sent, last, attached = time.Now(), key, src != nil
		return writeEvent(w, "cluster", v.clusterDocument(q))
	}
}

// changeKey is doc without what changes on its own as time passes (the
// time, the backoffs' countdown): two documents with the same key show
// the same queue, and a stream sends only a changed one.
func changeKey(doc queueDoc) ([]byte, error) {
	doc.Now = time.Time{}
	backoff := make([]queuedEntry, len(doc.BackoffQ))
	for i, e := range doc.BackoffQ {
		e.BackoffRemaining, e.BackoffRemainingMs = "", nil
		backoff[i] = e
	}
	doc.BackoffQ = backoff
	return json.Marshal(doc)
}

// writeEvent writes one event of the stream: its name and its JSON.
func writeEvent(w http.ResponseWriter, name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	return err
}
