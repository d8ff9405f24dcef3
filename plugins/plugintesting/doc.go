// Package plugintesting helps plugin tests run plugins as the scheduler
// does: a real framework.Framework built from a few plugins (NewFramework,
// Enable, InformerOptions) or around one plugin under test
// (NewPluginFramework), Filter run over nodes (RunFilter), NodeInfos
// (MakeNodeInfo), the events a plugin registers (HintedEvents) and what a
// plugin signs a pod with (RunSignCases, RunSignPairs, SignJSON). Pods and
// nodes come from package builders. It is imported by tests only.
package plugintesting
