// Package plugins lists the plugins minisched ships. Each lives in its own
// package below this one; this file is the one place that names them all.
package plugins

import (
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/nodename"
	"github.com/minisched/minisched/plugins/nodenumber"
	"github.com/minisched/minisched/plugins/noderesources"
	"github.com/minisched/minisched/plugins/nodeunschedulable"
	"github.com/minisched/minisched/plugins/prioritysort"
)

// NewInTreeRegistry returns the plugins minisched ships, by name.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		prioritysort.Name:      prioritysort.New,
		nodeunschedulable.Name: nodeunschedulable.New,
		nodename.Name:          nodename.New,
		noderesources.Name:     noderesources.New,
		nodenumber.Name:        nodenumber.New,
		defaultbinder.Name:     defaultbinder.New,
	}
}
