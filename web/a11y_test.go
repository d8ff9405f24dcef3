// The page's accessibility, checked in Chromium over the whole page (so it
// covers whatever panels the page grows): nothing cut mid-word, every
// control reached by Tab in document order with a visible focus, a pod's
// detail opened by Enter and closed by Escape, and WCAG AA text contrast.

package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	v1 "k8s.io/api/core/v1"

	"github.com/minisched/minisched/minisched/features"
)

// a11yJS defines window.a11y, the page-side checks. Each returns a list of
// problems, empty when all is well.
const a11yJS = `
window.a11y = (() => {
  // shown says whether an element is rendered and visible.
  const shown = (el) => el.getClientRects().length > 0 &&
    el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
  // texts are the shown elements with text of their own.
  const texts = () => [...document.body.querySelectorAll("*")].filter((el) =>
    shown(el) && [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== ""));
  const name = (el) => {
    const id = el.id ? "#" + el.id : "";
    const cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "";
    return el.tagName.toLowerCase() + id + cls + " " + JSON.stringify(el.textContent.trim().slice(0, 60));
  };

  // cut lists text cut off: an ellipsis anywhere, words broken anywhere
  // (word-break: break-all), and text wider than a box that hides its
  // overflow.
  const cut = () => {
    const out = [];
    for (const el of document.body.querySelectorAll("*")) {
      const cs = getComputedStyle(el);
      if (cs.textOverflow.includes("ellipsis")) out.push("text-overflow: ellipsis on " + name(el));
      if (cs.wordBreak === "break-all") out.push("word-break: break-all on " + name(el));
    }
    for (const el of texts()) {
      const cs = getComputedStyle(el);
      const hides = ["hidden", "clip"].includes(cs.overflowX);
      if (hides && el.scrollWidth > el.clientWidth + 1) {
        out.push("text overflows its box (" + el.scrollWidth + " > " + el.clientWidth + "): " + name(el));
      }
    }
    return out;
  };

  // The WCAG 2 relative luminance and contrast ratio.
  const parse = (c) => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a),
    g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a),
    a: 1,
  });
  const lum = (c) => {
    const ch = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const ratio = (a, b) => {
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  // background is what an element's text is drawn on: the backgrounds of
  // it and its ancestors, composited from the first opaque one up (the
  // canvas, white or the dark scheme's, below them all).
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    let bg = dark ? { r: 18, g: 18, b: 18, a: 1 } : { r: 255, g: 255, b: 255, a: 1 };
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  // contrast lists the shown texts below 4.5:1 (3:1 when large: 24px, or
  // 18.66px bold).
  const contrast = () => {
    const out = [];
    for (const el of texts()) {
      const cs = getComputedStyle(el);
      const bg = background(el);
      const fg = over(parse(cs.color), bg);
      const size = parseFloat(cs.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(cs.fontWeight) >= 700);
      const need = large ? 3 : 4.5;
      const got = ratio(fg, bg);
      if (got < need) out.push(got.toFixed(2) + " < " + need + ": " + name(el) + " (" + cs.color + " on rgb(" +
        [bg.r, bg.g, bg.b].map(Math.round).join(",") + "))");
    }
    return out;
  };

  // The keyboard walk: step() is called after each Tab. It records the
  // focused element and its focused look, and checks that the element
  // focused before looks different now that it is not.
  const ring = (el) => { const cs = getComputedStyle(el);
    return [cs.outlineStyle, cs.outlineWidth, cs.outlineColor, cs.boxShadow].join(" "); };
  const walk = { prev: null, order: [], plain: [] };
  const step = () => {
    const a = document.activeElement;
    if (walk.prev && walk.prev.el.isConnected && walk.prev.el !== a && ring(walk.prev.el) === walk.prev.ring) {
      walk.plain.push(name(walk.prev.el));
    }
    if (!a || a === document.body) { walk.prev = null; return "body"; }
    walk.prev = { el: a, ring: ring(a) };
    walk.order.push(a);
    return name(a);
  };
  // controls are the shown elements Tab should reach.
  const controls = () => [...document.querySelectorAll(
    "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])")]
    .filter((el) => shown(el) && !el.disabled);
  // keyboard lists what the walk got wrong: a control never reached, a
  // focus out of document order, a positive tabindex, a focus without a
  // visible change.
  const keyboard = () => {
    const out = walk.plain.map((n) => "no visible focus indicator: " + n);
    const reached = new Set(walk.order.filter((el) => el.isConnected));
    for (const el of controls()) if (!reached.has(el)) out.push("never reached by Tab: " + name(el));
    for (const el of document.querySelectorAll("[tabindex]")) {
      if (el.tabIndex > 0) out.push("positive tabindex: " + name(el));
    }
    const order = walk.order.filter((el) => el.isConnected);
    for (let i = 1; i < order.length; i++) {
      if (order[i - 1].compareDocumentPosition(order[i]) & Node.DOCUMENT_POSITION_PRECEDING) {
        out.push("Tab goes back from " + name(order[i - 1]) + " to " + name(order[i]));
      }
    }
    return out;
  };
  const reset = () => { walk.prev = null; walk.order = []; walk.plain = []; };
  return { cut, contrast, step, keyboard, reset };
})();
true
`

// longName is a pod name as long as Kubernetes allows, to test wrapping.
const longName = "a-pod-with-a-name-as-long-as-kubernetes-lets-it-be-sixty-three"

// TestAccessibility opens the page on a pod that no node takes, each for a
// different reason (so its message is long and many events would move
// it), with its labels and its detail open (WEB_SCREENSHOTS=DIR saves the
// page with the labels open there), at a laptop's size and at a
// narrow one, in light and dark mode: nothing is cut mid-word and every
// text meets AA contrast. Then, with the keyboard: Tab reaches every
// control in document order, each visibly focused; Enter opens the pod's
// detail and Escape closes it, giving the focus back.
func TestAccessibility(t *testing.T) {
	h := newHarness(t, "web-a11y", features.Gates{})
	ns := h.env.Namespace
	ctx := context.Background()
	pod := ns + "/" + longName
	tainted := h.node("tainted", "4")
	tainted.Spec.Taints = []v1.Taint{{Key: "example.com/dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
	cordoned := h.node("cordoned", "4")
	cordoned.Spec.Unschedulable = true
	if err := h.env.CreateNodes(ctx, h.node("small", "1"), tainted, cordoned); err != nil {
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
	if err := h.env.CreatePods(ctx, h.pod(longName, "2")); err != nil {
		t.Fatal(err)
	}
	h.waitQueue(t, "the pod is unschedulable, moved by several events", func(q queueDoc) error {
		if e := find(q.Unschedulable, pod); e == nil || len(e.Plugins) < 3 || len(e.Events) < 3 {
			return fmt.Errorf("unschedulable = %+v", q.Unschedulable)
		}
		return nil
	})
	entry := `#unschedulable li[data-pod="` + pod + `"]`
	b.waitDOM(t, "the pod's events in words", entry+` .event-words li`)
	b.waitText(t, "the node events of NodeResourcesFit, TaintToleration and NodeUnschedulable, as one sentence",
		entry+` .event-words`, "a node is added, is cordoned or uncordoned, or has its allocatable resources or "+
			"taints changed")
	b.waitDOM(t, "the pod's attempt in the timeline", `#timeline li[data-pod="`+pod+`"]`)
	b.run(t, "load the checks", chromedp.Evaluate[chromedp.Void](a11yJS))

	// Open the labels: their summary takes Enter, as a <details> does.
	b.run(t, "open the labels", chromedp.Focus(chromedp.CSS(entry+` .event-labels > summary`)),
		chromedp.KeyEvent(kb.Enter))
	b.waitDOM(t, "the labels shown", entry+` .event-labels[open] code`)
	b.screenshot(t, "web-words.png")

	for _, v := range []struct {
		name          string
		width, height int64
		dark          bool
	}{
		{name: "1280x800", width: 1280, height: 800},
		{name: "700x900", width: 700, height: 900},
		{name: "1280x800 dark", width: 1280, height: 800, dark: true},
		{name: "700x900 dark", width: 700, height: 900, dark: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			scheme := "light"
			if v.dark {
				scheme = "dark"
			}
			b.run(t, "size and scheme", chromedp.EmulateViewport(v.width, v.height), colorScheme(scheme))
			b.check(t, "the queue and the timeline")
			b.run(t, "open the pod's detail", chromedp.Focus(chromedp.CSS(entry+` button.pod`)),
				chromedp.KeyEvent(kb.Enter))
			b.waitDOM(t, "the pod's Filter table", `#detail:not([hidden]) table.filter`)
			b.waitDOM(t, "the pod's events", `#detail table.events`)
			b.check(t, "the pod's detail")
			b.run(t, "close the detail", chromedp.KeyEvent(kb.Escape))
			b.waitDOM(t, "the detail closed", `#detail[hidden]`)
		})
	}

	t.Run("keyboard", func(t *testing.T) {
		b.run(t, "laptop size, light", chromedp.EmulateViewport(1280, 800), colorScheme("light"))
		// A fresh page, so that Tab starts from its top.
		b.run(t, "reload the page", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)))
		b.waitDOM(t, "the pod's events in words", entry+` .event-words li`)
		b.waitDOM(t, "the pod's attempt in the timeline", `#timeline li[data-pod="`+pod+`"]`)
		b.run(t, "load the checks", chromedp.Evaluate[chromedp.Void](a11yJS))
		var steps []string
		for i := 0; i < 200; i++ {
			b.run(t, "Tab", chromedp.KeyEvent(kb.Tab))
			at := eval[string](t, b, "where the focus is", `window.a11y.step()`)
			if at == "body" && i > 0 {
				break
			}
			steps = append(steps, at)
		}
		t.Logf("Tab reached %d elements", len(steps))
		problems := eval[[]string](t, b, "check the walk", `window.a11y.keyboard()`)
		if len(problems) > 0 {
			t.Errorf("keyboard:\n  %s\nthe walk:\n  %s", strings.Join(problems, "\n  "), strings.Join(steps, "\n  "))
		}

		// Enter on the pod opens its detail, with the focus in it; Escape
		// closes it and gives the focus back to the pod.
		b.run(t, "Enter on the pod", chromedp.Focus(chromedp.CSS(entry+` button.pod`)), chromedp.KeyEvent(kb.Enter))
		b.waitDOM(t, "the detail open", `#detail:not([hidden])`)
		b.waitJS(t, "the focus in the detail", `document.getElementById("detail").contains(document.activeElement)`)
		b.run(t, "Escape", chromedp.KeyEvent(kb.Escape))
		b.waitDOM(t, "the detail closed", `#detail[hidden]`)
		b.waitJS(t, "the focus back on the pod", fmt.Sprintf(
			`document.activeElement?.matches(%q) === true`, entry+` button.pod`))
	})
}

// check fails the test for text cut off and for text below AA contrast in
// the page as it is now.
func (b *browser) check(t *testing.T, what string) {
	t.Helper()
	cut := eval[[]string](t, b, "check "+what, `window.a11y.cut()`)
	contrast := eval[[]string](t, b, "check "+what, `window.a11y.contrast()`)
	if len(cut) > 0 {
		t.Errorf("%s: text cut off:\n  %s", what, strings.Join(cut, "\n  "))
	}
	if len(contrast) > 0 {
		t.Errorf("%s: contrast below WCAG AA:\n  %s", what, strings.Join(contrast, "\n  "))
	}
}

// eval evaluates expression in the page, within stepTimeout.
func eval[T any](t *testing.T, b *browser, what, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// colorScheme makes the page see prefers-color-scheme as scheme ("light"
// or "dark").
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}
