package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/chapters"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/web"
)

// watch is a story running with the live view open in Chromium, as
// `make start CHAPTER=N WEB=… [STEP=1]` runs it.
type watch struct {
	t   *testing.T
	b   *browser
	url string
	// ns is the story's namespace (its name).
	ns  string
	out *syncBuffer
	// done gets the story's error when it ends.
	done chan error
}

// syncBuffer is a bytes.Buffer the runner and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWatch opens the page of a view (stepping, if step) and runs the
// story named name in it once the page is open.
func startWatch(t *testing.T, name string, step bool) *watch {
	t.Helper()
	stories, err := chapters.Stories("../" + chapters.FilesDir)
	if err != nil {
		t.Fatal(err)
	}
	picked, err := scenario.Select(stories, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	view := web.New()
	if step {
		view.EnableStepping()
	}
	addr, err := view.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{t: t, b: newBrowser(t), url: "http://" + addr.String(), ns: name, out: &syncBuffer{},
		done: make(chan error, 1)}
	w.b.run(t, "open the page", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	if err := view.WaitForWatcher(ctx); err != nil {
		t.Fatal(err)
	}
	r := &scenario.Runner{RestConfig: testEnv.Config, Out: w.out, Environment: testEnv, View: view}
	go func() { w.done <- r.Run(ctx, picked[0]) }()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

// wait waits for the story to end, and fails the test if it failed.
func (w *watch) wait() {
	w.t.Helper()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		if err != nil {
			w.t.Fatalf("the story failed: %v\n%s", err, w.out.String())
		}
	case <-time.After(2 * stepTimeout):
		w.t.Fatalf("the story did not end within %v:\n%s", 2*stepTimeout, w.out.String())
	}
}

// stepDocument is the part of /api/step the test reads.
type stepDocument struct {
	Current *struct {
		Paused bool     `json:"paused"`
		Seq    int64    `json:"seq"`
		Pod    string   `json:"pod"`
		Point  string   `json:"point"`
		Points []string `json:"points"`
	} `json:"current"`
	Others []struct {
		Seq   int64  `json:"seq"`
		Pod   string `json:"pod"`
		Point string `json:"point"`
	} `json:"others"`
}

// step reads /api/step.
func (w *watch) step() stepDocument {
	w.t.Helper()
	var doc stepDocument
	if err := (&harness{url: w.url}).get(context.Background(), "/api/step", &doc); err != nil {
		w.t.Fatal(err)
	}
	return doc
}

// control posts a step control, for the held attempt seq if not 0.
func (w *watch) control(action string, seq int64) {
	w.t.Helper()
	url := w.url + "/api/step/" + action
	if seq != 0 {
		url += fmt.Sprintf("?seq=%d", seq)
	}
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("X-Minisched-Step", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// until presses what act says on each held step (through the API, as the
// page's buttons do) until done says the picture is ready.
func (w *watch) until(what string, act func(stepDocument) (action string, seq int64), done func(stepDocument) bool) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*stepTimeout, true,
		func(context.Context) (bool, error) {
			doc := w.step()
			if done(doc) {
				return true, nil
			}
			if doc.Current != nil && doc.Current.Paused {
				if action, seq := act(doc); action != "" {
					w.control(action, seq)
				}
			}
			return false, nil
		})
	if err != nil {
		w.t.Fatalf("%s: %v; /api/step: %+v\n%s", what, err, w.step(), w.out.String())
	}
}

// heldAnywhere returns the seq and the point of pod's held step, first in
// line or among the others; ok is false if it is not held.
func heldAnywhere(d stepDocument, pod string) (seq int64, point string, ok bool) {
	if c := d.Current; c != nil && c.Paused && c.Pod == pod {
		return c.Seq, c.Point, true
	}
	for _, o := range d.Others {
		if o.Pod == pod {
			return o.Seq, o.Point, true
		}
	}
	return 0, "", false
}

// held reports whether pod's attempt is held before point, first in line.
func held(doc stepDocument, pod, point string) bool {
	return doc.Current != nil && doc.Current.Paused && doc.Current.Pod == pod && doc.Current.Point == point
}

// TestWatchIt runs, for each chapter with a "Watch it" section (2, 3, 6, 10
// and 19), the story the section watches, in Chromium, and checks what the
// section says to look for on the map or in the step panel; with
// WEB_SCREENSHOTS set it saves the section's screenshot, watch-chN.png.
func TestWatchIt(t *testing.T) {
	t.Run("ch2: Filter refuses the cordoned nodes", func(t *testing.T) {
		w := startWatch(t, "ch2-nodeunschedulable", true)
		pod := w.ns + "/pod1"
		// Its first attempt finds every node cordoned; node10 comes, and
		// its second is held before Reserve, node10 chosen.
		w.until("pod1's second attempt held before Reserve", func(stepDocument) (string, int64) { return "next", 0 },
			func(d stepDocument) bool { return held(d, pod, "Reserve") })
		for i := range 10 {
			w.b.waitText(t, "node"+fmt.Sprint(i)+" refused on the map", fmt.Sprintf(`#cluster article[data-node="node%d"]`, i),
				"NodeUnschedulable: node(s) were unschedulable")
		}
		w.b.waitText(t, "node10 chosen on the map", `#cluster article[data-node="node10"]`, "chosen")
		w.b.waitText(t, "the nodes' table", "#step-nodes tbody", "node0✗ NodeUnschedulable: node(s) were unschedulable")
		w.b.screenshot(t, "watch-ch2.png")
		w.b.run(t, "press r", chromedp.KeyEvent("r"))
		w.wait()
	})
	t.Run("ch3: Score ranks the nodes", func(t *testing.T) {
		w := startWatch(t, "ch3-nodenumber", true)
		pod := w.ns + "/pod1"
		w.until("pod1 held before Reserve", func(d stepDocument) (string, int64) {
			if d.Current.Pod != pod {
				return "cycle", 0
			}
			return "next", 0
		}, func(d stepDocument) bool { return held(d, pod, "Reserve") })
		w.b.waitText(t, "node1 chosen in the table", "#step-nodes tbody", "node1 ← chosen")
		w.b.waitText(t, "node1 chosen on the map", `#cluster article[data-node="node1"]`, "chosen")
		w.b.screenshot(t, "watch-ch3.png")
		w.b.run(t, "press r", chromedp.KeyEvent("r"))
		w.wait()
	})
	t.Run("ch6: the second pod is refused for the room the first, assumed, takes", func(t *testing.T) {
		w := startWatch(t, "ch6-assume", true)
		// The first pod tried goes as far as PreBind: it is assumed on
		// node0, and not bound.
		var first string
		w.until("the first pod held before PreBind", func(d stepDocument) (string, int64) {
			if first == "" {
				first = d.Current.Pod
			}
			if seq, _, ok := heldAnywhere(d, first); ok {
				return "next", seq
			}
			return "", 0
		}, func(d stepDocument) bool {
			_, point, ok := heldAnywhere(d, first)
			return ok && point == "PreBind"
		})
		second := w.ns + "/pod-a"
		if first == second {
			second = w.ns + "/pod-b"
		}
		// The second, let finish in the page: node0 has no room left.
		w.until("the second pod is held", func(stepDocument) (string, int64) { return "", 0 }, func(d stepDocument) bool {
			_, _, ok := heldAnywhere(d, second)
			return ok
		})
		if d := w.step(); d.Current != nil && d.Current.Pod == second {
			w.b.run(t, "let the second pod finish", chromedp.Click(chromedp.CSS("#step-cycle")))
		} else {
			sel := `#step-others button[data-action="cycle"][aria-label*="` + second + `"]`
			w.b.waitDOM(t, "the second pod's own buttons", sel)
			w.b.run(t, "let the second pod finish", chromedp.Click(chromedp.CSS(sel)))
		}
		w.b.waitDOM(t, "the second pod unschedulable", `#unschedulable li[data-pod="`+second+`"], #backoffQ li[data-pod="`+second+`"]`)
		w.b.run(t, "choose the second pod", chromedp.Click(chromedp.CSS(`li[data-pod="`+second+`"] button.pod`)))
		w.b.run(t, "close its detail", chromedp.KeyEvent(kb.Escape))
		w.b.waitText(t, "node0 refused for the second pod", `#cluster article[data-node="node0"]`,
			"NodeResourcesFit: Insufficient cpu")
		w.b.waitText(t, "the first pod binding on node0", `#cluster article[data-node="node0"]`, "◐")
		w.b.screenshot(t, "watch-ch6.png")
		w.control("run", 0)
		w.wait()
	})
	t.Run("ch10: the preemptor's placeholder on its nominated node", func(t *testing.T) {
		w := startWatch(t, "ch10-preemption", true)
		pod := w.ns + "/high"
		// The others' attempts run through; high's first goes through
		// PostFilter (preemption nominates it to node0 and evicts the
		// victim), and its next is held before PreFilter.
		var firstSeq int64
		w.until("high's next attempt held before PreFilter", func(d stepDocument) (string, int64) {
			if d.Current.Pod != pod {
				return "cycle", 0
			}
			if firstSeq == 0 {
				firstSeq = d.Current.Seq
			}
			return "next", 0
		}, func(d stepDocument) bool {
			return firstSeq != 0 && held(d, pod, "PreFilter") && d.Current.Seq != firstSeq
		})
		w.b.waitText(t, "high's placeholder on node0", `#cluster article[data-node="node0"]`, "nominated")
		w.b.screenshot(t, "watch-ch10.png")
		w.b.run(t, "press r", chromedp.KeyEvent("r"))
		w.wait()
	})
	t.Run("ch19: a gang's members on the map", func(t *testing.T) {
		w := startWatch(t, "ch19-all-or-nothing", false)
		w.wait()
		w.b.run(t, "choose a member on the map", chromedp.Click(chromedp.CSS(`#cluster li[data-map-pod] button`)))
		w.b.run(t, "close its detail", chromedp.KeyEvent(kb.Escape))
		w.b.waitText(t, "the map coloured by its attempt", "#cluster-result", "Coloured by")
		w.b.waitText(t, "a member marked with its group", "#cluster li[data-map-pod]", "group ch19-all-or-nothing/")
		w.b.screenshot(t, "watch-ch19.png")
		if !strings.Contains(w.out.String(), "PASS") {
			t.Errorf("the story's output has no verdict:\n%s", w.out.String())
		}
	})
}
