// This file is the in-tree registry: the one place that names every plugin
// minisched ships, as one visible block.

package plugins

import (
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins/defaultbinder"
	"github.com/minisched/minisched/plugins/defaultpreemption"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/plugins/dynamicresources"
	"github.com/minisched/minisched/plugins/gangscheduling"
	"github.com/minisched/minisched/plugins/imagelocality"
	"github.com/minisched/minisched/plugins/interpodaffinity"
	"github.com/minisched/minisched/plugins/nodeaffinity"
	"github.com/minisched/minisched/plugins/nodedeclaredfeatures"
	"github.com/minisched/minisched/plugins/nodename"
	"github.com/minisched/minisched/plugins/nodenumber"
	"github.com/minisched/minisched/plugins/nodeports"
	"github.com/minisched/minisched/plugins/noderesources"
	"github.com/minisched/minisched/plugins/nodeunschedulable"
	"github.com/minisched/minisched/plugins/nodevolumelimits"
	"github.com/minisched/minisched/plugins/podgrouppodscount"
	"github.com/minisched/minisched/plugins/podtopologyspread"
	"github.com/minisched/minisched/plugins/prioritysort"
	"github.com/minisched/minisched/plugins/schedulinggates"
	"github.com/minisched/minisched/plugins/statefulsetordinal"
	"github.com/minisched/minisched/plugins/tainttoleration"
	"github.com/minisched/minisched/plugins/topologyaware"
	"github.com/minisched/minisched/plugins/volumebinding"
	"github.com/minisched/minisched/plugins/volumerestrictions"
	"github.com/minisched/minisched/plugins/volumezone"
)

// NewInTreeRegistry returns the plugins minisched ships, by name.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		schedulinggates.Name:                 schedulinggates.New,
		prioritysort.Name:                    prioritysort.New,
		nodename.Name:                        nodename.New,
		nodeunschedulable.Name:               nodeunschedulable.New,
		tainttoleration.Name:                 tainttoleration.New,
		nodeaffinity.Name:                    nodeaffinity.New,
		nodeports.Name:                       nodeports.New,
		noderesources.Name:                   noderesources.New,
		volumerestrictions.Name:              volumerestrictions.New,
		nodevolumelimits.Name:                nodevolumelimits.New,
		volumebinding.Name:                   volumebinding.New,
		volumezone.Name:                      volumezone.New,
		podtopologyspread.Name:               podtopologyspread.New,
		interpodaffinity.Name:                interpodaffinity.New,
		dynamicresources.Name:                dynamicresources.New,
		defaultpreemption.Name:               defaultpreemption.New,
		noderesources.BalancedAllocationName: noderesources.NewBalancedAllocation,
		imagelocality.Name:                   imagelocality.New,
		nodedeclaredfeatures.Name:            nodedeclaredfeatures.New,
		defaultbinder.Name:                   defaultbinder.New,
		gangscheduling.Name:                  gangscheduling.New,
		topologyaware.Name:                   topologyaware.New,
		podgrouppodscount.Name:               podgrouppodscount.New,
		nodenumber.Name:                      nodenumber.New,
		statefulsetordinal.Name:              statefulsetordinal.New,
		dynamic.Name:                         dynamic.New,
	}
}
