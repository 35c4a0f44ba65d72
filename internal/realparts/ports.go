package realparts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago: it binds n listeners to
// 127.0.0.1:0 at once, records the kernel-chosen ports and closes the listeners. Another process may take a port
// between the close and its use, so callers verify ownership after start (VerifyListener). Errors come from bind.
func FreePorts(n int) ([]int, error) {
	if n <= 0 {
		return nil, fmt.Errorf("realparts: FreePorts(%d): n must be positive", n)
	}
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("realparts: bind 127.0.0.1:0: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Ownership tells who listens on one local TCP port (any local address, IPv4 or IPv6) as seen from the network
// namespace of PID. Owned counts listening sockets held open by PID, Foreign those not held by PID. Since
// envoyproxy/ratelimit binds with SO_REUSEPORT, a second process can listen on the same port without an error and
// silently take part of the traffic (src/server/server_impl.go listens with github.com/libp2p/go-reuseport);
// Foreign > 0 exposes that.
type Ownership struct {
	PID     int
	Port    int
	Owned   int
	Foreign int
}

// ErrNotOwned is wrapped by the error VerifyListener returns when the port has no listener held by the PID or when
// other processes listen on it too.
var ErrNotOwned = errors.New("port listener not owned by process")

// PortOwnership reports the listening sockets on port and whether PID holds them. It reads
// /proc/<pid>/net/tcp and tcp6 (sockets in LISTEN state, state 0A, whose local port is port) and matches their inodes
// against the "socket:[inode]" links in /proc/<pid>/fd. When /proc/<pid>/net is unreadable it falls back to
// `ss -Hltnp` and its users:(("name",pid=N,fd=M)) column. Errors name the file or command that failed; a PID
// that does not exist is an error.
func PortOwnership(pid, port int) (Ownership, error) {
	o := Ownership{PID: pid, Port: port}
	if pid <= 0 || port <= 0 || port > 65535 {
		return o, fmt.Errorf("realparts: PortOwnership(pid %d, port %d): bad argument", pid, port)
	}
	procDir := filepath.Join("/proc", strconv.Itoa(pid))
	inodes, err := listenInodes(procDir, port)
	if err != nil {
		if _, statErr := os.Stat(procDir); statErr != nil {
			return o, fmt.Errorf("realparts: process %d: %w", pid, statErr)
		}
		return ssOwnership(pid, port, err)
	}
	if len(inodes) == 0 {
		return o, nil
	}
	held, err := socketInodes(procDir)
	if err != nil {
		return o, err
	}
	for _, ino := range inodes {
		if held[ino] {
			o.Owned++
		} else {
			o.Foreign++
		}
	}
	return o, nil
}

// VerifyListener returns nil when PID holds at least one listening socket on port and no other process listens on
// it; otherwise an error wrapping ErrNotOwned that gives both counts, or the error of PortOwnership.
func VerifyListener(pid, port int) error {
	o, err := PortOwnership(pid, port)
	if err != nil {
		return err
	}
	return o.verify(fmt.Sprintf("pid %d", pid))
}

// verify is nil when the port has a listener held by holder and none held by others, else an error wrapping
// ErrNotOwned with both counts.
func (o Ownership) verify(holder string) error {
	if o.Owned == 0 || o.Foreign > 0 {
		return fmt.Errorf("realparts: port %d: %d listener(s) held by %s, %d by other processes: %w",
			o.Port, o.Owned, holder, o.Foreign, ErrNotOwned)
	}
	return nil
}

// listenInodes parses <procDir>/net/tcp and tcp6 and returns the inodes of LISTEN sockets on port.
func listenInodes(procDir string, port int) ([]uint64, error) {
	var out []uint64
	read := 0
	for _, name := range []string{"tcp", "tcp6"} {
		path := filepath.Join(procDir, "net", name)
		data, err := os.ReadFile(path)
		if err != nil {
			if name == "tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // IPv6 disabled
			}
			return nil, err
		}
		read++
		inos, err := parseProcNetTCP(path, data, port)
		if err != nil {
			return nil, err
		}
		out = append(out, inos...)
	}
	if read == 0 {
		return nil, fmt.Errorf("realparts: %s/net/tcp: nothing readable", procDir)
	}
	return out, nil
}

// parseProcNetTCP returns the inodes of the LISTEN (st 0A) rows of a /proc/net/tcp{,6} table whose local port
// equals port. The format is the kernel's: "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout
// inode ...", local_address as HEXIP:HEXPORT. Malformed rows are errors naming path and line.
func parseProcNetTCP(path string, data []byte, port int) ([]uint64, error) {
	var out []uint64
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue // header
		}
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("realparts: %s:%d: %d fields, want >= 10", path, line, len(f))
		}
		if f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			return nil, fmt.Errorf("realparts: %s:%d: local address %q has no port", path, line, f[1])
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil {
			return nil, fmt.Errorf("realparts: %s:%d: local port %q: %v", path, line, f[1][i+1:], err)
		}
		if int(p) != port {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("realparts: %s:%d: inode %q: %v", path, line, f[9], err)
		}
		out = append(out, ino)
	}
	return out, sc.Err()
}

// socketInodes returns the set of socket inodes open in <procDir>/fd.
func socketInodes(procDir string) (map[uint64]bool, error) {
	fdDir := filepath.Join(procDir, "fd")
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	held := make(map[uint64]bool)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // fd closed meanwhile
		}
		if s, ok := strings.CutPrefix(target, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				held[ino] = true
			}
		}
	}
	return held, nil
}

var ssPidRe = regexp.MustCompile(`pid=(\d+)`)

// ssOwnership is the fallback of PortOwnership when /proc/<pid>/net cannot be read: it runs `ss -Hltnp` and counts
// the listeners on port by the pids in their users column (a listener with no visible users counts as foreign).
func ssOwnership(pid, port int, procErr error) (Ownership, error) {
	o := Ownership{PID: pid, Port: port}
	out, err := exec.CommandContext(context.Background(), "ss", "-Hltnp").Output()
	if err != nil {
		return o, fmt.Errorf("realparts: /proc unusable (%v) and `ss -Hltnp` failed: %w", procErr, err)
	}
	return parseSS("ss -Hltnp", out, pid, port)
}

// parseSS counts, in `ss -Hltnp` output (columns State Recv-Q Send-Q Local:Port Peer:Port Process), the listeners
// whose local port is port, as owned (pid=PID among the users) or foreign. Errors name source and line.
func parseSS(source string, out []byte, pid, port int) (Ownership, error) {
	o := Ownership{PID: pid, Port: port}
	sc := bufio.NewScanner(bytes.NewReader(out))
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 5 {
			return o, fmt.Errorf("realparts: %s:%d: %d fields, want >= 5", source, line, len(f))
		}
		local := f[3]
		i := strings.LastIndexByte(local, ':')
		if i < 0 {
			return o, fmt.Errorf("realparts: %s:%d: local address %q has no port", source, line, local)
		}
		p, err := strconv.Atoi(local[i+1:])
		if err != nil {
			continue // "*" or a service name
		}
		if p != port {
			continue
		}
		mine := false
		if len(f) > 5 {
			for _, m := range ssPidRe.FindAllStringSubmatch(strings.Join(f[5:], " "), -1) {
				if m[1] == strconv.Itoa(pid) {
					mine = true
				}
			}
		}
		if mine {
			o.Owned++
		} else {
			o.Foreign++
		}
	}
	return o, sc.Err()
}
