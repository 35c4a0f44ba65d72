//go:build integration

package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// nodeName is the Slurm node's name: not the host's, so the test tells the
// node (SLURMD_NODENAME, the clock the shards read) from the host name.
const nodeName = "rlbench-slurm-node"

// need finds the Slurm daemons and commands; without them (or without
// root, which slurmd needs to start jobs) the test skips, unless
// RLBENCH_REQUIRE_REAL_PARTS=1 (CI: scripts/install-real-parts.sh installs
// Debian's slurm-wlm).
func need(t *testing.T) {
	t.Helper()
	missing := []string{}
	for _, b := range []string{"slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	why := ""
	switch {
	case len(missing) > 0:
		why = "Slurm is not installed (missing " + strings.Join(missing, ", ") + "; Debian: apt-get install slurm-wlm)"
	case os.Geteuid() != 0:
		why = "slurmd needs root to start jobs"
	}
	if why == "" {
		return
	}
	if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// freePort is a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSlurm writes a one-node slurm.conf into dir (auth/none: no munge;
// the controller and the node on loopback ports of their own) and starts
// slurmctld and slurmd, stopped in t.Cleanup. It returns the environment
// for Slurm's commands (SLURM_CONF).
func startSlurm(t *testing.T, dir string) []string {
	t.Helper()
	for _, d := range []string{"state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "slurm.conf")
	text := fmt.Sprintf(`ClusterName=rlbench
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/none
CredType=cred/none
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
SlurmctldLogFile=%[3]s/slurmctld.log
SlurmdLogFile=%[3]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=%[4]s NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=%[4]s Default=YES MaxTime=INFINITE State=UP
`, freePort(t), freePort(t), dir, nodeName)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SLURM_CONF="+conf)
	start := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		log, err := os.Create(filepath.Join(dir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			log.Close()
		})
	}
	start("slurmctld", "-D", "-i", "-f", conf)
	t.Cleanup(func() { // jobs first, so no job outlives the cluster
		c := exec.Command("scancel", "--full", "-u", "root")
		c.Env = env
		_ = c.Run()
	})
	start("slurmd", "-D", "-N", nodeName, "-f", conf)
	// The node is up when sinfo says idle (polled: the daemons register
	// over their own protocol, nothing to wait on).
	deadline := time.Now().Add(90 * time.Second)
	for {
		c := exec.Command("sinfo", "-h", "-o", "%t")
		c.Env = env
		out, _ := c.Output()
		if strings.Contains(string(out), "idle") {
			return env
		}
		if time.Now().After(deadline) {
			b1, _ := os.ReadFile(filepath.Join(dir, "slurmctld.log"))
			b2, _ := os.ReadFile(filepath.Join(dir, "slurmd.log"))
			t.Fatalf("slurm node not idle after 90 s (sinfo %q)\nslurmctld.log:\n%s\nslurmd.log:\n%s", out, b1, b2)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestSlurmExample (issue 24) runs examples/slurm/run.sh on a one-node
// Slurm started here (Debian's slurm-wlm): the backend job, a 4-task
// attack array held until one instant, the collect/merge/analyze job
// depending on the array. The merged verdict is PASS with every ID sent
// once and received once, each shard records the node it ran on
// (SLURMD_NODENAME), and merge.json has one clock for the four shards
// whose bound is the intersection of theirs.
func TestSlurmExample(t *testing.T) {
	need(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "rlbench")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/rlbench")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := startSlurm(t, filepath.Join(dir, "slurm"))

	const shards, ids = 4, 4000
	ev := filepath.Join(dir, "ev")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, "bash", "run.sh")
	run.Env = append(env, "EVIDENCE="+ev, "RLBENCH="+bin, fmt.Sprintf("RLBENCH_LISTEN=127.0.0.1:%d", freePort(t)),
		fmt.Sprint("SHARDS=", shards), fmt.Sprint("IDS=", ids), "LEAD=10")
	t0 := time.Now()
	out, err := run.CombinedOutput()
	t.Logf("run.sh in %v:\n%s", time.Since(t0).Round(time.Second), out)
	if err != nil {
		t.Fatalf("run.sh: %v", err)
	}

	var rep struct {
		Status    string `json:"status"`
		Scenarios []struct {
			Status string `json:"status"`
		} `json:"scenarios"`
	}
	b, err := os.ReadFile(filepath.Join(ev, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Status != "PASS" || len(rep.Scenarios) != 1 {
		t.Fatalf("report.json: status %q, %d scenarios (%v)", rep.Status, len(rep.Scenarios), err)
	}

	s := evidence.LoadScenario(context.Background(), filepath.Join(ev, "run"), false)
	m := s.Merge
	if m == nil || len(s.Problems) != 0 || s.Requests.Len() != ids || m.Count != shards || len(m.Shards) != shards {
		t.Fatalf("merged run: merge %v, %d requests, problems %v", m != nil, s.Requests.Len(), s.Problems)
	}
	host, _ := os.Hostname()
	want := evidence.ClockOffset{Bounded: true, MinNs: -1 << 62, MaxNs: 1 << 62}
	for _, sh := range m.Shards {
		if sh.Node != nodeName || sh.Host != host || len(sh.Offsets) != 1 || !sh.Offsets[0].Bounded {
			t.Fatalf("shard %d: node %q host %q offsets %+v: want node %s (SLURMD_NODENAME) on host %s, bounded", sh.Index, sh.Node, sh.Host, sh.Offsets,
				nodeName, host)
		}
		o := sh.Offsets[0]
		want.Replica, want.Pairs = o.Replica, want.Pairs+o.Pairs
		want.MinNs, want.MaxNs = max(want.MinNs, o.MinNs), min(want.MaxNs, o.MaxNs)
	}
	if len(m.Clocks) != 1 || m.Clocks[0].Name != nodeName || len(m.Clocks[0].Shards) != shards || len(m.Clocks[0].Offsets) != 1 ||
		m.Clocks[0].Offsets[0] != want {
		t.Fatalf("clocks %+v: want one, %s, its bound the shards' intersection %+v", m.Clocks, nodeName, want)
	}
	if bound, unb := m.ClockBound(); bound != want.AbsNs() || len(unb) != 0 {
		t.Fatalf("clock bound %d (unbounded %v), want %d", bound, unb, want.AbsNs())
	}
	t.Logf("one clock (%s) for %d shards: offset in [%v, %v] (%d pairs)", nodeName, shards, time.Duration(want.MinNs), time.Duration(want.MaxNs), want.Pairs)
}
