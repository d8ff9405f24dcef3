// Package builders makes pods and nodes in one readable line, in the style of
// kube-scheduler's st.MakePod() and st.MakeNode():
//
//	builders.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m"}).Obj()
//	builders.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Label("zone", "a").Obj()
//
// It is the one set of builders the scenarios and the tests (of the plugins,
// the cache, the queue and the conformance suite) share. The pods it builds
// are ones a real apiserver accepts: every container it adds has a name of
// its own and an image (PauseImage unless Image names another). It imports
// nothing from minisched, so any package can use it.
package builders
