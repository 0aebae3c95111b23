package dhcp

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxHolderScan bounds the /proc/<pid>/fd entries read to find a
// socket's holder.
const maxHolderScan = 1 << 16

// socketHolder names the process holding a UDP socket bound to port in
// the calling thread's network namespace ("pid 42 (virt-launcher)"), or
// "" when none is found (another PID namespace, no permission). It runs
// in the namespace the bind failed in: /proc/thread-self/net is that
// namespace's view.
func socketHolder(port int, v6 bool) string {
	table := "/proc/thread-self/net/udp"
	if v6 {
		table += "6"
	}
	f, err := os.Open(table)
	if err != nil {
		return ""
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
			continue
		}
		if fields[9] != "0" {
			inodes["socket:["+fields[9]+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	pids, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return ""
	}
	scanned := 0
	for _, dir := range pids {
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if scanned++; scanned > maxHolderScan {
				return ""
			}
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !inodes[link] {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			return fmt.Sprintf("pid %s (%s)", filepath.Base(dir), strings.TrimSpace(string(comm)))
		}
	}
	return ""
}
