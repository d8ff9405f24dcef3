// Package imagelocality holds ImageLocality, the Score plugin that favours
// nodes already holding the pod's container images, so the pod starts
// without a long pull, as kube-scheduler's does. An image counts for less
// the fewer nodes have it, so a rare image does not draw every pod that uses
// it onto the same node.
package imagelocality

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/minisched/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "ImageLocality"

// The score range runs between two image sizes, those of most images in
// registries: below minThreshold in total a node scores 0, at
// maxContainerThreshold per image of the pod it scores 100.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

// ImageLocality scores nodes by the total size of the pod's images they
// already have, each scaled by the share of nodes that have it.
type ImageLocality struct {
	handle framework.Handle
}

var (
	_ framework.ScorePlugin = &ImageLocality{}
	_ framework.SignPlugin  = &ImageLocality{}
)

// New returns the plugin. It takes no args; any pluginConfig is ignored, as
// kube-scheduler does for plugins without args.
func New(_ context.Context, _ *runtime.RawExtension, h framework.Handle) (framework.Plugin, error) {
	return &ImageLocality{handle: h}, nil
}

// Name returns Name.
func (pl *ImageLocality) Name() string { return Name }

// SignPod signs the sorted set of the pod's container and init container
// images, normalised as Score looks them up: Score reads nothing else of the
// pod but its image volumes (which the volume plugins sign) and how many
// times an image is named, which a set does not tell; kube-scheduler signs
// the same set.
func (pl *ImageLocality) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	names := sets.New[string]()
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			names.Insert(normalizedImageName(c.Image))
		}
	}
	return []framework.SignFragment{{Key: framework.ImageNamesSignerName, Value: sets.List(names)}}, nil
}

// Score sums the scaled sizes of the pod's images present on the node (see
// sumImageScores) and maps the sum onto 0-100 (see calculatePriority).
func (pl *ImageLocality) Score(ctx context.Context, _ *framework.CycleState, pod *v1.Pod,
	nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	nodeInfos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	sum, images := sumImageScores(nodeInfo, pod, len(nodeInfos))
	score := calculatePriority(sum, images)
	if logger := klog.FromContext(ctx).V(10); logger.Enabled() {
		logger.Info("ImageLocality score",
			"pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()), "imageScore", sum, "images", images, "score", score)
	}
	return score, nil
}

// ScoreExtensions returns nil: scores are already 0-100.
func (pl *ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }

// calculatePriority maps sum onto 0-100 linearly between minThreshold and
// maxContainerThreshold × images, clamping outside that range (integer
// arithmetic).
func calculatePriority(sum int64, images int) int64 {
	maxThreshold := maxContainerThreshold * int64(images)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// sumImageScores returns the scaled sizes of the pod's images present on the
// node, summed, and how many images the pod names: one per init container,
// per container and per image volume, counted again when repeated.
func sumImageScores(nodeInfo *framework.NodeInfo, pod *v1.Pod, totalNumNodes int) (int64, int) {
	var sum int64
	images := 0
	add := func(image string) {
		images++
		if state, ok := nodeInfo.ImageStates[normalizedImageName(image)]; ok {
			sum += scaledImageScore(state, totalNumNodes)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.Image)
	}
	for _, c := range pod.Spec.Containers {
		add(c.Image)
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Image != nil {
			add(vol.Image.Reference)
		}
	}
	return sum, images
}

// scaledImageScore is the image's size times the share of nodes that have
// it (truncated), which keeps pods from heating up the few nodes that hold a
// rare image.
func scaledImageScore(state *framework.ImageStateSummary, totalNumNodes int) int64 {
	if totalNumNodes == 0 {
		return 0
	}
	spread := float64(state.NumNodes) / float64(totalNumNodes)
	return int64(float64(state.Size) * spread)
}

// normalizedImageName returns the name a node reports for image: the image
// with ":latest" added when it has neither tag nor digest (no ':' after the
// last '/'). Like kube-scheduler, it adds no registry: "nginx" stays apart
// from "docker.io/library/nginx:latest".
func normalizedImageName(image string) string {
	if strings.LastIndex(image, ":") <= strings.LastIndex(image, "/") {
		image += ":latest"
	}
	return image
}
