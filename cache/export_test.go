// This file gives the cache's tests two counts the scheduler itself never
// needs.

package cache

// NodeCount returns the number of NodeInfos in the cache. Like
// kube-scheduler's, it counts node names that only pods point at (a node
// deleted before its pods, or not seen yet), so it can exceed the number of
// nodes in a snapshot.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodes)
}

// PodCount returns the number of pods in the cache, assumed or added.
func (c *Cache) PodCount() (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	count := 0
	for _, item := range c.nodes {
		count += len(item.info.Pods)
	}
	return count, nil
}
