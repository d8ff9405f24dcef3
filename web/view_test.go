package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scenario"
)

// stepTimeout bounds every wait of the test.
const stepTimeout = 20 * time.Second

// The parts of the JSON documents the test reads (docs/web.md has them
// whole).
type (
	queueEntry struct {
		Pod                string      `json:"pod"`
		Group              *groupEntry `json:"group"`
		Plugins            []string    `json:"plugins"`
		Events             []string    `json:"events"`
		BackoffRemainingMs *int64      `json:"backoffRemainingMs"`
		Phase              string      `json:"phase"`
	}
	groupEntry struct {
		Name     string `json:"name"`
		Policy   string `json:"policy"`
		MinCount int    `json:"minCount"`
		Members  []struct {
			Pod string `json:"pod"`
		} `json:"members"`
	}
	queueDoc struct {
		Scheduler     bool         `json:"scheduler"`
		ActiveQ       []queueEntry `json:"activeQ"`
		BackoffQ      []queueEntry `json:"backoffQ"`
		Unschedulable []queueEntry `json:"unschedulable"`
		InFlight      []queueEntry `json:"inFlight"`
		Nominated     []struct {
			Pod  string `json:"pod"`
			Node string `json:"node"`
		} `json:"nominated"`
		IncompletePodGroups []groupEntry `json:"incompletePodGroups"`
		PendingPodGroups    []groupEntry `json:"pendingPodGroups"`
	}
	table struct {
		Columns []string   `json:"columns"`
		Rows    [][]string `json:"rows"`
	}
	podDoc struct {
		Location string `json:"location"`
		Attempts []struct {
			Result string `json:"result"`
			Group  *table `json:"group"`
			Filter *table `json:"filter"`
			Text   string `json:"text"`
		} `json:"attempts"`
		LastRecord *struct {
			Text string `json:"text"`
		} `json:"lastRecord"`
	}
	attemptsDoc struct {
		Watching bool `json:"watching"`
		Attempts []struct {
			Pod      string `json:"pod"`
			Result   string `json:"result"`
			PodGroup string `json:"podGroup"`
			GroupSeq int64  `json:"groupSeq"`
			Group    *struct {
				Members []struct {
					Pod   string `json:"pod"`
					Node  string `json:"node"`
					Shape string `json:"shape"`
				} `json:"members"`
			} `json:"groupAttempt"`
		} `json:"attempts"`
	}
)

// findGroup returns the group entry named name (namespace/name) in list,
// with its members' names, or nil.
func findGroup(list []groupEntry, name string) (*groupEntry, []string) {
	for i := range list {
		if list[i].Name == name {
			var members []string
			for _, m := range list[i].Members {
				members = append(members, m.Pod)
			}
			return &list[i], members
		}
	}
	return nil, nil
}

// groupsOf returns the pod groups of a list of the queue.
func groupsOf(list []queueEntry) []groupEntry {
	var out []groupEntry
	for _, e := range list {
		if e.Group != nil {
			out = append(out, *e.Group)
		}
	}
	return out
}

// find returns the entry of pod in list, or nil.
func find(list []queueEntry, pod string) *queueEntry {
	for i := range list {
		if list[i].Pod == pod {
			return &list[i]
		}
	}
	return nil
}

// TestLiveView follows a pod through the queue on a small cluster, as the
// JSON API and, in Chromium, the page show it: held in activeQ behind a
// pod whose cycle runs; among the unschedulable pods, rejected by
// NodeResourcesFit, with the Filter table of its attempt; in backoffQ once
// a big node is added; bound, and gone from the queue. Before any page is
// open, nothing is recorded. WEB_SCREENSHOTS=DIR saves the page at the
// unschedulable and backoff steps there (docs/ has the ones of a real run).
func TestLiveView(t *testing.T) {
	h := newHarness(t, "web-live", features.Gates{})
	ns := h.env.Namespace
	ctx := context.Background()
	big := ns + "/big"
	if err := h.env.CreateNodes(ctx, h.node("small", "1")); err != nil {
		t.Fatal(err)
	}

	// Nobody watches: the scheduler records nothing for the view.
	if err := h.env.CreatePods(ctx, h.pod("early", "100m")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.WaitForPodBound(ctx, "early", stepTimeout); err != nil {
		t.Fatal(err)
	}
	var attempts attemptsDoc
	if err := h.get(ctx, "/api/attempts", &attempts); err != nil {
		t.Fatal(err)
	}
	if attempts.Watching || len(attempts.Attempts) > 0 {
		t.Fatalf("with no page open: watching = %v, %d attempts recorded; want false and none",
			attempts.Watching, len(attempts.Attempts))
	}

	b := newBrowser(t)
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	poll(t, "the page's stream makes the view watch", stepTimeout, func() error {
		if !h.view.Watching() {
			return fmt.Errorf("not watching")
		}
		return nil
	})

	// A held pod's cycle runs; the next pod waits in activeQ.
	if err := h.env.CreatePods(ctx, h.heldPod("held")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "held is in its scheduling cycle", func(q queueDoc) error {
		if e := find(q.InFlight, ns+"/held"); e == nil || e.Phase != "Scheduling" {
			return fmt.Errorf("inFlight = %+v", q.InFlight)
		}
		return nil
	})
	b.waitDOM(t, "held in flight, Scheduling", `#inFlight li[data-pod="`+ns+`/held"][data-phase="Scheduling"]`)
	if err := h.env.CreatePods(ctx, h.pod("big", "2")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "big waits in activeQ", func(q queueDoc) error {
		if find(q.ActiveQ, big) == nil {
			return fmt.Errorf("activeQ = %+v", q.ActiveQ)
		}
		return nil
	})
	b.waitDOM(t, "big in activeQ", `#activeQ li[data-pod="`+big+`"]`)

	// Released: big is tried, and the small node is too small.
	h.hold.release("held")
	h.waitQueue(t, "big is unschedulable, rejected by NodeResourcesFit", func(q queueDoc) error {
		e := find(q.Unschedulable, big)
		if e == nil || !slices.Equal(e.Plugins, []string{"NodeResourcesFit"}) || len(e.Events) == 0 {
			return fmt.Errorf("unschedulable = %+v", q.Unschedulable)
		}
		return nil
	})
	b.waitDOM(t, "big among the unschedulable pods with its plugin",
		`#unschedulable li[data-pod="`+big+`"][data-plugins="NodeResourcesFit"]`)
	var pod podDoc
	if err := h.get(ctx, "/api/pods/"+big, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Location != "unschedulable" || len(pod.Attempts) != 1 || pod.Attempts[0].Result != "Unschedulable" ||
		pod.Attempts[0].Filter == nil || !strings.Contains(fmt.Sprint(pod.Attempts[0].Filter.Rows), "Insufficient cpu") ||
		!strings.HasPrefix(pod.Attempts[0].Text, "Pod "+big+": Unschedulable") || pod.LastRecord == nil {
		t.Fatalf("/api/pods/%s = %+v", big, pod)
	}
	// With the keyboard: focus big's entry, and Enter opens its detail.
	b.run(t, "open big's detail", chromedp.Focus(chromedp.CSS(`#unschedulable li[data-pod="`+big+`"] button`)),
		chromedp.KeyEvent(kb.Enter))
	b.waitDOM(t, "big's Filter table", `#detail:not([hidden]) table.filter`)
	b.waitText(t, "big's detail", "#detail-pod", big)
	b.waitText(t, "the Filter table's reason", "#detail table.filter", "Insufficient cpu")
	b.screenshot(t, "web-unschedulable.png")

	// A big node: the event moves big to backoffQ (its 8 seconds are not
	// over), where it stays while another pod's cycle is held (with
	// activeQ empty, the scheduler would pop it from backoffQ at once, as
	// kube-scheduler v1.37 does); then it is bound there.
	if err := h.env.CreatePods(ctx, h.heldPod("held-again")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "held-again is in its scheduling cycle", func(q queueDoc) error {
		if e := find(q.InFlight, ns+"/held-again"); e == nil || e.Phase != "Scheduling" {
			return fmt.Errorf("inFlight = %+v", q.InFlight)
		}
		return nil
	})
	if err := h.env.CreateNodes(ctx, h.node("large", "4")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "big is back in backoffQ or activeQ", func(q queueDoc) error {
		if find(q.BackoffQ, big) == nil && find(q.ActiveQ, big) == nil {
			return fmt.Errorf("backoffQ = %+v, activeQ = %+v", q.BackoffQ, q.ActiveQ)
		}
		return nil
	})
	b.waitDOM(t, "big back in backoffQ or activeQ",
		`#backoffQ li[data-pod="`+big+`"], #activeQ li[data-pod="`+big+`"]`)
	b.run(t, "close the detail", chromedp.KeyEvent(kb.Escape))
	b.waitDOM(t, "the detail closed", `#detail[hidden]`)
	b.waitDOM(t, "held-again in flight, Scheduling", `#inFlight li[data-pod="`+ns+`/held-again"][data-phase="Scheduling"]`)
	b.screenshot(t, "web-backoff.png")
	h.hold.release("held-again")
	if _, err := h.env.WaitForPodBound(ctx, "big", stepTimeout); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "big has left the queue", func(q queueDoc) error {
		for _, l := range [][]queueEntry{q.ActiveQ, q.BackoffQ, q.Unschedulable, q.InFlight} {
			if find(l, big) != nil {
				return fmt.Errorf("still listed: %+v", q)
			}
		}
		return nil
	})
	b.waitDOM(t, "big's Scheduled attempt in the timeline", `#timeline li[data-pod="`+big+`"][data-result="Scheduled"]`)
	b.waitGone(t, "big gone from the queue's lists",
		`#activeQ li[data-pod="`+big+`"], #backoffQ li[data-pod="`+big+`"], #unschedulable li[data-pod="`+big+
			`"], #inFlight li[data-pod="`+big+`"]`)
	if err := h.get(ctx, "/api/pods/"+big, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Location != "bound" || len(pod.Attempts) != 2 || pod.Attempts[0].Result != "Scheduled" {
		t.Errorf("/api/pods/%s after binding = %+v", big, pod)
	}
}

// TestLiveViewNominated shows a preemptor among the nominated pods, with its
// node, while its victim terminates (a finalizer keeps it Terminating, so
// the nomination holds).
func TestLiveViewNominated(t *testing.T) {
	h := newHarness(t, "web-nominated", features.Gates{})
	ns := h.env.Namespace
	ctx := context.Background()
	for name, value := range map[string]int32{ns + "-low": 1, ns + "-high": 1000} {
		if err := h.env.CreatePriorityClass(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = h.client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	if err := h.env.CreateNodes(ctx, h.node("only", "1")); err != nil {
		t.Fatal(err)
	}
	low := h.pod("low", "1")
	low.Spec.PriorityClassName = ns + "-low"
	low.Finalizers = []string{"web-test/keep"}
	if err := h.env.CreatePods(ctx, low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := h.client.CoreV1().Pods(ns).Patch(context.Background(), "low", types.MergePatchType, patch,
			metav1.PatchOptions{}); err != nil {
			t.Errorf("letting low go: %v", err)
		}
	})
	if _, err := h.env.WaitForPodBound(ctx, "low", stepTimeout); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	high := h.pod("high", "1")
	high.Spec.PriorityClassName = ns + "-high"
	if err := h.env.CreatePods(ctx, high); err != nil {
		t.Fatal(err)
	}
	node := h.node("only", "1").Name
	h.waitQueue(t, "high nominated to the node", func(q queueDoc) error {
		for _, n := range q.Nominated {
			if n.Pod == ns+"/high" && n.Node == node {
				return nil
			}
		}
		return fmt.Errorf("nominated = %+v", q.Nominated)
	})
	b.waitDOM(t, "high among the nominated pods, with its node",
		`#nominated li[data-pod="`+ns+`/high"][data-node="`+node+`"]`)
	b.waitDOM(t, "high's preempting attempt in the timeline",
		`#timeline li[data-pod="`+ns+`/high"][data-result="Unschedulable"]`)
}

// TestLiveViewPodGroup follows a gang (GenericWorkload) through the queue
// and the timeline, as the JSON API and the page show it: a member waiting
// for a PodGroup that does not exist; the gang's two members in their
// cycle, held, while a third arrives and waits for the attempt to end; the
// attempt failing (one member placed in the simulation, the other fitting
// nowhere: minCount 2 cannot be met), one entry of the timeline with each
// member's outcome, and the member's detail with its group's table; the
// group, all three members now, backing off as one entity; then, once a big
// node is added, the group scheduled, its members bound.
func TestLiveViewPodGroup(t *testing.T) {
	h := newHarness(t, "web-gang", features.Gates{GenericWorkload: true})
	ns := h.env.Namespace
	ctx := context.Background()
	gang := ns + "/gang"
	if err := h.env.CreateNodes(ctx, h.node("small", "1")); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	poll(t, "the page's stream makes the view watch", stepTimeout, func() error {
		if !h.view.Watching() {
			return fmt.Errorf("not watching")
		}
		return nil
	})

	// A member of a PodGroup nobody creates waits for it, outside the queue.
	if err := h.env.CreatePods(ctx, h.member("stray", "nowhere", "100m")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "stray waits for its PodGroup", func(q queueDoc) error {
		if _, members := findGroup(q.IncompletePodGroups, ns+"/nowhere"); !slices.Equal(members, []string{ns + "/stray"}) {
			return fmt.Errorf("incompletePodGroups = %+v", q.IncompletePodGroups)
		}
		return nil
	})
	b.waitDOM(t, "stray under its group, waiting for its PodGroup",
		`#incompletePodGroups li[data-group="`+ns+`/nowhere"] li[data-pod="`+ns+`/stray"]`)

	// The gang's two members, held in their cycle; a third comes meanwhile.
	held := func(name string) *v1.Pod {
		p := h.member(name, "gang", "600m")
		p.Labels = map[string]string{holdLabel: "gang"}
		return p
	}
	if err := h.env.CreatePods(ctx, held("gang-0"), held("gang-1")); err != nil {
		t.Fatal(err)
	}
	if err := h.env.CreatePodGroups(ctx, scenario.MakePodGroup("gang").Gang(2).Obj()); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "the gang is in its cycle", func(q queueDoc) error {
		if find(q.InFlight, ns+"/gang-0") == nil || find(q.InFlight, ns+"/gang-1") == nil {
			return fmt.Errorf("inFlight = %+v", q.InFlight)
		}
		return nil
	})
	if err := h.env.CreatePods(ctx, h.member("gang-2", "gang", "600m")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "gang-2 waits for its group's attempt", func(q queueDoc) error {
		if _, members := findGroup(q.PendingPodGroups, gang); !slices.Equal(members, []string{ns + "/gang-2"}) {
			return fmt.Errorf("pendingPodGroups = %+v", q.PendingPodGroups)
		}
		return nil
	})
	b.waitDOM(t, "gang-2 under its group, arrived while the group was being scheduled",
		`#pendingPodGroups li[data-group="`+gang+`"] li[data-pod="`+ns+`/gang-2"]`)

	// Released: gang-0 fits on the small node, gang-1 no longer does, and
	// minCount 2 cannot be met. The group backs off as one, gang-2 in it.
	h.hold.release("gang")
	h.waitQueue(t, "the gang backs off as one entity with its three members", func(q queueDoc) error {
		g, members := findGroup(groupsOf(q.BackoffQ), gang)
		if g == nil || g.Policy != "gang" || g.MinCount != 2 ||
			!slices.Equal(members, []string{ns + "/gang-0", ns + "/gang-1", ns + "/gang-2"}) {
			return fmt.Errorf("backoffQ = %+v", q.BackoffQ)
		}
		return nil
	})
	b.waitDOM(t, "the gang in backoffQ, its members under it",
		`#backoffQ > li[data-group="`+gang+`"][data-policy="gang"] li[data-pod="`+ns+`/gang-2"]`)
	group := `#timeline > li[data-group="` + gang + `"][data-result="Unschedulable"]`
	b.waitDOM(t, "the group's attempt in the timeline, gang-0 placed in the simulation",
		group+` li[data-pod="`+ns+`/gang-0"][data-simulation="placed"][data-shape="placedGroupFailed"]`)
	b.waitDOM(t, "gang-1 fitted nowhere, its own attempt filled in",
		group+` li[data-pod="`+ns+`/gang-1"][data-simulation="fitNowhere"][data-shape="fitNowhere"][data-result="Unschedulable"]`)
	b.waitText(t, "the group's arithmetic", group+" .said", "minCount 2: 1 scheduled, 0 remaining → minCount (2) cannot be satisfied")
	b.waitGone(t, "no entry of its own for a member whose group's entry is shown",
		`#timeline > li[data-pod="`+ns+`/gang-1"]`)
	var attempts attemptsDoc
	if err := h.get(ctx, "/api/attempts", &attempts); err != nil {
		t.Fatal(err)
	}
	if a := attempts.Attempts; len(a) != 3 || a[0].Group == nil || a[0].PodGroup != gang || len(a[0].Group.Members) != 2 ||
		a[1].GroupSeq == 0 || a[2].GroupSeq != a[1].GroupSeq || a[0].Group.Members[0].Node != h.node("small", "1").Name {
		t.Fatalf("/api/attempts = %+v, want the group's entry and its two members'", attempts)
	}
	var pod podDoc
	if err := h.get(ctx, "/api/pods/"+ns+"/gang-1", &pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Attempts) != 1 || pod.Attempts[0].Group == nil ||
		!strings.Contains(fmt.Sprint(pod.Attempts[0].Group.Rows), "gang-1 (this pod)") ||
		!strings.Contains(pod.Attempts[0].Text, "This pod was tried and fitted on no node") {
		t.Fatalf("/api/pods/%s/gang-1 = %+v", ns, pod)
	}
	b.screenshot(t, "web-gang.png")
	b.run(t, "open gang-1's detail from the group's entry",
		chromedp.Click(chromedp.CSS(group+` li[data-pod="`+ns+`/gang-1"] button.pod`)))
	b.waitText(t, "gang-1's group table", "#detail table.group", "gang-1 (this pod)")
	b.run(t, "close the detail", chromedp.KeyEvent(kb.Escape))

	// A big node: after its backoff the group is scheduled, all three bound.
	if err := h.env.CreateNodes(ctx, h.node("large", "4")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gang-0", "gang-1", "gang-2"} {
		if _, err := h.env.WaitForPodBound(ctx, name, stepTimeout); err != nil {
			t.Fatal(err)
		}
	}
	b.waitDOM(t, "the group's scheduled attempt, gang-2 bound",
		`#timeline > li[data-group="`+gang+`"][data-result="Scheduled"] li[data-pod="`+ns+`/gang-2"][data-result="Scheduled"]`)
	b.waitGone(t, "the gang gone from the queue", `#backoffQ li[data-group="`+gang+`"], #activeQ li[data-group="`+gang+`"]`)
}

// TestReadOnly checks that the view refuses anything but GET and HEAD, and
// keeps its page to its own server.
func TestReadOnly(t *testing.T) {
	h := newHarness(t, "web-read-only", features.Gates{})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		t.Run(method, func(t *testing.T) {
			req, err := http.NewRequest(method, h.url+"/api/queue", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s /api/queue: %s, want 405", method, resp.Status)
			}
		})
	}
	resp, err := http.Get(h.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("GET /: Content-Security-Policy %q, want default-src 'self'", csp)
	}
}

// waitQueue polls /api/queue until check accepts it.
func (h *harness) waitQueue(t *testing.T, what string, check func(queueDoc) error) {
	t.Helper()
	poll(t, what, stepTimeout, func() error {
		var q queueDoc
		if err := h.get(context.Background(), "/api/queue", &q); err != nil {
			return err
		}
		return check(q)
	})
}

// browser is a headless Chromium the test drives.
type browser struct{ ctx context.Context }

// newBrowser starts Debian's Chromium (make chromium installs it) at a
// laptop's size; it is stopped when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Chromium is needed to test the page (make chromium installs it): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser, and its context must not time out
	// (that would stop the browser); later ones get stepTimeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return &browser{ctx: ctx}
}

// run runs actions in the page, within stepTimeout.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitDOM waits until the page has an element matching selector.
func (b *browser) waitDOM(t *testing.T, what, selector string) {
	t.Helper()
	b.waitJS(t, what, fmt.Sprintf("document.querySelector(%q) !== null", selector))
}

// waitGone waits until the page has no element matching selector.
func (b *browser) waitGone(t *testing.T, what, selector string) {
	t.Helper()
	b.waitJS(t, what, fmt.Sprintf("document.querySelector(%q) === null", selector))
}

// waitText waits until the element matching selector contains text.
func (b *browser) waitText(t *testing.T, what, selector, text string) {
	t.Helper()
	b.waitJS(t, what, fmt.Sprintf("(document.querySelector(%q)?.textContent ?? '').includes(%q)", selector, text))
}

// waitJS waits until expression is true in the page.
func (b *browser) waitJS(t *testing.T, what, expression string) {
	t.Helper()
	b.run(t, what, chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(stepTimeout)))
}

// screenshot saves the page as name in $WEB_SCREENSHOTS, if set.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
