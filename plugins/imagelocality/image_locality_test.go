// Tests for ImageLocality. Expected scores are computed by hand from
// kube-scheduler's formula (image_locality.go): each image of the pod on the
// node adds size × nodes with it / all nodes; the sum is clamped to
// [23MB, 1000MB × images] and mapped linearly onto 0-100.
package imagelocality

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// node returns a node holding one image per name, each of sizeMB megabytes.
func node(name string, sizeMB int64, images ...string) *v1.Node {
	n := st.MakeNode().Name(name)
	for _, img := range images {
		n.Images(sizeMB*mb, img)
	}
	return n.Obj()
}

// withInitImage adds an init container running image.
func withInitImage(pod *v1.Pod, image string) *v1.Pod {
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "init", Image: image})
	return pod
}

// withImageVolume adds a volume mounting image.
func withImageVolume(pod *v1.Pod, image string) *v1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{
		Name:         "img",
		VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: image}},
	})
	return pod
}

// newFramework builds a profile with ImageLocality in multiPoint over a
// snapshot of nodes.
func newFramework(t *testing.T, ctx context.Context, nodes []*v1.Node) *framework.Framework {
	t.Helper()
	schedFramework, _, err := plugintesting.NewPluginFramework[framework.Plugin](ctx, Name, New,
		&configv1.Plugins{MultiPoint: plugintesting.Enable(Name)}, nil,
		framework.WithSnapshotSharedLister(cache.NewSnapshot(nil, nodes)))
	if err != nil {
		t.Fatal(err)
	}
	return schedFramework
}

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  map[string]int64
	}{
		{
			// a: 250MB × 1/2 = 125MB → 100 × (125 − 23) / (1000 − 23) = 10
			// b: no image → 0
			name:  "image on one of two nodes",
			pod:   st.MakePod().Name("p").Image("gcr.io/250").Obj(),
			nodes: []*v1.Node{node("a", 250, "gcr.io/250:latest"), node("b", 0)},
			want:  map[string]int64{"a": 10, "b": 0},
		},
		{
			// 250MB × 2/2 → 100 × (250 − 23) / 977 = 23 on both
			name:  "image on every node counts in full",
			pod:   st.MakePod().Name("p").Image("gcr.io/250").Obj(),
			nodes: []*v1.Node{node("a", 250, "gcr.io/250:latest"), node("b", 250, "gcr.io/250:latest")},
			want:  map[string]int64{"a": 23, "b": 23},
		},
		{
			// 40MB × 1/2 = 20MB < 23MB → 0
			name:  "below the minimum threshold",
			pod:   st.MakePod().Name("p").Image("gcr.io/40").Obj(),
			nodes: []*v1.Node{node("a", 40, "gcr.io/40:latest"), node("b", 0)},
			want:  map[string]int64{"a": 0, "b": 0},
		},
		{
			// 2000MB × 1/1 > 1000MB × 1 → clamped → 100
			name:  "above the maximum threshold",
			pod:   st.MakePod().Name("p").Image("gcr.io/2000").Obj(),
			nodes: []*v1.Node{node("a", 2000, "gcr.io/2000:latest")},
			want:  map[string]int64{"a": 100},
		},
		{
			// Init container gcr.io/300 (on 1 of 3 nodes), containers
			// gcr.io/600 and gcr.io/900 (each on 2 of 3): 3 images, so the
			// maximum is 3000MB.
			// a: 300/3 + 600×2/3 + 900×2/3 = 1100MB → 100 × 1077 / 2977 = 36
			// b: 400 + 600 = 1000MB → 100 × 977 / 2977 = 32
			name: "init containers count, and the maximum grows with the images",
			pod:  withInitImage(st.MakePod().Name("p").Image("gcr.io/600").Image("gcr.io/900").Obj(), "gcr.io/300"),
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Images(300*mb, "gcr.io/300:latest").Images(600*mb, "gcr.io/600:latest").Images(900*mb,
					"gcr.io/900:latest").Obj(),
				st.MakeNode().Name("b").Images(600*mb, "gcr.io/600:latest").Images(900*mb, "gcr.io/900:latest").Obj(),
				node("c", 0),
			},
			want: map[string]int64{"a": 36, "b": 32, "c": 0},
		},
		{
			// Container gcr.io/30 (absent) and image volume gcr.io/300:
			// 2 images; 300MB → 100 × (300 − 23) / (2000 − 23) = 14
			name:  "image volumes count",
			pod:   withImageVolume(st.MakePod().Name("p").Image("gcr.io/30").Obj(), "gcr.io/300"),
			nodes: []*v1.Node{node("a", 300, "gcr.io/300:latest")},
			want:  map[string]int64{"a": 14},
		},
		{
			// The same image twice counts twice: 1200MB of 2000MB →
			// 100 × (1200 − 23) / 1977 = 59
			name:  "a repeated image counts each time",
			pod:   st.MakePod().Name("p").Image("gcr.io/600").Image("gcr.io/600").Obj(),
			nodes: []*v1.Node{node("a", 600, "gcr.io/600:latest")},
			want:  map[string]int64{"a": 59},
		},
		{
			// "nginx" becomes "nginx:latest", which a has; b reports only the
			// fully qualified name, which is not matched. a: 500MB × 1/2 =
			// 250MB → 100 × 227 / 977 = 23
			name:  "untagged image matches :latest, but no registry is added",
			pod:   st.MakePod().Name("p").Image("nginx").Obj(),
			nodes: []*v1.Node{node("a", 500, "nginx:latest"), node("b", 500, "docker.io/library/nginx:latest")},
			want:  map[string]int64{"a": 23, "b": 0},
		},
		{
			// "gcr.io/app:v1" matches only the v1 tag: a → 23 as above.
			name:  "tag must match",
			pod:   st.MakePod().Name("p").Image("gcr.io/app:v1").Obj(),
			nodes: []*v1.Node{node("a", 500, "gcr.io/app:v1"), node("b", 500, "gcr.io/app:latest")},
			want:  map[string]int64{"a": 23, "b": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			schedFramework := newFramework(t, ctx, tt.nodes)
			pl, err := New(ctx, nil, schedFramework)
			if err != nil {
				t.Fatal(err)
			}
			nodeInfos, _ := schedFramework.SnapshotSharedLister().NodeInfos().List()
			got := map[string]int64{}
			for _, ni := range nodeInfos {
				score, s := pl.(framework.ScorePlugin).Score(ctx, framework.NewCycleState(), tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score(%s): %v", ni.Node().Name, s)
				}
				got[ni.Node().Name] = score
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScoreInFramework runs the plugin through a profile (weight 1, as
// kube-scheduler's default) to check the framework calls it with its handle
// and that no normalisation changes the raw scores.
func TestScoreInFramework(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	nodes := []*v1.Node{node("a", 250, "gcr.io/250:latest"), node("b", 0)}
	schedFramework := newFramework(t, ctx, nodes)
	infos, _ := schedFramework.SnapshotSharedLister().NodeInfos().List()
	pod := st.MakePod().Name("p").Image("gcr.io/250").Obj()
	state := framework.NewCycleState()
	if s := schedFramework.RunPreScorePlugins(ctx, state, pod, infos); !s.IsSuccess() {
		t.Fatal(s)
	}
	list, s := schedFramework.RunScorePlugins(ctx, state, pod, infos)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	got := map[string]int64{}
	for _, ns := range list {
		got[ns.Name] = ns.TotalScore
	}
	// As in TestScore's first case.
	if diff := cmp.Diff(map[string]int64{"a": 10, "b": 0}, got); diff != "" {
		t.Errorf("total scores (-want +got):\n%s", diff)
	}
}

func TestNormalizedImageName(t *testing.T) {
	tests := []struct{ image, want string }{
		{"nginx", "nginx:latest"},
		{"nginx:1.27", "nginx:1.27"},
		{"library/nginx", "library/nginx:latest"},
		{"docker.io/library/nginx", "docker.io/library/nginx:latest"},
		// A registry port is not a tag: the last ':' comes before the last '/'.
		{"localhost:5000/app", "localhost:5000/app:latest"},
		{"localhost:5000/app:v2", "localhost:5000/app:v2"},
		// A digest carries a ':' after the last '/': left as is.
		{"gcr.io/app@sha256:0123abcd", "gcr.io/app@sha256:0123abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := normalizedImageName(tt.image); got != tt.want {
				t.Errorf("normalizedImageName(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestCalculatePriority(t *testing.T) {
	tests := []struct {
		name   string
		sum    int64
		images int
		want   int64
	}{
		{name: "nothing on the node", sum: 0, images: 1, want: 0},
		{name: "exactly the minimum", sum: minThreshold, images: 1, want: 0},
		{name: "exactly the maximum", sum: maxContainerThreshold, images: 1, want: 100},
		// 100 × (523 − 23) / (2000 − 23) = 25
		{name: "in between, two images", sum: 523 * mb, images: 2, want: 25},
		// No images: the range is empty and the clamped sum scores 0.
		{name: "pod without images", sum: 0, images: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := calculatePriority(tt.sum, tt.images); got != tt.want {
				t.Errorf("calculatePriority(%d, %d) = %d, want %d", tt.sum, tt.images, got, tt.want)
			}
		})
	}
}

func TestPluginShape(t *testing.T) {
	pl, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pl.(framework.EnqueueExtensions); ok {
		t.Error("ImageLocality implements EnqueueExtensions; it never rejects, so it should not")
	}
	if pl.(framework.ScorePlugin).ScoreExtensions() != nil {
		t.Error("ScoreExtensions is not nil; kube-scheduler does not normalise these scores")
	}
	if pl.Name() != "ImageLocality" {
		t.Errorf("Name() = %q", pl.Name())
	}
}
