// Package nodenumber is NodeNumber, the custom plugin from the talk
// "Learning the Kubernetes scheduler by building one"
// (sanposhiho/mini-kube-scheduler): it prefers nodes whose name ends in the
// same digit as the pod's name, and holds a pod at Permit for that many
// seconds before letting it bind.
package nodenumber
