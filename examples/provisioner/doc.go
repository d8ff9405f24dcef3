// Package provisioner is an example dynamic provisioner of node-local
// volumes: what completes the WaitForFirstConsumer flow that the scheduler's
// VolumeBinding plugin starts, in tests and scenarios where no storage
// system runs. It provisions for StorageClasses whose provisioner is Name
// (StorageClass builds one), on a pretend disk of each node whose size
// Options gives.
//
// The flow, and who does each step:
//
//  1. The scheduler picks a node for a pod with an unbound claim of such a
//     class, and in PreBind annotates the claim with
//     volume.kubernetes.io/selected-node.
//  2. kube-controller-manager's PV binder sees that annotation, finds that
//     the class's provisioner is not built in, and annotates the claim with
//     volume.kubernetes.io/storage-provisioner: Name.
//  3. This provisioner sees both annotations. If the node's disk has room,
//     it creates a PV named pvc-<claim uid>, pre-bound to the claim (claimRef
//     with its uid), with a csi source of driver Name (so that the
//     NodeVolumeLimits plugin can count it) and a required node affinity to
//     the node's kubernetes.io/hostname. If not, it removes the
//     selected-node annotation, which tells the scheduler to pick again.
//  4. The PV binder binds the claim to that PV; PreBind, which was polling,
//     sees the claim bound and the pod is bound.
//
// Beside that, the provisioner publishes what the scheduler needs to avoid
// step 3's failure: a CSIDriver named Name with storageCapacity: true
// (created if absent), and for each node and class one CSIStorageCapacity
// whose capacity is the node's free space, kept current as volumes come
// and go. When a claim is deleted, its PV (reclaim policy Delete) is
// released by the PV binder, and the provisioner deletes it; its space is
// free once the PV is gone.
//
// Why not sig-storage-lib-external-provisioner, the library the CSI
// external-provisioner is built on? v11.0.1 builds against k8s.io/*
// v0.37.1, but its NewProvisionController calls
// v1.AddToScheme(scheme.Scheme) each time it is called: a write to client-go's
// global scheme while, in the same process, every clientset decodes
// through it. This package is meant to run in-process beside a scheduler
// and tests, and there `go test -race` reports that write racing with a
// Get's decode (and Go may abort on the concurrent map access even
// without -race). So this is a plain client-go controller instead, in the
// manner of sample-controller: eventhandlers.go routes informer events to
// three work queues, each drained by one worker: claims to provision
// (volume.go), released PVs to delete (volume.go), and nodes whose
// capacity to publish (capacity.go).
//
// Use it in-process:
//
//	p := provisioner.New(client, provisioner.Options{DefaultCapacity: resource.MustParse("10Gi")})
//	go p.Run(ctx)
//
// It needs kube-controller-manager's PV binder (testenv's
// StartControllerManager with StorageControllers) for steps 2 and 4.
package provisioner
