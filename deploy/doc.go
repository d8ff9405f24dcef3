// Package deploy holds no code: it is the manifests that run minisched on a
// real cluster as a second scheduler (namespace, RBAC, configuration,
// Deployment; README.md says what each grant is for) and their tests, which
// check the manifests on their own and run the scheduler as its
// ServiceAccount against a real apiserver.
package deploy
