// Tests for ImageLocality's SignPod.
package imagelocality

import (
	"testing"

	st "github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/plugintesting"
)

// imagesFragment is the image names fragment holding names.
func imagesFragment(names ...string) []framework.SignFragment {
	return []framework.SignFragment{{Key: "v1.Pod.Spec.CanonicalImageNames()", Value: names}}
}

func TestSignPod(t *testing.T) {
	plugintesting.RunSignCases(t, &ImageLocality{}, []plugintesting.SignCase{
		{
			Name: "no containers",
			Pod:  st.MakePod().Name("p").Obj(),
			Want: []framework.SignFragment{{Key: "v1.Pod.Spec.CanonicalImageNames()", Value: []string{}}},
		},
		{
			Name: "an untagged image gets :latest",
			Pod:  st.MakePod().Name("p").Image("myimage").Obj(),
			Want: imagesFragment("myimage:latest"),
		},
		{
			Name: "containers and init containers, sorted and once each",
			Pod: withInitImage(st.MakePod().Name("p").Image("zimage:1.0").Image("registry.io:5000/app").
				Image("gcr.io/nginx@sha256:0123").Image("zimage:1.0").Obj(), "busybox"),
			Want: imagesFragment("busybox:latest", "gcr.io/nginx@sha256:0123", "registry.io:5000/app:latest",
				"zimage:1.0"),
		},
		{
			// Score counts image volumes too; the volume plugins sign them.
			Name: "image volumes are left out",
			Pod:  withImageVolume(st.MakePod().Name("p").Image("app:1").Obj(), "models:v2"),
			Want: imagesFragment("app:1"),
		},
	})
}

func TestSignPodPairs(t *testing.T) {
	plugintesting.RunSignPairs(t, &ImageLocality{}, []plugintesting.SignPair{
		{
			Name: "same images in another order, other labels",
			A:    st.MakePod().Name("a").Image("app:1").Image("sidecar:2").Obj(),
			B:    st.MakePod().Name("b").Label("app", "web").Image("sidecar:2").Image("app:1").Obj(),
			Same: true,
		},
		{
			Name: "an untagged image and its :latest",
			A:    st.MakePod().Name("a").Image("app").Obj(),
			B:    st.MakePod().Name("a").Image("app:latest").Obj(),
			Same: true,
		},
		{
			// Score divides by the number of images named, repeats
			// included; kube-scheduler's fragment is a set all the same.
			Name: "an image named twice, as kube-scheduler signs it",
			A:    st.MakePod().Name("a").Image("app:1").Obj(),
			B:    st.MakePod().Name("a").Image("app:1").Image("app:1").Obj(),
			Same: true,
		},
		{
			Name: "another tag",
			A:    st.MakePod().Name("a").Image("app:1").Obj(),
			B:    st.MakePod().Name("a").Image("app:2").Obj(),
		},
		{
			Name: "one more image in an init container",
			A:    st.MakePod().Name("a").Image("app:1").Obj(),
			B:    withInitImage(st.MakePod().Name("a").Image("app:1").Obj(), "busybox"),
		},
	})
}
