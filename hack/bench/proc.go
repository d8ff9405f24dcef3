package main

// What a scheduler process cost, read from Linux's /proc.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports (the kernel's HZ may
// differ; what it exports to user space is scaled to 100).
const clockTicks = 100

// ProcUsage is a process's CPU time so far and its peak resident memory.
type ProcUsage struct {
	// CPUSeconds is user plus system time.
	CPUSeconds float64
	// PeakRSSBytes is VmHWM, the high-water mark of resident memory.
	PeakRSSBytes int64
}

// readProcUsage reads /proc/<pid>/stat and /proc/<pid>/status.
func readProcUsage(pid int) (ProcUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcUsage{}, err
	}
	cpu, err := ParseStatCPU(string(stat))
	if err != nil {
		return ProcUsage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcUsage{}, err
	}
	hwm, err := ParseStatusHWM(string(status))
	if err != nil {
		return ProcUsage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return ProcUsage{CPUSeconds: cpu, PeakRSSBytes: hwm}, nil
}

// ParseStatCPU returns utime+stime in seconds from the contents of
// /proc/<pid>/stat. The command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last ')'.
func ParseStatCPU(stat string) (float64, error) {
	paren := strings.LastIndexByte(stat, ')')
	if paren < 0 {
		return 0, fmt.Errorf("no ')' closing the command name in %q", stat)
	}
	// After ") " come fields 3 (state), 4, ...; utime is field 14 and
	// stime field 15 (proc(5)).
	fields := strings.Fields(stat[paren+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	u, err := strconv.ParseUint(fields[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime %q: %w", fields[utime], err)
	}
	s, err := strconv.ParseUint(fields[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime %q: %w", fields[stime], err)
	}
	return float64(u+s) / clockTicks, nil
}

// ParseStatusHWM returns VmHWM in bytes from the contents of
// /proc/<pid>/status, where it reads like "VmHWM:\t  123456 kB".
func ParseStatusHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM %q: %w", f[0], err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmHWM line")
}
