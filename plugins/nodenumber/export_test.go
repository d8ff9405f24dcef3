// This file lets the external tests build NodeNumber with a fake clock.
package nodenumber

// NewWithClock is newWithClock, for tests.
var NewWithClock = newWithClock
