package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/web"
)

// TestStepModeInThePage steps one pod through a whole attempt in the page,
// as a person would: each extension point in order, the nodes' Filter
// verdicts and scores filling in, the binding cycle's write, the pod bound
// at the end; then Run lets the next pod through without stopping.
func TestStepModeInThePage(t *testing.T) {
	view := web.New()
	view.EnableStepping()
	h := newHarnessWith(t, "web-step", features.Gates{}, view)
	ns := h.env.Namespace
	ctx := context.Background()
	cordoned := h.node("cordoned", "4")
	cordoned.Spec.Unschedulable = true
	if err := h.env.CreateNodes(ctx, h.node("small", "1"), h.node("big", "4"), cordoned); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.run(t, "open the page", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
	b.waitJS(t, "the step panel shows", `!document.getElementById("step").hidden`)
	if err := h.env.CreatePods(ctx, h.pod("p", "500m")); err != nil {
		t.Fatal(err)
	}
	pod := ns + "/p"
	points := []string{"PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "WaitOnPermit", "PreBind",
		"Bind", "PostBind"}
	for i, point := range points {
		waitStatus(t, b, h, pod+", ", "held before "+point+".")
		b.waitText(t, point+" is the current step", `#step-points [aria-current="step"]`, point)
		switch point {
		case "PreScore":
			// Filter has run: each node's verdict is in the table.
			b.waitText(t, "the cordoned node refused", "#step-nodes tbody",
				ns+"-cordoned✗ NodeUnschedulable: node(s) were unschedulable")
			b.waitText(t, "the small node passed", "#step-nodes tbody", ns+"-small✓ passed")
		case "Reserve":
			// Score has run: the big node (more room left) is chosen.
			b.waitText(t, "big is chosen", "#step-nodes tbody", ns+"-big ← chosen")
			b.screenshot(t, "web-step.png")
			// The panel and the map beside it: nothing cut off, AA
			// contrast, in light and in dark.
			b.run(t, "load the checks", chromedp.Evaluate[chromedp.Void](a11yJS))
			for _, scheme := range []string{"dark", "light"} {
				b.run(t, scheme, colorScheme(scheme))
				b.check(t, "step mode at Reserve, "+scheme)
			}
		case "PreBind":
			b.waitText(t, "the binding cycle", "#step-status", "binding cycle")
		case "PostBind":
			b.waitText(t, "the binding written", "#step-writes",
				"Bind: POST namespaces/"+ns+"/pods/p/binding → 201 Created")
		}
		// Next by its key, or by its button.
		if i%2 == 0 {
			b.run(t, "press n", chromedp.KeyEvent("n"))
		} else {
			b.run(t, "click Next", chromedp.Click(chromedp.CSS("#step-next")))
		}
		b.waitJS(t, "Next took effect", fmt.Sprintf(
			`!document.getElementById("step-status").textContent.includes("held before %s.")`, point))
	}
	poll(t, "p is bound to big", stepTimeout, func() error {
		p, err := h.client.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != ns+"-big" {
			return fmt.Errorf("p is on %q", p.Spec.NodeName)
		}
		return nil
	})

	// Run: the next pod is held once, then goes through.
	if err := h.env.CreatePods(ctx, h.pod("q", "500m")); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b, h, ns+"/q, scheduling cycle: held before PreFilter.")
	b.run(t, "press r", chromedp.KeyEvent("r"))
	if _, err := h.env.WaitForPodBound(ctx, "q", stepTimeout); err != nil {
		t.Fatal(err)
	}
	b.waitJS(t, "Step is offered again", `!document.getElementById("step-step").hidden`)
	if !strings.Contains(h.url, "127.0.0.1") {
		t.Errorf("the view serves on %s, want loopback", h.url)
	}
}

// waitStatus waits until the step panel's status line has each of texts,
// and fails with what it says and what /api/step says if it does not.
func waitStatus(t *testing.T, b *browser, h *harness, texts ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, stepTimeout, true,
		func(context.Context) (bool, error) {
			ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
			defer cancel()
			text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("step-status").textContent`))
			if err != nil {
				return false, err
			}
			last = text
			for _, want := range texts {
				if !strings.Contains(text, want) {
					return false, nil
				}
			}
			return true, nil
		})
	if err != nil {
		var doc map[string]any
		_ = h.get(context.Background(), "/api/step", &doc)
		t.Fatalf("the step panel says %q, want %q: %v; /api/step: %v", last, texts, err, doc)
	}
}
