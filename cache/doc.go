// Package cache holds the nodes and pods as the scheduler believes them to
// be: pods it has assumed onto nodes but not yet seen bound, pods the
// informers confirmed, and per-node aggregates (framework.NodeInfo). Each
// scheduling cycle reads a Snapshot of it, refreshed incrementally.
package cache
